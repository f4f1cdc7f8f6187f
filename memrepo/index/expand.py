"""Query expansion from a static word-neighbour table: recall for words the notes don't use.

"who has a new dog" shares no word with "Sam adopted a beagle puppy"; BM25 alone cannot
find it. The table gives each English word its nearest words (cosine >= 0.5, at most 5),
and search adds them as a second, down-weighted FTS5 query (``search.expansion_weight``).
No model runs at query time: the table is package data, derived once from
all-MiniLM-L6-v2 (Apache-2.0, see the NOTICE beside it) by embedding each whole word of
its own vocabulary alone (``tools/build_neighbours.py`` rebuilds it). Words the repo does
not use simply match nothing.

The file is sorted, one ``word<TAB>n1 n2 …`` line per word, and looked up by binary
search over a memory map: a query reads a few pages instead of parsing the whole table.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("data") / "all-MiniLM-L6-v2" / "neighbours.tsv"
#: Neighbours taken per query word (the best of 2-5, ``bench/quality/eval_locomo.py``).
PER_WORD = 3


@lru_cache(maxsize=1)
def _table() -> mmap.mmap | None:
    try:
        with open(TABLE, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None  # a stripped install: search works, without expansion


def neighbours(word: str) -> list[str]:
    """The table's nearest words for ``word`` (lower-case ASCII letters), best first."""
    table = _table()
    if table is None or not word.isascii() or not word.isalpha():
        return []
    key = word.lower().encode("ascii") + b"\t"
    lo, hi = 0, len(table)
    while lo < hi:  # find the first line whose start is >= key
        mid = (lo + hi) // 2
        start = table.rfind(b"\n", 0, mid) + 1
        end = table.find(b"\n", start)
        end = len(table) if end < 0 else end
        line = table[start:end]
        if line + b"\n" < key:
            lo = end + 1
        else:
            hi = start
    start = lo
    end = table.find(b"\n", start)
    line = table[start : len(table) if end < 0 else end]
    if not line.startswith(key):
        return []
    return line[len(key):].decode("ascii").split()


def expansion(words: list[str], used: Callable[[str], bool] = lambda w: True,
              per_word: int = PER_WORD) -> list[str]:
    """The neighbours of ``words`` to search for too: new words only, in query order.

    ``used`` says whether the repo holds a word: each query word takes its ``per_word``
    nearest words that the repo does hold (a query word the notes never use is the case
    expansion is for)."""
    seen = {w.lower() for w in words}
    out: list[str] = []
    for w in words:
        near = neighbours(w)
        took = 0
        for n in near:
            if took >= per_word:
                break
            if n not in seen and used(n):
                seen.add(n)
                out.append(n)
                took += 1
    return out
