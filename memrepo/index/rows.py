"""The SQL every chunk query of a search shares: the documents' filters (``--category``,
``--path``, ``--since``…) and the columns a row starts with, and the :class:`ChunkHit`
such a row becomes."""

from __future__ import annotations

from typing import Any

from memrepo.index.ranking import ChunkHit, FileInfo, Filters


def doc_filter_sql(f: Filters) -> tuple[str, list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if not f.include_archive:
        where.append("d.status != 'archived'")
    if f.category:
        where.append(f"d.category IN ({marks(len(f.category))})")
        args += f.category
    if f.path_glob:
        where.append("d.path GLOB ?")
        args.append(f.path_glob)
    if f.since:
        where.append("d.modified >= ?")
        args.append(f.since[:10])
    if f.until:
        where.append("d.modified <= ?")
        args.append(f.until[:10])
    return (" AND " + " AND ".join(where)) if where else "", args


def marks(n: int) -> str:
    return ",".join("?" * n)


#: What every chunk query selects: the chunk's place, then its file's facts. Ranking needs
#: both, and the join that names the file gives the facts for free (a second query for
#: them would cost a search one more read per candidate file).
CHUNK_COLS = (
    "c.id, d.path, c.ord, c.start_line, c.end_line, c.stale, "
    "d.category, d.modified, d.status, d.blob, c.hash, c.reply_hash"
)
#: where a row's own columns start after :data:`CHUNK_COLS`
AFTER = 12


def chunk_hit(row: tuple[Any, ...], files: dict[str, FileInfo], **scores: float) -> ChunkHit:
    """The :class:`ChunkHit` of a row that starts with :data:`CHUNK_COLS`; its file's
    facts noted in ``files`` on first sight."""
    cid, path, o, a, b, st, cat, modified, status, blob, key, reply = row[:AFTER]
    if path not in files:
        files[path] = FileInfo(path, cat, modified, status, blob)
    keys = (key,) if reply is None else (key, reply)
    return ChunkHit(cid, path, o, a, b, stale=st, keys=keys, **scores)
