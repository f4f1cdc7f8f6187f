"""What the importers share: building turns, tool lines, session ids, timestamps."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from memrepo.secrets import redact
from memrepo.transcript.messages import plain_text
from memrepo.transcript.render import ATTACH, DraftTurn, redacted_line, tool_line


def digest(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def session_id(prefix: str, source_id: str) -> str:
    """A stable session id from the source's own id, so a re-import finds the first one."""
    return f"{prefix}-{digest(source_id)[:12]}"


def timestamp(value: Any) -> dt.datetime | None:
    """An aware datetime from an ISO 8601 string or epoch seconds (UTC when naive)."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(float(value), dt.timezone.utc)
    s = str(value).strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(s)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


_SALIENT = ("command", "file_path", "path", "pattern", "url", "query", "code", "description",
            "prompt", "notebook_path", "name")


def args_summary(args: Any, allowlist: Sequence[str] = ()) -> str:
    """The part of a tool call's arguments a reader needs, not the full JSON.

    Redacted before it is cut short, so a secret straddling the cut is still caught whole.
    """
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return redacted_line(args, allowlist)[0]
    if isinstance(args, dict):
        for key in _SALIENT:
            if isinstance(args.get(key), str) and args[key].strip():
                return redacted_line(args[key], allowlist)[0]
        if not args:
            return ""
        compact = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        return redacted_line(compact, allowlist)[0]
    if args is None:
        return ""
    return redacted_line(json.dumps(args, ensure_ascii=False), allowlist)[0]


def result_summary(content: Any, is_error: bool = False, allowlist: Sequence[str] = ()) -> str:
    """First line of a tool result (and how long it was): the brief result of seed 000 §2.1.

    The whole result is redacted before its first line is taken and cut (a private key
    block spans lines).
    """
    text = redact(plain_text(content), allowlist)[0]
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return "error" if is_error else "ok"
    first = redacted_line(lines[0], allowlist, 120)[0]
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return ("error: " if is_error else "") + first + more


def data_url(url: str) -> tuple[bytes, str] | None:
    """(bytes, extension) of a ``data:`` URL, else None."""
    m = re.match(r"data:([\w.+-]+/[\w.+-]+)?(;base64)?,(.*)", url, re.S)
    if not m:
        return None
    raw = base64.b64decode(m[3]) if m[2] else m[3].encode("utf-8")
    return raw, _ext(m[1] or "application/octet-stream")


def _ext(media_type: str) -> str:
    sub = media_type.split("/")[-1].lower()
    return {"jpeg": "jpg", "svg+xml": "svg", "plain": "txt", "octet-stream": "bin"}.get(sub, sub)


class Builder:
    """Turns in order: consecutive blocks of one role form a turn; tool results find their call.

    ``allowlist`` is the repo's secrets allowlist: tool lines are redacted here, before
    their parts are cut short (the renderer redacts whole blocks again, harmlessly).
    """

    def __init__(self, allowlist: Sequence[str] = ()) -> None:
        self.allowlist = tuple(allowlist)
        self.turns: list[DraftTurn] = []
        self.attachments: dict[str, bytes] = {}
        self._tools: dict[str, tuple[DraftTurn, int, str, str]] = {}

    def _turn(self, role: str, when: dt.datetime | None, new: bool = False) -> DraftTurn:
        if new or not self.turns or self.turns[-1].role != role:
            self.turns.append(DraftTurn(role, when))
        turn = self.turns[-1]
        if turn.when is None:
            turn.when = when
        return turn

    def text(self, role: str, text: str, when: dt.datetime | None = None) -> None:
        if text and text.strip():
            self._turn(role, when).blocks.append(text.strip("\n"))

    def new_turn(self, role: str, when: dt.datetime | None = None) -> None:
        """Start a new turn of ``role`` even if the last one has the same role."""
        if self.turns and self.turns[-1].role == role and self.turns[-1].blocks:
            self._turn(role, when, new=True)

    def tool_call(self, name: str, args: Any, call_id: str | None = None,
                  when: dt.datetime | None = None) -> None:
        turn = self._turn("agent", when)
        name = redact(name, self.allowlist)[0]
        summary = args_summary(args, self.allowlist)
        turn.blocks.append(tool_line(name, summary))
        if call_id:
            self._tools[call_id] = (turn, len(turn.blocks) - 1, name, summary)

    def tool_result(self, call_id: str | None, content: Any, is_error: bool = False,
                    name: str | None = None, when: dt.datetime | None = None) -> None:
        result = result_summary(content, is_error, self.allowlist)
        if call_id and call_id in self._tools:
            turn, index, tname, args = self._tools.pop(call_id)
            turn.blocks[index] = tool_line(tname, args, result)
        else:  # a result without its call: a line of its own
            tname = redact(name or "tool", self.allowlist)[0]
            self._turn("agent", when).blocks.append(tool_line(tname, "", result))

    def attach(self, role: str, name: str, data: bytes | None,
               when: dt.datetime | None = None) -> None:
        key = name
        if data is not None:
            key = f"{digest(data)[:8]}-{name}"
            self.attachments[key] = data
        self._turn(role, when).blocks.append(ATTACH + key)

    def reference(self, role: str, target: str, when: dt.datetime | None = None) -> None:
        """An attachment that lives elsewhere (a URL): referenced, never fetched."""
        target = redacted_line(target, self.allowlist, 300)[0]
        self._turn(role, when).blocks.append(f"> [attachment:{target}]")
