"""``memory schedule``: the lifecycle jobs on a clock, never two at once.

``run`` is a foreground scheduler (the ``schedule`` package) for machines without cron;
``install`` writes the same jobs as crontab lines. Each job runs under a lock file
(``.memrepo/schedule.lock``) so jobs never overlap, and appends a JSON line to
``.memrepo/schedule.log`` that ``status`` reads for last runs and failures.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.config import load_config
from memrepo.locks import LockBusy, file_lock

LOCK = ".memrepo/schedule.lock"
LOG = ".memrepo/schedule.log"
CRON_MARK = "# memrepo:"


@dataclass(frozen=True)
class Job:
    name: str
    cron: str
    args: tuple[str, ...]


def jobs(root: Path) -> list[Job]:
    """The jobs of memory-config.yaml (seed 000 §10.3)."""
    cfg = load_config(root)
    life, g = cfg["lifecycle"], cfg["git"]
    out = []
    if g["auto_commit"]:
        m = int(life["commit_interval_minutes"])
        out.append(Job("commit", f"*/{m} * * * *" if m < 60 else "0 * * * *", ("commit",)))
    out.append(Job("condense-daily", life["condensation_schedule"], ("condense", "daily")))
    out.append(Job("condense-weekly", life["weekly_schedule"], ("condense", "weekly")))
    out.append(Job("tag-weekly", life["weekly_schedule"], ("tag", "weekly")))
    out.append(Job("prune", life["pruning_schedule"], ("prune",)))
    if g["auto_tag_daily"]:
        out.append(Job("tag-daily", "55 23 * * *", ("tag", "daily")))
    return out


def memory_argv() -> list[str]:
    exe = Path(sys.executable).parent / "memory"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "memrepo.scripts.cli"]


def log_event(root: Path, event: dict[str, Any]) -> None:
    path = root / LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(event) + "\n")


def run_job(root: Path, job: Job, wait: float = 0.0) -> int:
    """Run one job under the lock; returns its exit status (75 when the lock is busy)."""
    try:
        with file_lock(root / LOCK, wait=wait, poll=0.5):
            return _run_locked(root, job)
    except LockBusy:
        log_event(root, {"job": job.name, "start": _now(), "status": "skipped",
                         "detail": "another job holds the lock"})
        return 75


def _run_locked(root: Path, job: Job) -> int:
    start = _now()
    proc = subprocess.run(
        [*memory_argv(), "--repo", str(root), *job.args], capture_output=True, text=True
    )
    log_event(root, {"job": job.name, "start": start, "end": _now(),
                     "status": "ok" if proc.returncode == 0 else "failed",
                     "code": proc.returncode,
                     "detail": (proc.stderr or proc.stdout).strip()[-500:]})
    return proc.returncode


def _now() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def cron_fields(expr: str) -> tuple[str, str, str, str, str]:
    f = expr.split()
    if len(f) != 5:
        raise ValueError(f"not a 5-field cron expression: {expr!r}")
    return f[0], f[1], f[2], f[3], f[4]


def register(sched: Any, root: Path, job: Job) -> None:
    """The ``schedule`` equivalent of a job's cron line (the forms the defaults use)."""
    minute, hour, _dom, _mon, dow = cron_fields(job.cron)
    def fn() -> int:
        return run_job(root, job, wait=60)
    if minute.startswith("*/") and hour == "*":
        sched.every(int(minute[2:])).minutes.do(fn)
        return
    if hour == "*":
        sched.every().hour.at(f":{int(minute):02d}").do(fn)
        return
    at = f"{int(hour):02d}:{int(minute):02d}"
    days = {"0": "sunday", "7": "sunday", "1": "monday", "2": "tuesday", "3": "wednesday",
            "4": "thursday", "5": "friday", "6": "saturday"}
    if dow == "*":
        sched.every().day.at(at).do(fn)
    else:
        for d in dow.split(","):
            getattr(sched.every(), days[d]).at(at).do(fn)


def run_forever(root: Path, once: bool = False) -> None:
    import schedule

    sched = schedule.Scheduler()
    for job in jobs(root):
        register(sched, root, job)
    while True:
        sched.run_pending()
        if once:
            return
        time.sleep(min(max(sched.idle_seconds or 30, 1), 30))


def crontab_lines(root: Path) -> list[str]:
    cmd = " ".join(shlex.quote(a) for a in memory_argv())
    out = []
    for job in jobs(root):
        args = " ".join(shlex.quote(a) for a in job.args)
        out.append(f"{job.cron} cd {shlex.quote(str(root))} && flock -n {LOCK} {cmd} "
                   f"--repo {shlex.quote(str(root))} {args} >> {LOG} 2>&1 "
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


def status(root: Path) -> list[dict[str, Any]]:
    """Per job: last run, last status, failures, and the next run time."""
    import schedule

    events: dict[str, list[dict[str, Any]]] = {}
    path = root / LOG
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                ev = json.loads(line)
                events.setdefault(ev["job"], []).append(ev)
            except (ValueError, KeyError):
                continue
    out = []
    for job in jobs(root):
        sched = schedule.Scheduler()
        register(sched, root, job)
        nxt = min((j.next_run for j in sched.jobs), default=None)
        evs = events.get(job.name, [])
        last = evs[-1] if evs else None
        out.append({"job": job.name, "cron": job.cron,
                    "last": last["start"] if last else None,
                    "status": last["status"] if last else None,
                    "failures": sum(1 for e in evs if e["status"] == "failed"),
                    "next": nxt.isoformat(timespec="minutes") if nxt else None,
                    "detail": last.get("detail") if last and last["status"] != "ok" else None})
    return out


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
