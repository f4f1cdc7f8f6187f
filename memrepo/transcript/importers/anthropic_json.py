"""Anthropic Messages API JSON: a request body (``model``, ``system``, ``messages``), a bare
list of messages, optionally with the API's ``response`` appended as the last reply.

No timestamps: turns carry the start time (``--started``, else the file's mtime).
Thinking blocks are dropped; ``tool_use``/``tool_result`` pairs become one tool line;
base64 images and documents become attachments.
"""

from __future__ import annotations

import json
from typing import Any

from memrepo.transcript.messages import plain_text, transcript_role
from memrepo.transcript.render import Conversation

from ._common import Builder, digest, session_id
from .claude_code import _media

FORMAT = "anthropic"


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    doc = json.loads(data)
    messages = doc if isinstance(doc, list) else list(doc.get("messages") or [])
    meta = doc if isinstance(doc, dict) else {}
    response = meta.get("response")
    if isinstance(response, dict) and response.get("role") == "assistant":
        messages.append(response)
    b = Builder(ictx.allowlist)
    system = meta.get("system")
    if system:
        b.text("system", plain_text(system))
    for msg in messages:
        role = transcript_role(msg.get("role")) or "user"
        content = msg.get("content")
        if isinstance(content, str):
            b.text(role, content)
            continue
        for block in content or []:
            t = block.get("type")
            if t == "text":
                b.text(role, block.get("text", ""))
            elif t in ("tool_use", "server_tool_use"):
                b.tool_call(block.get("name", "tool"), block.get("input"), block.get("id"))
            elif t == "tool_result" or t.endswith("_tool_result"):
                b.tool_result(block.get("tool_use_id"), block.get("content"),
                              bool(block.get("is_error")))
            elif t in ("image", "document"):
                _media(b, role, block, None)
    usage = (response or {}).get("usage") or {}
    model = meta.get("model") or (response or {}).get("model")
    return [Conversation(
        session_id=ictx.session_id or session_id("anth", digest(data)),
        started=ictx.started,
        turns=b.turns,
        model=model,
        channel="anthropic-api",
        source={"format": FORMAT, "id": digest(data)[:16], "sha256": digest(data)},
        attachments=b.attachments,
        tokens_in=usage.get("input_tokens"),
        tokens_out=usage.get("output_tokens"),
    )]
