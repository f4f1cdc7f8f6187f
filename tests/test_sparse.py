"""Sparse checkouts are refused up front, but for the commands that work there
(memrepo.sparse.OPS; tests/test_sparse_subagent.py): the files left out would look
missing, and the writers would write over them (a template over MEMORY.md, a new journal
over today's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo.errors import MemrepoError
from memrepo.repo import discover, sparse_checkout

MEMORY = "knowledge/memory/MEMORY.md"
PEOPLE = "knowledge/people/_index.md"


@pytest.fixture
def sparse(crepo: Path) -> Path:
    """A memory repo whose work tree leaves knowledge/ out (cone mode keeps the top-level
    files, so memory-config.yaml is still there and the repo is found)."""
    journal = crepo / "knowledge/journal/2026-03-01.md"
    journal.write_text("---\ntype: journal\ndate: 2026-03-01\n---\n\n## 2026-03-01\n- kept\n")
    run_git(crepo, "add", "-A")
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "journal")
    run_git(crepo, "sparse-checkout", "set", "raw", "topics")
    assert not (crepo / MEMORY).exists() and (crepo / "memory-config.yaml").exists()
    return crepo


def _untouched(root: Path) -> None:
    assert not (root / MEMORY).exists() and not (root / PEOPLE).exists()
    assert not (root / "knowledge/journal").exists()
    assert run_git(root, "status", "--porcelain").stdout == ""


@pytest.mark.parametrize("args", [("doctor", "--fix"), ("prune",), ("condense", "weekly"),
                                  ("flush", "--offline"), ("extract", "--offline")])
def test_every_command_refuses_a_sparse_checkout(sparse: Path, args: tuple[str, ...]) -> None:
    proc = invoke_memory(sparse, *args)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "is a sparse checkout" in proc.stderr and "sparse-checkout disable" in proc.stderr
    assert "Nothing was changed" in proc.stderr
    _untouched(sparse)


def test_init_refuses_a_sparse_checkout(sparse: Path) -> None:
    proc = invoke_memory(sparse.parent, "init", str(sparse))
    assert proc.returncode == 1 and "is a sparse checkout" in proc.stderr
    _untouched(sparse)


def test_a_file_kept_out_by_skip_worktree_is_not_written_over(crepo: Path) -> None:
    """Without sparse-checkout (``git update-index --skip-worktree``): the commands that
    lay down templates look at git's index and refuse too."""
    head = run_git(crepo, "show", f"HEAD:{MEMORY}").stdout
    run_git(crepo, "update-index", "--skip-worktree", MEMORY)
    (crepo / MEMORY).unlink()
    proc = invoke_memory(crepo, "doctor", "--fix")
    assert proc.returncode == 1 and MEMORY in proc.stderr, proc.stdout + proc.stderr
    assert "keeps out of the work tree" in proc.stderr and "--no-skip-worktree" in proc.stderr
    assert not (crepo / MEMORY).exists()
    assert run_git(crepo, "show", f"HEAD:{MEMORY}").stdout == head


def test_a_disabled_sparse_checkout_works_again(sparse: Path) -> None:
    run_git(sparse, "sparse-checkout", "disable")
    assert (sparse / ".git/info/sparse-checkout").exists()  # git leaves the file behind
    assert not sparse_checkout(sparse)
    assert discover(sparse).root == sparse.resolve()
    assert invoke_memory(sparse, "remember", "back", "to", "normal").returncode == 0


def test_discover_names_the_repo_and_the_way_out(sparse: Path) -> None:
    with pytest.raises(MemrepoError, match=f"{sparse.resolve()} is a sparse checkout"):
        discover(sparse)
