"""A strict YAML loader for memory files and the config.

PyYAML's SafeLoader silently keeps the last of duplicate keys and expands aliases, so a
"billion laughs" frontmatter can blow up whatever walks it. Memory files are small and
hand-editable; neither feature has a legitimate use there, so both are errors that name
the line.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # the C parser is several times faster; the checks below run on its events either way
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

MAX_YAML_CHARS = 64 * 1024
#: Deepest nesting accepted: memory files and the config need 4 levels; anything deeper
#: is refused with its line before a recursive walker (ours, PyYAML's constructor) meets it.
MAX_DEPTH = 32


class YAMLProblem(Exception):
    """A YAML text that cannot be accepted; ``line`` is 1-based within that text."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


class StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader that refuses aliases and duplicate mapping keys."""

    def construct_document(self, node: Any) -> Any:  # type: ignore[override]
        _refuse_aliases(node)
        return super().construct_document(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # type: ignore[override]
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise YAMLProblem(
                    "mapping keys must be plain values", key_node.start_mark.line + 1
                ) from None
            if key in seen:
                raise YAMLProblem(
                    f"duplicate key {key!r} (first on line {seen[key]})",
                    key_node.start_mark.line + 1,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node: Any) -> Any:  # type: ignore[override]
        """An impossible date (2026-02-30) is a YAML problem with its line, not a ValueError."""
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise YAMLProblem(
                f"invalid date {node.value!r}: {exc}", node.start_mark.line + 1
            ) from None

    def construct_yaml_int(self, node: Any) -> Any:  # type: ignore[override]
        """An integer of more digits than Python converts (4300) is a problem with a line."""
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:
            raise YAMLProblem(f"invalid number: {exc}", node.start_mark.line + 1) from None


def _refuse_aliases(root: Any) -> None:
    """An alias makes the composed graph share a node; find the first shared one. Nesting
    deeper than MAX_DEPTH is refused on the same walk.

    Done on nodes rather than parser events so it works with the C parser too, and
    the walk stops at the first repeat, so an alias bomb costs linear time.
    """
    seen: set[int] = set()
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise YAMLProblem(
                "YAML anchors and aliases (&name / *name) are not allowed in memory files",
                node.start_mark.line + 1,
            )
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise YAMLProblem(f"YAML nested deeper than {MAX_DEPTH} levels",
                              node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend(((k, depth + 1), (v, depth + 1)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, depth + 1) for v in node.value)


StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, StrictLoader.construct_mapping
)
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", StrictLoader.construct_yaml_timestamp)
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)


def load(text: str, line_offset: int = 0) -> Any:
    """Parse one YAML document strictly; raise YAMLProblem with a 1-based line.

    ``line_offset`` is added to every line reported (frontmatter starts on file line 2).
    """
    try:
        return _load(text)
    except YAMLProblem as exc:
        if exc.line is None or not line_offset:
            raise
        message = re.sub(
            r"\(first on line (\d+)\)",
            lambda m: f"(first on line {int(m.group(1)) + line_offset})",
            exc.message,
        )
        raise YAMLProblem(message, exc.line + line_offset) from None


def _load(text: str) -> Any:
    if len(text) > MAX_YAML_CHARS:
        raise YAMLProblem(f"YAML block is larger than {MAX_YAML_CHARS // 1024} KB", 1)
    try:
        return yaml.load(text, Loader=StrictLoader)
    except YAMLProblem:
        raise
    except yaml.reader.ReaderError as exc:  # a control character; says "position", not line
        line = text.count("\n", 0, exc.position) + 1
        char = ord(exc.character) if isinstance(exc.character, str) else exc.character
        raise YAMLProblem(f"invalid YAML: control character 0x{char:02x} is not allowed",
                          line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise YAMLProblem(f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise YAMLProblem(f"invalid YAML: {exc}") from None
    except RecursionError:
        raise YAMLProblem(f"YAML nested deeper than {MAX_DEPTH} levels", 1) from None


def key_line(text: str, keypath: tuple[str, ...]) -> int | None:
    """The 1-based line where ``keypath`` (e.g. ("search", "bm25_weight")) is written."""
    try:
        node = yaml.compose(text, Loader=_BaseLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    line = None
    for key in keypath:
        if not isinstance(node, yaml.MappingNode):
            return line
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                line = k.start_mark.line + 1
                node = v
                break
        else:
            return line
    return line


def dump(data: Any) -> str:
    """Serialise in file order, block style, unicode kept: what a person would write.

    Never with anchors and aliases (the same object twice, e.g. ``ended`` set to
    ``started``): :func:`load` refuses them, so what memrepo writes must not contain them.
    """
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)


try:  # the C emitter where PyYAML has it, like the loader
    from yaml import CSafeDumper as _BaseDumper
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]


class _NoAliasDumper(_BaseDumper):  # type: ignore[misc,valid-type]
    def ignore_aliases(self, data: Any) -> bool:
        return True
