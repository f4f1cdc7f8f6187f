"""One indexer at a time, and no update lost while another one runs.

A hook that finds the lock taken must not wait (it would block the commit), so it leaves
a *pending* mark and leaves; the holder re-checks the mark after releasing the lock and
runs again when it is there. Marking before trying the lock closes the gap: either the
hook gets the lock, or the holder sees the mark. A caller that can wait (``memory index``)
leaves no mark: it waits for the lock and runs its own pass, since the holder's pass may
not be the one it asked for (a rebuild).

The lock itself is :func:`memrepo.locks.file_lock`, the one every writer takes.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from memrepo.locks import LockBusy, file_lock


class Busy(Exception):
    """Another indexer holds the lock. Not a LockBusy: a job or session lock that catches
    its own LockBusy around a body that indexes must not read this as its own."""


class IndexLock:
    """``index.lock`` held between :meth:`acquire` and :meth:`release` (the indexer lets go
    and takes it again around its pending re-check, so this is not one ``with`` block)."""

    def __init__(self, state: Path):
        self.state = state
        self.path = state / "index.lock"
        self.pending = state / "index.pending"
        self._held: contextlib.ExitStack | None = None

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
        """Take the lock, waiting up to ``wait`` seconds (0: not at all), else Busy."""
        held = contextlib.ExitStack()
        try:
            held.enter_context(file_lock(self.path, wait, poll=0.05))
        except LockBusy:
            raise Busy(f"another indexer is running ({self.path})") from None
        self._held = held

    def release(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            held.close()
