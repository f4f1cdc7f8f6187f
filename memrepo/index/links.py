"""Links between memory files: ``[[wikilinks]]``, relative markdown links, and co-recall.

Written links are facts of the files, so the index keeps them (table ``links``, filled by
the indexer with each document and dropped with it). A wikilink names a file by its stem
(``[[alice-johnson]]``) or by its path without ``.md`` (``[[knowledge/people/alice]]``);
it is resolved when asked, so a link written before its target exists starts working when
the target is committed. A markdown link is resolved against its file's folder at index
time; one that leaves the repo, or is a URL, is not a link between memory files.

A compressed archive (``archive/x.md.gz``, ``memory prune``'s gzip) is the same file as
the ``archive/x.md`` it replaced: ``[[x]]`` names it, and a markdown link written to
``archive/x.md`` resolves to it (the compression is maintenance, not a move anyone must
follow by editing links; the text behind the link is unchanged).

Co-recall (seed 001 ``memory_links``) is usage, not content: two files shown by the same
search or included by the same compile. It is read from this clone's hit log
(``.memrepo/signals/hits-*.jsonl``), where every batch of hits shares a ``batch`` id.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo import compression, worktree
from memrepo.index.paths import db_path
from memrepo.jsonsafe import json_object
from memrepo.layout import HITS_DIR, HITS_PREFIX

if TYPE_CHECKING:
    from memrepo.index.db import Connection


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(wikilink, markdown link, code fence), compiled on first use: a cost the commit hook
    need not pay when no staged file has a ``[``.

    ``[[target]]``, ``[[target|label]]``, ``[[target#heading]]``: no newline or bracket
    inside, and bounded, so a hostile line cannot make the pattern backtrack;
    ``[label](relative/path.md)`` or ``(path.md#anchor)``, not images (``![...]``)."""
    wiki = re.compile(
        r"\[\[([^\[\]|#\n]{1,200})(?:#[^\[\]|\n]{0,200})?(?:\|[^\[\]\n]{0,200})?\]\]")
    md = re.compile(
        r"(?<!!)\[[^\[\]\n]{0,300}\]\(\s*<?([^()\s<>]{1,300}?\.md)(?:#[^()\s]*)?>?\s*\)")
    return wiki, md, re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Link:
    src: str
    line: int  # 1-based line of the link in ``src``
    kind: str  # wiki | md
    target: str  # md: the repo path; wiki: the name as written (resolved when asked)

    @property
    def key(self) -> str:
        """What the link is looked up by (indexed): a markdown link's path; a wikilink's
        name as file names are written (``Carol Jones`` -> ``carol-jones``)."""
        return self.target if self.kind == "md" else name_key(self.target)


def name_key(name: str) -> str:
    return name.strip().lower().replace(" ", "-")


def bare(path: str) -> str:
    """A memory file's path without ``.md`` (or a compressed archive's ``.md.gz``)."""
    return compression.plain_name(path).removesuffix(".md")


def stem(path: str) -> str:
    """A file's name as a wikilink names it: ``knowledge/people/Bob.md`` -> ``bob``,
    ``archive/journal/2025-01-01.md.gz`` -> ``2025-01-01`` (``documents.stem``, indexed,
    so resolving a name never scans the repo)."""
    return name_key(posixpath.basename(bare(path)))


def is_memory_name(path: str) -> bool:
    """A name a link can point at: ``*.md``, or a compressed archive ``archive/**.md.gz``."""
    return path.endswith(".md") or compression.allowed(path)


def compressed_form(path: str) -> str | None:
    """``archive/x.md`` -> ``archive/x.md.gz``, the name ``memory prune`` may have given
    it; None for a path that is never compressed."""
    packed = compression.compressed_name(path)
    return packed if path.endswith(".md") and compression.allowed(packed) else None


def _packed(path: str) -> list[str]:
    """``[path]``, and its compressed form after it when it may have one (``archive/``)."""
    packed = compressed_form(path)
    return [path, packed] if packed else [path]


def _first(con: Connection, paths: list[str]) -> str | None:
    """The first of ``paths`` the index holds."""
    for path in paths:
        row = con.execute("SELECT path FROM documents WHERE path = ?", (path,)).fetchone()
        if row:
            return row[0]
    return None


def extract(path: str, text: str) -> list[Link]:
    """The links written in ``text`` (the file ``path``), outside fenced code."""
    out: list[Link] = []
    if "[" not in text:
        return out
    wiki, md, fence = _patterns()
    fenced = False
    here = posixpath.dirname(path)
    for n, line in enumerate(text.splitlines(), 1):
        if fence.match(line):
            fenced = not fenced
            continue
        if fenced or "[" not in line:
            continue
        for m in wiki.finditer(line):
            name = m.group(1).strip().removesuffix(".md")
            if name:
                out.append(Link(path, n, "wiki", name))
        for m in md.finditer(line):
            target = m.group(1)
            if "://" in target or target.startswith(("/", "mailto:")):
                continue
            resolved = posixpath.normpath(posixpath.join(here, target))
            if resolved.startswith("../") or resolved == "..":
                continue  # outside the repo: not a memory file
            out.append(Link(path, n, "md", resolved))
    return out


@functools.cache
def _destination_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(inline link or image, reference definition), the destination as group ``dest``.

    Wider than :func:`_patterns`' markdown link, which keeps to what the index stores:
    whoever rewrites a target must also see ``[a](b.md "title")``, ``[id]: b.md`` and
    images, or a moved file keeps links that point nowhere. Bounded like it."""
    title = r"(?:\"[^\"\n]{0,300}\"|'[^'\n]{0,300}'|\([^()\n]{0,300}\))"
    dest = r"(?P<dest><[^<>\n]{1,300}>|[^()\s<>]{1,300})"
    inline = re.compile(rf"\[[^\[\]\n]{{0,300}}\]\(\s*{dest}(?:\s+{title})?\s*\)")
    ref = re.compile(rf"^ {{0,3}}\[(?!\^)[^\[\]\n]{{1,300}}\]:[ \t]*{dest}(?:[ \t]+{title})?"
                     r"[ \t]*$")
    return inline, ref


@dataclass(frozen=True)
class Destination:
    """Where a link's destination is written: ``text[start:end]`` is ``written``."""

    line: int  # 1-based
    start: int  # offsets in the whole text, angle brackets included
    end: int
    written: str  # as written: ``../a.md#x``, ``<a b.md>``, ``https://…``


def _code_spans(line: str) -> list[tuple[int, int]]:
    """The inline code spans of ``line`` (a run of backticks to the next run as long)."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", line)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        size = runs[i][1] - runs[i][0]
        close = next((j for j in range(i + 1, len(runs))
                      if runs[j][1] - runs[j][0] == size), None)
        if close is None:
            i += 1
            continue
        spans.append((runs[i][0], runs[close][1]))
        i = close + 1
    return spans


def destinations(text: str) -> list[Destination]:
    """Every link, image and reference definition destination in ``text`` outside fenced
    code and inline code, with its place: what a rewrite of link targets replaces (code
    shows links, it does not make them). URLs included: the caller decides."""
    out: list[Destination] = []
    if "[" not in text:
        return out
    inline, ref = _destination_patterns()
    fence = _patterns()[2]
    fenced = False
    offset = 0
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        at, offset = offset, offset + len(line)
        if fence.match(body):
            fenced = not fenced
            continue
        if fenced or "[" not in body:
            continue
        code = _code_spans(body) if "`" in body else []
        found = [*inline.finditer(body), *ref.finditer(body)]
        last = -1
        for m in sorted(found, key=lambda m: m.start("dest")):
            s, e = m.span("dest")
            if s >= last and not any(a <= s < b for a, b in code):
                out.append(Destination(n, at + s, at + e, m["dest"]))
                last = e
    return out


def store(con: Connection, links: list[Link]) -> None:
    con.executemany("INSERT INTO links(src, line, kind, target, key) VALUES (?,?,?,?,?)",
                    [(k.src, k.line, k.kind, k.target, k.key) for k in links])


def drop(con: Connection, path: str) -> None:
    con.execute("DELETE FROM links WHERE src = ?", (path,))


def resolve(con: Connection, link: Link) -> str | None:
    """The indexed file a link points at, or None (a broken or not yet written link)."""
    if link.kind == "md":  # archive/x.md, else archive/x.md.gz (prune compressed it)
        return _first(con, _packed(link.target))
    found = _first(con, _packed(f"{link.target.strip()}.md"))
    if found:
        return found
    # by name (``[[alice]]``, ``[[people/alice]]``): the shortest path is the likeliest
    want = link.key
    rows = con.execute("SELECT path FROM documents WHERE stem = ? ORDER BY length(path), path",
                       (stem(want),)).fetchall()
    for (path,) in rows:
        if "/" not in want or name_key(bare(path)).endswith("/" + want):
            return path
    return None


def outgoing(con: Connection, path: str) -> list[tuple[Link, str | None]]:
    """The links written in ``path``, each with the file it resolves to (None: broken)."""
    rows = con.execute("SELECT src, line, kind, target FROM links WHERE src = ? ORDER BY line",
                       (path,)).fetchall()
    return [(lk, resolve(con, lk)) for lk in (Link(*r) for r in rows)]


def incoming(con: Connection, path: str) -> list[Link]:
    """The links of other files that resolve to ``path`` (backlinks)."""
    parts = name_key(bare(path)).split("/")
    # the path (and, for a compressed archive, the .md it was), alice, people/alice…
    keys = [*dict.fromkeys([path, compression.plain_name(path)]),
            *("/".join(parts[i:]) for i in range(len(parts)))]
    marks = ",".join("?" * len(keys))
    candidates = con.execute(
        f"SELECT src, line, kind, target FROM links WHERE key IN ({marks}) ORDER BY src, line",
        keys,
    ).fetchall()
    return [lk for lk in (Link(*r) for r in candidates) if resolve(con, lk) == path]


def linked_files(con: Connection, paths: list[str]) -> dict[str, list[str]]:
    """For each of ``paths``, the files its links resolve to (in order, no repeats)."""
    out: dict[str, list[str]] = {}
    for path in paths:
        targets = [t for _lk, t in outgoing(con, path) if t and t != path]
        if targets:
            out[path] = list(dict.fromkeys(targets))
    return out


def co_recalled(root: Path, path: str, limit: int = 10) -> list[tuple[str, int]]:
    """Files shown or included together with ``path``, most often first."""
    batches: dict[str, set[str]] = {}
    folder = Path(root) / HITS_DIR
    try:
        files = sorted(folder.glob(f"{HITS_PREFIX}*.jsonl"))
    except OSError:
        return []
    for f in files:
        try:
            text = worktree.read_path(f).decode("utf-8", "replace")  # not a FIFO or link
        except OSError:
            continue
        for line in text.splitlines():
            ev = json_object(line)
            if ev is not None and isinstance(ev.get("path"), str):
                batch = ev.get("batch") or ev.get("ts")
                if isinstance(batch, str):
                    batches.setdefault(batch, set()).add(ev["path"])
    counts: Counter[str] = Counter()
    for members in batches.values():
        if path in members:
            counts.update(m for m in members if m != path)
    return counts.most_common(limit)


def report(root: Path, path: str) -> dict[str, Any]:
    """``memory links FILE``: what ``path`` links to (each resolved or broken), what links
    to it, and what was recalled with it. Needs the index (the caller brings it to HEAD)."""
    from memrepo.index.db import connect

    con = connect(db_path(root), readonly=True)
    try:
        out = [{"line": lk.line, "kind": lk.kind, "target": lk.target, "path": to}
               for lk, to in outgoing(con, path)]
        back = [{"path": lk.src, "line": lk.line, "kind": lk.kind} for lk in incoming(con, path)]
    finally:
        con.close()
    together = [{"path": p, "times": n} for p, n in co_recalled(root, path)]
    return {"path": path, "links": out, "backlinks": back, "co_recalled": together}


def linked(root: Path, paths: list[str]) -> dict[str, list[str]]:
    """:func:`linked_files` from the index of ``root`` ({} without one, or an old one)."""
    from memrepo.index.db import OperationalError, connect

    if not db_path(root).exists():
        return {}
    con = connect(db_path(root), readonly=True)
    try:
        return linked_files(con, paths)
    except OperationalError:
        return {}  # an index of an older schema: rebuilt by the next `memory index`
    finally:
        con.close()
