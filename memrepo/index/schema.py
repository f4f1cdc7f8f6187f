"""Tables of ``memory.db`` and its meta row.

The FTS5 table is contentless (``content=''``): much smaller than a contentful one at
the same query speed (``bench/perf/bench_index.py``). A delete then needs the old text,
which the indexer recovers from the old blob (``documents.blob``) through ``git cat-file``;
the chunker is deterministic, so the same blob always gives the same chunks. Snippets are
read from the file at search time, by line span.

Vectors are keyed by the content hash of their chunk, so an unchanged chunk (same text,
in any file) is never embedded twice, and are plain float32 BLOBs so every vector mode
(sqlite-vec or numpy) reads the same table.

``chunks_cjk`` (schema 5) holds only the text of scripts written without spaces (Chinese,
Japanese, Korean, Thai, ...), as character bigrams (:mod:`~memrepo.index.cjk`), under the
same rowids as ``chunks_fts``: it is empty in a repo without such text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memrepo.index.db import Connection

#: Bump when the tables or the chunker change: an index of another version is rebuilt.
SCHEMA_VERSION = 9

DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    category TEXT,
    type TEXT,
    blob TEXT NOT NULL,          -- git blob sha of the indexed content
    modified TEXT,               -- ISO date from frontmatter or path, NULL if unknown
    tokens INTEGER NOT NULL,     -- rough token count (chars / 4)
    lines INTEGER NOT NULL,
    tags TEXT NOT NULL,          -- JSON array
    status TEXT NOT NULL,        -- '' | 'superseded' | 'archived'
    stem TEXT NOT NULL           -- the name a [[wikilink]] gives it (links.stem; schema 7)
);
CREATE INDEX documents_stem ON documents(stem);
CREATE INDEX documents_category ON documents(category);
CREATE INDEX documents_modified ON documents(modified);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,      -- = rowid of chunks_fts
    doc_id INTEGER NOT NULL,
    ord INTEGER NOT NULL,        -- 0-based position in the file (the #N anchor)
    start_line INTEGER NOT NULL, -- 1-based, inclusive
    end_line INTEGER NOT NULL,
    hash INTEGER NOT NULL,       -- 64-bit content hash of the indexed text
    stale REAL NOT NULL DEFAULT 0, -- share of its bullets that are superseded entries
    reply_hash INTEGER           -- a transcript turn's second vector (Chunk.reply_hash; 9)
);
CREATE INDEX chunks_doc ON chunks(doc_id);
CREATE INDEX chunks_hash ON chunks(hash);
CREATE INDEX chunks_reply ON chunks(reply_hash) WHERE reply_hash IS NOT NULL;
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='', tokenize='porter unicode61');
-- bigrams of unsegmented scripts (index/cjk.py); 'ascii' never splits a non-ASCII bigram
CREATE VIRTUAL TABLE chunks_cjk USING fts5(text, content='', tokenize='ascii');
-- rowid order = insertion order, so BLOBs append; the hash lookup is a small index
CREATE TABLE vectors (id INTEGER PRIMARY KEY, hash INTEGER NOT NULL UNIQUE, vec BLOB NOT NULL);
-- [[wikilinks]] and relative markdown links written in each file (schema 6; links.py)
CREATE TABLE links (
    src TEXT NOT NULL,           -- the file the link is written in
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,          -- 'wiki' (target: the name as written) | 'md' (a repo path)
    target TEXT NOT NULL,
    key TEXT NOT NULL            -- what resolves it: the md path, or the wiki name's key
);
CREATE INDEX links_src ON links(src);
CREATE INDEX links_key ON links(key);
-- words of the people each file names (docmeta.names, names.py; schema 8), lowercased:
-- masked out of the text a query vector is made from
CREATE TABLE names (doc_id INTEGER NOT NULL, word TEXT NOT NULL);
CREATE INDEX names_doc ON names(doc_id);
CREATE INDEX names_word ON names(word);
CREATE TABLE signals (
    path TEXT NOT NULL,
    line INTEGER NOT NULL,       -- 0 = the whole file
    score REAL NOT NULL,         -- +3 per reinforce, -1 per demote (seed 001)
    reinforced TEXT,             -- ISO date of the last reinforce (resets recency)
    hits INTEGER NOT NULL,
    last_hit TEXT,
    reinforces INTEGER NOT NULL DEFAULT 0, -- counts: search weighs them (search.*_weight)
    demotes INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (path, line)
);
"""


def create(con: Connection) -> None:
    con.executescript(DDL)


#: meta key: every chunk whose id is at most this had all its vectors when last checked
#: (absent: nothing checked yet). A writer that leaves a chunk's vectors to the catch-up
#: lowers it below that chunk (:func:`lower_vectors_through`), so the catch-up after a
#: commit reads the chunks past it, not all of them: the full queries below scan every
#: chunk, in the resident server after every commit (``bench/perf/bench_resident.py``).
VECTORS_THROUGH = "vectors_through"

#: Every key a vector is kept under: each chunk's hash and each turn's reply_hash, of the
#: chunks past ``:after``.
_VECTOR_KEYS = (
    "SELECT hash AS k, doc_id, id FROM chunks WHERE id > :after "
    "UNION ALL SELECT reply_hash, doc_id, id FROM chunks "
    "WHERE id > :after AND reply_hash IS NOT NULL"
)
_MISSING = "WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = c.k)"
#: Files with a chunk still waiting for a vector (the embedder was too heavy for a hook).
MISSING_VECTOR_DOCS = (
    f"SELECT DISTINCT d.path, d.blob FROM ({_VECTOR_KEYS}) c "
    f"JOIN documents d ON d.id = c.doc_id {_MISSING}"
)
#: How many vectors are still to be made.
MISSING_VECTORS = f"SELECT count(DISTINCT c.k) FROM ({_VECTOR_KEYS}) c {_MISSING}"
#: The first chunk still waiting for a vector (NULL: none).
FIRST_MISSING = f"SELECT min(c.id) FROM ({_VECTOR_KEYS}) c {_MISSING}"


def vectors_through(meta: dict[str, str]) -> int:
    """:data:`VECTORS_THROUGH` of the index (0: check every chunk)."""
    try:
        return max(int(meta.get(VECTORS_THROUGH) or 0), 0)
    except ValueError:
        return 0


def lower_vectors_through(con: Connection, chunk_id: int) -> None:
    """Chunk ``chunk_id`` waits for a vector: the mark goes below it (in the caller's
    transaction). An id is reused once the largest is deleted, so a new chunk may land
    under the mark."""
    con.execute(
        "UPDATE meta SET value = ? WHERE key = ? AND CAST(value AS INTEGER) >= ?",
        (str(chunk_id - 1), VECTORS_THROUGH, chunk_id),
    )


#: Keep a vector only while some chunk still has its key; takes the key twice.
VECTOR_IN_USE = (
    "(EXISTS (SELECT 1 FROM chunks WHERE hash = ?) "
    "OR EXISTS (SELECT 1 FROM chunks WHERE reply_hash = ?))"
)


def get_meta(con: Connection) -> dict[str, str]:
    return dict(con.execute("SELECT key, value FROM meta").fetchall())


def replies_recorded(meta: dict[str, str]) -> bool:
    """Whether the index keeps reply vectors (``search.reply_vectors`` at its rebuild)."""
    return meta.get("reply_vectors", "1") == "1"


def set_meta(con: Connection, **values: str | int) -> None:
    con.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(k, str(v)) for k, v in values.items()],
    )
