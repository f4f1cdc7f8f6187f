"""memrepo's own commits run memrepo's hooks in-process, unless a foreign hook is installed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from conftest import run_git

from memrepo.commit import inline, write
from memrepo.errors import MemrepoError
from memrepo.index.indexer import sync

NOTE = "---\ntype: reference\n---\n# Runbook\n\n- restart the worker\n"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The roots memrepo committed in-process (from the index, or from prepared trees)."""
    calls: list[Path] = []
    for name in ("commit", "commit_tree"):
        real = getattr(inline, name)

        def wrapped(root: Path, *args: object, _real=real) -> None:
            calls.append(root)
            _real(root, *args)

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
    assert inline.only_memrepo_hooks(crepo)
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
    assert not inline.only_memrepo_hooks(crepo)
    (crepo / "knowledge/reference/runbook.md").write_text(NOTE)
    write.commit_paths(crepo, ["knowledge/reference/runbook.md"], "memory: runbook\n")
    assert spy == [] and ran.exists()


def test_a_pre_commit_config_with_other_hooks_is_not_memrepos_alone(crepo: Path) -> None:
    cfg = crepo / ".pre-commit-config.yaml"
    cfg.write_text(
        cfg.read_text()
        + "  - repo: local\n    hooks:\n      - id: lint\n        name: lint\n"
        "        entry: ruff check\n        language: system\n"
    )
    assert not inline.only_memrepo_hooks(crepo)


def test_an_unreadable_pre_commit_config_means_the_real_hooks_run(crepo: Path) -> None:
    (crepo / ".pre-commit-config.yaml").write_text("repos: [\n  - {repo: local\n")  # broken
    assert not inline.only_memrepo_hooks(crepo)
