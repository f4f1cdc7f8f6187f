"""People's names, kept out of the text a query's vector is made from.

A question such as "What did Caroline paint for Melanie?" names people; BM25 matches
those names exactly, but in a sentence vector they outweigh what is asked (every turn of
a conversation between the two is "about" them). The names come from the repo itself:
a transcript's ``participants``, a file's ``people``, and each person file's name and
aliases (:func:`memrepo.index.docmeta.read_meta`), stored word by word in the index's
``names`` table. A name word in the query becomes "they" ("their" for "Caroline's")
before it is embedded; the BM25 query keeps it (``bench/quality/eval_locomo.py``;
docs/search.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memrepo.index.db import Connection


#: a word as written, with an optional possessive
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s?$")
MIN_CHARS = 2


def words(names: Iterable[str]) -> list[str]:
    """The distinct lowercased words of ``names`` ("Jane Doe" -> jane, doe)."""
    out: dict[str, None] = {}
    for name in names:
        for w in _WORD.findall(name):
            w = _POSSESSIVE.sub("", w).lower()
            if len(w) >= MIN_CHARS:
                out[w] = None
    return list(out)


def lookup(con: Connection) -> Callable[[str], bool]:
    """Whether a lowercased word is a known name word (one indexed lookup per new word)."""
    seen: dict[str, bool] = {}

    def known(word: str) -> bool:
        hit = seen.get(word)
        if hit is None:
            row = con.execute("SELECT 1 FROM names WHERE word = ? LIMIT 1", (word,)).fetchone()
            hit = seen[word] = row is not None
        return hit

    return known


def _name_word(word: str, lower_typed: bool, known: Callable[[str], bool]) -> str | None:
    """The known name word (lowercased) that ``word`` of a query is, None if it is none.

    A word counts when it is written capitalised, or when the query has no capitals at
    all (``lower_typed``): "will" in "what will we do" is not Will's name."""
    base = _POSSESSIVE.sub("", word)
    if len(base) < MIN_CHARS or not (lower_typed or base[0].isupper()):
        return None
    return base.lower() if known(base.lower()) else None


def mask(query: str, known: Callable[[str], bool]) -> str:
    """``query`` with each name word replaced by "they" / "their"."""
    lower_typed = not any(c.isupper() for c in query)

    def sub(m: re.Match[str]) -> str:
        word = m.group(0)
        if _name_word(word, lower_typed, known) is None:
            return word
        return "their" if _POSSESSIVE.search(word) else "they"

    return _RUN.sub(lambda m: m.group(1), _WORD.sub(sub, query))


def named(query: str, known: Callable[[str], bool]) -> list[str]:
    """The distinct name words ``query`` names (lowercased), by :func:`mask`'s rule."""
    lower_typed = not any(c.isupper() for c in query)
    found = (_name_word(m.group(0), lower_typed, known) for m in _WORD.finditer(query))
    return list(dict.fromkeys(w for w in found if w is not None))


#: "Jane Doe" -> "they they" -> "they"; "Jane Doe's" -> "they their" -> "their"
_RUN = re.compile(r"\b(?:they\s+)+(they|their)\b")
