"""Rendering a conversation as a transcript (seed 000 §2.1): the text, never the file.

Turn headers in the session's own time zone, content escaped so it never reads as a turn
header, tool and attachment lines redacted before they are cut short, attachment names,
frontmatter, and whole conversations (what the importers hand over). Writing is
:mod:`memrepo.transcript.capture`'s, sessions and locks :mod:`memrepo.transcript.session`'s.

Light on purpose: ``capture append`` (every turn of every agent) imports this module, so
only the standard library, :mod:`memrepo.secrets` and :mod:`memrepo.layout` at the top.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, documents, layout, namespaces, yamlsafe
from memrepo.errors import MemrepoError
from memrepo.secrets import redact

#: The roles a turn header may name (seed 000 §2.1).
ROLES = ("user", "agent", "system")
#: Lines of content that would read as a turn header are escaped with a backslash.
_HEADER_LIKE = re.compile(f"({layout.TURN_HEADER_LIKE.pattern})", re.MULTILINE)
#: Turn headers anywhere in a body; groups: hh, mm, role, memory.
TURN_LINES = re.compile(layout.TURN_HEADER.pattern, re.MULTILINE)
_KNOWLEDGE = re.compile(
    r"^> \[knowledge:(?P<action>[a-z_-]+)\] (?P<path>\S+)(?: — (?P<summary>.*))?$", re.MULTILINE
)
#: Longest argument or result summary kept on a tool line.
TOOL_SUMMARY_CHARS = 200
#: Provisional slug of a session started without a topic; renamed at end.
PROVISIONAL_SLUG = "session"
#: Placeholder block an importer puts in a turn for an attachment (``ATTACH`` + its key in
#: ``Conversation.attachments``), resolved when the conversation is rendered.
ATTACH = "\0attach:"


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
            offset = clock.now().utcoffset() or dt.timedelta()
            return dt.timezone(offset), offset_label(offset)
    if name.upper() in ("Z", "UTC"):
        return dt.timezone.utc, "UTC"
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if m:
        if int(m[2]) > 23 or int(m[3]) > 59:
            raise MemrepoError(f"time zone {name!r} is not a UTC offset between -23:59 and "
                               "+23:59 (or an IANA name such as Europe/Paris)")
        delta = dt.timedelta(hours=int(m[2]), minutes=int(m[3]))
        delta = -delta if m[1] == "-" else delta
        return dt.timezone(delta), offset_label(delta)
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name), name
    except (ImportError, ValueError, KeyError, OSError):
        raise MemrepoError(
            f"unknown time zone {name!r}: use an IANA name (Europe/Paris) or an offset (+02:00)"
        ) from None


def offset_label(offset: dt.timedelta) -> str:
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
    return clock.now().astimezone(tz).replace(microsecond=0)


# ---------------------------------------------------------------------------
# Turn lines (live capture and the importers alike)
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
                return _cap("-".join(words))
    return _cap("-".join(words)) or PROVISIONAL_SLUG


def _cap(slug: str) -> str:
    """At most layout.SLUG_CHARS: a 300-character word must not make a name the disk refuses."""
    return slug[: layout.SLUG_CHARS].rstrip("-")


_STOPWORDS = frozenset(
    re.findall(
        r"\S+",
        "a an the and or but of to in on at for with from by is are was were be been it this "
        "that these those i you we me my your our can could would should please let lets let's "
        "do does hi hello hey ok okay so just",
    )
)


# ---------------------------------------------------------------------------
# Attachments
# ---------------------------------------------------------------------------


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


def prepare_attachment(
    data: bytes, name: str, when: dt.datetime, allowlist: Sequence[str] = ()
) -> tuple[str, bytes]:
    """(repo path, content to store) of an attachment: UTF-8 text redacted, the name
    redacted and content-addressed (never embedded in a transcript)."""
    data = redact_attachment(data, allowlist)[0]
    return attachment_name(data, name, when, allowlist), data


# ---------------------------------------------------------------------------
# Frontmatter and what a body says about itself
# ---------------------------------------------------------------------------


def render_frontmatter(meta: dict[str, Any]) -> str:
    """``---`` YAML ``---`` with ISO 8601 datetimes (``2026-02-16T18:45:00+01:00``)."""
    text = yamlsafe.dump(meta)
    text = re.sub(r"^(\w+): (\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)", r"\1: \2T\3", text, flags=re.M)
    return f"---\n{text.rstrip()}\n---\n"


def _redact(text: str, allowlist: Sequence[str]) -> str:
    return redact(text, allowlist)[0]


def knowledge_lines(body: str) -> list[dict[str, str]]:
    """The ``> [knowledge:ACTION] PATH — summary`` lines of a body (frontmatter
    ``knowledge_changes``)."""
    out = []
    for m in _KNOWLEDGE.finditer(body):
        item = {"path": m["path"], "action": m["action"]}
        if m["summary"]:
            item["summary"] = m["summary"].strip()
        out.append(item)
    return out


def first_messages(body: str, n: int = 3) -> list[str]:
    """The first ``n`` user turns (else any turns) of a body, for the slug."""
    parts = TURN_LINES.split(body)
    turns = []  # (role, text)
    for i in range(1, len(parts) - 4, 5):
        turns.append((parts[i + 2], parts[i + 4]))
    users = [t for r, t in turns if r == "user"] or [t for _, t in turns]
    return [re.sub(r"^> \[.*$", "", t, flags=re.M) for t in users[:n]]


# ---------------------------------------------------------------------------
# Whole conversations at once (the importers)
# ---------------------------------------------------------------------------


@dataclass
class DraftTurn:
    """One turn of a conversation about to be written, as an importer builds it.

    Not :class:`memrepo.transcript.read.Turn` (a turn read back, rendered text with its
    place in a file): here ``blocks`` are raw paragraphs, ``> [...]`` lines and attachment
    placeholders, not yet redacted or escaped, and an importer still edits them in place
    (a tool result fills in its call's line); ``when`` is a full datetime, not ``HH:MM``.
    """

    role: str
    when: dt.datetime | None = None
    blocks: list[str] = field(default_factory=list)
    memory: bool = False


@dataclass
class Conversation:
    """A whole conversation, as an importer reads it, before it becomes a transcript."""

    session_id: str
    started: dt.datetime
    turns: list[DraftTurn]
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
    conv: Conversation, tz: dt.tzinfo, tzname: str, allowlist: Sequence[str]
) -> tuple[str, str, dict[str, bytes]]:
    """(repo path, full text, attachments: repo path -> content to store) of a closed
    transcript for ``conv``."""
    started = conv.started.astimezone(tz).replace(microsecond=0)
    attachments: dict[str, bytes] = {}
    body_parts: list[str] = []
    title = _redact(conv.title, allowlist).strip() if conv.title else None
    if title:
        body_parts.append(f"\n# {title}\n")
    last: dt.datetime = started
    for turn in conv.turns:
        blocks = []
        for block in turn.blocks:
            if block.startswith(ATTACH):
                key = block[len(ATTACH) :]
                data = conv.attachments.get(key)
                if data is None:
                    missing = redacted_line(key, allowlist, 120)[0]
                    blocks.append(f"> [attachment:missing:{missing}]")
                    continue
                name = re.sub(r"^[0-9a-f]{8}-", "", key)  # the importer's dedup prefix
                rel, attachments[rel] = prepare_attachment(
                    data, name, (turn.when or last).astimezone(tz), allowlist)
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
    slug = slug_from_messages([title] if title else first_messages(body))
    meta: dict[str, Any] = {"session_id": conv.session_id, "started": started, "ended": ended,
                            "timezone": tzname}
    if conv.model:
        meta["model"] = conv.model
    if conv.channel:
        meta["channel"] = conv.channel
    if title:
        meta["topic"] = title
    meta["tags"] = list(conv.tags)
    if namespaces.current():  # whose it is (memrepo.namespaces); none: shared
        meta[namespaces.KEY] = namespaces.current()
    if conv.tokens_in is not None:
        meta["tokens_in"] = conv.tokens_in
    if conv.tokens_out is not None:
        meta["tokens_out"] = conv.tokens_out
    meta["turns"] = len(TURN_LINES.findall(body))
    meta["redactions"] = body.count("[REDACTED:")
    changes = knowledge_lines(body)
    if changes:
        meta["knowledge_changes"] = changes
    if conv.source:
        meta["source"] = dict(conv.source)
    rel = layout.transcript_path(started, conv.session_id, slug)
    return rel, render_frontmatter(meta) + body, attachments


def title_of(slug: str) -> str:
    """The ``# Title`` of a session nobody named: its slug's words (seed 000 §8.2,
    ``slug.replace('-', ' ').title()``; only first letters raised, so ``2fa`` stays)."""
    return " ".join(w[:1].upper() + w[1:] for w in slug.split("-") if w)


def titled(body: str, slug: str, title: str | None = None) -> str:
    """``body`` with a ``# Title`` (``title``, else from ``slug``) before its first turn,
    unless it has one already (a session started with ``--topic``, an import that named
    one) or no turn at all.

    Why at ``end`` and only here: the words come from the first messages, which ``start``
    has not seen, and until ``end`` the transcript is open, written only by appends and
    not in git (``end`` names it only when it is untracked, as for the rename). A title
    in front of turns that were already committed would rewrite recorded history, which
    the transcript check refuses: such a session keeps its name and has no title.
    """
    head = body.lstrip("\n")
    if head.startswith("# ") or TURN_LINES.search(body) is None:
        return body
    title = " ".join((title or "").split()) or title_of(slug)
    return f"\n# {title}\n" + (body if body.startswith("\n") else "\n" + body)


def render_import(
    conv: Conversation, tz: dt.tzinfo, tzname: str, allowlist: Sequence[str]
) -> tuple[str, str, dict[str, bytes]]:
    """:func:`~memrepo.transcript.render.render_conversation`, titled as ``end`` titles a
    live session: a log that names no title gets one from its slug. (path, text,
    attachments): exactly what :func:`write_conversation` writes."""
    rel, text, attachments = render_conversation(conv, tz, tzname, allowlist)
    m = layout.TRANSCRIPT_PATH.match(rel)
    if m is None:
        return rel, text, attachments
    doc = documents.parse_document(text, rel)
    head = "".join(ln + "\n" for ln in text.split("\n")[: doc.body_line - 1])
    return rel, head + titled(doc.body, m["rest"][len(conv.session_id) + 1:]), attachments
