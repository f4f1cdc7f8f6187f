"""memory prune: journals past retention and stale files to archive/ (git mv), branches."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.lifecycle import explore
from memrepo.lifecycle import prune as P


def test_prune_archives_old_journals_and_stale_files(lrepo: Path):
    assert invoke_memory(lrepo, "extract", "--offline").returncode == 0
    future = (dt.date.today() + dt.timedelta(days=200)).isoformat()
    dry = invoke_memory(lrepo, "prune", "--dry-run", "--offline", "--date", future)
    assert "move knowledge/journal/2026-03-02.md -> archive/journal/2026-03-02.md" in dry.stdout
    assert run_git(lrepo, "status", "--porcelain").stdout == ""
    run_git(lrepo, "checkout", "-q", "-b", "explore/idea")
    run_git(lrepo, "checkout", "-q", "main")
    proc = invoke_memory(lrepo, "prune", "--offline", "--date", future)
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
    branches = explore.old(lrepo, today)
    assert [b.name for b in branches] == ["explore/old"] and branches[0].merged
    explore.remove(lrepo, branches)
    assert run_git(lrepo, "branch", "--list", "explore/*").stdout == ""


def test_files_a_topic_subscribes_to_are_never_archived(lrepo: Path):
    """Archiving one would make every later commit of that topic fail its subscription
    check: prune keeps them in place, and a commit of the topic still passes after."""
    assert invoke_memory(lrepo, "extract", "--offline").returncode == 0
    ref = lrepo / "knowledge/reference/runbook.md"
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text("---\ntype: reference\n---\n# Runbook\n\n- restart the worker\n")
    topic = lrepo / "topics/ops.md"
    topic.write_text(
        "---\ntype: topic\nname: ops\ntriggers:\n  - type: keyword\n    keywords: [deploy]\n"
        "subscriptions:\n  - knowledge/reference/runbook.md\n"
        "  - knowledge/journal/2026-03-02.md\n---\n# Ops\n"
    )
    run_git(lrepo, "add", "-A")
    run_git(lrepo, "commit", "-q", "-m", "memory: ops topic")
    future = (dt.date.today() + dt.timedelta(days=400)).isoformat()
    proc = invoke_memory(lrepo, "prune", "--offline", "--date", future)
    assert proc.returncode == 0, proc.stderr
    assert ref.exists() and (lrepo / "knowledge/journal/2026-03-02.md").exists()
    assert not (lrepo / "knowledge/journal/2026-03-03.md").exists()  # not subscribed: moved
    topic.write_text(topic.read_text() + "\nKeep the runbook at hand.\n")
    run_git(lrepo, "commit", "-q", "-am", "memory: ops topic grows")  # hooks pass


def test_over_max_size_the_lowest_scoring_share_is_archived(lrepo: Path):
    """Seed 001's size-based pruning: while knowledge/ is over lifecycle.max_size_mb, a
    prune archives the lowest-scoring prune_percent of the files the threshold keeps;
    under it (or with 0) nothing more moves."""
    assert invoke_memory(lrepo, "extract", "--offline").returncode == 0
    config = lrepo / "memory-config.yaml"
    base = config.read_text()
    later = dt.date.today() + dt.timedelta(days=200)

    def plan(max_mb: str) -> tuple[list[str], list[str]]:
        text = base
        for key, value in (("archive_score_threshold", 0), ("max_size_mb", max_mb),
                           ("prune_percent", 50)):
            text, n = re.subn(rf"^  {key}: .*$", f"  {key}: {value}", text, flags=re.M)
            assert n == 1, key
        config.write_text(text)
        notes: list[str] = []
        return [a for a, _, _ in P.stale_moves(lrepo, later, notes)], notes

    assert plan("0") == ([], []) and plan("100") == ([], [])
    moved, notes = plan("0.000001")
    everything = [s.path for s in P.score_files(lrepo, later)]
    assert 0 < len(moved) < len(everything)
    assert moved == everything[:len(moved)]  # the lowest scores first
    assert "over lifecycle.max_size_mb" in notes[0] and "(50 %)" in notes[0]
