"""memory schedule: jobs from the config, cron parsing, lock, log, crontab lines, status."""

from __future__ import annotations

import datetime as dt
import fcntl
import threading
import time
from pathlib import Path

import pytest
from conftest import invoke_memory

from memrepo.config import set_setting
from memrepo.errors import ConfigError
from memrepo.lifecycle import schedule as S


def configure(root: Path, **settings: object) -> None:
    """Change ``section.key`` settings of the repo's memory-config.yaml in place."""
    path = root / "memory-config.yaml"
    text = path.read_text(encoding="utf-8")
    for dotted, value in settings.items():
        section, key = dotted.split("__")
        text = set_setting(text, section, key, value)
    path.write_text(text, encoding="utf-8")


def by_name(root: Path) -> dict[str, S.Job]:
    return {j.name: j for j in S.jobs(root)}


def test_jobs_crontab_and_status(crepo: Path):
    jobs = by_name(crepo)
    assert list(jobs) == ["commit", "condense-daily", "weekly", "condense-monthly", "prune",
                          "tag-daily", "capture-sweep"]
    # on_session_end (the default): the commit job goes on to extract what just ended
    assert jobs["commit"].steps == (("commit",), ("extract",))
    # rollup and tag share a schedule: one job, rollup first, so they never collide
    assert jobs["weekly"].steps == (("condense", "weekly"), ("tag", "weekly"))
    assert jobs["condense-monthly"].steps == (("condense", "monthly"),)
    out = invoke_memory(crepo, "schedule", "install", "--print").stdout
    assert "*/30 * * * *" in out and "0 23 * * *" in out and "flock" not in out
    lines = out.splitlines()
    assert len(lines) == 7 and all(" schedule run --job " in line for line in lines)
    assert f"--repo {crepo} schedule run --job weekly" in out
    assert invoke_memory(crepo, "schedule", "run", "--job", "commit").returncode == 0
    status = invoke_memory(crepo, "schedule", "status").stdout
    assert "commit" in status and "(ok)" in status and "next" in status
    assert "commit → extract" in status


def test_extraction_trigger_decides_the_extract_job(crepo: Path):
    configure(crepo, lifecycle__extraction_trigger="hourly")
    jobs = by_name(crepo)
    assert jobs["commit"].steps == (("commit",),)
    assert jobs["extract"].steps == (("extract",),) and jobs["extract"].cron == "15 * * * *"
    configure(crepo, lifecycle__extraction_trigger="manual")
    assert "extract" not in by_name(crepo)
    assert by_name(crepo)["commit"].steps == (("commit",),)


def test_any_standard_cron_expression_is_understood(crepo: Path):
    configure(crepo, lifecycle__weekly_schedule="30 23 * * 5-6",
              lifecycle__condensation_schedule="0 */6 * * *",
              lifecycle__pruning_schedule="0 3 1,15 * *")
    friday = dt.datetime(2026, 3, 6, 10, 7)  # a Friday
    nxt = {s["job"]: s["next"][:16] for s in S.status(crepo, now=friday)}
    assert nxt["commit"] == "2026-03-06T10:30"
    assert nxt["weekly"] == "2026-03-06T23:30"
    assert nxt["condense-daily"] == "2026-03-06T12:00"
    assert nxt["prune"] == "2026-03-15T03:00"  # day of month is honoured
    assert nxt["condense-monthly"] == "2026-04-01T00:30"
    later = {s["job"]: s["next"][:16] for s in S.status(crepo, now=friday.replace(minute=31))}
    assert later["commit"] == "2026-03-06T11:00"  # */30 is :00 and :30, not "30 min from now"
    assert S.next_run("30 23 * * 5-6", dt.datetime(2026, 3, 7, 23, 45)) == \
        dt.datetime(2026, 3, 13, 23, 30)


@pytest.mark.parametrize("expr", ["30 25 * * *", "every sunday", "0 0 L * *", "* * * * * *"])
def test_bad_cron_is_a_config_error_naming_the_key(crepo: Path, expr: str):
    configure(crepo, lifecycle__weekly_schedule=expr)
    with pytest.raises(ConfigError) as err:
        S.jobs(crepo)
    assert "'lifecycle.weekly_schedule'" in str(err.value)
    assert str(err.value).startswith("memory-config.yaml:")
    proc = invoke_memory(crepo, "schedule", "status")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "lifecycle.weekly_schedule" in proc.stderr


def test_lock_waits_then_skips_and_logs(crepo: Path):
    lock = crepo / S.LOCK
    lock.parent.mkdir(parents=True, exist_ok=True)
    job = S.Job("noop", "* * * * *", (("--version",),))
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert S.run_job(crepo, job, wait=0) == S.BUSY
        threading.Timer(0.5, lambda: fcntl.flock(fh, fcntl.LOCK_UN)).start()
        t0 = time.monotonic()
        assert S.run_job(crepo, job, wait=10) == 0  # waited for the lock, then ran
        assert time.monotonic() - t0 >= 0.4
    events = (crepo / S.LOG).read_text().splitlines()
    assert '"status": "skipped"' in events[0] and '"status": "ok"' in events[1]


def test_chained_steps_all_run_and_the_first_failure_is_logged(crepo: Path):
    job = S.Job("chain", "* * * * *", (("tag", "daily", "--date", "nope"), ("--version",)))
    assert S.run_job(crepo, job, wait=0) == 2
    (last,) = [s for s in (crepo / S.LOG).read_text().splitlines() if '"chain"' in s]
    assert '"status": "failed"' in last and "memory tag daily --date nope: exit 2" in last


def test_foreground_loop_runs_jobs_when_due(crepo: Path, monkeypatch):
    clock = [dt.datetime(2026, 3, 8, 23, 25)]  # Sunday
    ran: list[tuple[str, str]] = []

    def fake_run(root: Path, job: S.Job, wait: float = 0) -> int:
        ran.append((job.name, clock[0].strftime("%H:%M")))
        clock[0] += dt.timedelta(minutes=3)  # a job takes a while
        return 0

    def fake_sleep(seconds: float) -> None:
        clock[0] += dt.timedelta(seconds=seconds)
        if clock[0] > dt.datetime(2026, 3, 9, 0, 5):
            raise KeyboardInterrupt

    monkeypatch.setattr(S, "run_job", fake_run)
    with pytest.raises(KeyboardInterrupt):
        S.run_forever(crepo, clock=lambda: clock[0], sleep=fake_sleep)
    # weekly was due at 23:30 too: it runs right after commit, never beside it
    assert ran == [("commit", "23:30"), ("weekly", "23:33"), ("capture-sweep", "23:40"),
                   ("tag-daily", "23:55"), ("commit", "00:00")]


def test_a_heavy_embedder_gets_its_vectors_on_the_schedule(crepo: Path):
    """The hook leaves minilm/wordllama chunks unembedded; the schedule runs `memory index`."""
    assert ("index",) not in by_name(crepo)["commit"].steps  # default: FTS5 alone
    configure(crepo, search__embedder="minilm")
    assert by_name(crepo)["commit"].steps == (("commit",), ("extract",), ("index",))
    configure(crepo, search__embedder="hash")  # light: the hook embeds it
    assert by_name(crepo)["commit"].steps == (("commit",), ("extract",))
    configure(crepo, search__embedder="wordllama", git__auto_commit=False)
    jobs = by_name(crepo)
    assert "commit" not in jobs
    assert jobs["index"].steps == (("index",),) and jobs["index"].cron == "*/30 * * * *"


STANDUP = """---
type: topic
description: The morning stand-up (yesterday, today, blockers).
triggers:
  - type: cron
    schedule: "0 8 * * 1-5"
    name: standup
subscriptions: []
activation: auto
priority: medium
---

# Stand-up

- Open with yesterday's journal, then today's plan and any blockers.
"""


def test_a_cron_topic_is_a_job_that_fires_into_the_next_compiles(crepo: Path):
    """Seed 000 §4.4: a topic with a schedule is activated by the scheduler at its time."""
    import json
    import subprocess

    from memrepo.context.watchers import fired

    (crepo / "topics" / "standup.md").write_text(STANDUP, encoding="utf-8")
    subprocess.run(["git", "add", "topics/standup.md"], cwd=crepo, check=True)
    subprocess.run(["git", "commit", "-qm", "topic: standup"], cwd=crepo, check=True)
    jobs = by_name(crepo)
    assert jobs["topic:standup"].cron == "0 8 * * 1-5"
    assert jobs["topic:standup"].steps == (("schedule", "fire", "cron:standup"),)
    assert "topic:standup" in invoke_memory(crepo, "schedule", "install", "--print").stdout

    def activated() -> list[str]:
        out = json.loads(invoke_memory(crepo, "compile", "--json").stdout)
        return [t["topic"] for t in out["topics"]]

    assert "standup" not in activated()  # not fired yet: nothing asks for it
    # the job, as cron runs it: under the schedule lock, logged, through the real CLI
    assert invoke_memory(crepo, "schedule", "run", "--job", "topic:standup").returncode == 0
    assert "standup" in activated()
    status = invoke_memory(crepo, "schedule", "status").stdout
    line = next(s for s in status.splitlines() if s.startswith("topic:standup"))
    assert "(ok)" in line and "schedule fire cron:standup" in line
    # a firing lasts the working day, not forever
    later = dt.datetime.now().astimezone() + fired.WINDOW + dt.timedelta(minutes=1)
    assert fired.live(crepo, now=later) == []
    assert fired.live(crepo) == ["cron:standup"]


def test_fire_refuses_what_is_not_a_cron_event(crepo: Path):
    res = invoke_memory(crepo, "schedule", "fire", "webhook:x")
    assert res.returncode == 2 and "is not cron:NAME" in res.stderr


def test_fire_refuses_a_cron_topic_that_does_not_exist(crepo: Path):
    """A misspelt cron topic would never fire: refused, naming the ones that exist."""
    import subprocess

    (crepo / "topics" / "standup.md").write_text(STANDUP, encoding="utf-8")
    subprocess.run(["git", "add", "topics/standup.md"], cwd=crepo, check=True)
    subprocess.run(["git", "commit", "-qm", "topic: standup"], cwd=crepo, check=True)
    res = invoke_memory(crepo, "schedule", "fire", "cron:stadnup")
    assert res.returncode == 2 and "no topic fires cron:stadnup" in res.stderr
    assert "cron:standup" in res.stderr
    from memrepo.context.watchers import fired

    assert not (crepo / fired.FIRED).exists()
    assert invoke_memory(crepo, "schedule", "fire", "cron:standup").returncode == 0
