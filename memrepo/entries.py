"""Knowledge entries: one bullet line per fact, with its source and, when replaced, a marker.

Why a line format: every written line must be traceable to its transcript, and a
superseded fact is kept (nothing is deleted) but must read — and rank — as replaced::

    - 2026-02-16: Use PostgreSQL for the ledger [src: 2026/02/16/1845-ses_a1b2c3d4]
    - ~~2026-02-10: Use MySQL for the ledger~~ [src: 2026/02/10/0900-ses_x] \
      (superseded 2026-02-16 by: Use PostgreSQL for the ledger)      <- one line in the file

``[src: YYYY/MM/DD/HHMM-<session>]`` names the transcript
``raw/conversations/YYYY/MM/DD/HHMM-<session>-*.md`` (short, and unique by its session id).
Sections are markdown headings; entries are the bullets under them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memrepo.layout import SRC, SUPERSEDED_LINE

_BULLET = re.compile(r"^(?P<indent>\s*)[-*] (?P<rest>.+?)\s*$")
_DATED = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2}):\s+(?P<text>.+)$")
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*$")


#: Words that carry no fact: left out when two entries, or an entry and a passage, are
#: compared (the extractors' ADD / UPDATE / NONE, the MEMORY.md cap, recall's echoes).
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "at",
        "by",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "we",
        "i",
        "you",
        "they",
        "he",
        "she",
        "our",
        "my",
        "your",
        "as",
        "use",
        "using",
        "will",
        "would",
        "should",
        "can",
        "not",
        "no",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "so",
        "but",
        "if",
        "then",
        "than",
        "into",
        "also",
        "just",
    ]
)


def words(text: str) -> set[str]:
    """The words an entry is compared by: lower-case letters and digits, no stop words."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 1}


def restated(text: str, other: set[str]) -> bool:
    """Whether ``other`` (a passage's :func:`words`) holds at least half of ``text``'s."""
    mine = words(text)
    return bool(mine) and 2 * len(mine & other) >= len(mine)


@dataclass
class Entry:
    """A bullet of a section: its text (without date, source or markers) and metadata."""

    line_no: int
    text: str
    date: str | None = None
    srcs: tuple[str, ...] = ()
    superseded: bool = False

    def render(self, dated: bool = True) -> str:
        body = f"{self.date}: {self.text}" if dated and self.date else self.text
        src = f" [src: {'; '.join(self.srcs)}]" if self.srcs else ""
        return f"- {body}{src}"


def parse_entry(line: str, line_no: int = 0) -> Entry | None:
    """The entry a bullet line holds, or None for anything else."""
    sm = SUPERSEDED_LINE.match(line)
    if sm:
        old = sm["old"]
        dm = _DATED.match(old)
        srcs = tuple(s.strip() for s in SRC.match(sm["src"])["src"].split(";")) if sm["src"] \
            else ()
        return Entry(line_no, dm["text"] if dm else old, dm["date"] if dm else None, srcs, True)
    m = _BULLET.match(line)
    if not m or m["indent"]:
        return None
    rest = m["rest"]
    srcs: tuple[str, ...] = ()
    sm2 = SRC.search(rest)
    if sm2:
        srcs = tuple(s.strip() for s in sm2["src"].split(";"))
        rest = (rest[: sm2.start()] + rest[sm2.end():]).strip()
    dm = _DATED.match(rest)
    if dm:
        return Entry(line_no, dm["text"], dm["date"], srcs)
    return Entry(line_no, rest, None, srcs)


def superseded_line(old: Entry, when: str, new_text: str, dated: bool = True) -> str:
    body = f"{old.date}: {old.text}" if dated and old.date else old.text
    src = f" [src: {'; '.join(old.srcs)}]" if old.srcs else ""
    return f"- ~~{body}~~{src} (superseded {when} by: {new_text})"


# ---------------------------------------------------------------------------
# Sections of a markdown body
# ---------------------------------------------------------------------------


def find_section(lines: list[str], title: str, start: int = 0) -> tuple[int, int] | None:
    """(heading index, end index) of the first heading named ``title`` (case-insensitive).

    The section ends at the next heading of the same or a higher level.
    """
    want = title.strip().lower()
    in_fm = bool(lines) and lines[0].strip() == "---"
    for i in range(start, len(lines)):
        if in_fm:
            if i > 0 and lines[i].strip() == "---":
                in_fm = False
            continue
        m = HEADING.match(lines[i])
        if m and m["title"].strip().lower() == want:
            level = len(m["hashes"])
            for j in range(i + 1, len(lines)):
                h = HEADING.match(lines[j])
                if h and len(h["hashes"]) <= level:
                    return i, j
            return i, len(lines)
    return None


def section_entries(lines: list[str], span: tuple[int, int]) -> list[Entry]:
    out = []
    for i in range(span[0] + 1, span[1]):
        e = parse_entry(lines[i], i)
        if e is not None:
            out.append(e)
    return out


def ensure_section(lines: list[str], title: str, level: int = 2,
                   under: str | None = None) -> tuple[int, int]:
    """The span of section ``title``, appending it (at the end, or of ``under``) if missing."""
    span = find_section(lines, title)
    if span:
        return span
    at = len(lines)
    if under:
        parent = find_section(lines, under)
        if parent:
            at = parent[1]
    while at > 0 and not lines[at - 1].strip():
        at -= 1
    block = ["", f"{'#' * level} {title}"]
    lines[at:at] = block
    return at + 1, at + 2


def insert_entry(lines: list[str], span: tuple[int, int], line: str) -> None:
    """Add ``line`` after the section's last non-blank line (so bullets stay together)."""
    at = span[1]
    while at > span[0] + 1 and not lines[at - 1].strip():
        at -= 1
    lines.insert(at, line)
    if at + 1 < len(lines) and lines[at + 1].strip() and HEADING.match(lines[at + 1]):
        lines.insert(at + 1, "")
