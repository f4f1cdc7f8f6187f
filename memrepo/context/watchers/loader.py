"""Loading topic files (``topics/**/*.md``) with the one schema of :mod:`memrepo.topics`.

A topic with a broken trigger is skipped whole (a half-loaded topic would fire on the wrong
things); a bad subscription (missing, absolute, ``..``, a symlink out of the repo) is
refused alone and the topic keeps working. Every refusal is kept as a problem so
``memory topics list`` and ``memory compile --explain`` can say why.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import worktree
from memrepo.documents import decode, parse_document
from memrepo.errors import FormatError
from memrepo.topics import PRIORITIES, subscription_problem, topic_problems

TOPICS_DIR = "topics"
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}  # low=0 … critical=3


@dataclass(frozen=True)
class Trigger:
    """One trigger of a topic, as written in its frontmatter."""

    kind: str
    spec: dict[str, Any]

    @property
    def scope(self) -> str:
        return str(self.spec.get("scope", "input"))

    @property
    def hint(self) -> str | None:
        return self.spec.get("correction_hint") or self.spec.get("hint")


@dataclass
class Topic:
    """A validated topic: what triggers it and what it brings into context."""

    name: str
    path: str
    description: str
    body: str
    body_line: int
    triggers: list[Trigger]
    subscriptions: list[str]
    activation: str = "auto"
    priority: str = "medium"
    max_context_kb: float | None = None
    similarity_threshold: float | None = None
    keywords: list[str] = field(default_factory=list)
    digest: str = ""  # changes when the file changes: part of the gate's cache key

    @property
    def rank(self) -> int:
        return PRIORITY_RANK.get(self.priority, 1)

    def profile_text(self) -> str:
        """What Tier 2 compares a message with: description, instructions and keywords."""
        return " ".join(
            [self.name.replace("-", " "), self.description, self.body, *self.all_keywords()]
        )

    def all_keywords(self) -> list[str]:
        """The topic's own ``keywords`` plus those of its keyword triggers (for P3 queries)."""
        out = list(self.keywords)
        for t in self.triggers:
            if t.kind == "keyword":
                out += [str(k) for k in t.spec.get("keywords", [])]
        return list(dict.fromkeys(out))


@dataclass(frozen=True)
class TopicProblem:
    path: str
    message: str
    skipped: bool  # True: the whole topic is unused; False: only the named part


@dataclass
class TopicSet:
    topics: list[Topic]
    problems: list[TopicProblem]

    def by_name(self) -> dict[str, Topic]:
        return {t.name: t for t in self.topics}


def _keywords(value: Any) -> list[str]:
    if isinstance(value, str):
        return [w.strip() for w in value.split(",") if w.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float))]
    return []


def _topic(root: Path, file: Path) -> tuple[Topic | None, list[TopicProblem]]:
    rel = file.relative_to(root).as_posix()
    try:  # once, never through a symlink nor waiting on a FIFO (memrepo.worktree)
        raw = worktree.read_path(file, rel)
        doc = parse_document(decode(raw, rel), rel)
    except (FormatError, OSError) as exc:
        return None, [TopicProblem(rel, str(exc), True)]
    meta = doc.meta
    problems = topic_problems(meta, root)
    fatal = [p for p in problems if p.key != "subscriptions"]
    if fatal:
        return None, [TopicProblem(rel, p.message, True) for p in fatal]
    out = [TopicProblem(rel, p.message, False) for p in problems]
    subs = [s for s in meta.get("subscriptions") or [] if subscription_problem(root, s) is None]
    topic = Topic(
        name=str(meta.get("name") or file.stem),
        path=rel,
        description=str(meta.get("description") or ""),
        body=doc.body,
        body_line=doc.body_line,
        triggers=[Trigger(t["type"], dict(t)) for t in meta.get("triggers") or []],
        subscriptions=[str(s) for s in subs],
        activation=str(meta.get("activation", "auto")),
        priority=str(meta.get("priority", "medium")),
        max_context_kb=meta.get("max_context_kb"),
        similarity_threshold=meta.get("similarity_threshold"),
        keywords=_keywords(meta.get("keywords")),
        digest=hashlib.sha256(raw).hexdigest()[:16],
    )
    return topic, out


_CACHE: dict[str, tuple[tuple[tuple[str, int, int], ...], TopicSet]] = {}


def load_topics(root: str | Path) -> TopicSet:
    """Every topic under ``topics/``; reloaded only when a topic file changed (stat check)."""
    root = Path(root).resolve()
    base = root / TOPICS_DIR
    files = sorted(base.rglob("*.md")) if base.is_dir() else []
    stamp = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        stamp.append((str(f), st.st_mtime_ns, st.st_size))
    key = tuple(stamp)
    cached = _CACHE.get(str(root))
    if cached and cached[0] == key:
        return cached[1]
    topics: list[Topic] = []
    problems: list[TopicProblem] = []
    seen: set[str] = set()
    for f in files:
        topic, probs = _topic(root, f)
        problems += probs
        if topic is None:
            continue
        if topic.name in seen:
            problems.append(TopicProblem(topic.path, f"duplicate topic name {topic.name!r}", True))
            continue
        seen.add(topic.name)
        topics.append(topic)
    result = TopicSet(topics, problems)
    _CACHE[str(root)] = (key, result)
    return result
