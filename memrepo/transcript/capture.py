"""The transcript writer: one immutable, redacted markdown file per session (seed 000 §2.1, §8.2).

The verbs ``start`` / ``append`` / ``tool`` / ``attach`` / ``end``, and whole conversations
written for the importers. Elsewhere: what the text looks like (:mod:`.render`), a
session's state and lock (:mod:`.session`), one write per turn and torn tails
(:mod:`.tail`), what ``memory doctor`` repairs (:mod:`.recovery`). Why it looks like this:

- Secrets are redacted in memory, before a byte reaches disk (principle 7), with the rules
  the pre-commit check uses (memrepo.secrets).
- ``end`` is a small state machine kept in the state file: ``open`` -> ``closing`` (the
  closed file's path recorded before it is written) -> state removed after the commit. A
  process killed anywhere in between leaves a state the next ``end`` finishes, and an
  append to a closing or closed transcript is refused rather than breaking immutability.
- Turn headers are ``HH:MM`` in the session's own time zone, named in the frontmatter
  (``timezone``) so anyone can convert them.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memrepo import clock, documents, layout, namespaces
from memrepo.atomic import atomic_write
from memrepo.errors import GitError, MemrepoError
from memrepo.git import git, plain_path, retry_locked
from memrepo.layout import SESSIONS_DIR
from memrepo.secrets import find_secrets, redact
from memrepo.transcript.render import (
    PROVISIONAL_SLUG,
    TURN_LINES,
    Conversation,
    escape_content,
    first_messages,
    knowledge_lines,
    now_in,
    prepare_attachment,
    redacted_tool_line,
    render_frontmatter,
    render_import,
    resolve_timezone,
    slug_from_messages,
    titled,
    turn_header,
)
from memrepo.transcript.session import (
    OpenSession,
    _check_sid,
    _forget,
    _state_file,
    _tail_file,
    find_open_transcript,
    load_session,
    save_session,
    secrets_allowlist,
    session_lock,
)
from memrepo.transcript.speakers import body_turns, speaker_names
from memrepo.transcript.tail import _check_open, _max_bytes, repair_tail, write_turn

_ATTACHMENT = re.compile(r"^> \[attachment:(?P<path>attachments/[^\]]+)\]", re.MULTILINE)


# ---------------------------------------------------------------------------
# Porcelain: start, append, tool, attach
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
    if namespaces.current():  # whose it is (memrepo.namespaces); none: shared
        meta[namespaces.KEY] = namespaces.current()
    body = f"\n# {topic}\n" if topic else ""
    rel = layout.transcript_path(when, session_id, slug)
    if (root / rel).exists():
        raise MemrepoError(f"{rel} already exists", rel)
    session = OpenSession(session_id, rel, tzname, allow, provisional_slug=topic is None,
                          max_bytes=_max_bytes(float(validation["max_file_kb"])))
    _tail_file(root, session_id).unlink(missing_ok=True)
    atomic_write(root / rel, render_frontmatter(meta) + body, root=root)
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
    latest = clock.now().astimezone(tz) + FUTURE_SLACK
    if when.year < EARLIEST_YEAR or when > latest:
        raise MemrepoError(
            f"start time {when.isoformat()} is out of range: a session starts between "
            f"{EARLIEST_YEAR} and {latest:%Y-%m-%d} (a day from now)"
        )
    return when


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
    turn_header(clock.now(), header_role, memory)  # validates the role
    _check_utf8(text, source)
    with session_lock(root, session_id):
        session = load_session(root, session_id)
        clean, count = redact(text, session.allowlist)
        clean = escape_content(clean.strip("\n").rstrip())
        when = (when or clock.now()).astimezone(session.tz)
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
        stamp = (when or clock.now()).astimezone(session.tz)
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
    if not (root / rel).exists():
        atomic_write(root / rel, data, root=root)


def _append_line(
    root: Path, session: OpenSession, line: str, role: str | None, when: dt.datetime | None
) -> None:
    """Add a ``> […]`` line to the current turn, opening a turn for ``role`` if needed."""
    path = root / session.path
    repair_tail(root, session)  # before the last role is read from the tail
    last, after_ref = _last_role(path)
    role = role or last or "user"
    if last != role:
        stamp = (when or clock.now()).astimezone(session.tz)
        chunk = f"\n{turn_header(stamp, role)}\n{line}\n"
    else:
        chunk = (f"{line}\n" if after_ref else f"\n{line}\n")
    write_turn(root, session, chunk)


# ---------------------------------------------------------------------------
# end: close, commit, or undo
# ---------------------------------------------------------------------------


@dataclass
class Ended:
    path: str
    commit: str | None
    redactions: int
    turns: int
    #: The closed body and its time span, when this call closed the transcript (None when
    #: it only finished an ``end`` a killed process had begun): what the session's topic
    #: judgement reads (:func:`memrepo.context.watchers.feedback.judge_ended`), which
    #: whoever ended the session runs once ``end`` has returned.
    body: str | None = field(default=None, repr=False, compare=False)
    started: dt.datetime | None = field(default=None, repr=False, compare=False)
    ended: dt.datetime | None = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        """What ``memory capture end --json`` prints."""
        return {"path": self.path, "commit": self.commit, "redactions": self.redactions,
                "turns": self.turns}


#: What a caller that ends sessions on another's behalf (the follower, doctor's repairs)
#: runs after each ``end`` that closed one: the topic judgement, passed in from above.
AfterEnd = Callable[[Path, Ended], object]


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

    The topics the session activated are not judged here (that is the context's business,
    a floor above): the caller runs :func:`memrepo.context.watchers.feedback.judge_ended`
    on what this returns.
    """
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
        ended = (when or clock.now()).astimezone(session.tz).replace(microsecond=0)
        if started is not None and ended < started:
            ended = started
        _close_meta(meta, body, ended, tokens_in, tokens_out, knowledge_changes)
        rel = session.path
        if session.provisional_slug and not _tracked(root, rel):
            rel, body = _named(session, body, started, title)
        # the point from which a restart finishes rather than starts over: recorded first
        save_session(root, replace(session, phase="closing", closing_path=rel))
        atomic_write(root / rel, render_frontmatter(meta) + body, root=root)
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
    return Ended(rel, sha, meta["redactions"], meta["turns"], body, started, ended)


def _close_meta(meta: dict[str, Any], body: str, ended: dt.datetime, tokens_in: int | None,
                tokens_out: int | None, knowledge_changes: Sequence[dict[str, str]]) -> None:
    """What closing adds to the frontmatter ``meta``, in this order: the end time, the
    turns, the speakers named in a relayed chat (``participants``, unless given), the
    tokens when given, the knowledge changes, the redactions."""
    meta["ended"] = ended
    meta["turns"] = len(TURN_LINES.findall(body))
    if not meta.get("participants"):
        named = speaker_names(body_turns(body))
        if named:
            meta["participants"] = named
    if tokens_in is not None:
        meta["tokens_in"] = tokens_in
    if tokens_out is not None:
        meta["tokens_out"] = tokens_out
    changes = [*knowledge_lines(body), *knowledge_changes]
    if changes:
        meta["knowledge_changes"] = changes
    meta["redactions"] = _redaction_count(meta, body)


def _named(session: OpenSession, body: str, started: dt.datetime | None,
           title: str | None) -> tuple[str, str]:
    """A session started without a topic, named at its end: the transcript's path from
    its first messages' slug (kept when there is no start time or no slug) and the body
    with its ``# Title`` (``title``, redacted, else the slug's words)."""
    rel = session.path
    slug = slug_from_messages(first_messages(body))
    if slug != PROVISIONAL_SLUG and started is not None:
        rel = layout.transcript_path(started, session.session_id, slug)
    named = redact(title, session.allowlist)[0].strip() if title else None
    return rel, titled(body, slug, named)


def _closing_paths(root: Path, rel: str, body: str) -> list[str]:
    """The closed transcript and the attachments it references (only plain paths under
    attachments/: a line a user wrote, "attachments/../.git/x", must not make the commit
    take a file from elsewhere)."""
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
            f"the session by deleting {SESSIONS_DIR}/{session.session_id}.json"
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
    undo = _unstage(root, paths)
    atomic_write(root / session.path, original, root=root)
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
    return bool(git(["ls-files", "--", rel], root).strip())


# ---------------------------------------------------------------------------
# Whole conversations at once (the importers)
# ---------------------------------------------------------------------------


def write_conversation(
    root: Path, conv: Conversation, *, timezone: str | None = None, commit: bool = True
) -> tuple[str, str | None]:
    """Write ``conv`` as one closed transcript and commit it; (path, commit sha)."""
    _check_sid(conv.session_id)
    tz, tzname = resolve_timezone(timezone)
    rel, text, attachments = render_import(conv, tz, tzname, secrets_allowlist(root))
    for path, data in attachments.items():
        _write_attachment(root, path, data)
    if (root / rel).exists():
        raise MemrepoError(f"{rel} already exists", rel)
    atomic_write(root / rel, text, root=root)
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
