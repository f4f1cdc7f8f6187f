"""A person's ``git commit`` in progress: memrepo's own commits wait for it, never break it.

``git commit`` reads HEAD when it starts and moves HEAD from that value when it ends,
after its pre-commit hook (memrepo's validators, and whatever the person chained first)
has run. A memrepo commit landing in between made git refuse the person's commit
("cannot lock ref 'HEAD'"). Git says a commit is in progress in two ways:

- ``index.lock`` exists: ``git commit -a`` or ``git commit PATHS`` hold it from start to
  end, as do ``git add`` and the like for their few ms;
- a plain ``git commit`` holds no lock while its hook runs: the process itself is the
  only sign, so on Linux ``/proc`` is asked for a ``git commit`` (or ``merge``,
  ``cherry-pick``, ``revert``) whose working directory is in this work tree, not one
  of this process's ancestors (memrepo inside that commit's own hook).

:func:`land` waits, bounded by :data:`PERSON_WAIT`, until neither is there. The person's
own ``git add`` or ``git commit`` fails at once when it finds ``index.lock`` taken, so
memrepo holds the lock for as little as it can: the index is brought up to date and the
commit object written on a private copy of the index, unlocked; then ``index.lock`` is
taken (``O_CREAT|O_EXCL``, as git does) only to check that the index is still the one
copied and no commit started, move HEAD and put the copy in place. A refused commit
leaves the index as it was. The lock holds ``memrepo PID``: a memrepo killed while
holding it leaves a lock the next memrepo commit removes (a lock git took holds an
index, never that line).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from memrepo.errors import MemrepoError
from memrepo.git import git_dir

T = TypeVar("T")

#: How long a memrepo commit waits for a person's commit in progress (its pre-commit
#: hook, the editor for its message); then the commit is refused, its files left on disk.
PERSON_WAIT = 60.0
POLL = 0.05
#: What memrepo writes into the index.lock it holds, before its pid.
OWNER = b"memrepo "
#: The private copies of the index, in the git directory: ``memrepo-index.PID.THREAD``.
COPY_PREFIX = "memrepo-index."
#: git subcommands that move HEAD from the value they read when they started.
MOVERS = frozenset({b"commit", b"merge", b"cherry-pick", b"revert"})
#: git's global options that take their value as the next argument.
_VALUED = frozenset({b"-C", b"-c", b"--git-dir", b"--work-tree", b"--namespace",
                     b"--config-env", b"--super-prefix"})


class PersonCommitting(MemrepoError):
    """A commit in progress in this work tree outlasted :data:`PERSON_WAIT`."""


def index_path(root: Path) -> Path:
    """The index git would use in ``root`` (``GIT_INDEX_FILE`` when it is set)."""
    env = os.environ.get("GIT_INDEX_FILE")
    if env:
        return (Path(root) / env).resolve()
    return git_dir(root) / "index"


def committing(root: Path, index: Path | None = None) -> str | None:
    """What is committing in ``root`` now (index.lock held, a ``git commit`` process), or
    None. A stale lock of a killed memrepo is removed on the way."""
    index = index_path(root) if index is None else index
    lock = index.with_name(index.name + ".lock")
    if lock.exists() and not _take_back_stale(lock):
        return f"{lock} exists (another git process)"
    pids = git_commits(root)
    if pids:
        return f"a git commit in progress (pid {pids[0]})"
    return None


def wait_for_person(root: Path, wait: float | None = None, index: Path | None = None) -> None:
    """Return once nothing is committing in ``root``; PersonCommitting after ``wait``."""
    wait = PERSON_WAIT if wait is None else wait
    deadline = time.monotonic() + wait
    while (what := committing(root, index)) is not None:
        if time.monotonic() >= deadline:
            raise PersonCommitting(
                f"{root}: {what} for over {wait:g} s; memrepo's commit waits for it and "
                "gave up (the files are on disk: `memory commit` commits them)")
        time.sleep(POLL)


#: ``move_head(built)``: a context manager that makes the HEAD update ready (its ref
#: locked and checked) and yields the call that commits it.
HeadMove = Callable[[T], contextlib.AbstractContextManager[Callable[[], None]]]


def land(root: Path, build: Callable[[dict[str, str]], T], move_head: HeadMove[T],
         wait: float | None = None) -> T:
    """``build(env)`` on a private copy of the index (``env`` names it); the HEAD update
    made ready; then, holding index.lock only for it, the update committed and the copy
    put in place. When the index changed meanwhile (a person's ``git add``), build
    again on the new one."""
    wait = PERSON_WAIT if wait is None else wait
    deadline = time.monotonic() + wait
    index = index_path(root)
    if not index.exists():  # nothing to copy: git takes its locks, as it always did
        wait_for_person(root, wait, index)
        built = build({})
        with move_head(built) as commit:
            commit()
        return built
    lock = index.with_name(index.name + ".lock")
    copy = index.with_name(f"{COPY_PREFIX}{os.getpid()}.{threading.get_ident()}")
    _drop_stale_copies(index.parent)
    try:
        while True:
            wait_for_person(root, max(deadline - time.monotonic(), 0.0), index)
            before = _stamp(index)
            # with the index's mtime: git re-reads an entry whose file is not older than
            # the index ("racily clean"); a fresh mtime would make a same-size file written
            # in the same clock tick look unchanged, and the index keep its old blob
            shutil.copy2(index, copy)
            built = build({"GIT_INDEX_FILE": str(copy)})
            with move_head(built) as commit, _taken(lock) as taken:
                if taken and _stamp(index) == before and not git_commits(root):
                    commit()
                    os.replace(copy, index)
                    return built
            if time.monotonic() >= deadline:
                raise PersonCommitting(f"{root}: the index kept changing or {lock} stayed "
                                       f"busy for over {wait:g} s")
            time.sleep(POLL)
    finally:
        copy.unlink(missing_ok=True)


@contextlib.contextmanager
def _taken(lock: Path) -> Iterator[bool]:
    """Hold ``lock`` (True), or False when someone else holds it."""
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        yield False
        return
    try:
        os.write(fd, OWNER + str(os.getpid()).encode() + b"\n")
        yield True
    finally:
        os.close(fd)
        lock.unlink(missing_ok=True)


def _stamp(index: Path) -> tuple[int, int, int, int] | None:
    try:
        st = index.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def left_by_killed(root: Path) -> Path | None:
    """The index.lock a memrepo killed while committing left (``memory doctor``), or
    None: git's own locks, and a live memrepo's, are not it."""
    lock = index_path(root).with_name(index_path(root).name + ".lock")
    return lock if _killed_owner(lock) else None


def _killed_owner(lock: Path) -> bool:
    """``lock`` says ``memrepo PID`` and PID is gone."""
    try:
        with lock.open("rb") as fh:
            head = fh.read(64)
        return head.startswith(OWNER) and not _alive(int(head[len(OWNER):].split()[0]))
    except (OSError, ValueError, IndexError):
        return False


def _take_back_stale(lock: Path) -> bool:
    """Remove ``lock`` when a memrepo that died holds it. True when the lock is gone."""
    if _killed_owner(lock):
        lock.unlink(missing_ok=True)
    return not lock.exists()


def _drop_stale_copies(folder: Path) -> None:
    """The index copies of memrepo processes that were killed while committing."""
    for old in folder.glob(COPY_PREFIX + "*"):
        try:
            pid = int(old.name[len(COPY_PREFIX):].split(".")[0])
        except ValueError:
            continue
        if not _alive(pid):
            old.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- the git commits running in a work tree (Linux: /proc) ------------------------------


def git_commits(root: Path) -> list[int]:
    """The pids of the git commits (and merges, cherry-picks, reverts) running in
    ``root``'s work tree, not counting this process's ancestors; [] without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    top = os.path.realpath(root)
    mine = _ancestors()
    out = []
    for name in entries:
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if os.path.basename(argv[0]) != b"git" or _subcommand(argv[1:]) not in MOVERS:
                continue
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if cwd == top or cwd.startswith(top.rstrip("/") + "/"):
            out.append(int(name))
    return out


def _subcommand(args: list[bytes]) -> bytes | None:
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith(b"-"):
            return arg
    return None


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids
