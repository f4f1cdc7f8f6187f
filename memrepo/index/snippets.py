"""The best few words of a chunk for a query, read from the file by line span.

The FTS table is contentless, so text comes from the working tree (or, when the file is
gone or changed since the index was built, from the indexed blob).
"""

from __future__ import annotations

import re
from pathlib import Path

from memrepo import compression, worktree
from memrepo.errors import FormatError
from memrepo.layout import SUPERSEDED_LINE

_WORD = re.compile(r"\w+")
WIDTH = 220


def _matcher(terms: list[str]) -> re.Pattern[str] | None:
    """One regex for "a word that starts with a query term's stem" (all but its last two
    letters, at least three): scanning a line is then one C-level pass, not a Python
    loop over every word and term (a compile picks snippets for 150 passages)."""
    stems = {t.lower()[: max(3, len(t) - 2)] for t in terms}
    stems = sorted((x for x in stems if _WORD.fullmatch(x)), key=len, reverse=True)
    if not stems:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, stems)) + r")\w*", re.IGNORECASE)


def best_snippet(lines: list[str], terms: list[str], width: int = WIDTH) -> str:
    """The line with the most query words, cut to ``width`` characters around them."""
    rx = _matcher(terms)
    best, best_n = "", -1.0
    for line in lines:
        s = line.strip()
        if not s or (s.startswith("## ") and len(s) < 40):
            continue
        n: float = len(rx.findall(s)) if rx else 0
        if n and SUPERSEDED_LINE.match(line):
            n /= 100  # any matching current line is the better snippet
        if n > best_n:
            best, best_n = s, n
    text = " ".join(best.split())
    if len(text) <= width:
        return text
    m = rx.search(text) if rx else None
    first = m.start() if m else 0
    start = max(0, min(first - width // 4, len(text) - width))
    cut = text[start : start + width]
    return ("…" if start else "") + cut.strip() + ("…" if start + width < len(text) else "")


def read_span(root: Path, path: str, start: int, end: int, blob: bytes | None = None) -> list[str]:
    """Lines ``start..end`` (1-based) of the file, or of ``blob`` when given; a compressed
    archive (``archive/**.md.gz``) is read inflated (capped as the indexer caps it), and
    one that cannot be is no lines, like a missing file, as is one reached through a
    symlink (:mod:`memrepo.worktree`: the caller then shows the indexed blob)."""
    if blob is None:
        try:
            blob = worktree.read_file(root, path)
        except OSError:
            return []
    if compression.is_gzip_name(path):
        try:
            blob = compression.decompress(blob, path, compression.limit_for(root))
        except FormatError:
            return []
    lines = blob.decode("utf-8", "replace").split("\n")
    return lines[start - 1 : end]
