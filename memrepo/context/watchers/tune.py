"""``memory topics tune``: per-topic statistics from the gate log and threshold suggestions.

The suggestions are deliberately simple rules a person can check: activations mostly
judged not useful (``was_useful``, :mod:`memrepo.context.watchers.feedback`: the most
direct evidence, so it is looked at first) mean the topic fires where it does not help;
a gate that mostly says NO means Tier 1/2 let too much through (raise the threshold);
one that always says YES is a wasted call (lower the threshold or make the topic
``auto``); a topic that never fires may have triggers nobody types.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

#: Fewer gate answers than this and no suggestion is made (too little evidence).
MIN_SAMPLES = 10
#: Fewer judged activations than this and their precision suggests nothing.
MIN_JUDGED = 5
#: Below this share of judged activations found useful, the topic fires too easily.
LOW_PRECISION = 0.4


@dataclass
class TopicStats:
    topic: str
    candidates: int = 0
    activated: int = 0
    tier1: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    tier2_only: int = 0
    events: int = 0
    gate_yes: int = 0
    gate_no: int = 0
    cached: int = 0
    offline: int = 0
    scores: list[float] = field(default_factory=list)
    threshold: float | None = None
    judged: int = 0  # activations with a was_useful verdict
    useful: int = 0

    @property
    def precision(self) -> float | None:
        """Share of judged activations that were useful (None before any was judged)."""
        return self.useful / self.judged if self.judged else None

    def as_json(self) -> dict[str, Any]:
        asked = self.gate_yes + self.gate_no
        precision = self.precision
        return {
            "topic": self.topic,
            "candidates": self.candidates,
            "activated": self.activated,
            "tier1": dict(self.tier1),
            "tier2_only": self.tier2_only,
            "events": self.events,
            "gate_yes": self.gate_yes,
            "gate_no": self.gate_no,
            "gate_yes_rate": round(self.gate_yes / asked, 3) if asked else None,
            "gate_cached": self.cached,
            "offline_decisions": self.offline,
            "judged": self.judged,
            "useful": self.useful,
            "precision": round(precision, 3) if precision is not None else None,
            "suggestion": suggest(self),
        }


def collect(entries: list[dict[str, Any]]) -> list[TopicStats]:
    stats: dict[str, TopicStats] = {}
    for e in entries:
        name = str(e.get("topic", "?"))
        s = stats.setdefault(name, TopicStats(name))
        s.candidates += 1
        s.activated += bool(e.get("active"))
        kinds = e.get("tier1") or []
        for k in kinds:
            s.tier1[k] += 1
        if e.get("scope") == "event":
            s.events += 1
        elif not kinds:
            s.tier2_only += 1
        if e.get("gate") == "yes":
            s.gate_yes += 1
        elif e.get("gate") == "no":
            s.gate_no += 1
        if e.get("source") == "cache":
            s.cached += 1
        if e.get("source") == "offline":
            s.offline += 1
        if isinstance(e.get("tier2"), (int, float)):
            s.scores.append(float(e["tier2"]))
        if isinstance(e.get("threshold"), (int, float)):
            s.threshold = float(e["threshold"])
        if e.get("active") and isinstance(e.get("was_useful"), bool):
            s.judged += 1
            s.useful += e["was_useful"]
    return sorted(stats.values(), key=lambda s: (-s.candidates, s.topic))


def suggest(s: TopicStats) -> str | None:
    asked = s.gate_yes + s.gate_no
    th = s.threshold if s.threshold is not None else 0.15
    if s.judged >= MIN_JUDGED and s.useful < LOW_PRECISION * s.judged:
        return (
            f"only {s.useful} of {s.judged} judged activations were useful "
            f"({s.useful / s.judged:.0%}): raise similarity_threshold to "
            f"{min(0.9, th + 0.05):.2f} or tighten its triggers"
        )
    if asked >= MIN_SAMPLES:
        rate = s.gate_yes / asked
        if rate < 0.2:
            return (
                f"gate says NO {1 - rate:.0%} of the time: raise similarity_threshold to "
                f"{min(0.9, th + 0.05):.2f} or tighten its patterns"
            )
        if rate > 0.95:
            return "gate always says YES: make the topic activation: auto (saves the calls)"
    if s.candidates >= MIN_SAMPLES and s.activated == 0:
        return "never activated: check its triggers or lower similarity_threshold"
    if (
        s.tier2_only >= MIN_SAMPLES
        and s.tier2_only > 0.8 * s.candidates
        and s.activated < s.candidates / 4
    ):
        return f"mostly dropped tier-2 candidates: raise similarity_threshold to {th + 0.05:.2f}"
    return None
