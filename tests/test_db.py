"""``memrepo.index.db``: every connection to memory.db through one SQLite library (apsw's),
with the DB-API calls and errors the index uses."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import IRepo

from memrepo.index import db as dbmod
from memrepo.index.paths import db_path


def test_rowids_and_counts_are_those_of_the_statement(tmp_path: Path) -> None:
    con = dbmod.connect(tmp_path / "t.db")
    con.executescript("CREATE TABLE t(k INTEGER PRIMARY KEY, v); CREATE TABLE u(x);")
    assert con.execute("INSERT INTO t(v) VALUES ('a')").lastrowid == 1
    assert con.execute("INSERT INTO t(v) VALUES ('b')").lastrowid == 2
    # INSERT OR IGNORE: only the rows written count (the indexer counts new vectors so)
    cur = con.executemany("INSERT OR IGNORE INTO t(k, v) VALUES (?, ?)",
                          ((k, str(k)) for k in (2, 3, 4)))
    assert cur.rowcount == 2
    assert con.execute("SELECT k FROM t ORDER BY k").fetchall() == [(1,), (2,), (3,), (4,)]
    assert con.execute("SELECT k FROM t WHERE k > 9").fetchone() is None
    assert [k for (k,) in con.execute("SELECT k FROM t WHERE k > ?", [2])] == [3, 4]
    assert not con.in_transaction
    con.execute("BEGIN")
    assert con.in_transaction
    con.execute("ROLLBACK")
    con.close()


def test_sqlite_failures_raise_the_modules_errors_with_sqlites_message(tmp_path: Path) -> None:
    with pytest.raises(dbmod.OperationalError, match="unable to open"):
        dbmod.connect(tmp_path / "missing.db", readonly=True)
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 500)
    with pytest.raises(dbmod.DatabaseError, match="not a database") as exc:
        dbmod.connect(bad, readonly=True)
    assert not isinstance(exc.value, dbmod.OperationalError)

    con = dbmod.connect(tmp_path / "t.db")
    con.execute("CREATE TABLE t(k INTEGER PRIMARY KEY)")
    con.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(dbmod.IntegrityError, match="UNIQUE"):
        con.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(dbmod.OperationalError, match="no such table"):
        con.execute("SELECT * FROM nope")
    with pytest.raises(dbmod.ProgrammingError):
        con.execute("SELECT ?", (1, 2))
    # an error on a later row, while the rows are read, is one of ours too
    rows = con.execute("SELECT abs(x) FROM (SELECT 1 AS x UNION ALL "
                       "SELECT -9223372036854775807 - 1)")
    with pytest.raises(dbmod.OperationalError, match="overflow"):
        list(rows)
    con.close()
    # a closed connection, as with sqlite3: a ProgrammingError, which is a DatabaseError
    with pytest.raises(dbmod.ProgrammingError, match="closed"):
        con.execute("SELECT 1")
    assert issubclass(dbmod.ProgrammingError, dbmod.DatabaseError)


def test_a_busy_writer_waits_then_says_locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_S", 0.05)
    a, b = dbmod.connect(tmp_path / "t.db"), dbmod.connect(tmp_path / "t.db")
    a.execute("CREATE TABLE t(x)")
    a.execute("BEGIN IMMEDIATE")
    with pytest.raises(dbmod.OperationalError, match="locked"), dbmod.write(b):
        pass
    a.execute("ROLLBACK")
    with dbmod.write(b):
        b.execute("INSERT INTO t VALUES (1)")
    assert a.execute("SELECT x FROM t").fetchall() == [(1,)]
    a.close()
    b.close()


def test_an_index_written_here_is_read_by_pythons_own_sqlite(irepo_indexed: IRepo) -> None:
    """apsw's SQLite is newer than the stdlib's: the file stays readable by an older one
    (a user's tools, an older memrepo), FTS5 included."""
    con = sqlite3.connect(db_path(irepo_indexed.root))
    try:
        (n,) = con.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'rolling'"
                           ).fetchone()
        (ok,) = con.execute("PRAGMA integrity_check").fetchone()
    finally:
        con.close()
    assert n >= 1 and ok == "ok"


def test_indexing_and_searching_load_one_sqlite_library(irepo: IRepo) -> None:
    """Two SQLite libraries in one process drop each other's POSIX locks when either closes
    the file: the index's paths never import the standard library's."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memrepo.index.indexer import sync\n"
        "from memrepo.index.search import Search\n"
        "from memrepo.index.health import checks\n"
        "from memrepo.repo import MemoryRepo\n"
        "root = Path(sys.argv[1])\n"
        "sync(root)\n"
        "hits = Search(root).search('rolling updates')\n"
        "checks(MemoryRepo(root))\n"
        "print(len(hits), '_sqlite3' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(irepo.root)], check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["1", "False"]
