"""Git plumbing: the real ``git`` binary, so users' config, hooks and LFS behave as they expect."""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from memrepo.clock import git_dates
from memrepo.errors import GitError

#: The id of git's empty tree (SHA-1): what a root commit is compared with.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: How long to wait for another git process's index.lock before giving up.
LOCK_WAIT_SECONDS = 15.0

T = TypeVar("T")


#: memrepo's reads (status, diff) never take index.lock to save refreshed stat data: a
#: person's ``git add`` / ``git commit`` starting then would find it taken and fail.
NO_OPTIONAL_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}


def git(
    args: Sequence[str],
    cwd: str | Path,
    *,
    input: bytes | str | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> str:
    """Run ``git ARGS`` in ``cwd`` and return stdout; raise GitError with git's own message."""
    return git_bytes(args, cwd, input=input, check=check, env=env).decode("utf-8", "replace")


def git_bytes(
    args: Sequence[str],
    cwd: str | Path,
    *,
    input: bytes | str | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> bytes:
    if isinstance(input, str):
        input = input.encode("utf-8")
    full_env = {**git_dates(), **os.environ, **NO_OPTIONAL_LOCKS, **(env or {})}
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, input=input, capture_output=True, env=full_env
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        msg = (
            proc.stderr.decode("utf-8", "replace").strip()
            or proc.stdout.decode("utf-8", "replace").strip()
        )
        raise GitError(f"git {' '.join(args[:2])} failed: {msg}")
    return proc.stdout


def retry_locked(fn: Callable[[], T], wait: float = LOCK_WAIT_SECONDS) -> T:
    """Run ``fn`` (git calls), retrying with backoff while another git holds
    ``.git/index.lock``: a person's ``git status`` must not fail a memrepo writer."""
    deadline = time.monotonic() + wait
    delay = 0.02
    while True:
        try:
            return fn()
        except GitError as exc:
            if "index.lock" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.5)


def is_ancestor(root: str | Path, a: str, b: str) -> bool:
    """Whether commit ``a`` is an ancestor of (or the same as) ``b``; False when either
    is not a commit git knows."""
    try:
        git(["merge-base", "--is-ancestor", a, b], root)
    except GitError:
        return False
    return True


def toplevel(path: str | Path) -> Path | None:
    """The work-tree root containing ``path``, or None when it is not inside a git repo."""
    try:
        out = git(["rev-parse", "--show-toplevel"], path)
    except GitError:
        return None
    return Path(out.strip())


def git_dir(root: str | Path) -> Path:
    """The repository's git directory (``.git`` or a worktree's gitdir), absolute."""
    out = git(["rev-parse", "--absolute-git-dir"], root).strip()
    return Path(out)


def git_file_dir(root: str | Path) -> Path | None:
    """The git directory of the work tree at ``root`` read from disk, without running git
    (``.git`` itself, or the ``gitdir:`` a linked worktree's ``.git`` file names); None
    when ``root`` has no ``.git``. For cheap checks on every command."""
    dot = Path(root) / ".git"
    if dot.is_dir():
        return dot
    try:
        first = dot.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:"):].strip())
    return target if target.is_absolute() else Path(root) / target


def hooks_dir(root: str | Path) -> Path:
    """Where git looks for hooks (honours core.hooksPath)."""
    out = git(["rev-parse", "--git-path", "hooks"], root).strip()
    p = Path(out)
    return p if p.is_absolute() else Path(root) / p


def plain_path(path: str) -> bool:
    """A repo-relative path git takes as it is: no empty, ``.``, ``..`` or ``.git`` part,
    nothing git's stdin protocols read otherwise (a leading quote, CR, LF, NUL), UTF-8.

    Anything else is normalised, refused or misread by one git command or another.
    """
    if not path or path.startswith('"') or any(c in path for c in "\r\n\0"):
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a name that was not UTF-8 (surrogate escapes)
        return False
    return all(part not in ("", ".", "..") and part.lower() != ".git" for part in path.split("/"))


def tracked_count(root: str | Path) -> int:
    """How many files git tracks in ``root`` (0 outside a repository)."""
    return git(["ls-files", "-z"], root, check=False).count("\0")


def head(root: str | Path) -> str | None:
    """The commit HEAD points at, or None on an unborn branch."""
    try:
        return git(["rev-parse", "--verify", "-q", "HEAD"], root).strip() or None
    except GitError:
        return None


def read_blobs(root: str | Path, revs: Iterable[str]) -> dict[str, bytes | None]:
    """Read many objects (``HEAD:path``, ``:path``...) in one ``git cat-file --batch`` call.

    Missing objects map to None. One process whatever the number of files, so hooks
    pay for what the commit touches, not for the repo.
    """
    revs = list(revs)
    if not revs:
        return {}
    out = git_bytes(["cat-file", "--batch"], root, input="".join(r + "\n" for r in revs))
    result: dict[str, bytes | None] = {}
    pos = 0
    for rev in revs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("utf-8", "replace")
        pos = nl + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            result[rev] = None
            continue
        size = int(header.rsplit(" ", 1)[1])
        result[rev] = out[pos : pos + size]
        pos += size + 1
    return result


def staged_status(root: str | Path, *pathspecs: str) -> list[tuple[str, str, str | None]]:
    """Staged changes against HEAD as (status letter, path, new path for renames); none
    without a HEAD (an unborn branch, or not a repository)."""
    if head(root) is None:
        return []
    out = git(
        ["diff", "--cached", "--name-status", "-M", "-z", "--no-ext-diff", "HEAD", "--",
         *pathspecs],
        root,
    )
    return parse_name_status(out)


StagedRow = tuple[str, str, "str | None", str]
#: (status letter, path, new path for R/C, new blob sha, new mode): a ``--raw -z`` record.
RawRow = tuple[str, str, "str | None", str, str]


def staged_entries(root: str | Path, env: dict[str, str] | None = None) -> list[RawRow]:
    """Every staged change against HEAD (or, on an unborn branch, everything staged), with
    the staged blob sha and mode (a symlink is ``120000``, a submodule ``160000``).

    The blob shas let the content be read by sha: ``cat-file`` then never loads the index,
    which costs as much as the repo is big (bench/perf/bench_commit.py).
    """
    against = ["HEAD"] if head(root) is not None else []
    out = git(["diff", "--cached", "--raw", "-M", "-z", "--no-ext-diff", "--no-abbrev",
               *against], root, env=env)
    return parse_raw(out)


def staged_blobs(root: str | Path, env: dict[str, str] | None = None) -> list[StagedRow]:
    """:func:`staged_entries` without the modes: (status, path, new path, blob sha)."""
    return [(st, path, new, sha) for st, path, new, sha, _mode in staged_entries(root, env)]


def parse_name_status(out: str) -> list[tuple[str, str, str | None]]:
    """Rows of ``--name-status -z`` output as (status letter, path, new path for R/C)."""
    return [(st, path, new) for st, path, new, _sha, _mode in _diff_rows(out)]


def parse_raw(out: str) -> list[RawRow]:
    """Rows of ``git diff --raw -z`` / ``diff-tree --raw -z`` output (:data:`RawRow`)."""
    return [(st, path, new, sha or "", mode or "")
            for st, path, new, sha, mode in _diff_rows(out)]


def _diff_rows(out: str) -> list[tuple[str, str, str | None, str | None, str | None]]:
    """``-z`` records of ``--name-status`` or ``--raw``: (status letter, path, new path
    for R/C, and for --raw the new blob sha and the new mode)."""
    fields = out.split("\0")
    rows: list[tuple[str, str, str | None, str | None, str | None]] = []
    i = 0
    while i < len(fields) - 1:
        meta = fields[i].split()  # "M", "R087" or ":100644 120000 <old> <new> T"
        if not meta:
            break
        status = meta[-1][:1]
        sha, mode = (meta[3], meta[1]) if len(meta) >= 5 else (None, None)
        if status in ("R", "C"):
            rows.append((status, fields[i + 1], fields[i + 2], sha, mode))
            i += 3
        else:
            rows.append((status, fields[i + 1], None, sha, mode))
            i += 2
    return rows
