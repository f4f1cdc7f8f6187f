"""memrepo's own commits run memrepo's hooks in-process, unless a foreign hook is installed
(memrepo.commit.inline, the route of memrepo.commit.write)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from conftest import run_git

from memrepo.commit import inline, write
from memrepo.errors import MemrepoError
from memrepo.hooks.install import install_hooks, only_memrepo_hooks
from memrepo.index.indexer import sync

NOTE = "---\ntype: reference\n---\n# Runbook\n\n- restart the worker\n"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The roots memrepo committed in-process (from the index, or from prepared trees)."""
    calls: list[Path] = []
    for name in ("commit", "commit_tree"):
        real = getattr(inline, name)

        def wrapped(root: Path, *args: object, _real=real, **kwargs: object) -> None:
            calls.append(root)
            _real(root, *args, **kwargs)

        monkeypatch.setattr(inline, name, wrapped)
    return calls


def _head_indexed(root: Path) -> str:
    import sqlite3

    con = sqlite3.connect(root / "memory.db")
    try:
        return con.execute("SELECT value FROM meta WHERE key='commit'").fetchone()[0]
    finally:
        con.close()


def test_own_commit_validates_and_indexes_in_process(crepo: Path, spy: list[Path]) -> None:
    assert only_memrepo_hooks(crepo)
    sync(crepo)
    before = run_git(crepo, "rev-parse", "HEAD").stdout.strip()
    (crepo / "knowledge/reference/runbook.md").write_text(NOTE)
    msg = "memory: runbook  \n\n\nSession: x\n\n"
    sha = write.commit_paths(crepo, ["knowledge/reference/runbook.md"], msg)
    assert spy == [crepo]
    assert sha == run_git(crepo, "rev-parse", "HEAD").stdout.strip()
    # the plumbing commit is what `git commit` makes: parent, cleaned message, reflog, index
    assert run_git(crepo, "log", "-1", "--format=%P%n%B").stdout == f"{before}\nmemory: runbook\n\nSession: x\n\n"
    assert run_git(crepo, "reflog", "-1", "--format=%gs").stdout.strip() == "commit: memory: runbook"
    assert run_git(crepo, "status", "--porcelain", "--", "knowledge").stdout == ""
    assert run_git(crepo, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/main"
    assert _head_indexed(crepo) == sha  # the post-commit work ran here

    bad = NOTE + "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    (crepo / "knowledge/reference/leak.md").write_text(bad)
    with pytest.raises(MemrepoError) as exc:
        write.commit_paths(crepo, ["knowledge/reference/leak.md"], "memory: leak\n")
    assert "knowledge/reference/leak.md:7: error:" in str(exc.value)
    assert "wJalrXUtnFEMI" not in str(exc.value)  # the value is never printed
    assert run_git(crepo, "rev-parse", "HEAD").stdout.strip() == sha


def test_a_foreign_hook_means_the_real_hooks_run(crepo: Path, spy: list[Path]) -> None:
    hook = crepo / ".git" / "hooks" / "commit-msg"
    ran = crepo / "commit-msg-ran"
    hook.write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    assert not only_memrepo_hooks(crepo)
    (crepo / "knowledge/reference/runbook.md").write_text(NOTE)
    write.commit_paths(crepo, ["knowledge/reference/runbook.md"], "memory: runbook\n")
    assert spy == [] and ran.exists()


def test_the_route_is_decided_by_the_hooks_and_what_git_must_write(crepo: Path) -> None:
    """Signing or a merge in progress: memrepo's hooks still run here, `git commit` writes."""
    assert write.route(crepo) == "plumbing"
    (crepo / ".git" / "MERGE_HEAD").write_text(run_git(crepo, "rev-parse", "HEAD").stdout)
    assert write.route(crepo) == "git-no-hooks"
    (crepo / ".git" / "MERGE_HEAD").unlink()
    run_git(crepo, "config", "commit.gpgsign", "true")
    assert write.route(crepo) == "git-no-hooks"
    hook = crepo / ".git" / "hooks" / "commit-msg"
    hook.write_text("#!/bin/sh\n")
    assert write.route(crepo) == "git"


def test_what_git_must_write_is_committed_by_git_with_the_hooks_run_here(
    crepo: Path, spy: list[Path]
) -> None:
    sync(crepo)
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    (crepo / ".git" / "CHERRY_PICK_HEAD").write_text(head)  # a cherry-pick in progress
    (crepo / "knowledge/reference/runbook.md").write_text(NOTE)
    sha = write.commit_paths(crepo, ["knowledge/reference/runbook.md"], "memory: runbook\n")
    assert spy == [crepo]  # validated here
    assert not (crepo / ".git" / "CHERRY_PICK_HEAD").exists()  # `git commit` wrote it
    assert run_git(crepo, "log", "-1", "--format=%P").stdout == head
    assert _head_indexed(crepo) == sha


def test_a_pre_commit_config_with_other_hooks_is_not_memrepos_alone(crepo: Path) -> None:
    install_hooks(crepo, "pre-commit")  # the framework reads the config (direct: git does not)
    cfg = crepo / ".pre-commit-config.yaml"
    cfg.write_text(
        cfg.read_text()
        + "  - repo: local\n    hooks:\n      - id: lint\n        name: lint\n"
        "        entry: ruff check\n        language: system\n"
    )
    assert not only_memrepo_hooks(crepo)


def test_an_unreadable_pre_commit_config_means_the_real_hooks_run(crepo: Path) -> None:
    install_hooks(crepo, "pre-commit")  # the framework reads the config (direct: git does not)
    (crepo / ".pre-commit-config.yaml").write_text("repos: [\n  - {repo: local\n")  # broken
    assert not only_memrepo_hooks(crepo)
