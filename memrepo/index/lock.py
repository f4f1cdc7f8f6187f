"""One indexer at a time, and no update lost while another one runs.

A hook that finds the lock taken must not wait (it would block the commit), so it leaves
a *pending* mark and leaves; the holder re-checks the mark after releasing the lock and
runs again when it is there. Marking before trying the lock closes the gap: either the
hook gets the lock, or the holder sees the mark. A caller that can wait (``memory index``)
leaves no mark: it waits for the lock and runs its own pass, since the holder's pass may
not be the one it asked for (a rebuild).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: an O_EXCL lock file instead
    fcntl = None  # type: ignore[assignment]


class Busy(Exception):
    """Another indexer holds the lock."""


class IndexLock:
    def __init__(self, state: Path):
        self.state = state
        self.path = state / "index.lock"
        self.pending = state / "index.pending"
        self._fd: int | None = None

    def mark_pending(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        self.pending.touch()

    def take_pending(self) -> bool:
        try:
            self.pending.unlink()
            return True
        except FileNotFoundError:
            return False

    def acquire(self, wait: float = 0.0) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait
        while True:
            if self._try():
                return
            if time.monotonic() >= deadline:
                raise Busy(f"another indexer is running ({self.path})")
            time.sleep(0.05)

    def _try(self) -> bool:
        if fcntl is None:
            try:
                self._fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                return True
            except FileExistsError:
                return False
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        if fcntl is None:
            os.close(self._fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        else:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
        self._fd = None

    @contextlib.contextmanager
    def held(self, wait: float = 0.0) -> Iterator[None]:
        self.acquire(wait)
        try:
            yield
        finally:
            self.release()
