"""``memory sync``: git remotes as the distributed engine (fetch, rebase, push, with retries).

Why rebase: the memory layout makes concurrent writers touch different files (one file per
session, per-day journals, union-merged event logs), so replaying local commits on top of
the remote is conflict-free in the common case and keeps history linear. When two writers
did change the same lines, nothing is resolved for them: the rebase is aborted, the branch
is left exactly as it was, and the message names the files. A push that loses a race with
another machine is simply retried (fetch, rebase, push again).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from memrepo.errors import GitError, MemrepoError
from memrepo.git import git, git_dir, head

#: Push attempts before giving up when other machines keep winning the race.
ATTEMPTS = 8


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
    from memrepo.config import load_config

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


def _ancestor_rc(root: Path, a: str, b: str) -> bool:
    """True when commit ``a`` is an ancestor of (or equal to) ``b``."""
    import subprocess

    return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=root,
                          capture_output=True).returncode == 0


def _integrate(root: Path, upstream: str, remote: str, branch: str) -> int:
    """Bring ``upstream`` in: fast-forward, or rebase local commits onto it."""
    local = head(root)
    theirs = git(["rev-parse", upstream], root).strip()
    if local is None:
        git(["reset", "-q", "--keep", theirs], root)
        return _count(root, theirs)
    if _ancestor_rc(root, theirs, local):
        return 0
    pulled = _count(root, f"{local}..{theirs}")
    if _ancestor_rc(root, local, theirs):
        git(["merge", "-q", "--ff-only", theirs], root)
        return pulled
    try:
        git(["rebase", "-q", "--autostash", theirs], root)
    except GitError as exc:
        unmerged = git(["diff", "--name-only", "--diff-filter=U"], root, check=False)
        conflicted = [p for p in unmerged.split("\n") if p]
        git(["rebase", "--abort"], root, check=False)
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
        try:
            git(["fetch", "-q", remote, f"+refs/heads/{branch}:{tracking}"], root)
            exists = True
        except GitError as exc:
            if "couldn't find remote ref" not in str(exc):
                raise
            exists = False
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
        time.sleep(min(0.05 * 2**attempt, 1.0) * (0.5 + random.random()))
    raise MemrepoError(
        f"gave up pushing to {remote}/{branch} after {attempts} attempts: other machines kept "
        "pushing first; run 'memory sync' again"
    )
