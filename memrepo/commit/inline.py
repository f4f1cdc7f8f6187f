"""memrepo's own commits run memrepo's hooks in-process instead of through git.

``capture end``, ``memory commit``, extraction and condensation commit from inside a
``memory`` process that has the validators and the indexer at hand. Going through the
installed git hooks would start Python twice more and, with the pre-commit framework,
scan the whole work tree several times per commit (bench/perf/bench_commit.py times
each hook runner). So when every installed hook is memrepo's own
(:func:`memrepo.commit.write.route` decides, once per commit), the same checks run here
on the staged content, the commit is written with git's plumbing (or by ``git commit``
with hooks off, when it must sign or record a merge), and the index is brought up to date
here. Each entry is one straight line: validate, update the index, write the commit,
post-commit.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from memrepo import git
from memrepo.commit import trees
from memrepo.errors import GitError, MemrepoError
from memrepo.hooks.engine import run_checks
from memrepo.hooks.post_commit import run_git_event
from memrepo.hooks.pre_commit import CHECKS, staged_context


class HeadMoved(MemrepoError):
    """Another commit landed between reading HEAD and updating it: build on the new one."""


class NothingToCommit(MemrepoError):
    """The tree to commit is HEAD's: someone committed the same content first (a commit
    built again on a moved HEAD finds it there), or nothing was staged."""


def commit(
    root: Path, message: str, rows: list[git.StagedRow] | None = None, *, git_writes: bool = False
) -> None:
    """Commit the index with memrepo's hooks run here; ``rows``: what is staged, when the
    caller has just asked git. ``git_writes``: ``git commit`` writes it, hooks off (the
    "git-no-hooks" route: it knows signing and merge parents)."""
    validate_staged(root, rows)
    if git_writes:
        no_hooks = ["-c", f"core.hooksPath={os.devnull}"]
        git.git([*no_hooks, "commit", "-q", "--no-verify", "-F", "-"], root, input=message)
    else:
        # ``git commit`` would first re-stat every tracked file to refresh the index (a cost
        # that grows with the repo); the callers have just staged exactly what they commit.
        _write_commit(root, git.git(["write-tree"], root).strip(), git.head(root), message)
    run_git_event(root, "post-commit")


def commit_tree(root: Path, message: str, prepared: trees.Prepared) -> None:
    """Commit a :func:`memrepo.commit.trees.prepare` result: the validators over its
    changes, the index set for its paths, the commit written on its parent, then the
    search index. The index is set before the commit, as ``git add`` would have; a
    refused commit leaves it untouched."""
    validate_staged(root, prepared.rows)
    trees.update_index(root, prepared)
    _write_commit(root, prepared.tree, prepared.parent, message, prepared.base_tree)
    run_git_event(root, "post-commit")


def validate_staged(root: Path, rows: list[git.StagedRow] | None = None) -> None:
    """The pre-commit validators over the staged content; warnings to stderr, errors raised
    the way a refused hook reads (``path:line: error: message [check]`` lines)."""
    paths, ctx = staged_context(root, rows)
    said = io.StringIO()
    if run_checks(CHECKS, paths, ctx, out=said):
        raise MemrepoError(f"the pre-commit checks refused the commit:\n{said.getvalue()}")
    sys.stderr.write(said.getvalue())  # warnings (MEMORY.md near its cap), as the hook shows


def _write_commit(
    root: Path, tree: str, parent: str | None, message: str, parent_tree: str | None = None
) -> None:
    """commit-tree and update-ref (HEAD must still be ``parent``), as ``git commit`` would;
    ``parent_tree``: the parent's tree, when the caller has read it already."""
    if parent and parent_tree is None:
        parent_tree = git.git(["rev-parse", f"{parent}^{{tree}}"], root).strip()
    if parent and parent_tree == tree:
        raise NothingToCommit("nothing to commit: the index is the same as HEAD")
    text = git.git(["stripspace"], root, input=message)
    sha = git.git(["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"], root,
                  input=text).strip()
    subject = text.split("\n", 1)[0]
    what = "commit" if parent else "commit (initial)"
    try:
        git.git(["update-ref", "-m", f"{what}: {subject}", "HEAD", sha, parent or ""], root)
    except GitError:
        if git.head(root) != parent:
            raise HeadMoved(f"HEAD moved while committing (another commit landed first): "
                            f"{subject}") from None
        raise
    git.git(["maintenance", "run", "--auto", "--quiet"], root, check=False)  # as commit does
