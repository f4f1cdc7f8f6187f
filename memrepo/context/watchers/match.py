"""The watcher pipeline: Tier 1 -> Tier 2 -> bypass table -> gate, for input or output text.

Input text (the user's message, a trigger payload) goes through all three tiers. Output
text (the agent's own reply) is matched by Tier 1 alone: output triggers are corrective
(seed 000 §4.3) and must fire on the next turn without a model call. Events
(``cron:NAME``, ``webhook:SOURCE:EVENT``) activate the topics whose trigger names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.context.watchers import gate as gatemod
from memrepo.context.watchers.loader import Topic, TopicProblem, TopicSet, load_topics
from memrepo.context.watchers.tier1 import PatternMatcher, Tier1Hit
from memrepo.context.watchers.tier2 import SimilarityScorer


@dataclass
class Activation:
    """One candidate topic and what the pipeline decided about it."""

    topic: Topic
    active: bool
    reason: str
    tier1: list[Tier1Hit] = field(default_factory=list)
    score: float = 0.0
    gate: str | None = None  # yes | no | None (not asked)
    source: str = "bypass"  # bypass | llm | cache | offline | event | output

    @property
    def hints(self) -> list[str]:
        return [h.hint for h in self.tier1 if h.hint]

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic.name,
            "path": self.topic.path,
            "active": self.active,
            "reason": self.reason,
            "tier1": [h.as_json() for h in self.tier1],
            "tier2": round(self.score, 4),
            "gate": self.gate,
            "source": self.source,
            "priority": self.topic.priority,
            "activation": self.topic.activation,
        }


@dataclass
class MatchResult:
    activated: list[Activation]
    dropped: list[Activation]
    gate_mode: str  # online | offline
    problems: list[TopicProblem]
    timeouts: list[str] = field(default_factory=list)

    def corrections(self) -> list[tuple[str, str]]:
        """(topic, hint) for activated output watchers: what a runtime injects next turn."""
        out = []
        for a in self.activated:
            if a.source != "output":
                continue
            for hint in a.hints or [a.topic.description or f"Follow topic {a.topic.name}"]:
                out.append((a.topic.name, hint))
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "activated": [a.as_json() for a in self.activated],
            "dropped": [a.as_json() for a in self.dropped],
            "gate_mode": self.gate_mode,
            "corrections": [{"topic": t, "hint": h} for t, h in self.corrections()],
            "problems": [{"path": p.path, "message": p.message} for p in self.problems],
        }


_ENGINES: dict[int, tuple[TopicSet, PatternMatcher, SimilarityScorer]] = {}


def _engines(ts: TopicSet) -> tuple[PatternMatcher, SimilarityScorer]:
    hit = _ENGINES.get(id(ts))
    if hit is None or hit[0] is not ts:
        hit = (ts, PatternMatcher(ts.topics), SimilarityScorer(ts.topics))
        _ENGINES.clear()
        _ENGINES[id(ts)] = hit
    return hit[1], hit[2]


def _event_hits(topic: Topic, events: list[str]) -> list[Tier1Hit]:
    hits = []
    for ev in events:
        kind, _, rest = ev.partition(":")
        for t in topic.triggers:
            if t.kind != kind or kind not in ("cron", "webhook"):
                continue
            if kind == "cron" and rest in (t.spec.get("name"), topic.name):
                hits.append(Tier1Hit(topic.name, "cron", ev, "event"))
            elif kind == "webhook":
                source, _, event = rest.partition(":")
                want = t.spec.get("event")
                if source == t.spec.get("source") and (not want or not event or want == event):
                    hits.append(Tier1Hit(topic.name, "webhook", ev, "event"))
    return hits


def match_topics(
    root: str | Path,
    text: str = "",
    *,
    scope: str = "input",
    events: list[str] | None = None,
    config: dict[str, Any] | None = None,
    gate: gatemod.Gate | None = None,
    log: bool = True,
    topics: TopicSet | None = None,
) -> MatchResult:
    """Which topics ``text`` activates. ``config`` is the ``watchers`` config section."""
    root = Path(root)
    cfg = config or {}
    ts = topics if topics is not None else load_topics(root)
    matcher, scorer = _engines(ts)
    if gate is None:
        model = str(cfg.get("gate_model", "haiku"))
        allowed = gatemod.agent_llm(root)
        llm = gatemod.make_llm(model, agent_llm=allowed) if gatemod.online(allowed) else None
        gate = gatemod.Gate(root, model, llm, int(cfg.get("gate_max_tokens", 1)))
    global_threshold = float(cfg.get("similarity_threshold", 0.15))
    hits_by_topic: dict[str, list[Tier1Hit]] = {}
    for h in matcher.match(text, scope) if text else []:
        hits_by_topic.setdefault(h.topic, []).append(h)
    scores = scorer.scores(text) if text and scope == "input" else {}
    activated: list[Activation] = []
    dropped: list[Activation] = []
    entries: list[dict[str, Any]] = []
    msg_hash = gatemod.message_hash(text)
    for topic in ts.topics:
        t1 = hits_by_topic.get(topic.name, [])
        ev = _event_hits(topic, events or [])
        score = scores.get(topic.name, 0.0)
        threshold = (
            float(topic.similarity_threshold)
            if topic.similarity_threshold is not None
            else global_threshold
        )
        if ev:
            a = Activation(
                topic, topic.activation != "manual", "event trigger", ev, score, source="event"
            )
        elif scope == "output":
            if not t1:
                continue
            active = topic.activation != "manual"
            why = "output watcher fired" if active else "manual topic: activated only on request"
            a = Activation(topic, active, why, t1, 0.0, source="output")
        else:
            if not t1 and score < threshold:
                continue
            a = _decide(topic, t1, score, threshold, text, gate)
        (activated if a.active else dropped).append(a)
        entries.append(
            {
                "msg": msg_hash,
                "topic": topic.name,
                "scope": "event" if ev else scope,
                "tier1": sorted({h.kind for h in a.tier1}),
                "tier2": round(score, 4),
                "threshold": threshold,
                "gate": a.gate,
                "source": a.source,
                "active": a.active,
            }
        )
    if log:
        gatemod.append_log(root, entries)
    activated.sort(key=lambda a: (-a.topic.rank, -a.score, a.topic.name))
    return MatchResult(
        activated,
        dropped,
        "online" if gate.available else "offline",
        ts.problems,
        sorted(set(matcher.timeouts)),
    )


def _decide(
    topic: Topic, t1: list[Tier1Hit], score: float, threshold: float, text: str, gate: gatemod.Gate
) -> Activation:
    v = gatemod.bypass(topic, bool(t1), score, threshold)
    if v.action != "gate":
        return Activation(topic, v.action == "activate", v.reason, t1, score)
    if gate.available:
        try:
            yes, source = gate.ask(text, topic)
        except Exception as exc:  # network, auth, rate limit: fall back, never fail the turn
            why = f"gate unreachable ({type(exc).__name__})"
        else:
            return Activation(
                topic, yes, f"{v.reason}; gate said {'YES' if yes else 'NO'} ({source})",
                t1, score, "yes" if yes else "no", source,
            )  # fmt: skip
    else:
        why = "offline (no API key)"
    active = score >= threshold
    cmp = ">=" if active else "<"
    reason = f"{v.reason}; {why}: tier-2 threshold decided, {score:.2f} {cmp} {threshold:.2f}"
    return Activation(topic, active, reason, t1, score, None, "offline")
