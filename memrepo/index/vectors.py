"""Nearest chunks by cosine similarity, by whichever backend :mod:`db` found.

Vectors are unit-length float32 BLOBs keyed by chunk hash. With sqlite-vec loaded SQLite
scores them; otherwise numpy does, from the same table (faster than sqlite-vec once numpy
is imported: ``bench/perf/bench_resident.py`` measures both); with neither, plain Python
(fine for a small repo, slow for a big one).

The resident server's in-memory copy of the same table is
:class:`memrepo.resident.nearest.NearestIndex`.
"""

from __future__ import annotations

import array
import sys
from pathlib import Path
from typing import Any

from memrepo.index import db as dbmod


def _floats(blob: bytes) -> array.array:
    a = array.array("f")
    a.frombytes(blob)
    if sys.byteorder != "little":
        a.byteswap()
    return a


class VectorSearch:
    """Top-k chunk hashes for a query vector; loads what it needs once (for --batch)."""

    def __init__(self, con: dbmod.Connection, path: Path):
        self.con = con
        self.path = path
        self.backend = dbmod.vector_backend()
        self._vec_con: Any = None
        self._matrix: Any = None
        self._hashes: list[int] | None = None

    @property
    def mode(self) -> str:
        return self.backend.mode

    def top(self, query_vec: bytes, k: int) -> list[tuple[int, float]]:
        """(chunk hash, cosine similarity), best first."""
        if self.backend.uses_sqlite_vec:
            try:
                return self._top_sqlite_vec(query_vec, k)
            except Exception:  # extension refused at run time: fall through to numpy/python
                self.backend = dbmod.VectorBackend("numpy", "sqlite-vec failed at run time")
        if self.backend.mode == "numpy":
            return self._top_numpy(query_vec, k)
        return self._top_python(query_vec, k)

    def _top_sqlite_vec(self, q: bytes, k: int) -> list[tuple[int, float]]:
        if self._vec_con is None:
            self._vec_con = dbmod.open_vec(self.path)
        rows = self._vec_con.execute(
            "SELECT hash, vec_distance_cosine(vec, ?) AS d FROM vectors ORDER BY d LIMIT ?",
            (q, k),
        ).fetchall()
        return [(h, 1.0 - d) for h, d in rows]

    def _top_numpy(self, q: bytes, k: int) -> list[tuple[int, float]]:
        import numpy as np

        if self._matrix is None:
            rows = self.con.execute("SELECT hash, vec FROM vectors").fetchall()
            self._hashes = [h for h, _ in rows]
            if rows:
                self._matrix = np.frombuffer(b"".join(v for _, v in rows), dtype="<f4").reshape(
                    len(rows), -1
                )
            else:
                self._matrix = np.zeros((0, 1), dtype="<f4")
        if not self._hashes:
            return []
        qv = np.frombuffer(q, dtype="<f4")
        sims = self._matrix @ qv
        k = min(k, len(sims))
        idx = np.argpartition(-sims, k - 1)[:k]
        idx = idx[np.argsort(-sims[idx])]
        return [(self._hashes[i], float(sims[i])) for i in idx]

    def _top_python(self, q: bytes, k: int) -> list[tuple[int, float]]:
        qv = _floats(q)
        scored = []
        for h, blob in self.con.execute("SELECT hash, vec FROM vectors"):
            v = _floats(blob)
            scored.append((h, sum(a * b for a, b in zip(qv, v, strict=True))))
        scored.sort(key=lambda x: -x[1])
        return scored[:k]

    def close(self) -> None:
        if self._vec_con is not None:
            self._vec_con.close()
            self._vec_con = None
