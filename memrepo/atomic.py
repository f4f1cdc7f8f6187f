"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half.

A process killed between writing its temp file and renaming it leaves the temp file
(``.NAME.PID.XXXXXXXX.tmp``, beside the target): the writer's pid is in the name so that
``memory doctor`` can tell a leftover (:func:`leftover_tmp_files`) from a temp file a live
process is still writing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from pathlib import Path

from memrepo.worktree import check_write, writing

#: Opened with this, an append never goes through a symlink (ELOOP): a log or transcript
#: swapped for a link to a file outside the repo would have memory's lines written there
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: A temp file younger than this is never a leftover: its writer may still be at work.
TMP_GRACE = 600.0
#: Older than this, a temp file is a leftover even if a process with its pid runs (pids
#: are reused).
TMP_ABANDONED = 86400.0
#: Temp files of :func:`atomic_write` and of the index rebuild (``.memory.db.PID.tmp``).
_TMP = re.compile(r"^\..+?(?:\.(?P<pid>[0-9]+))?(?:\.(?P<rand>[a-z0-9_]{8}))?\.tmp$")


def atomic_write(path: str | Path, data: str | bytes, *, mode: int | None = None,
                 root: str | Path | None = None) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory, fsync, then rename.
    ``root``: the memory repo ``path`` is in, whose folders on the way may not be symlinks
    (:func:`memrepo.worktree.check_write`). A link at ``path`` itself is replaced, never
    written through."""
    path = Path(path)
    if root is None:
        _write(path, data, mode)
        return
    with writing(root):  # never while a sync's rebase moves the work tree
        check_write(root, path)
        _write(path, data, mode)


def _write(path: Path, data: str | bytes, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    import tempfile  # its imports cost start-up: only a process that writes pays them

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def append_lines(path: str | Path, data: bytes, root: str | Path | None = None) -> None:
    """Whole lines added to an append-only log in one ``O_APPEND`` write. A writer killed
    mid-line leaves a line with no newline; the next record would be glued to it and both
    lost to a JSON reader, so a file that does not end with a newline gets one first (in
    the same write). ``root``: as for :func:`atomic_write`."""
    if root is None:
        _append(path, data)
        return
    with writing(root):
        check_write(root, path)
        _append(path, data)


def _append(path: str | Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symlink, never written through", str(path)) from None
        raise
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def leftover_tmp_files(root: Path, grace: float = TMP_GRACE,
                       now: float | None = None) -> list[Path]:
    """Temp files of interrupted atomic writes under ``root`` (``.git`` aside): older than
    ``grace`` and written by a process that is gone (or older than TMP_ABANDONED)."""
    now = time.time() if now is None else now
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            m = _TMP.match(name)
            if m is None or not (m["pid"] or m["rand"]):
                continue  # a file of the user's own that happens to end in .tmp
            full = Path(folder) / name
            try:
                age = now - full.stat().st_mtime
            except OSError:
                continue
            pid = int(m["pid"]) if m["pid"] else None
            if age > TMP_ABANDONED or (age > grace and not _alive(pid)):
                out.append(full)
    return sorted(out)


def _alive(pid: int | None) -> bool:
    """Whether a process ``pid`` runs (False for no pid: nothing can own the file then)."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2**31  # someone else's process
    return True
