"""A flush whose notes another writer committed first (issue #37, defect 8).

The pre-compaction flush writes its notes, then commits them; a ``memory commit`` (cron)
running beside it may take the same files first. Nothing is lost (HEAD holds the notes as
on disk), yet the flush was logged as failed ("nothing to commit") and ``memory doctor``
exited 1. A retry that found its work done is not a failure; a refused commit still is.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from memrepo.agents import state, worker
from memrepo.commit.write import commit_paths
from memrepo.lifecycle import flush as F
from memrepo.repo import MemoryRepo
from tests.conftest import run_git, run_memory

FIXTURE = Path(__file__).parent / "fixtures" / "agents" / "claude-code"


def _log_entries(root: Path) -> list[dict[str, object]]:
    return state.read_log(root / state.LOG)


def _run_flush(root: Path, log: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    payload = {"session_id": "7f3c2a1e-5b4d-4e8f-9a6b-0c1d2e3f4a5b",
               "transcript_path": str(log), "trigger": "manual", "cwd": str(root)}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert worker.run_worker(["claude-code", "PreCompact", str(root)]) == 0
    return _log_entries(root)[-1]


def _transcript(tmp_path: Path) -> Path:
    log = tmp_path / "session.jsonl"
    log.write_bytes(b"".join(p.read_bytes() for p in sorted(FIXTURE.glob("0[1-3]*.jsonl"))))
    return log


def test_a_flush_committed_by_another_writer_is_not_a_failure(
    memrepo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = memrepo_root
    real_finish = F.finish

    def finish_then_cron_commits(*args: object, **kwargs: object) -> list[str]:
        written = real_finish(*args, **kwargs)  # type: ignore[arg-type]
        proc = run_memory(root, "commit")  # the cron's `memory commit`, right between
        assert proc.returncode == 0, proc.stderr
        return written

    monkeypatch.setattr(F, "finish", finish_then_cron_commits)
    entry = _run_flush(root, _transcript(tmp_path), monkeypatch)
    assert entry["status"] == "ok", entry
    written = entry["written"]
    assert written and isinstance(written, list)
    assert run_git(root, "status", "--porcelain", "--", *written).stdout == ""
    [check] = [c for c in state.health_checks(MemoryRepo(root)) if c.name == "agent hooks"]
    assert check.ok, check.detail


def test_a_refused_flush_commit_is_still_a_failure(
    memrepo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side: a commit that did not land (the notes not in HEAD) stays failed."""
    root = memrepo_root
    from memrepo.commit import write

    def refuse(*_: object, **__: object) -> None:
        raise write.MemrepoError("the pre-commit checks refused the commit")

    monkeypatch.setattr(write, "commit_prepared", refuse)
    monkeypatch.setattr(write, "commit_staged", refuse)
    entry = _run_flush(root, _transcript(tmp_path), monkeypatch)
    assert entry["status"] == "failed", entry
    [check] = [c for c in state.health_checks(MemoryRepo(root)) if c.name == "agent hooks"]
    assert not check.ok


def test_commit_paths_of_paths_already_in_head_returns_head(memrepo_root: Path) -> None:
    root = memrepo_root
    rel = "knowledge/journal/2030-01-04.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("---\ntype: journal\ndate: 2030-01-04\n---\n\n# 2030-01-04\n\n"
                            "- committed by someone else first\n")
    run_git(root, "add", rel)
    run_git(root, "commit", "-q", "-m", "someone else")
    head = run_git(root, "rev-parse", "HEAD").stdout.strip()
    assert commit_paths(root, [rel], "flush: again") == head
