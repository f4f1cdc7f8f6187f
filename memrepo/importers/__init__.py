"""``memory capture import``: whole conversation logs from other tools into closed transcripts.

One module per format turns a file into :class:`memrepo.capture.Conversation` objects;
this module picks the format, skips sessions imported before (by the session id derived
from the source's own id, stored with the source hash in the frontmatter ``source``), and
writes each conversation through the same renderer and redaction as live capture.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from memrepo.capture import Conversation, find_transcript, write_conversation
from memrepo.errors import MemrepoError

#: format name -> module in memrepo.importers (each has ``parse(data, ctx) -> list``).
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


@dataclass
class ImportResult:
    status: str  # imported | skipped | written
    path: str
    session_id: str
    commit: str | None = None
    detail: str = ""


def detect(path: Path, data: bytes) -> str:
    """Guess the format from the content (JSONL of Claude Code records, JSON shapes, text)."""
    text = data.lstrip()[:1]
    if text not in (b"{", b"["):
        return "markdown"
    try:
        doc = json.loads(data)
    except ValueError:
        first = data.split(b"\n", 1)[0]
        try:
            rec = json.loads(first)
        except ValueError:
            return "markdown"
        if isinstance(rec, dict) and ("sessionId" in rec or rec.get("type") in (
                "user", "assistant", "summary", "system")):
            return "claude-code"
        return "markdown"
    items = doc if isinstance(doc, list) else [doc]
    first = items[0] if items and isinstance(items[0], dict) else {}
    if "mapping" in first:
        return "chatgpt"
    if isinstance(doc, dict) and "sessionId" in doc:
        return "claude-code"
    messages = first.get("messages") if isinstance(doc, dict) else items
    if isinstance(doc, dict) and "choices" in doc:
        return "openai"
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("tool", "developer", "function") or "tool_calls" in m:
            return "openai"
        content = m.get("content")
        if isinstance(content, list):
            kinds = {c.get("type") for c in content if isinstance(c, dict)}
            if kinds & {"tool_use", "tool_result", "thinking", "image", "document"}:
                return "anthropic"
            if kinds & {"image_url", "input_audio", "input_text"}:
                return "openai"
    if isinstance(doc, dict) and "system" in doc:
        return "anthropic"
    return "openai"


def parse(path: Path, fmt: str, ictx: ImportContext) -> list[Conversation]:
    data = path.read_bytes()
    if fmt == "auto":
        fmt = detect(path, data)
    if fmt not in FORMATS:
        raise MemrepoError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    module = importlib.import_module(f"memrepo.importers.{FORMATS[fmt]}")
    try:
        return module.parse(data, ictx)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise MemrepoError(f"not a valid {fmt} log: {type(exc).__name__}: {exc}", path) from None


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
    if started is None:
        started = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)
    ictx = ImportContext(path, started, session_id, model, channel)
    conversations = parse(path, fmt, ictx)
    if not conversations:
        raise MemrepoError("no conversation found in the file", path)
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
        rel, sha = write_conversation(root, conv, timezone=timezone, commit=commit)
        results.append(ImportResult("imported" if commit else "written", rel, conv.session_id,
                                    sha))
    return results


def _source_hash(path: Path) -> str | None:
    from memrepo import formats

    try:
        source = formats.read_document(path).meta.get("source")
    except MemrepoError:
        return None
    return source.get("sha256") if isinstance(source, dict) else None
