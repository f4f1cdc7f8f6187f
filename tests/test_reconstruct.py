"""memory reconstruct: on extract/NAME, never main; cached replay makes zero LLM calls."""

from __future__ import annotations

import contextlib
from pathlib import Path

from conftest import invoke_memory, run_git
from test_extract import canned

from memrepo.lifecycle import reconstruct as R
from memrepo.llm import for_repo


def test_offline_reconstruct_leaves_main_alone(lrepo: Path):
    main_head = run_git(lrepo, "rev-parse", "main").stdout
    proc = invoke_memory(lrepo, "reconstruct", "--branch", "v2", "--offline")
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
    from memrepo.lifecycle.extract import runner

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


NEXT_WEEK = """---
session_id: ses_w2a
started: 2026-03-10T09:00:00+00:00
ended: 2026-03-10T09:30:00+00:00
tags: [ops]
---

# Dashboards

## 09:00 — user
We decided to adopt Grafana for the ops dashboards.

## 09:10 — user
Remind me to migrate the legacy dashboards before the next release.
"""


def _add(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def test_staged_transcript_is_left_out_not_a_crash(lrepo: Path):
    staged = "raw/conversations/2026/03/09/1000-ses_st-staged.md"
    _add(lrepo, staged, NEXT_WEEK.replace("ses_w2a", "ses_st"))
    run_git(lrepo, "add", staged)  # staged on main, not committed: not in the worktree
    assert staged not in R.committed_transcripts(lrepo)
    proc = invoke_memory(lrepo, "reconstruct", "--branch", "st", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert "7 transcripts replayed" in proc.stdout


def test_batch_zero_is_a_usage_error(lrepo: Path):
    proc = invoke_memory(lrepo, "reconstruct", "--branch", "b", "--batch", "0", "--offline")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "Invalid value for '--batch'" in proc.stderr


def test_offline_dry_run_costs_nothing(lrepo: Path):
    proc = invoke_memory(lrepo, "reconstruct", "--branch", "d", "--offline", "--dry-run")
    assert proc.returncode == 0
    assert "no LLM calls, $0" in proc.stdout and "$0.1" not in proc.stdout
    assert R.plan(lrepo, for_repo(lrepo, offline=True), None).estimated_cost == 0


def test_dry_run_counts_reconcile_and_weekly_condensation(lrepo: Path, lrepo_client,
                                                          monkeypatch):
    _add(lrepo, "raw/conversations/2026/03/10/0900-ses_w2a-dashboards.md", NEXT_WEEK)
    run_git(lrepo, "add", "-A", "raw")
    run_git(lrepo, "commit", "-q", "--no-verify", "-m", "conversation: next week")
    client, seen = lrepo_client(canned)
    llm = for_repo(lrepo, client=client)
    only_extraction = R.plan(lrepo, llm, ["decisions", "lessons"])
    everything = R.plan(lrepo, llm, None)
    assert not seen
    assert everything.planned_calls == 8 * 6 and everything.reconcile_calls == 48
    assert everything.weeks == 2 and everything.condense_calls == 2  # one rollup per week
    assert only_extraction.condense_calls == 0  # no journal extractor: nothing to roll up
    assert everything.estimated_cost > only_extraction.estimated_cost * 3
    monkeypatch.setenv("MEMREPO_OFFLINE", "1")
    proc = invoke_memory(lrepo, "reconstruct", "--branch", "d", "--dry-run")
    assert proc.returncode == 0 and "no LLM calls, $0" in proc.stdout


def test_every_week_is_rolled_up_oldest_first(lrepo: Path):
    _add(lrepo, "raw/conversations/2026/03/10/0900-ses_w2a-dashboards.md", NEXT_WEEK)
    run_git(lrepo, "add", "-A", "raw")
    run_git(lrepo, "commit", "-q", "--no-verify", "-m", "conversation: next week")
    res = R.reconstruct(lrepo, "weeks", for_repo(lrepo, offline=True))
    assert res.weeks == 2
    memory = run_git(lrepo, "show", "extract/weeks:knowledge/memory/MEMORY.md").stdout
    active = memory.split("## Active Context")[1]  # written by the weekly rollups only
    first = active.find("Send the first weekly report to Bob")  # week of 2026-03-02
    second = active.find("migrate the legacy dashboards")  # week of 2026-03-09
    assert 0 < first < second, memory
    log = run_git(lrepo, "log", "-1", "--format=%s", "extract/weeks").stdout
    assert log.startswith("extract: weekly condensation for weeks (2 weeks)")


def test_a_bad_transcript_is_reported_and_the_rest_replayed(lrepo: Path):
    bad = "raw/conversations/2026/03/09/0800-ses_bad-broken.md"
    _add(lrepo, bad, "---\nsession_id: ses_bad\nstarted: [oops\n---\n\n# x\n")
    run_git(lrepo, "add", "-A", "raw")
    run_git(lrepo, "commit", "-q", "--no-verify", "-m", "conversation: broken")
    proc = invoke_memory(lrepo, "reconstruct", "--branch", "bad", "--offline")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{bad}:3: " in proc.stderr and "(skipped)" in proc.stderr
    assert "7 transcripts replayed" in proc.stdout  # the good ones, not the broken one
    assert "~~2026-03-02" in run_git(
        lrepo, "show", "extract/bad:knowledge/projects/ledger/context.md").stdout
