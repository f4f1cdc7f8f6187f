"""Running an import (``memory capture import``): pick the format, parse, skip, write.

Picks the log's format (:func:`detect`), has its module turn the file into
:class:`~memrepo.transcript.render.Conversation` objects, skips sessions imported before
(by the session id derived from the source's own id, stored with the source hash in the
frontmatter ``source``), and writes each conversation through the same renderer and
redaction as live capture.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from memrepo import documents
from memrepo.errors import MemrepoError
from memrepo.transcript.capture import write_conversation
from memrepo.transcript.render import Conversation
from memrepo.transcript.session import find_transcript, secrets_allowlist

from ._common import MAX_DEPTH, ShapeError, too_deep

MAX_DEPTH_TEXT = f"{MAX_DEPTH} levels"

#: format name -> module in memrepo.transcript.importers (each has ``parse(data, ctx) -> list``).
FORMATS = {
    "claude-code": "claude_code",
    "anthropic": "anthropic_json",
    "openai": "openai_json",
    "chatgpt": "chatgpt",
    "markdown": "text",
}


@dataclass
class ImportContext:
    """What an importer may need besides the bytes: where the file is, defaults."""

    path: Path
    started: dt.datetime  # for logs without timestamps
    session_id: str | None = None
    model: str | None = None
    channel: str | None = None
    allowlist: tuple[str, ...] = ()  # the repo's secrets allowlist (tool lines are redacted
    # by the importers themselves, before they are cut short)


@dataclass
class ImportResult:
    status: str  # imported | skipped | written
    path: str
    session_id: str
    commit: str | None = None
    detail: str = ""


def _json_error(path: Path, exc: json.JSONDecodeError) -> MemrepoError:
    """``FILE:LINE:COL: not valid JSON (why)``: where a person can go and look."""
    return MemrepoError(f"not valid JSON ({exc.msg})", f"{path}:{exc.lineno}:{exc.colno}")


def decode_text(path: Path, data: bytes) -> str:
    """The file as UTF-8 text (a BOM allowed), else a plain error naming the line and the
    first bad byte; NUL bytes mean a binary file, never a conversation log."""
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + len(data) - len(body)
        line = data[:offset].count(b"\n") + 1
        raise MemrepoError(
            f"not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})", path, line
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        raise MemrepoError("a binary file (NUL bytes), not a conversation log", path,
                           text.count("\n", 0, nul) + 1)
    return text


#: Record types of a Claude Code session log; a log may open with any of them (a
#: ``file-history-snapshot`` or ``queue-operation`` before the first message).
CLAUDE_CODE_TYPES = frozenset({"user", "assistant", "summary", "system", "file-history-snapshot",
                               "queue-operation", "attachment", "last-prompt", "progress"})


def _claude_code_records(data: bytes, lines: int = 20) -> bool:
    """JSON Lines, one of whose first records (each line parsed alone) is Claude Code's:
    a record type of its own, or a ``sessionId`` (record types come and go by version)."""
    for raw in data.lstrip().split(b"\n", lines)[:lines]:
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            return False
        if isinstance(rec, dict) and ("sessionId" in rec or rec.get("type") in CLAUDE_CODE_TYPES):
            return True
    return False


def detect(path: Path, data: bytes) -> str:
    """Guess the format from the content (JSONL of Claude Code records, JSON shapes, text).

    Text that starts like JSON (``{`` or ``[``) but does not parse is an error with its
    line and column, never silently "markdown": a truncated export would otherwise become
    a transcript of JSON fragments.
    """
    text = data.lstrip()[:1]
    if text not in (b"{", b"["):
        return "markdown"
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as whole:
        if _claude_code_records(data):
            return "claude-code"
        raise _json_error(path, whole) from None
    except RecursionError:
        deep = too_deep(data)
        raise MemrepoError(f"JSON {deep.message}", path, deep.line) from None
    items = doc if isinstance(doc, list) else [doc]
    first = items[0] if items and isinstance(items[0], dict) else {}
    if "mapping" in first:
        return "chatgpt"
    if isinstance(doc, dict) and "sessionId" in doc:
        return "claude-code"
    messages = first.get("messages") if isinstance(doc, dict) else items
    if isinstance(doc, dict) and "choices" in doc:
        return "openai"
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("tool", "developer", "function") or "tool_calls" in m:
            return "openai"
        content = m.get("content")
        if isinstance(content, list):
            kinds = {c.get("type") for c in content
                     if isinstance(c, dict) and isinstance(c.get("type"), str)}
            if kinds & {"tool_use", "tool_result", "thinking", "image", "document"}:
                return "anthropic"
            if kinds & {"image_url", "input_audio", "input_text"}:
                return "openai"
    if isinstance(doc, dict) and "system" in doc:
        return "anthropic"
    return "openai"


def parse(path: Path, fmt: str, ictx: ImportContext) -> tuple[str, list[Conversation]]:
    """(the format used, the conversations that have at least one turn)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MemrepoError(f"cannot read: {exc.strerror or exc}", path) from None
    decode_text(path, data)
    if fmt == "auto":
        fmt = detect(path, data)
    if fmt not in FORMATS:
        raise MemrepoError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    module = importlib.import_module(f"memrepo.transcript.importers.{FORMATS[fmt]}")
    try:
        conversations = module.parse(data, ictx)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from None
    except RecursionError:
        raise MemrepoError(f"not a valid {fmt} log: nested deeper than {MAX_DEPTH_TEXT}",
                           path) from None
    except ShapeError as exc:
        raise MemrepoError(f"not a valid {fmt} log: {exc}", path, exc.line) from None
    except MemrepoError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise MemrepoError(f"not a valid {fmt} log: {type(exc).__name__}: {exc}", path) from None
    return fmt, [c for c in conversations if has_turns(c)]


def has_turns(conv: Conversation) -> bool:
    """Whether anything was said: a conversation without turns would be an empty, permanent
    transcript."""
    return any(block.strip() for turn in conv.turns for block in turn.blocks)


def import_file(
    root: Path,
    path: Path,
    fmt: str = "auto",
    *,
    session_id: str | None = None,
    started: dt.datetime | None = None,
    timezone: str | None = None,
    model: str | None = None,
    channel: str | None = None,
    commit: bool = True,
) -> list[ImportResult]:
    """Import every conversation in ``path``; already-imported sessions are skipped."""
    if session_id is not None and not session_id.strip():
        raise MemrepoError("--session is empty: leave it out to use the log's own session id")
    if started is None:
        started = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)
    why = documents.date_range_problem(started)
    if why:
        raise MemrepoError(f"--started: {why}")
    ictx = ImportContext(path, started, session_id, model, channel, tuple(secrets_allowlist(root)))
    used, conversations = parse(path, fmt, ictx)
    if not conversations:
        raise MemrepoError(f"no conversation found (format {used})", path)
    results = []
    for conv in conversations:
        if model and not conv.model:
            conv.model = model
        if channel:
            conv.channel = channel
        existing = find_transcript(root, conv.session_id, conv.started)
        if existing:
            detail = "already imported"
            if _source_hash(root / existing) not in (None, conv.source.get("sha256")):
                detail += "; the log has changed since, and a closed transcript never changes"
            results.append(ImportResult("skipped", existing, conv.session_id, None, detail))
            continue
        try:
            rel, sha = write_conversation(root, conv, timezone=timezone, commit=commit)
        except MemrepoError as exc:  # said about the transcript: say which log it came from
            raise MemrepoError(f"not imported: {exc}", path) from None
        except OSError as exc:
            what = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc)
            raise MemrepoError(f"not imported: {what}", path) from None
        results.append(ImportResult("imported" if commit else "written", rel, conv.session_id,
                                    sha))
    return results


def _source_hash(path: Path) -> str | None:
    try:
        source = documents.read_document(path).meta.get("source")
    except MemrepoError:
        return None
    return source.get("sha256") if isinstance(source, dict) else None
