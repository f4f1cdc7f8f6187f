"""The transcript writer: one immutable, redacted markdown file per session (seed 000 §2.1, §8.2).

Sessions (state, locks), ``start`` / ``append`` / ``tool`` / ``attach`` / ``end``, whole
conversations written for the importers, and sessions a crashed agent left open. What the
text looks like is :mod:`memrepo.transcript.render`'s. Why it looks like this:

- Secrets are redacted in memory, before a byte reaches disk (principle 7), with the rules
  the pre-commit check uses (memrepo.secrets).
- Appends are one ``O_APPEND`` write under a per-session lock, so several processes writing
  one session never interleave (the frontmatter is written once at start and rewritten only
  at end, atomically). A write killed half way (SIGKILL, OOM) can still leave part of a
  turn, perhaps half a UTF-8 character: each write first records where it starts and how
  long it is (``<id>.tail``), and the next append, ``end`` or ``doctor --fix`` cuts such a
  torn turn off (:func:`repair_tail`); the turns acknowledged before it stay.
- Limits are checked when a turn is appended, never at ``end``: a transcript that grew
  past ``validation.max_file_kb`` could never be committed, so ``end`` could never finish.
- ``end`` is a small state machine kept in the state file: ``open`` -> ``closing`` (the
  closed file's path recorded before it is written) -> state removed after the commit. A
  process killed anywhere in between leaves a state the next ``end`` finishes, and an
  append to a closing or closed transcript is refused rather than breaking immutability.
- The hot path (``append``) reads a small JSON state file instead of parsing config or
  YAML: an agent calls it once per turn.
- Turn headers are ``HH:MM`` in the session's own time zone, named in the frontmatter
  (``timezone``) so anyone can convert them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo import layout
from memrepo.errors import MemrepoError
from memrepo.health import Check
from memrepo.locks import LockBusy, file_lock
from memrepo.secrets import redact
from memrepo.transcript.render import (
    PROVISIONAL_SLUG,
    TURN_LINES,
    Conversation,
    escape_content,
    first_messages,
    knowledge_lines,
    now_in,
    offset_label,
    prepare_attachment,
    redacted_tool_line,
    render_frontmatter,
    render_import,
    resolve_timezone,
    slug_from_messages,
    titled,
    turn_header,
)

if TYPE_CHECKING:
    from memrepo.repo import MemoryRepo

#: Where per-session state and locks live (gitignored by the skeleton's `.memrepo/`).
STATE_DIR = f"{layout.STATE_DIR}/sessions"
_ATTACHMENT = re.compile(r"^> \[attachment:(?P<path>attachments/[^\]]+)\]", re.MULTILINE)
_SID = re.compile(r"^[a-z0-9][a-z0-9._-]*$", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Longest session id: it becomes part of file names (``HHMM-<id>-<slug>.md``, state files).
MAX_SID = 100
#: Room kept below ``validation.max_file_kb`` for what ``end`` adds to the frontmatter
#: (end time, counts, knowledge changes); at most a quarter of the limit.
END_MARGIN = 16 * 1024
#: The tail record (see :func:`repair_tail`): fixed width, written with one ``pwrite``.
_TAIL_BYTES = 64
#: A transcript with no append for this long (a crashed agent) is reported by ``memory
#: doctor`` and closed by ``memory doctor --fix``. Not a config setting: a day is far beyond
#: any live session's pause, and closing early only ever costs a new session id.
STALE_AFTER = dt.timedelta(days=1)


# ---------------------------------------------------------------------------
# Session state and locking
# ---------------------------------------------------------------------------


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
    return root / STATE_DIR / f"{session_id}.json"


def _lock_file(root: Path, session_id: str) -> Path:
    return root / STATE_DIR / f"{session_id}.lock"


def _tail_file(root: Path, session_id: str) -> Path:
    return root / STATE_DIR / f"{session_id}.tail"


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
    from memrepo.atomic import atomic_write

    atomic_write(_state_file(root, session.session_id), json.dumps(session.__dict__, indent=1))


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
                f"session by deleting {STATE_DIR}/{sid}.json")
    else:
        hint = (f"restore it ('git restore -- {rel}' if it was committed), or forget the "
                f"session by deleting {STATE_DIR}/{sid}.json")
    return MemrepoError(f"session {sid}: transcript {rel} is missing; {hint}")


def find_open_transcript(root: Path, session_id: str) -> str | None:
    """The transcript of ``session_id`` that has no ``ended`` yet (a crash leaves these)."""
    from memrepo import documents

    for full in sorted((root / layout.TRANSCRIPT_ROOT).glob(f"*/*/*/????-{session_id}-*.md")):
        rel = full.relative_to(root).as_posix()
        try:
            doc = documents.read_document(full, rel)
        except MemrepoError:
            continue
        if doc.meta.get("session_id") == session_id and doc.meta.get("ended") is None:
            return rel
    return None


def _session_from_transcript(root: Path, rel: str) -> OpenSession:
    from memrepo import documents

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
    for f in sorted((root / STATE_DIR).glob("*.json")):
        try:
            out.append(OpenSession(**json.loads(f.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return out


def secrets_allowlist(root: Path) -> list[str]:
    """The repo's configured secrets allowlist (validation.secrets_allowlist)."""
    from memrepo.config import load_config

    return list(load_config(root)["validation"]["secrets_allowlist"])


# ---------------------------------------------------------------------------
# The writer
# ---------------------------------------------------------------------------


def start(
    root: Path,
    *,
    session_id: str | None = None,
    model: str | None = None,
    channel: str | None = None,
    topic: str | None = None,
    tags: Sequence[str] = (),
    timezone: str | None = None,
    started: dt.datetime | None = None,
) -> OpenSession:
    """Create the open transcript (frontmatter and title) and the session's state file."""
    import secrets  # the stdlib's, for a random id: only `start` needs it

    from memrepo.atomic import atomic_write
    from memrepo.config import load_config

    if session_id is None:
        session_id = f"ses_{secrets.token_hex(4)}"
    session_id = _check_sid(session_id)
    tz, tzname = resolve_timezone(timezone)  # before any path is built
    when = _start_time(started, tz)
    if _state_file(root, session_id).exists() or find_open_transcript(root, session_id):
        raise MemrepoError(f"session {session_id} is already open; end it first")
    validation = load_config(root)["validation"]
    allow = list(validation["secrets_allowlist"])
    topic = redact(topic, allow)[0].strip() if topic else None
    slug = slug_from_messages([topic], 6) if topic else PROVISIONAL_SLUG
    meta: dict[str, Any] = {"session_id": session_id, "started": when, "timezone": tzname}
    for key, value in (("model", model), ("channel", channel), ("topic", topic)):
        if value:
            meta[key] = redact(value, allow)[0]
    meta["tags"] = [redact(t, allow)[0] for t in tags]
    body = f"\n# {topic}\n" if topic else ""
    rel = layout.transcript_path(when, session_id, slug)
    if (root / rel).exists():
        raise MemrepoError(f"{rel} already exists", rel)
    session = OpenSession(session_id, rel, tzname, allow, provisional_slug=topic is None,
                          max_bytes=_max_bytes(float(validation["max_file_kb"])))
    _tail_file(root, session_id).unlink(missing_ok=True)
    atomic_write(root / rel, render_frontmatter(meta) + body)
    save_session(root, session)
    return session


#: Start times a live capture accepts: from this year on, and no later than a day ahead
#: (a clock a little off is fine; year 9999 is a typo that files a session in 9999/).
EARLIEST_YEAR = 1970
FUTURE_SLACK = dt.timedelta(days=1)


def _start_time(started: dt.datetime | None, tz: dt.tzinfo) -> dt.datetime:
    """The session's start in its own zone, or an error for a time out of range."""
    if started is None:
        return now_in(tz)
    try:
        when = started.astimezone(tz).replace(microsecond=0)
    except (OverflowError, ValueError):
        raise MemrepoError(f"start time {started.isoformat()} is out of range") from None
    latest = dt.datetime.now(tz) + FUTURE_SLACK
    if when.year < EARLIEST_YEAR or when > latest:
        raise MemrepoError(
            f"start time {when.isoformat()} is out of range: a session starts between "
            f"{EARLIEST_YEAR} and {latest:%Y-%m-%d} (a day from now)"
        )
    return when


def _max_bytes(max_file_kb: float) -> int:
    """How large an open transcript may grow: the commit limit less room for ``end``."""
    limit = int(max_file_kb * 1024)
    return limit - min(END_MARGIN, limit // 4)


def _session_max_bytes(root: Path, session: OpenSession) -> int:
    if session.max_bytes is not None:
        return session.max_bytes
    from memrepo.config import load_config  # a state file from before max_bytes was kept

    return _max_bytes(float(load_config(root)["validation"]["max_file_kb"]))


class TranscriptFull(MemrepoError):
    """A turn would take the open transcript past ``validation.max_file_kb``."""


def text_from_bytes(data: bytes, source: str = "stdin") -> str:
    """``data`` as UTF-8 text, or an error naming ``source`` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemrepoError(
            f"{source} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            "; nothing was written"
        ) from None


def _check_utf8(text: str, source: str) -> None:
    """Refuse text that cannot be written as UTF-8 (undecodable bytes a stream let through
    as lone surrogates), before anything is written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(text[exc.start])
        what = f"byte 0x{bad - 0xDC00:02x}" if 0xDC80 <= bad <= 0xDCFF else f"U+{bad:04X}"
        raise MemrepoError(
            f"{source} is not UTF-8 text ({what} at character {exc.start}); nothing was written"
        ) from None


# ---------------------------------------------------------------------------
# One turn, one write; a torn tail cut off
# ---------------------------------------------------------------------------


def write_turn(root: Path, session: OpenSession, chunk: str) -> None:
    """Append ``chunk`` (whole turns or lines) to the open transcript, with the session
    lock held: a torn tail left by a killed writer is cut off first, the transcript must
    be open and stay under its size limit, and the bytes go in one ``O_APPEND`` write,
    after a record of where they start and how long they are."""
    data = chunk.encode("utf-8")
    repair_tail(root, session)
    _check_open(root, session)
    path = root / session.path
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        st = os.fstat(fd)
        _check_size(root, session, st.st_size, len(data))
        _note_tail(root, session.session_id, st.st_ino, st.st_size, len(data))
        while data:  # one write; a second only after a short write (a full disk)
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _note_tail(root: Path, sid: str, ino: int, start: int, length: int) -> None:
    """Record, before writing, the bytes a write is about to add (one small pwrite)."""
    record = f"{ino} {start} {length}".ljust(_TAIL_BYTES - 1).encode("ascii") + b"\n"
    fd = os.open(_tail_file(root, sid), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, record, 0)
    finally:
        os.close(fd)


def _read_tail(root: Path, sid: str) -> tuple[int, int, int] | None:
    try:
        with _tail_file(root, sid).open("rb") as fh:
            parts = fh.read(_TAIL_BYTES).split()
        ino, start, length = (int(x) for x in parts[:3])
    except (OSError, ValueError):
        return None
    return ino, start, length


def torn_tail(root: Path, session: OpenSession) -> tuple[int, str] | None:
    """(the size to cut the open transcript back to, why) when its last write was cut
    short by a kill, else None.

    The tail record says where the last write started and how long it was: a file that
    ends inside that range holds part of a turn nobody was told was written. Without a
    record for this file (an older memrepo wrote it), a UTF-8 character cut at the very
    end still shows, and the file is cut back to its last complete turn.
    """
    path = root / session.path
    try:
        st = path.stat()
    except OSError:
        return None
    rec = _read_tail(root, session.session_id)
    if rec is not None and rec[0] == st.st_ino:
        _, start, length = rec
        if start < st.st_size < start + length:
            return start, (f"its last write stopped after {st.st_size - start} of "
                           f"{length} bytes")
        return None
    with path.open("rb") as fh:
        fh.seek(max(0, st.st_size - 4))
        if not _ends_mid_character(fh.read()):
            return None
        fh.seek(0)
        data = fh.read()
    heads = list(_TURN_BYTES.finditer(data))
    if not heads:
        return None
    return heads[-1].start(), "it ends inside a UTF-8 character"


#: Where a turn begins (a content line that looks like a header is escaped, and a header
#: cut short still begins so).
_TURN_BYTES = re.compile(rb"\n## [0-9]")


def _ends_mid_character(tail: bytes) -> bool:
    """Whether ``tail`` (a file's last bytes) stops inside a multibyte UTF-8 character."""
    for i in range(1, len(tail) + 1):
        b = tail[-i]
        if b & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        need = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        return i < need
    return bool(tail)  # only continuation bytes: not UTF-8


def repair_tail(root: Path, session: OpenSession) -> str | None:
    """Cut a torn last turn off the open transcript (see :func:`torn_tail`); what was
    done, or None when the tail was whole. The caller holds the session lock."""
    torn = torn_tail(root, session)
    if torn is None:
        return None
    size, why = torn
    full = root / session.path
    cut = full.stat().st_size - size
    os.truncate(full, size)
    return f"{session.path}: cut a torn last turn ({cut} bytes; {why})"


def _check_open(root: Path, session: OpenSession) -> None:
    """Refuse to write to a transcript an ``end`` closed (or began to close)."""
    sid = session.session_id
    if session.phase != "open" or _is_closed(root / session.path):
        raise MemrepoError(
            f"session {sid}: its transcript {session.closing_path or session.path} is closed "
            f"(an 'end' did not finish), so nothing was written: run 'memory capture end "
            f"--session {sid}' to finish closing it, then start a new session"
        )


def _is_closed(full: Path) -> bool:
    """Whether the transcript's frontmatter has an ``ended`` (read from its first 4 KB)."""
    with full.open("rb") as fh:
        head = fh.read(4096)
    front = head.split(b"\n---", 1)[0] if head.startswith(b"---") else b""
    return b"\nended:" in front


def _check_size(root: Path, session: OpenSession, size: int, adding: int) -> None:
    limit = _session_max_bytes(root, session)
    if size + adding <= limit:
        return
    sid = session.session_id
    kb = f"{(size + adding) / 1024:,.0f} KB"
    room = f"{limit / 1024:,.0f} KB (validation.max_file_kb less room for 'end')"
    if adding > limit // 2:
        raise TranscriptFull(
            f"session {sid}: a turn of {adding / 1024:,.0f} KB is too large for a transcript "
            f"(at most {room}); nothing was written: store it with 'memory capture attach'",
            session.path)
    raise TranscriptFull(
        f"session {sid}: the transcript would grow to {kb}, above {room}; nothing was "
        f"written: end it ('memory capture end --session {sid}') and go on in a new session",
        session.path)


def _last_role(path: Path) -> tuple[str | None, bool]:
    """Role of the last turn in the file, and whether the file ends with a tool/attachment line."""
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - 65536))
        tail = fh.read().decode("utf-8", "replace")
    roles = TURN_LINES.findall(tail)
    last_line = tail.rstrip("\n").rsplit("\n", 1)[-1]
    return (roles[-1][2] if roles else None), last_line.startswith("> [")


def append(
    root: Path,
    session_id: str,
    role: str,
    text: str,
    *,
    memory: bool = False,
    when: dt.datetime | None = None,
    source: str = "the text",
) -> int:
    """Append one turn (``## HH:MM — role``); return how many secrets were redacted.

    ``source`` names where the text came from (``stdin``) in the error for text that is
    not UTF-8.
    """
    header_role = role
    turn_header(dt.datetime.now(), header_role, memory)  # validates the role
    _check_utf8(text, source)
    with session_lock(root, session_id):
        session = load_session(root, session_id)
        clean, count = redact(text, session.allowlist)
        clean = escape_content(clean.strip("\n").rstrip())
        when = (when or dt.datetime.now()).astimezone(session.tz)
        chunk = f"\n{turn_header(when, role, memory)}\n" + (f"{clean}\n" if clean else "")
        write_turn(root, session, chunk)
    return count


def tool(
    root: Path,
    session_id: str,
    name: str,
    args: str = "",
    result: str = "",
    *,
    when: dt.datetime | None = None,
) -> int:
    """Append ``> [tool:NAME] args → result`` to the agent's current turn."""
    with session_lock(root, session_id):
        session = load_session(root, session_id)
        line, count = redacted_tool_line(name, args, result, session.allowlist)
        _append_line(root, session, line, "agent", when)
    return count


def attach(
    root: Path,
    session_id: str,
    file: Path,
    *,
    role: str | None = None,
    name: str | None = None,
    when: dt.datetime | None = None,
) -> str:
    """Copy a file into attachments/ and reference it as ``> [attachment:PATH]``.

    Secrets are redacted from the stored name (and so from the reference line) and, when
    the file is UTF-8 text, from its content, before anything is written.
    """
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise MemrepoError(f"cannot read attachment: {exc.strerror or exc}", file) from None
    with session_lock(root, session_id):
        session = load_session(root, session_id)
        repair_tail(root, session)
        _check_open(root, session)
        _no_encoded_secret(data, file, session.allowlist)
        stamp = (when or dt.datetime.now()).astimezone(session.tz)
        rel = store_attachment(root, data, name or file.name, stamp, session.allowlist)
        _append_line(root, session, f"> [attachment:{rel}]", role, when)
    return rel


def _no_encoded_secret(data: bytes, file: Path, allowlist: Sequence[str]) -> None:
    """Refuse, at attach time, a binary or UTF-16 file the commit's secret scan would
    refuse (it cannot be redacted without breaking it): found only at ``end``, it would
    make the session impossible to close."""
    try:
        from memrepo.hooks.check_encoded import needs_decoding, readings
    except ImportError:  # pragma: no cover - a memrepo without that scan
        return
    from memrepo.hooks.engine import SNIFF_BYTES
    from memrepo.secrets import find_secrets

    if not needs_decoding(data[:SNIFF_BYTES]):
        return
    for text in readings(data):
        hits = find_secrets(text, allowlist)
        if hits:
            raise MemrepoError(
                f"holds what looks like a {hits[0].kind} in binary or UTF-16 content, which "
                "cannot be redacted; nothing was attached (remove it, or allowlist it in "
                "validation.secrets_allowlist)", file)


def store_attachment(
    root: Path, data: bytes, name: str, when: dt.datetime, allowlist: Sequence[str] = ()
) -> str:
    """Write an attachment (never embedded in a transcript), text redacted; its repo path."""
    rel, clean = prepare_attachment(data, name, when, allowlist)
    _write_attachment(root, rel, clean)
    return rel


def _write_attachment(root: Path, rel: str, data: bytes) -> None:
    """Content-addressed: a path that exists already holds these bytes."""
    from memrepo.atomic import atomic_write

    if not (root / rel).exists():
        atomic_write(root / rel, data)


def _append_line(
    root: Path, session: OpenSession, line: str, role: str | None, when: dt.datetime | None
) -> None:
    """Add a ``> […]`` line to the current turn, opening a turn for ``role`` if needed."""
    path = root / session.path
    repair_tail(root, session)  # before the last role is read from the tail
    last, after_ref = _last_role(path)
    role = role or last or "user"
    if last != role:
        stamp = (when or dt.datetime.now()).astimezone(session.tz)
        chunk = f"\n{turn_header(stamp, role)}\n{line}\n"
    else:
        chunk = (f"{line}\n" if after_ref else f"\n{line}\n")
    write_turn(root, session, chunk)


@dataclass
class Ended:
    path: str
    commit: str | None
    redactions: int
    turns: int


def end(
    root: Path,
    session_id: str,
    *,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
    knowledge_changes: Sequence[dict[str, str]] = (),
    commit: bool = True,
    when: dt.datetime | None = None,
    title: str | None = None,
) -> Ended:
    """Close the transcript (end time, counts, knowledge changes), commit it.

    A session started without a topic is named from its first messages here (the
    file's slug) and gets its ``# Title``: ``title`` when the caller knows one (an agent
    log's own summary), else the slug's words (:func:`titled`).

    If the commit fails (a hook refuses it), nothing is left half done: the transcript is
    put back open, byte for byte, under its old name, the paths are unstaged, and the
    session stays open, so ``end`` can simply run again once the cause is fixed. If the
    process is killed, the state file says how far it got (``closing``) and the next
    ``end`` finishes the job (:func:`_finish_closing`).
    """
    from memrepo import documents
    from memrepo.atomic import atomic_write

    with session_lock(root, session_id):
        session = load_session(root, session_id)
        if session.phase == "closing":
            done = _finish_closing(root, session, commit)
            if done is not None:
                return done
            session.phase, session.closing_path = "open", None  # nothing was closed yet
        repair_tail(root, session)
        full = root / session.path
        original = full.read_bytes()
        text = documents.decode(original, session.path)
        doc = documents.parse_document(text, session.path)
        meta = dict(doc.meta)
        body = doc.body
        if meta.get("ended") is not None:  # closed, committed or not, by an older memrepo
            return _finish_closing(root, replace(session, closing_path=session.path),
                                   commit) or Ended(session.path, None, 0, 0)
        started = documents.parse_datetime(meta.get("started"))
        ended = (when or dt.datetime.now()).astimezone(session.tz).replace(microsecond=0)
        if started is not None and ended < started:
            ended = started
        meta["ended"] = ended
        meta["turns"] = len(TURN_LINES.findall(body))
        if tokens_in is not None:
            meta["tokens_in"] = tokens_in
        if tokens_out is not None:
            meta["tokens_out"] = tokens_out
        changes = [*knowledge_lines(body), *knowledge_changes]
        if changes:
            meta["knowledge_changes"] = changes
        meta["redactions"] = _redaction_count(meta, body)
        rel = session.path
        if session.provisional_slug and not _tracked(root, rel):
            slug = slug_from_messages(first_messages(body))
            if slug != PROVISIONAL_SLUG and started is not None:
                rel = layout.transcript_path(started, session_id, slug)
            named = redact(title, session.allowlist)[0].strip() if title else None
            body = titled(body, slug, named)
        # the point from which a restart finishes rather than starts over: recorded first
        save_session(root, replace(session, phase="closing", closing_path=rel))
        atomic_write(root / rel, render_frontmatter(meta) + body)
        if rel != session.path:
            full.unlink()
        sha = None
        if commit:
            paths = _closing_paths(root, rel, body)
            try:
                sha = _commit_closed(root, session_id, rel, paths)
            except MemrepoError as exc:
                sha = _committed_elsewhere(root, paths)
                if sha is None:
                    raise _reopen(root, session, rel, original, paths, exc) from None
        _forget(root, session_id)
    # The lock file is never unlinked: a process waiting on it could otherwise end up
    # holding a lock on a deleted file while another locks a fresh one (an empty file per
    # session in the gitignored .memrepo/sessions/ is the price).
    _judge_topics(root, body, started, ended)
    return Ended(rel, sha, meta["redactions"], meta["turns"])


def _judge_topics(root: Path, body: str, started: dt.datetime | None,
                  ended: dt.datetime) -> None:
    """The topics this session's messages activated, judged useful or not from the turns
    that followed (the gate log's ``was_useful``, seed 000 §5.5): a side note of ``end``
    that never fails it (the transcript is closed and committed by now)."""
    try:
        from memrepo.context.watchers.feedback import judge_session

        judge_session(root, body, started, ended)
    except Exception:  # tuning data must never cost a transcript
        pass


def _closing_paths(root: Path, rel: str, body: str) -> list[str]:
    """The closed transcript and the attachments it references (only plain paths under
    attachments/: a line a user wrote, "attachments/../.git/x", must not make the commit
    take a file from elsewhere)."""
    from memrepo.git import plain_path

    attachments = sorted({m["path"] for m in _ATTACHMENT.finditer(body) if plain_path(m["path"])})
    return [rel, *(a for a in attachments if (root / a).exists())]


def _commit_closed(root: Path, session_id: str, rel: str, paths: Sequence[str]) -> str | None:
    from memrepo.commit.write import commit_paths

    slug = layout.TRANSCRIPT_PATH.match(rel)["rest"][len(session_id) + 1 :]  # type: ignore[index]
    return commit_paths(root, paths, f"conversation: {slug}\n\nSession: {rel}\n")


def _committed_elsewhere(root: Path, paths: Sequence[str]) -> str | None:
    """HEAD, when it already holds ``paths`` exactly as they are on disk: a ``memory
    commit`` running beside this ``end`` took the closed transcript first, so this commit
    found nothing to do. Reopening then would delete a committed transcript."""
    from memrepo.git import git

    for p in paths:
        in_head = git(["rev-parse", "-q", "--verify", f"HEAD:{p}"], root, check=False).strip()
        if not in_head or in_head != git(["hash-object", "--", p], root).strip():
            return None
    return git(["rev-parse", "HEAD"], root).strip()


def _finish_closing(root: Path, session: OpenSession, commit: bool) -> Ended | None:
    """Finish an ``end`` that was killed after it recorded ``closing``: the closed file is
    there (written atomically), so the open one goes and the commit is made unless HEAD
    has it already. None when the closed file was never written: the caller closes the
    open transcript from the start."""
    from memrepo import documents
    from memrepo.git import git

    rel = session.closing_path or session.path
    try:
        doc = documents.read_document(root / rel, rel)
    except (MemrepoError, OSError):
        doc = None
    if doc is None or doc.meta.get("ended") is None:
        if (root / session.path).is_file():
            return None
        raise MemrepoError(
            f"session {session.session_id}: neither its open transcript {session.path} nor "
            f"the closed one {rel} is there; restore one ('git restore -- PATH'), or forget "
            f"the session by deleting {STATE_DIR}/{session.session_id}.json"
        )
    if rel != session.path:
        (root / session.path).unlink(missing_ok=True)  # appends stopped at 'closing'
    paths = _closing_paths(root, rel, doc.body)
    sha = None
    if commit:
        pending = git(["status", "--porcelain", "--", *paths], root).strip()
        sha = _commit_closed(root, session.session_id, rel, paths) if pending else None
        if sha is None:
            sha = git(["rev-parse", "-q", "--verify", "HEAD"], root, check=False).strip() or None
    _forget(root, session.session_id)
    turns = doc.meta.get("turns")
    reds = doc.meta.get("redactions")
    return Ended(rel, sha, reds if isinstance(reds, int) else 0,
                 turns if isinstance(turns, int) else len(TURN_LINES.findall(doc.body)))


def _reopen(
    root: Path, session: OpenSession, rel: str, original: bytes, paths: Sequence[str],
    exc: MemrepoError,
) -> MemrepoError:
    """Undo a closing whose commit failed; the error that says so and what to do next."""
    from memrepo.atomic import atomic_write

    undo = _unstage(root, paths)
    atomic_write(root / session.path, original)
    if rel != session.path:
        (root / rel).unlink(missing_ok=True)
    save_session(root, replace(session, phase="open", closing_path=None))
    return MemrepoError(
        f"session {session.session_id}: the commit closing it was refused, so nothing was "
        f"committed: {_reasons(exc)}. The transcript is open again at {session.path} "
        "(unstaged, exactly as before 'end'): fix that, then run 'memory capture end "
        f"--session {session.session_id}' again.{undo}"
    )


def _unstage(root: Path, paths: Sequence[str]) -> str:
    """Take ``paths`` out of the index again; '' or a sentence saying how to do it by hand."""
    from memrepo.errors import GitError
    from memrepo.git import git, retry_locked

    try:
        retry_locked(lambda: git(["reset", "-q", "--", *paths], root))
    except GitError as exc:
        return f" Unstaging failed too ({exc}): run 'git reset -- {' '.join(paths)}'."
    return ""


def _reasons(exc: MemrepoError) -> str:
    """What a refused commit's hooks said, on one line (their ``error:`` lines)."""
    said = [re.sub(r"^git [^:]* failed: ", "", ln.strip()) for ln in str(exc).splitlines()]
    return "; ".join([ln for ln in said if ": error: " in ln] or said[-1:] or ["no reason given"])


def _redaction_count(meta: dict[str, Any], body: str) -> int:
    """Placeholders in the body and in the frontmatter (the topic is counted once: its title)."""
    extra = "".join(str(meta.get(k, "")) for k in ("model", "channel", "tags"))
    return body.count("[REDACTED:") + extra.count("[REDACTED:")


def _tracked(root: Path, rel: str) -> bool:
    from memrepo.git import git

    return bool(git(["ls-files", "--", rel], root).strip())


# ---------------------------------------------------------------------------
# Sessions a crashed agent left open (``memory doctor`` and ``doctor --fix``)
# ---------------------------------------------------------------------------


def stale_sessions(root: Path) -> list[tuple[str, str, dt.datetime | None]]:
    """Sessions open on this machine with no append for STALE_AFTER: (id, why, last append).

    The last append is the transcript's mtime (appends are the only writes to an open
    transcript); None when the transcript is gone.
    """
    import time

    stale: list[tuple[str, str, dt.datetime | None]] = []
    for s in open_sessions(root):
        if s.phase != "open":
            continue  # an interrupted end: interrupted_sessions() reports it
        try:
            mtime = (root / s.path).stat().st_mtime
        except OSError:
            stale.append((s.session_id, f"transcript {s.path} missing", None))
            continue
        age = time.time() - mtime
        if age > STALE_AFTER.total_seconds():
            last = dt.datetime.fromtimestamp(mtime, dt.timezone.utc)
            stale.append((s.session_id, f"idle {age / 86400:.1f} days", last))
    return stale


def close_stale_sessions(repo: MemoryRepo) -> list[tuple[bool, str]]:
    """Doctor --fix: close (and commit) what a crashed agent left open, as `capture end`
    would, ended at its last append. (done, report line) per session."""
    out = []
    for sid, why, last in stale_sessions(repo.root):
        if last is None:
            out.append((False, f"session {sid} left open: {why}; restore the transcript or "
                               f"delete {STATE_DIR}/{sid}.json"))
            continue
        try:
            done = end(repo.root, sid, when=last)
        except MemrepoError as exc:
            out.append((False, f"session {sid} left open: {exc}"))
            continue
        commit = f", commit {done.commit[:10]}" if done.commit else ""
        out.append((True, f"closed session {sid} ({why}): {done.path}{commit}"))
    return out


def health_checks(repo: MemoryRepo) -> list[Check]:
    """Doctor: open transcripts a crashed agent left behind for more than a day, sessions a
    killed writer left half done, closed transcripts never committed."""
    stale = stale_sessions(repo.root)
    if not stale:
        checks = [Check("open transcripts", True, "no session left open for more than a day")]
    else:
        detail = ", ".join(f"{sid} ({why})" for sid, why, _ in stale)
        fix = "memory doctor --fix (closes them: " + "; ".join(
            f"memory capture end --session {sid}" for sid, _, _ in stale) + ")"
        checks = [Check("open transcripts", False, f"left open: {detail}", fix, warning=True)]
    return [*checks, *recovery_checks(repo)]


# ---------------------------------------------------------------------------
# What a killed writer leaves (``memory doctor`` and ``doctor --fix``)
# ---------------------------------------------------------------------------


def interrupted_sessions(root: Path) -> list[tuple[OpenSession, str]]:
    """Sessions a killed process left half done: an ``end`` that did not finish, or an
    open transcript ending in a torn turn; (session, what is wrong)."""
    out = []
    for s in open_sessions(root):
        if s.phase != "open":
            out.append((s, f"an 'end' did not finish (closing {s.closing_path or s.path})"))
            continue
        try:
            torn = torn_tail(root, s)
        except OSError:
            continue
        if torn is not None:
            out.append((s, f"{s.path} ends in a torn turn ({torn[1]})"))
    return out


def closed_uncommitted(root: Path) -> list[str]:
    """Closed transcripts git does not have: an ``end --no-commit``, an ``end`` killed
    before its commit, an import not committed (``memory commit`` takes them too)."""
    from memrepo.git import git

    out = git(["status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--",
               layout.TRANSCRIPT_ROOT], root)
    found = []
    for entry in out.split("\0"):
        xy, rel = entry[:2], entry[3:]
        if len(entry) < 4 or "D" in xy or not rel.endswith(".md"):
            continue
        try:
            if _is_closed(root / rel):
                found.append(rel)
        except OSError:
            continue
    return found


def recovery_checks(repo: MemoryRepo) -> list[Check]:
    """Doctor: interrupted sessions (a failure) and closed transcripts never committed."""
    root = repo.root
    bad = interrupted_sessions(root)
    closing = {s.closing_path for s, _ in bad if s.closing_path}
    loose = [p for p in closed_uncommitted(root) if p not in closing]
    checks = []
    if bad:
        checks.append(Check(
            "interrupted sessions", False,
            "; ".join(f"session {s.session_id}: {why}" for s, why in bad),
            "memory doctor --fix (or: " + "; ".join(
                f"memory capture end --session {s.session_id}" if s.phase != "open"
                else f"memory capture append --session {s.session_id} …" for s, _ in bad) + ")",
        ))
    else:
        checks.append(Check("interrupted sessions", True, "no torn turn, no unfinished end"))
    if loose:
        checks.append(Check(
            "uncommitted transcripts", False,
            f"{len(loose)} closed but not committed: " + ", ".join(loose[:5])
            + (" …" if len(loose) > 5 else ""),
            "memory doctor --fix (or memory commit)", warning=True,
        ))
    return checks


def repair_sessions(repo: MemoryRepo) -> list[tuple[bool, str]]:
    """Doctor --fix: finish interrupted ends, cut torn turns, commit closed transcripts
    left uncommitted; (done, report line) each. A session in use is left alone."""
    from memrepo import documents

    root = repo.root
    out: list[tuple[bool, str]] = []
    for s, why in interrupted_sessions(root):
        sid = s.session_id
        try:
            if s.phase != "open":
                done = end(root, sid)
                out.append((True, f"finished ending session {sid}: {done.path}"
                                  + (f", commit {done.commit[:10]}" if done.commit else "")))
                continue
            with session_lock(root, sid, timeout=2.0):
                said = repair_tail(root, load_session(root, sid))
            out.append((True, said or f"session {sid}: tail already whole"))
        except MemrepoError as exc:
            out.append((False, f"session {sid} ({why}): {exc}"))
    live = {s.session_id for s in open_sessions(root)}
    for rel in closed_uncommitted(root):
        try:
            doc = documents.read_document(root / rel, rel)
            sid = str(doc.meta.get("session_id") or "")
            if sid in live:
                continue  # an `end` may be at work on it: its session lock decides
            if not sid or f"-{sid}-" not in rel:
                raise MemrepoError("its session_id does not match its file name", rel)
            sha = _commit_closed(root, sid, rel, _closing_paths(root, rel, doc.body))
        except MemrepoError as exc:
            out.append((False, f"{rel} not committed: {exc}"))
            continue
        out.append((True, f"committed {rel}" + (f" ({sha[:10]})" if sha else "")))
    return out


# ---------------------------------------------------------------------------
# Whole conversations at once (the importers)
# ---------------------------------------------------------------------------


def find_transcript(root: Path, session_id: str, started: dt.datetime | None = None) -> str | None:
    """Any transcript of ``session_id`` (the re-import check): its day first, then git's index."""
    from memrepo.git import git

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


def write_conversation(
    root: Path, conv: Conversation, *, timezone: str | None = None, commit: bool = True
) -> tuple[str, str | None]:
    """Write ``conv`` as one closed transcript and commit it; (path, commit sha)."""
    from memrepo.atomic import atomic_write

    _check_sid(conv.session_id)
    tz, tzname = resolve_timezone(timezone)
    rel, text, attachments = render_import(conv, tz, tzname, secrets_allowlist(root))
    for path, data in attachments.items():
        _write_attachment(root, path, data)
    if (root / rel).exists():
        raise MemrepoError(f"{rel} already exists", rel)
    atomic_write(root / rel, text)
    sha = None
    if commit:
        from memrepo.commit.write import commit_paths

        slug = layout.TRANSCRIPT_PATH.match(rel)["rest"][len(conv.session_id) + 1 :]  # type: ignore[index]
        paths = [rel, *sorted(attachments)]
        try:
            sha = commit_paths(root, paths, f"conversation: {slug}\n\nSession: {rel}\n")
        except MemrepoError as exc:
            # Never a closed transcript left staged or lying around: a re-import would take
            # it for imported. (Attachments stay: content-addressed, maybe shared.)
            undo = _unstage(root, paths)
            (root / rel).unlink(missing_ok=True)
            raise MemrepoError(
                f"the commit of {rel} was refused, so it was not imported: {_reasons(exc)}."
                f"{undo}"
            ) from None
    return rel, sha
