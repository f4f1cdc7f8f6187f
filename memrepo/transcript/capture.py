"""The transcript writer: one immutable, redacted markdown file per session (seed 000 §2.1, §8.2).

Sessions (state, locks), ``start`` / ``append`` / ``tool`` / ``attach`` / ``end``, whole
conversations written for the importers, and sessions a crashed agent left open. What the
text looks like is :mod:`memrepo.transcript.render`'s. Why it looks like this:

- Secrets are redacted in memory, before a byte reaches disk (principle 7), with the rules
  the pre-commit check uses (memrepo.secrets).
- Appends are one ``O_APPEND`` write under a per-session lock, so several processes writing
  one session never interleave, and a crash leaves a valid open transcript (the frontmatter
  is written once at start and rewritten only at end, atomically).
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
from dataclasses import dataclass, field
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
    render_conversation,
    render_frontmatter,
    resolve_timezone,
    slug_from_messages,
    turn_header,
)

if TYPE_CHECKING:
    from memrepo.repo import MemoryRepo

#: Where per-session state and locks live (gitignored by the skeleton's `.memrepo/`).
STATE_DIR = f"{layout.STATE_DIR}/sessions"
_ATTACHMENT = re.compile(r"^> \[attachment:(?P<path>attachments/[^\]]+)\]", re.MULTILINE)
_SID = re.compile(r"^[a-z0-9][a-z0-9._-]*$", re.IGNORECASE)
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

    @property
    def tz(self) -> dt.tzinfo:
        return resolve_timezone(self.timezone)[0]


def _state_file(root: Path, session_id: str) -> Path:
    return root / STATE_DIR / f"{session_id}.json"


def _lock_file(root: Path, session_id: str) -> Path:
    return root / STATE_DIR / f"{session_id}.lock"


def _check_sid(session_id: str) -> str:
    if not _SID.match(session_id or ""):
        raise MemrepoError(
            f"session id {session_id!r} must be letters, digits, '.', '_' or '-' (no spaces)"
        )
    return session_id


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
        if not (root / session.path).is_file():
            raise _missing(root, session)
        return session
    path = find_open_transcript(root, session_id)
    if path is None:
        raise MemrepoError(
            f"no open session {session_id!r}: start one with 'memory capture start'"
        )
    return _session_from_transcript(root, path)


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

    session_id = _check_sid(session_id or f"ses_{secrets.token_hex(4)}")
    if _state_file(root, session_id).exists() or find_open_transcript(root, session_id):
        raise MemrepoError(f"session {session_id} is already open; end it first")
    tz, tzname = resolve_timezone(timezone)
    when = started.astimezone(tz).replace(microsecond=0) if started else now_in(tz)
    allow = secrets_allowlist(root)
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
    session = OpenSession(session_id, rel, tzname, allow, provisional_slug=topic is None)
    atomic_write(root / rel, render_frontmatter(meta) + body)
    save_session(root, session)
    return session


def _append_bytes(path: Path, chunk: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        data = chunk.encode("utf-8")
        while data:
            n = os.write(fd, data)
            data = data[n:]
    finally:
        os.close(fd)


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
) -> int:
    """Append one turn (``## HH:MM — role``); return how many secrets were redacted."""
    header_role = role
    turn_header(dt.datetime.now(), header_role, memory)  # validates the role
    with session_lock(root, session_id):
        session = load_session(root, session_id)
        clean, count = redact(text, session.allowlist)
        clean = escape_content(clean.strip("\n").rstrip())
        when = (when or dt.datetime.now()).astimezone(session.tz)
        chunk = f"\n{turn_header(when, role, memory)}\n" + (f"{clean}\n" if clean else "")
        _append_bytes(root / session.path, chunk)
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
        stamp = (when or dt.datetime.now()).astimezone(session.tz)
        rel = store_attachment(root, data, name or file.name, stamp, session.allowlist)
        _append_line(root, session, f"> [attachment:{rel}]", role, when)
    return rel


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
    last, after_ref = _last_role(path)
    role = role or last or "user"
    if last != role:
        stamp = (when or dt.datetime.now()).astimezone(session.tz)
        chunk = f"\n{turn_header(stamp, role)}\n{line}\n"
    else:
        chunk = (f"{line}\n" if after_ref else f"\n{line}\n")
    _append_bytes(path, chunk)


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
) -> Ended:
    """Close the transcript (end time, counts, knowledge changes), fsync it, commit it.

    If the commit fails (a hook refuses it), nothing is left half done: the transcript is
    put back open, byte for byte, under its old name, the paths are unstaged, and the
    session stays open, so ``end`` can simply run again once the cause is fixed.
    """
    from memrepo import documents
    from memrepo.atomic import atomic_write

    with session_lock(root, session_id):
        session = load_session(root, session_id)
        full = root / session.path
        original = full.read_bytes()
        text = documents.decode(original, session.path)
        doc = documents.parse_document(text, session.path)
        meta = dict(doc.meta)
        body = doc.body
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
        atomic_write(root / rel, render_frontmatter(meta) + body)
        if rel != session.path:
            full.unlink()
        from memrepo.git import plain_path

        # only plain paths under attachments/: a line a user wrote ("attachments/../.git/x")
        # must not make the commit take a file from elsewhere
        attachments = sorted({m["path"] for m in _ATTACHMENT.finditer(body)
                              if plain_path(m["path"])})
        sha = None
        if commit:
            from memrepo.commit.write import commit_paths

            slug = layout.TRANSCRIPT_PATH.match(rel)["rest"][len(session_id) + 1 :]  # type: ignore[index]
            message = f"conversation: {slug}\n\nSession: {rel}\n"
            paths = [rel, *(a for a in attachments if (root / a).exists())]
            try:
                sha = commit_paths(root, paths, message)
            except MemrepoError as exc:
                raise _reopen(root, session, rel, original, paths, exc) from None
        _state_file(root, session_id).unlink(missing_ok=True)
    # The lock file is never unlinked: a process waiting on it could otherwise end up
    # holding a lock on a deleted file while another locks a fresh one (an empty file per
    # session in the gitignored .memrepo/sessions/ is the price).
    return Ended(rel, sha, meta["redactions"], meta["turns"])


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
    return MemrepoError(
        f"session {session.session_id}: the commit closing it was refused, so nothing was "
        f"committed: {_reasons(exc)}. The transcript is open again at {session.path} "
        "(unstaged, exactly as before 'end'): fix that, then run 'memory capture end "
        f"--session {session.session_id}' again.{undo}"
    )


def _unstage(root: Path, paths: Sequence[str]) -> str:
    """Take ``paths`` out of the index again; '' or a sentence saying how to do it by hand."""
    from memrepo.errors import GitError
    from memrepo.git import git

    try:
        git(["reset", "-q", "--", *paths], root)
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
    """Doctor: open transcripts a crashed agent left behind for more than a day."""
    stale = stale_sessions(repo.root)
    if not stale:
        return [Check("open transcripts", True, "no session left open for more than a day")]
    detail = ", ".join(f"{sid} ({why})" for sid, why, _ in stale)
    fix = "memory doctor --fix (closes them: " + "; ".join(
        f"memory capture end --session {sid}" for sid, _, _ in stale) + ")"
    return [Check("open transcripts", False, f"left open: {detail}", fix, warning=True)]


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

    tz, tzname = resolve_timezone(timezone)
    rel, text, attachments = render_conversation(conv, tz, tzname, secrets_allowlist(root))
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
