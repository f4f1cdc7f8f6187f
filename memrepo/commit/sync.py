"""``memory sync``: git remotes as the distributed engine (fetch, rebase, push, with retries).

Why rebase: the memory layout makes concurrent writers touch different files (one file per
session, per-day journals, union-merged event logs), so replaying local commits on top of
the remote is conflict-free in the common case and keeps history linear. When two writers
did change the same lines, nothing is resolved for them: the rebase is aborted, the branch
is left exactly as it was, and the message names the files. A push that loses a race with
another machine is simply retried (fetch, rebase, push again), and so is a fetch that fails
for a transient reason (the network), with the same backoff.

Knowledge and topic files merge with memrepo's merge driver (``.gitattributes``
``merge=memrepo``, :mod:`memrepo.commit.merge`): bullets both machines added are all kept,
a bullet both changed is kept twice (one struck through as superseded), frontmatter merges
key by key. The rebase defines the driver itself (``git -c merge.memrepo.driver=…``), so
a clone whose git config lacks it (a plain ``git clone``) merges the same way. What the
driver leaves in conflict (prose both sides changed, a scalar key both set) stops the sync.
After the rebase, the merged files both sides touched must still parse; a broken one is
treated as a conflict (branch reset to where it was), never pushed.

While it moves the work tree (fast-forward, rebase, reset) sync holds memrepo's commit
lock and the work tree's write gate (:func:`memrepo.worktree.writing`): the agent's
writers wait for it. A turn appended or a note written mid-rebase was lost to the
rebase's abort, and a session's commit made on its detached HEAD was left behind
(bench/torture/fleet.py). The fetch and the push run outside them.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from memrepo import documents, gitcrypt
from memrepo.commit import merge
from memrepo.commit.write import commit_lock
from memrepo.config import load_config
from memrepo.errors import FormatError, GitError, MemrepoError
from memrepo.git import git, git_dir, head, is_ancestor, read_blobs
from memrepo.worktree import TREE_HELD_ENV, tree_lock_path, writing

#: Push (and fetch) attempts before giving up when other machines keep winning the race
#: or the network keeps failing.
ATTEMPTS = 8
#: Where files merge line by line with both sides' lines kept (the merge driver, or git's
#: union driver in repos set up before it; repo-skeleton/dot-gitattributes): what sync
#: checks still parses after a rebase.
MERGED = ("knowledge/", "topics/")
#: git messages of a fetch that no retry can fix (lower case).
_PERMANENT_FETCH = ("does not appear to be a git repository", "repository not found",
                    "authentication failed", "permission denied", "invalid username or password",
                    "could not resolve host")


class SyncConflict(MemrepoError):
    """Local and remote commits changed the same lines; a person has to merge them."""

    def __init__(self, message: str, files: list[str]):
        super().__init__(message)
        self.files = files


@dataclass
class SyncResult:
    remote: str
    branch: str
    pulled: int  # commits brought in from the remote
    pushed: int  # local commits sent
    attempts: int

    @property
    def summary(self) -> str:
        if not self.pulled and not self.pushed:
            return f"up to date with {self.remote}/{self.branch}"
        return (f"pulled {self.pulled} and pushed {self.pushed} commit(s) "
                f"({self.remote}/{self.branch})")


def _settings(root: Path, remote: str | None, branch: str | None) -> tuple[str, str]:
    cfg = load_config(root)["git"]
    remote = remote or cfg.get("remote") or "origin"
    if remote not in git(["remote"], root).split():
        raise MemrepoError(
            f"no git remote named {remote!r}: add one with 'git remote add {remote} URL' "
            "(or set git.remote in memory-config.yaml)"
        )
    branch = branch or cfg.get("branch") or ""
    if not branch:
        branch = git(["symbolic-ref", "--short", "-q", "HEAD"], root, check=False).strip()
        if not branch:
            raise MemrepoError("HEAD is detached: check out a branch before 'memory sync'")
    return remote, branch


def _busy(root: Path) -> str | None:
    gd = git_dir(root)
    for name, what in (("rebase-merge", "a rebase"), ("rebase-apply", "a rebase or am"),
                       ("MERGE_HEAD", "a merge"), ("CHERRY_PICK_HEAD", "a cherry-pick")):
        if (gd / name).exists():
            return what
    return None


def _count(root: Path, spec: str) -> int:
    return int(git(["rev-list", "--count", spec], root).strip() or 0)


def _backoff(attempt: int) -> None:
    """Exponential backoff with jitter, so machines that collided do not collide again."""
    time.sleep(min(0.05 * 2**attempt, 1.0) * (0.5 + random.random()))


def _fetch(root: Path, remote: str, branch: str, tracking: str, attempts: int) -> bool:
    """Fetch ``branch`` into ``tracking``; False when the remote has no such branch yet.

    A failure is retried like a lost push race (the network comes back); one that no
    retry can fix (no such repository, authentication) fails at once.
    """
    for attempt in range(1, attempts + 1):
        try:
            git(["fetch", "-q", remote, f"+refs/heads/{branch}:{tracking}"], root)
            return True
        except GitError as exc:
            msg = str(exc)
            if "couldn't find remote ref" in msg:
                return False
            permanent = any(p in msg.lower() for p in _PERMANENT_FETCH)
            if permanent or attempt == attempts:
                said = "; ".join(ln.strip() for ln in msg.splitlines() if ln.strip())
                tries = "" if permanent else f" after {attempt} attempts"
                raise MemrepoError(
                    f"sync stopped: could not fetch from {remote}{tries}; nothing was changed "
                    f"locally. {said}"
                ) from None
        _backoff(attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _changed(root: Path, a: str, b: str) -> set[str]:
    out = git(["diff", "--name-only", "--no-renames", "-z", a, b, "--", *MERGED], root)
    return {p for p in out.split("\0") if p.endswith(".md")}


def _check_merges(root: Path, local: str, theirs: str, remote: str, branch: str,
                  env: dict[str, str] | None = None) -> None:
    """After a rebase: the line-merged files both sides changed must still parse.

    Otherwise reset the branch to ``local`` (where it was) and stop with a conflict.
    """
    base = git(["merge-base", local, theirs], root, check=False).strip()
    if not base:
        return
    both = sorted(_changed(root, base, local) & _changed(root, base, theirs))
    if not both:
        return
    blobs = gitcrypt.reveal_all(root, read_blobs(root, [f"HEAD:{p}" for p in both]))
    broken = []
    for path in both:
        data = blobs.get(f"HEAD:{path}")
        if data is None or gitcrypt.is_ciphertext(data):  # no key here: git merged it
            continue
        try:
            documents.parse_document(documents.decode(data, path), path)
        except FormatError as exc:
            broken.append(f"{path}:{exc.line or 1}: {exc.message}")
    if not broken:
        return
    git(["reset", "-q", "--keep", local], root, env=env)
    raise SyncConflict(
        f"sync stopped: your commits and {remote}/{branch} both changed the frontmatter of "
        f"{', '.join(p.split(':', 1)[0] for p in broken)}, and merging their lines made it "
        f"invalid ({'; '.join(broken)}). Nothing was lost: your branch is as it was. Merge "
        f"by hand: 'git rebase {remote}/{branch}', fix those files, 'git add' them, "
        "'git rebase --continue', then 'memory sync' again.",
        [p.split(":", 1)[0] for p in broken],
    )


def _integrate(root: Path, upstream: str, remote: str, branch: str) -> int:
    """Bring ``upstream`` in (fast-forward, or rebase local commits onto it) with the
    work tree to itself: no memrepo commit or write beside it."""
    held = tree_lock_path(root)
    env = {TREE_HELD_ENV: str(held)} if held is not None else None
    with commit_lock(root), writing(root, exclusive=True):
        return _move(root, upstream, remote, branch, env)


def _move(root: Path, upstream: str, remote: str, branch: str,
          env: dict[str, str] | None) -> int:
    """:func:`_integrate`'s steps (``env``: for the git that runs the merge driver and
    the hooks, which write inside the sync's hold)."""
    local = head(root)
    theirs = git(["rev-parse", upstream], root).strip()
    if local is None:
        git(["reset", "-q", "--keep", theirs], root, env=env)
        return _count(root, theirs)
    if is_ancestor(root, theirs, local):
        return 0
    pulled = _count(root, f"{local}..{theirs}")
    if is_ancestor(root, local, theirs):
        git(["merge", "-q", "--ff-only", theirs], root, env=env)
        return pulled
    try:
        git([*merge.git_config_args(), "rebase", "-q", "--autostash", theirs], root, env=env)
    except GitError as exc:
        unmerged = git(["diff", "--name-only", "--diff-filter=U"], root, check=False)
        conflicted = [p for p in unmerged.split("\n") if p]
        git(["rebase", "--abort"], root, check=False, env=env)
        if conflicted:
            raise SyncConflict(
                f"sync stopped: your commits and {remote}/{branch} changed the same lines in "
                f"{', '.join(conflicted)}. Nothing was lost and nothing was resolved for you: "
                f"the rebase was aborted and your branch is as it was. To merge by hand: "
                f"'git rebase {remote}/{branch}', edit those files keeping both sides' text, "
                f"'git add' them, 'git rebase --continue', then 'memory sync' again.",
                conflicted,
            ) from None
        raise MemrepoError(
            f"sync stopped: rebasing onto {remote}/{branch} failed and was aborted; your "
            f"branch is as it was. git said: {exc}"
        ) from None
    _check_merges(root, local, theirs, remote, branch, env)
    return pulled


def sync(
    root: Path, remote: str | None = None, branch: str | None = None, attempts: int = ATTEMPTS
) -> SyncResult:
    """Fetch, rebase local commits onto the remote branch, push; retry lost push races."""
    remote, branch = _settings(root, remote, branch)
    busy = _busy(root)
    if busy:
        raise MemrepoError(f"{busy} is in progress: finish or abort it before 'memory sync'")
    tracking = f"refs/remotes/{remote}/{branch}"
    pulled_total = 0
    for attempt in range(1, attempts + 1):
        exists = _fetch(root, remote, branch, tracking, attempts)
        if exists:
            pulled_total += _integrate(root, tracking, remote, branch)
        local = head(root)
        if local is None:
            return SyncResult(remote, branch, pulled_total, 0, attempt)
        ahead = _count(root, f"{tracking}..{local}") if exists else _count(root, local)
        if not ahead:
            return SyncResult(remote, branch, pulled_total, 0, attempt)
        try:
            git(["push", "-q", remote, f"{local}:refs/heads/{branch}"], root)
            git(["update-ref", tracking, local], root, check=False)
            return SyncResult(remote, branch, pulled_total, ahead, attempt)
        except GitError as exc:
            msg = str(exc)
            if "hook declined" in msg or "pre-receive" in msg:
                remote_says = [ln for ln in msg.split("\n") if ln.startswith("remote:")]
                raise MemrepoError(
                    f"{remote} refused the push (its pre-receive check):\n"
                    + "\n".join(remote_says or [msg])
                ) from None
            if not any(s in msg for s in ("fetch first", "non-fast-forward", "rejected",
                                          "failed to update ref", "cannot lock ref")):
                raise
        _backoff(attempt)
    raise MemrepoError(
        f"gave up pushing to {remote}/{branch} after {attempts} attempts: other machines kept "
        "pushing first; run 'memory sync' again"
    )
