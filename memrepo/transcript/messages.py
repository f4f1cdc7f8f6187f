"""Chat messages in the shapes runtimes use: Anthropic, OpenAI, Claude Code JSONL.

One reading of "who speaks", "what does this message say" and "which tool call does it
open or close", shared by the session reader (:mod:`memrepo.transcript.read`: the
compiler's P4 slot, ``memory flush``), ``memory trim`` and the importers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memrepo.documents import decode
from memrepo.errors import MemrepoError
from memrepo.transcript.logfile import read_whole

#: Block types that open a tool call (seed 002: all the variants runtimes use).
TOOL_CALL_TYPES = frozenset({"tool_use", "toolUse", "toolCall", "functionCall", "function_call"})
TOOL_RESULT_TYPES = frozenset(
    {"tool_result", "toolResult", "function_call_output", "functionResponse"}
)


def _list(value: Any) -> list[Any]:
    """``value`` if it is a list, else empty: a malformed field reads as absent."""
    return value if isinstance(value, list) else []


#: A runtime's message role -> the role a transcript gives that speaker (seed 000 §2.1).
_TRANSCRIPT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "agent",
    "agent": "agent",
    "model": "agent",
    "ai": "agent",
    "system": "system",
    "developer": "system",
}


def role(msg: dict[str, Any]) -> str:
    return str(msg.get("role") or msg.get("type") or "")


def transcript_role(role: str | None) -> str | None:
    """``user``, ``agent`` or ``system`` for a message role (``assistant`` -> ``agent``);
    None for the others (tool and function results, unknown roles)."""
    return _TRANSCRIPT_ROLES.get((role or "").lower())


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
    """The readable text of a message's content, tool calls and results summarised inline
    (``[tool call NAME: ARGS]``, ``[tool result: …]``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    if isinstance(content, dict):
        return _block_text(content)
    return ""


def plain_text(content: Any) -> str:
    """Only the text of a content: a string, or the ``text`` of its blocks, nested
    ``content`` included (a tool result's); tool calls and other blocks give empty lines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(plain_text(c) for c in content)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if "content" in content:
            return plain_text(content["content"])
    return ""


def text(msg: dict[str, Any]) -> str:
    """The readable text of a message, tool calls and results summarised inline."""
    parts = [content_text(msg.get("content"))]
    for call in _list(msg.get("tool_calls")):  # OpenAI assistant message
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(f"[tool call {fn.get('name', '')}: {fn.get('arguments', '')}]")
    return "\n".join(p for p in parts if p)


def prose(msg: dict[str, Any]) -> str:
    """What a message says, without its tool calls and results (raw output is not memory)."""
    lines = content_text(msg.get("content")).split("\n")
    return "\n".join(x for x in lines if not x.startswith(("[tool call ", "[tool result:")))


def tool_calls(msg: dict[str, Any]) -> set[str]:
    """Ids of the tool calls this message opens."""
    ids: set[str] = set()
    for call in _list(msg.get("tool_calls")):
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


def read_text(path: Path, *, untrusted: bool = False, largest: int | None = None) -> str:
    """A session file's text; a missing, unreadable or non-UTF-8 file is a MemrepoError
    naming it (commands print one line, never a traceback).

    With ``untrusted`` (a path a hook payload names, which may be anything), only a
    regular file of at most ``largest`` bytes is read, never through a symlink: a FIFO
    would wait for a writer, a device never end. A person's own path may be a pipe
    (``memory trim <(…)``)."""
    try:
        data = read_whole(path, largest=largest, links=False) if untrusted else (
            path.read_bytes())
    except FileNotFoundError:
        raise MemrepoError("file not found", path) from None
    except OSError as exc:
        raise MemrepoError(f"cannot read: {exc.strerror or exc}", path) from None
    return decode(data, str(path))


_JSON_KIND = {
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    type(None): "null",
}


def _json_lines(raw: str, name: str, first: json.JSONDecodeError) -> list[Any]:
    """JSONL entries; a bad line is reported where it is (a broken JSON document where
    the JSON parser stopped, since its first line alone is rarely valid JSON)."""
    out: list[Any] = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except RecursionError:
            raise MemrepoError("nested deeper than JSON's parser goes", name, n) from None
        except ValueError as exc:
            if not out:  # not JSONL at all: the JSON document's own error is the useful one
                raise MemrepoError(f"invalid JSON: {first.msg}", name, first.lineno) from None
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise MemrepoError(f"invalid JSONL line: {msg}", name, n) from None
    return out


def parse_messages(raw: str, name: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Messages from JSON (a list, or {"messages": [...]}) or JSONL (Claude Code entries),
    and the wrapping object when there was one (so ``memory trim`` can keep its shape).

    An entry that is not an object is an error naming it: dropping it silently would
    shift every message number P4 and trim report.
    """
    lines: list[int] | None = None
    try:
        data: Any = json.loads(raw)
    except RecursionError:
        raise MemrepoError("nested deeper than JSON's parser goes", name, 1) from None
    except json.JSONDecodeError as exc:
        data = _json_lines(raw, name, exc)
        lines = [n for n, line in enumerate(raw.splitlines(), 1) if line.strip()]
    wrapper = None
    if isinstance(data, dict):
        if "messages" in data:
            wrapper, data = data, data["messages"]
        elif "role" in data or "type" in data or isinstance(data.get("message"), dict):
            data = [data]  # a one-line JSONL file
        else:
            raise MemrepoError('expected a list of messages or {"messages": [...]}', name)
    if not isinstance(data, list):
        raise MemrepoError('expected a list of messages or {"messages": [...]}', name)
    out = []
    for i, entry in enumerate(data):
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            entry = entry["message"]  # Claude Code JSONL
        if not isinstance(entry, dict):
            kind = _JSON_KIND.get(type(entry), "not an object")
            if lines is not None:
                raise MemrepoError(f"entry is {kind}, not a message object", name, lines[i])
            raise MemrepoError(f"messages[{i}] is {kind}, not a message object", name)
        out.append(entry)
    return out, wrapper


def load_messages(path: Path) -> list[dict[str, Any]]:
    """A messages JSON (a list, or {"messages": [...]}) or JSONL (Claude Code transcripts)."""
    return parse_messages(read_text(path), str(path))[0]

