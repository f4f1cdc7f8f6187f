"""Who speaks in a relayed chat: a name that starts most of a role's turns (``Mel: …``).

A conversation relayed through an agent (a chat log pasted turn by turn, a meeting
transcript, LoCoMo's two friends) puts its speakers' names in the turns' text under the
``user`` / ``agent`` roles. Closing a transcript records them as its ``participants``
(:func:`memrepo.transcript.capture.end`), which is where the index learns people's names
(:mod:`memrepo.index.names`: a query's names are masked before its vector is made, and a
file naming a person the query names ranks higher); the extractors write facts with the
speaker as their subject. What a lived memory without them loses: bench/quality/lived.py
(docs/lived-memory.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memrepo.layout import TURN_HEADER

#: ``Name: `` (one or two capitalised words) at the start of a turn's text
SPEAKER = re.compile(r"^(?P<name>[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?):\s+(?=\S)")
#: Capitalised words that start a sentence or name a thing, never a person
_NOT_NAMES = """
    I We You They He She It The This That These Those Let Lets Okay Ok Great Thanks
    Please Also And But So Then Now Today Tomorrow Yesterday Monday Tuesday Wednesday
    Thursday Friday Saturday Sunday Here There What When Where Why How Which Who Our My
    Your Agent User System Yes No Sure Good Next Done Note If Use Run Check Team
    Everyone Nobody Someone Git Python Docker Postgres Postgresql Redis Linux Github
    Slack
"""
NOT_NAMES = frozenset(_NOT_NAMES.split())


def speaker_names(turns: Iterable[tuple[str, str]]) -> dict[str, str]:
    """role -> the name that starts (``Name: …``) most of that role's turns, for a chat
    relayed with its speakers' names (at least two turns of the role, four in five named
    alike); a one-off "Decision: …" is no speaker."""
    by_role: dict[str, list[str]] = {}
    for role, text in turns:
        by_role.setdefault(role, []).append(text)
    out: dict[str, str] = {}
    for role, texts in by_role.items():
        names = [m["name"] for t in texts if (m := SPEAKER.match(t))]
        if len(texts) >= 2 and names:
            top = max(set(names), key=names.count)
            if names.count(top) * 5 >= len(texts) * 4 and top not in NOT_NAMES:
                out[role] = top
    return out


def body_turns(body: str) -> list[tuple[str, str]]:
    """(role, text) of each user and agent turn of a transcript's body (memory turns and
    system lines left out): what :func:`speaker_names` reads at close."""
    out: list[tuple[str, str]] = []
    role: str | None = None
    lines: list[str] = []
    for line in [*body.split("\n"), "## 00:00 — system"]:
        m = TURN_HEADER.match(line)
        if m is None:
            lines.append(line)
            continue
        if role is not None:
            out.append((role, "\n".join(lines).strip()))
        role = m["role"] if m["role"] != "system" and not m["memory"] else None
        lines = []
    return out
