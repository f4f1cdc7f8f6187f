"""Agents' settings files edited in place: only the values that change are rewritten.

``memory install`` must leave every other byte of a user's settings as it was (key order,
indentation, spacing, CRLF, the final newline, TOML comments) and ``uninstall`` must give
the original bytes back, so neither file is re-serialised: :class:`JsonText` splices the
text at the spans of the values it changes (an insert and a remove are exact inverses),
:class:`TomlText` appends and cuts whole tables as text and checks each result by parsing.
A file that does not parse is a :class:`~memrepo.errors.MemrepoError` naming the file and
the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from memrepo.errors import MemrepoError

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|"
                     r"-?Infinity")
Key = str | int


@dataclass
class _Node:
    start: int
    end: int
    kind: str  # "object", "array" or "scalar"
    keys: list[str] = field(default_factory=list)
    key_spans: list[tuple[int, int]] = field(default_factory=list)
    items: list[_Node] = field(default_factory=list)


def _parse(text: str, i: int) -> _Node:
    """The node of the (valid) JSON value starting at ``text[i]``, with its spans."""
    c = text[i]
    if c in "{[":
        node = _Node(i, -1, "object" if c == "{" else "array")
        close = "}" if c == "{" else "]"
        j = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        while text[j] != close:
            if node.kind == "object":
                key, key_end = scanstring(text, j + 1)
                node.keys.append(key)
                node.key_spans.append((j, key_end))
                j = _WS.match(text, key_end).end() + 1  # type: ignore[union-attr]  # ':'
                j = _WS.match(text, j).end()  # type: ignore[union-attr]
            child = _parse(text, j)
            node.items.append(child)
            j = _WS.match(text, child.end).end()  # type: ignore[union-attr]
            if text[j] == ",":
                j = _WS.match(text, j + 1).end()  # type: ignore[union-attr]
        node.end = j + 1
        return node
    if c == '"':
        return _Node(i, scanstring(text, i + 1)[1], "scalar")
    m = _SCALAR.match(text, i)
    if m is None:  # pragma: no cover - json.loads accepted the text
        raise ValueError(f"unexpected {c!r} at offset {i}")
    return _Node(i, m.end(), "scalar")


def _masked(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments turned to spaces (line breaks kept),
    so every offset stays the original's: Gemini CLI reads its settings.json with
    comments, and they stay where the user wrote them."""
    if "/" not in text:
        return text
    out = list(text)
    i, n, in_str = 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif text.startswith("//", i) or text.startswith("/*", i):
            if text[i + 1] == "/":
                end = text.find("\n", i)
            else:
                end = text.find("*/", i + 2)
                end = end + 2 if end != -1 else -1
            end = n if end == -1 else end
            for j in range(i, end):
                if out[j] not in "\r\n":
                    out[j] = " "
            i = end
            continue
        i += 1
    return "".join(out)


class JsonText:
    """A JSON document edited at the spans of the values that change, so every other byte
    (key order, indentation, spacing, comments, the final newline) stays as the user wrote
    it. ``comments``: the agent reads ``//`` and ``/* */`` comments (Gemini CLI does;
    Claude Code does not): they are parsed as the whitespace they are."""

    def __init__(self, text: str | None, name: str, comments: bool = False) -> None:
        self.name = name
        self.comments = comments
        self.bom = bool(text) and text.startswith("\ufeff")  # type: ignore[union-attr]
        body = (text or "")[1 if self.bom else 0:]
        self.nl = "\r\n" if "\r\n" in body else "\n"
        if not body.strip():
            body = "{}" + self.nl
        self.text = body
        self.value = self._load(body)
        if not isinstance(self.value, dict):
            raise MemrepoError(f"{name}: the top level is not a JSON object; not touching it")
        indents = re.findall(r"\n([ \t]+)\S", body)
        self.unit: str = "\t" if any("\t" in i for i in indents) else (
            " " * min(len(i) for i in indents) if indents else "  ")
        plain = self._plain(body)
        root = _parse(plain, _WS.match(plain).end())  # type: ignore[union-attr]
        self.pretty = not root.items or "\n" in body[root.start:root.end]
        # a one-line file keeps its own separators (`{"a":1}` or `{"a": 1}`)
        self.seps = ("," if re.search(r",\S", plain) or "," not in plain else ", ",
                     ":" if re.search(r'":\S', plain) else ": ")
        self._root: _Node | None = root

    def _load(self, text: str) -> Any:
        try:
            return json.loads(self._plain(text))
        except json.JSONDecodeError as exc:
            raise MemrepoError(
                f"{self.name}: line {exc.lineno}, column {exc.colno}: not valid JSON "
                f"({exc.msg}); fix or move the file: memrepo does not overwrite it"
            ) from None

    def _plain(self, text: str) -> str:
        """What is parsed: ``text``, its comments blanked where the agent allows them."""
        return _masked(text) if self.comments else text

    def dumps(self) -> str:
        return ("\ufeff" if self.bom else "") + self.text

    # -- reading
    @property
    def root(self) -> _Node:
        if self._root is None:
            plain = self._plain(self.text)
            self._root = _parse(plain, _WS.match(plain).end())  # type: ignore[union-attr]
        return self._root

    def get(self, path: Sequence[Key]) -> Any:
        value = self.value
        for key in path:
            if isinstance(key, int):
                value = value[key] if isinstance(value, list) and key < len(value) else None
            else:
                value = value.get(key) if isinstance(value, dict) else None
            if value is None:
                return None
        return value

    def _node(self, path: Sequence[Key]) -> _Node:
        node = self.root
        for key in path:
            if isinstance(key, int):
                node = node.items[key]
            else:  # json.loads keeps the last of duplicate keys: so do we
                node = node.items[len(node.keys) - 1 - node.keys[::-1].index(key)]
        return node

    # -- writing
    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self._root = None
        self.value = self._load(self.text)  # every edit must leave valid JSON

    def _line_indent(self, pos: int) -> str:
        start = self.text.rfind("\n", 0, pos) + 1
        return re.match(r"[ \t]*", self.text[start:pos]).group(0)  # type: ignore[union-attr]

    def _own_line(self, pos: int) -> str | None:
        """The indentation of the member starting at ``pos`` if it starts its line."""
        start = self.text.rfind("\n", 0, pos) + 1
        lead = self.text[start:pos]
        return lead if not lead.strip() else None

    def _dump(self, value: Any, indent: str | None) -> str:
        if indent is None:
            return json.dumps(value, ensure_ascii=False, separators=self.seps)
        text = json.dumps(value, indent=self.unit, ensure_ascii=False)
        return text.replace("\n", self.nl + indent)

    def _insert(self, node: _Node, key: str | None, value: Any) -> None:
        """Add ``key: value`` at the end of object ``node`` (``value`` to array ``node``)."""
        head = "" if key is None else json.dumps(key, ensure_ascii=False)
        if not node.items:
            if not self.pretty:
                sep = "" if key is None else self.seps[1]
                new = _opening(node) + head + sep + self._dump(value, None) + _closing(node)
            else:
                outer = self._line_indent(node.start)
                inner = outer + self.unit
                sep = "" if key is None else ": "
                new = (_opening(node) + self.nl + inner + head + sep + self._dump(value, inner)
                       + self.nl + outer + _closing(node))
            self._splice(node.start, node.end, new)
            return
        last = node.items[-1]
        first_pos = node.key_spans[-1][0] if key is not None else last.start
        between = self.text[node.key_spans[-1][1]:last.start] if key is not None else ""
        sep = between if "/" not in between else self.seps[1]  # a comment is not copied
        indent = self._own_line(first_pos)
        lead = "," + self.nl + indent if indent is not None else self.seps[0]
        self._splice(last.end, last.end, lead + head + sep + self._dump(value, indent))

    def set(self, path: Sequence[Key], value: Any) -> None:
        """Set ``path`` to ``value``, creating the objects on the way."""
        node, here = self.root, self.value
        for depth, key in enumerate(path):
            if isinstance(key, int):
                node, here = node.items[key], here[key]
                continue
            if not isinstance(here, dict):
                where = ".".join(str(k) for k in path[:depth]) or "the top level"
                raise MemrepoError(f"{self.name}: {where} is not a JSON object; not touching it")
            if key not in here:
                for outer in reversed(path[depth + 1:]):
                    value = {outer: value}
                self._insert(node, str(key), value)
                return
            node, here = self._node([*path[: depth + 1]]), here[key]
        multiline = self.pretty or "\n" in self.text[node.start:node.end]
        self._splice(node.start, node.end,
                     self._dump(value, self._line_indent(node.start) if multiline else None))

    def append(self, path: Sequence[Key], value: Any) -> None:
        """Append ``value`` to the array at ``path``."""
        self._insert(self._node(path), None, value)

    def remove(self, path: Sequence[Key]) -> None:
        """Remove the member or item at ``path`` (and the comma and line that held it)."""
        parent, key = self._node(path[:-1]), path[-1]
        idx = key if isinstance(key, int) else len(parent.keys) - 1 - parent.keys[::-1].index(key)
        starts = ([s for s, _ in parent.key_spans] if parent.kind == "object"
                  else [n.start for n in parent.items])
        if len(parent.items) == 1:
            self._splice(parent.start, parent.end, _opening(parent) + _closing(parent))
        elif idx > 0:
            self._splice(parent.items[idx - 1].end, parent.items[idx].end, "")
        else:
            self._splice(starts[0], starts[1], "")

    def is_empty(self) -> bool:
        return self.value == {}


def _opening(node: _Node) -> str:
    return "{" if node.kind == "object" else "["


def _closing(node: _Node) -> str:
    return "}" if node.kind == "object" else "]"


# --- TOML (Codex's config.toml): the server table only --------------------------------


class TomlText:
    """Codex's config.toml: memrepo's ``[mcp_servers.NAME]`` table added at the end and
    taken out as text (comments and layout stay), each edit checked by parsing; tomlkit
    edits the structure where the text way does not give the expected document."""

    def __init__(self, text: str | None, name: str) -> None:
        self.name = name
        self.text = text or ""
        self.value = self._load(self.text)

    def _load(self, text: str) -> dict[str, Any]:
        import tomlkit
        from tomlkit.exceptions import ParseError

        try:
            return tomlkit.parse(text).unwrap()
        except ParseError as exc:
            raise MemrepoError(
                f"{self.name}: line {exc.line}, column {exc.col}: not valid TOML; fix or move "
                "the file: memrepo does not overwrite it"
            ) from None

    def dumps(self) -> str:
        return self.text

    def get(self, path: Sequence[Key]) -> Any:
        value: Any = self.value
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def set(self, path: Sequence[Key], value: Any) -> None:
        import tomlkit

        expected = json.loads(json.dumps(self.value))
        here = expected
        for key in path[:-1]:
            here = here.setdefault(str(key), {})
        here[str(path[-1])] = value
        if self.get(path) is None:  # a new table: appended as text
            block = tomlkit.dumps(_nest(path, value))
            sep = "" if not self.text.strip() else ("\n" if self.text.endswith("\n") else "\n\n")
            if self._try(self.text + sep + block, expected):
                return
        doc = tomlkit.parse(self.text)
        table: Any = doc
        for key in path[:-1]:
            if key not in table:
                table[str(key)] = tomlkit.table(is_super_table=True)
            table = table[str(key)]
        if path[-1] in table and isinstance(value, dict):
            here_table = table[path[-1]]  # in place: the table keeps its comments
            for k in [k for k in here_table if k not in value]:
                del here_table[k]
            for k, v in value.items():
                if here_table.get(k) != v:
                    here_table[k] = v
        else:
            table[str(path[-1])] = value
        if not self._try(tomlkit.dumps(doc), expected):  # pragma: no cover - tomlkit bug
            raise MemrepoError(f"{self.name}: could not add {'.'.join(map(str, path))}")

    def remove(self, path: Sequence[Key]) -> None:
        import tomlkit

        expected = json.loads(json.dumps(self.value))
        here = expected
        for key in path[:-1]:
            here = here[key]
        del here[path[-1]]
        if self._try(_cut_table(self.text, [str(k) for k in path]), expected):
            return
        doc = tomlkit.parse(self.text)
        table: Any = doc
        for key in path[:-1]:
            table = table[str(key)]
        del table[str(path[-1])]
        if not self._try(tomlkit.dumps(doc), expected):  # pragma: no cover - tomlkit bug
            raise MemrepoError(f"{self.name}: could not remove {'.'.join(map(str, path))}")

    def _try(self, text: str | None, expected: dict[str, Any]) -> bool:
        if text is None:
            return False
        try:
            ok = _pruned(self._load(text)) == _pruned(expected)
        except MemrepoError:
            return False
        if ok:
            self.text, self.value = text, expected
        return ok

    def is_empty(self) -> bool:
        return not self.text.strip()


def _pruned(value: Any) -> Any:
    """``value`` without empty tables: an emptied ``[mcp_servers]`` means nothing."""
    if not isinstance(value, dict):
        return value
    out = {k: _pruned(v) for k, v in value.items()}
    return {k: v for k, v in out.items() if v != {}}


def _nest(path: Sequence[Key], value: Any) -> dict[str, Any]:
    for key in reversed(path):
        value = {str(key): value}
    return value


def _cut_table(text: str, path: list[str]) -> str | None:
    """``text`` without the ``[a.b]`` table at ``path`` (its header to the next header,
    less the blank and comment lines that lead into the next table), or None."""
    name = r"[ \t]*\.[ \t]*".join(
        rf"(?:{re.escape(k)}|\"{re.escape(k)}\"|'{re.escape(k)}')" for k in path)
    header = re.compile(rf"[ \t]*\[[ \t]*{name}[ \t]*\][ \t]*(?:#.*)?\r?\n?")
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if header.fullmatch(line)]
    if len(hits) != 1:
        return None
    i = hits[0]
    j = i + 1
    while j < len(lines) and not lines[j].lstrip().startswith("["):
        j += 1
    while j > i + 1 and (not lines[j - 1].strip() or lines[j - 1].lstrip().startswith("#")):
        j -= 1
    if i > 0 and not lines[i - 1].strip() and (j == len(lines) or not lines[j].strip()):
        i -= 1  # the blank line that set the table apart
    elif i == 0 and j < len(lines) and not lines[j].strip():
        j += 1
    return "".join(lines[:i] + lines[j:])


#: Either kind of settings document (the same get / set / remove / is_empty / dumps).
Doc = JsonText | TomlText
