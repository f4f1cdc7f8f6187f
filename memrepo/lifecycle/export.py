"""``memory export``: the memory's entries, with their sources, for another tool (seed 001).

An entry is one knowledge bullet (the line format extraction writes, see
:mod:`memrepo.entries`): its file, line, section, date, text, the
transcripts it came from, and whether it was superseded (kept, struck through). JSON Lines
is for programs; markdown is for a person or another memory. Only committed-or-not files
on disk are read, nothing is written. A compressed archive (``archive/**.md.gz``) is
exported as the text it holds (inflated up to ``validation.max_file_kb``), under its own
path.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from memrepo import compression
from memrepo.documents import decode, parse_document
from memrepo.entries import HEADING, parse_entry
from memrepo.errors import FormatError
from memrepo.layout import JOURNAL_PATH, category_of

FORMATS = ("jsonl", "markdown")
#: Trees whose bullets are entries (transcripts are the sources, not entries).
ROOTS = ("knowledge", "topics")


@dataclass
class Exported:
    path: str
    line: int
    category: str | None
    section: str
    date: str | None
    text: str
    sources: list[str]
    superseded: bool


def entries(root: Path, since: dt.date | None = None, archive: bool = False) -> Iterator[Exported]:
    """Every entry under knowledge/ and topics/ (and archive/ when asked), file by file in
    path order; with ``since``, entries dated on or after it, and undated entries of files
    whose ``updated`` / ``date`` is."""
    bases = [*ROOTS, "archive"] if archive else list(ROOTS)
    limit: int | None = None
    for base in bases:
        for file in _files(root / base, packed=base == "archive"):
            if file.is_symlink() or not file.is_file():
                continue
            rel = file.relative_to(root).as_posix()
            if compression.is_gzip_name(rel) and limit is None:
                limit = compression.limit_for(root)
            try:
                data = compression.read_plain(
                    file, rel, compression.DEFAULT_LIMIT if limit is None else limit)
                doc = parse_document(decode(data, rel), rel)
            except (FormatError, OSError):
                continue  # the validators report broken files; an export skips them
            file_date = str(doc.meta.get("updated") or doc.meta.get("date") or "")[:10] or None
            yield from _file_entries(rel, doc.body, doc.body_line, file_date, since)


def _files(folder: Path, packed: bool) -> list[Path]:
    """The Markdown files under ``folder`` in path order; with ``packed`` the compressed
    archives too (``x.md.gz`` sorts right after where ``x.md`` would)."""
    if not folder.is_dir():
        return []
    found = list(folder.rglob("*.md"))
    if packed:
        found += [f for f in folder.rglob("*" + compression.SUFFIX)
                  if compression.allowed(f.relative_to(folder.parent).as_posix())]
    return sorted(found)


def _file_entries(rel: str, body: str, first_line: int, file_date: str | None,
                  since: dt.date | None) -> Iterator[Exported]:
    section = ""
    journal = JOURNAL_PATH.match(rel)
    day = journal["date"] if journal else None  # a journal's `- HH:MM` bullets: its day
    for i, line in enumerate(body.split("\n")):
        heading = HEADING.match(line)
        if heading:
            section = heading["title"].strip()
            continue
        entry = parse_entry(line, i)
        if entry is None:
            continue
        when = entry.date or file_date
        if since is not None and (when is None or when < since.isoformat()):
            continue
        yield Exported(rel, first_line + i, category_of(rel), section, entry.date or day,
                       entry.text,
                       list(entry.srcs), entry.superseded)


def render(items: Iterator[Exported], fmt: str) -> Iterator[str]:
    """The export as text chunks (one JSON object a line, or markdown by file)."""
    if fmt == "jsonl":
        for item in items:
            yield json.dumps(asdict(item), ensure_ascii=False) + "\n"
        return
    current = None
    for item in items:
        if item.path != current:
            yield f"{'' if current is None else chr(10)}## {item.path}\n\n"
            current = item.path
        text = f"~~{item.text}~~ (superseded)" if item.superseded else item.text
        dated = f"{item.date}: " if item.date else ""
        where = f" [{item.section}]" if item.section else ""
        src = f" (from {', '.join(item.sources)})" if item.sources else ""
        yield f"- {dated}{text}{where}{src} — {item.path}:{item.line}\n"
