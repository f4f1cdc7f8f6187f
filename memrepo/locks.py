"""One advisory file lock for every writer that must run alone (sessions, jobs, indexer).

flock where the OS has it (released by the kernel when the process dies, so a crash
never leaves a stale lock); an ``O_EXCL`` lock file elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class LockBusy(Exception):
    """Another process holds the lock and ``wait`` ran out."""


def try_lock(path: Path, mode: int = 0o644, shared: bool = False) -> int | None:
    """An fd holding the lock on ``path`` now, or None when another process holds it
    (the caller closes the fd to release it). ``shared``: held beside other shared
    holders, never beside an exclusive one (without flock: exclusive)."""
    if fcntl is None:  # pragma: no cover - Windows
        try:
            return os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return None
    fd = os.open(path, os.O_CREAT | os.O_RDWR, mode)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def file_lock(path: Path, wait: float = 0.0, poll: float = 0.01, shared: bool = False
              ) -> Iterator[None]:
    """Hold a lock on ``path`` (exclusive, or ``shared``), waiting up to ``wait``
    seconds, else LockBusy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    while (fd := try_lock(path, shared=shared)) is None:
        if time.monotonic() >= deadline:
            raise LockBusy(str(path))
        time.sleep(poll)
    try:
        yield
    finally:
        os.close(fd)  # closing releases a flock
        if fcntl is None:  # pragma: no cover - Windows
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
