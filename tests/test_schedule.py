"""memory schedule: jobs from the config, lock, log, crontab lines, status."""

from __future__ import annotations

import fcntl
from pathlib import Path

from conftest import run_memory

from memrepo import schedule as S


def test_jobs_crontab_and_status(crepo: Path):
    names = [j.name for j in S.jobs(crepo)]
    assert names[:3] == ["commit", "condense-daily", "condense-weekly"] and "prune" in names
    out = run_memory(crepo, "schedule", "install", "--print").stdout
    assert "*/30 * * * *" in out and "0 23 * * *" in out and "flock -n" in out
    assert run_memory(crepo, "schedule", "run", "--job", "commit").returncode == 0
    status = run_memory(crepo, "schedule", "status").stdout
    assert "commit" in status and "(ok)" in status and "next" in status


def test_lock_keeps_jobs_from_overlapping(crepo: Path):
    lock = crepo / S.LOCK
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert S.run_job(crepo, S.jobs(crepo)[0]) == 75
    assert S.status(crepo)[0]["status"] == "skipped"
