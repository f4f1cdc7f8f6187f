"""A rebuild's bulk insert: every file of HEAD read, chunked and (when asked) embedded in
slices, in a worker process once the tree is large, so Python work and SQLite's inserts
run on two cores."""

from __future__ import annotations

import collections
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

from memrepo import compression
from memrepo.index import db as dbmod
from memrepo.index import gitsource
from memrepo.index.embedders import Embedder, get_embedder
from memrepo.index.writer import Parsed, Progress, Writer, parse

#: files inserted per transaction
BATCH_FILES = 2000
#: rebuilds of at least this many files prepare their slices in a worker process
PARALLEL_MIN_FILES = 2000
PART_FILES = 256
_WORKER_EMBEDDERS: dict[str, Embedder | None] = {}


def _prepare_part(
    root: str, part: list[tuple[str, str]], embedder_name: str | None,
    gz_limit: int = compression.DEFAULT_LIMIT, replies: bool = True,
) -> tuple[list[tuple[str, str, Parsed | None]], dict[int, bytes] | None]:
    """Read, chunk and (when asked) embed a slice of files: runs in a worker process."""
    blobs = dict(gitsource.stream_blobs(Path(root), dict.fromkeys(sha for _, sha in part)))
    parsed = [
        (path, sha, parse(path, blobs[sha], gz_limit) if blobs.get(sha) is not None else None)
        for path, sha in part
    ]
    vecs: dict[int, bytes] | None = None
    if embedder_name:
        if embedder_name not in _WORKER_EMBEDDERS:  # keep its caches across slices
            _WORKER_EMBEDDERS[embedder_name] = get_embedder(embedder_name)
        emb = _WORKER_EMBEDDERS[embedder_name]
        if emb is not None:
            texts = {h: t for _, _, p in parsed if p for c in p.chunks
                     for h, t in c.vector_texts(replies).items()}
            vecs = dict(zip(texts, emb.embed(list(texts.values())), strict=True))
    return parsed, vecs


def _prepared_parts(
    root: Path, files: list[tuple[str, str]], embedder_name: str | None,
    gz_limit: int = compression.DEFAULT_LIMIT, replies: bool = True,
) -> Iterable[tuple[list[tuple[str, str, Parsed | None]], dict[int, bytes] | None]]:
    parts = [files[i : i + PART_FILES] for i in range(0, len(files), PART_FILES)]
    if len(files) >= PARALLEL_MIN_FILES and (os.cpu_count() or 1) > 1:
        import multiprocessing

        try:
            pool = multiprocessing.get_context().Pool(max(1, min(2, (os.cpu_count() or 2) - 1)))
        except (OSError, ValueError):
            pool = None
        if pool is not None:
            with pool:  # a few slices in flight: the worker never runs far ahead (RSS)
                todo = iter(parts)
                window = collections.deque(
                    pool.apply_async(_prepare_part,
                                     (str(root), part, embedder_name, gz_limit, replies))
                    for part in itertools.islice(todo, 3)
                )
                while window:
                    result = window.popleft().get()
                    nxt = next(todo, None)
                    if nxt is not None:
                        window.append(
                            pool.apply_async(_prepare_part,
                                             (str(root), nxt, embedder_name, gz_limit, replies))
                        )
                    yield result
            return
    for part in parts:
        yield _prepare_part(str(root), part, embedder_name, gz_limit, replies)


def bulk_add(
    root: Path,
    con: dbmod.Connection,
    writer: Writer,
    files: list[tuple[str, str]],
    progress: Progress | None,
) -> None:
    """Insert every file, merging FTS segments once at the end rather than on the way."""
    embedder_name = writer.embedder.id if writer.embedder is not None and writer.embed_now else None
    con.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 0)")
    done = 0
    con.execute("BEGIN")
    for parsed, vecs in _prepared_parts(root, files, embedder_name, writer.gz_limit,
                                        writer.replies):
        for path, sha, p in parsed:
            if p is not None:
                writer.add(path, sha, b"", p, vecs)
            done += 1
            if done % BATCH_FILES == 0:
                con.execute("COMMIT")
                con.execute("BEGIN")
        if progress:
            progress(done, len(files))
    con.execute("COMMIT")
    con.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 4)")
