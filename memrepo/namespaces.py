"""Per-agent namespaces: many agents on one memory, each with its own transcripts and
journal lines, all sharing the rest (docs/namespaces.md).

An agent's namespace is ``$MEMREPO_NAMESPACE`` (its hooks, its MCP server and the worker
they detach inherit it), or what a caller scopes explicitly (:func:`scope`: the resident
server answers hooks of many agents). Nothing here changes the repo's layout:

- a transcript written in a namespace says so in its frontmatter (``namespace: NAME``);
- a journal bullet ``memory remember`` writes in one ends with ``[ns: NAME]``
  (:func:`mark`); a bullet extraction or the flush writes cites its transcript
  (``[src: …]``), so it belongs to that transcript's namespace with no marker of its own;
- everything else (MEMORY.md, people, projects, procedures, reference, topics) is shared.

A reader with a namespace sees its own and the shared, never another namespace's
(:class:`View`); a reader with none sees everything, as before namespaces existed.

Standard library and :mod:`memrepo.layout` only: the agent hooks import it at the top.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from memrepo.cliargs import NAMESPACE_ENV
from memrepo.layout import JOURNAL_PATH, SRC, TRANSCRIPT_ROOT

#: The variable that names an agent's namespace (``memory --namespace NAME`` sets it).
ENV = NAMESPACE_ENV
#: The key a hook's request to the resident server carries its namespace under (None:
#: none), so the server answers as the hook would have.
PAYLOAD_KEY = "memrepo_namespace"
#: A namespace's name: short, lower case, safe inside a marker and a YAML scalar.
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
#: A journal line's marker: `` [ns: NAME]`` at its end.
MARK = re.compile(r"\s*\[ns: (?P<ns>[a-z0-9][a-z0-9_-]{0,39})\]")
#: The frontmatter key of a transcript written in a namespace.
KEY = "namespace"
_KEY_LINE = re.compile(r"^namespace:\s*['\"]?(?P<ns>[a-z0-9][a-z0-9_-]{0,39})['\"]?\s*$", re.M)
#: A ``[src:]`` reference to a transcript: ``YYYY/MM/DD/HHMM-<session>``.
_REF = re.compile(r"^(?P<day>\d{4}/\d{2}/\d{2})/(?P<hhmm>\d{4})-(?P<sid>[^/\s*?\[\]]+)$")
_HEADING = re.compile(r"^#{1,6}\s")
#: How much of a transcript's head holds its frontmatter's namespace.
HEAD_BYTES = 4096

L = TypeVar("L")

#: (namespace,) while a caller has scoped one; None: the environment says.
_scoped: ContextVar[tuple[str | None] | None] = ContextVar("memrepo_namespace", default=None)


def check(name: str) -> str:
    """``name`` if it can name a namespace, else a ValueError that says what can."""
    if not NAME.match(name):
        raise ValueError(
            f"namespace {name!r}: use 1-40 lower-case letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def current() -> str | None:
    """The namespace this process acts in: the scoped one, else ``$MEMREPO_NAMESPACE``,
    else None (no namespace: every file is seen, nothing is marked)."""
    held = _scoped.get()
    if held is not None:
        return held[0]
    raw = os.environ.get(ENV, "").strip()
    return check(raw) if raw else None


@contextlib.contextmanager
def scope(ns: str | None) -> Iterator[None]:
    """Act in ``ns`` (None: in none) while the block runs, whatever the environment says."""
    token = _scoped.set((check(ns) if ns else None,))
    try:
        yield
    finally:
        _scoped.reset(token)


def payload_scope(payload: Mapping[str, Any]) -> contextlib.AbstractContextManager[None]:
    """The namespace a hook's payload carries (:data:`PAYLOAD_KEY`, set by the hook that
    asked the resident server), else this process's."""
    if PAYLOAD_KEY in payload:
        value = payload[PAYLOAD_KEY]
        return scope(value if isinstance(value, str) and value else None)
    return contextlib.nullcontext()


def mark(line: str, ns: str | None) -> str:
    """A journal bullet as written in ``ns``: `` [ns: NAME]`` at its end (none: as is)."""
    return f"{line} [ns: {ns}]" if ns else line


def _is_transcript(rel: str) -> bool:
    return rel.removeprefix("archive/").startswith(TRANSCRIPT_ROOT)


class View:
    """What namespace ``ns`` sees of the repo at ``root``. Transcripts' namespaces are read
    once per view (a transcript's frontmatter is set when it starts and never changes)."""

    def __init__(self, root: str | Path, ns: str | None):
        self.root = Path(root)
        self.ns = ns
        self._of: dict[str, str | None] = {}
        self._refs: dict[str, frozenset[str]] = {}

    def transcript_namespace(self, rel: str) -> str | None:
        """The ``namespace`` of a transcript's frontmatter (None: shared, or unreadable)."""
        if rel not in self._of:
            ns = None
            try:
                fd = os.open(self.root / rel, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                with os.fdopen(fd, "rb") as f:
                    head = f.read(HEAD_BYTES).decode("utf-8", "replace")
            except OSError:
                head = ""
            if head.startswith("---"):
                end = head.find("\n---", 3)
                m = _KEY_LINE.search(head[: end if end > 0 else len(head)])
                ns = m["ns"] if m else None
            self._of[rel] = ns
        return self._of[rel]

    def _ref_namespaces(self, ref: str) -> frozenset[str]:
        """The namespaces of the transcripts a ``[src:]`` reference names."""
        ref = ref.strip()
        if ref not in self._refs:
            found = {self.transcript_namespace(rel) for rel in self._transcripts(ref)}
            self._refs[ref] = frozenset(ns for ns in found if ns)
        return self._refs[ref]

    def _transcripts(self, ref: str) -> list[str]:
        """The transcripts (live or archived) a ``[src:]`` reference names."""
        if _is_transcript(ref):
            return [ref]
        m = _REF.match(ref)
        if m is None:
            return []
        out = []
        for base in (TRANSCRIPT_ROOT, f"archive/{TRANSCRIPT_ROOT}"):
            folder = f"{base}{m['day']}"
            for p in (self.root / folder).glob(f"{m['hhmm']}-{m['sid']}-*.md"):
                out.append(f"{folder}/{p.name}")
        return out

    def owners(self, line: str) -> set[str]:
        """The namespaces a journal line belongs to: its marker's, its sources'."""
        out = {m["ns"] for m in MARK.finditer(line)}
        for m in SRC.finditer(line):
            for ref in m["src"].split(";"):
                out |= self._ref_namespaces(ref)
        return out

    def hides_line(self, line: str) -> bool:
        """Whether a journal line belongs to another namespace than this view's."""
        if self.ns is None or "[" not in line:
            return False
        return bool(self.owners(line) - {self.ns})

    def hides_file(self, rel: str) -> bool:
        """Whether all of ``rel`` is another namespace's (a transcript of one)."""
        if self.ns is None or not _is_transcript(rel):
            return False
        owner = self.transcript_namespace(rel)
        return owner is not None and owner != self.ns

    def filters_lines(self, rel: str) -> bool:
        """Whether ``rel``'s lines are judged one by one (a journal, live or archived)."""
        return self.ns is not None and JOURNAL_PATH.match(rel.removesuffix(".gz")) is not None

    def keep(self, rel: str, rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The numbered lines of ``rel`` this view sees: none of another namespace's
        transcript; of a journal, the lines of no other namespace, and the headings with
        something left under them (a heading over hidden lines alone goes too)."""
        if self.ns is None:
            return rows
        if self.hides_file(rel):
            return []
        if not self.filters_lines(rel):
            return rows
        hidden = {i for i, (_, t) in enumerate(rows) if self.hides_line(t)}
        if not hidden:
            return rows
        out = []
        for i, row in enumerate(rows):
            if i in hidden:
                continue
            if _HEADING.match(row[1]) and self._emptied(rows, i, hidden):
                continue
            out.append(row)
        return out

    def lines(self, rel: str, lines: L) -> L:
        """:meth:`keep` on a dataclass of ``rel``'s lines with ``numbered`` rows
        (memrepo.context.sections.Lines): the same object when nothing is hidden."""
        rows = lines.numbered  # type: ignore[attr-defined]
        kept = self.keep(rel, rows)
        return lines if kept is rows else dataclasses.replace(lines, numbered=kept)  # type: ignore[type-var]

    def masked(self, rel: str, lines: list[str]) -> list[str] | None:
        """``rel``'s lines (the first is line 1) with the ones this view does not see
        blanked, so the others keep their numbers; None when it sees none of the file."""
        if self.hides_file(rel):
            return None
        if not self.filters_lines(rel):
            return lines
        seen = {n for n, _ in self.keep(rel, list(enumerate(lines, 1)))}
        return [t if n in seen else "" for n, t in enumerate(lines, 1)]

    @staticmethod
    def _emptied(rows: list[tuple[int, str]], i: int, hidden: set[int]) -> bool:
        """Whether the heading at ``i`` has only hidden lines (at least one) under it,
        up to the next heading."""
        any_hidden = False
        for j in range(i + 1, len(rows)):
            text = rows[j][1]
            if _HEADING.match(text):
                break
            if j in hidden:
                any_hidden = True
            elif text.strip():
                return False
        return any_hidden


def view(root: str | Path, ns: str | None = None) -> View:
    """The :class:`View` of the current namespace (or of ``ns``)."""
    return View(root, current() if ns is None else ns)
