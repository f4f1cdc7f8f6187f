"""Chat messages in the shapes runtimes use: Anthropic, OpenAI, Claude Code JSONL, transcripts.

One reading of "what does this message say" and "which tool call does it open or close",
shared by the compiler's P4 slot, ``memory trim`` and ``memory flush``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.errors import MemrepoError
from memrepo.formats import TURN_HEADER, parse_document

#: Block types that open a tool call (seed 002: all the variants runtimes use).
TOOL_CALL_TYPES = frozenset({"tool_use", "toolUse", "toolCall", "functionCall", "function_call"})
TOOL_RESULT_TYPES = frozenset(
    {"tool_result", "toolResult", "function_call_output", "functionResponse"}
)


def role(msg: dict[str, Any]) -> str:
    return str(msg.get("role") or msg.get("type") or "")


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind in TOOL_CALL_TYPES:
        args = block.get("input", block.get("arguments", block.get("args", "")))
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        return f"[tool call {block.get('name', '')}: {args}]"
    if kind in TOOL_RESULT_TYPES:
        inner = block.get("content", block.get("output", ""))
        return f"[tool result: {content_text(inner)}]"
    if "text" in block and isinstance(block["text"], str):
        return block["text"]
    return ""


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    if isinstance(content, dict):
        return _block_text(content)
    return ""


def text(msg: dict[str, Any]) -> str:
    """The readable text of a message, tool calls and results summarised inline."""
    parts = [content_text(msg.get("content"))]
    for call in msg.get("tool_calls") or []:  # OpenAI assistant message
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(f"[tool call {fn.get('name', '')}: {fn.get('arguments', '')}]")
    return "\n".join(p for p in parts if p)


def tool_calls(msg: dict[str, Any]) -> set[str]:
    """Ids of the tool calls this message opens."""
    ids: set[str] = set()
    for call in msg.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id"):
            ids.add(str(call["id"]))
    content = msg.get("content")
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") in TOOL_CALL_TYPES:
                cid = b.get("id") or b.get("call_id") or b.get("toolCallId")
                if cid:
                    ids.add(str(cid))
    return ids


def tool_results(msg: dict[str, Any]) -> set[str]:
    """Ids of the tool calls this message answers."""
    ids: set[str] = set()
    for key in ("tool_call_id", "toolCallId", "toolUseId"):
        if msg.get(key):
            ids.add(str(msg[key]))
    content = msg.get("content")
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") in TOOL_RESULT_TYPES:
                cid = b.get("tool_use_id") or b.get("call_id") or b.get("toolCallId") or b.get("id")
                if cid:
                    ids.add(str(cid))
    return ids


def load_messages(path: Path) -> list[dict[str, Any]]:
    """A messages JSON (a list, or {"messages": [...]}) or JSONL (Claude Code transcripts)."""
    raw = path.read_text(encoding="utf-8")
    try:
        data = json.loads(raw)
    except ValueError:
        data = []
        for n, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except ValueError:
                raise MemrepoError("neither JSON nor JSONL", path, n) from None
    if isinstance(data, dict):
        data = data.get("messages", [])
    if not isinstance(data, list):
        raise MemrepoError('expected a list of messages or {"messages": [...]}', path)
    out = []
    for m in data:
        if isinstance(m, dict) and isinstance(m.get("message"), dict):  # Claude Code JSONL
            m = m["message"]
        if isinstance(m, dict):
            out.append(m)
    return out


@dataclass
class Turn:
    """One turn of a session, located in its file (line span, or message number)."""

    role: str
    text: str
    start: int
    end: int
    unit: str  # line | message


def load_session(path: Path) -> list[Turn]:
    """Turns, oldest first, from a transcript (markdown) or a messages JSON/JSONL file."""
    if not path.is_file():
        raise MemrepoError("session file not found", path)
    if path.suffix.lower() in (".json", ".jsonl"):
        msgs = load_messages(path)
        return [
            Turn(role(m), text(m), i, i, "message")
            for i, m in enumerate(msgs, 1)
            if text(m).strip()
        ]
    doc = parse_document(path.read_text(encoding="utf-8"), str(path))
    lines = doc.body.split("\n")
    turns: list[Turn] = []
    cur: Turn | None = None
    for i, line in enumerate(lines):
        n = doc.body_line + i
        m = TURN_HEADER.match(line)
        if m:
            if cur:
                turns.append(cur)
            cur = Turn(m.group("role"), line, n, n, "line")
        elif cur is not None:
            cur.text += "\n" + line
            if line.strip():
                cur.end = n
    if cur:
        turns.append(cur)
    for t in turns:
        t.text = t.text.rstrip()
    return turns
