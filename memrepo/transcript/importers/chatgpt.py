"""ChatGPT data export (``conversations.json``): a list of conversations, each a ``mapping``
tree of message nodes (edits and regenerations are branches).

Only the branch the person last saw is kept: from ``current_node`` up through ``parent``
links to the root. Hidden and empty system messages, custom instructions and reasoning
(``thoughts``, ``reasoning_recap``) are dropped. An assistant message addressed to a tool
(``recipient`` not ``all``) and the tool's reply become one tool line. Uploaded images
(``image_asset_pointer``) become attachments when the export's files sit next to
conversations.json, else a reference to the missing file.

The export is data from elsewhere, so it is read defensively: a tree whose links loop is
refused (never walked forever), a value of the wrong shape or a time that is not one is
an error naming the conversation and message, and an asset pointer may only name a file
directly in the export's folder (no ``..``, no absolute path, no symlink out of it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memrepo.transcript.messages import transcript_role
from memrepo.transcript.render import Conversation

from ._common import (
    Builder,
    ShapeError,
    at,
    digest,
    kind,
    load_json,
    need_dict,
    need_list,
    need_str,
    session_id,
    timestamp,
)

FORMAT = "chatgpt"
_DROP_TYPES = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}
#: What an asset pointer may name once its scheme (``file-service://``) is cut: one file
#: name stem as ChatGPT writes them (``file-AbC123``, ``file_00000000abc``).
_ASSET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")


def branch(conv: dict[str, Any], where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(node id, message) of the current branch, root first.

    A ``parent`` or ``children`` link that comes back to a node already on the path is a
    cycle: refused, naming the node, rather than followed (or silently cut).
    """
    mapping = need_dict(conv.get("mapping"), f"{where}mapping")
    for key, node in mapping.items():
        need_dict(node, f"{where}mapping.{key}")
    node_id = conv.get("current_node")
    if not isinstance(node_id, str) or node_id not in mapping:
        # no current node: follow the last child from the root
        roots = [k for k, v in mapping.items() if not v.get("parent")]
        node_id = roots[0] if roots else None
        walked: set[str] = set()
        while node_id in mapping:
            walked.add(node_id)
            children = need_list(mapping[node_id].get("children"),
                                 f"{where}mapping.{node_id}.children")
            if not children:
                break
            child = children[-1]
            if not isinstance(child, str):
                raise ShapeError(f"{where}mapping.{node_id}.children",
                                 f"must be a list of node ids, got {kind(child)}")
            if child in walked:
                raise ShapeError(f"{where}mapping.{node_id}.children",
                                 f"links back to {child!r}: the message tree has a cycle")
            node_id = child
    chain = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise ShapeError(f"{where}mapping.{node_id}.parent",
                             "the message tree has a cycle (a parent link comes back here)")
        seen.add(node_id)
        node = mapping[node_id]
        message = need_dict(node.get("message"), f"{where}mapping.{node_id}.message")
        if message:
            chain.append((node_id, message))
        parent = node.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise ShapeError(f"{where}mapping.{node_id}.parent",
                             f"must be a node id, got {kind(parent)}")
        node_id = parent
    return chain[::-1]


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    doc = load_json(data)
    items = doc if isinstance(doc, list) else [doc]
    out = []
    folder = Path(ictx.path).parent
    for i, conv in enumerate(items):
        where = f"[{i}]" if isinstance(doc, list) else ""
        if not isinstance(conv, dict):
            raise ShapeError(where or "$", f"must be a conversation object, got {kind(conv)}")
        if "mapping" in conv:
            with at(where or "$"):
                out.append(_conversation(conv, ictx, folder, f"{where}." if where else ""))
    return out


def _conversation(conv: dict[str, Any], ictx: Any, folder: Path, where: str) -> Conversation:
    b = Builder(ictx.allowlist)
    model = conv.get("default_model_slug")
    pending_call: dict[str, Any] | None = None
    times = []
    for node_id, msg in branch(conv, where):
        at_msg = f"{where}mapping.{node_id}.message"
        with at(at_msg):
            meta = need_dict(msg.get("metadata"), f"{at_msg}.metadata")
            content = need_dict(msg.get("content"), f"{at_msg}.content")
            ctype = content.get("content_type", "text")
            author = need_dict(msg.get("author"), f"{at_msg}.author")
            role = author.get("role")
            when = timestamp(msg.get("create_time"), f"{at_msg}.create_time")
            if when:
                times.append(when)
            if meta.get("is_visually_hidden_from_conversation") or ctype in _DROP_TYPES:
                continue
            model = meta.get("model_slug") or model
            text = _text(content, f"{at_msg}.content")
            if role == "tool":
                name = author.get("name") or "tool"
                if pending_call is not None:
                    b.tool_result(pending_call["id"], text)
                    pending_call = None
                else:
                    b.tool_result(None, text, name=str(name), when=when)
                continue
            if role == "assistant" and msg.get("recipient") not in (None, "all"):
                call_id = msg.get("id") or str(len(b.turns))
                b.tool_call(str(msg["recipient"]), text, call_id, when)
                pending_call = {"id": call_id}
                continue
            who = transcript_role(role if isinstance(role, str) else None) or "user"
            if role == "system" and not text.strip():
                continue
            b.text(who, text, when)
            for j, part in enumerate(need_list(content.get("parts"), f"{at_msg}.content.parts")):
                if isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
                    at_part = f"{at_msg}.content.parts[{j}].asset_pointer"
                    found = asset(folder, part.get("asset_pointer"), at_part)
                    ref = _pointer_name(part.get("asset_pointer"))
                    data = found.read_bytes() if found else None
                    name = found.name if found else f"{ref or 'image'}.png"
                    b.attach(who, name, data, when)
    cid = str(conv.get("conversation_id") or conv.get("id") or digest(json.dumps(conv))[:16])
    raw = json.dumps(conv, sort_keys=True).encode("utf-8")
    started = timestamp(conv.get("create_time"), f"{where}create_time") or (
        min(times) if times else ictx.started)
    ended = timestamp(conv.get("update_time"), f"{where}update_time") or (
        max(times) if times else None)
    title = conv.get("title")
    return Conversation(
        session_id=ictx.session_id or session_id("chatgpt", cid),
        started=started,
        ended=ended,
        turns=b.turns,
        model=model if isinstance(model, str) and model else None,
        channel="chatgpt",
        title=title if isinstance(title, str) and title else None,
        source={"format": FORMAT, "id": cid, "sha256": digest(raw)},
        attachments=b.attachments,
    )


def _pointer_name(pointer: Any) -> str:
    return str(pointer or "").split("://", 1)[-1]


def asset(folder: Path, pointer: Any, where: str) -> Path | None:
    """The export's file an ``image_asset_pointer`` names, or None when it is not there.

    The pointer may only name a file directly in the export's folder: ``..``, a path, an
    absolute path, glob characters or a symlink leading out are refused (a crafted export
    must not read ~/.ssh into the memory repo).
    """
    if pointer is None or pointer == "":
        return None
    name = _pointer_name(need_str(pointer, where))
    if not name:
        return None
    if not _ASSET_NAME.fullmatch(name):
        raise ShapeError(where, f"{pointer[:80]!r} does not name a file of the export (only "
                                "a file name, no path, may follow the scheme)")
    base = folder.resolve()
    for candidate in sorted(folder.glob(f"{name}*")):
        if candidate.is_dir():
            continue
        resolved = candidate.resolve()
        if not resolved.is_relative_to(base):
            raise ShapeError(where, f"{candidate.name} is a link out of the export folder "
                                    f"(to {resolved})")
        if resolved.is_file():
            return candidate
    return None


def _text(content: dict[str, Any], where: str) -> str:
    parts = content.get("parts")
    if parts is not None and not isinstance(parts, list):
        raise ShapeError(f"{where}.parts", f"must be a list, got {kind(parts)}")
    if isinstance(parts, list):
        return "\n\n".join(p for p in parts if isinstance(p, str) and p.strip())
    if isinstance(content.get("text"), str):
        return content["text"]
    if isinstance(content.get("result"), str):
        return content["result"]
    return ""
