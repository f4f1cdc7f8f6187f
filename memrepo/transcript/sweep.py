"""``memory capture sweep``: every Claude Code session log no hook captured, or grown since.

Claude Code deletes its logs after 30 days, and a session whose hooks did not run (or that
crashed) would be lost: each log under its projects folder that grew since it was last
read is followed (:func:`memrepo.transcript.follow.follow`), and a session idle for
``idle_close`` is closed and committed. The caller says which logs are this repo's, and
in which namespace their turns are written (``owner``:
:func:`memrepo.agents.worker.log_owner` asks the hooks Claude Code runs in the log's
folder).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo.errors import MemrepoError
from memrepo.transcript.follow import (
    IDLE_CLOSE,
    LOCK_WAIT,
    PROGRESS_DIR,
    Followed,
    Progress,
    default_log_dir,
    follow,
    load_progress,
)
from memrepo.transcript.logfile import LogRefused, open_log

if TYPE_CHECKING:
    from memrepo.transcript.capture import AfterEnd

#: The sweep's question for a log: (this repo's?, the scope its turns are written in)
Owner = Callable[[Path], tuple[bool, contextlib.AbstractContextManager[object]]]




def session_logs(base: Path) -> list[Path]:
    """The session logs under a Claude Code projects folder (``<project>/<id>.jsonl``;
    sub-agents' logs, one level further down, are part of their session's); a symlink is
    none (a log is never read through one)."""
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("*/*.jsonl") if p.is_file() and not p.is_symlink())


def sweep(root: Path, base: Path | None = None, *, idle_close: dt.timedelta = IDLE_CLOSE,
          now: float | None = None, lock_wait: float = LOCK_WAIT,
          after_end: AfterEnd | None = None, owner: Owner | None = None
          ) -> list[tuple[Followed | None, str]]:
    """Follow every log under ``base`` that grew since it was last read, and close the
    sessions whose log has been idle for ``idle_close``; (result, error) per log touched.
    ``after_end`` as for :func:`follow`; ``owner(log)``: whether the log is this repo's,
    and the scope (a namespace) its turns are written in."""
    now = time.time() if now is None else now
    out: list[tuple[Followed | None, str]] = []
    for log in session_logs(base or default_log_dir()):
        try:
            st = log.stat()
        except OSError:
            continue
        idle = now - st.st_mtime >= idle_close.total_seconds()
        p = load_progress(root, log)
        if p is None and st.st_size == 0:
            continue
        if p is not None and st.st_size <= p.size + _tail(log, p) and not (idle and p.open):
            continue  # nothing new (a half-written last line is read next time)
        last = dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc)
        mine, scope = owner(log) if owner else (True, contextlib.nullcontext())
        if not mine:
            continue
        try:
            with scope:
                done = follow(root, log, final=idle, lock_wait=lock_wait, ended=last,
                              after_end=after_end)
        except MemrepoError as exc:
            out.append((None, f"{log}: {exc}"))
            continue
        if done.appended or done.closed or done.note:
            out.append((done, ""))
    for gone in _vanished(root):  # deleted by the agent (30 days) while its session was open
        try:
            out.append((follow(root, gone, final=True, lock_wait=lock_wait,
                               after_end=after_end), ""))
        except MemrepoError as exc:
            out.append((None, f"{gone}: {exc}"))
    return out


def _vanished(root: Path) -> list[Path]:
    """Logs whose session is open here but whose file is gone."""
    out = []
    for f in sorted((root / PROGRESS_DIR).glob("*.json")):
        try:
            p = Progress(**json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            continue
        if p.open and not Path(p.log).exists():
            out.append(Path(p.log))
    return out


def _tail(log: Path, p: Progress) -> int:
    """Bytes after the last whole line that was read (a line still being written)."""
    try:
        with open_log(log) as f:
            rest = f.read(p.size, 1 << 20)
    except (OSError, LogRefused):
        return 0
    return len(rest) if b"\n" not in rest else 0
