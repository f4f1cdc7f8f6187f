"""Tier 3 (seed 000 §5): the bypass table, the one-token LLM yes/no gate, its cache and log.

The gate is asked only when the bypass table says so. Its answers are cached on disk by
(message, topic file, model) because ``memory compile`` is one process per model call: an
in-memory cache would never hit. Offline (no API key, no client, or the call fails) the
Tier 2 threshold decides in the gate's place, and the decision says so.

Both files live under ``.memrepo/`` (gitignored): they are this machine's operational
data (a line per candidate per message would be commit noise and merge churn), ranking
never reads them, and they hold only hashes of messages, never their text.

The log is append-only. Each decision has an ``id``; whether an activation helped
(seed 000 §5.5 ``was_useful``, known only later) is a follow-up record keyed by that id
(``{"feedback": ID, "was_useful": …, "by": "user"|"session"}``), never an edit of the
decision's line: :func:`read_log` folds the two (a person's word over a session's
judgement, the later over the earlier). :mod:`memrepo.context.watchers.feedback` writes
them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo import clock
from memrepo.atomic import append_lines, atomic_write
from memrepo.jsonsafe import json_object
from memrepo.layout import STATE_DIR

if TYPE_CHECKING:
    from memrepo.context.watchers.loader import Topic

CACHE_FILE = f"{STATE_DIR}/gate-cache.json"
LOG_FILE = f"{STATE_DIR}/gate-log.jsonl"
CACHE_MAX = 10_000
MESSAGE_CHARS = 500
DESCRIPTION_CHARS = 200
PROMPT = "topic_gate"  # templates/prompts/topic_gate.md

#: seed 000 §5.4 for gated topics with a Tier 1 match: priority -> (score >= cut, below cut).
BYPASS: dict[str, tuple[float, str, str]] = {
    "critical": (0.0, "activate", "activate"),
    "high": (0.3, "activate", "gate"),
    "medium": (0.2, "gate", "drop"),
    "low": (0.3, "gate", "drop"),
}


@dataclass(frozen=True)
class Verdict:
    action: str  # activate | gate | drop
    reason: str


def bypass(topic: Topic, tier1: bool, score: float, threshold: float) -> Verdict:
    """What to do with a candidate before any LLM call (seed 000 §5.2 and §5.4)."""
    if topic.activation == "manual":
        return Verdict("drop", "manual topic: activated only on request")
    if not tier1:
        if score < threshold:
            return Verdict("drop", f"tier-2 score {score:.2f} < threshold {threshold:.2f}")
        if topic.activation == "auto":
            return Verdict("activate", f"auto: tier-2 score {score:.2f} >= {threshold:.2f}")
        return Verdict("gate", f"gated: tier-2 score {score:.2f} >= {threshold:.2f}, no tier-1")
    if topic.activation == "auto":
        return Verdict("activate", "auto: tier-1 match, gate skipped")
    cut, above, below = BYPASS.get(topic.priority, BYPASS["medium"])
    action = above if score >= cut else below
    cmp = ">=" if score >= cut else "<"
    why = f"{topic.priority}, tier-1 match, tier-2 {score:.2f} {cmp} {cut:.1f}"
    return Verdict(
        action, {"activate": "bypass: ", "gate": "gate: ", "drop": "drop: "}[action] + why
    )


def make_llm(model: str, client: Any = None, agent_llm: bool = False) -> Any:
    """The shared LLM client (memrepo/llm.py) for the ``gate`` task; offline without a key."""
    from memrepo.llm import LLM

    return LLM({"gate": model}, client=client, agent_llm=agent_llm)


def agent_llm(root: Path) -> bool:
    """Inside an agent's hook: whether the repo switched LLM use on (``agents.llm``)."""
    from memrepo.config import load_config
    from memrepo.spawn import AGENT_WORKER_ENV

    return bool(os.environ.get(AGENT_WORKER_ENV)) and bool(load_config(root)["agents"]["llm"])


def online(agent_llm: bool = False) -> bool:
    """True when a gate call can be attempted (an API key, no MEMREPO_OFFLINE, and inside
    an agent's hook LLM use switched on)."""
    from memrepo.llm import online_by_default

    return online_by_default(agent_llm)


def message_hash(message: str) -> str:
    """A message's key in the log and the cache: its first MESSAGE_CHARS characters with
    whitespace runs made one space, so the prompt a hook saw and the turn its transcript
    kept (stripped, paragraphs rejoined) have the same key."""
    said = " ".join(message.split())[:MESSAGE_CHARS]
    return hashlib.sha256(said.encode("utf-8")).hexdigest()[:16]


class Gate:
    """Asks (or recalls) the yes/no answer for a (message, topic) pair."""

    def __init__(self, root: Path, model: str, llm: Any = None, max_tokens: int = 1):
        self.root = Path(root)
        self.model = model
        self.llm = llm  # a memrepo.llm.LLM, or None: offline
        self.max_tokens = max_tokens
        self.calls = 0
        self._cache: dict[str, bool] | None = None

    @property
    def available(self) -> bool:
        return self.llm is not None and bool(self.llm.available)

    def _load(self) -> dict[str, bool]:
        if self._cache is None:
            try:
                data = json.loads((self.root / CACHE_FILE).read_text(encoding="utf-8"))
                self._cache = (
                    {k: bool(v) for k, v in data.items()} if isinstance(data, dict) else {}
                )
            except (OSError, ValueError):
                self._cache = {}
        return self._cache

    def key(self, message: str, topic: Topic) -> str:
        return f"{message_hash(message)}:{topic.name}:{topic.digest}:{self.model}"

    def ask(self, message: str, topic: Topic) -> tuple[bool, str]:
        """(yes?, 'cache' or 'llm'); raises whatever the client raises when the call fails."""
        cache = self._load()
        key = self.key(message, topic)
        if key in cache:
            return cache[key], "cache"
        self.calls += 1
        text = self.llm.complete(
            "gate",
            PROMPT,
            max_tokens=self.max_tokens,
            message=message[:MESSAGE_CHARS],
            topic_name=topic.name,
            topic_description=(topic.description or topic.body.strip())[:DESCRIPTION_CHARS],
        )
        answer = text.strip().upper().startswith("Y")
        cache[key] = answer
        while len(cache) > CACHE_MAX:
            cache.pop(next(iter(cache)))
        atomic_write(self.root / CACHE_FILE, json.dumps(cache, separators=(",", ":")),
                     root=self.root)
        return answer, "llm"


#: Who may say whether an activation helped, weakest first: a session's end judges it
#: from the turns that followed (feedback.judge_session), a person overrules that.
FEEDBACK_BY = ("session", "user")


def new_id() -> str:
    """A decision's id: 10 hex characters (``memory topics feedback`` takes a prefix)."""
    return os.urandom(5).hex()


def line_id(line: str) -> str:
    """The id of a decision logged before decisions had one: from its line, so it stays
    the same on every read."""
    return hashlib.sha256(line.strip().encode("utf-8")).hexdigest()[:10]


def append_log(root: Path, entries: list[dict[str, Any]]) -> None:
    """Append records to the gate log (one JSON object a line, in one ``O_APPEND`` write,
    so concurrent writers never interleave; never fails the caller). A decision without
    an ``id`` is given one."""
    if not entries:
        return
    stamp = clock.now().isoformat(timespec="seconds")
    path = Path(root) / LOG_FILE
    data = "".join(
        json.dumps({"ts": stamp, **({} if "feedback" in e or "id" in e else {"id": new_id()}),
                    **e}) + "\n"
        for e in entries
    ).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        append_lines(path, data, root)
    except OSError:
        pass


def parse_line(line: str) -> dict[str, Any] | None:
    """One record of the log (a decision gets its id), or None for a line that is not one."""
    rec = json_object(line)
    if rec is None:
        return None
    if "feedback" not in rec and not isinstance(rec.get("id"), str):
        rec["id"] = line_id(line)
    return rec


def fold(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decisions of ``records`` in order, each with ``was_useful`` (None: not judged)
    and ``useful_by``/``useful_why`` from its feedback records."""
    decisions = [r for r in records if "feedback" not in r]
    by_id = {d["id"]: d for d in decisions}
    for d in decisions:
        d.setdefault("was_useful", None)
    rank = {who: i for i, who in enumerate(FEEDBACK_BY)}
    for r in records:
        d = by_id.get(str(r.get("feedback")))
        useful = r.get("was_useful")
        if d is None or not isinstance(useful, bool):
            continue
        who = r.get("by") if r.get("by") in rank else "user"
        if d.get("useful_by") is not None and rank[who] < rank[d["useful_by"]]:
            continue  # a session's judgement never overrules a person
        d["was_useful"], d["useful_by"] = useful, who
        d["useful_why"] = r.get("why")
    return decisions


def read_records(root: Path) -> list[dict[str, Any]]:
    """Every record of the log, decisions and feedback, in the order written."""
    out = []
    try:
        with open(Path(root) / LOG_FILE, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                rec = parse_line(line)
                if rec is not None:
                    out.append(rec)
    except OSError:
        pass
    return out


def read_log(root: Path) -> list[dict[str, Any]]:
    """The decisions of the log, each with its ``id`` and ``was_useful`` (see :func:`fold`)."""
    return fold(read_records(root))
