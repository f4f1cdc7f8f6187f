"""Reading a conversation back: the one :class:`Turn`, and a session read from any source.

A session comes as a transcript (markdown, seed 000 §2.1), as chat messages (JSON or
JSONL, :mod:`memrepo.transcript.messages`), or as text on stdin that is either. It is read
two ways, into the same turns:

- *what was said* (:func:`read_transcript`, :func:`read_session`): the prose of each turn,
  without tool and attachment lines, code blocks or tool output: what extraction, condense
  and ``memory flush`` take notes from;
- *as written* (:func:`read_history`): each turn verbatim, header and tool lines included,
  with its line span or message number: what ``memory compile --session`` shows in P4.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, worktree
from memrepo.documents import decode, parse_datetime, parse_document
from memrepo.errors import FormatError, MemrepoError
from memrepo.layout import TURN_HEADER, is_transcript, source_ref
from memrepo.secrets import redact
from memrepo.transcript import messages as M

_QUOTE_LINE = re.compile(r"^> \[(?:tool|knowledge|attachment)[:\]]")


@dataclass
class Turn:
    """One turn of a session: who spoke, what they said, and where it is in its file."""

    role: str  # user | agent | system (a chat message read as written keeps its own role)
    text: str
    start: int = 0  # first line (the header) or the message's number
    end: int = 0  # last non-blank line, or the message's number
    unit: str = "line"  # line | message
    time: str = ""  # a transcript turn's ``HH:MM``
    memory: bool = False  # an ``agent [memory]`` turn


@dataclass
class Transcript:
    """A session's frontmatter and turns (what was said), and a hash of its text."""

    path: str
    meta: dict[str, Any]
    turns: list[Turn]
    title: str
    content_hash: str
    text: str = field(repr=False, default="")

    @property
    def session_id(self) -> str:
        return str(self.meta.get("session_id", ""))

    @property
    def started(self) -> dt.datetime | None:
        return parse_datetime(self.meta.get("started"))

    @property
    def date(self) -> str:
        s = self.started
        if s is not None:
            return s.date().isoformat()
        parts = self.path.split("/")
        return "-".join(parts[2:5]) if len(parts) > 5 else clock.today().isoformat()

    @property
    def ref(self) -> str:
        return source_ref(self.path)

    @property
    def topic(self) -> str:
        return str(self.meta.get("topic") or self.title or self.session_id)

    @property
    def tags(self) -> list[str]:
        tags = self.meta.get("tags") or []
        return [str(t) for t in tags] if isinstance(tags, list) else []


@dataclass
class Session:
    """A session read for notes (``memory flush``): what was said, how a note cites it
    (``[src: …]``), what a heading calls it, and how many secrets were redacted from it."""

    transcript: Transcript
    src: str
    label: str
    redactions: int = 0


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def is_chat(path: Path | None, text: str = "") -> bool:
    """Whether a session is chat messages rather than a transcript: by the file's
    extension, or, for text without a file (stdin), by how it starts."""
    if path is not None:
        return path.suffix.lower() in (".json", ".jsonl")
    return text.lstrip()[:1] in ("[", "{")


# ---------------------------------------------------------------------------
# What was said
# ---------------------------------------------------------------------------


def parse_transcript(text: str, path: str) -> Transcript:
    """Turns of a seed 000 §2.1 transcript; ``> [tool:…]`` and code blocks are left out."""
    doc = parse_document(text, path)
    title = ""
    turns: list[Turn] = []
    current: Turn | None = None
    body: list[str] = []
    in_code = False

    def close() -> None:
        if current is not None:
            current.text = "\n".join(body).strip()
            turns.append(current)

    for i, line in enumerate(doc.body.split("\n")):
        m = TURN_HEADER.match(line)
        if m and not in_code:
            close()
            n = doc.body_line + i
            current = Turn(m["role"], "", start=n, end=n, time=f"{m['hh']}:{m['mm']}",
                           memory=bool(m["memory"]))
            body = []
            continue
        if current is not None and line.strip():
            current.end = doc.body_line + i
        if line.startswith("```"):
            in_code = not in_code
            continue
        if current is None:
            if line.startswith("# ") and not title:
                title = line[2:].strip()
            continue
        if in_code or _QUOTE_LINE.match(line):
            continue
        body.append(line[1:] if line.startswith("\\##") else line)
    close()
    return Transcript(path, doc.meta, turns, title, _digest(text), text)


def parse_chat(text: str, name: str) -> Transcript:
    """The user and agent turns of chat messages (JSON or JSONL), located by message
    number, without tool calls and results; system messages are not the session's."""
    turns = []
    for i, msg in enumerate(M.parse_messages(text, name)[0], 1):
        role = M.transcript_role(M.role(msg))
        said = M.prose(msg).strip() if role in ("user", "agent") else ""
        if role and said:
            turns.append(Turn(role, said, start=i, end=i, unit="message"))
    return Transcript(name, {}, turns, "", _digest(text), text)


def read_transcript(root: Path, path: str) -> Transcript:
    """Read and parse one transcript; any problem is a FormatError naming file and line.

    Why: one bad file (invalid YAML, bad UTF-8) must be reported and skipped by the
    callers, never abort a whole extraction with a traceback.
    """
    try:
        data = worktree.read_file(root, path)  # never through a symlink
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", path) from None
    return parse_transcript(decode(data, path), path)


def read_session(root: Path, text: str, path: Path | None, source: str | None = None) -> Session:
    """The session in ``text`` (from ``path``, or stdin when None), secrets redacted.

    A note cites it by ``source`` when given, else the transcript's short reference, its
    repo path, its session id, its file name (outside the repo an absolute path would mean
    nothing elsewhere) or ``stdin`` and the time.
    """
    clean, n = redact(text)
    name = str(path) if path is not None else "stdin"
    rel = None
    if path is not None:
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = None
    if is_chat(path, clean):
        t = parse_chat(clean, rel or name)
    else:
        t = parse_transcript(clean, rel or name)
    sid = str(t.meta.get("session_id") or "")
    if source:
        src = source
    elif rel and is_transcript(rel):
        src = source_ref(rel)
    elif rel:
        src = rel
    elif sid:
        src = sid
    elif path is not None:
        src = path.name
    else:
        src = f"stdin {clock.now().strftime('%Y-%m-%d %H:%M')}"
    src = src.replace("]", ")").replace("[", "(")
    label = (
        t.title
        or str(t.meta.get("topic") or "")
        or sid
        or (path.stem if path is not None else "stdin")
    )
    return Session(t, src, label, n)


# ---------------------------------------------------------------------------
# As written
# ---------------------------------------------------------------------------


def read_history(path: Path) -> list[Turn]:
    """A session file's turns as written, oldest first: a transcript's with their line span
    (header included), chat messages with their number and tool calls summarised inline."""
    if not path.is_file():
        raise MemrepoError("session file not found", path)
    text = M.read_text(path)
    if is_chat(path):
        msgs = M.parse_messages(text, str(path))[0]
        return [
            Turn(M.role(m), M.text(m), start=i, end=i, unit="message")
            for i, m in enumerate(msgs, 1)
            if M.text(m).strip()
        ]
    lines = text.split("\n")
    return [
        Turn(t.role, "\n".join(lines[t.start - 1 : t.end]).rstrip(), start=t.start, end=t.end,
             time=t.time, memory=t.memory)
        for t in parse_transcript(text, str(path)).turns
    ]
