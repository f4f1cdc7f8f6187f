"""The resident server's nearest-neighbour index (``{"op": "nearest"}``).

:class:`NearestIndex` holds the index's vectors in memory in an HNSW graph (usearch,
int8 codes), or exact numpy when usearch is missing, so a search asks ``memory serve`` for
its nearest chunks instead of scanning every vector itself, and for the similarity of the
chunks its keywords found, which an approximate search can miss. It is kept current from
``memory.db`` by the server's keeper thread and saved in the serve dir.

The graph's constants are measured by ``bench/perf/bench_resident.py`` (speed, recall of
the exact top k) and ``bench/quality/eval_locomo_at_scale.py`` (evidence kept at 100K
files); ``docs/search.md`` says why each value was chosen.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write
from memrepo.index import db as dbmod
from memrepo.index import schema
from memrepo.resident import hugepages

#: HNSW over int8 codes: a third of float32's memory for the same top 10
ANN_DTYPE = "i8"
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128
#: the graph's search breadth; keyword candidates it misses are scored by ``similarity``,
#: so a wider search buys no recall. Not lower: a prompt none of whose words match leans
#: on the graph alone
ANN_EXPANSION_SEARCH = 512
#: removed vectors stay in the graph as tombstones every search walks: once removals since
#: the last compaction pass this share of the index, the graph is compacted (under the
#: search lock; a query meanwhile answers by FTS5 alone)
COMPACT_SHARE = 0.1
#: up to this many vectors the graph is built on one thread: a graph built on several
#: depends on their timing, and the same query must get the same nearest vectors after a
#: restart; a larger index is built on every core, in the background
SERIAL_BUILD_MAX = 10_000
#: an index of at least this many vectors is put on 2 MB pages once loaded or built
#: (:mod:`~memrepo.resident.hugepages`), where 4 KB pages stop fitting the TLB
HUGE_PAGES_MIN = 200_000
#: rows read from SQLite per statement (each its own short read: the writer is never held)
READ_BATCH = 20_000
#: vectors added under the search lock at a time: a query waits at most for one batch
ADD_BATCH = 64
#: the index is written to the serve dir at most this often while it changes
SAVE_EVERY_S = 120.0
#: more than this share of the table missing from the index: build anew, not patch
REBUILD_SHARE = 0.5


class NotReady(Exception):
    """The nearest-neighbour index cannot answer yet (the message says why)."""


def ann_library() -> tuple[Any, str | None]:
    """The ANN library (usearch's Index class) or None, and why not.

    onnxruntime is imported first when installed: with usearch 2.26.6 loaded, importing
    onnxruntime 1.32 segfaults the process (2.26.0 and earlier do not; the other order
    works), and the server loads MiniLM after its nearest index."""
    import importlib.util

    try:
        if importlib.util.find_spec("onnxruntime") is not None:
            import onnxruntime  # noqa: F401
    except Exception:  # a broken onnxruntime is the embedder's problem, reported there
        pass
    try:
        from usearch.index import Index
    except ImportError as exc:
        return None, f"usearch not installed ({exc.name or exc})"
    return Index, None


class _Exact:
    """Exact cosine over a float32 matrix (numpy): what answers without usearch."""

    kind = "exact numpy"

    def __init__(self, dim: int):
        import numpy as np

        self.dim = dim
        self._blocks: list[Any] = []
        self._kblocks: list[Any] = []
        self._mat = np.zeros((0, dim), dtype="<f4")
        self._keys = np.zeros(0, dtype=np.int64)
        self._row: dict[int, int] | None = None  # key -> row of _mat, built when asked

    def _flat(self) -> None:
        import numpy as np

        if self._blocks:
            self._row = None
            self._mat = np.concatenate([self._mat, *self._blocks])
            self._keys = np.concatenate([self._keys, *self._kblocks])
            self._blocks, self._kblocks = [], []

    def __len__(self) -> int:
        return len(self._keys) + sum(len(k) for k in self._kblocks)

    def keys(self) -> Any:
        self._flat()
        return self._keys

    def contains(self, keys: Any) -> Any:
        import numpy as np

        return np.isin(keys, self.keys())

    def add(self, keys: Any, mat: Any, threads: int = 1) -> None:
        self._blocks.append(mat)
        self._kblocks.append(keys)

    def remove(self, keys: Any) -> None:
        import numpy as np

        self._flat()
        keep = ~np.isin(self._keys, keys)
        self._mat, self._keys, self._row = self._mat[keep], self._keys[keep], None

    def search(self, q: Any, k: int) -> tuple[Any, Any]:
        import numpy as np

        self._flat()
        if not len(self._keys):
            return self._keys[:0], np.zeros(0, dtype="<f4")
        sims = self._mat @ q
        k = min(k, len(sims))
        idx = np.argpartition(-sims, k - 1)[:k]
        idx = idx[np.argsort(-sims[idx])]
        return self._keys[idx], sims[idx]

    def similarity(self, q: Any, keys: Any) -> Any:
        import numpy as np

        self._flat()
        if self._row is None:
            self._row = {k: i for i, k in enumerate(self._keys.tolist())}
        rows = [self._row.get(k, -1) for k in keys.tolist()]
        have = [i for i, r in enumerate(rows) if r >= 0]
        out = np.full(len(rows), np.nan, dtype="<f4")
        if have:
            out[have] = self._mat[[rows[i] for i in have]] @ q
        return out


class _Usearch:
    """usearch's HNSW over int8 codes, keyed by chunk hash (an int64 seen as uint64)."""

    def __init__(self, dim: int, index: Any = None):
        Index, _ = ann_library()
        self.dim = dim
        self.kind = self.name()
        self.ix = index if index is not None else Index(
            ndim=dim, metric="cos", dtype=ANN_DTYPE, connectivity=ANN_CONNECTIVITY,
            expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)
        #: removed since the last compaction (a restored index starts at 0: its file keeps
        #: tombstones this count does not know of, so it compacts later, never sooner)
        self.tombstones = 0

    @staticmethod
    def name() -> str:
        import usearch

        return f"usearch {usearch.__version__} hnsw {ANN_DTYPE}"

    def __len__(self) -> int:
        return len(self.ix)

    def keys(self) -> Any:
        import numpy as np

        return np.asarray(self.ix.keys).view(np.int64)

    def contains(self, keys: Any) -> Any:
        import numpy as np

        return np.asarray(self.ix.contains(keys.view(np.uint64)), dtype=bool)

    def add(self, keys: Any, mat: Any, threads: int = 1) -> None:
        self.ix.add(keys.view("<u8"), mat, threads=threads)

    def remove(self, keys: Any) -> None:
        self.tombstones += len(keys)
        compact = self.tombstones > COMPACT_SHARE * max(len(self.ix), 1)
        self.ix.remove(keys.view("<u8"), compact=compact)
        if compact:
            self.tombstones = 0

    def search(self, q: Any, k: int) -> tuple[Any, Any]:
        import numpy as np

        self.ix.expansion_search = max(ANN_EXPANSION_SEARCH, k)
        m = self.ix.search(q, k, threads=1)
        # scored again as :meth:`similarity` scores any key: the int8 kernel's cosines
        # read slightly low, and the searcher ranks these beside its keyword candidates'
        keys = np.asarray(m.keys).view(np.int64)
        sims = self.similarity(q, keys)
        order = np.argsort(-sims, kind="stable")
        return keys[order], sims[order]

    def similarity(self, q: Any, keys: Any) -> Any:
        """The cosines of ``q`` and the vectors of ``keys`` (their int8 codes, normalised),
        NaN for a key the index does not hold (``bench/perf/search_steps.py`` times it).

        The codes are read as stored (a cosine does not see their scale): asking usearch
        for float32 converted each of them in its own array first, which is slower."""
        import numpy as np

        got = self.ix.get(keys.view(np.uint64), dtype=self.ix.dtype)
        if not isinstance(got, tuple):  # one key: usearch answers with the vector alone
            got = (got,)
        out = np.full(len(got), np.nan, dtype="<f4")
        have = [i for i, v in enumerate(got) if v is not None]
        if have:
            mat = np.stack([got[i] for i in have]).astype(np.float32)
            out[have] = (mat @ q) / np.maximum(np.linalg.norm(mat, axis=1), 1e-12)
        return out

    def save(self, path: Path) -> None:
        self.ix.save(str(path))

    @classmethod
    def load(cls, path: Path, dim: int) -> _Usearch:
        Index, _ = ann_library()
        return cls(dim, Index.restore(str(path)))


def _db_ident(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


class NearestIndex:
    """The vectors of one clone's index, in memory, for the resident server's ``nearest``.

    Disposable like memory.db: built from its ``vectors`` table (chunk hash -> unit
    float32), kept current by :meth:`refresh` (rows past the last ``id`` seen are added —
    ids only grow between rebuilds; a row count that differs, a smaller max id, or another
    memory.db file (a rebuild's ``os.replace``) makes it reconcile by hash: keys are content
    hashes, so a rebuilt index keeps nearly all of them), and saved in ``store`` (the serve
    dir) so a restarted server loads it instead of building for minutes. A vector removed
    from the table is removed here on the next refresh; the searcher also keeps only hashes
    its chunks table still holds.

    One thread refreshes (the server's keeper); any thread may :meth:`search`. usearch if
    installed, else exact numpy (``kind`` says which, ``why_exact`` why).
    """

    def __init__(self, db: Path, embedder_id: str, dim: int, store: Path | None = None,
                 log: Any = None, *, threads: int | None = None):
        import threading

        self.db = Path(db)
        self.embedder_id = embedder_id
        self.dim = dim
        self.store = store
        self.log = log or (lambda msg: None)
        self.threads = threads or os.cpu_count() or 1
        lib, self.why_exact = ann_library()
        self.use_ann = lib is not None
        self.kind = _Usearch.name() if lib else _Exact.kind
        self.state = "empty"
        self.progress: tuple[int, int] = (0, 0)
        self.build_seconds: float | None = None
        self.load_seconds: float | None = None
        self.last_update: dict[str, float] = {}
        self._ann: Any = None
        self._ident: tuple[int, int] | None = None
        self._last_id = 0
        self._seen: Any = None
        self._dirty = False
        self._saved_at = 0.0
        self._lock = threading.Lock()

    # -- reading ----------------------------------------------------------------
    def signature(self) -> tuple[Any, ...]:
        """What changes when memory.db does (inode, size, mtime of it and its WAL)."""
        out: list[Any] = []
        for p in (self.db, self.db.with_name(self.db.name + "-wal")):
            try:
                st = p.stat()
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def changed(self) -> bool:
        return self.signature() != self._seen

    def _asked(self, qvec: bytes) -> tuple[Any, Any]:
        """(the index, the query vector) a request is answered with; NotReady while there
        is no index (saying how far its build is), ValueError for a vector of another size."""
        import numpy as np

        ann = self._ann
        if ann is None:
            if self.state == "building":
                done, total = self.progress
                raise NotReady(f"building the vector index ({done} of {total})")
            raise NotReady(f"no vector index ({self.state})")
        q = np.frombuffer(qvec, dtype="<f4")
        if q.shape != (self.dim,):
            raise ValueError(f"query vector of {q.size} dimensions, the index has {self.dim}")
        return ann, q

    def search(self, qvec: bytes, k: int) -> list[tuple[int, float]]:
        """(chunk hash, cosine similarity), best first; NotReady while there is no index."""
        ann, q = self._asked(qvec)
        with self._lock:
            keys, sims = ann.search(q, k)
        return [(int(h), float(s)) for h, s in zip(keys.tolist(), sims.tolist(), strict=True)]

    def similarity(self, qvec: bytes, keys: Any) -> Any:
        """The cosine of the query and each of ``keys`` (an int64 array), however far from
        it, NaN for a key the index does not hold: a search scores its keyword candidates
        with them, which an approximate nearest search may have missed. NotReady while
        there is no index."""
        import numpy as np

        ann, q = self._asked(qvec)
        if not len(keys):
            return np.zeros(0, dtype="<f4")
        with self._lock:
            return ann.similarity(q, keys)

    @property
    def exact(self) -> bool:
        """Whether :meth:`search` is exact (numpy), so its cut misses nothing above it."""
        return isinstance(self._ann, _Exact)

    def status(self) -> dict[str, Any]:
        ann = self._ann
        return {"via": ann.kind if ann is not None else self.kind, "state": self.state,
                "vectors": len(ann) if ann is not None else 0,
                "progress": list(self.progress) if self.state == "building" else None,
                "why_exact": self.why_exact, "build_s": self.build_seconds,
                "load_s": self.load_seconds, "last_update": self.last_update or None}

    # -- keeping it current (one thread) ------------------------------------------
    def refresh(self, should_stop: Any = lambda: False) -> int:
        """Bring the index in line with memory.db; the number of vectors added or removed."""
        sig = self.signature()
        if sig == self._seen and self._ann is not None:
            return 0
        if not self.db.exists():
            self._drop("no index (memory.db is missing)")
            self._seen = sig
            return 0
        con = dbmod.connect(self.db, readonly=True)
        try:
            ident = _db_ident(self.db)
            recorded = schema.get_meta(con).get("embedder")
            if recorded != self.embedder_id:
                self._drop(f"memory.db holds {recorded} vectors, not {self.embedder_id}")
                self._seen = sig
                return 0
            if self._ann is None and not self._load_saved():
                n = self._build(con, ident, should_stop)
                if n is None:
                    return 0
                self._seen = sig
                return n
            (max_id,) = con.execute("SELECT coalesce(max(id), 0) FROM vectors").fetchone()
            t0 = time.perf_counter()
            if ident != self._ident or max_id < self._last_id:
                n = self._reconcile(con, ident, should_stop)
            else:
                n = self._add_since(con, should_stop)
                (count,) = con.execute("SELECT count(*) FROM vectors").fetchone()
                if count != len(self._ann):
                    n += self._reconcile(con, ident, should_stop)
            if n:
                self.last_update = {"vectors": n,
                                    "ms": round((time.perf_counter() - t0) * 1000, 1)}
                self._dirty = True
            if not should_stop():
                self._seen = sig
            self.state = "ready"
            return n
        finally:
            con.close()

    def _huge_pages(self) -> None:
        """Back the index just loaded or built (at start, or anew when most of memory.db
        changed) with 2 MB pages (HUGE_PAGES_MIN). Vectors added later grow into the
        mappings advised, or into new ones that stay on 4 KB pages until the next load."""
        ann = self._ann
        # numpy's matrix is scanned in order, and a small graph fits the TLB's reach anyway
        if ann is None or self.kind == _Exact.kind or len(ann) < HUGE_PAGES_MIN:
            return
        t0 = time.perf_counter()
        done = hugepages.collapse()
        if done:
            self.log(f"nearest: {done >> 20} MB on 2 MB pages in "
                     f"{time.perf_counter() - t0:.1f}s")

    def _drop(self, why: str) -> None:
        with self._lock:
            self._ann, self._ident, self._last_id = None, None, 0
        self.state = why

    def _new(self) -> Any:
        return _Usearch(self.dim) if self.use_ann else _Exact(self.dim)

    def _rows(self, con: dbmod.Connection, after: int, should_stop: Any) -> Any:
        """(ids, keys, matrix) batches of the rows past id ``after``, in id order."""
        import numpy as np

        while not should_stop():
            rows = con.execute("SELECT id, hash, vec FROM vectors WHERE id > ? ORDER BY id "
                               "LIMIT ?", (after, READ_BATCH)).fetchall()
            if not rows:
                return
            after = rows[-1][0]
            good = [r for r in rows if len(r[2]) == 4 * self.dim]  # a torn row: skipped
            keys = np.fromiter((r[1] for r in good), dtype=np.int64, count=len(good))
            mat = np.frombuffer(b"".join(r[2] for r in good), dtype="<f4").reshape(
                len(good), self.dim)
            yield after, keys, mat

    def _build(self, con: dbmod.Connection, ident: tuple[int, int], should_stop: Any
               ) -> int | None:
        """A new index of the whole table (built aside: the old one answers meanwhile)."""
        (total,) = con.execute("SELECT count(*) FROM vectors").fetchone()
        self.state, self.progress = "building", (0, total)
        t0 = time.perf_counter()
        ann, last, done = self._new(), 0, 0
        for after, keys, mat in self._rows(con, 0, should_stop):
            last = after
            if len(keys):
                fresh = ~ann.contains(keys) if len(ann) else None
                if fresh is not None and not fresh.all():
                    keys, mat = keys[fresh], mat[fresh]
                ann.add(keys, mat, threads=self.threads if total > SERIAL_BUILD_MAX else 1)
            done += len(keys)
            self.progress = (done, total)
        if should_stop():
            self.state = "stopped while building"
            return None
        self.build_seconds = round(time.perf_counter() - t0, 2)
        with self._lock:
            self._ann, self._ident, self._last_id = ann, ident, last
        self.state, self._dirty = "ready", True
        self.log(f"nearest: built {ann.kind} of {len(ann)} vectors in {self.build_seconds}s")
        self._huge_pages()
        return len(ann)

    def _add(self, keys: Any, mat: Any) -> int:
        """Add what the index lacks, a short batch at a time under the search lock."""
        if not len(keys):
            return 0
        fresh = ~self._ann.contains(keys)
        keys, mat = keys[fresh], mat[fresh]
        for i in range(0, len(keys), ADD_BATCH):
            with self._lock:
                self._ann.add(keys[i : i + ADD_BATCH], mat[i : i + ADD_BATCH])
        return len(keys)

    def _add_since(self, con: dbmod.Connection, should_stop: Any) -> int:
        n = 0
        for last, keys, mat in self._rows(con, self._last_id, should_stop):
            n += self._add(keys, mat)
            self._last_id = last
        return n

    def _reconcile(self, con: dbmod.Connection, ident: tuple[int, int], should_stop: Any
                   ) -> int:
        """Match the table by hash: remove keys it lost, add the ones it gained."""
        import numpy as np

        rows = con.execute("SELECT hash, id FROM vectors").fetchall()
        table = np.fromiter((h for h, _ in rows), dtype=np.int64, count=len(rows))
        max_id = max((i for _, i in rows), default=0)
        have = self._ann.keys()
        gone = np.setdiff1d(have, table, assume_unique=True)
        new = np.setdiff1d(table, have, assume_unique=True)
        del rows
        if len(new) > REBUILD_SHARE * max(1, len(table)):
            return self._build(con, ident, should_stop) or 0
        for i in range(0, len(gone), ADD_BATCH * 16):
            with self._lock:
                self._ann.remove(gone[i : i + ADD_BATCH * 16])
        n = len(gone)
        for i in range(0, len(new), 500):
            if should_stop():
                return n
            part = new[i : i + 500].tolist()
            got = [r for r in con.execute(
                f"SELECT hash, vec FROM vectors WHERE hash IN ({','.join('?' * len(part))})",
                part) if len(r[1]) == 4 * self.dim]
            if got:
                keys = np.fromiter((h for h, _ in got), dtype=np.int64, count=len(got))
                mat = np.frombuffer(b"".join(v for _, v in got), dtype="<f4").reshape(
                    len(got), self.dim)
                n += self._add(keys, mat)
        self._ident, self._last_id = ident, max_id
        return n

    # -- persistence ----------------------------------------------------------------
    def _paths(self) -> tuple[Path, Path] | None:
        if self.store is None or not self.use_ann:
            return None
        stem = f"nearest-{self.embedder_id}"
        return self.store / f"{stem}.usearch", self.store / f"{stem}.json"

    def _meta(self) -> dict[str, Any]:
        return {"kind": self._ann.kind if self._ann is not None else self.kind,
                "embedder": self.embedder_id, "dim": self.dim, "dtype": ANN_DTYPE,
                "connectivity": ANN_CONNECTIVITY}

    def save(self, force: bool = False) -> bool:
        """Write the index to the store when it changed (at most every SAVE_EVERY_S unless
        ``force``): a restart loads it. Called by the refreshing thread only."""
        import json

        paths = self._paths()
        ann = self._ann
        if paths is None or ann is None or not self._dirty:
            return False
        if not force and time.monotonic() - self._saved_at < SAVE_EVERY_S:
            return False
        data, side = paths
        tmp = data.with_name(f".{data.name}.{os.getpid()}.tmp")
        try:
            ann.save(tmp)
            os.replace(tmp, data)
        finally:
            tmp.unlink(missing_ok=True)
        ident = self._ident or (0, 0)
        atomic_write(side, json.dumps({**self._meta(), "db": list(ident),
                                       "last_id": self._last_id, "count": len(ann)}) + "\n",
                     mode=0o600)
        self._dirty, self._saved_at = False, time.monotonic()
        return True

    def _load_saved(self) -> bool:
        """Load the stored index when it was made for this embedder and layout; the next
        refresh brings it current (by id past its last one, or by hash)."""
        import json

        paths = self._paths()
        if paths is None or not paths[0].exists():
            return False
        data, side = paths
        try:
            meta = json.loads(side.read_text())
            if {k: meta.get(k) for k in self._meta()} != self._meta():
                return False
            t0 = time.perf_counter()
            ann = _Usearch.load(data, self.dim)
        except Exception as exc:  # a torn or foreign file: build anew
            self.log(f"nearest: {data} unusable ({type(exc).__name__}: {exc}); rebuilding")
            return False
        self.load_seconds = round(time.perf_counter() - t0, 2)
        with self._lock:
            self._ann = ann
            self._ident = tuple(meta.get("db") or (0, 0))  # type: ignore[assignment]
            self._last_id = int(meta.get("last_id") or 0)
        self.state = "ready"
        self.log(f"nearest: loaded {len(ann)} vectors from {data} in {self.load_seconds}s")
        self._huge_pages()
        return True
