"""The snippet picker: the line with the most words that start with a query term's stem."""

from __future__ import annotations

import random
import re

from memrepo.index.snippets import WIDTH, best_snippet

_WORD = re.compile(r"\w+")


def _count(line: str, terms: list[str]) -> int:
    """The definition, word by word (what the one-regex matcher must agree with)."""
    stems = [t.lower()[: max(3, len(t) - 2)] for t in terms if t]
    return sum(1 for w in _WORD.findall(line) if any(w.lower().startswith(s) for s in stems))


def test_the_line_with_most_matches_wins_and_is_cut_around_them() -> None:
    lines = [
        "## 10:00 — user",
        "We talked about the weather.",
        "Rotating the HMAC keys: rotate monthly, the rotation script is in ops/.",
        "- ~~rotate HMAC keys weekly~~ superseded",
    ]
    assert best_snippet(lines, ["rotating", "hmac"]).startswith("Rotating the HMAC keys")
    long = "filler " * 60 + "the payment webhook signs with HMAC" + " tail" * 40
    cut = best_snippet([long], ["hmac"])
    assert "HMAC" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) <= WIDTH + 2


WORDS = ["rotate", "Rotation", "rot", "HMAC", "hmacs", "key", "keys", "Straße", "a", "über",
         "x_y", "re.+", "payment", "pay", "(", "1999", "de-dup", "STRASSE"]


def test_the_regex_matcher_counts_what_the_definition_counts() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        lines = [
            " ".join(rng.choices(WORDS, k=rng.randint(0, 12))) for _ in range(rng.randint(1, 6))
        ]
        terms = rng.sample(WORDS, rng.randint(0, 4))
        counts = [_count(line, terms) if line.strip() else -1 for line in lines]
        winner = lines[counts.index(max(counts))]
        assert best_snippet(lines, terms, width=10_000) == " ".join(winner.split()), (lines, terms)
