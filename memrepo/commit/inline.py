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
post-commit. The index update and the commit are made on a copy of the index and land
under git's ``index.lock`` once no person's commit is in progress
(:mod:`memrepo.commit.person`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from memrepo import git
from memrepo.commit import person, trees
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
        person.wait_for_person(root)
        no_hooks = ["-c", f"core.hooksPath={os.devnull}"]
        git.git([*no_hooks, "commit", "-q", "--no-verify", "-F", "-"], root, input=message)
    else:
        # ``git commit`` would first re-stat every tracked file to refresh the index (a cost
        # that grows with the repo); the callers have just staged exactly what they commit.
        def build(env: dict[str, str]) -> tuple[str, str, str]:
            # write-tree may fill in the index's cache of trees: the copy keeps it
            tree = git.git(["write-tree"], root, env=env).strip()
            return _commit_object(root, tree, git.head(root), message)

        person.land(root, build, functools.partial(_move_head, root=root))
        _maintain(root)
    run_git_event(root, "post-commit")


def commit_tree(root: Path, message: str, prepared: trees.Prepared) -> None:
    """Commit a :func:`memrepo.commit.trees.prepare` result: the validators over its
    changes, the index set for its paths, the commit written on its parent, then the
    search index. The index is set as ``git add`` would have; a refused commit leaves it
    untouched (:func:`memrepo.commit.person.land`: a person's commit runs before or after)."""
    validate_staged(root, prepared.rows)

    def build(env: dict[str, str]) -> tuple[str, str, str]:
        trees.update_index(root, prepared, env=env)
        return _commit_object(root, prepared.tree, prepared.parent, message,
                              prepared.base_tree)

    person.land(root, build, functools.partial(_move_head, root=root))
    _maintain(root)
    run_git_event(root, "post-commit")


def commit_only(root: Path, message: str, paths: list[str], rows: list[git.StagedRow]) -> None:
    """Commit the staged entries of ``paths`` alone, leaving what else is staged (a
    person's ``git add``) staged. ``git commit -- PATHS`` would hold index.lock through
    every hook it runs, and a person's ``git add`` meanwhile fails: the tree is HEAD's
    with those entries, made in a private index, and the lock is held only to move HEAD."""
    wanted = set(paths)
    validate_staged(root, [r for r in rows if r[1] in wanted or r[2] in wanted])
    parent = git.head(root)
    tree = _tree_with_staged(root, parent, paths)
    person.land(root, lambda _env: _commit_object(root, tree, parent, message),
                functools.partial(_move_head, root=root))
    _maintain(root)
    run_git_event(root, "post-commit")


def _tree_with_staged(root: Path, parent: str | None, paths: list[str]) -> str:
    """HEAD's tree with the index's entries for ``paths`` (absent ones removed)."""
    staged = git.git(["ls-files", "-s", "-z", "--", *paths], root)
    rows = [r for r in staged.split("\0") if r]
    present = {r.split("\t", 1)[1] for r in rows}
    gone = [f"0 {'0' * 40}\t{p}" for p in paths if p not in present]
    private = git.git_dir(root) / f"{person.COPY_PREFIX}{os.getpid()}.only"
    env = {"GIT_INDEX_FILE": str(private)}
    try:
        git.git(["read-tree", *([parent] if parent else ["--empty"])], root, env=env)
        git.git(["update-index", "-z", "--index-info"], root, env=env,
                input="".join(r + "\0" for r in [*gone, *rows]))
        return git.git(["write-tree"], root, env=env).strip()
    finally:
        private.unlink(missing_ok=True)


def validate_staged(root: Path, rows: list[git.StagedRow] | None = None) -> None:
    """The pre-commit validators over the staged content; warnings to stderr, errors raised
    the way a refused hook reads (``path:line: error: message [check]`` lines)."""
    paths, ctx = staged_context(root, rows)
    said = io.StringIO()
    if run_checks(CHECKS, paths, ctx, out=said):
        raise MemrepoError(f"the pre-commit checks refused the commit:\n{said.getvalue()}")
    sys.stderr.write(said.getvalue())  # warnings (MEMORY.md near its cap), as the hook shows


def _commit_object(
    root: Path, tree: str, parent: str | None, message: str, parent_tree: str | None = None
) -> tuple[str, str, str]:
    """commit-tree on ``parent``, as ``git commit`` would: the commit, ``parent`` (what
    HEAD must still be) and the subject; ``parent_tree``: the parent's tree, when the
    caller has read it."""
    if parent and parent_tree is None:
        parent_tree = git.git(["rev-parse", f"{parent}^{{tree}}"], root).strip()
    if parent and parent_tree == tree:
        raise NothingToCommit("nothing to commit: the index is the same as HEAD")
    text = git.git(["stripspace"], root, input=message)
    sha = git.git(["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"], root,
                  input=text).strip()
    return sha, parent or "", text.split("\n", 1)[0]


@contextlib.contextmanager
def _move_head(made: tuple[str, str, str], root: Path) -> Iterator[Callable[[], None]]:
    """HEAD from ``parent`` to ``sha`` in one ``git update-ref --stdin`` transaction,
    prepared here (the ref locked, its value checked: HeadMoved when another commit
    landed) and committed by the call yielded, so that the caller's index.lock is held
    for a line on a pipe, not a process start; aborted when the call is not made."""
    sha, parent, subject = made
    what = "commit" if parent else "commit (initial)"
    proc = subprocess.Popen(["git", "update-ref", "-m", f"{what}: {subject}", "--stdin"],
                            cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **git.NO_OPTIONAL_LOCKS})
    assert proc.stdin is not None and proc.stdout is not None

    def say(lines: str, answers: int) -> None:
        proc.stdin.write(lines.encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        for _ in range(answers):
            if not proc.stdout.readline().endswith(b": ok\n"):  # type: ignore[union-attr]
                proc.kill()
                err = proc.communicate()[1].decode("utf-8", "replace").strip()
                if (git.head(root) or "") != parent:
                    raise HeadMoved(f"HEAD moved while committing (another commit landed "
                                    f"first): {subject}")
                raise GitError(f"git update-ref failed: {err}")

    done = False

    def commit() -> None:
        nonlocal done
        say("commit\n", 1)
        done = True

    try:
        say(f"start\nupdate HEAD {sha} {parent or '0' * 40}\nprepare\n", 2)
        yield commit
    finally:
        if proc.returncode is None:
            if not done:
                with contextlib.suppress(OSError):
                    proc.stdin.write(b"abort\n")
            with contextlib.suppress(OSError):
                proc.stdin.close()
            proc.wait()


def _maintain(root: Path) -> None:
    """As ``git commit`` does after a commit (outside index.lock: it may take a while)."""
    git.git(["maintenance", "run", "--auto", "--quiet"], root, check=False)
