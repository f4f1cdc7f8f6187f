"""P3's only contact with the search index (memrepo/index, still evolving).

Everything the compiler needs from search goes through :func:`retrieve` and
:func:`record_hits`, so an API change of the index touches this file alone. With no
index (or a broken one) the index's own fallback scanner answers; if even that fails,
P3 is empty and the reason is reported, the prompt is still compiled.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Passages asked of search per compile, and how many of them may come from one file.
#: Enough that P3 fills its budget: at 40 / 4 it used ~3,000 of 4,000 tokens; LoCoMo dev
#: evidence coverage was 70.3 % then, 79.8 % at 100 / 10 and 81.3 % at 150 / 20 (flat
#: beyond: 400 / 40 gives the same), the best-ranked files holding most of the evidence.
LIMIT = 150
PER_FILE = 20


@dataclass(frozen=True)
class Passage:
    path: str
    start_line: int
    end_line: int
    score: float
    category: str | None


def retrieve(
    root: Path, query: str, search_cfg: dict[str, Any], limit: int = LIMIT
) -> tuple[list[Passage], str | None]:
    """Ranked passages for ``query`` and, when the index was not used, why."""
    if not query.strip():
        return [], None
    try:
        import sqlite3

        from memrepo.index.ranking import settings_from_config
        from memrepo.index.search import open_searcher

        settings = settings_from_config(search_cfg)
        settings.per_file = max(settings.per_file, PER_FILE)
        engine, why = open_searcher(root, settings, search_cfg.get("embedder"))
        try:
            try:
                hits = engine.search(query, limit)
            except sqlite3.DatabaseError as exc:
                from memrepo.index.fallback import Scanner

                engine.close()
                engine = Scanner(root, settings)
                why = f"index failed ({exc})"
                hits = engine.search(query, limit)
        finally:
            engine.close()
    except Exception as exc:  # the compile must not fail because search did
        return [], f"search failed: {type(exc).__name__}: {exc}"
    out = [Passage(h.path, h.start_line, h.end_line, float(h.score), h.category) for h in hits]
    return out, (f"index unavailable ({why}); fallback scan" if why else None)


def record_hits(root: Path, refs: list[tuple[str, int]]) -> None:
    """Record what the compiler included as search hits (seed 001 signals)."""
    if not refs:
        return
    from memrepo.index import signals

    with contextlib.suppress(OSError):
        signals.append(root, [{"event": "hit", "path": p, "line": line} for p, line in refs])
