"""Whether an activated topic helped (seed 000 §5.5 ``was_useful``), filled in later.

Two sources, both appended to the gate log as follow-up records keyed by the decision's
id (:mod:`memrepo.context.watchers.gate`: the log stays append-only):

- a person: ``memory topics feedback ID --useful|--not-useful`` (:func:`give`), which
  always wins;
- the session's end (``capture end``, the agents' SessionEnd, the follower, doctor's
  repairs; each calls :func:`judge_ended` once the session is closed):
  :func:`judge_session` reads the closed transcript and judges each topic its user turns
  activated, offline and deterministically, from what came after it in that session:

  useful when the agent's replies to that message (up to the next user turn) name a file
  the topic subscribes to (a path or a file name: a ``> [tool:read] …`` line does), or
  use at least :data:`MIN_SHARED` words of the topic's own text (name, description,
  instructions, keywords) that the message itself did not contain (compared on their
  first :data:`STEM` letters, so ``deploying`` meets ``deploy``), or when a subscribed
  file (or the topic) was reinforced during the session; not useful otherwise. A
  message with no reply after it, or a topic that no longer exists, is left unjudged.

Why words the message lacked: the message already shares words with the topic (that is
why it fired), and the agent echoes the message; only what the topic brought in shows
that the agent used it. A decision is tied to its session by the message's hash (the
log never holds the text) within the session's time span, so a decision of another
session, or of ``memory topics match`` by hand, is never judged by this one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.context.watchers import gate as gatemod
from memrepo.context.watchers.loader import load_topics
from memrepo.errors import MemrepoError
from memrepo.index.query import STOP_WORDS
from memrepo.layout import SIGNALS_DIR
from memrepo.transcript.render import TURN_LINES

if TYPE_CHECKING:
    from memrepo.transcript.capture import Ended

#: Distinct topic words (not in the message) a reply must use to count as using the topic.
MIN_SHARED = 2
#: Words are compared on this many first letters (a stem without a stemmer).
STEM = 5
#: A decision may be logged this long before the transcript's ``started`` (an agent's
#: transcript starts when its first exchange is captured, after the prompt's recall).
EARLY = dt.timedelta(minutes=10)
#: ... and this long after its ``ended``.
LATE = dt.timedelta(minutes=2)
#: Bytes read at a time from the end of the log, looking for the session's first decision.
_BLOCK = 64 * 1024
#: A prefix shorter than this does not name a decision.
MIN_PREFIX = 4

_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


@dataclass
class Judged:
    """One decision judged: its id, topic, verdict and the reason."""

    id: str
    topic: str
    was_useful: bool
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "topic": self.topic, "was_useful": self.was_useful,
                "why": self.why}


# ---------------------------------------------------------------------------
# A person's word
# ---------------------------------------------------------------------------


def give(root: Path, ref: str, useful: bool, why: str | None = None) -> dict[str, Any]:
    """Record a person's verdict on decision ``ref`` (its id or a unique prefix of it);
    the decision as it reads now. Errors name the log and what matched."""
    ref = ref.strip()
    log = gatemod.LOG_FILE
    if len(ref) < MIN_PREFIX:
        raise MemrepoError(f"decision id {ref!r} is too short: give at least {MIN_PREFIX} "
                           "characters (memory topics log shows the ids)", log)
    decisions = gatemod.read_log(root)
    hits = [d for d in decisions if str(d.get("id", "")).startswith(ref)]
    if not hits:
        raise MemrepoError(f"no decision with id {ref!r} (memory topics log shows the ids)",
                           log)
    if len({d["id"] for d in hits}) > 1:
        shown = ", ".join(sorted({d["id"] for d in hits})[:5])
        raise MemrepoError(f"decision id {ref!r} is ambiguous: {shown}; give more characters",
                           log)
    d = hits[-1]
    rec: dict[str, Any] = {"feedback": d["id"], "topic": d.get("topic"), "was_useful": useful,
                           "by": "user"}
    if why:
        rec["why"] = why
    gatemod.append_log(root, [rec])
    d.update(was_useful=useful, useful_by="user", useful_why=why)
    return d


# ---------------------------------------------------------------------------
# A session's judgement
# ---------------------------------------------------------------------------


def judge_ended(root: Path, done: Ended) -> list[Judged]:
    """:func:`judge_session` on the transcript an ``end`` just closed
    (:func:`memrepo.transcript.capture.end`), run by whoever ended the session once ``end``
    has returned; nothing when that ``end`` closed nothing itself. A side note of the end
    that never fails it (the transcript is closed and committed by now)."""
    if done.body is None:
        return []
    try:
        return judge_session(root, done.body, done.started, done.ended)
    except Exception:  # tuning data must never cost a transcript
        return []


def judge_session(root: Path, body: str, started: dt.datetime | None,
                  ended: dt.datetime | None) -> list[Judged]:
    """Judge the activations of the user turns of a closed transcript ``body`` (see the
    module docstring) and append the verdicts; what was judged. Cheap when nothing
    matches: the log's tail is read, the topics only when a decision is the session's."""
    if started is None or ended is None or not (Path(root) / gatemod.LOG_FILE).is_file():
        return []
    started, ended = (t if t.tzinfo else t.astimezone() for t in (started, ended))
    turns = _turns(body)
    keys: dict[str, list[int]] = {}
    for i, (role, text) in enumerate(turns):
        if role == "user" and text.strip():
            keys.setdefault(gatemod.message_hash(text), []).append(i)
    if not keys:
        return []
    records = _records_since(root, started - EARLY)
    judged_ids = {str(r.get("feedback")) for r in records if "feedback" in r}
    mine = []
    for r in records:
        if "feedback" in r or not r.get("active") or r.get("scope", "input") != "input":
            continue
        when = _when(r.get("ts"))
        if when is None or not (started - EARLY <= when <= ended + LATE):
            continue
        if r.get("msg") in keys and r["id"] not in judged_ids:
            mine.append(r)
    if not mine:
        return []
    topics = load_topics(root).by_name()
    reinforced = _reinforced(root, started - EARLY, ended + LATE)
    out: list[Judged] = []
    for r in mine:
        topic = topics.get(str(r.get("topic")))
        if topic is None:
            continue
        verdict = None
        for i in keys[r["msg"]]:
            replies = _replies(turns, i)
            if not replies:
                continue
            verdict = _verdict(topic, turns[i][1], replies, reinforced)
            if verdict[0]:
                break
        if verdict is not None:
            out.append(Judged(r["id"], topic.name, verdict[0], verdict[1]))
    gatemod.append_log(root, [{"feedback": j.id, "topic": j.topic, "was_useful": j.was_useful,
                               "by": "session", "why": j.why} for j in out])
    return out


def _turns(body: str) -> list[tuple[str, str]]:
    """(role, text) of each turn of a transcript body."""
    heads = list(TURN_LINES.finditer(body))
    return [(m.group("role"), body[m.end(): heads[k + 1].start() if k + 1 < len(heads) else None])
            for k, m in enumerate(heads)]


def _replies(turns: list[tuple[str, str]], i: int) -> str:
    """The agent's text after user turn ``i``, up to the next user turn."""
    out = []
    for role, text in turns[i + 1:]:
        if role == "user":
            break
        if role == "agent":
            out.append(text)
    return "\n".join(out)


def _stems(text: str) -> dict[str, str]:
    """Stem -> the first word of ``text`` with it (the words worth comparing)."""
    out: dict[str, str] = {}
    for w in _WORD.findall(text.lower()):
        if w not in STOP_WORDS:
            out.setdefault(w[:STEM], w)
    return out


def _verdict(topic: Any, message: str, replies: str, reinforced: set[str]
             ) -> tuple[bool, str]:
    low = replies.lower()
    for sub in topic.subscriptions:
        name = sub.rsplit("/", 1)[-1]
        if sub.lower() in low or (len(name) > 3 and name.lower() in low):
            return True, f"the reply names {sub}"
    touched = sorted(p for p in reinforced if p in (*topic.subscriptions, topic.path))
    if touched:
        return True, f"{touched[0]} was reinforced"
    own = set(_stems(" ".join([topic.name.replace("-", " "), topic.description, topic.body,
                               *topic.all_keywords()]))) - set(_stems(message))
    said = _stems(replies)
    shared = sorted(said[k] for k in own & set(said))
    need = min(MIN_SHARED, len(own)) or MIN_SHARED
    if len(shared) >= need:
        return True, "the reply uses " + ", ".join(shared[:5])
    if shared:
        return False, f"the reply uses only '{shared[0]}' of the topic's words"
    return False, "the reply uses none of the topic's words or files"


def _when(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.astimezone()


def _records_since(root: Path, since: dt.datetime) -> list[dict[str, Any]]:
    """The log's records from about ``since`` on: read backwards from the end, a block at a
    time, until a whole line older than ``since`` is in hand (the log only grows, and a
    session that just ended is its last part). The caller filters by time."""
    path = Path(root) / gatemod.LOG_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return []
    data = b""
    try:
        pos = os.fstat(fd).st_size
        while pos > 0:
            start = max(0, pos - _BLOCK)
            data = os.pread(fd, pos - start, start) + data
            pos = start
            lines = data.split(b"\n")
            if pos and len(lines) > 2:
                rec = gatemod.parse_line(lines[1].decode("utf-8", "replace"))
                when = _when(rec.get("ts")) if rec else None
                if when is not None and when < since:
                    break
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").split("\n")
    if pos:
        lines = lines[1:]  # the first line may be the end of an older one
    out = []
    for line in lines:
        rec = gatemod.parse_line(line) if line.strip() else None
        if rec is not None:
            out.append(rec)
    return out


def _reinforced(root: Path, start: dt.datetime, end: dt.datetime) -> set[str]:
    """Paths reinforced between ``start`` and ``end`` (``raw/signals/YYYY-MM.jsonl``)."""
    months = sorted({f"{start:%Y-%m}", f"{end:%Y-%m}"})
    out: set[str] = set()
    for month in months:
        try:
            with open(Path(root) / SIGNALS_DIR / f"{month}.jsonl", encoding="utf-8",
                      errors="replace") as fh:
                for line in fh:
                    if '"reinforce"' not in line:
                        continue
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    when = _when(ev.get("ts")) if isinstance(ev, dict) else None
                    if when is not None and start <= when <= end and \
                            isinstance(ev.get("path"), str):
                        out.add(ev["path"])
        except OSError:
            continue
    return out
