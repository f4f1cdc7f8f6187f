"""memory tag and memory log --at."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_memory, run_git


def _dated(monkeypatch: pytest.MonkeyPatch, day: str) -> None:
    """Commits made from now on carry ``day`` as their date (what git records then)."""
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, f"{day}T12:00:00+00:00")


def _note(root: Path, text: str) -> None:
    mem = root / "knowledge/memory/MEMORY.md"
    mem.write_text(mem.read_text() + f"\n- {text}\n")
    run_git(root, "commit", "-qam", f"memory: {text}", "--no-verify")


def test_daily_only_when_changed_and_log_at(lrepo: Path, monkeypatch: pytest.MonkeyPatch):
    _dated(monkeypatch, "2026-03-01")
    _note(lrepo, "a fact of March 1")
    first = invoke_memory(lrepo, "tag", "daily", "--date", "2026-03-01")
    assert first.stdout.strip() == "memory/daily/2026-03-01"
    same = invoke_memory(lrepo, "tag", "daily", "--date", "2026-03-02")
    assert "nothing changed" in same.stdout
    _dated(monkeypatch, "2026-03-08")
    invoke_memory(lrepo, "extract", "--offline")
    assert invoke_memory(lrepo, "tag", "daily", "--date", "2026-03-08").stdout.strip() == \
        "memory/daily/2026-03-08"
    note = run_git(lrepo, "tag", "-l", "-n9", "memory/daily/2026-03-08").stdout
    assert "commits touching knowledge" in note
    assert invoke_memory(lrepo, "tag", "weekly", "--date", "2026-03-08").stdout.strip() == \
        "memory/weekly/2026-W10"
    assert invoke_memory(lrepo, "tag", "milestone", "v1").stdout.strip() == "memory/milestone/v1"
    assert invoke_memory(lrepo, "tag", "milestone", "v1").returncode == 1
    at = invoke_memory(lrepo, "log", "--at", "daily/2026-03-01", "knowledge/memory/MEMORY.md")
    assert "a fact of March 1" in at.stdout and "User prefers" not in at.stdout
    now = invoke_memory(lrepo, "log", "--at", "memory/daily/2026-03-08",
                     "knowledge/memory/MEMORY.md")
    assert "User prefers" in now.stdout


def test_a_tag_for_a_past_date_names_the_state_of_that_date(
    lrepo: Path, monkeypatch: pytest.MonkeyPatch
):
    """Backfilling: the tag points at the last commit of that day, not at today's HEAD."""
    _dated(monkeypatch, "2026-03-01")
    _note(lrepo, "the state of March 1")
    march_1 = run_git(lrepo, "rev-parse", "HEAD").stdout.strip()
    _dated(monkeypatch, "2026-03-09")
    _note(lrepo, "written later")
    assert invoke_memory(lrepo, "tag", "daily", "--date", "2026-03-03").returncode == 0
    assert run_git(lrepo, "rev-parse", "memory/daily/2026-03-03^{commit}").stdout.strip() == \
        march_1
    week = invoke_memory(lrepo, "tag", "weekly", "--date", "2026-03-04")  # week ends Mar 8
    assert week.stdout.strip() == "memory/weekly/2026-W10"
    assert run_git(lrepo, "rev-parse", "memory/weekly/2026-W10^{commit}").stdout.strip() == \
        march_1
    old = invoke_memory(lrepo, "tag", "daily", "--date", "2001-01-01")
    assert old.returncode == 1 and "no commit on or before 2001-01-01" in old.stderr
    assert not run_git(lrepo, "tag", "--list", "memory/daily/2001-01-01").stdout.strip()


def test_log_at_a_date_answers_from_the_last_commit_not_a_stale_tag(
    lrepo: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue #37: a daily tag older than the commits before the date is not the answer."""
    mem = "knowledge/memory/MEMORY.md"
    _dated(monkeypatch, "2026-04-01")
    _note(lrepo, "the April 1 state")
    assert invoke_memory(lrepo, "tag", "daily", "--date", "2026-04-01").returncode == 0
    _dated(monkeypatch, "2026-04-02")
    _note(lrepo, "changed on April 2")
    _dated(monkeypatch, "2026-04-03")
    _note(lrepo, "changed again on April 3")
    _dated(monkeypatch, "2026-04-07")
    _note(lrepo, "after the date asked")
    on_3rd = invoke_memory(lrepo, "log", "--at", "2026-04-03", mem).stdout
    assert "changed on April 2" in on_3rd and "changed again on April 3" in on_3rd
    assert "after the date asked" not in on_3rd
    on_1st = invoke_memory(lrepo, "log", "--at", "2026-04-01", mem).stdout  # the tag's own day
    assert "the April 1 state" in on_1st and "April 2" not in on_1st


def test_log_at_a_date_and_a_milestone_message(lrepo: Path, monkeypatch: pytest.MonkeyPatch):
    _dated(monkeypatch, "2026-03-01")
    _note(lrepo, "tagged on March 1")
    assert invoke_memory(lrepo, "tag", "daily", "--date", "2026-03-01").returncode == 0
    _dated(monkeypatch, "2026-03-04")
    _note(lrepo, "written March 4, never tagged")
    _dated(monkeypatch, "2026-03-09")
    _note(lrepo, "written March 9")
    mem = "knowledge/memory/MEMORY.md"
    on_3rd = invoke_memory(lrepo, "log", "--at", "2026-03-03", mem).stdout  # the 1st's tag
    assert "tagged on March 1" in on_3rd and "March 4" not in on_3rd
    on_5th = invoke_memory(lrepo, "log", "--at", "2026-03-05", mem).stdout  # no tag since
    assert "tagged on March 1" in on_5th and "March 4" in on_5th  # not the stale tag's
    assert "March 9" not in on_5th
    before = invoke_memory(lrepo, "log", "--at", "2026-02-28", mem)  # before any tag: commit
    assert before.returncode == 1 and "no commit on or before 2026-02-28" in before.stderr
    made = invoke_memory(lrepo, "tag", "milestone", "launch", "-m", "Ledger v2 shipped")
    assert made.stdout.strip() == "memory/milestone/launch"
    body = run_git(lrepo, "tag", "-l", "-n9", "memory/milestone/launch").stdout
    assert "Ledger v2 shipped" in body and "commits touching knowledge" in body
