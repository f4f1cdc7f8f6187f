"""``memory explore``: what-if branches in worktrees of their own, merged or dropped, and
pruned when old; nothing uncommitted is ever lost."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from conftest import run_git, run_memory

from memrepo.lifecycle import explore

NOTE = "---\ntype: reference\ntitle: Idea\n---\n# Idea\n\n- try the ledger on SQLite\n"


def _branches(repo: Path) -> list[str]:
    return run_git(repo, "branch", "--list", "--format=%(refname:short)", "explore/*"
                   ).stdout.split()


def _start(repo: Path, name: str) -> Path:
    out = run_memory(repo, "explore", "start", name)
    assert out.returncode == 0, out.stderr
    path = explore.worktree_path(repo, name)
    assert f"explore/{name}: {path}" in out.stdout and (path / "memory-config.yaml").is_file()
    return path


def _commit_note(tree: Path, rel: str = "knowledge/reference/idea.md") -> None:
    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
    (tree / rel).write_text(NOTE)
    run_git(tree, "add", rel)
    proc = run_git(tree, "commit", "-q", "-m", "reference: idea")
    assert proc.returncode == 0, proc.stderr


def test_start_work_merge(crepo: Path) -> None:
    tree = _start(crepo, "sqlite")
    _commit_note(tree)
    listed = json.loads(run_memory(crepo, "explore", "list", "--json").stdout)
    assert [(b["name"], b["ahead"], b["merged"], b["path"]) for b in listed] == [
        ("explore/sqlite", 1, False, str(tree))]
    assert listed[0]["days_left"] == 7
    assert not (crepo / "knowledge/reference/idea.md").exists(), "main is untouched"
    out = run_memory(crepo, "explore", "merge", "sqlite")
    assert out.returncode == 0, out.stderr
    assert (crepo / "knowledge/reference/idea.md").read_text() == NOTE
    assert run_git(crepo, "log", "-1", "--format=%s").stdout.strip() == \
        "explore: merge explore/sqlite"
    assert not tree.exists() and _branches(crepo) == []


def test_drop_tags_what_was_never_merged_and_keeps_uncommitted_work(crepo: Path) -> None:
    tree = _start(crepo, "what-if")
    _commit_note(tree)
    tip = run_git(tree, "rev-parse", "HEAD").stdout.strip()
    (tree / "knowledge/reference/idea.md").write_text(NOTE + "- and one more line\n")
    for cmd in (["drop", "what-if"], ["merge", "what-if"]):
        out = run_memory(crepo, "explore", *cmd)
        assert out.returncode == 1 and "uncommitted" in out.stderr, (cmd, out.stderr)
        assert "one more line" in (tree / "knowledge/reference/idea.md").read_text()
    out = run_memory(crepo, "explore", "drop", "what-if", "--force")
    assert out.returncode == 0, out.stderr
    assert not tree.exists() and _branches(crepo) == []
    tag = "memory/before/delete-explore-what-if"
    assert run_git(crepo, "rev-list", "-1", tag).stdout.strip() == tip


def test_prune_apply_drops_old_scenarios_with_their_worktrees(crepo: Path) -> None:
    tree = _start(crepo, "old")
    _commit_note(tree)
    busy = _start(crepo, "busy")
    (busy / "knowledge/reference/wip.md").parent.mkdir(parents=True, exist_ok=True)
    (busy / "knowledge/reference/wip.md").write_text(NOTE)  # never committed
    later = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    out = run_memory(crepo, "prune", "--apply", "--offline", "--date", later)
    assert out.returncode == 0, out.stderr
    assert "deleted explore/old" in out.stdout and not tree.exists()
    assert "kept explore/busy: 1 uncommitted change(s)" in out.stdout
    assert (busy / "knowledge/reference/wip.md").exists()
    assert _branches(crepo) == ["explore/busy"]


def test_bad_names_and_unknown_branches(crepo: Path) -> None:
    for name in ("../up", "a/b", "Big", ".hidden", "x.lock", ""):
        out = run_memory(crepo, "explore", "start", name)
        assert out.returncode == 1 and "explore name" in out.stderr, (name, out.stderr)
    assert not (crepo.parent / "up").exists()
    out = run_memory(crepo, "explore", "merge", "nosuch")
    assert out.returncode == 1 and "no branch explore/nosuch" in out.stderr
    _start(crepo, "twice")
    out = run_memory(crepo, "explore", "start", "twice")
    assert out.returncode == 1 and "explore/twice exists" in out.stderr


def test_a_conflicting_merge_changes_nothing(crepo: Path) -> None:
    """Memory files merge by memrepo's driver (both bullets kept); the config does not."""
    tree = _start(crepo, "clash")
    config = "memory-config.yaml"
    for where, value in ((tree, "30"), (crepo, "3")):
        text = (where / config).read_text()
        (where / config).write_text(text.replace("explore_branch_days: 7",
                                                 f"explore_branch_days: {value}"))
        run_git(where, "commit", "-q", "-am", f"maintenance: explore days {value}")
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    out = run_memory(crepo, "explore", "merge", "clash")
    assert out.returncode == 1 and f"conflicts in {config}" in out.stderr, out.stderr
    assert run_git(crepo, "rev-parse", "HEAD").stdout == head
    assert run_git(crepo, "status", "--porcelain").stdout == ""
    assert tree.exists(), "the scenario is still there to resolve"
