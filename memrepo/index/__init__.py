"""The search index of a memory repo: ``memory.db`` at the repo root (gitignored).

Files are the truth and the index is a cache of them at one commit: it records that
commit, so ``memory doctor`` can prove it matches HEAD and any index can be rebuilt.
Modules, one concept each:

- :mod:`~memrepo.index.db` — the connection helper (WAL, busy timeout, vector mode)
- :mod:`~memrepo.index.schema` — tables and the meta row (schema version, embedder, commit)
- :mod:`~memrepo.index.paths` — where the index keeps its files, which repo files it holds
- :mod:`~memrepo.index.docmeta` / :mod:`~memrepo.index.chunking` — what a file becomes
- :mod:`~memrepo.index.gitsource` — the only way the indexer reads files (git objects)
- :mod:`~memrepo.index.indexer` — incremental update and atomic rebuild, under
  :mod:`~memrepo.index.lock`; outcomes of hook runs in :mod:`~memrepo.index.log`
- :mod:`~memrepo.index.embedders` / :mod:`~memrepo.index.vectors` — optional vectors
- :mod:`~memrepo.index.query` (FTS5 terms), :mod:`~memrepo.index.dates` (date filters),
  :mod:`~memrepo.index.ranking` (fusion, boosts, ``Filters``, ``Hit``),
  :mod:`~memrepo.index.snippets` — the parts of a search
- :mod:`~memrepo.index.search` — ``Search``: the index, or the file scan of
  :mod:`~memrepo.index.fallback` when there is none or it fails mid-query
- :mod:`~memrepo.index.cjk` — unsegmented scripts (Chinese, Japanese…) as bigrams;
  :mod:`~memrepo.index.expand` — query expansion from a static word-neighbour table
- :mod:`~memrepo.index.links` — ``[[wikilinks]]``, markdown links, co-recall
- :mod:`~memrepo.index.signals` — reinforce / demote / hit events from ``raw/signals/``;
  :mod:`~memrepo.index.anchors` — where a signalled entry is now (edits, ``git mv``)
- :mod:`~memrepo.index.remote` — the client of ``memory serve`` (:mod:`memrepo.resident`):
  where a clone's server listens, one request to it, the embedders a search asks through
  it; :mod:`~memrepo.index.catchup` (vectors a commit left, embedded in the background)
- :mod:`~memrepo.index.refs` — a REF (``path:line``, ``path#chunk``) checked, its signal recorded
- :mod:`~memrepo.index.health` — what ``memory doctor`` says about the index
- :mod:`~memrepo.hooks.post_commit` — what the post-* git hooks call; never raises

Nothing here imports numpy at module level: the hook path must stay light.
"""

from __future__ import annotations

from memrepo.layout import DB_NAME

__all__ = ["DB_NAME"]
