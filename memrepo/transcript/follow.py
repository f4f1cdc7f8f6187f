"""Following an agent's growing session log into the session's open transcript.

Claude Code writes each session as a JSONL log (``~/.claude/projects/<project>/<id>.jsonl``)
that only grows: resumed sessions and compactions append to the same file. ``follow``
brings the new turns of such a log into memrepo. It reads the log from where the last
call stopped (a progress file per log, under a lock, keeps the offset) and parses only
those new whole lines with the importer (:mod:`memrepo.transcript.importers.claude_code`:
streamed messages merged, tool results matched to their calls, thinking, sub-agents and
compaction summaries left out), then appends their turns to the session's open
transcript, starting it when there is none. What a parse of the new lines alone would get
wrong, the progress file carries over, so the transcript followed turn by turn is byte
for byte the one an import of the finished log writes, and no turn is written twice:

- a turn is only whole once the next one starts (a reply streams over several records,
  and Claude Code writes its log "asynchronously"): when the new lines begin with the
  role the last turn read had, they continue that turn, and its new blocks are appended
  under it, without a new header, as a whole import would render them;
- a tool call is written with its result: the lines from a call still waiting for its
  result are left for the next read (unless the session is ending, or a prompt came
  after it), and a result whose call was written earlier (without it: it came too late)
  is not given a line of its own;
- a last line not ended yet is left for the next read.

A log path comes from a hook payload and may name anything: it is read only if it is a
regular file, never through a symlink (:mod:`memrepo.transcript.logfile`). One call reads
a log CHUNK_BYTES at a time (the memory it needs) and starts no new chunk past RUN_BYTES
or RUN_SECONDS; what is left is read by the next call (the next hook, the sweep). A log
with more than MAX_UNREAD bytes not read yet is refused rather than followed from its
tail: the tail of a log starts mid-turn (a result without its call, a reply without its
prompt) and the transcript would silently lack the session's start, while no session
writes that much between two hooks (the refusal is logged). A record longer than
LINE_BYTES (a huge pasted file) is passed over.

A transcript, once closed, never changes: a log that grows after its session was closed (a
resumed session) continues in a new part, ``<id>.2``, ``<id>.3``…, each its own
transcript. ``sweep`` follows every log of a folder (the scheduled job: Claude Code deletes
logs after 30 days) and closes the sessions whose log has been idle for ``IDLE_CLOSE``.
Text the progress file keeps (the session's title, its model) is redacted before it is
stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo import clock, layout
from memrepo.atomic import atomic_write
from memrepo.documents import parse_document, read_document
from memrepo.errors import FormatError, MemrepoError
from memrepo.locks import LockBusy, file_lock
from memrepo.transcript import messages as M
from memrepo.transcript.logfile import Lines, LogFile, LogRefused, open_log

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
#: Bytes of a log read and parsed at a time: what bounds a call's memory.
CHUNK_BYTES = 8 << 20
#: A record (one line) longer than this is passed over rather than held in memory.
LINE_BYTES = 32 << 20
#: Bytes of a log after which a call starts no new chunk (a chunk may read on: a record
#: longer than a chunk, up to LINE_BYTES; a tool call's result, up to four chunks); the
#: next call goes on from there.
RUN_BYTES = 64 << 20
#: After this long, a call starts no new chunk (the one being written is finished).
RUN_SECONDS = 30.0
#: More than this not read yet, and the log is refused (see the module's docstring).
MAX_UNREAD = 1 << 30
#: Tool calls waiting for their result that a progress file remembers, at most.
MAX_PENDING = 64


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
    turns: int = 0  # turns of the log read, all parts together
    blocks: int = 0  # blocks of the last turn read
    size: int = 0  # bytes of the log read (whole lines)
    open: bool = False
    closed: list[str] = field(default_factory=list)
    title: str | None = None  # the log's own name for the session (a summary), redacted
    role: str = ""  # the role of the last turn read: new lines of that role continue it
    when: str | None = None  # that turn's time (ISO 8601)
    ref: bool = False  # its last block is a ``> [...]`` line
    pending: list[str] = field(default_factory=list)  # tool calls read, no result yet (digests)
    skip: int = 0  # turns already in transcripts when the log was first met, still to pass
    passed: bool = False  # the last turn read was one of those
    inside: bool = False  # the read stopped inside a line too long to keep
    model: str | None = None  # the log's first model, redacted


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
    read: int = 0  # bytes of the log read


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
           ended: dt.datetime | None = None, after_end: AfterEnd | None = None,
           budget: float = RUN_SECONDS) -> Followed:
    """Append the turns of ``log`` not written yet to its session's open transcript
    (started when there is none); with ``final``, then close and commit it (``ended``:
    the end time to record, default now) once the log is read to its end. ``after_end``
    runs after each transcript this closes (a full part too): the caller's topic
    judgement. ``budget``: seconds after which no new chunk of the log is started."""
    lock = root / PROGRESS_DIR / f"{_key(log)}.lock"
    try:
        with file_lock(lock, wait=lock_wait, poll=0.05):
            return _follow(root, log, final, lock_wait, ended, after_end, budget)
    except LockBusy:
        raise MemrepoError(f"{log} is being captured by another process (waited "
                           f"{lock_wait:g} s)") from None


def _follow(root: Path, log: Path, final: bool, lock_wait: float, ended: dt.datetime | None,
            after_end: AfterEnd | None, budget: float) -> Followed:
    from memrepo.transcript import capture

    p = load_progress(root, log)
    out = Followed(str(log))
    whole = True
    try:
        f = open_log(log, largest=(p.size if p else 0) + MAX_UNREAD)
    except (FileNotFoundError, LogRefused) as exc:
        if p is None or not (final and p.open):
            if isinstance(exc, LogRefused):
                raise
            if final and p is None:  # `claude mcp list` ends a session it never logged
                return Followed(str(log), note="no log, no session: nothing to capture")
            raise MemrepoError("agent log not found", log) from None
        why = exc.message if isinstance(exc, LogRefused) else "gone"
        out.note = f"the log is {why}: closed with the turns written before"
    else:
        with f:
            p, whole = _read_new(root, log, f, p, out, final, (lock_wait, after_end),
                                 time.monotonic() + budget)
    if p is None or not p.base:
        out.note = out.note or "no conversation in the log yet"
        return out
    if final and p.open and whole:
        done = capture.end(root, p.session, when=ended, title=p.title)
        if after_end is not None:
            after_end(root, done)
        p.open = False
        p.closed.append(done.path)
        _save(root, log, p)
        out.path, out.closed, out.commit = done.path, True, done.commit
    return out


def _read_new(root: Path, log: Path, f: LogFile, p: Progress | None, out: Followed,
              final: bool, how: tuple[float, AfterEnd | None], until: float
              ) -> tuple[Progress, bool]:
    """Read the log on from ``p.size``, a chunk at a time, appending the turns of each,
    until its end, as many chunks as RUN_BYTES holds, or ``until``; (the progress, whether
    the log was read to its end). The progress is saved after each chunk that moved it."""
    q = p or Progress(str(log.resolve()))
    stored = p is not None
    if f.size < q.size:
        _note(out, f"the log is shorter than the {q.size} bytes read before: rewritten; "
              "followed on from its end")
        q.size, q.inside = f.size, not f.ends_line(f.size)
        _save(root, log, q)
    while True:
        before = q.size
        lines, data, used = _chunk(f, q, final, out)
        q.size, q.inside = (lines.end, lines.inside) if used == len(lines.data) else (
            lines.start + used, False)
        if lines.dropped and lines.inside:
            _note(out, f"a record longer than {LINE_BYTES} bytes was passed over")
        if data:
            _take(root, log, data, q, out, how, f.mtime)
        whole = lines.eof and q.size >= lines.end
        if whole:
            q.skip = 0  # transcripts held more turns than the whole log: none is passed
        if q.size != before and (q.base or stored or not lines.eof):
            _save(root, log, q)
            stored = True
        if lines.eof:
            return q, whole
        if out.read + CHUNK_BYTES > RUN_BYTES or time.monotonic() >= until:
            _note(out, f"stopped after {out.read} bytes (one call's bound); "
                  f"{max(0, f.size - q.size)} bytes left for the next call")
            return q, False


def _chunk(f: LogFile, q: Progress, final: bool, out: Followed) -> tuple[Lines, bytes, int]:
    """The next chunk of the log, and what of it to parse now and how many bytes that is
    (:func:`_seam`). A chunk whose first line is a tool call still waiting for its result
    reads on, up to four chunks in all, for the result to come with it; at the end of
    the log, the call waits for the next read (unless ``final``)."""
    lines = f.lines(q.size, CHUNK_BYTES, inside=q.inside, longest=LINE_BYTES)
    out.read += lines.read
    while True:
        data, used, pending = _seam(lines.data, q.pending, hold=not (final and lines.eof))
        if used or not lines.data or lines.eof:  # at the end: the result comes next time
            break
        if lines.inside or lines.read >= 4 * CHUNK_BYTES:
            data, used, pending = _seam(lines.data, q.pending, hold=False)  # no result
            break
        more = f.lines(lines.end, CHUNK_BYTES, longest=LINE_BYTES)
        out.read += more.read
        lines = Lines(lines.data + more.data, lines.start, more.end, lines.read + more.read,
                      lines.dropped + more.dropped, more.inside, more.eof)
    q.pending = pending
    return lines, data, used


def _note(out: Followed, text: str) -> None:
    if text not in out.note:
        out.note = f"{out.note}; {text}" if out.note else text


def _take(root: Path, log: Path, data: bytes, p: Progress, out: Followed,
          how: tuple[float, AfterEnd | None], mtime: float) -> None:
    """Append the turns in ``data`` (whole lines of the log after the last read): the
    first continues the last turn read when it has its role; turns already in
    transcripts when the log was first met (``p.skip``) are passed over."""
    from memrepo.secrets import redact
    from memrepo.transcript.render import DraftTurn
    from memrepo.transcript.session import load_session, secrets_allowlist

    conv = parse_log(root, log, data, mtime)
    if conv is None:
        return
    allow = secrets_allowlist(root)
    if not p.base:
        _adopt(root, p, conv)
    p.title = p.title or (redact(conv.title, allow)[0] if conv.title else None)
    p.model = p.model or (redact(conv.model, allow)[0] if conv.model else None)
    turns = conv.turns
    drafts: list[DraftTurn] = []
    prev: bool | None = None  # continuing the last written turn: whether it ends in a ref
    if p.role and turns[0].role == p.role:
        head, turns = turns[0], turns[1:]
        if not p.passed:
            when = dt.datetime.fromisoformat(p.when) if p.when else head.when
            drafts.append(DraftTurn(p.role, when, head.blocks, head.memory))
            prev = p.ref if p.open else None
        p.blocks += len(head.blocks)
        p.ref = _is_ref(head.blocks[-1])
        p.when = p.when or (head.when.isoformat() if head.when else None)
    passed = min(p.skip, len(turns))
    p.skip -= passed
    drafts += turns[passed:]
    if turns:
        last = turns[-1]
        p.role, p.blocks, p.ref = last.role, len(last.blocks), _is_ref(last.blocks[-1])
        p.when, p.passed = last.when.isoformat() if last.when else None, passed == len(turns)
        p.turns += len(turns)
    if drafts:
        if not p.open:
            _start_part(root, p, conv, drafts[0].when)
        out.redactions += _append_parts(root, p, conv, drafts, prev, *how)
        out.appended += len(drafts)
        out.path = load_session(root, p.session).path


def _tag(call_id: str) -> str:
    """What a progress file keeps of a tool call's id (never text from the log)."""
    return hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:16]


def _seam(data: bytes, earlier: list[str], hold: bool) -> tuple[bytes, int, list[str]]:
    """(what of ``data`` to parse now, how many of its bytes that is, the tool calls
    still waiting for their result after them).

    A result whose call an earlier read wrote is dropped from the record (the call's line
    is written; parsed alone, the result would get a line of its own). With ``hold``, the
    lines from the first call whose result is not among them are left for the next read,
    so that the call is written with its result; when that is the first line, nothing is
    parsed (0 bytes): the caller reads further, or parses all without ``hold``. A call
    with a prompt after it and no result is not waited for: the agent went on without
    one (an interrupted session), and it must not hold back the rest."""
    rows = data.splitlines(keepends=True)
    opened: dict[str, int] = {}
    answered: dict[str, int] = {}
    prompt = -1  # the last line that is a user's prompt (a user record, no tool result)
    for i, row in enumerate(rows):
        msg = _tool_message(row) or {}
        for c in M.tool_calls(msg):
            opened.setdefault(_tag(c), i)
        results = M.tool_results(msg)
        for c in results:
            answered.setdefault(_tag(c), i)
        prompt = i if not results and b'"type":"user"' in row else prompt
    cut = len(rows)
    while hold:
        crossing = [o for c, o in opened.items() if o < cut and answered.get(c, cut) >= cut
                    and (c in answered or o > prompt)]
        if not crossing:
            break
        if min(crossing) == 0:
            return b"", 0, list(earlier)
        cut = min(crossing)
    gone = {c for c, i in answered.items() if i < cut}
    drop = gone & set(earlier)
    kept = [_without_results(r, drop) if drop and b'"tool_use' in r else r for r in rows[:cut]]
    waiting = [c for c in earlier if c not in gone]
    waiting += [c for c, o in opened.items() if o < cut and c not in gone and c not in earlier]
    return b"".join(kept), sum(map(len, rows[:cut])), waiting[-MAX_PENDING:]


def _tool_message(row: bytes) -> dict[str, Any] | None:
    """The message of a log record that opens or answers a tool call, else None."""
    if b'"tool_use' not in row:
        return None
    try:
        rec = json.loads(row)
    except (ValueError, RecursionError):
        return None
    msg = rec.get("message") if isinstance(rec, dict) else None
    return msg if isinstance(msg, dict) else None


def _without_results(row: bytes, drop: set[str]) -> bytes:
    """The record ``row`` without its ``tool_result`` blocks answering ``drop``."""
    rec = json.loads(row)
    content = rec["message"].get("content")
    if not isinstance(content, list):
        return row
    keep = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result"
                                      and _tag(str(b.get("tool_use_id"))) in drop)]
    if len(keep) == len(content):
        return row
    rec["message"]["content"] = keep
    return json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n"


def parse_log(root: Path, log: Path, data: bytes, mtime: float | None = None
              ) -> Conversation | None:
    """The conversation in the log's bytes (None when it has no turn yet). A line that is
    not JSON (a crash mid-write, an edit) is skipped rather than blocking the session.
    ``mtime``: the log's, the start time when no record has one (default: stat it)."""
    from memrepo.transcript.importers import claude_code
    from memrepo.transcript.importers.run import ImportContext
    from memrepo.transcript.session import secrets_allowlist

    if mtime is None:
        mtime = log.stat().st_mtime if log.exists() else time.time()
    started = dt.datetime.fromtimestamp(mtime, dt.timezone.utc)
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


def _adopt(root: Path, p: Progress, conv: Conversation) -> None:
    """Take up a log met for the first time: its session may be in transcripts already
    (``memory capture import``, or a progress file lost), in one part or more; as many
    turns as they hold are passed over."""
    from memrepo.transcript.render import TURN_LINES
    from memrepo.transcript.session import find_transcript

    p.base = conv.session_id
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
        p.skip += len(TURN_LINES.findall(doc.body))
        if doc.meta.get("ended") is None:
            p.open = True
        else:
            p.closed.append(rel)
        n += 1


def _part_id(base: str, n: int) -> str:
    return base if n == 1 else f"{base}.{n}"


def _start_part(root: Path, p: Progress, conv: Conversation, when: dt.datetime | None) -> None:
    """Open the next part's transcript (the first part carries the log's own session id)."""
    from memrepo.transcript import capture
    from memrepo.transcript.session import find_transcript

    n = p.part + 1
    while find_transcript(root, _part_id(p.base, n)) is not None:
        n += 1
    started = conv.started if n == 1 else (when or clock.now().astimezone(dt.timezone.utc))
    session = capture.start(root, session_id=_part_id(p.base, n), model=p.model,
                            channel=conv.channel, started=started)
    p.part, p.session, p.open = n, session.session_id, True


def _append_parts(root: Path, p: Progress, conv: Conversation, drafts: list[DraftTurn],
                  prev: bool | None, lock_wait: float, after_end: AfterEnd | None) -> int:
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
            prev: bool | None, lock_wait: float) -> int:
    """Render ``drafts`` as the importer would and append them; the first continues the
    last written turn when ``prev`` is given (whether that turn's last block is a
    ``> [...]`` line). Redactions made."""
    from memrepo.transcript.render import TURN_LINES, Conversation, render_conversation
    from memrepo.transcript.session import load_session, session_lock
    from memrepo.transcript.tail import write_turn

    with session_lock(root, sid, timeout=lock_wait):
        session = load_session(root, sid)
        started = next((d.when for d in drafts if d.when), None) or clock.now().astimezone(
            dt.timezone.utc)
        part = Conversation(sid, started, drafts, attachments=conv.attachments)
        rel, text, attachments = render_conversation(part, session.tz, session.timezone,
                                                     session.allowlist)
        body = parse_document(text, rel).body
        if prev is not None:
            m = TURN_LINES.search(body)
            if m is not None:
                rest = body[m.end() + 1:]
                body = rest if prev and rest.startswith("> [") else "\n" + rest
        for path, blob in attachments.items():
            if not (root / path).exists():
                atomic_write(root / path, blob, root=root)
        write_turn(root, session, body)
    return body.count("[REDACTED:")
