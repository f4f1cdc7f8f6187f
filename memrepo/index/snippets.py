"""The best few words of a chunk for a query, read from the file by line span.

The FTS table is contentless, so text comes from the working tree (or, when the file is
gone or changed since the index was built, from the indexed blob).
"""

from __future__ import annotations

import re
from pathlib import Path

from memrepo.markers import SUPERSEDED_LINE

_WORD = re.compile(r"\w+")
WIDTH = 220


def _matches(word: str, terms: list[str]) -> bool:
    w = word.lower()
    return any(w.startswith(t[: max(3, len(t) - 2)]) for t in terms)


def best_snippet(lines: list[str], terms: list[str], width: int = WIDTH) -> str:
    """The line with the most query words, cut to ``width`` characters around them."""
    best, best_n = "", -1.0
    for line in lines:
        s = line.strip()
        if not s or (s.startswith("## ") and len(s) < 40):
            continue
        n = sum(1 for w in _WORD.findall(s) if _matches(w, terms)) if terms else 0
        if n and SUPERSEDED_LINE.match(line):
            n /= 100  # any matching current line is the better snippet
        if n > best_n:
            best, best_n = s, n
    text = " ".join(best.split())
    if len(text) <= width:
        return text
    first = next((m.start() for m in _WORD.finditer(text) if _matches(m.group(), terms)), 0)
    start = max(0, min(first - width // 4, len(text) - width))
    cut = text[start : start + width]
    return ("…" if start else "") + cut.strip() + ("…" if start + width < len(text) else "")


def read_span(root: Path, path: str, start: int, end: int, blob: bytes | None = None) -> list[str]:
    """Lines ``start..end`` (1-based) of the file, or of ``blob`` when given."""
    if blob is None:
        try:
            blob = (Path(root) / path).read_bytes()
        except OSError:
            return []
    lines = blob.decode("utf-8", "replace").split("\n")
    return lines[start - 1 : end]
