"""ChatGPT data export (``conversations.json``): a list of conversations, each a ``mapping``
tree of message nodes (edits and regenerations are branches).

Only the branch the person last saw is kept: from ``current_node`` up through ``parent``
links to the root. Hidden and empty system messages, custom instructions and reasoning
(``thoughts``, ``reasoning_recap``) are dropped. An assistant message addressed to a tool
(``recipient`` not ``all``) and the tool's reply become one tool line. Uploaded images
(``image_asset_pointer``) become attachments when the export's files sit next to
conversations.json, else a reference to the missing file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memrepo.transcript.messages import transcript_role
from memrepo.transcript.render import Conversation

from ._common import Builder, digest, session_id, timestamp

FORMAT = "chatgpt"
_DROP_TYPES = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}


def branch(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the current branch, root first."""
    mapping = conv.get("mapping") or {}
    node_id = conv.get("current_node")
    if node_id not in mapping:  # no current node: follow the last child from the root
        roots = [k for k, v in mapping.items() if not v.get("parent")]
        node_id = roots[0] if roots else None
        while node_id and mapping[node_id].get("children"):
            node_id = mapping[node_id]["children"][-1]
    chain = []
    seen: set[str] = set()
    while node_id and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if node.get("message"):
            chain.append(node["message"])
        node_id = node.get("parent")
    return chain[::-1]


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    doc = json.loads(data)
    items = doc if isinstance(doc, list) else [doc]
    out = []
    for conv in items:
        if isinstance(conv, dict) and "mapping" in conv:
            out.append(_conversation(conv, ictx, Path(ictx.path).parent))
    return out


def _conversation(conv: dict[str, Any], ictx: Any, folder: Path) -> Conversation:
    b = Builder(ictx.allowlist)
    model = conv.get("default_model_slug")
    pending_call: dict[str, Any] | None = None
    times = []
    for msg in branch(conv):
        meta = msg.get("metadata") or {}
        content = msg.get("content") or {}
        ctype = content.get("content_type", "text")
        role = (msg.get("author") or {}).get("role")
        when = timestamp(msg.get("create_time"))
        if when:
            times.append(when)
        if meta.get("is_visually_hidden_from_conversation") or ctype in _DROP_TYPES:
            continue
        model = meta.get("model_slug") or model
        text = _text(content)
        if role == "tool":
            name = (msg.get("author") or {}).get("name") or "tool"
            if pending_call is not None:
                b.tool_result(pending_call["id"], text)
                pending_call = None
            else:
                b.tool_result(None, text, name=name, when=when)
            continue
        if role == "assistant" and msg.get("recipient") not in (None, "all"):
            call_id = msg.get("id") or str(len(b.turns))
            b.tool_call(str(msg["recipient"]), text, call_id, when)
            pending_call = {"id": call_id}
            continue
        who = transcript_role(role) or "user"
        if role == "system" and not text.strip():
            continue
        b.text(who, text, when)
        for part in content.get("parts") or []:
            if isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
                ref = str(part.get("asset_pointer", "")).split("://", 1)[-1]
                found = sorted(folder.glob(f"{ref}*")) if ref else []
                data = found[0].read_bytes() if found else None
                name = found[0].name if found else f"{ref or 'image'}.png"
                b.attach(who, name, data, when)
    cid = str(conv.get("conversation_id") or conv.get("id") or digest(json.dumps(conv))[:16])
    raw = json.dumps(conv, sort_keys=True).encode("utf-8")
    started = timestamp(conv.get("create_time")) or (min(times) if times else ictx.started)
    ended = timestamp(conv.get("update_time")) or (max(times) if times else None)
    return Conversation(
        session_id=ictx.session_id or session_id("chatgpt", cid),
        started=started,
        ended=ended,
        turns=b.turns,
        model=model,
        channel="chatgpt",
        title=conv.get("title") or None,
        source={"format": FORMAT, "id": cid, "sha256": digest(raw)},
        attachments=b.attachments,
    )


def _text(content: dict[str, Any]) -> str:
    if isinstance(content.get("parts"), list):
        return "\n\n".join(p for p in content["parts"] if isinstance(p, str) and p.strip())
    if isinstance(content.get("text"), str):
        return content["text"]
    if isinstance(content.get("result"), str):
        return content["result"]
    return ""
