"""The transcript writer: one immutable, redacted markdown file per session (seed 000 §2.1, §8.2).

Why it looks like this:

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
from typing import Any

from memrepo.errors import MemrepoError
from memrepo.locks import LockBusy, file_lock
from memrepo.secrets import redact

#: Where per-session state and locks live (gitignored by the skeleton's `.memrepo/`).
STATE_DIR = ".memrepo/sessions"
ROLES = ("user", "agent", "system")
#: Lines of content that would read as a turn header are escaped with a backslash.
_HEADER_LIKE = re.compile(r"^(##\s+\d{1,2}:\d{2}\b)", re.MULTILINE)
_TURN = re.compile(
    r"^## (\d\d):(\d\d) — (user|agent|system)((?<=agent) \[memory\])?\s*$", re.MULTILINE
)
_KNOWLEDGE = re.compile(
    r"^> \[knowledge:(?P<action>[a-z_-]+)\] (?P<path>\S+)(?: — (?P<summary>.*))?$", re.MULTILINE
)
_ATTACHMENT = re.compile(r"^> \[attachment:(?P<path>attachments/[^\]]+)\]", re.MULTILINE)
_SID = re.compile(r"^[a-z0-9][a-z0-9._-]*$", re.IGNORECASE)
#: Longest argument or result summary kept on a tool line.
TOOL_SUMMARY_CHARS = 200
#: Provisional slug of a session started without a topic; renamed at end.
PROVISIONAL_SLUG = "session"


# ---------------------------------------------------------------------------
# Time zones
# ---------------------------------------------------------------------------


def resolve_timezone(name: str | None = None) -> tuple[dt.tzinfo, str]:
    """The zone a session records its turn times in, and its name for the frontmatter.

    An IANA name (``Europe/Paris``) keeps DST right across a long session; a fixed offset
    (``+02:00``) is used when the machine's zone has no name.
    """
    if not name:
        name = _local_zone_name()
        if name is None:
            offset = dt.datetime.now().astimezone().utcoffset() or dt.timedelta()
            return dt.timezone(offset), _offset_label(offset)
    if name.upper() in ("Z", "UTC"):
        return dt.timezone.utc, "UTC"
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if m:
        delta = dt.timedelta(hours=int(m[2]), minutes=int(m[3]))
        delta = -delta if m[1] == "-" else delta
        return dt.timezone(delta), _offset_label(delta)
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name), name
    except (ImportError, ValueError, KeyError, OSError):
        raise MemrepoError(
            f"unknown time zone {name!r}: use an IANA name (Europe/Paris) or an offset (+02:00)"
        ) from None


def _offset_label(offset: dt.timedelta) -> str:
    minutes = int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _local_zone_name() -> str | None:
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return None
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else None


def now_in(tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.now(tz).replace(microsecond=0)


# ---------------------------------------------------------------------------
# Text helpers shared with the importers
# ---------------------------------------------------------------------------


def escape_content(text: str) -> str:
    """Content lines that look like turn headers get a backslash, so turns stay unambiguous."""
    return _HEADER_LIKE.sub(r"\\\1", text)


def one_line(text: str, limit: int = TOOL_SUMMARY_CHARS) -> str:
    """Whitespace collapsed to single spaces, cut at ``limit`` characters with an ellipsis.

    Callers redact first (:func:`redacted_line`): a secret cut in half no longer matches
    its rule. A cut never splits a ``[REDACTED:kind]`` placeholder either.
    """
    s = " ".join(str(text).split())
    if len(s) <= limit:
        return s
    cut = s[: limit - 1]
    start = cut.rfind("[")
    if start >= 0 and "]" not in cut[start:] and s.startswith("[REDACTED:", start):
        cut = cut[:start]
    return cut.rstrip() + "…"


def redacted_line(
    text: str, allowlist: Sequence[str] = (), limit: int = TOOL_SUMMARY_CHARS
) -> tuple[str, int]:
    """``text`` redacted, then made one line of at most ``limit`` characters; and the count.

    Redaction comes first so that a secret straddling the cut is still recognised whole.
    """
    clean, count = redact(str(text), allowlist)
    return one_line(clean, limit), count


def tool_line(name: str, args: str = "", result: str = "") -> str:
    """``> [tool:NAME] args → result`` on one line, no full JSON (seed 000 §2.1).

    ``args`` and ``result`` must already be redacted (:func:`redacted_tool_line`).
    """
    name = re.sub(r"[^\w.:/-]+", "_", name.strip()) or "tool"
    line = f"> [tool:{name}]"
    if args.strip():
        line += " " + one_line(args)
    if result.strip():
        line += " → " + one_line(result)
    return line


def redacted_tool_line(
    name: str, args: str = "", result: str = "", allowlist: Sequence[str] = ()
) -> tuple[str, int]:
    """:func:`tool_line` of redacted parts (each redacted before it is cut); and the count."""
    name, n_name = redact(name, allowlist)
    args, n_args = redacted_line(args, allowlist)
    result, n_result = redacted_line(result, allowlist)
    return tool_line(name, args, result), n_name + n_args + n_result


def turn_header(when: dt.datetime, role: str, memory: bool = False) -> str:
    """``## HH:MM — role``; only ``agent`` turns can be memory operations (seed 000 §2.1)."""
    if role not in ROLES:
        raise MemrepoError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if memory and role != "agent":
        raise MemrepoError(
            f"only agent turns can be memory operations ('## HH:MM — agent [memory]', seed 000 "
            f"§2.1), not {role} turns"
        )
    return f"## {when:%H:%M} — {role}" + (" [memory]" if memory else "")


def slug_from_messages(messages: Sequence[str], max_words: int = 6) -> str:
    """A kebab-case slug from the first messages: their first meaningful words."""
    words: list[str] = []
    for text in messages:
        text = re.sub(r"\[REDACTED:[^\]]*\]|```.*?```|`[^`]*`|https?://\S+", " ", text, flags=re.S)
        for w in re.findall(r"[a-z0-9]+", text.lower()):
            if w not in _STOPWORDS and (len(w) > 1 or w.isdigit()):
                words.append(w)
            if len(words) >= max_words:
                return "-".join(words)
    return "-".join(words) or PROVISIONAL_SLUG


_STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        "a an the and or but of to in on at for with from by is are was were be been it this "
        "that these those i you we me my your our can could would should please let lets let's "
        "do does hi hello hey ok okay so just",
    )
)


def attachment_name(
    data: bytes, name: str, when: dt.datetime, allowlist: Sequence[str] = ()
) -> str:
    """``attachments/YYYY/MM/DD/<sha8>-<name>``: content-addressed, so re-attaching is free.

    A secret in the file name is redacted before the name is sanitised (sanitising first
    could break it into something no rule recognises), and again after, in case sanitising
    joined pieces into a new match; the placeholder's kind stays readable.
    """
    stem = Path(name).name
    for _ in range(2):
        stem = redact(stem, allowlist)[0].replace("[REDACTED:", "REDACTED-")
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.")
    import hashlib  # here, not at the top: `capture append` (every turn) never needs it

    digest = hashlib.sha256(data).hexdigest()[:8]
    return f"attachments/{when:%Y/%m/%d}/{digest}-{(stem or 'file')[-80:]}"


def redact_attachment(data: bytes, allowlist: Sequence[str] = ()) -> tuple[bytes, int]:
    """Attachments that are UTF-8 text are redacted like a transcript; binaries are kept."""
    if b"\0" in data[:8192]:
        return data, 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data, 0
    clean, count = redact(text, allowlist)
    return (clean.encode("utf-8"), count) if count else (data, 0)


def store_attachment(
    root: Path, data: bytes, name: str, when: dt.datetime, allowlist: Sequence[str] = ()
) -> str:
    """Write an attachment (never embedded in a transcript), text redacted; its repo path."""
    from memrepo.atomic import atomic_write

    data = redact_attachment(data, allowlist)[0]
    rel = attachment_name(data, name, when, allowlist)
    target = root / rel
    if not target.exists():
        atomic_write(target, data)
    return rel


# ---------------------------------------------------------------------------
# Session state and locking
# ---------------------------------------------------------------------------


@dataclass
class Session:
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


def save_session(root: Path, session: Session) -> None:
    from memrepo.atomic import atomic_write

    atomic_write(_state_file(root, session.session_id), json.dumps(session.__dict__, indent=1))


def load_session(root: Path, session_id: str) -> Session:
    """The open session ``session_id``: from its state file, else found on disk."""
    _check_sid(session_id)
    try:
        data = json.loads(_state_file(root, session_id).read_text(encoding="utf-8"))
        session = Session(**data)
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


def _missing(root: Path, session: Session) -> MemrepoError:
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

    for full in sorted((root / "raw/conversations").glob(f"*/*/*/????-{session_id}-*.md")):
        rel = full.relative_to(root).as_posix()
        try:
            doc = documents.read_document(full, rel)
        except MemrepoError:
            continue
        if doc.meta.get("session_id") == session_id and doc.meta.get("ended") is None:
            return rel
    return None


def _session_from_transcript(root: Path, rel: str) -> Session:
    from memrepo import documents

    doc = documents.read_document(root / rel, rel)
    tzname = doc.meta.get("timezone")
    if not isinstance(tzname, str):
        started = documents.parse_datetime(doc.meta.get("started"))
        off = started.utcoffset() if started else None
        tzname = _offset_label(off or dt.timedelta())
    return Session(
        session_id=str(doc.meta["session_id"]),
        path=rel,
        timezone=tzname,
        allowlist=secrets_allowlist(root),
        provisional_slug=False,
    )


def open_sessions(root: Path) -> list[Session]:
    """Every session with a state file (started and not ended on this machine)."""
    out = []
    for f in sorted((root / STATE_DIR).glob("*.json")):
        try:
            out.append(Session(**json.loads(f.read_text(encoding="utf-8"))))
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


def render_frontmatter(meta: dict[str, Any]) -> str:
    """``---`` YAML ``---`` with ISO 8601 datetimes (``2026-02-16T18:45:00+01:00``)."""
    from memrepo import yamlsafe

    text = yamlsafe.dump(meta)
    text = re.sub(r"^(\w+): (\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)", r"\1: \2T\3", text, flags=re.M)
    return f"---\n{text.rstrip()}\n---\n"


def _redact(text: str, allowlist: Sequence[str]) -> str:
    return redact(text, allowlist)[0]


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
) -> Session:
    """Create the open transcript (frontmatter and title) and the session's state file."""
    import secrets  # the stdlib's, for a random id: only `start` needs it

    from memrepo import layout
    from memrepo.atomic import atomic_write

    session_id = _check_sid(session_id or f"ses_{secrets.token_hex(4)}")
    if _state_file(root, session_id).exists() or find_open_transcript(root, session_id):
        raise MemrepoError(f"session {session_id} is already open; end it first")
    tz, tzname = resolve_timezone(timezone)
    when = started.astimezone(tz).replace(microsecond=0) if started else now_in(tz)
    allow = secrets_allowlist(root)
    topic = _redact(topic, allow).strip() if topic else None
    slug = slug_from_messages([topic], 6) if topic else PROVISIONAL_SLUG
    meta: dict[str, Any] = {"session_id": session_id, "started": when, "timezone": tzname}
    for key, value in (("model", model), ("channel", channel), ("topic", topic)):
        if value:
            meta[key] = _redact(value, allow)
    meta["tags"] = [_redact(t, allow) for t in tags]
    body = f"\n# {topic}\n" if topic else ""
    rel = layout.transcript_path(when, session_id, slug)
    if (root / rel).exists():
        raise MemrepoError(f"{rel} already exists", rel)
    session = Session(session_id, rel, tzname, allow, provisional_slug=topic is None)
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
    roles = _TURN.findall(tail)
    last_line = tail.rstrip("\n").rsplit("\n", 1)[-1]
    return (roles[-1][2] if roles else None), last_line.startswith("> [")


def _count_redactions(raw: str, clean: str) -> int:
    return clean.count("[REDACTED:") - raw.count("[REDACTED:")


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


def _append_line(
    root: Path, session: Session, line: str, role: str | None, when: dt.datetime | None
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
    from memrepo import documents, layout
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
        meta["turns"] = len(_TURN.findall(body))
        if tokens_in is not None:
            meta["tokens_in"] = tokens_in
        if tokens_out is not None:
            meta["tokens_out"] = tokens_out
        changes = [*_knowledge_lines(body), *knowledge_changes]
        if changes:
            meta["knowledge_changes"] = changes
        meta["redactions"] = _redaction_count(meta, body)
        rel = session.path
        if session.provisional_slug and not _tracked(root, rel):
            slug = slug_from_messages(_first_messages(body))
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
    root: Path, session: Session, rel: str, original: bytes, paths: Sequence[str],
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


def _knowledge_lines(body: str) -> list[dict[str, str]]:
    out = []
    for m in _KNOWLEDGE.finditer(body):
        item = {"path": m["path"], "action": m["action"]}
        if m["summary"]:
            item["summary"] = m["summary"].strip()
        out.append(item)
    return out


def _first_messages(body: str, n: int = 3) -> list[str]:
    """The first ``n`` user turns (else any turns) of a body, for the slug."""
    parts = _TURN.split(body)
    turns = []  # (role, text)
    for i in range(1, len(parts) - 4, 5):
        turns.append((parts[i + 2], parts[i + 4]))
    users = [t for r, t in turns if r == "user"] or [t for _, t in turns]
    return [re.sub(r"^> \[.*$", "", t, flags=re.M) for t in users[:n]]


def _tracked(root: Path, rel: str) -> bool:
    from memrepo.git import git

    return bool(git(["ls-files", "--", rel], root).strip())


# ---------------------------------------------------------------------------
# Whole conversations at once (the importers)
# ---------------------------------------------------------------------------


@dataclass
class Turn:
    """One turn of an imported conversation: blocks are paragraphs or ``> [...]`` lines."""

    role: str
    when: dt.datetime | None = None
    blocks: list[str] = field(default_factory=list)
    memory: bool = False


@dataclass
class Conversation:
    """A whole conversation, as an importer reads it, before it becomes a transcript."""

    session_id: str
    started: dt.datetime
    turns: list[Turn]
    ended: dt.datetime | None = None
    model: str | None = None
    channel: str | None = None
    title: str | None = None
    tags: list[str] = field(default_factory=list)
    source: dict[str, str] = field(default_factory=dict)
    attachments: dict[str, bytes] = field(default_factory=dict)  # placeholder -> bytes
    tokens_in: int | None = None
    tokens_out: int | None = None


def render_conversation(
    root: Path, conv: Conversation, tz: dt.tzinfo, tzname: str, allowlist: Sequence[str]
) -> tuple[str, str, list[str]]:
    """(repo path, full text, attachment paths) of a closed transcript for ``conv``."""
    from memrepo import layout

    started = conv.started.astimezone(tz).replace(microsecond=0)
    attachments: list[str] = []
    body_parts: list[str] = []
    title = _redact(conv.title, allowlist).strip() if conv.title else None
    if title:
        body_parts.append(f"\n# {title}\n")
    last: dt.datetime = started
    for turn in conv.turns:
        blocks = []
        for block in turn.blocks:
            if block.startswith("\0attach:"):
                key = block[len("\0attach:") :]
                data = conv.attachments.get(key)
                if data is None:
                    missing = redacted_line(key, allowlist, 120)[0]
                    blocks.append(f"> [attachment:missing:{missing}]")
                    continue
                name = re.sub(r"^[0-9a-f]{8}-", "", key)  # the importer's dedup prefix
                rel = store_attachment(root, data, name, (turn.when or last).astimezone(tz),
                                       allowlist)
                attachments.append(rel)
                blocks.append(f"> [attachment:{rel}]")
            else:
                blocks.append(escape_content(_redact(block, allowlist).strip("\n").rstrip()))
        blocks = [b for b in blocks if b.strip()]
        if not blocks:
            continue
        when = (turn.when or last).astimezone(tz)
        last = max(last, when)
        # Adjacent ``> [...]`` lines stay together; other blocks are paragraphs.
        text = ""
        for i, b in enumerate(blocks):
            sep = "\n" if i and b.startswith("> [") and blocks[i - 1].startswith("> [") else "\n\n"
            text += (sep if i else "") + b
        body_parts.append(f"\n{turn_header(when, turn.role, turn.memory)}\n{text}\n")
    body = "".join(body_parts)
    ended = (conv.ended or last).astimezone(tz).replace(microsecond=0)
    ended = max(ended, started)
    slug = slug_from_messages([title] if title else _first_messages(body))
    meta: dict[str, Any] = {"session_id": conv.session_id, "started": started, "ended": ended,
                            "timezone": tzname}
    if conv.model:
        meta["model"] = conv.model
    if conv.channel:
        meta["channel"] = conv.channel
    if title:
        meta["topic"] = title
    meta["tags"] = list(conv.tags)
    if conv.tokens_in is not None:
        meta["tokens_in"] = conv.tokens_in
    if conv.tokens_out is not None:
        meta["tokens_out"] = conv.tokens_out
    meta["turns"] = len(_TURN.findall(body))
    meta["redactions"] = body.count("[REDACTED:")
    changes = _knowledge_lines(body)
    if changes:
        meta["knowledge_changes"] = changes
    if conv.source:
        meta["source"] = dict(conv.source)
    rel = layout.transcript_path(started, conv.session_id, slug)
    return rel, render_frontmatter(meta) + body, attachments


def find_transcript(root: Path, session_id: str, started: dt.datetime | None = None) -> str | None:
    """Any transcript of ``session_id`` (the re-import check): its day first, then git's index."""
    from memrepo.git import git

    if started is not None:
        day = root / f"raw/conversations/{started:%Y/%m/%d}"
        for full in day.glob(f"????-{session_id}-*.md"):
            return full.relative_to(root).as_posix()
    out = git(["ls-files", "-z", "--", f":(glob)raw/conversations/**/*-{session_id}-*.md"], root)
    hits = [p for p in out.split("\0") if p]
    if hits:
        return hits[0]
    for full in (root / "raw/conversations").glob(f"*/*/*/????-{session_id}-*.md"):
        return full.relative_to(root).as_posix()
    return None


def write_conversation(
    root: Path, conv: Conversation, *, timezone: str | None = None, commit: bool = True
) -> tuple[str, str | None]:
    """Write ``conv`` as one closed transcript and commit it; (path, commit sha)."""
    from memrepo.atomic import atomic_write

    tz, tzname = resolve_timezone(timezone)
    rel, text, attachments = render_conversation(root, conv, tz, tzname, secrets_allowlist(root))
    if (root / rel).exists():
        raise MemrepoError(f"{rel} already exists", rel)
    atomic_write(root / rel, text)
    sha = None
    if commit:
        from memrepo import layout
        from memrepo.commit.write import commit_paths

        slug = layout.TRANSCRIPT_PATH.match(rel)["rest"][len(conv.session_id) + 1 :]  # type: ignore[index]
        paths = [rel, *sorted(set(attachments))]
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
