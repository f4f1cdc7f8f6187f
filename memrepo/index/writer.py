"""What a blob becomes in the index (:func:`parse`), and the :class:`Writer` that adds and
removes documents inside the caller's transaction (their chunks, FTS rows, links, names,
vectors)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import compression, gitcrypt
from memrepo.errors import FormatError
from memrepo.index import cjk, links, names, schema
from memrepo.index import db as dbmod
from memrepo.index.chunking import Chunk, chunk_lines
from memrepo.index.docmeta import DocMeta, read_meta
from memrepo.index.embedders import Embedder

#: (done, total): a long job's progress, for the CLI's bar
Progress = Callable[[int, int], None]
#: chunks embedded at a time
EMBED_BATCH = 512


class NeedsRebuild(Exception):
    """The index cannot be updated in place (schema, embedder, or lost history)."""


def gz_limit(root: Path, paths: Iterable[str]) -> int:
    """How far a compressed archive is inflated: ``validation.max_file_kb`` (what a commit
    may hold). The config is read only when ``paths`` holds a ``.gz`` (an ordinary
    commit's hook never pays for it)."""
    if not any(compression.is_gzip_name(p) for p in paths):
        return compression.DEFAULT_LIMIT
    return compression.limit_for(root)


@dataclass
class Parsed:
    meta: DocMeta
    chunks: list[Chunk]
    lines: int
    tokens: int
    links: list[links.Link] = field(default_factory=list)
    #: why a compressed archive could not be read (it is indexed without its text)
    error: str | None = None


def parse(path: str, data: bytes, gz_limit: int = compression.DEFAULT_LIMIT) -> Parsed:
    """A blob as the index sees it. Never raises on odd content (validators do that): a
    compressed archive (``archive/**.md.gz``) is read inflated, up to ``gz_limit`` bytes;
    one that is corrupt or bigger is a document without chunks and an ``error``, as is a
    git-crypt file this clone has no key for (gitsource reveals the others)."""
    if gitcrypt.is_ciphertext(data):
        return Parsed(read_meta("", [], path), [], 0, 0, error=gitcrypt.LOCKED)
    if compression.is_gzip_name(path):
        try:
            data = compression.decompress(data, path, gz_limit)
        except FormatError as exc:
            return Parsed(read_meta("", [], path), [], 0, 0, error=exc.message)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    meta = read_meta(text, lines, path)
    transcript = meta.category == "conversation"
    chunks = chunk_lines(lines, meta.body_line, transcript=transcript)
    # links are written between knowledge and topic files; a transcript's are quotes
    found = [] if transcript else links.extract(path, text)
    return Parsed(meta, chunks, len(lines), len(text) // 4, found)


class Writer:
    """Adds and removes documents inside the caller's transaction."""

    def __init__(self, con: dbmod.Connection, embedder: Embedder | None, embed_now: bool,
                 gz_limit: int = compression.DEFAULT_LIMIT):
        self.con = con
        #: whether transcript turns get their reply vector (recorded by the rebuild)
        self.replies = schema.replies_recorded(schema.get_meta(con))
        self.gz_limit = gz_limit
        #: ``path: why`` of compressed archives that could not be read (indexed textless)
        self.problems: list[str] = []
        self.embedder = embedder
        self.embed_now = embed_now and embedder is not None
        self.to_embed: dict[int, str] = {}
        #: keys of vectors left to the catch-up (a heavy embedder in a hook): what this
        #: commit adds to the wait, counted without scanning every chunk (:meth:`waiting`)
        self.left: set[int] = set()
        self.dropped_hashes: set[int] = set()
        self.chunks = 0
        self.removed_chunks = 0
        self.embedded = 0

    def add(
        self,
        path: str,
        sha: str,
        data: bytes,
        parsed: Parsed | None = None,
        vectors: dict[int, bytes] | None = None,
    ) -> None:
        """Insert a file; ``vectors`` (chunk hash -> vector) when they were computed ahead."""
        p = parsed or parse(path, data, self.gz_limit)
        if p.error is not None:
            self.problems.append(f"{path}: {p.error}; indexed without its text")
        m = p.meta
        cur = self.con.execute(
            "INSERT INTO documents"
            "(path, category, type, blob, modified, tokens, lines, tags, status, stem)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                path,
                m.category,
                m.type,
                sha,
                m.modified,
                p.tokens,
                p.lines,
                json.dumps(m.tags),
                m.status,
                links.stem(path),
            ),
        )
        doc_id = cur.lastrowid
        if m.names:
            self.con.executemany(
                "INSERT INTO names(doc_id, word) VALUES (?, ?)",
                [(doc_id, w) for w in names.words(m.names)],
            )
        first_left: int | None = None  # this file's first chunk left to the catch-up
        for c in p.chunks:
            h = c.hash
            cid = self.con.execute(
                "INSERT INTO chunks(doc_id, ord, start_line, end_line, hash, stale, reply_hash)"
                " VALUES (?,?,?,?,?,?,?)",
                (doc_id, c.ord, c.start_line, c.end_line, h, c.stale,
                 c.reply_hash if self.replies else None),
            ).lastrowid
            self.con.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (cid, c.text))
            cjk.add(self.con, cid, c.text)
            if vectors is not None:
                self.embedded += self.con.executemany(
                    "INSERT OR IGNORE INTO vectors(hash, vec) VALUES (?, ?)",
                    [(k, vectors[k]) for k in c.vector_texts(self.replies)],
                ).rowcount
            elif self.embed_now:
                for k, text in c.vector_texts(self.replies).items():
                    self.to_embed.setdefault(k, text)
            elif self.embedder is not None:
                self.left.update(c.vector_texts(self.replies))
                first_left = cid if first_left is None else first_left
        if first_left is not None:
            schema.lower_vectors_through(self.con, first_left)
        links.store(self.con, p.links)
        self.chunks += len(p.chunks)
        if len(self.to_embed) >= EMBED_BATCH:
            self.embedded += self.flush_vectors()

    def remove(self, path: str, old: bytes | None) -> None:
        row = self.con.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
        if row is None:
            return
        doc_id = row[0]
        ids = self.con.execute(
            "SELECT id, hash FROM chunks WHERE doc_id = ? ORDER BY ord", (doc_id,)
        ).fetchall()
        self.dropped_hashes.update(h for (h,) in self.con.execute(
            "SELECT reply_hash FROM chunks WHERE doc_id = ? AND reply_hash IS NOT NULL",
            (doc_id,)))
        if ids:
            if old is None:
                raise NeedsRebuild(f"the indexed version of {path} is no longer in git")
            chunks = parse(path, old, self.gz_limit).chunks
            if [c.hash for c in chunks] != [h for _, h in ids]:
                raise NeedsRebuild(f"the indexed chunks of {path} do not match its old blob")
            self.con.executemany(
                "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)",
                [(cid, c.text) for (cid, _), c in zip(ids, chunks, strict=True)],
            )
            cjk.remove(self.con, [(cid, c.text) for (cid, _), c in zip(ids, chunks, strict=True)])
            self.dropped_hashes.update(h for _, h in ids)
            self.removed_chunks += len(ids)
        self.con.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
        self.con.execute("DELETE FROM names WHERE doc_id = ?", (doc_id,))
        links.drop(self.con, path)
        self.con.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def flush_vectors(self) -> int:
        if not self.to_embed or self.embedder is None:
            return 0
        known = set()
        hashes = list(self.to_embed)
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            q = f"SELECT hash FROM vectors WHERE hash IN ({','.join('?' * len(part))})"
            known.update(h for (h,) in self.con.execute(q, part))
        todo = [(h, t) for h, t in self.to_embed.items() if h not in known]
        self.to_embed.clear()
        if todo:
            vecs = self.embedder.embed([t for _, t in todo])
            self.con.executemany(
                "INSERT OR REPLACE INTO vectors(hash, vec) VALUES (?, ?)",
                [(h, v) for (h, _), v in zip(todo, vecs, strict=True)],
            )
        return len(todo)

    def waiting(self) -> int:
        """How many of the vectors this writer left to the catch-up are still missing."""
        keys = list(self.left)
        have = 0
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            q = f"SELECT count(*) FROM vectors WHERE hash IN ({','.join('?' * len(part))})"
            have += self.con.execute(q, part).fetchone()[0]
        return len(keys) - have

    def drop_orphan_vectors(self) -> None:
        for h in self.dropped_hashes:
            (used,) = self.con.execute(f"SELECT {schema.VECTOR_IN_USE}", (h, h)).fetchone()
            if not used:
                self.con.execute("DELETE FROM vectors WHERE hash = ?", (h,))
        self.dropped_hashes.clear()
