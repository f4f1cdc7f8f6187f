"""Anthropic Messages API JSON: a request body (``model``, ``system``, ``messages``), a bare
list of messages, optionally with the API's ``response`` appended as the last reply.

No timestamps: turns carry the start time (``--started``, else the file's mtime).
Thinking blocks are dropped; ``tool_use``/``tool_result`` pairs become one tool line;
base64 images and documents become attachments. A value of the wrong shape is an error
naming its JSON path (``messages[3].content[0].type``).
"""

from __future__ import annotations

from typing import Any

from memrepo.transcript.messages import plain_text, transcript_role
from memrepo.transcript.render import Conversation

from ._common import (
    Builder,
    ShapeError,
    at,
    count,
    digest,
    kind,
    load_json,
    need_dict,
    need_list,
    need_str,
    session_id,
)
from .claude_code import _media

FORMAT = "anthropic"


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    doc = load_json(data)
    if not isinstance(doc, (list, dict)):
        raise ShapeError("$", f"must be an object with 'messages' or a list, got {kind(doc)}")
    messages = list(doc) if isinstance(doc, list) else list(
        need_list(doc.get("messages"), "messages"))
    meta = doc if isinstance(doc, dict) else {}
    response = meta.get("response")
    if isinstance(response, dict) and response.get("role") == "assistant":
        messages.append(response)
    b = Builder(ictx.allowlist)
    system = meta.get("system")
    if system:
        with at("system"):
            b.text("system", plain_text(system))
    for i, msg in enumerate(messages):
        where = f"messages[{i}]" if isinstance(doc, dict) else f"[{i}]"
        with at(where):
            _message(b, need_dict(msg, where), where)
    usage = need_dict((response if isinstance(response, dict) else {}).get("usage"),
                      "response.usage")
    model = meta.get("model") or (response if isinstance(response, dict) else {}).get("model")
    return [Conversation(
        session_id=ictx.session_id or session_id("anth", digest(data)),
        started=ictx.started,
        turns=b.turns,
        model=need_str(model, "model") or None,
        channel="anthropic-api",
        source={"format": FORMAT, "id": digest(data)[:16], "sha256": digest(data)},
        attachments=b.attachments,
        tokens_in=count(usage.get("input_tokens"), "response.usage.input_tokens"),
        tokens_out=count(usage.get("output_tokens"), "response.usage.output_tokens"),
    )]


def _message(b: Builder, msg: dict[str, Any], where: str) -> None:
    role = transcript_role(need_str(msg.get("role"), f"{where}.role")) or "user"
    content = msg.get("content")
    if isinstance(content, str):
        b.text(role, content)
        return
    for j, block in enumerate(need_list(content, f"{where}.content")):
        at_block = f"{where}.content[{j}]"
        need_dict(block, at_block)
        t = need_str(block.get("type"), f"{at_block}.type")
        if not t:
            raise ShapeError(f"{at_block}.type", "is missing")
        with at(at_block):
            if t == "text":
                b.text(role, need_str(block.get("text"), f"{at_block}.text"))
            elif t in ("tool_use", "server_tool_use"):
                b.tool_call(need_str(block.get("name"), f"{at_block}.name", None, "tool"),
                            block.get("input"), block.get("id"))
            elif t == "tool_result" or t.endswith("_tool_result"):
                b.tool_result(block.get("tool_use_id"), block.get("content"),
                              bool(block.get("is_error")))
            elif t in ("image", "document"):
                _media(b, role, block, None, at_block)
