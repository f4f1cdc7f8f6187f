"""The one way to open ``memory.db``, and the one way to find sqlite-vec.

The index itself (documents, chunks, FTS5) needs only the standard ``sqlite3``. Vector
scoring needs the sqlite-vec extension, which needs a SQLite module that can load
extensions; many Pythons (this machine's, macOS's system Python, many pyenv builds)
cannot. :func:`vector_backend` finds one — stdlib ``sqlite3`` if it can, else ``apsw``,
else ``pysqlite3`` — and otherwise says so, so vectors are scored with numpy over the
same float32 BLOBs instead of silently disappearing. Vectors are stored as plain BLOBs
in an ordinary table, so every mode reads the same file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUSY_TIMEOUT_S = 5.0
MMAP_BYTES = 256 * 1024 * 1024
#: Readers wait less: a search that cannot read soon falls back to scanning files.
READ_TIMEOUT_S = 1.0


def connect(
    path: str | Path, *, readonly: bool = False, fast_build: bool = False
) -> sqlite3.Connection:
    """Open the index: WAL (readers never blocked by the writer) and a busy timeout.

    ``isolation_level=None`` means transactions are explicit (``BEGIN`` / ``COMMIT``),
    so one index update is one transaction. ``fast_build`` is for a fresh temp file
    that nobody reads until it is swapped in: no journal, no fsync until the end.
    """
    if readonly:
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        con = sqlite3.connect(uri, uri=True, timeout=READ_TIMEOUT_S, isolation_level=None)
        # a fresh search process reads pages through mmap: no syscall and copy per page
        # (2-3x faster first query at 100K files); capped so RSS stays bounded
        con.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    else:
        con = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        if fast_build:
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
        else:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
    con.execute("PRAGMA cache_size=-32000")
    return con


@contextlib.contextmanager
def write(con: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (``BEGIN IMMEDIATE``): committed when the block ends, rolled
    back when it raises. SQLite may have rolled it back itself (an I/O error, a full
    disk): the block's own error is the one raised, not "cannot rollback"."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise


def finish_build(con: sqlite3.Connection) -> None:
    """Turn a fast-built temp database into a normal WAL one before it is swapped in."""
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")


def vec_loadable_path() -> str | None:
    """The sqlite-vec shared library, found without importing the package.

    ``import sqlite_vec`` costs ~70 ms (it probes numpy); only its file is needed.
    """
    try:
        spec = importlib.util.find_spec("sqlite_vec")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return str(Path(spec.origin).parent / "vec0")


@dataclass
class VectorBackend:
    """How vectors are scored here: ``mode`` is shown by ``memory doctor``."""

    #: "sqlite-vec/sqlite3" | "sqlite-vec/apsw" | "sqlite-vec/pysqlite3" | "numpy" | "python"
    mode: str
    detail: str

    @property
    def uses_sqlite_vec(self) -> bool:
        return self.mode.startswith("sqlite-vec")


_BACKEND: VectorBackend | None = None


def _try_load(module_name: str, loadable: str) -> str | None:
    """Return None if ``module_name`` can load sqlite-vec, else why not."""
    try:
        if module_name == "apsw":
            import apsw

            con = apsw.Connection(":memory:")
            con.enable_load_extension(True)
            con.load_extension(loadable)
            con.execute("SELECT vec_version()").fetchall()
            return None
        mod: Any
        if module_name == "pysqlite3":
            from pysqlite3 import dbapi2 as mod
        else:
            mod = sqlite3
        c = mod.connect(":memory:")
        if not hasattr(c, "enable_load_extension"):
            return f"{module_name} cannot load extensions"
        c.enable_load_extension(True)
        c.load_extension(loadable)
        c.execute("SELECT vec_version()").fetchall()
        return None
    except ImportError:
        return f"{module_name} not installed"
    except Exception as exc:  # any failure to load means "not this module"
        return f"{module_name}: {exc}"


def vector_backend() -> VectorBackend:
    """Probe once per process for the best way to score vectors."""
    global _BACKEND
    if _BACKEND is not None:
        return _BACKEND
    loadable = vec_loadable_path()
    reasons: list[str] = []
    if loadable:
        for name in ("sqlite3", "apsw", "pysqlite3"):
            why = _try_load(name, loadable)
            if why is None:
                _BACKEND = VectorBackend(f"sqlite-vec/{name}", f"sqlite-vec loaded through {name}")
                return _BACKEND
            reasons.append(why)
    else:
        reasons.append("sqlite-vec not installed")
    if importlib.util.find_spec("numpy") is not None:
        _BACKEND = VectorBackend(
            "numpy", "float32 BLOBs scored with numpy (" + "; ".join(reasons) + ")"
        )
    else:
        _BACKEND = VectorBackend(
            "python", "float32 BLOBs scored in Python (" + "; ".join(reasons) + ")"
        )
    return _BACKEND


def open_vec(path: str | Path) -> Any:
    """A read-only connection with sqlite-vec loaded, through the module the probe found."""
    backend = vector_backend()
    loadable = vec_loadable_path()
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    if backend.mode == "sqlite-vec/apsw":
        import apsw

        con = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        con.set_busy_timeout(int(BUSY_TIMEOUT_S * 1000))
        con.enable_load_extension(True)
        con.load_extension(loadable)
        return con
    if backend.mode in ("sqlite-vec/sqlite3", "sqlite-vec/pysqlite3"):
        if backend.mode.endswith("pysqlite3"):
            from pysqlite3 import dbapi2 as mod
        else:
            mod = sqlite3
        con = mod.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        con.enable_load_extension(True)
        con.load_extension(loadable)
        return con
    raise RuntimeError(f"no SQLite module here can load sqlite-vec ({backend.detail})")
