"""P3's search: the passages the index ranks for the prompt.

With no index (or a broken one, at open or mid-query) :class:`~memrepo.index.search.Search`
lets the fallback scanner answer; if even that fails, P3 is empty and the reason is
reported, the prompt is still compiled.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.index.ranking import Filters, settings_from_config
from memrepo.index.search import Search

#: Passages asked of search per compile, and how many of them may come from one file:
#: enough that P3 fills its budget, the best-ranked files holding most of the evidence
#: (more adds no evidence coverage in bench/quality/eval_compile_locomo.py; docs/design.md
#: "The context compiler").
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
    root: Path, query: str, search_cfg: dict[str, Any], limit: int = LIMIT,
    now: dt.date | None = None, engine: Search | None = None,
) -> tuple[list[Passage], str | None]:
    """Ranked passages for ``query`` and, when the index was not used, why. ``engine``: an
    open search to ask (a long-lived process's, e.g. ``memory mcp``'s: its connection,
    counts and model stay warm); None: one is opened for this call."""
    if not query.strip():
        return [], None
    try:
        settings = settings_from_config(search_cfg)
        per_file = max(settings.per_file, PER_FILE)
        opened = Search(root, settings, search_cfg.get("embedder")) if engine is None else None
        # a search opened here is closed here; the caller's stays open
        with opened or contextlib.nullcontext(engine) as search:
            hits = search.search(query, limit, Filters(now=now), snippets=False,
                                 per_file=per_file)
            why = search.why
    except Exception as exc:  # the compile must not fail because search did
        return [], f"search failed: {type(exc).__name__}: {exc}"
    out = [Passage(h.path, h.start_line, h.end_line, float(h.score), h.category) for h in hits]
    return out, (f"index unavailable ({why}); fallback scan" if why else None)
