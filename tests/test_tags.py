"""memory tag and memory log --at."""

from __future__ import annotations

from pathlib import Path

from conftest import run_git, run_memory


def test_daily_only_when_changed_and_log_at(lrepo: Path):
    first = run_memory(lrepo, "tag", "daily", "--date", "2026-03-01")
    assert first.stdout.strip() == "memory/daily/2026-03-01"
    same = run_memory(lrepo, "tag", "daily", "--date", "2026-03-02")
    assert "nothing changed" in same.stdout
    run_memory(lrepo, "extract", "--offline")
    assert run_memory(lrepo, "tag", "daily", "--date", "2026-03-08").stdout.strip() == \
        "memory/daily/2026-03-08"
    note = run_git(lrepo, "tag", "-l", "-n9", "memory/daily/2026-03-08").stdout
    assert "commits touching knowledge" in note
    assert run_memory(lrepo, "tag", "weekly", "--date", "2026-03-08").stdout.strip() == \
        "memory/weekly/2026-W10"
    assert run_memory(lrepo, "tag", "milestone", "v1").stdout.strip() == "memory/milestone/v1"
    assert run_memory(lrepo, "tag", "milestone", "v1").returncode == 1
    at = run_memory(lrepo, "log", "--at", "daily/2026-03-01", "knowledge/memory/MEMORY.md")
    assert "## Lessons Learned" in at.stdout and "User prefers" not in at.stdout
    now = run_memory(lrepo, "log", "--at", "memory/daily/2026-03-08",
                     "knowledge/memory/MEMORY.md")
    assert "User prefers" in now.stdout
