"""Split a markdown file into search units that a person would point at.

A heading starts a section; a transcript turn (``## HH:MM — role``) is a heading, so a
turn is a chunk; a section longer than :data:`MAX_CHARS` is cut at blank lines or
top-level bullets (so a bullet group stays whole), each piece repeating the last line of
the one before (overlap). Every chunk knows its 1-based line span in the file, which is
what search prints and what ``reinforce path:LINE`` points back at.

The chunker must be deterministic: the contentless FTS table is cleaned by re-chunking
the old blob and deleting exactly the text that was inserted.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass, replace

from memrepo.layout import superseded_share

MAX_CHARS = 1500
TARGET_CHARS = 1000
#: A transcript turn is indexed with the start of the turn before it: a reply means little
#: without what it replies to ("yes, last Friday"); the line span stays the turn's own
#: (``bench/quality/eval_locomo.py``).
CONTEXT_CHARS = 300
_HEADING = re.compile(r"^(#{1,6})\s+(\S.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s")


@dataclass(frozen=True)
class Chunk:
    ord: int
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str  # what is indexed: heading trail (if any) + the lines
    stale: float = 0.0  # share of its bullets that are superseded entries (down-ranked)
    lead: int = 0  # characters at the end of ``text`` that lead in from the turn before
    #: a transcript turn's reply: the next chunk's own text ('' for the last, and outside
    #: transcripts); embedded with the turn as its second vector (:attr:`reply_text`)
    reply: str = ""

    @property
    def hash(self) -> int:
        return content_hash(self.text)

    @property
    def reply_text(self) -> str | None:
        """The turn followed by its reply: what the second vector of a transcript turn
        embeds (search averages it with the first). Half of what a question asks is in the
        answer a turn got ("Did you go?" "Yes, to Paris"): two vectors find more of the
        turns a question needs than one (``bench/quality/eval_locomo.py``; docs/search.md)."""
        return f"{self.own_text}\n{self.reply}" if self.reply else None

    @property
    def reply_hash(self) -> int | None:
        """Key of the second vector (its text marked, so it never meets a chunk's hash)."""
        text = self.reply_text
        return None if text is None else content_hash("\x00reply\x00" + text)

    def vector_texts(self, replies: bool = True) -> dict[int, str]:
        """What the vectors of this chunk embed, by key: the one place that says it
        (``replies``: the index keeps reply vectors, ``search.reply_vectors``)."""
        out = {self.hash: self.own_text}
        if self.reply and replies:
            out[self.reply_hash] = self.reply_text  # type: ignore[index]
        return out

    @property
    def own_text(self) -> str:
        """What vectors embed: the chunk without the lead of the turn before it.

        Words of the previous turn help BM25 find a short reply, but in a sentence
        vector they blur what this turn says (``bench/quality/eval_locomo.py``,
        ``bench/quality/eval_compile_locomo.py``).
        """
        return self.text[: len(self.text) - self.lead] if self.lead else self.text


def content_hash(text: str) -> int:
    """A signed 64-bit hash (fits an SQLite INTEGER) of the indexed text."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _sections(lines: list[str], start: int) -> list[tuple[int, int, int, str]]:
    """(first index, end index exclusive, heading level or 0, heading text) per section."""
    out: list[tuple[int, int, int, str]] = []
    cur, level, title = start, 0, ""
    fence: str | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        fm = _FENCE.match(line)
        if fm:
            if fence is None:
                fence = fm.group(1)
            elif fm.group(1) == fence:
                fence = None
            continue
        if fence is None and line.startswith("#"):
            hm = _HEADING.match(line)
            if hm:
                if i > cur:
                    out.append((cur, i, level, title))
                cur, level, title = i, len(hm.group(1)), hm.group(2)
    if len(lines) > cur:
        out.append((cur, len(lines), level, title))
    return out


def _split(lines: list[str], a: int, b: int) -> list[tuple[int, int]]:
    """Cut lines[a:b] into pieces near TARGET_CHARS at natural breaks, with 1-line overlap."""
    pieces: list[tuple[int, int]] = []
    i = a
    while i < b:
        size, j, fence = 0, i, False
        while j < b:
            line = lines[j]
            if _FENCE.match(line):
                fence = not fence
            size += len(line) + 1
            j += 1
            if j >= b:
                break
            nxt = lines[j]
            natural = not fence and (not nxt.strip() or _BULLET.match(nxt) or not line.strip())
            if (size >= TARGET_CHARS and natural) or size >= MAX_CHARS:
                break
        # trim blank lines at the piece's end
        e = j
        while e > i + 1 and not lines[e - 1].strip():
            e -= 1
        pieces.append((i, e))
        if j >= b:
            break
        nxt_start = j
        while nxt_start < b and not lines[nxt_start].strip():
            nxt_start += 1
        # overlap: repeat the previous piece's last line when the pieces are adjacent text
        if e - i > 2 and nxt_start == j and lines[e - 1].strip():
            nxt_start = e - 1
        i = nxt_start
    return pieces


def chunk_lines(lines: list[str], body_line: int, *, transcript: bool = False) -> list[Chunk]:
    """Chunks of the body (file lines from ``body_line`` on, 1-based)."""
    chunks: list[Chunk] = []
    trail: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    previous = ""  # body of the previous chunk (transcripts: the turn before)
    for a, b, level, title in _sections(lines, max(body_line - 1, 0)):
        if level:
            while trail and trail[-1][0] >= level:
                trail.pop()
            context = "" if transcript else " › ".join(t for _, t in trail)
            trail.append((level, title))
        else:
            context = ""
        # strip blank lines at both ends; a heading with nothing under it is not a chunk
        while a < b and not lines[a].strip():
            a += 1
        while b > a and not lines[b - 1].strip():
            b -= 1
        if b <= a or (level and b == a + 1):
            continue
        size = sum(len(x) + 1 for x in lines[a:b])
        spans = [(a, b)] if size <= MAX_CHARS else _split(lines, a, b)
        for k, (s, e) in enumerate(spans):
            head = context
            if k > 0 and level:
                head = f"{context} › {title}" if context else title
            body = "\n".join(lines[s:e])
            text = f"{head}\n{body}" if head else body
            lead = ""
            if transcript and previous:
                lead = f"\n{_lead(previous)}"
            stale = 0.0 if transcript else superseded_share(lines[s:e])
            chunks.append(Chunk(len(chunks), s + 1, e, text + lead, stale, len(lead)))
            previous = "\n".join(lines[s + 1 : e]) if level and k == 0 else body
    if transcript:
        chunks = [replace(c, reply=n.own_text) for c, n in itertools.pairwise(chunks)] + chunks[-1:]
    return chunks


def _lead(text: str) -> str:
    """The first CONTEXT_CHARS characters of ``text``, cut at a space."""
    text = " ".join(text.split())
    if len(text) <= CONTEXT_CHARS:
        return text
    cut = text.rfind(" ", 0, CONTEXT_CHARS)
    return text[: cut if cut > 0 else CONTEXT_CHARS]
