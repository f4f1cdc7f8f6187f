"""Following an agent's growing session log into the session's open transcript.

Claude Code writes each session as a JSONL log (``~/.claude/projects/<project>/<id>.jsonl``)
that only grows: resumed sessions and compactions append to the same file. ``follow``
brings the new turns of such a log into memrepo: it parses the whole log with the
importer (:mod:`memrepo.transcript.importers.claude_code`: streamed messages merged,
tool results matched to their calls, thinking, sub-agents and compaction summaries left
out), then appends only what was not written yet to the session's open transcript,
starting it when there is none. Why a re-parse and a count rather than a byte offset:

- a turn is only whole once the next one starts (a reply streams over several records,
  and Claude Code writes its log "asynchronously"), so a turn written at one call may
  grow by the next; the blocks it gained are appended under it, without a new header,
  exactly as a whole import would have rendered them;
- turns are counted in the importer's terms, so the transcript followed turn by turn is
  byte for byte the transcript an import of the finished log would write, and a turn is
  never written twice, whatever the calls in between (a progress file per log, under a
  lock, says how many turns and blocks are written).

A transcript, once closed, never changes: a log that grows after its session was closed
(a resumed session) continues in a new part, ``<id>.2``, ``<id>.3``…, each its own
transcript. ``sweep`` follows every log of a folder (what the scheduled job runs, since
Claude Code deletes logs after 30 days) and closes the sessions whose log has been idle
for ``IDLE_CLOSE``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo import layout
from memrepo.atomic import atomic_write
from memrepo.documents import parse_document, read_document
from memrepo.errors import FormatError, MemrepoError
from memrepo.locks import LockBusy, file_lock

if TYPE_CHECKING:
    from memrepo.transcript.capture import AfterEnd
    from memrepo.transcript.render import Conversation, DraftTurn

# The writing side (capture, the renderer, the importer) is imported where it is used:
# recall reads a progress file on every prompt (load_progress) and must not pay for it.

PROGRESS_DIR = f"{layout.STATE_DIR}/follow"
#: A log nobody wrote to for this long is a session that is over: the sweep closes its
#: transcript (Codex has no SessionEnd; a crashed or killed agent sends none). A session
#: resumed after that continues in a new part.
IDLE_CLOSE = dt.timedelta(hours=3)
#: How long a call waits for another one following the same log (or writing its session).
LOCK_WAIT = 20.0
#: Claude Code keeps its logs here (``CLAUDE_CONFIG_DIR`` moves it).
LOG_FORMAT = "claude-code"


def default_log_dir() -> Path:
    """Where Claude Code keeps session logs: ``$CLAUDE_CONFIG_DIR/projects`` or
    ``~/.claude/projects``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "projects"


@dataclass
class Progress:
    """How much of one log is in transcripts (``.memrepo/follow/<key>.json``)."""

    log: str
    base: str = ""  # the session id the importer gives the log (cc-…)
    session: str = ""  # the memrepo session of the current part (open, or the last closed)
    part: int = 0  # parts started so far (0: nothing written yet)
    turns: int = 0  # turns of the log written, all parts together
    blocks: int = 0  # blocks of the last written turn written
    size: int = 0  # bytes of the log read (whole lines)
    open: bool = False
    closed: list[str] = field(default_factory=list)
    title: str | None = None  # the log's own name for the session (a summary record)


@dataclass
class Followed:
    """What one ``follow`` did."""

    log: str
    appended: int = 0  # turns appended (a turn that grew counts once)
    path: str | None = None  # the transcript written to, or closed
    closed: bool = False
    commit: str | None = None
    redactions: int = 0
    note: str = ""


def _key(log: Path) -> str:
    return hashlib.sha256(str(log.resolve()).encode("utf-8")).hexdigest()[:20]


def progress_file(root: Path, log: Path) -> Path:
    return root / PROGRESS_DIR / f"{_key(log)}.json"


def load_progress(root: Path, log: Path) -> Progress | None:
    try:
        data = json.loads(progress_file(root, log).read_text(encoding="utf-8"))
        return Progress(**data)
    except (OSError, ValueError, TypeError):
        return None


def _save(root: Path, log: Path, p: Progress) -> None:
    atomic_write(progress_file(root, log), json.dumps(asdict(p), indent=1), root=root)


def follow(root: Path, log: Path, *, final: bool = False, lock_wait: float = LOCK_WAIT,
           ended: dt.datetime | None = None, after_end: AfterEnd | None = None
           ) -> Followed:
    """Append the turns of ``log`` not written yet to its session's open transcript
    (started when there is none); with ``final``, then close and commit it (``ended``:
    the end time to record, default now). ``after_end`` runs after each transcript this
    closes (a full part too): the caller's topic judgement."""
    lock = root / PROGRESS_DIR / f"{_key(log)}.lock"
    try:
        with file_lock(lock, wait=lock_wait, poll=0.05):
            return _follow(root, log, final, lock_wait, ended, after_end)
    except LockBusy:
        raise MemrepoError(f"{log} is being captured by another process (waited "
                           f"{lock_wait:g} s)") from None


def _follow(root: Path, log: Path, final: bool, lock_wait: float,
            ended: dt.datetime | None, after_end: AfterEnd | None) -> Followed:
    from memrepo.transcript import capture

    p = load_progress(root, log)
    out = Followed(str(log))
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        if p is None or not (final and p.open):
            raise MemrepoError("agent log not found", log) from None
        data = None
    if data is not None:
        data = data[: data.rfind(b"\n") + 1]  # whole lines: the last may be half written
        if p is None or len(data) != p.size:
            p = _write_new(root, log, data, p, out, lock_wait, after_end)
    if p is None:
        out.note = "no conversation in the log yet"
        return out
    if final and p.open:
        done = capture.end(root, p.session, when=ended, title=p.title)
        if after_end is not None:
            after_end(root, done)
        p.open = False
        p.closed.append(done.path)
        _save(root, log, p)
        out.path, out.closed, out.commit = done.path, True, done.commit
    return out


def _write_new(root: Path, log: Path, data: bytes, p: Progress | None, out: Followed,
               lock_wait: float, after_end: AfterEnd | None) -> Progress | None:
    """Append what ``data`` holds beyond ``p``; the progress after it (None: no turn yet)."""
    from memrepo.transcript.render import DraftTurn
    from memrepo.transcript.session import load_session

    conv = parse_log(root, log, data)
    if conv is None:
        return p
    if p is None:
        p = _adopt(root, log, conv)
    p.title = conv.title or p.title
    turns = conv.turns
    if len(turns) < p.turns:
        out.note = (f"the log holds {len(turns)} turns, {p.turns} were captured: it was "
                    "rewritten; left alone")
        p.size = len(data)
        _save(root, log, p)
        return p
    drafts: list[DraftTurn] = []
    continuing = False
    if p.turns and len(turns[p.turns - 1].blocks) > p.blocks:
        last = turns[p.turns - 1]
        drafts.append(DraftTurn(last.role, last.when, last.blocks[p.blocks:], last.memory))
        continuing = p.open
    drafts += turns[p.turns:]
    if drafts:
        if not p.open:
            _start_part(root, p, conv, drafts[0].when)
        prev = turns[p.turns - 1].blocks[p.blocks - 1] if continuing else None
        out.redactions = _append_parts(root, p, conv, drafts, prev, lock_wait, after_end)
        out.appended = len(drafts)
        out.path = load_session(root, p.session).path
        p.turns, p.blocks = len(turns), len(turns[-1].blocks)
    p.size = len(data)
    _save(root, log, p)
    return p


def parse_log(root: Path, log: Path, data: bytes) -> Conversation | None:
    """The conversation in the log's bytes (None when it has no turn yet). A line that is
    not JSON (a crash mid-write, an edit) is skipped rather than blocking the session."""
    from memrepo.transcript.importers import claude_code
    from memrepo.transcript.importers.run import ImportContext
    from memrepo.transcript.session import secrets_allowlist

    started = dt.datetime.fromtimestamp(log.stat().st_mtime, dt.timezone.utc) \
        if log.exists() else dt.datetime.now(dt.timezone.utc)
    ictx = ImportContext(log, started, allowlist=tuple(secrets_allowlist(root)))
    try:
        convs = claude_code.parse(data, ictx)
    except json.JSONDecodeError:
        good = []
        for line in data.splitlines(keepends=True):
            try:
                json.loads(line)
            except ValueError:
                continue
            good.append(line)
        convs = claude_code.parse(b"".join(good), ictx)
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MemrepoError(f"not a Claude Code log: {type(exc).__name__}: {exc}", log) from None
    return convs[0] if convs and convs[0].turns else None


def _adopt(root: Path, log: Path, conv: Conversation) -> Progress:
    """Progress of a log seen for the first time: its session may be in transcripts
    already (``memory capture import``, or a progress file lost), in one part or more."""
    from memrepo.transcript.render import TURN_LINES
    from memrepo.transcript.session import find_transcript

    p = Progress(str(log.resolve()), base=conv.session_id)
    n = 1
    while True:
        sid = _part_id(p.base, n)
        rel = find_transcript(root, sid)
        if rel is None:
            break
        try:
            doc = read_document(root / rel, rel)
        except FormatError:
            break
        p.part, p.session = n, sid
        written = len(TURN_LINES.findall(doc.body))
        p.turns += written
        if doc.meta.get("ended") is None:
            p.open = True
        else:
            p.closed.append(rel)
        n += 1
    if 0 < p.turns <= len(conv.turns):
        p.blocks = len(conv.turns[p.turns - 1].blocks)
    p.turns = min(p.turns, len(conv.turns))
    return p


def _part_id(base: str, n: int) -> str:
    return base if n == 1 else f"{base}.{n}"


def _start_part(root: Path, p: Progress, conv: Conversation, when: dt.datetime | None) -> None:
    """Open the next part's transcript (the first part carries the log's own session id)."""
    from memrepo.transcript import capture
    from memrepo.transcript.session import find_transcript

    n = p.part + 1
    while find_transcript(root, _part_id(p.base, n)) is not None:
        n += 1
    started = conv.started if n == 1 else (when or dt.datetime.now(dt.timezone.utc))
    session = capture.start(root, session_id=_part_id(p.base, n), model=conv.model,
                            channel=conv.channel, started=started)
    p.part, p.session, p.open = n, session.session_id, True


def _append_parts(root: Path, p: Progress, conv: Conversation, drafts: list[DraftTurn],
                  prev: str | None, lock_wait: float, after_end: AfterEnd | None) -> int:
    """:func:`_append`, going on in a new part when the open one would grow past
    ``validation.max_file_kb`` (capture refuses such an append; a closed part never
    changes, so the part is closed and the turns continue in the next one)."""
    from memrepo.transcript import capture
    from memrepo.transcript.tail import TranscriptFull

    try:
        return _append(root, p.session, conv, drafts, prev, lock_wait)
    except TranscriptFull:
        pass
    count = 0
    for i, draft in enumerate(drafts):
        first = prev if i == 0 else None
        try:
            count += _append(root, p.session, conv, [draft], first, lock_wait)
            continue
        except TranscriptFull:
            done = capture.end(root, p.session, title=p.title)
            if after_end is not None:
                after_end(root, done)
            p.open = False
            p.closed.append(done.path)
            _start_part(root, p, conv, draft.when)
        count += _append(root, p.session, conv, [draft], None, lock_wait)
    return count


def _is_ref(block: str) -> bool:
    """A ``> [tool:…]`` / ``> [attachment:…]`` line (adjacent ones are not spaced apart)."""
    from memrepo.transcript.render import ATTACH

    return block.startswith(("> [", ATTACH))


def _append(root: Path, sid: str, conv: Conversation, drafts: list[DraftTurn],
            prev: str | None, lock_wait: float) -> int:
    """Render ``drafts`` as the importer would and append them; the first continues the
    last written turn when ``prev`` (that turn's last block) is given. Redactions made."""
    from memrepo.transcript.render import TURN_LINES, Conversation, render_conversation
    from memrepo.transcript.session import load_session, session_lock
    from memrepo.transcript.tail import write_turn

    with session_lock(root, sid, timeout=lock_wait):
        session = load_session(root, sid)
        started = next((d.when for d in drafts if d.when), None) or dt.datetime.now(
            dt.timezone.utc)
        part = Conversation(sid, started, drafts, attachments=conv.attachments)
        rel, text, attachments = render_conversation(part, session.tz, session.timezone,
                                                     session.allowlist)
        body = parse_document(text, rel).body
        if prev is not None:
            m = TURN_LINES.search(body)
            if m is not None:
                rest = body[m.end() + 1:]
                body = rest if _is_ref(prev) and rest.startswith("> [") else "\n" + rest
        for path, blob in attachments.items():
            if not (root / path).exists():
                atomic_write(root / path, blob, root=root)
        write_turn(root, session, body)
    return body.count("[REDACTED:")


# ---------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------


def session_logs(base: Path) -> list[Path]:
    """The session logs under a Claude Code projects folder (``<project>/<id>.jsonl``;
    sub-agents' logs, one level further down, are part of their session's)."""
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("*/*.jsonl") if p.is_file())


def sweep(root: Path, base: Path | None = None, *, idle_close: dt.timedelta = IDLE_CLOSE,
          now: float | None = None, lock_wait: float = LOCK_WAIT,
          after_end: AfterEnd | None = None) -> list[tuple[Followed | None, str]]:
    """Follow every log under ``base`` that grew since it was last read, and close the
    sessions whose log has been idle for ``idle_close``; (result, error) per log touched.
    ``after_end`` as for :func:`follow`."""
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
        try:
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
        with log.open("rb") as fh:
            fh.seek(p.size)
            rest = fh.read(1 << 20)
    except OSError:
        return 0
    return len(rest) if b"\n" not in rest else 0
