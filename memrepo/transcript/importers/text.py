"""Plain markdown or text logs: speaker lines split turns, else the whole file is one turn.

Recognised speakers: our own turn headers (``## 18:45 — user``), headings or bold labels
(``## User``, ``**Assistant:**``) and ``Name: text`` lines for User/Human/You/Me,
Assistant/AI/Agent/Claude/ChatGPT/Bot, System. Times in our headers are kept (on the start
date); other turns carry the start time.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from memrepo.transcript.messages import transcript_role
from memrepo.transcript.render import Conversation

from ._common import Builder, digest, session_id

FORMAT = "markdown"
#: Speaker names a log may use besides the message roles that ``transcript_role`` maps.
_ALSO = {"you": "user", "me": "user", "claude": "agent", "chatgpt": "agent", "gpt": "agent",
         "bot": "agent"}
#: Every speaker a label may name, in the order the pattern tries them.
_NAMES = "|".join(("user", "human", "you", "me", "assistant", "ai", "agent", "claude",
                   "chatgpt", "gpt", "bot", "model", "system"))
_OURS = re.compile(r"^## (\d\d):(\d\d) — (user|agent|system)( \[memory\])?\s*$")
_LABEL = re.compile(
    rf"^(?:#{{1,6}}\s*)?(?:\*\*|__)?({_NAMES})(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*(.*)$",
    re.IGNORECASE,
)


def parse(data: bytes, ictx: Any) -> list[Conversation]:
    text = data.decode("utf-8")
    if text.startswith("---\n"):  # frontmatter of a markdown note: not conversation
        end = text.find("\n---", 4)
        text = text[end + 4 :] if end > 0 else text
    b = Builder(ictx.allowlist)
    title = None
    role: str | None = None
    when: dt.datetime | None = None
    buf: list[str] = []

    def flush() -> None:
        if role and buf:
            b.new_turn(role, when)
            b.text(role, "\n".join(buf).strip("\n"), when)
        buf.clear()

    for line in text.split("\n"):
        m = _OURS.match(line)
        label = None if m else _LABEL.match(line)
        if m:
            flush()
            role = m[3]
            when = ictx.started.replace(hour=int(m[1]), minute=int(m[2]), second=0)
            continue
        if label and (line.lstrip().startswith(("#", "*", "_")) or label[2] or ":" in line):
            flush()
            role, when = _who(label[1]), None
            if label[2].strip():
                buf.append(label[2].strip())
            continue
        if role is None and title is None and line.startswith("# "):
            title = line[2:].strip()
            continue
        if role is None and line.strip():
            role = "user"
        buf.append(line)
    flush()
    return [Conversation(
        session_id=ictx.session_id or session_id("md", digest(data)),
        started=ictx.started,
        turns=b.turns,
        title=title or None,
        channel="import",
        source={"format": FORMAT, "id": digest(data)[:16], "sha256": digest(data)},
        attachments=b.attachments,
    )]


def _who(name: str) -> str:
    """The transcript role of a speaker label (``Assistant``, ``You``, ``Claude``…)."""
    return transcript_role(name) or _ALSO[name.lower()]
