"""Markers written inside knowledge lines: source references and superseded entries.

One definition for the writer (extraction, flush) and the readers (the indexer, search,
compile). Standard library only: the indexer imports it on the commit path.

    - 2026-03-05: Use PostgreSQL for the ledger database [src: 2026/03/05/1615-ses_w1d]
    - ~~2026-03-02: Use MySQL for the ledger~~ [src: …] (superseded 2026-03-05 by: …)
"""

from __future__ import annotations

import re

#: ``[src: A; B]``: the transcripts an entry came from.
SRC = re.compile(r"\s*\[src: (?P<src>[^\]]+)\]")
#: A superseded entry: kept, struck through, with what replaced it and when.
SUPERSEDED_LINE = re.compile(
    r"^\s*[-*] ~~(?P<old>.+?)~~(?P<src>\s*\[src: [^\]]+\])?"
    r" \(superseded (?P<date>\d{4}-\d{2}-\d{2}) by: (?P<new>.+)\)\s*$"
)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def superseded_share(lines: list[str]) -> float:
    """The share of the bullet lines in ``lines`` that are superseded entries (0 if none)."""
    bullets = superseded = 0
    for line in lines:
        if _BULLET.match(line):
            bullets += 1
            superseded += bool(SUPERSEDED_LINE.match(line))
    return superseded / bullets if bullets else 0.0
