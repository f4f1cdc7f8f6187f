"""Tier 2 (seed 000 §4.2): TF-IDF cosine between a message and each topic's profile.

Pure Python over sparse dicts: topic vectors are built once per topic set; a message
costs one tokenisation and a walk over an inverted index, well under a millisecond for
100 topics. Words of the message that no topic uses still count in its norm (with the
highest IDF), so a long message that mentions one topic word in passing scores low.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from memrepo.context.watchers.loader import Topic

_WORD = re.compile(r"[a-z0-9][a-z0-9_'-]*[a-z0-9]|[a-z0-9]")
_STOP = (
    "a an and are as at be but by can could did do does for from had has have he her his how i "
    "if in into is it its just me my no not of on or our she so than that the their them then "
    "there these they this to too up us was we were what when where which who why will with would "
    "you your about after all also any been before being both each few more most other over same "
    "should some such only own very don now here again further once under until while out off down"
)
STOPWORDS = frozenset(_STOP.split())


def terms(text: str) -> list[str]:
    """Lower-cased words without stopwords, with a light plural fold (topics ~ topic)."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS or len(w) < 2:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class SimilarityScorer:
    """Cosine of sublinear TF-IDF vectors (smooth IDF, as scikit-learn's default)."""

    def __init__(self, topics: list[Topic]):
        self.names = [t.name for t in topics]
        docs = [Counter(terms(t.profile_text())) for t in topics]
        n = len(docs)
        df: Counter[str] = Counter()
        for d in docs:
            df.update(d.keys())
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self.unknown_idf = math.log(1 + n) + 1.0
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, d in enumerate(docs):
            vec = {w: (1.0 + math.log(c)) * self.idf[w] for w, c in d.items()}
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            for w, v in vec.items():
                self.postings.setdefault(w, []).append((i, v / norm))

    def scores(self, text: str) -> dict[str, float]:
        """Topic name -> cosine similarity in [0, 1] (topics sharing no word are absent)."""
        counts = Counter(terms(text))
        if not counts:
            return {}
        qvec = {
            w: (1.0 + math.log(c)) * self.idf.get(w, self.unknown_idf) for w, c in counts.items()
        }
        qnorm = math.sqrt(sum(v * v for v in qvec.values())) or 1.0
        acc: dict[int, float] = {}
        for w, qv in qvec.items():
            for i, tv in self.postings.get(w, ()):
                acc[i] = acc.get(i, 0.0) + qv * tv
        return {self.names[i]: min(1.0, s / qnorm) for i, s in acc.items()}
