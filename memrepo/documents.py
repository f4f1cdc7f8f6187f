"""Memory files as documents: markdown with YAML frontmatter (seed 000 §2, DESIGN.md).

Parse and render, the frontmatter schema (required fields per type, date and count
fields) and date parsing. Which type a path must have is :mod:`memrepo.layout`.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import compression, worktree, yamlsafe
from memrepo.errors import FormatError
from memrepo.layout import FRONTMATTER_DELIM

#: Fields each type must have, beyond ``type`` itself.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "conversation": ("session_id", "started"),
    "identity": ("role",),
    "journal": ("date",),
    "person": ("name",),
    "topic": ("triggers",),
}
IDENTITY_ROLES = ("soul", "user", "rules", "tools")

#: Fields that hold an ISO date or datetime, and those that must be a full datetime.
DATE_FIELDS = ("updated", "created", "date")
DATETIME_FIELDS = ("started", "ended")
#: Fields that are counts (seed 000 §2.3 "number"; tokens, lines, turns are whole and >= 0).
COUNT_FIELDS = ("tokens_in", "tokens_out", "turns", "redactions", "line_count")
#: Fields that are lists of strings (seed 000 §2.3 "string[]").
STRING_LIST_FIELDS = ("tags",)


#: Frontmatter a still-open transcript may gain or change as it closes.
TRANSCRIPT_MUTABLE_FIELDS = frozenset(
    {"ended", "tokens_in", "tokens_out", "knowledge_changes", "redactions", "turns", "updated"}
)


@functools.cache
def _handler() -> Any:
    """python-frontmatter's YAML handler on the strict loader, keeping key order.

    Built on first use: parsing never needs python-frontmatter (the split is done here to
    keep real line numbers), and its import would slow the commit path
    (bench/perf/bench_commit.py).
    """
    import frontmatter

    class StrictYAMLHandler(frontmatter.YAMLHandler):
        def load(self, fm: str, **kwargs: object) -> Any:
            return yamlsafe.load(fm)

        def export(self, metadata: dict[str, object], **kwargs: object) -> str:
            return yamlsafe.dump(metadata).strip()

    return StrictYAMLHandler()




@dataclass
class Document:
    """A parsed memory file. ``body_line`` is the 1-based line the body starts on."""

    path: str
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    body_line: int = 1
    has_frontmatter: bool = False


def decode(data: bytes, path: str) -> str:
    """UTF-8 text of a file, or a FormatError that says where decoding failed."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", path, line) from None


def parse_document(text: str, path: str) -> Document:
    """Split and parse frontmatter; errors carry the file line."""
    lines = text.split("\n")
    if not lines or not FRONTMATTER_DELIM.match(lines[0]):
        return Document(path=path, body=text, body_line=1)
    for i in range(1, len(lines)):
        if FRONTMATTER_DELIM.match(lines[i]):
            end = i
            break
    else:
        raise FormatError("frontmatter is not closed: no '---' line after the opening one", path, 1)
    fm_text = "\n".join(lines[1:end])
    try:
        meta = yamlsafe.load(fm_text, line_offset=1)
    except yamlsafe.YAMLProblem as exc:
        # an error found at the end of the block is reported on its last line, not on '---'
        line = min(exc.line, end) if exc.line else 1
        raise FormatError(exc.message, path, line) from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FormatError("frontmatter must be a YAML mapping (key: value lines)", path, 2)
    body = "\n".join(lines[end + 1 :])
    return Document(path=path, meta=meta, body=body, body_line=end + 2, has_frontmatter=True)


def read_document(file: str | Path, path: str | None = None) -> Document:
    """Read and parse a file, never through a symlink (the writers that read a memory file
    to rewrite it would copy a linked file's text into the repo); ``path`` is the
    repo-relative name used in messages (and says whether the file is a compressed
    archive)."""
    name = path or str(file)
    try:
        data = worktree.read_path(file, name)  # never through a symlink
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror}", name) from None
    return _document(data, name)


def read_repo_document(root: str | Path, rel: str) -> Document:
    """:func:`read_document` of the repo file ``rel`` as the working tree holds it, never
    through a symlink (:mod:`memrepo.worktree`): what goes into an agent's context."""
    try:
        data = worktree.read_file(root, rel)
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror}", rel) from None
    return _document(data, rel)


def _document(data: bytes, name: str) -> Document:
    if compression.is_gzip_name(name):  # a compressed archive reads as the text it holds
        data = compression.decompress(data, name, compression.DEFAULT_LIMIT)
    return parse_document(decode(data, name), name)


def render_document(meta: dict[str, Any], body: str) -> str:
    """Serialise frontmatter and body, keeping key order (the inverse of parse_document)."""
    import frontmatter

    handler = _handler()
    post = frontmatter.Post(body.lstrip("\n"), handler=handler, **meta)
    text = frontmatter.dumps(post, handler=handler)
    return text if text.endswith("\n") else text + "\n"


def meta_line(doc_text: str, key: str) -> int | None:
    """The file line of a top-level frontmatter key (for messages)."""
    lines = doc_text.split("\n")
    if not lines or not FRONTMATTER_DELIM.match(lines[0]):
        return None
    for i in range(1, len(lines)):
        if FRONTMATTER_DELIM.match(lines[i]):
            break
        if re.match(rf"^{re.escape(key)}\s*:", lines[i]):
            return i + 1
    return None


# ---------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------


#: The dates memrepo keeps: wide enough for any real memory, narrow enough that a date
#: can be moved to any time zone or by a few days without leaving Python's year 1-9999
#: (0001-01-01 or 9999-12-31 in a frontmatter or a log are mistakes, not memories).
EARLIEST = dt.date(1900, 1, 1)
LATEST = dt.date(2999, 12, 31)


def date_range_problem(value: dt.date) -> str | None:
    """Why ``value`` (a date or datetime) is outside EARLIEST..LATEST, or None."""
    day = value.date() if isinstance(value, dt.datetime) else value
    if EARLIEST <= day <= LATEST:
        return None
    return (f"{value.isoformat()} is out of range: memrepo keeps dates from "
            f"{EARLIEST.isoformat()} to {LATEST.isoformat()}")


def parse_datetime(value: Any) -> dt.datetime | None:
    """A datetime from YAML's own timestamp or an ISO 8601 string, else None."""
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, str):
        s = value.strip()
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            return dt.datetime.fromisoformat(s)
        except ValueError:
            return None
    return None


def parse_date(value: Any) -> dt.date | None:
    """A date (or the date of a datetime) from YAML or an ISO 8601 string, else None."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        d = parse_datetime(value)
        if d is not None:
            return d.date()
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


# ---------------------------------------------------------------------------
# MEMORY.md's line_count (seed 000 §2.2, §2.3)
# ---------------------------------------------------------------------------

#: The frontmatter key in which MEMORY.md states its own size (seed 000 §2.3: "for cap
#: enforcement"), so a reader knows the size without counting.
LINE_COUNT_KEY = "line_count"


def count_lines(text: str) -> int:
    """Lines of a whole file, frontmatter included, counted as the cap counts them
    (``check-memory-cap``, :mod:`memrepo.lifecycle.cap`): its newlines, plus one for a
    last line that has none."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _frontmatter_end(lines: list[str]) -> int | None:
    """Index of the closing ``---`` line, or None when the text has no frontmatter."""
    if not lines or not FRONTMATTER_DELIM.match(lines[0]):
        return None
    for i in range(1, len(lines)):
        if FRONTMATTER_DELIM.match(lines[i]):
            return i
    return None


def _line_count_at(lines: list[str], end: int) -> int | None:
    for i in range(1, end):
        if re.match(rf"^{LINE_COUNT_KEY}[ \t]*:", lines[i]):
            return i
    return None


def stated_line_count(text: str) -> tuple[bool, int | None]:
    """(whether the frontmatter has ``line_count``, its value when a whole number)."""
    lines = text.split("\n")
    end = _frontmatter_end(lines)
    at = _line_count_at(lines, end) if end is not None else None
    if at is None:
        return False, None
    value = lines[at].split(":", 1)[1].strip().rstrip("\r")
    return True, int(value) if value.isdigit() else None


def with_line_count(text: str, add: bool = True) -> str:
    """``text`` with its frontmatter's ``line_count`` equal to :func:`count_lines` of the
    result; with ``add``, a missing key is added as the frontmatter's last line. Only that
    one line is touched (the YAML a person wrote is not re-rendered); a text without
    frontmatter is returned as it is. The number's width never changes the count, so one
    pass is exact."""
    lines = text.split("\n")
    end = _frontmatter_end(lines)
    if end is None:
        return text
    eol = "\r" if lines[0].endswith("\r") else ""
    at = _line_count_at(lines, end)
    if at is None:
        if not add:
            return text
        at = end
        lines.insert(at, "")
    count = len(lines) - 1 + (1 if lines[-1] else 0)  # count_lines of the joined text
    lines[at] = f"{LINE_COUNT_KEY}: {count}{eol}"
    out = "\n".join(lines)
    return text if out == text else out


#: A whole-line HTML comment opens (a line starting ``<!--``) and closes (ending ``-->``).
COMMENT_OPEN = re.compile(r"^\s*<!--")
COMMENT_CLOSE = re.compile(r"-->\s*$")


def unclosed_comment(lines: list[str]) -> int | None:
    """The index of a line that opens a whole-line HTML comment never closed, or None:
    Markdown hides everything after it, and the briefing would too."""
    opened = None
    for i, line in enumerate(lines):
        if opened is None:
            if COMMENT_OPEN.match(line) and not COMMENT_CLOSE.search(line):
                opened = i
        elif COMMENT_CLOSE.search(line):
            opened = None
    return opened
