"""A search's hits as one namespace sees them (memrepo.namespaces, docs/namespaces.md).

The index knows nothing of namespaces: a transcript says its own in its frontmatter and a
journal line by its marker or its sources, so the hits are judged after ranking, from the
files. A search in a namespace asks for :data:`OVERFETCH` times the hits it shows, so
that another namespace's hits leave room for the next ones; a search in none is not
touched (:meth:`memrepo.index.search.Search.search`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from memrepo.index.query import terms
from memrepo.index.ranking import Hit
from memrepo.index.snippets import best_snippet, read_span
from memrepo.namespaces import View

#: A search in a namespace ranks this many times the hits it returns (then filters).
OVERFETCH = 4
#: ... and at least this many more.
OVERFETCH_MIN = 20


def wanted(limit: int) -> int:
    """How many hits to rank for ``limit`` shown in a namespace."""
    return max(limit * OVERFETCH, limit + OVERFETCH_MIN)


def visible_hits(root: Path, ns: str, query: str, hits: list[Hit], limit: int,
                 snippets: bool = True) -> list[Hit]:
    """The first ``limit`` of ``hits`` namespace ``ns`` sees: none of another namespace's
    transcripts; a journal hit only with a line of its own or a shared one in its span,
    its snippet taken from those lines."""
    view = View(root, ns)
    out: list[Hit] = []
    words: list[str] | None = None
    for hit in hits:
        if len(out) >= limit:
            break
        if view.hides_file(hit.path):
            continue
        if view.filters_lines(hit.path):
            lines = read_span(root, hit.path, hit.start_line, hit.end_line)
            rows = list(enumerate(lines, hit.start_line))
            kept = view.keep(hit.path, rows)
            if not any(t.strip() and not t.lstrip().startswith("#") for _, t in kept):
                continue
            if len(kept) < len(rows) and snippets:
                words = terms(query) if words is None else words
                hit = replace(hit, snippet=best_snippet([t for _, t in kept], words))
        out.append(hit)
    return out


def search_in(ns: str | None, root: Path, query: str, limit: int, snippets: bool,
              run: Callable[[int], list[Hit]]) -> list[Hit]:
    """``run(n)`` (a search for ``n`` hits) as ``ns`` sees it; with no namespace, as is."""
    if ns is None:
        return run(limit)
    return visible_hits(root, ns, query, run(wanted(limit)), limit, snippets)
