"""Claude Code session logs (``~/.claude/projects/<project>/<session-id>.jsonl``).

One JSON record per line: ``user`` and ``assistant`` records carry an Anthropic
``message``; an assistant reply is streamed as several records sharing ``message.id``,
each with one content block (text, thinking, tool_use). Tool results come back as
``tool_result`` blocks in the next user record. ``summary`` records title the session.
Sidechain (sub-agent) and meta records are not part of the conversation, nor is the
summary Claude Code writes as a user record after a compaction (``isCompactSummary``: the
turns it retells are above it in the same file); thinking is dropped; each tool call
becomes one line with its result.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from memrepo.transcript.render import Conversation

from ._common import Builder, digest, session_id, timestamp

FORMAT = "claude-code"


def _records(data: bytes) -> list[dict[str, Any]]:
    """One record per line; a bad line is a JSONDecodeError placed in the whole file."""
    out = []
    text = data.decode("utf-8")
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise json.JSONDecodeError(exc.msg, text, offset + exc.pos) from None
            if isinstance(rec, dict):
                out.append(rec)
        offset += len(line)
    return out


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    records = _records(data)
    b = Builder(ictx.allowlist)
    title = None
    sid_source = None
    model = None
    tokens_in = tokens_out = 0
    seen_usage: set[str] = set()
    times = []
    for rec in records:
        kind = rec.get("type")
        if kind == "summary":
            title = title or rec.get("summary")
            continue
        if kind not in ("user", "assistant") or rec.get("isSidechain") or rec.get("isMeta"):
            continue
        if rec.get("isCompactSummary"):
            continue  # Claude Code's summary of the turns above it, written after a compaction
        sid_source = sid_source or rec.get("sessionId")
        when = timestamp(rec.get("timestamp"))
        if when:
            times.append(when)
        msg = rec.get("message") or {}
        content = msg.get("content")
        if kind == "assistant":
            model = model or msg.get("model")
            usage = msg.get("usage") or {}
            mid = msg.get("id") or rec.get("uuid") or str(len(seen_usage))
            if usage and mid not in seen_usage:
                seen_usage.add(mid)
                tokens_in += int(usage.get("input_tokens") or 0)
                tokens_out += int(usage.get("output_tokens") or 0)
            _assistant(b, content, when)
        else:
            _user(b, content, when)
    if not times and not b.turns:
        return []
    source_id = sid_source or digest(data)
    conv = Conversation(
        session_id=ictx.session_id or session_id("cc", source_id),
        started=min(times) if times else ictx.started,
        ended=max(times) if times else None,
        turns=b.turns,
        model=model if model and model != "<synthetic>" else None,
        channel="claude-code",
        title=title,
        source={"format": FORMAT, "id": source_id, "sha256": digest(data)},
        attachments=b.attachments,
        tokens_in=tokens_in or None,
        tokens_out=tokens_out or None,
    )
    return [conv]


def _assistant(b: Builder, content: Any, when: Any) -> None:
    if isinstance(content, str):
        b.text("agent", content, when)
        return
    for block in content or []:
        t = block.get("type")
        if t == "text":
            b.text("agent", block.get("text", ""), when)
        elif t in ("tool_use", "server_tool_use"):
            b.tool_call(block.get("name", "tool"), block.get("input"), block.get("id"), when)
        # thinking / redacted_thinking: reasoning is never kept (seed 000 §2.1)


def _user(b: Builder, content: Any, when: Any) -> None:
    if isinstance(content, str):
        b.text("user", content, when)
        return
    for block in content or []:
        t = block.get("type")
        if t == "tool_result":
            b.tool_result(block.get("tool_use_id"), block.get("content"),
                          bool(block.get("is_error")), when=when)
        elif t == "text":
            b.text("user", block.get("text", ""), when)
        elif t in ("image", "document"):
            _media(b, "user", block, when)


def _media(b: Builder, role: str, block: dict[str, Any], when: Any) -> None:
    source = block.get("source") or {}
    media = source.get("media_type", "application/octet-stream")
    ext = media.split("/")[-1].replace("jpeg", "jpg")
    if source.get("type") == "base64":
        b.attach(role, f"{block.get('type')}.{ext}", base64.b64decode(source.get("data", "")), when)
    elif source.get("type") == "url":
        b.reference(role, source.get("url", ""), when)
    else:
        b.attach(role, f"{block.get('type')}.{ext}", None, when)
