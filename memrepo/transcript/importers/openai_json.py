"""OpenAI Chat Completions JSON: a request body (``model``, ``messages``), a bare list of
messages, optionally with the response (``choices[0].message``) as the last reply.

Roles: system/developer → system, user → user, assistant → agent; ``tool`` (and legacy
``function``) messages are results of the assistant's ``tool_calls``. Reasoning fields are
dropped; ``image_url`` data URLs become attachments, remote URLs references. A value of
the wrong shape is an error naming its JSON path (``messages[2].tool_calls[0].function``).
"""

from __future__ import annotations

from typing import Any

from memrepo.transcript.messages import transcript_role
from memrepo.transcript.render import Conversation

from ._common import (
    Builder,
    ShapeError,
    at,
    b64decode,
    count,
    data_url,
    digest,
    kind,
    load_json,
    need_dict,
    need_list,
    need_str,
    safe_ext,
    session_id,
)

FORMAT = "openai"


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    doc = load_json(data)
    if not isinstance(doc, (list, dict)):
        raise ShapeError("$", f"must be an object with 'messages' or a list, got {kind(doc)}")
    messages = list(doc) if isinstance(doc, list) else list(
        need_list(doc.get("messages"), "messages"))
    meta = doc if isinstance(doc, dict) else {}
    for choice in need_list(meta.get("choices"), "choices")[:1]:
        message = need_dict(choice, "choices[0]").get("message")
        if isinstance(message, dict):
            messages.append(message)
    b = Builder(ictx.allowlist)
    n = [0]
    for i, msg in enumerate(messages):
        where = f"messages[{i}]" if isinstance(doc, dict) else f"[{i}]"
        with at(where):
            _message(b, need_dict(msg, where), where, n)
    usage = need_dict(meta.get("usage"), "usage")
    source_id = meta.get("id")
    if source_id is not None and not isinstance(source_id, (str, int)):
        raise ShapeError("id", f"must be a string, got {kind(source_id)}")
    return [Conversation(
        session_id=ictx.session_id or session_id("oai", str(source_id or digest(data))),
        started=ictx.started,
        turns=b.turns,
        model=need_str(meta.get("model"), "model") or None,
        channel="openai-api",
        source={"format": FORMAT, "id": str(source_id or digest(data)[:16]),
                "sha256": digest(data)},
        attachments=b.attachments,
        tokens_in=count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        tokens_out=count(usage.get("completion_tokens"), "usage.completion_tokens"),
    )]


def _message(b: Builder, msg: dict[str, Any], where: str, n: list[int]) -> None:
    role = need_str(msg.get("role"), f"{where}.role")
    if role == "tool":
        b.tool_result(msg.get("tool_call_id"), msg.get("content"), name=msg.get("name"))
        return
    if role == "function":
        b.tool_result(None, msg.get("content"), name=msg.get("name"))
        return
    who = transcript_role(role) or "user"
    content = msg.get("content")
    if isinstance(content, str):
        b.text(who, content)
    elif content is not None and not isinstance(content, list):
        raise ShapeError(f"{where}.content", f"must be a string or a list, got {kind(content)}")
    for j, part in enumerate(content if isinstance(content, list) else []):
        at_part = f"{where}.content[{j}]"
        need_dict(part, at_part)
        t = need_str(part.get("type"), f"{at_part}.type")
        if t in ("text", "input_text", "output_text"):
            b.text(who, need_str(part.get("text"), f"{at_part}.text"))
        elif t == "image_url":
            url = need_str(need_dict(part.get("image_url"), f"{at_part}.image_url").get("url"),
                           f"{at_part}.image_url.url")
            decoded = data_url(url, f"{at_part}.image_url.url")
            if decoded:
                n[0] += 1
                b.attach(who, f"image-{n[0]}.{decoded[1]}", decoded[0])
            else:
                b.reference(who, url)
        elif t == "input_audio":
            audio = need_dict(part.get("input_audio"), f"{at_part}.input_audio")
            n[0] += 1
            b.attach(who, f"audio-{n[0]}.{safe_ext(audio.get('format', 'wav'))}",
                     b64decode(audio.get("data", ""), f"{at_part}.input_audio.data"))
        elif t == "refusal":
            b.text(who, need_str(part.get("refusal"), f"{at_part}.refusal"))
    if msg.get("refusal"):
        b.text(who, need_str(msg["refusal"], f"{where}.refusal"))
    for j, call in enumerate(need_list(msg.get("tool_calls"), f"{where}.tool_calls")):
        at_call = f"{where}.tool_calls[{j}]"
        need_dict(call, at_call)
        fn = need_dict(call.get("function"), f"{at_call}.function")
        name = fn.get("name", call.get("type", "tool"))
        b.tool_call(need_str(name, f"{at_call}.function.name", None, "tool"),
                    fn.get("arguments"), call.get("id"))
    if msg.get("function_call"):
        fn = need_dict(msg["function_call"], f"{where}.function_call")
        b.tool_call(need_str(fn.get("name"), f"{where}.function_call.name", None, "function"),
                    fn.get("arguments"))
    # reasoning_content / reasoning: dropped on purpose (seed 000 §2.1)
