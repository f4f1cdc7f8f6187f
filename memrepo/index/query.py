"""Any text is a valid query: seed 001's sanitising, plus stop and question words dropped.

Rules (seed 001): URLs stripped; hyphens split; punctuation and FTS5 syntax removed;
one-character tokens dropped; each word quoted so no word can be read as an operator or
a column; words OR-joined. On top of that, English stop words and question words are
dropped unless nothing would be left (``bench/quality/eval_locomo.py``).
A word of a script written without spaces (:mod:`~memrepo.index.cjk`) is kept whole with
its vowel marks (``\\w`` would split Thai at them), and kept at one character (猫 is a
word); the searcher splits it into bigrams.
"""

from __future__ import annotations

import functools
import re

from memrepo.index.cjk import RANGES, has_run

#: A prompt of more search words than this (a pasted log, a file) is searched by this many:
#: a ranked FTS5 OR query costs its matches times its words, and BM25 weighs a word by its
#: rarity anyway (Lucene's MoreLikeThis keeps 25 terms; ``bench/perf/bench_long_prompt.py``)
QUERY_TERMS = 24

_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)


@functools.cache
def _word_cjk() -> re.Pattern[str]:
    """Words of a non-ASCII query: ``\\w`` or a character of those scripts (compiled on
    first use, a cost an ASCII query never pays)."""
    return re.compile(rf"[\w{RANGES}]+", re.UNICODE)

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "either",
        "else",
        "ever",
        "few",
        "for",
        "from",
        "further",
        "get",
        "gets",
        "got",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "like",
        "me",
        "more",
        "most",
        "much",
        "must",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "per",
        "same",
        "shall",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "whatever",
        "when",
        "whenever",
        "where",
        "whereas",
        "wherever",
        "whether",
        "which",
        "while",
        "who",
        "whoever",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "won",
        "would",
        "wouldn",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
        "y",
    ]
)


def terms(query: str) -> list[str]:
    """Lower-cased, de-duplicated query words worth searching for, in order."""
    text = _URL.sub(" ", query or "").replace("-", " ")
    words: list[str] = []
    rx = _WORD if text.isascii() else _word_cjk()
    for w in rx.findall(text.lower()):
        w = w.strip("_")
        if (len(w) > 1 or has_run(w)) and w not in words:
            words.append(w)
    kept = [w for w in words if w not in STOP_WORDS]
    return kept or words


def searched_by(used: list[str], words: list[str], which: str) -> str:
    """What ``--explain`` says of a long prompt searched by some of its words."""
    return f"searched by {len(used)} of its {len(words)} words, {which}"


def fts_match(words: list[str]) -> str:
    """An FTS5 MATCH expression: each word quoted, OR-joined ('' when nothing is left)."""
    return " OR ".join('"' + w.replace('"', "") + '"' for w in words)


_WORD_RUN = re.compile(r"\w+")


def shared_words(words: list[str] | tuple[str, ...], text: str) -> int:
    """How many of a query's search ``words`` occur in ``text``: a word of five letters or
    more by its stem (its first ``len - 3``, at least four), as the index's stemmer would
    find it ("failed" finds "failure"); a word of a script written without spaces anywhere
    in the text, where it has no word boundary. What recall and the trim's repo search ask
    of a passage before they show it."""
    low = text.lower()
    have = set(_WORD_RUN.findall(low))
    n = 0
    for w in words:
        if not w.isascii():
            n += w in low
        elif len(w) < 5:
            n += w in have
        else:
            stem = w[: max(4, len(w) - 3)]
            n += any(h.startswith(stem) for h in have)
    return n
