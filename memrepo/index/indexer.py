"""Bringing ``memory.db`` to HEAD: incrementally from a tree diff, or rebuilt from scratch.

Incremental: ``git diff-tree <indexed commit> HEAD`` names the changed blobs; only those
(and the old blobs of changed files, whose text the contentless FTS delete needs) are
read, in one ``cat-file`` stream. Amends, rebases, merges and checkouts are all just
"another commit": the diff between two trees does not care how HEAD moved.

Rebuild: a fresh database in a temp file next to ``memory.db``, swapped in with
``os.replace`` when complete, so a reader sees the old index or the new one, never half.
An index of another schema version or embedder is rebuilt, never half-used.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memrepo import compression
from memrepo.index import db as dbmod
from memrepo.index import gitsource, schema, signals
from memrepo.index.bulk import bulk_add
from memrepo.index.embedders import Embedder, get_embedder
from memrepo.index.lock import Busy, IndexLock
from memrepo.index.paths import (
    db_path,
    is_indexed,
    is_markdown,
    is_utf8,
    printable,
    state_dir,
)
from memrepo.index.writer import EMBED_BATCH, NeedsRebuild, Progress, Writer, gz_limit, parse
from memrepo.layout import is_ranking_signal_file
from memrepo.sparse import View
from memrepo.sparse import view as sparse_view


class NoIndex(Exception):
    """There is no memory.db yet."""


@dataclass
class Result:
    mode: str  # "noop" | "incremental" | "rebuild"
    commit: str | None
    added: int = 0
    updated: int = 0
    removed: int = 0
    files: int = 0
    chunks: int = 0
    embedded: int = 0
    pending_vectors: int = 0  # vectors still to make (a hook: those its commit left)
    skipped: int = 0  # files left out because their name is not valid UTF-8
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def skip(self, paths: list[str]) -> None:
        """Count (and name a few of) the files whose name SQLite cannot store."""
        if not paths:
            return
        self.skipped += len(paths)
        shown = ", ".join(printable(p) for p in paths[:3])
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        self.notes.append(
            f"skipped {len(paths)} file(s) whose name is not valid UTF-8: {shown}{more} "
            "(rename them to index them)"
        )


    def skip_irregular(self, paths: list[str]) -> None:
        """Name the symlinks and submodules the commit holds: never read (a link may point
        outside the repo), never indexed; a memory repo holds regular files only."""
        if not paths:
            return
        shown = ", ".join(printable(p) for p in paths[:3])
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        self.notes.append(
            f"skipped {len(paths)} symlink(s) or submodule(s), never read through: {shown}"
            f"{more} (a memory repo holds regular files only)"
        )


#: How much a pass did, to report the most significant of several.
_RANK = {"noop": 0, "incremental": 1, "rebuild": 2}


def _bad_names(paths: Iterable[str]) -> list[str]:
    """Paths the index would hold but for a name that is not valid UTF-8."""
    return [p for p in paths if (is_markdown(p) or compression.allowed(p)) and not is_utf8(p)]


def _check_meta(meta: dict[str, str], embedder_id: str | None,
                replies: bool | None = None) -> None:
    if meta.get("schema_version") != str(schema.SCHEMA_VERSION):
        raise NeedsRebuild(
            f"index schema {meta.get('schema_version')} is not {schema.SCHEMA_VERSION}"
        )
    if embedder_id is not None and meta.get("embedder") != embedder_id:
        raise NeedsRebuild(f"index embedder {meta.get('embedder')} is not {embedder_id}")
    if (replies is not None and meta.get("embedder", "none") != "none"
            and schema.replies_recorded(meta) != replies):
        raise NeedsRebuild(f"search.reply_vectors is now {str(replies).lower()}")


def open_index(root: Path) -> dbmod.Connection:
    path = db_path(root)
    if not path.exists():
        raise NoIndex(f"no index at {path}")
    try:
        con = dbmod.connect(path)
        schema.get_meta(con)
    except dbmod.DatabaseError as exc:
        raise NeedsRebuild(f"cannot read {path.name}: {exc}") from None
    return con


def pending_vectors(con: dbmod.Connection, *, every_chunk: bool = False) -> int:
    """Vectors chunks still wait for (the embedder is too heavy for the hook): of the
    chunks past :data:`~memrepo.index.schema.VECTORS_THROUGH`, or of ``every_chunk``
    (``memory doctor``, which checks that mark too: a scan of every chunk)."""
    meta = schema.get_meta(con)
    if meta.get("embedder", "none") == "none":
        return 0
    after = 0 if every_chunk else schema.vectors_through(meta)
    return int(con.execute(schema.MISSING_VECTORS, {"after": after}).fetchone()[0])


def advance_vectors_through(con: dbmod.Connection) -> int:
    """Move :data:`~memrepo.index.schema.VECTORS_THROUGH` up to the chunk before the
    first one still waiting for a vector (or the last chunk), reading only the chunks
    past it; in the caller's write transaction, so no writer adds a chunk meanwhile.
    Returns the mark."""
    after = schema.vectors_through(schema.get_meta(con))
    (first,) = con.execute(schema.FIRST_MISSING, {"after": after}).fetchone()
    if first is None:
        (first,) = con.execute("SELECT max(id) + 1 FROM chunks").fetchone()
    mark = (first or 1) - 1
    if mark > after:
        schema.set_meta(con, **{schema.VECTORS_THROUGH: mark})
        return mark
    return after


def update(
    root: Path, *, embedder_id: str | None = None, hook: bool = False, head: str | None = None,
    progress: Progress | None = None, replies: bool | None = None,
) -> Result:
    """Bring an existing index to HEAD from the diff (the caller holds the lock);
    ``progress(done, total)`` follows the embedding of chunks left without vectors."""
    t0 = time.perf_counter()
    root = Path(root)
    if head is None:
        _git_dir, head = gitsource.locate(root)
    con = open_index(root)
    try:
        meta = schema.get_meta(con)
        _check_meta(meta, embedder_id, replies)
        indexed = meta.get("commit") or None
        embedder = get_embedder(meta.get("embedder", "none"))
        embed_now = embedder is not None and (embedder.light or not hook)
        res = Result("noop", head)
        view = sparse_view(root)  # a sparse checkout: what is checked out, and only that
        resync = meta.get("sparse", "") != (view.stamp if view else "")
        if (indexed != head or resync) and head is not None:
            res.mode = "incremental"
            _apply_diff(root, con, indexed, head, embedder, embed_now, res, view, resync)
        elif signals.stamp(root) != meta.get("signals"):
            with dbmod.write(con):
                _refold_signals(root, con, force=True)
        if view is not None:
            res.notes.append(view.note)
        if embedder is not None and embed_now and not hook:
            res.embedded += _catch_up_vectors(root, con, embedder, progress)
        if embedder is not None and not hook:  # a hook counts only what its commit left
            res.pending_vectors = pending_vectors(con)
        res.seconds = time.perf_counter() - t0
        return res
    finally:
        con.close()


def _apply_diff(
    root: Path,
    con: dbmod.Connection,
    indexed: str | None,
    head: str,
    embedder: Embedder | None,
    embed_now: bool,
    res: Result,
    view: View | None = None,
    resync: bool = False,
) -> None:
    irregular: list[str] = []
    if resync:  # the cone changed (or the checkout became sparse): compare with the tree
        changes = _resync(root, con, head, view, irregular)
    elif indexed is None:
        changes = [gitsource.Change(p, None, s)
                   for p, s in gitsource.list_tree(root, head, irregular)]
    else:
        try:
            changes = gitsource.diff_trees(root, indexed, head, irregular)
        except Exception as exc:
            raise NeedsRebuild(
                f"cannot diff from the indexed commit {indexed[:12]}: {exc}"
            ) from None
    res.skip_irregular(irregular)
    docs = [c for c in changes if is_indexed(c.path)
            and (resync or view is None or view.shows(c.path))]
    res.skip(_bad_names(c.path for c in changes if c.new is not None))
    # a changed file that holds signals: its entries may have moved (anchors re-find them)
    signals_changed = any(is_ranking_signal_file(c.path) for c in changes) or _has_signals(
        con, [c.path for c in docs])
    indexed_blobs: dict[str, str] = {}
    if docs:
        paths = [c.path for c in docs if c.old is not None]
        for i in range(0, len(paths), 500):
            part = paths[i : i + 500]
            marks = ",".join("?" * len(part))
            q = f"SELECT path, blob FROM documents WHERE path IN ({marks})"
            indexed_blobs.update(con.execute(q, part).fetchall())
    wanted: list[str] = []
    for c in docs:
        if c.path in indexed_blobs:
            wanted.append(indexed_blobs[c.path])
        if c.new is not None:
            wanted.append(c.new)
    blobs = dict(gitsource.stream_blobs(root, dict.fromkeys(wanted)))
    writer = Writer(con, embedder, embed_now, gz_limit(root, (c.path for c in docs)))
    with dbmod.write(con):
        for c in docs:
            old_sha = indexed_blobs.get(c.path)
            if old_sha is not None:
                writer.remove(c.path, blobs.get(old_sha))
            if c.new is not None:
                data = blobs.get(c.new)
                if data is None:
                    raise NeedsRebuild(f"blob {c.new[:12]} of {c.path} is missing")
                writer.add(c.path, c.new, data)
                if old_sha is None:
                    res.added += 1
                else:
                    res.updated += 1
            elif old_sha is not None:
                res.removed += 1
        res.embedded += writer.embedded + writer.flush_vectors()
        res.pending_vectors = writer.waiting()
        res.notes += writer.problems
        writer.drop_orphan_vectors()
        _refold_signals(root, con, force=signals_changed)
        total = int(schema.get_meta(con).get("chunks", 0)) + writer.chunks - writer.removed_chunks
        schema.set_meta(con, commit=head, updated=int(time.time()), chunks=total,
                        sparse=view.stamp if view else "")
    res.chunks = writer.chunks


def _resync(root: Path, con: dbmod.Connection, head: str, view: View | None,
            irregular: list[str]) -> list[gitsource.Change]:
    """What brings an index built for another cone to ``head`` as ``view`` shows it: the
    files now shown that it lacks or holds in another version, and those it holds that
    are not shown any more (removed)."""
    indexed = dict(con.execute("SELECT path, blob FROM documents").fetchall())
    tree = {p: sha for p, sha in gitsource.list_tree(root, head, irregular)
            if view is None or view.shows(p)}
    out = [gitsource.Change(p, indexed.get(p), sha) for p, sha in tree.items()
           if indexed.get(p) != sha]
    return out + [gitsource.Change(p, old, None) for p, old in indexed.items() if p not in tree]


def _has_signals(con: dbmod.Connection, paths: list[str]) -> bool:
    """Whether any of ``paths`` has a reinforce or demote (a lookup per 500 changed files)."""
    for i in range(0, len(paths), 500):
        part = paths[i : i + 500]
        marks = ",".join("?" * len(part))
        if con.execute(f"SELECT 1 FROM signals WHERE path IN ({marks}) LIMIT 1", part).fetchone():
            return True
    return False


def _refold_signals(root: Path, con: dbmod.Connection, *, force: bool = False) -> bool:
    """Re-aggregate ``raw/signals`` when its files changed since the last fold (inside the
    caller's transaction). Events are appended to the working tree by search and
    reinforce without a commit, so the diff alone would miss them until a rebuild."""
    now = signals.stamp(root)  # before reading: an append after it re-folds next time
    if not force and schema.get_meta(con).get("signals") == now:
        return False
    signals.store(con, signals.aggregate(root, hits=False))
    schema.set_meta(con, signals=now)
    return True


def _catch_up_vectors(
    root: Path, con: dbmod.Connection, embedder: Embedder, progress: Progress | None = None
) -> int:
    """Embed chunks the hook left without a vector (re-chunking their blobs)."""
    total = pending_vectors(con) if progress else 0
    after = schema.vectors_through(schema.get_meta(con))
    rows = con.execute(schema.MISSING_VECTOR_DOCS, {"after": after}).fetchall()
    if not rows:
        with dbmod.write(con):
            advance_vectors_through(con)
        return 0
    by_sha = {sha: path for path, sha in rows}
    writer = Writer(con, embedder, True, gz_limit(root, by_sha.values()))
    n = 0
    with dbmod.write(con):
        for sha, data in gitsource.stream_blobs(root, by_sha):
            if data is not None:
                for c in parse(by_sha[sha], data, writer.gz_limit).chunks:
                    for h, text in c.vector_texts(writer.replies).items():
                        writer.to_embed.setdefault(h, text)
                if len(writer.to_embed) >= EMBED_BATCH:
                    n += writer.flush_vectors()
                    if progress:
                        progress(n, total)
        n += writer.flush_vectors()
        advance_vectors_through(con)
        if progress:
            progress(total, total)
    return n


def rebuild(root: Path, embedder_name: str, *, progress: Progress | None = None,
            replies: bool = True) -> Result:
    """A fresh index of HEAD in a temp file, swapped in atomically (the caller holds the lock)."""
    t0 = time.perf_counter()
    root = Path(root)
    _git_dir, head = gitsource.locate(root)
    embedder = get_embedder(embedder_name)
    target = db_path(root)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    res = Result("rebuild", head)
    view = sparse_view(root)
    try:
        con = dbmod.connect(tmp, fast_build=True)
        try:
            schema.create(con)
            schema.set_meta(
                con,
                schema_version=schema.SCHEMA_VERSION,
                embedder=embedder.id if embedder else "none",
                reply_vectors=int(replies),
                commit=head or "",
                updated=int(time.time()),
                sparse=view.stamp if view else "",
            )
            files = []
            if head is not None:
                irregular: list[str] = []
                tree = gitsource.list_tree(root, head, irregular)
                files = [(p, s) for p, s in tree
                         if is_indexed(p) and (view is None or view.shows(p))]
                res.skip(_bad_names(p for p, _ in tree))
                res.skip_irregular(irregular)
            writer = Writer(con, embedder, True, gz_limit(root, (p for p, _ in files)))
            bulk_add(root, con, writer, files, progress)
            res.notes += writer.problems
            con.execute("BEGIN")
            res.embedded = writer.embedded + writer.flush_vectors()
            if embedder is not None:  # every chunk embedded: a catch-up reads none of them
                advance_vectors_through(con)
            _refold_signals(root, con, force=True)
            con.execute("COMMIT")
            con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
            dbmod.finish_build(con)
            res.files, res.chunks = len(files), writer.chunks
            schema.set_meta(con, chunks=writer.chunks)
        finally:
            con.close()
        _swap(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    res.added = res.files
    res.notes += [view.note] if view is not None else []
    res.seconds = time.perf_counter() - t0
    return res


def _swap(tmp: Path, target: Path) -> None:
    """Replace memory.db by the new file; the old WAL is checkpointed away first."""
    if target.exists():
        with contextlib.suppress(dbmod.DatabaseError):
            old = dbmod.connect(target)
            try:
                old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                old.close()
    os.replace(tmp, target)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{target}{suffix}")


def sync(
    root: Path,
    *,
    embedder_name: str | None = None,
    force_rebuild: bool = False,
    hook: bool = False,
    progress: Progress | None = None,
    wait: float = 30.0,
    located: tuple[Path, str | None] | None = None,
    embed_progress: Progress | None = None,
    replies: bool | None = None,
) -> Result | None:
    """Update (or rebuild) under the lock, then loop while hooks marked work pending.

    Whoever holds the lock runs its own pass (its ``force_rebuild`` included: a pending
    mark cannot carry it, and another holder's pass is not the rebuild this caller asked
    for), then one more pass per pending mark, and returns the most significant result
    of the passes it ran. ``hook=True`` never waits for the lock and never rebuilds: it
    returns None when another indexer runs (that one sees the hook's pending mark and
    picks the change up) and raises NoIndex / NeedsRebuild for the caller to log. Any
    other caller waits up to ``wait`` seconds (Busy after that) and always gets a Result.
    """
    git_dir, head = located or gitsource.locate(Path(root))
    lock = IndexLock(state_dir(git_dir))
    if hook:
        lock.mark_pending()  # before trying: either we get the lock or the holder sees it
    try:
        lock.acquire(0.0 if hook else wait)
    except Busy:
        if hook:
            return None
        raise
    result: Result | None = None
    own_pass = True
    while True:
        try:
            while lock.take_pending() or own_pass:
                own_pass = False
                res = _one_pass(root, embedder_name, force_rebuild, hook, progress, head,
                                embed_progress, replies)
                result = res if result is None else _combine(result, res)
                force_rebuild, head = False, None  # later passes: HEAD may have moved
        finally:
            lock.release()
        if not lock.pending.exists():
            return result
        try:
            lock.acquire(0.0)
        except Busy:  # the new holder runs the pending pass
            return result


@contextlib.contextmanager
def short_write(root: Path, git_dir: Path | None = None, wait: float = 30.0
                ) -> Iterator[dbmod.Connection | None]:
    """memory.db opened for a short write outside :func:`sync` (the catch-up's vectors, a
    reinforce folded at once), under the index lock: a rebuild swaps in a new memory.db
    under that lock, and a write through a connection opened before or during the swap
    lands in the old file or in a WAL the new one's users do not share (``disk I/O
    error`` in `memory index` under eight writers). None when there is no index; Busy
    past ``wait``. On release, the pass a hook that found the lock taken left pending."""
    lock = IndexLock(state_dir(git_dir or gitsource.locate(Path(root))[0]))
    lock.acquire(wait)
    try:
        path = db_path(root)
        con = dbmod.connect(path) if path.exists() else None
        try:
            yield con
        finally:
            if con is not None:
                con.close()
    finally:
        lock.release()
        if lock.pending.exists():  # a hook found us holding the lock: its pass, now
            with contextlib.suppress(Exception):
                sync(root, hook=True)


def _combine(first: Result, then: Result) -> Result:
    """One report for several passes: the most significant pass (a rebuild outranks an
    update, which outranks a noop), at the commit and vector state the last one left."""
    best = then if _RANK[then.mode] >= _RANK[first.mode] else first
    other = first if best is then else then
    best.seconds = first.seconds + then.seconds
    best.commit, best.pending_vectors = then.commit, then.pending_vectors
    best.embedded = first.embedded + then.embedded
    best.skipped = max(first.skipped, then.skipped)
    best.notes = list(dict.fromkeys([*best.notes, *other.notes]))
    return best


def _one_pass(
    root: Path,
    embedder_name: str | None,
    force_rebuild: bool,
    hook: bool,
    progress: Progress | None,
    head: str | None,
    embed_progress: Progress | None = None,
    replies: bool | None = None,
) -> Result:
    """One update, or a rebuild when it cannot be (``replies``: the configured
    ``search.reply_vectors``; None: keep what the index recorded)."""
    eid = None
    if embedder_name is not None:
        emb = get_embedder(embedder_name)
        eid = emb.id if emb else "none"
    if not force_rebuild:
        try:
            return update(root, embedder_id=eid, hook=hook, head=head, progress=embed_progress,
                          replies=replies)
        except (NoIndex, NeedsRebuild) as exc:
            if hook:
                raise
            note = str(exc)
    else:
        note = "rebuild requested"
    recorded = _recorded_meta(root)
    if embedder_name is None:
        embedder_name = recorded.get("embedder") or "none"
    if replies is None:
        replies = schema.replies_recorded(recorded)
    res = rebuild(root, embedder_name, progress=progress, replies=replies)
    res.notes.insert(0, note)  # first: `memory index` prints it as the reason
    # commits that landed while rebuilding are picked up by the next pass (pending mark)
    return res


def follow_checkout(root: Path, wait: float = 5.0) -> Result | None:
    """An index built for another cone than the work tree's brought to it (``git
    sparse-checkout set/add`` runs no git hook; a commit's post-commit would). None when
    it already fits, there is no index, or another indexer holds the lock past ``wait``."""
    recorded = _recorded_meta(root)
    view = sparse_view(root)
    if not recorded or recorded.get("sparse", "") == (view.stamp if view else ""):
        return None
    try:
        return sync(root, wait=wait)
    except Busy:
        return None


def _recorded_meta(root: Path) -> dict[str, str]:
    """What the current index recorded (empty when there is none to read)."""
    try:
        con = open_index(root)
    except (NoIndex, NeedsRebuild):
        return {}
    try:
        return schema.get_meta(con)
    finally:
        con.close()
