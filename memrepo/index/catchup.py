"""Vectors the index left without them: embedded after a commit, never in the hook.

The post-commit hook calls :func:`after_commit`, which asks a running server to catch up
or starts one detached, low-priority worker (``python -m memrepo.resident.serve catch-up
ROOT``), at most one at a time (``catchup.lock``). :func:`catch_up`, run by the server's
catch-up thread or by that worker, embeds outside the index lock and writes each batch in
one short transaction under it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memrepo.index import db as dbmod
from memrepo.index import gitsource, schema
from memrepo.index.indexer import advance_vectors_through, short_write
from memrepo.index.lock import Busy
from memrepo.index.paths import db_path, state_dir
from memrepo.index.remote import (
    SERVE_DIR,
    Unavailable,
    git_dir,
    private_dir,
    request,
    serve_dir,
    socket_path,
)
from memrepo.index.writer import parse
from memrepo.locks import LockBusy, file_lock, try_lock
from memrepo.spawn import detached, module_argv

CATCHUP_LOCK = "catchup.lock"
CATCHUP_PENDING = "catchup.pending"
CATCHUP_ERR = "catchup.err"

#: chunks embedded per write under the index lock (the lock is held for the write only)
CATCHUP_BATCH = 32
CATCHUP_DOCS = 200


# ---------------------------------------------------------------------------
# After a commit: catch up in the background, never in the hook
# ---------------------------------------------------------------------------


def after_commit(root: Path, state: Path | None = None) -> str:
    """Get the chunks a commit left without vectors embedded, without waiting for it.

    A running server is asked to catch up (one local round trip). With none, a detached,
    low-priority catch-up worker is started unless one already runs (its lock) — it sees
    the pending mark left here and takes one more round. Returns what it did:
    ``server``, ``running``, ``spawned`` or ``failed: …``; never raises.
    """
    try:
        sdir = (Path(state) / SERVE_DIR) if state is not None else serve_dir(root)
        try:
            request(socket_path(sdir), {"op": "catch-up"}, budget=0.2)
            return "server"
        except Unavailable:
            pass
        private_dir(sdir)
        (sdir / CATCHUP_PENDING).touch()
        fd = try_lock(sdir / CATCHUP_LOCK, 0o600)
        if fd is None:
            return "running"  # it sees the pending mark and takes one more round
        try:
            spawn_worker(Path(root), sdir, fd)
        finally:
            os.close(fd)  # the worker holds the lock now (the same open file)
        return "spawned"
    except Exception as exc:  # never fail a commit
        return f"failed: {type(exc).__name__}: {exc}"


def spawn_worker(root: Path, sdir: Path, lock_fd: int) -> None:
    """``python -m memrepo.resident.serve catch-up ROOT --lock-fd 3`` in a session of its
    own (niced there), holding the catch-up lock it inherits as fd 3 (so no second worker
    starts while this one boots); stdout to /dev/null, stderr appended to ``catchup.err``."""
    argv = module_argv("memrepo.resident.serve", "catch-up", str(root), "--lock-fd", "3")
    detached(argv, sdir / CATCHUP_ERR, fd3=lock_fd)


# ---------------------------------------------------------------------------
# Catch-up: embed what the index left without vectors, in short locked writes
# ---------------------------------------------------------------------------


def catch_up(
    root: Path,
    embedder: Any,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] | None = None,
    lock_fd: int | None = None,
) -> int:
    """Embed every chunk of the index that has no vector yet; the number embedded.

    Runs alone (``catchup.lock``; a second caller returns 0 at once; ``lock_fd``: an fd
    that holds it already, closed here when done, as the worker :func:`after_commit`
    spawns has). The model runs outside the index lock; each batch is written in one short
    transaction under it, so a post-commit hook is never held up for long, and a hook that
    found the lock taken (its pending mark) gets its pass run here right after. Stops when
    the index records another embedder, when ``should_stop()``, or when nothing is left —
    after one more round when :func:`after_commit` marked new work meanwhile, also once
    the lock is released (its mark may land just before).
    """
    root = Path(root)
    gd = git_dir(root)
    sdir = state_dir(gd) / SERVE_DIR
    private_dir(sdir)
    pending = sdir / CATCHUP_PENDING
    done = 0
    while True:
        held = _fd_held(lock_fd) if lock_fd is not None else file_lock(sdir / CATCHUP_LOCK, 0.0)
        lock_fd = None
        try:
            with held:
                while True:
                    with contextlib.suppress(FileNotFoundError):
                        pending.unlink()
                    done += _catch_up_rounds(root, gd, embedder, should_stop, progress, log,
                                             done)
                    if should_stop() or not pending.exists():
                        break
        except LockBusy:  # another one runs: it sees the pending mark
            return done
        if should_stop() or not pending.exists():
            return done


@contextlib.contextmanager
def _fd_held(fd: int) -> Iterator[None]:
    """A lock held through an inherited fd: released when the block ends."""
    try:
        yield
    finally:
        os.close(fd)


def _catch_up_rounds(root: Path, gd: Path, embedder: Any, should_stop: Callable[[], bool],
                     progress: Callable[[int, int], None] | None,
                     log: Callable[[str], None] | None, before: int) -> int:
    path = db_path(root)
    tried: set[str] = set()  # blobs read once: one that cannot give its chunks is not retried
    done = 0
    while not should_stop():
        if not path.exists():
            return done
        con = dbmod.connect(path, readonly=True)
        try:
            meta = schema.get_meta(con)
            replies = schema.replies_recorded(meta)
            if meta.get("embedder") != embedder.id:
                if log:
                    log(f"catch-up: the index is not built with {embedder.id}; nothing to do")
                return done
            after = {"after": schema.vectors_through(meta)}
            missing = con.execute(schema.MISSING_VECTORS, after).fetchone()[0]
            rows = con.execute(schema.MISSING_VECTOR_DOCS, after).fetchall()
        finally:
            con.close()
        rows = [(p, b) for p, b in rows if b not in tried][:CATCHUP_DOCS]
        if not rows or not missing:
            _advance(root, gd)
            return done
        if progress:
            progress(before + done, before + done + missing)
        by_sha = {sha: p for p, sha in rows}
        tried.update(by_sha)
        texts: dict[int, str] = {}
        for sha, data in gitsource.stream_blobs(root, by_sha):
            if data is not None:
                for c in parse(by_sha[sha], data).chunks:
                    for h, text in c.vector_texts(replies).items():
                        texts.setdefault(h, text)
        items = list(texts.items())
        for i in range(0, len(items), CATCHUP_BATCH):
            if should_stop():
                return done
            part = items[i : i + CATCHUP_BATCH]
            vecs = embedder.embed([t for _, t in part])
            if not _write_vectors(root, gd, embedder.id, [(h, v) for (h, _), v in
                                                         zip(part, vecs, strict=True)]):
                return done
            done += len(part)
            if progress:
                progress(before + done, before + done + max(0, missing - done))
    return done


def _advance(root: Path, gd: Path) -> None:
    """Record how far every chunk has its vectors, so the next catch-up reads only the
    chunks past that (:func:`~memrepo.index.indexer.advance_vectors_through`); skipped
    while a long ``memory index`` holds the index."""
    with contextlib.suppress(Busy), short_write(root, gd, wait=5.0) as con:
        if con is not None:
            with dbmod.write(con):
                advance_vectors_through(con)


def _write_vectors(root: Path, gd: Path, embedder_id: str, pairs: list[tuple[int, bytes]]
                   ) -> bool:
    """Insert vectors of chunks still in the index, under the index lock (one short
    transaction; :func:`~memrepo.index.indexer.short_write`). False when the index no
    longer takes them (another embedder, or gone)."""
    try:
        with short_write(root, gd, wait=30.0) as con:
            if con is None or schema.get_meta(con).get("embedder") != embedder_id:
                return False
            with dbmod.write(con):
                con.executemany(
                    "INSERT OR IGNORE INTO vectors(hash, vec) SELECT ?, ? "
                    f"WHERE {schema.VECTOR_IN_USE}",
                    [(h, v, h, h) for h, v in pairs],
                )
    except Busy:  # a long `memory index` holds it: it embeds these chunks itself
        return False
    return True
