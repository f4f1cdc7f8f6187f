"""An open capture session: its state file, lock and tail record, and its transcript.

A capture is many short processes (one ``capture append`` per turn), so what a session
needs is kept in a small JSON state file under ``.memrepo/sessions/`` (gitignored): the
hot path reads it instead of parsing config or YAML. A lost or damaged state file is
rebuilt from the open transcript on disk. Every write to a session happens under its
per-session lock (:func:`session_lock`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import documents, layout
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.git import git
from memrepo.layout import SESSIONS_DIR
from memrepo.locks import LockBusy, file_lock
from memrepo.transcript.render import offset_label, resolve_timezone

_SID = re.compile(r"^[a-z0-9][a-z0-9._-]*$", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Longest session id: it becomes part of file names (``HHMM-<id>-<slug>.md``, state files).
MAX_SID = 100


@dataclass
class OpenSession:
    """What an open session needs between processes (kept in .memrepo/sessions/<id>.json)."""

    session_id: str
    path: str  # repo-relative transcript path
    timezone: str
    allowlist: list[str] = field(default_factory=list)
    provisional_slug: bool = False
    #: ``open``, or ``closing`` once ``end`` has begun: ``closing_path`` (the closed
    #: transcript's path) is recorded before that file is written, so a restarted ``end``
    #: knows what is left to do.
    phase: str = "open"
    closing_path: str | None = None
    #: The size the open transcript may reach (validation.max_file_kb less END_MARGIN);
    #: None in state files written before it was kept (then read from the config).
    max_bytes: int | None = None

    @property
    def tz(self) -> dt.tzinfo:
        return resolve_timezone(self.timezone)[0]


def _state_file(root: Path, session_id: str) -> Path:
    return root / SESSIONS_DIR / f"{session_id}.json"


def _lock_file(root: Path, session_id: str) -> Path:
    return root / SESSIONS_DIR / f"{session_id}.lock"


def _tail_file(root: Path, session_id: str) -> Path:
    return root / SESSIONS_DIR / f"{session_id}.tail"


def _check_sid(session_id: str | None) -> str:
    """``session_id`` when it is safe in a file name, else an error saying what is wrong."""
    sid = session_id if isinstance(session_id, str) else ""
    shown = repr(sid if len(sid) <= 40 else sid[:40] + "…")
    why = None
    if not sid:
        why = "is empty"
    elif "/" in sid or "\\" in sid:
        why = "contains a path separator"
    elif ".." in sid:
        why = "contains '..'"
    elif _CONTROL.search(sid):
        why = "contains a control character"
    elif len(sid) > MAX_SID:
        why = f"is {len(sid)} characters long (at most {MAX_SID})"
    elif not _SID.match(sid):
        why = "must be letters, digits, '.', '_' or '-', starting with a letter or digit"
    if why:
        raise MemrepoError(f"session id {shown} {why}")
    return sid


@contextmanager
def session_lock(root: Path, session_id: str, timeout: float = 30.0) -> Iterator[None]:
    """Exclusive per-session lock, so appends from many processes never interleave."""
    try:
        with file_lock(_lock_file(root, session_id), wait=timeout, poll=0.002):
            yield
    except LockBusy:
        raise MemrepoError(f"session {session_id} is locked by another process") from None


def save_session(root: Path, session: OpenSession) -> None:
    atomic_write(_state_file(root, session.session_id), json.dumps(session.__dict__, indent=1),
                 root=root)


def load_session(root: Path, session_id: str) -> OpenSession:
    """The open session ``session_id``: from its state file, else found on disk."""
    _check_sid(session_id)
    try:
        data = json.loads(_state_file(root, session_id).read_text(encoding="utf-8"))
        session = OpenSession(**data)
    except FileNotFoundError:
        pass
    except (ValueError, TypeError):
        pass  # a damaged state file: rebuild it from the transcript
    else:
        if session.phase == "open" and not (root / session.path).is_file():
            raise _missing(root, session)
        return session
    path = find_open_transcript(root, session_id)
    if path is None:
        raise MemrepoError(
            f"no open session {session_id!r}: start one with 'memory capture start'"
        )
    return _session_from_transcript(root, path)


def _forget(root: Path, session_id: str) -> None:
    """The session is over: its state and tail record go (the lock file stays, see end)."""
    _state_file(root, session_id).unlink(missing_ok=True)
    _tail_file(root, session_id).unlink(missing_ok=True)


def _missing(root: Path, session: OpenSession) -> MemrepoError:
    """The error for a session whose transcript file is gone, with the way out."""
    sid, rel = session.session_id, session.path
    other = find_transcript(root, sid)
    if other and other != rel:  # an `end` that died between renaming and committing
        hint = (f"the session was closed as {other} ('memory commit' commits it); forget the "
                f"session by deleting {SESSIONS_DIR}/{sid}.json")
    else:
        hint = (f"restore it ('git restore -- {rel}' if it was committed), or forget the "
                f"session by deleting {SESSIONS_DIR}/{sid}.json")
    return MemrepoError(f"session {sid}: transcript {rel} is missing; {hint}")


def find_open_transcript(root: Path, session_id: str) -> str | None:
    """The transcript of ``session_id`` that has no ``ended`` yet (a crash leaves these)."""
    for full in sorted((root / layout.TRANSCRIPT_ROOT).glob(f"*/*/*/????-{session_id}-*.md")):
        rel = full.relative_to(root).as_posix()
        try:
            doc = documents.read_document(full, rel)
        except MemrepoError:
            continue
        if doc.meta.get("session_id") == session_id and doc.meta.get("ended") is None:
            return rel
    return None


def find_transcript(root: Path, session_id: str, started: dt.datetime | None = None) -> str | None:
    """Any transcript of ``session_id`` (the re-import check): its day first, then git's index."""
    if started is not None:
        day = root / f"{layout.TRANSCRIPT_ROOT}{started:%Y/%m/%d}"
        for full in day.glob(f"????-{session_id}-*.md"):
            return full.relative_to(root).as_posix()
    pattern = f":(glob){layout.TRANSCRIPT_ROOT}**/*-{session_id}-*.md"
    out = git(["ls-files", "-z", "--", pattern], root)
    hits = [p for p in out.split("\0") if p]
    if hits:
        return hits[0]
    for full in (root / layout.TRANSCRIPT_ROOT).glob(f"*/*/*/????-{session_id}-*.md"):
        return full.relative_to(root).as_posix()
    return None


def _session_from_transcript(root: Path, rel: str) -> OpenSession:
    doc = documents.read_document(root / rel, rel)
    tzname = doc.meta.get("timezone")
    if not isinstance(tzname, str):
        started = documents.parse_datetime(doc.meta.get("started"))
        off = started.utcoffset() if started else None
        tzname = offset_label(off or dt.timedelta())
    return OpenSession(
        session_id=str(doc.meta["session_id"]),
        path=rel,
        timezone=tzname,
        allowlist=secrets_allowlist(root),
        provisional_slug=False,
    )


def open_sessions(root: Path) -> list[OpenSession]:
    """Every session with a state file (started and not ended on this machine)."""
    out = []
    for f in sorted((root / SESSIONS_DIR).glob("*.json")):
        try:
            out.append(OpenSession(**json.loads(f.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return out


def secrets_allowlist(root: Path) -> list[str]:
    """The repo's configured secrets allowlist (validation.secrets_allowlist)."""
    from memrepo.config import load_config

    return list(load_config(root)["validation"]["secrets_allowlist"])


def _is_closed(full: Path) -> bool:
    """Whether the transcript's frontmatter has an ``ended`` (read from its first 4 KB)."""
    with full.open("rb") as fh:
        head = fh.read(4096)
    front = head.split(b"\n---", 1)[0] if head.startswith(b"---") else b""
    return b"\nended:" in front
