"""``memory schedule``: the lifecycle jobs on a clock, never two at once.

The jobs come from memory-config.yaml (seed 000 §8, §10.3):

- ``commit`` every ``lifecycle.commit_interval_minutes`` (when ``git.auto_commit``); with
  ``lifecycle.extraction_trigger: on_session_end`` it goes on with ``memory extract``,
  so the sessions that ended since the last run are extracted;
- ``extract`` hourly when the trigger is ``hourly`` (``manual``: no job);
- ``index`` after those steps (or on the same interval when nothing is auto-committed)
  when ``search.embedder`` is too heavy for the post-commit hook (wordllama, minilm):
  ``memory index`` embeds the chunks the hook left without vectors;
- ``condense-daily`` at ``lifecycle.condensation_schedule``;
- ``weekly`` at ``lifecycle.weekly_schedule``: the weekly rollup, then the weekly tag —
  one job, because the two share a schedule and would otherwise collide;
- ``condense-monthly`` (archive old journals, review, cap) on the 1st of the month;
- ``prune`` at ``lifecycle.pruning_schedule``; ``tag-daily`` (``git.auto_tag_daily``);
- ``capture-sweep`` hourly: ``memory capture sweep --scheduled``, the agent session logs
  not captured yet, once an agent hook has run with the repo.

Cron expressions are read by ``croniter`` (ranges, lists, steps, day of month, month,
names); an expression system cron would not run the same way is a config error naming
its key. ``run`` is a foreground loop that sleeps until the next job is due: the
``schedule`` package has no day of month, month, ranges or hour steps, so it could not
run what the crontab lines run. Each job holds a lock (``.memrepo/schedule.lock``) —
waiting for it up to ``LOCK_WAIT`` seconds rather than failing — and appends a JSON line
to ``.memrepo/schedule.log`` that ``status`` reads. ``install`` writes crontab lines that
call ``memory schedule run --job NAME``, so cron goes through the same lock and log.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from croniter import croniter

from memrepo import clock, yamlsafe
from memrepo.config import load_config
from memrepo.context.watchers.fired import cron_topics
from memrepo.context.watchers.loader import load_topics
from memrepo.errors import ConfigError
from memrepo.index.embedders import get_embedder
from memrepo.layout import CONFIG_FILE, STATE_DIR
from memrepo.locks import LockBusy, file_lock
from memrepo.resources import memory_command

LOCK = f"{STATE_DIR}/schedule.lock"
LOG = f"{STATE_DIR}/schedule.log"
#: What the crontab's ``memory schedule run --job`` itself says (the jobs log to LOG).
CRON_OUT = f"{STATE_DIR}/schedule-cron.out"
CRON_MARK = "# memrepo:"
#: How long a job waits for another one to finish before it is logged as skipped.
LOCK_WAIT = 900.0
#: Monthly distillation: 00:30 on the 1st (no config key for it yet).
MONTHLY_SCHEDULE = "30 0 1 * *"
HOURLY_EXTRACT = "15 * * * *"
DAILY_TAG = "55 23 * * *"
#: Hourly: a session idle for 3 hours is closed within the hour after (memrepo.transcript
#: .follow.IDLE_CLOSE).
SWEEP_SCHEDULE = "40 * * * *"
#: Exit status of a job that could not get the lock (EX_TEMPFAIL).
BUSY = 75

_FIELD = re.compile(r"(?:\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/[0-9]+)?", re.I)
_MACROS = ("@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually")


@dataclass(frozen=True)
class Job:
    """A named job: when (a cron expression) and the ``memory`` commands it runs, in order."""

    name: str
    cron: str
    steps: tuple[tuple[str, ...], ...]


def runnable(expr: str) -> bool:
    """Whether system cron and croniter read ``expr`` alike."""
    fields = expr.split()
    standard = (len(fields) == 1 and fields[0].lower() in _MACROS) or (
        len(fields) == 5 and all(all(_FIELD.fullmatch(p) for p in f.split(",")) for f in fields))
    return standard and croniter.is_valid(expr)


def check_cron(root: Path, expr: str, key: str) -> str:
    """``expr`` if system cron and croniter read it alike, else a ConfigError naming ``key``."""
    if runnable(expr):
        return expr
    line = None
    path = root / CONFIG_FILE
    if path.is_file() and "." in key:
        line = yamlsafe.key_line(path.read_text(encoding="utf-8"), tuple(key.split(".")))
    raise ConfigError(f"'{key}' {expr!r} is not a cron expression cron can run: five fields "
                      "(minute hour day-of-month month day-of-week) of numbers, names, "
                      "*, ranges a-b, lists a,b and steps /n", CONFIG_FILE, line)


def jobs(root: Path) -> list[Job]:
    """The jobs of memory-config.yaml (seed 000 §8, §10.3), their schedules checked."""
    cfg = load_config(root)
    life, g = cfg["lifecycle"], cfg["git"]

    def cron(key: str) -> str:
        return check_cron(root, str(life[key]), f"lifecycle.{key}")

    trigger = life["extraction_trigger"]
    m = int(life["commit_interval_minutes"])
    if m < 1:
        raise ConfigError(f"'lifecycle.commit_interval_minutes' must be at least 1, got {m}",
                          CONFIG_FILE)
    every = f"*/{m} * * * *" if m < 60 else "0 * * * *"
    # an embedder too heavy for the post-commit hook leaves chunks for `memory index`
    embed: tuple[tuple[str, ...], ...] = (("index",),) if _heavy_embedder(cfg) else ()
    out = []
    if g["auto_commit"]:
        steps: tuple[tuple[str, ...], ...] = (("commit",),)
        if trigger == "on_session_end":
            steps += (("extract",),)  # the sessions that ended since: closed, committed
        out.append(Job("commit", every, steps + embed))
    elif embed:
        out.append(Job("index", every, embed))
    if trigger == "hourly" or (trigger == "on_session_end" and not g["auto_commit"]):
        out.append(Job("extract", HOURLY_EXTRACT, (("extract",),)))
    out.append(Job("condense-daily", cron("condensation_schedule"), (("condense", "daily"),)))
    out.append(Job("weekly", cron("weekly_schedule"),
                   (("condense", "weekly"), ("tag", "weekly"))))
    out.append(Job("condense-monthly", MONTHLY_SCHEDULE, (("condense", "monthly"),)))
    out.append(Job("prune", cron("pruning_schedule"), (("prune",),)))
    if g["auto_tag_daily"]:
        out.append(Job("tag-daily", DAILY_TAG, (("tag", "daily"),)))
    # agent session logs not captured yet (Claude Code deletes them after 30 days) and
    # sessions left open (Codex sends no SessionEnd); a no-op until an agent hook has run
    # with this repo (--scheduled), so installing the schedule imports nobody's sessions
    out.append(Job("capture-sweep", SWEEP_SCHEDULE, (("capture", "sweep", "--scheduled"),)))
    return out + topic_jobs(root)


def topic_jobs(root: Path) -> list[Job]:
    """One job per cron topic (seed 000 §4.4): at its schedule it fires ``cron:NAME``, which
    the next compiles carry (memrepo.context.watchers.fired). A schedule cron cannot run is
    left out here; the topic validator names it at commit time."""
    return [Job(f"topic:{c.event.removeprefix('cron:')}", c.schedule,
                (("schedule", "fire", c.event),))
            for c in cron_topics(load_topics(root)) if runnable(c.schedule)]


def _heavy_embedder(cfg: dict[str, Any]) -> bool:
    emb = get_embedder(cfg["search"]["embedder"])
    return emb is not None and not emb.light


def next_run(expr: str, after: dt.datetime) -> dt.datetime:
    """The first time after ``after`` (local wall-clock time, naive) that ``expr`` fires."""
    return croniter(expr, after.replace(tzinfo=None)).get_next(dt.datetime)


def log_event(root: Path, event: dict[str, Any]) -> None:
    path = root / LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(event) + "\n")


def run_job(root: Path, job: Job, wait: float = LOCK_WAIT) -> int:
    """Run one job under the lock, waiting up to ``wait`` s for it; its exit status
    (``BUSY``, logged as skipped, when another job held the lock all that time)."""
    start = _now()
    try:
        with file_lock(root / LOCK, wait=wait, poll=0.5):
            return _run_locked(root, job)
    except LockBusy:
        log_event(root, {"job": job.name, "start": start, "end": _now(), "status": "skipped",
                         "code": BUSY,
                         "detail": f"another job held the lock for {wait:.0f} s"})
        return BUSY


def _run_locked(root: Path, job: Job) -> int:
    """Every step in order (a failed rollup does not stop the tag); the first failure's
    status and output are what the log keeps."""
    start = _now()
    code, detail = 0, ""
    for step in job.steps:
        proc = subprocess.run([*memory_command(), "--repo", str(root), *step],
                              capture_output=True, text=True)
        out = (proc.stderr or proc.stdout).strip()
        if proc.returncode and not code:
            code, detail = proc.returncode, f"memory {' '.join(step)}: exit {proc.returncode}: " \
                + out[-400:]
        elif not code:
            detail = out[-500:]
    log_event(root, {"job": job.name, "start": start, "end": _now(),
                     "status": "ok" if code == 0 else "failed", "code": code,
                     "detail": detail})
    return code


def _now() -> str:
    return clock.now().isoformat(timespec="seconds")


def _local() -> dt.datetime:
    return clock.now().replace(tzinfo=None)


def run_forever(root: Path, once: bool = False, clock: Callable[[], dt.datetime] = _local,
                sleep: Callable[[float], None] = time.sleep) -> None:
    """The foreground scheduler: run each job when its cron expression says, one at a time.

    ``once``: run the jobs due this minute, then return. A job that comes due while
    another runs goes next; occurrences missed during a long run are run once, not
    repeatedly.
    """
    js = jobs(root)
    if once:
        minute = clock().replace(second=0, microsecond=0)
        for job in js:
            if croniter.match(job.cron, minute):
                run_job(root, job)
        return
    due_at = {job.name: next_run(job.cron, clock()) for job in js}
    while True:
        now = clock()
        due = sorted((due_at[j.name], i) for i, j in enumerate(js) if due_at[j.name] <= now)
        for _, i in due:
            run_job(root, js[i])
            due_at[js[i].name] = next_run(js[i].cron, clock())
        if not due:
            wait = (min(due_at.values()) - clock()).total_seconds()
            sleep(min(max(wait, 1.0), 30.0))  # short naps: a changed clock is noticed


def _cron_quote(arg: str) -> str:
    """Shell-quoted, with ``%`` escaped (crontab turns a bare ``%`` into a newline)."""
    return shlex.quote(arg).replace("%", "\\%")


def crontab_lines(root: Path) -> list[str]:
    """One line per job, calling ``memory schedule run --job NAME`` (same lock and log)."""
    cmd = " ".join(_cron_quote(a) for a in [*memory_command(), "--repo", str(root)])
    out = []
    for job in jobs(root):
        out.append(f"{job.cron} {cmd} schedule run --job {_cron_quote(job.name)} "
                   f">/dev/null 2>>{_cron_quote(str(root / CRON_OUT))} "
                   f"{CRON_MARK}{root}:{job.name}")
    return out


def install_crontab(root: Path) -> str:
    """Replace this repo's memrepo lines in the user's crontab (others are kept)."""
    cur = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    keep = [line for line in (cur.stdout if cur.returncode == 0 else "").splitlines()
            if f"{CRON_MARK}{root}:" not in line]
    new = "\n".join([*keep, *crontab_lines(root)]) + "\n"
    subprocess.run(["crontab", "-"], input=new, text=True, check=True)
    return new


def status(root: Path, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Per job: last run, last status, failures, and the next run time."""
    events: dict[str, list[dict[str, Any]]] = {}
    path = root / LOG
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                ev = json.loads(line)
                events.setdefault(ev["job"], []).append(ev)
            except (ValueError, KeyError, TypeError):
                continue
    now = now or _local()
    out = []
    for job in jobs(root):
        nxt = next_run(job.cron, now).astimezone()
        evs = events.get(job.name, [])
        last = evs[-1] if evs else None
        out.append({"job": job.name, "cron": job.cron,
                    "steps": [" ".join(s) for s in job.steps],
                    "last": last.get("start") if last else None,
                    "status": last.get("status") if last else None,
                    "failures": sum(1 for e in evs if e.get("status") == "failed"),
                    "next": nxt.isoformat(timespec="minutes"),
                    "detail": last.get("detail") if last and last.get("status") != "ok"
                    else None})
    return out
