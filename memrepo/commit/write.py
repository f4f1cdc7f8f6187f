"""The commit every memrepo writer makes (capture, remember, extraction, condensation,
``memory commit``): the route decided once, then one straight line.

:func:`route` asks once per commit who runs the hooks and who writes the commit. On the
"plumbing" route the touched paths' trees are written here (:mod:`memrepo.commit.trees`)
and :mod:`memrepo.commit.inline` validates, sets the index, writes the commit and runs the
post-commit work; when another commit lands first (``HeadMoved``) that line runs again on
the new HEAD. Whatever the trees leave to ``git add`` (and the other routes) stages with
``git add`` and commits the index.

Every commit here runs under :func:`commit_lock`, one at a time per work tree: each
step is atomic for git, but the line is not (prepare, set the index, update HEAD), and
``git commit`` writes back the index it read before taking ``index.lock``. Two memrepo
writers side by side then lost index entries (a transcript in HEAD and on disk but not
in the index: the next commit was refused as deleting it) or raced on HEAD (issue #14).
A person's ``git commit`` in progress is waited for (:mod:`memrepo.commit.person`): a
memrepo commit landing while its hook ran made git refuse it (issue #37).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

from memrepo.commit import inline, person, trees
from memrepo.errors import MemrepoError
from memrepo.git import (
    StagedRow,
    git,
    git_dir,
    git_file_dir,
    head,
    retry_locked,
    staged_blobs,
)
from memrepo.hooks.install import only_memrepo_hooks
from memrepo.layout import shared_mount
from memrepo.locks import LockBusy, file_lock

#: "plumbing": every installed hook is memrepo's, run here, and memrepo writes the commit
#: itself (the touched paths' trees, commit-tree, update-ref).
#: "git-no-hooks": the hooks are memrepo's, run here, but ``git commit`` must write the
#: commit (signing, a merge in progress): it runs with its hooks off.
#: "git": a hook that is not memrepo's is installed: ``git commit`` runs the real hooks.
Route = Literal["plumbing", "git-no-hooks", "git"]
#: Commits built again on a HEAD that moved before the tree route gives way to ``git add``.
HEAD_MOVED_ATTEMPTS = 5
#: memrepo's commit lock, in the work tree's git directory (the index and HEAD it guards
#: are per work tree; nothing in the work tree changes).
COMMIT_LOCK = "memrepo-commit.lock"
#: How long a commit waits for the ones before it: they run detached (capture end, cron's
#: ``memory commit``, extraction), a few hundred ms each, two dozen may queue.
COMMIT_LOCK_WAIT = 180.0

_held = threading.local()


@contextlib.contextmanager
def commit_lock(root: Path, wait: float | None = None) -> Iterator[None]:
    """Hold memrepo's commit lock of ``root``'s work tree (re-entrant in one thread):
    from reading what to commit to writing the index and HEAD, no other memrepo commit
    runs. LockBusy after ``wait`` seconds becomes a MemrepoError naming the file."""
    wait = COMMIT_LOCK_WAIT if wait is None else wait
    gdir = git_file_dir(root) or git_dir(root)
    path = (gdir / COMMIT_LOCK).resolve()
    held: set[Path] = _held.__dict__.setdefault("paths", set())
    if path in held:
        yield
        return
    try:
        with file_lock(path, wait=wait, poll=0.01):
            held.add(path)
            try:
                yield
            finally:
                held.discard(path)
    except LockBusy:
        raise MemrepoError(
            f"{path}: another memrepo commit has held this lock for {wait:g} s; try again"
        ) from None


def route(root: Path) -> Route:
    """The route of a commit of ``root`` (see :data:`Route`); asked once per commit."""
    if not only_memrepo_hooks(root):
        return "git"
    return "git-no-hooks" if _git_must_write(root) else "plumbing"


def _git_must_write(root: Path) -> bool:
    """Signed commits, and a merge, cherry-pick or revert in progress (whose commit has
    more to it than one parent), are written by ``git commit``."""
    signed = git(["config", "--type=bool", "--get", "commit.gpgsign"], root, check=False)
    gdir = git_dir(root)
    pending = any((gdir / f).exists() for f in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"))
    return signed.strip() == "true" or pending


def commit_paths(root: Path, paths: Sequence[str], message: str, *,
                 mounts: bool = False) -> str | None:
    """Stage ``paths`` and commit exactly them (other staged work is left alone); HEAD.

    When HEAD already holds ``paths`` as they are on disk (another writer, a ``memory
    commit`` beside this one, committed them first) there is nothing to do: that is
    HEAD, not a failure (a flush whose notes cron took was logged as failed; an import
    that then undid its work would have deleted them from disk). Knowledge mounted under
    ``shared/<name>/`` is written by ``memory shared`` alone (``mounts``)."""
    paths = list(dict.fromkeys(paths))
    mounted = [p for p in paths if shared_mount(p)]
    if mounted and not mounts:
        raise MemrepoError(f"{mounted[0]}: shared knowledge mounted from another memory repo "
                           "is read-only here; change it there, then `memory shared pull`")
    with commit_lock(root):
        person.wait_for_person(root)  # build on the HEAD a person's commit in progress makes
        how = route(root)
        prepared = prepare_trees(root, paths, how)
        try:
            if prepared is not None and not prepared.moving:
                commit_prepared(root, paths, message, prepared)
            else:
                retry_locked(lambda: git(["add", "-A", "--", *paths], root))
                commit_staged(root, paths, message, how=how)
        except inline.NothingToCommit:
            # the tree built from disk for ``paths`` is HEAD's: they are committed
            pass
        return head(root)


def prepare_trees(root: Path, paths: Sequence[str], how: Route) -> trees.Prepared | None:
    """The new trees for ``paths`` on the "plumbing" route; None on the others, or for a
    case :func:`memrepo.commit.trees.prepare` leaves to ``git add``."""
    return trees.prepare(root, paths) if how == "plumbing" else None


def commit_prepared(
    root: Path, paths: Sequence[str], message: str, prepared: trees.Prepared
) -> None:
    """Commit prepared trees (the "plumbing" route); when another commit lands first,
    build on it and try again."""
    with commit_lock(root):
        _commit_prepared(root, paths, message, prepared)


def _commit_prepared(
    root: Path, paths: Sequence[str], message: str, prepared: trees.Prepared
) -> None:
    for _attempt in range(HEAD_MOVED_ATTEMPTS):
        try:
            retry_locked(lambda p=prepared: inline.commit_tree(root, message, p))
            return
        except inline.HeadMoved:
            again = trees.prepare(root, paths)
            if again is None:
                break
            prepared = again
    retry_locked(lambda: git(["add", "-A", "--", *prepared.index_lines], root))
    commit_staged(root, list(prepared.index_lines), message, how="plumbing")


def commit_staged(
    root: Path,
    paths: Sequence[str],
    message: str,
    rows: list[StagedRow] | None = None,
    how: Route | None = None,
) -> None:
    """Commit the staged ``paths``, and nothing else someone else staged.

    The whole index, with memrepo's hooks run here, when only ``paths`` are staged: ``git
    commit -- paths`` rebuilds a temporary index and costs over a second in a 100K-file
    repo, and it runs the installed hooks. ``rows``: what :func:`memrepo.git.staged_blobs`
    says is staged, when the caller has just asked (each question reads the whole index,
    as big as the repo). ``how``: the route, when the caller has decided it.
    """
    with commit_lock(root):
        _commit_staged(root, paths, message, rows, how)


def _commit_staged(
    root: Path,
    paths: Sequence[str],
    message: str,
    rows: list[StagedRow] | None,
    how: Route | None,
) -> None:
    how = route(root) if how is None else how
    rows = staged_blobs(root) if rows is None else rows
    staged = {p for _status, path, new, _sha in rows for p in (path, new) if p}
    only = [] if staged <= set(paths) else ["--", *paths]
    person.wait_for_person(root)
    if only and how == "plumbing":  # someone else's staged work stays staged
        retry_locked(lambda: inline.commit_only(root, message, list(paths), rows))
        return
    if not only and how != "git":
        retry_locked(
            lambda: inline.commit(root, message, rows, git_writes=how == "git-no-hooks")
        )
        return
    retry_locked(
        lambda: git(["commit", "-q", "--no-edit", "-F", "-", *only], root, input=message)
    )
