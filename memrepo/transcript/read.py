"""A transcript read for extraction: its metadata and its turns, tool lines set apart."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.documents import decode, parse_datetime, parse_document
from memrepo.errors import FormatError
from memrepo.layout import TURN_HEADER, source_ref

_QUOTE_LINE = re.compile(r"^> \[(?:tool|knowledge|attachment)[:\]]")


@dataclass
class Turn:
    role: str
    time: str
    text: str
    memory: bool = False


@dataclass
class Transcript:
    path: str
    meta: dict[str, Any]
    turns: list[Turn]
    title: str
    content_hash: str
    text: str = field(repr=False, default="")

    @property
    def session_id(self) -> str:
        return str(self.meta.get("session_id", ""))

    @property
    def started(self) -> dt.datetime | None:
        return parse_datetime(self.meta.get("started"))

    @property
    def date(self) -> str:
        s = self.started
        if s is not None:
            return s.date().isoformat()
        parts = self.path.split("/")
        return "-".join(parts[2:5]) if len(parts) > 5 else dt.date.today().isoformat()

    @property
    def ref(self) -> str:
        return source_ref(self.path)

    @property
    def topic(self) -> str:
        return str(self.meta.get("topic") or self.title or self.session_id)

    @property
    def tags(self) -> list[str]:
        tags = self.meta.get("tags") or []
        return [str(t) for t in tags] if isinstance(tags, list) else []


def parse_transcript(text: str, path: str) -> Transcript:
    """Turns of a seed 000 §2.1 transcript; ``> [tool:…]`` and code blocks are left out."""
    doc = parse_document(text, path)
    title = ""
    turns: list[Turn] = []
    current: Turn | None = None
    body: list[str] = []
    in_code = False

    def close() -> None:
        if current is not None:
            current.text = "\n".join(body).strip()
            turns.append(current)

    for line in doc.body.split("\n"):
        m = TURN_HEADER.match(line)
        if m and not in_code:
            close()
            current = Turn(m["role"], f"{m['hh']}:{m['mm']}", "", bool(m["memory"]))
            body = []
            continue
        if line.startswith("```"):
            in_code = not in_code
            continue
        if current is None:
            if line.startswith("# ") and not title:
                title = line[2:].strip()
            continue
        if in_code or _QUOTE_LINE.match(line):
            continue
        body.append(line[1:] if line.startswith("\\##") else line)
    close()
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    return Transcript(path, doc.meta, turns, title, digest, text)


def read_transcript(root: Path, path: str) -> Transcript:
    """Read and parse one transcript; any problem is a FormatError naming file and line.

    Why: one bad file (invalid YAML, bad UTF-8) must be reported and skipped by the
    callers, never abort a whole extraction with a traceback.
    """
    try:
        data = (root / path).read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", path) from None
    return parse_transcript(decode(data, path), path)
