"""Scripts written without spaces between words (Chinese, Japanese, Korean, Thai, ...).

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation only, so
``我们决定使用数据库迁移方案`` is one token and ``迁移`` (a word inside it) never matches.
Such text is indexed a second time, in ``chunks_cjk``, as overlapping character bigrams
(the CJK analysis of Lucene and Elasticsearch): ``迁移 移方 方案 案`` — the run's last
character is added alone, so every character of a run starts a token. Any word of two or
more characters is then a phrase of adjacent bigrams, a one-character word a prefix.
Letters and digits written against a run with no space (``用Redis做缓存``) go in too, so
``redis`` finds them. The table uses FTS5's ``ascii`` tokenizer: every non-ASCII character
is a token character there, so a bigram is never split whatever Unicode version the
SQLite build knows (``unicode61`` would split Thai at its vowel marks).

A chunk with no such run adds nothing (``index_text`` is ``''``): the table grows only
with that text, and the common case pays one ``str.isascii`` (or one regex scan of a
non-ASCII chunk) per chunk. Trigrams were not used: FTS5's trigram tokenizer matches
nothing shorter than three characters, and most Chinese words have two.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memrepo.index.db import Connection


#: Code point ranges of scripts that do not separate words with spaces (and Hangul, whose
#: particles attach to the word before them): Thai, Lao, Myanmar, Khmer, Hangul Jamo,
#: CJK punctuation marks that are letters (々〆〇), Hiragana, Katakana, Bopomofo, Hangul
#: compatibility Jamo, CJK Extension A, CJK Unified Ideographs, Yi, Hangul syllables,
#: CJK compatibility ideographs, halfwidth Katakana, and the supplementary ideographs.
RANGES = (
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff"
    "\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
GLUE_WINDOW = 64


@functools.cache
def _rx() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(a run; the letters and digits written right after a run, with no space; those
    right before it, searched in a short window). Compiled on first use: a cost the hook
    and search processes of an ASCII-only repo never pay."""
    return (
        re.compile(f"[{RANGES}]+"),
        re.compile(rf"[^\W{RANGES}]+"),
        re.compile(rf"[^\W{RANGES}]+\Z"),
    )

def has_run(text: str) -> bool:
    """Whether ``text`` holds any character of those scripts (one C-level scan)."""
    return not text.isascii() and _rx()[0].search(text) is not None


def runs(text: str) -> list[str]:
    return _rx()[0].findall(text)


def bigrams(run: str) -> list[str]:
    """``迁移方案`` -> ``迁移 移方 方案 案``; a one-character run is itself."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]]


def index_text(text: str) -> str:
    """What ``chunks_cjk`` holds for a chunk: its runs as bigrams, and the words glued to
    them; ``''`` when it has no run (nothing is stored). Deterministic: a delete from the
    contentless table recomputes it from the old text."""
    if text.isascii():
        return ""
    run, after_rx, before_rx = _rx()
    parts: list[str] = []
    glued: list[str] = []
    for m in run.finditer(text):
        parts.append(" ".join(bigrams(m.group())))
        s, e = m.span()
        before = before_rx.search(text, max(0, s - GLUE_WINDOW), s) if s else None
        after = after_rx.match(text, e)
        glued += [x.group().lower() for x in (before, after) if x is not None]
    return "\n".join(parts + list(dict.fromkeys(glued)))


def pieces(word: str) -> list[str]:
    """The pieces of ``word`` outside its runs (``用redis做缓存`` -> ``redis``)."""
    return [x for x in _rx()[0].split(word) if x]


def add(con: Connection, rowid: int, text: str) -> None:
    """Index one chunk's runs (nothing when it has none)."""
    t = index_text(text)
    if t:
        con.execute("INSERT INTO chunks_cjk(rowid, text) VALUES (?, ?)", (rowid, t))


def remove(con: Connection, rows: list[tuple[int, str]]) -> None:
    """Forget chunks ``(rowid, the text they were indexed with)``."""
    todo = [(rowid, t) for rowid, t in ((r, index_text(x)) for r, x in rows) if t]
    if todo:
        con.executemany(
            "INSERT INTO chunks_cjk(chunks_cjk, rowid, text) VALUES ('delete', ?, ?)", todo
        )


def _quote(s: str) -> str:
    return '"' + s.replace('"', "") + '"'


def match(words: list[str], glued: bool = False) -> str:
    """The MATCH expression for ``chunks_cjk`` (``''`` when there is nothing to ask).

    A run becomes its bigrams OR-joined (any of them is a partial match, BM25 ranks the
    chunks holding more of them higher, as for the words of a Latin query) plus the whole
    run as one phrase, so a chunk holding it exactly scores above one holding its pieces.
    A one-character word is a prefix (every character of a run starts a token). With
    ``glued``, words of other scripts are asked too: they match where they were written
    against a run (``用Redis做缓存``).
    """
    phrases: list[str] = []
    for w in words:
        found = runs(w) if not w.isascii() else []
        if not found:
            if glued:
                phrases.append(_quote(w))
            continue
        for r in found:
            if len(r) == 1:
                if len(w) == 1:  # a lone character; inside a longer word it says little
                    phrases.append(_quote(r) + " *")
                continue
            grams = list(dict.fromkeys(r[i : i + 2] for i in range(len(r) - 1)))
            phrases += [_quote(g) for g in grams]
            if len(r) > 2:
                phrases.append(_quote(" ".join(r[i : i + 2] for i in range(len(r) - 1))))
        phrases += [_quote(x) for x in pieces(w)]
    return " OR ".join(dict.fromkeys(phrases))


def count(text: str, word: str) -> int:
    """How often the runs of ``word`` occur in ``text`` (the scan fallback's term
    frequency: a substring count is exact where there are no word boundaries)."""
    return sum(text.count(r) for r in runs(word))


def best_snippet(lines: list[str], words: list[str], width: int) -> str | None:
    """The line holding most of the query's words as substrings (a run's bigrams count
    too), cut to ``width`` around the first; None when no line holds any.

    For what the ordinary snippet cannot see: a word inside a run, or one written against
    it (``用Redis做缓存``), has no word boundary for it to find."""
    needles = []
    for w in words:
        found = runs(w)
        needles += [g for r in found for g in (r, *bigrams(r)[:-1])] if found else [w.lower()]
    best, best_n = "", 0
    for line in lines:
        low = line.lower()
        n = sum(low.count(x) for x in needles)
        if n > best_n:
            best, best_n = line, n
    if not best_n:
        return None
    text = " ".join(best.split())
    if len(text) <= width:
        return text
    low = text.lower()
    first = min((i for i in (low.find(x) for x in needles) if i >= 0), default=0)
    start = max(0, min(first - width // 4, len(text) - width))
    cut = text[start : start + width]
    return ("…" if start else "") + cut.strip() + ("…" if start + width < len(text) else "")
