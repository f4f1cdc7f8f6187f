"""The index survives what git and hands put in a repo: odd file names, odd signal events,
two indexers at once, and events written since the last index update."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from conftest import IRepo, run_memory

from memrepo.index import indexer, signals
from memrepo.index import log as hooklog
from memrepo.index.indexer import sync
from memrepo.index.lock import IndexLock
from memrepo.index.paths import state_dir

BAD_NAME = "knowledge/reference/" + os.fsdecode(b"bad\xffname.md")  # not valid UTF-8


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    (tmp_path / "copies").mkdir()
    return tmp_path


def _assert_like_rebuild(repo: IRepo, tmp: Path) -> None:
    snap = repo.snapshot()
    assert snap["commit"] == repo.git("rev-parse", "HEAD").strip()
    assert snap == repo.rebuilt_snapshot(tmp / "copies")


# --- 1. a file name that is not valid UTF-8 ------------------------------------------


def test_a_file_name_that_is_not_utf8_is_skipped_and_reported(
    irepo_indexed: IRepo, copies: Path
) -> None:
    r = irepo_indexed
    r.write(BAD_NAME, "---\ntype: reference\n---\nA note with an odd name.\n")
    r.write("knowledge/reference/fine.md", "---\ntype: reference\n---\nA fine note.\n")
    r.commit("odd name")  # --no-verify, as a pull would bring it
    r.event()
    state = state_dir(r.root / ".git")
    assert hooklog.errors_since_last_success(state) == []
    last = hooklog.read(state)[-1]
    assert last.level == "OK" and "skipped 1 file(s) whose name is not valid UTF-8" in last.message
    _assert_like_rebuild(r, copies)
    paths = [row[0] for row in r.snapshot()["documents"]]
    assert "knowledge/reference/fine.md" in paths and len(paths) == 4

    r.write("knowledge/people/x.md", "---\ntype: person\nname: X\n---\nx\n")
    r.commit("x")  # no hook ran: `memory index` catches up past the odd name
    proc = run_memory(r.root, "index")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "1 added" in proc.stdout
    proc = run_memory(r.root, "index", "--rebuild")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "rebuilt" in proc.stdout
    assert "skipped 1 file(s) whose name is not valid UTF-8" in proc.stdout
    assert "bad\\xffname.md" in proc.stdout
    res = sync(r.root, force_rebuild=True)
    assert res is not None and res.skipped == 1 and res.files == 5


def test_an_incremental_pass_reports_the_skipped_name(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    r.write(BAD_NAME, "---\ntype: reference\n---\nodd\n")
    r.commit("odd name")
    proc = run_memory(r.root, "index", "--json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert (res["mode"], res["skipped"], res["added"]) == ("incremental", 1, 0)
    assert "not valid UTF-8" in res["notes"][0]


# --- 2. signal events that cannot be stored ------------------------------------------


def test_events_out_of_range_are_skipped_not_fatal(irepo_indexed: IRepo, copies: Path) -> None:
    r = irepo_indexed
    good = "knowledge/reference/kubernetes.md"
    ts = "2024-01-02T00:00:00+00:00"
    lines = [
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": 6}),
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": 10**23}),
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": 2**63}),
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": -1}),
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": 1.5}),
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": "6"}),
        json.dumps({"ts": ts, "event": "reinforce", "path": good, "line": True}),
        '{"ts": "x", "event": "reinforce", "path": "k.md", "line": 1e400}',
        json.dumps({"ts": ts, "event": "reinforce", "path": None}),
        json.dumps({"ts": ts, "event": "reinforce", "path": "\udcff.md"}),
        json.dumps({"ts": "\ud800", "event": "reinforce", "path": good}),
        json.dumps({"ts": ts, "event": ["reinforce"], "path": good}),
        json.dumps([good]),
        "[" * 100_000,
        "not json",
    ]
    r.write("raw/signals/2024-01.jsonl", "\n".join(lines) + "\n")
    r.commit("signals merged from elsewhere")
    r.event()
    assert hooklog.errors_since_last_success(state_dir(r.root / ".git")) == []
    _assert_like_rebuild(r, copies)
    assert [row[:3] for row in r.snapshot()["signals"]] == [(good, 6, 3.0)]
    assert set(signals.aggregate(r.root)) == {(good, 6)}


@pytest.mark.parametrize(
    "anchor", [":99999999999999999999999", "#99999999999999999999", ":1-99999999999999999999"]
)
def test_a_huge_number_in_a_ref_is_refused_before_anything_is_written(
    irepo_indexed: IRepo, anchor: str
) -> None:
    r = irepo_indexed
    ref = "knowledge/reference/kubernetes.md" + anchor
    for cmd in ("reinforce", "demote"):
        proc = run_memory(r.root, cmd, ref)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and "memory:" in proc.stderr
    assert not (r.root / "raw/signals").exists()
    assert run_memory(r.root, "index", "--rebuild").returncode == 0


def test_parse_ref_bounds_every_number() -> None:
    assert signals.parse_ref(f"a.md:{2**63 - 1}").line == 2**63 - 1
    for ref in (f"a.md:{2**63}", f"a.md#{2**63}", f"a.md:1-{2**63}", "a.md:" + "9" * 5000):
        with pytest.raises(signals.BadRef, match="too large"):
            signals.parse_ref(ref)
    assert signals.parse_ref("a.md:\u0663").line is None  # Arabic-Indic 3 is not a line number


# --- 6. two indexers at once -----------------------------------------------------------


def test_a_rebuild_asked_while_another_runs_is_not_lost(
    irepo_indexed: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B asks for a rebuild while A rebuilds: B waits and rebuilds, A reports its rebuild."""
    r = irepo_indexed
    real_rebuild, real_acquire = indexer.rebuild, IndexLock.acquire
    b_waits = threading.Event()
    calls: list[str] = []

    def acquire(self: IndexLock, wait: float = 0.0) -> None:
        if threading.current_thread().name == "b":
            b_waits.set()  # B is past anything it does before waiting for the lock
        real_acquire(self, wait)

    def slow_rebuild(root: Path, name: str, **kw: object) -> indexer.Result:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            assert b_waits.wait(10)
            time.sleep(0.2)
        return real_rebuild(root, name, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer, "rebuild", slow_rebuild)
    monkeypatch.setattr(IndexLock, "acquire", acquire)
    results: dict[str, indexer.Result | None] = {}

    def run(name: str) -> None:
        results[name] = sync(r.root, force_rebuild=True)

    a = threading.Thread(target=run, args=("a",), name="a")
    b = threading.Thread(target=run, args=("b",), name="b")
    a.start()
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.01)
    b.start()
    a.join(30)
    b.join(30)
    assert calls == ["a", "b"]
    ra, rb = results["a"], results["b"]
    assert ra is not None and ra.mode == "rebuild"
    assert rb is not None and rb.mode == "rebuild"


def test_a_pass_for_a_hook_does_not_hide_the_rebuild(
    irepo_indexed: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook's commit lands during a rebuild: the holder reports its rebuild, at the new HEAD."""
    r = irepo_indexed
    real_rebuild = indexer.rebuild
    hook_results: list[indexer.Result | None] = []

    def rebuild_while_a_commit_lands(root: Path, name: str, **kw: object) -> indexer.Result:
        res = real_rebuild(root, name, **kw)  # type: ignore[arg-type]
        if not hook_results:
            r.write("knowledge/people/h.md", "---\ntype: person\nname: H\n---\nh\n")
            r.commit("h")
            hook_results.append(sync(r.root, hook=True))  # busy: leaves its mark
        return res

    monkeypatch.setattr(indexer, "rebuild", rebuild_while_a_commit_lands)
    res = sync(r.root, force_rebuild=True)
    assert hook_results == [None]
    assert res is not None and res.mode == "rebuild"
    assert res.commit == r.git("rev-parse", "HEAD").strip() == r.snapshot()["commit"]


# --- 8. events since the last update, and the ripgrep fallback --------------------------


def test_uncommitted_events_reach_the_index_without_a_rebuild(
    irepo_indexed: IRepo, copies: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = irepo_indexed
    signals.append(r.root, [{"event": "reinforce", "path": "knowledge/reference/kubernetes.md"}])
    assert sync(r.root) is not None  # `memory index`: nothing new in git, an event on disk
    _assert_like_rebuild(r, copies)
    assert r.snapshot()["signals"]
    r.commit("reinforce")
    r.event()

    folds: list[int] = []
    real = signals.aggregate
    monkeypatch.setattr(
        signals, "aggregate", lambda root, hits=True: folds.append(1) or real(root, hits)
    )

    def commit_only(rel: str) -> None:
        r.write(rel, f"---\ntype: person\nname: {rel[-4]}\n---\nperson\n")
        r.git("add", rel)
        r.git("commit", "-q", "--no-verify", "-m", rel)
        r.event()

    commit_only("knowledge/people/q.md")  # the signal files did not change: not read again
    # searches log hits on every call: they go to hits files, which never move ranking
    # and never make a commit re-read the signals
    assert run_memory(r.root, "search", "kubernetes secrets").returncode == 0
    assert list((r.root / ".memrepo/signals").glob("hits-*.jsonl"))
    commit_only("knowledge/people/r.md")
    assert folds == []
    signals.append(r.root, [{"event": "demote", "path": "knowledge/people/q.md"}])
    commit_only("knowledge/people/p.md")  # the new event stays uncommitted, and counts
    assert folds == [1]
    _assert_like_rebuild(r, copies)
    assert ("knowledge/people/q.md", 0) in {row[:2] for row in r.snapshot()["signals"]}


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_the_ripgrep_fallback_searches_files_with_a_nul_byte(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    (r.root / "knowledge/reference/nul.md").write_bytes(
        b"---\ntype: reference\n---\nThe zeppelin hangar\x00 opens at dawn.\n"
    )
    (r.root / "memory.db").unlink()
    proc = run_memory(r.root, "search", "--json", "zeppelin")
    assert proc.returncode == 0, proc.stderr
    assert "ripgrep" in proc.stderr
    assert [h["path"] for h in json.loads(proc.stdout)] == ["knowledge/reference/nul.md"]


# --- symlinks: a memory repo holds regular files only ---------------------------------


def test_a_committed_symlink_is_never_read_through_and_is_reported(
    irepo_indexed: IRepo, tmp_path: Path
) -> None:
    """A link to a file outside the repo (and a link to a directory) reaches git through
    a pull: the index names them and reads neither, incrementally or on a rebuild."""
    r = irepo_indexed
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntype: reference\n---\nzebracorn password\n")
    (r.root / "knowledge/reference/linked.md").symlink_to(outside / "secret.md")
    (r.root / "knowledge/linkdir").symlink_to(outside)
    r.commit("links")  # --no-verify: what a push past the hooks would bring
    proc = run_memory(r.root, "index", "--json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["mode"] == "incremental" and res["added"] == 0
    [note] = [n for n in res["notes"] if "symlink" in n]
    assert "skipped 2 symlink(s)" in note and "knowledge/reference/linked.md" in note
    proc = run_memory(r.root, "index", "--rebuild")
    assert proc.returncode == 0 and "skipped 2 symlink(s)" in proc.stdout, proc.stdout
    hits = run_memory(r.root, "search", "zebracorn", "--json")
    assert hits.returncode == 0 and "zebracorn" not in hits.stdout
    paths = [row[0] for row in r.snapshot()["documents"]]
    assert not any("linked" in p or "linkdir" in p for p in paths)


def test_a_write_commits_rolls_back_and_raises_the_blocks_own_error(tmp_path: Path) -> None:
    """``db.write``: the block's rows are committed, or none of them; when SQLite has
    already rolled the transaction back itself, the error raised is the block's, not
    "cannot rollback - no transaction is active" (seen once under 8 writers)."""
    from memrepo.index import db as dbmod

    con = dbmod.connect(tmp_path / "t.db")
    con.execute("CREATE TABLE t (x INTEGER)")
    with dbmod.write(con):
        con.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(ValueError, match="half way"), dbmod.write(con):
        con.execute("INSERT INTO t VALUES (2)")
        raise ValueError("half way")
    with pytest.raises(ValueError, match="rolled back already"), dbmod.write(con):
        con.execute("INSERT INTO t VALUES (3)")
        con.execute("ROLLBACK")  # what SQLite does itself on a full disk or an I/O error
        raise ValueError("rolled back already")
    assert not con.in_transaction
    assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
    con.close()
