"""memory reconstruct: on extract/NAME, never main; cached replay makes zero LLM calls."""

from __future__ import annotations

import contextlib
from pathlib import Path

from conftest import run_git, run_memory
from test_extract import canned

from memrepo import reconstruct as R
from memrepo.llm import for_repo


def test_offline_reconstruct_leaves_main_alone(lrepo: Path):
    main_head = run_git(lrepo, "rev-parse", "main").stdout
    proc = run_memory(lrepo, "reconstruct", "--branch", "v2", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert "extract/v2: 7 transcripts replayed" in proc.stdout
    assert "knowledge/projects/ledger/context.md" in proc.stdout  # the diff --stat
    assert run_git(lrepo, "rev-parse", "main").stdout == main_head
    assert run_git(lrepo, "status", "--porcelain").stdout == ""
    assert not (lrepo / "knowledge/projects/ledger").exists()
    ctx = run_git(lrepo, "show", "extract/v2:knowledge/projects/ledger/context.md").stdout
    assert "~~2026-03-02" in ctx
    assert run_git(lrepo, "show", "extract/v2:knowledge/identity/SOUL.md").returncode == 0


def test_second_reconstruct_makes_zero_llm_calls(lrepo: Path, lrepo_client):
    client, seen = lrepo_client(canned)
    dry = R.plan(lrepo, for_repo(lrepo, client=client), ["decisions", "lessons"])
    assert dry.planned_calls == 14 and dry.estimated_cost > 0 and not seen
    llm = for_repo(lrepo, client=client)
    res = R.reconstruct(lrepo, "llm", llm, ["decisions", "lessons"], batch=3)
    first = len(seen)
    assert first >= 14 and res.replayed == 7 and res.edits["SUPERSEDE"] == 1
    llm2 = for_repo(lrepo, client=client)
    again = R.reconstruct(lrepo, "llm", llm2, ["decisions", "lessons"], batch=3)
    assert len(seen) == first and llm2.usage.calls == 0 and again.replayed == 7
    assert R.plan(lrepo, llm2, ["decisions", "lessons"]).planned_calls == 0


def test_interrupted_reconstruct_resumes(lrepo: Path, monkeypatch):
    from memrepo.extract import runner

    real = runner.extract
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(R, "extract", flaky)
    llm = for_repo(lrepo, offline=True)
    with contextlib.suppress(KeyboardInterrupt):
        R.reconstruct(lrepo, "r", llm, batch=3)
    monkeypatch.setattr(R, "extract", real)
    res = R.reconstruct(lrepo, "r", llm, batch=3)
    assert res.resumed_from == 3 and res.replayed == 4
