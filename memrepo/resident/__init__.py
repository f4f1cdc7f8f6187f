"""``memory serve``: one long-lived process per clone keeps the sentence model loaded and
the index's vectors in a nearest-neighbour index, and answers hooks and searches over a
private UNIX socket.

Everything here exists for the optional ``minilm`` embedder; without a server a search
runs on FTS5 alone (the client side, :mod:`memrepo.index.remote`, sits with the index).
Modules, one concept each:

- :mod:`~memrepo.resident.server` — the socket server: the ops, the query cache, the
  nearest index's keeper; :class:`~memrepo.resident.server.HostedEmbedder` for the
  process that hosts it (``memory mcp``)
- :mod:`~memrepo.resident.wire` — one request on a connection: the peer's uid, a bounded
  line, a reply, whether the asker still waits
- :mod:`~memrepo.resident.stats` — what each kind of request has cost (``--status``)
- :mod:`~memrepo.resident.nearest` — ``NearestIndex``: HNSW (usearch, int8) or exact numpy
- :mod:`~memrepo.resident.hugepages` — that index on 2 MB pages
- :mod:`~memrepo.resident.serve` — running one: foreground, detached, stop, status

The services a hook asks of it (``recall``) are handed in from a floor up
(:mod:`memrepo.agents.resident`).
"""
