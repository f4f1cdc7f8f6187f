"""The server's query-vector cache: a prompt asked again (the hook, then the MCP tool, then
a search) costs no model time."""

from __future__ import annotations

import threading
from collections import OrderedDict


class QueryCache:
    """Vectors by text, least recently used out first (thread-safe)."""

    def __init__(self, size: int):
        self.size = size
        self._d: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> bytes | None:
        with self._lock:
            v = self._d.get(text)
            if v is None:
                self.misses += 1
                return None
            self._d.move_to_end(text)
            self.hits += 1
            return v

    def put(self, text: str, vec: bytes) -> None:
        with self._lock:
            self._d[text] = vec
            self._d.move_to_end(text)
            while len(self._d) > self.size:
                self._d.popitem(last=False)

    def __len__(self) -> int:
        return len(self._d)
