"""Claude Code session logs (``~/.claude/projects/<project>/<session-id>.jsonl``).

One JSON record per line: ``user`` and ``assistant`` records carry an Anthropic
``message``; an assistant reply is streamed as several records sharing ``message.id``,
each with one content block (text, thinking, tool_use). Tool results come back as
``tool_result`` blocks in the next user record. ``summary`` records title the session.
Sidechain (sub-agent) and meta records are not part of the conversation, nor is the
summary Claude Code writes as a user record after a compaction (``isCompactSummary``: the
turns it retells are above it in the same file), nor a slash command (``/compact``) and
its local output, which Claude Code records as user records in ``<command-name>`` /
``<local-command-stdout>`` markup; thinking is dropped; each tool call becomes one line
with its result.
"""

from __future__ import annotations

import json
from typing import Any

from memrepo.transcript.render import Conversation

from ._common import (
    Builder,
    ShapeError,
    at,
    b64decode,
    check_depth,
    count,
    digest,
    need_dict,
    need_list,
    need_str,
    session_id,
    timestamp,
    too_deep,
)

FORMAT = "claude-code"


def _records(data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) per line; a bad line is a JSONDecodeError placed in the whole file,
    a record nested too deeply a ShapeError on its line."""
    out = []
    text = data.decode("utf-8")
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise json.JSONDecodeError(exc.msg, text, offset + exc.pos) from None
            except RecursionError:
                raise too_deep(line.encode("utf-8"), number - 1) from None
            check_depth(rec, "record", number)
            if isinstance(rec, dict):
                out.append((number, rec))
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
    for line, rec in records:
        with at("record", line):
            kind = rec.get("type")
            if kind == "summary":
                title = title or need_str(rec.get("summary"), "summary", line) or None
                continue
            if kind not in ("user", "assistant") or rec.get("isSidechain") or rec.get("isMeta"):
                continue
            if rec.get("isCompactSummary"):
                continue  # Claude Code's summary of the turns above it, after a compaction
            sid = rec.get("sessionId")
            sid_source = sid_source or (str(sid) if sid not in (None, "") else None)
            when = timestamp(rec.get("timestamp"), "timestamp", line)
            msg = need_dict(rec.get("message"), "message", line)
            content = msg.get("content")
            if content is not None and not isinstance(content, (str, list)):
                raise ShapeError("message.content", "must be a string or a list of blocks",
                                 line)
            if kind == "user" and _local_command(content):
                continue  # `/compact`, `/model`: the client's own, not the user's words
            if when:
                times.append(when)
            if kind == "assistant":
                model = model or need_str(msg.get("model"), "message.model", line) or None
                usage = need_dict(msg.get("usage"), "message.usage", line)
                mid = msg.get("id") or rec.get("uuid") or str(len(seen_usage))
                if usage and mid not in seen_usage:
                    seen_usage.add(str(mid))
                    tokens_in += count(usage.get("input_tokens"), "usage.input_tokens",
                                       line) or 0
                    tokens_out += count(usage.get("output_tokens"), "usage.output_tokens",
                                        line) or 0
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


#: How Claude Code records a slash command and its local output as a user record.
LOCAL_COMMAND = ("<command-name>", "<command-message>", "<command-args>",
                 "<local-command-stdout>", "<local-command-stderr>")


def _local_command(content: Any) -> bool:
    """A user record that is a slash command (``/compact``) or its local output."""
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict)
                 and b.get("type") == "text"]
        if len(texts) != len(content):
            return False
        content = "".join(t for t in texts if isinstance(t, str))
    return isinstance(content, str) and content.lstrip().startswith(LOCAL_COMMAND)


def _blocks(content: Any) -> list[dict[str, Any]]:
    """The content blocks of a message, each an object with a string ``type``."""
    blocks = need_list(content, "message.content")
    for i, block in enumerate(blocks):
        where = f"message.content[{i}]"
        need_dict(block, where)
        need_str(block.get("type"), f"{where}.type")
    return blocks


def _assistant(b: Builder, content: Any, when: Any) -> None:
    if isinstance(content, str):
        b.text("agent", content, when)
        return
    for block in _blocks(content):
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
    for i, block in enumerate(_blocks(content)):
        t = block.get("type")
        where = f"message.content[{i}]"
        if t == "tool_result":
            result = block.get("content")
            if result is not None and not isinstance(result, (str, list)):
                raise ShapeError(f"{where}.content", "must be a string or a list of blocks")
            b.tool_result(block.get("tool_use_id"), result, bool(block.get("is_error")),
                          when=when)
        elif t == "text":
            b.text("user", need_str(block.get("text"), f"{where}.text"), when)
        elif t in ("image", "document"):
            _media(b, "user", block, when, where)


def _media(b: Builder, role: str, block: dict[str, Any], when: Any, where: str) -> None:
    """An image or document block (``where`` is its place in the log, for errors)."""
    source = need_dict(block.get("source"), f"{where}.source")
    media = need_str(source.get("media_type"), f"{where}.source.media_type", None,
                     "application/octet-stream")
    ext = media.split("/")[-1].replace("jpeg", "jpg")
    if source.get("type") == "base64":
        data = b64decode(source.get("data", ""), f"{where}.source.data")
        b.attach(role, f"{block.get('type')}.{ext}", data, when)
    elif source.get("type") == "url":
        b.reference(role, need_str(source.get("url"), f"{where}.source.url"), when)
    else:
        b.attach(role, f"{block.get('type')}.{ext}", None, when)


def last_reply(tail: bytes, limit: int = 8000) -> str:
    """The text the assistant said after the user's last words, from the end of a log
    (``tail``: its last bytes; a line cut at the start is skipped): what output watchers
    read at the next prompt. At most ``limit`` characters, the end kept."""
    said: list[str] = []
    for raw in reversed(tail.split(b"\n")):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("isSidechain") or rec.get("isMeta"):
            continue
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if rec.get("type") == "user" and _spoken(content):
            break
        if rec.get("type") == "assistant" and isinstance(content, list):
            said[:0] = [b["text"] for b in content if isinstance(b, dict)
                        and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "\n".join(said)[-limit:]


def _spoken(content: Any) -> bool:
    """A user record holding the user's words (not a tool result, not a slash command)."""
    if isinstance(content, str):
        return bool(content.strip()) and not _local_command(content)
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "text" for b in content
    ) and not _local_command(content)
