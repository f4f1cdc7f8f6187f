"""memory prune: journals past retention and stale files to archive/ (git mv), branches."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from conftest import run_git, run_memory

from memrepo.lifecycle import prune as P


def test_prune_archives_old_journals_and_stale_files(lrepo: Path):
    assert run_memory(lrepo, "extract", "--offline").returncode == 0
    future = (dt.date.today() + dt.timedelta(days=200)).isoformat()
    dry = run_memory(lrepo, "prune", "--dry-run", "--offline", "--date", future)
    assert "move knowledge/journal/2026-03-02.md -> archive/journal/2026-03-02.md" in dry.stdout
    assert run_git(lrepo, "status", "--porcelain").stdout == ""
    run_git(lrepo, "checkout", "-q", "-b", "explore/idea")
    run_git(lrepo, "checkout", "-q", "main")
    proc = run_memory(lrepo, "prune", "--offline", "--date", future)
    assert proc.returncode == 0, proc.stderr
    assert (lrepo / "archive/journal/2026-03-02.md").exists()
    assert not (lrepo / "knowledge/journal/2026-03-02.md").exists()
    assert (lrepo / "knowledge/memory/MEMORY.md").exists()  # never archived
    assert "explore/idea" in proc.stdout
    log = run_git(lrepo, "log", "--follow", "--format=%s", "--",
                  "archive/journal/2026-03-02.md").stdout
    assert "maintenance: prune" in log and "extract:" in log  # history follows the move


def test_explore_branches_deleted_only_with_apply(lrepo: Path):
    run_git(lrepo, "branch", "explore/old")
    today = dt.date.today() + dt.timedelta(days=30)
    branches = P.old_explore_branches(lrepo, today)
    assert [b.name for b in branches] == ["explore/old"] and branches[0].merged
    P.delete_branches(lrepo, branches)
    assert run_git(lrepo, "branch", "--list", "explore/*").stdout == ""
