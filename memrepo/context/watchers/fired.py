"""Cron topics fired by the scheduler (seed 000 §4.4): the clock's side of ``cron:NAME``.

A topic with ``triggers: [{type: cron, schedule: "0 8 * * *", name: standup}]`` becomes a
scheduler job (``topic:standup``) whose one step, ``memory schedule fire cron:standup``,
records the firing here. Every compile within :data:`WINDOW` of the last firing carries the
event, as ``memory compile --event cron:standup`` would, so the agent's next briefing or
prompt has the topic without anyone passing the flag. The state is one small JSON object
(event -> last firing), rewritten atomically under a lock: bounded, and never tracked.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from memrepo import clock
from memrepo.atomic import atomic_write
from memrepo.context.watchers.loader import TopicSet
from memrepo.layout import STATE_DIR
from memrepo.locks import file_lock

FIRED = f"{STATE_DIR}/fired-events.json"
LOCK = f"{STATE_DIR}/fired-events.lock"
#: How long a firing keeps its topic active: a morning stand-up topic lasts the working day.
WINDOW = dt.timedelta(hours=12)


@dataclass(frozen=True)
class CronTopic:
    """One cron trigger of a topic: the event it fires and when."""

    event: str  # cron:NAME
    schedule: str
    topic: str


def cron_topics(topics: TopicSet) -> list[CronTopic]:
    """Every cron trigger with a schedule, one per event name (the first topic wins)."""
    out: dict[str, CronTopic] = {}
    for topic in topics.topics:
        for trig in topic.triggers:
            schedule = trig.spec.get("schedule")
            if trig.kind != "cron" or not isinstance(schedule, str):
                continue
            event = f"cron:{trig.spec.get('name') or topic.name}"
            out.setdefault(event, CronTopic(event, schedule, topic.name))
    return list(out.values())


def unknown_cron(topics: TopicSet, event: str) -> str | None:
    """Why ``event`` (``cron:NAME``) fires no topic, or None: a misspelt name would be
    recorded or compiled and never activate anything."""
    known = sorted(c.event for c in cron_topics(topics))
    if event in known:
        return None
    return f"no topic fires {event} (cron topics: {', '.join(known) or 'none'})"


def _now() -> dt.datetime:
    return clock.now()


def _load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # missing or damaged: no live events (the next firing rewrites it)
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def record(root: Path, event: str, at: dt.datetime | None = None) -> dt.datetime:
    """Note that ``event`` fired (now, or ``at``); returns the time recorded."""
    at = (at or _now()).astimezone()
    path = root / FIRED
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(root / LOCK, wait=10.0):
        data = _load(path)
        data[event] = at.isoformat(timespec="seconds")
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n", root=root)
    return at


def live(root: Path, now: dt.datetime | None = None,
         window: dt.timedelta = WINDOW) -> list[str]:
    """The events fired within ``window`` before ``now``, oldest firing first."""
    now = (now or _now()).astimezone()
    found = []
    for event, stamp in _load(root / FIRED).items():
        try:
            at = dt.datetime.fromisoformat(stamp)
        except ValueError:
            continue
        if at.tzinfo is None:
            at = at.astimezone()
        if dt.timedelta(0) <= now - at <= window:
            found.append((at, event))
    return [event for _, event in sorted(found)]
