"""Untrusted JSON read as one object: a hand-edited log line, a peer's reply.

Logs under ``raw/`` and ``.memrepo/`` are merged by git and edited by people, and the
resident server's socket takes whatever a client sends, so a line may be anything: not
JSON, JSON that is not an object, or a nesting bomb that makes :func:`json.loads` raise
RecursionError. Every reader wants the same answer for all three: "not a record".
"""

from __future__ import annotations

import json
from typing import Any


def json_object(data: str | bytes) -> dict[str, Any] | None:
    """``data`` parsed when it is a JSON object, else None (never raises)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
