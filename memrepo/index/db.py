"""The one way to open ``memory.db``: one SQLite library (``apsw``'s) for every connection.

Every connection goes through :func:`connect` and :class:`Connection`, a thin adapter
that gives apsw the few DB-API calls the index uses (``execute``, ``executemany``,
``executescript``, ``lastrowid``, ``rowcount``, ``in_transaction``) and raises this
module's :class:`Error` family for SQLite's failures. Why apsw and not the standard
``sqlite3``:

- **one library per process.** Two SQLite libraries in one process drop each other's
  POSIX locks when either closes the file (sqlite.org/howtocorrupt.html, 2.2.1). Vector
  scoring needs the sqlite-vec extension, which this machine's ``sqlite3`` (like macOS's
  and many pyenv builds) cannot load, so apsw was already opening memory.db beside
  ``sqlite3`` in a process that also writes it (``memory mcp`` hosts the server's
  catch-up and searches with a local scan while the nearest index is built).
- **a newer SQLite, the same everywhere.** apsw's wheels carry their own, often newer
  than the Python's, on which the search's ranked FTS5 query runs faster
  (``bench/perf/bench_index.py``; docs/design.md).

Without sqlite-vec, vectors are scored with numpy over the same float32 BLOBs instead of
silently disappearing. Vectors are stored as plain BLOBs in an ordinary table, so every
mode reads the same file.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

BUSY_TIMEOUT_S = 5.0
MMAP_BYTES = 256 * 1024 * 1024
#: Readers wait less: a search that cannot read soon falls back to scanning files.
READ_TIMEOUT_S = 1.0


class Error(Exception):
    """A failure of SQLite or of a statement (the DB-API's names, so callers read as
    they would with ``sqlite3``)."""


class DatabaseError(Error):
    """The index cannot answer: corrupt, not a database, locked past the wait, unreadable."""


class OperationalError(DatabaseError):
    """Busy or locked past the wait, I/O, cannot open, no such table, read-only."""


class IntegrityError(DatabaseError):
    """A constraint failed."""


class ProgrammingError(DatabaseError):
    """The statement or its bindings are wrong, or the connection is closed (a
    DatabaseError as PEP 249 and ``sqlite3`` have it: a search falls back to the scan)."""


#: SQLite's primary result codes that are not OperationalError (as Python's sqlite3 maps them)
_KINDS: dict[int, type[Error]] = {
    apsw.SQLITE_CORRUPT: DatabaseError,
    apsw.SQLITE_NOTADB: DatabaseError,
    apsw.SQLITE_CONSTRAINT: IntegrityError,
    apsw.SQLITE_MISMATCH: IntegrityError,
    apsw.SQLITE_MISUSE: ProgrammingError,
    apsw.SQLITE_RANGE: ProgrammingError,
}


def _error(exc: apsw.Error) -> Error:
    """This module's error for one of apsw's (its message, without apsw's class name)."""
    if isinstance(exc, (apsw.BindingsError, apsw.ExecutionCompleteError,
                        apsw.ConnectionClosedError, apsw.CursorClosedError,
                        apsw.ThreadingViolationError)):
        return ProgrammingError(str(exc))
    code = getattr(exc, "result", -1) & 0xFF  # the primary code
    return _KINDS.get(code, OperationalError)(str(exc))


class Cursor:
    """The rows of one statement; ``lastrowid`` and ``rowcount`` as of its execution."""

    __slots__ = ("_cur", "lastrowid", "rowcount")

    def __init__(self, cur: Any, lastrowid: int, rowcount: int):
        self._cur = cur
        self.lastrowid = lastrowid
        #: rows the statement(s) inserted, updated or deleted
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        try:
            return self._cur.fetchone()
        except apsw.Error as exc:
            raise _error(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return self._cur.fetchall()  # type: ignore[no-any-return]
        except apsw.Error as exc:
            raise _error(exc) from exc

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._cur
        except apsw.Error as exc:
            raise _error(exc) from exc


class Connection:
    """A connection to memory.db (see the module's docstring): statements run in
    autocommit unless a ``BEGIN`` is explicit, as with ``isolation_level=None``."""

    __slots__ = ("_con",)

    def __init__(self, con: apsw.Connection):
        self._con = con

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Cursor:
        return self._run(self._con.execute, sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        return self._run(self._con.executemany, sql, rows)

    def _run(self, call: Any, sql: str, args: Any) -> Cursor:
        """``call(sql, args)`` with the rows it wrote counted and SQLite's errors ours."""
        con = self._con
        try:
            before = con.total_changes()
            cur = call(sql, args)
            return Cursor(cur, con.last_insert_rowid(), con.total_changes() - before)
        except apsw.Error as exc:
            raise _error(exc) from exc

    def executescript(self, sql: str) -> None:
        """Run every statement of ``sql`` (DDL)."""
        for _ in self.execute(sql):
            pass

    @property
    def in_transaction(self) -> bool:
        return bool(self._con.in_transaction)

    def load_extension(self, path: str) -> None:
        try:
            self._con.enable_load_extension(True)
            self._con.load_extension(path)
        except apsw.Error as exc:
            raise _error(exc) from exc

    def close(self) -> None:
        self._con.close()


def connect(
    path: str | Path, *, readonly: bool = False, fast_build: bool = False
) -> Connection:
    """Open the index: WAL (readers never blocked by the writer) and a busy timeout.

    Transactions are explicit (``BEGIN`` / ``COMMIT``), so one index update is one
    transaction. ``fast_build`` is for a fresh temp file that nobody reads until it is
    swapped in: no journal, no fsync until the end.
    """
    try:
        if readonly:
            uri = Path(path).resolve().as_uri() + "?mode=ro"
            raw = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            raw.set_busy_timeout(int(READ_TIMEOUT_S * 1000))
        else:
            raw = apsw.Connection(str(path))
            raw.set_busy_timeout(int(BUSY_TIMEOUT_S * 1000))
    except apsw.Error as exc:
        raise _error(exc) from exc
    con = Connection(raw)
    try:
        if readonly:
            # a fresh search process reads pages through mmap: no syscall and copy per
            # page, so its first query is faster (``bench/perf/bench_index.py``); capped
            # so RSS stays bounded
            con.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        elif fast_build:
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
        else:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
        con.execute("PRAGMA cache_size=-32000")
    except Error:  # not a database, or locked past the wait: no file left open
        con.close()
        raise
    return con


@contextlib.contextmanager
def write(con: Connection) -> Iterator[None]:
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


def finish_build(con: Connection) -> None:
    """Turn a fast-built temp database into a normal WAL one before it is swapped in."""
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")


def vec_loadable_path() -> str | None:
    """The sqlite-vec shared library, found without importing the package.

    ``import sqlite_vec`` is slow (it probes numpy); only its file is needed.
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

    #: "sqlite-vec" | "numpy" | "python"
    mode: str
    detail: str

    @property
    def uses_sqlite_vec(self) -> bool:
        return self.mode == "sqlite-vec"


_BACKEND: VectorBackend | None = None


def vector_backend() -> VectorBackend:
    """Probe once per process for the best way to score vectors."""
    global _BACKEND
    if _BACKEND is not None:
        return _BACKEND
    loadable = vec_loadable_path()
    why = "sqlite-vec not installed"
    if loadable:
        con = connect(":memory:")
        try:
            con.load_extension(loadable)
            con.execute("SELECT vec_version()").fetchall()
            _BACKEND = VectorBackend(
                "sqlite-vec", f"loaded through apsw (SQLite {apsw.sqlite_lib_version()})")
            return _BACKEND
        except Error as exc:  # any failure to load means "score the BLOBs here"
            why = f"sqlite-vec: {exc}"
        finally:
            con.close()
    if importlib.util.find_spec("numpy") is not None:
        _BACKEND = VectorBackend("numpy", f"float32 BLOBs scored with numpy ({why})")
    else:
        _BACKEND = VectorBackend("python", f"float32 BLOBs scored in Python ({why})")
    return _BACKEND


def open_vec(path: str | Path) -> Connection:
    """A read-only connection with sqlite-vec loaded."""
    backend = vector_backend()
    loadable = vec_loadable_path()
    if not backend.uses_sqlite_vec or loadable is None:
        raise RuntimeError(f"sqlite-vec cannot be loaded here ({backend.detail})")
    con = connect(path, readonly=True)
    con.load_extension(loadable)
    return con
