"""``$MEMREPO_NOW``: one variable moves the whole toolkit to another time (memrepo.clock).

The lived-memory harness (bench/quality/lived.py) replays months of sessions, each at its
own date, through the real hooks: a session lived "on 8 May 2023" must be filed, journaled,
committed and weighed as of that day, not as of the machine's clock.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import clock
from memrepo.errors import MemrepoError


def test_now_follows_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(clock.NOW_ENV, raising=False)
    assert abs((clock.now() - dt.datetime.now().astimezone()).total_seconds()) < 5
    assert clock.git_dates() == {}
    monkeypatch.setenv(clock.NOW_ENV, "2023-05-08T13:56+00:00")
    assert clock.now() == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.timezone.utc)
    assert clock.now().tzinfo is not None
    assert clock.git_dates()["GIT_COMMITTER_DATE"].startswith("2023-05-08T")
    monkeypatch.setenv(clock.NOW_ENV, "2023-05-08")
    assert clock.today() == dt.date(2023, 5, 8)


def test_a_bad_value_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(clock.NOW_ENV, "last tuesday")
    with pytest.raises(MemrepoError, match="MEMREPO_NOW"):
        clock.now()
    assert run_memory(tmp_path, "init", "mem").returncode == 1


def _hook(repo: Path, event: str, payload: dict, now: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "MEMREPO_NO_HOOKS", "MEMORY_REPO")}
    env.update(MEMREPO_NOW=now, TZ="UTC", MEMREPO_NO_RESIDENT="1")
    return subprocess.run(["memory", "--repo", str(repo), "hook", "claude-code", event],
                          input=json.dumps({**payload, "hook_event_name": event}),
                          text=True, capture_output=True, env=env, timeout=60)


def _record(kind: str, n: int, text: str) -> str:
    message: dict = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"id": f"m{n}", "role": kind, "model": "x",
                   "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": kind, "sessionId": "s1", "uuid": f"u{n}", "message": message,
                       "timestamp": f"2023-05-08T13:5{6 + n}:00.000Z"}) + "\n"


def test_a_session_lived_in_2023_is_filed_journaled_and_committed_then(tmp_path: Path) -> None:
    assert run_memory(tmp_path, "init", "mem").returncode == 0
    repo = tmp_path / "mem"
    log = tmp_path / "s1.jsonl"
    common = {"session_id": "s1", "cwd": str(repo), "transcript_path": str(log)}
    assert _hook(repo, "SessionStart", {**common, "source": "startup"},
                 "2023-05-08T13:56").returncode == 0
    turns = [("user", "I decided to pursue counseling as a career after the support group."),
             ("assistant", "That is a fine choice, you will be a great counselor.")]
    for n, (kind, text) in enumerate(turns):
        with log.open("a", encoding="utf-8") as fh:
            fh.write(_record(kind, n, text))
        event = "UserPromptSubmit" if kind == "user" else "Stop"
        extra = {"prompt": text} if kind == "user" else {"stop_hook_active": False}
        assert _hook(repo, event, {**common, **extra}, f"2023-05-08T13:5{6 + n}").returncode == 0
    assert _hook(repo, "SessionEnd", {**common, "reason": "exit"},
                 "2023-05-08T14:05").returncode == 0
    deadline = dt.datetime.now() + dt.timedelta(seconds=60)
    while dt.datetime.now() < deadline:  # the detached worker closes and commits
        if run_git(repo, "log", "--format=%s").stdout.count("\n") >= 3:
            break
        time.sleep(0.2)
    transcripts = list((repo / "raw" / "conversations").rglob("*.md"))
    assert [p.relative_to(repo / "raw" / "conversations").parts[:3] for p in transcripts] \
        == [("2023", "05", "08")]
    assert (repo / "knowledge" / "journal" / "2023-05-08.md").is_file()
    dates = run_git(repo, "log", "--format=%ad", "--date=short", "-2").stdout.split()
    assert dates == ["2023-05-08", "2023-05-08"]
