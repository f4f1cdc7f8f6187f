"""OpenAI Chat Completions JSON: a request body (``model``, ``messages``), a bare list of
messages, optionally with the response (``choices[0].message``) as the last reply.

Roles: system/developer → system, user → user, assistant → agent; ``tool`` (and legacy
``function``) messages are results of the assistant's ``tool_calls``. Reasoning fields are
dropped; ``image_url`` data URLs become attachments, remote URLs references.
"""

from __future__ import annotations

import json
from typing import Any

from memrepo.transcript.messages import transcript_role
from memrepo.transcript.render import Conversation

from ._common import Builder, data_url, digest, session_id

FORMAT = "openai"


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    doc = json.loads(data)
    messages = doc if isinstance(doc, list) else list(doc.get("messages") or [])
    meta = doc if isinstance(doc, dict) else {}
    for choice in (meta.get("choices") or [])[:1]:
        if isinstance(choice.get("message"), dict):
            messages.append(choice["message"])
    b = Builder(ictx.allowlist)
    n = 0
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            b.tool_result(msg.get("tool_call_id"), msg.get("content"), name=msg.get("name"))
            continue
        if role == "function":
            b.tool_result(None, msg.get("content"), name=msg.get("name"))
            continue
        who = transcript_role(role) or "user"
        content = msg.get("content")
        if isinstance(content, str):
            b.text(who, content)
        for part in content if isinstance(content, list) else []:
            t = part.get("type")
            if t in ("text", "input_text", "output_text"):
                b.text(who, part.get("text", ""))
            elif t == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                decoded = data_url(url)
                if decoded:
                    n += 1
                    b.attach(who, f"image-{n}.{decoded[1]}", decoded[0])
                else:
                    b.reference(who, url)
            elif t == "input_audio":
                import base64

                audio = part.get("input_audio") or {}
                n += 1
                b.attach(who, f"audio-{n}.{audio.get('format', 'wav')}",
                         base64.b64decode(audio.get("data", "")))
            elif t == "refusal":
                b.text(who, part.get("refusal", ""))
        if msg.get("refusal"):
            b.text(who, msg["refusal"])
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            b.tool_call(fn.get("name", call.get("type", "tool")), fn.get("arguments"),
                        call.get("id"))
        if msg.get("function_call"):
            fn = msg["function_call"]
            b.tool_call(fn.get("name", "function"), fn.get("arguments"))
        # reasoning_content / reasoning: dropped on purpose (seed 000 §2.1)
    usage = meta.get("usage") or {}
    return [Conversation(
        session_id=ictx.session_id or session_id("oai", meta.get("id") or digest(data)),
        started=ictx.started,
        turns=b.turns,
        model=meta.get("model"),
        channel="openai-api",
        source={"format": FORMAT, "id": str(meta.get("id") or digest(data)[:16]),
                "sha256": digest(data)},
        attachments=b.attachments,
        tokens_in=usage.get("prompt_tokens"),
        tokens_out=usage.get("completion_tokens"),
    )]

