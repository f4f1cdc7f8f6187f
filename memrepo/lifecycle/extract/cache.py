"""The LLM result cache: a replay with nothing changed makes no LLM call.

Keyed by (what asked — extractor name and version, or ``reconcile`` —, model, prompt
template hash, hash of the input), stored as one small JSON file per key under
``.memrepo/cache/llm/`` (gitignored: a cache, rebuilt by calling again).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write

CACHE_DIR = ".memrepo/cache/llm"


def key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


class ResultCache:
    def __init__(self, root: Path | None) -> None:
        self.dir = Path(root) / CACHE_DIR if root is not None else None

    def get(self, k: str) -> Any | None:
        if self.dir is None:
            return None
        try:
            return json.loads((self.dir / k[:2] / f"{k}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, k: str, value: Any) -> None:
        if self.dir is not None:
            atomic_write(self.dir / k[:2] / f"{k}.json", json.dumps(value, ensure_ascii=False))
