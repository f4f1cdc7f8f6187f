"""Which of a prompt's words a search ranks with: a corpus-driven stop list.

A word in a large share of the chunks gets almost no weight from BM25 yet costs a bm25
computation for every match, and a long prompt (a pasted log) is searched by its rarest
words. Both need how many chunks hold a word, counted here once per index version (the
caller clears the counts when the index changed). ``bench/perf/search_steps.py`` times
each step; ``bench/quality/eval_locomo_at_scale.py`` shows what the caps cost in recall.
"""

from __future__ import annotations

from collections.abc import Callable

from memrepo.index import cjk
from memrepo.index import db as dbmod
from memrepo.index import query as q

#: A query word in more than this share of all chunks (and at least COMMON_MIN) is left
#: out of the ranked query when rarer words remain: BM25 gives it almost no weight, but
#: ranking all its matches costs the most of a search in a large index
COMMON_FRAC = 0.02
COMMON_MIN = 2000
#: A long prompt (more than ``query.QUERY_TERMS`` search words) is searched by its
#: QUERY_TERMS rarest words among this many of its first (a pasted log or file names its
#: subject at its head), so choosing costs at most this many short counts
LONG_PROMPT_WORDS = 200
#: how far a long prompt's words are counted, round by round: counting stops after the
#: round that leaves QUERY_TERMS words known to be rarer than its limit
RARITY_ROUNDS = (256, 4096)
#: The most chunks one ranked query may match, counted word by word: FTS5 computes bm25
#: for every match before it sorts, so past this the commonest words are left out, the
#: rarest kept. Only an index past COMMON_MIN chunks is counted (a small repo never is)
MATCH_BUDGET = 50_000


class WordCounts:
    """Chunks holding each word of one index (a count below its limit is exact)."""

    def __init__(self, con: dbmod.Connection, on_change: Callable[[], None] = lambda: None):
        self.con = con
        #: called when another connection has committed since the counts were read (the
        #: caller's own caches of the index go stale with them)
        self.on_change = on_change
        #: word -> (chunks holding it, the limit it was counted to), as of _version
        self._counts: dict[str, tuple[int, int]] = {}
        self._version: int | None = None

    def check(self) -> None:
        """Forget the counts when another connection has committed since they were read."""
        (version,) = self.con.execute("PRAGMA data_version").fetchone()
        if version != self._version:
            self._counts, self._version = {}, version
            self.on_change()

    def count(self, word: str, at_most: int) -> int:
        """Chunks that hold ``word``, counted up to ``at_most`` (a count below its limit is
        exact, so a later, higher limit need not count again)."""
        known = self._counts.get(word)
        if known is not None and (known[0] < known[1] or known[1] >= at_most):
            return min(known[0], at_most)
        (n,) = self.con.execute(
            "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
            "LIMIT ?)",
            (q.fts_match([word]), at_most),
        ).fetchone()
        self._counts[word] = (n, at_most)
        return n

    def rarest(self, words: list[str]) -> tuple[list[str], list[str]]:
        """(a long prompt's QUERY_TERMS rarest words the index holds, in the prompt's
        order, words of scripts written without spaces taking their places first; the
        words left out). The counting goes round by round (RARITY_ROUNDS), each round over
        the words the last one could not tell apart; when too few words are rarer than the
        last limit, the commoner ones fill the places left, in the prompt's order."""
        if len(words) <= q.QUERY_TERMS:
            return words, []
        self.check()
        pool = words[:LONG_PROMPT_WORDS]
        runs = [w for w in pool if cjk.has_run(w)][:q.QUERY_TERMS]
        places = q.QUERY_TERMS - len(runs)
        rarer: list[tuple[int, int, str]] = []  # (chunks holding it, place, word)
        left = [(i, w) for i, w in enumerate(pool) if not cjk.has_run(w)]
        for limit in RARITY_ROUNDS:
            if len(rarer) >= places:
                break
            rest = []
            for i, w in left:
                n = self.count(w, limit)
                if n >= limit:
                    rest.append((i, w))
                elif n:
                    rarer.append((n, i, w))
            left = rest
        chosen = {w for _, _, w in sorted(rarer)[:places]}
        chosen.update(w for _, w in left[: places - len(chosen)])
        chosen.update(runs)
        keep = [w for w in pool if w in chosen]
        return keep, [w for w in words if w not in chosen]

    def prune_common(self, words: list[str], total: int) -> tuple[list[str], list[str]]:
        """(words to rank with, words left out as too common in this index): a word in
        more than COMMON_FRAC of the index's ``total`` chunks when rarer ones remain, then
        the commonest while the words' matches add up to more than MATCH_BUDGET (the
        rarest is kept)."""
        cap = max(COMMON_MIN, int(total * COMMON_FRAC))
        if len(words) < 2 or total <= cap:
            return words, []
        self.check()
        counts = {w: self.count(w, cap) for w in words}
        keep = [w for w in words if counts[w] < cap] or words
        matches, within = 0, set()
        for w in sorted(keep, key=lambda w: counts[w]):
            matches += counts[w]
            if within and matches > MATCH_BUDGET:
                break
            within.add(w)
        return [w for w in keep if w in within], [w for w in words if w not in within]
