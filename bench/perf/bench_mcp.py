#!/usr/bin/env python3
"""``memory mcp``: ``memory_search`` latency once warm, server start to first answer, and
an agent's start of ``memory mcp`` to ``initialize`` answered, on the 10K- and 100K-file
generated repos.

    nice -n 10 python bench/perf/bench_mcp.py                    # 10K and 100K, 150 queries
    nice -n 10 python bench/perf/bench_mcp.py --sizes 10000 --queries 30
    python bench/perf/bench_mcp.py --sizes 10000 --init-only --inits 20

Why: the MCP server is resident so that a model's search costs the query, not a Python
start (goal: ``memory_search`` p50 <= 20 ms at 100K files once warm, issue #13). Rows:

- ``Search.search`` in-process: the floor (the index alone, no MCP, hits not logged);
- ``memory_search`` through the SDK's in-process ``Client`` (mode auto: direct dispatch;
  legacy: JSON-RPC over memory streams), warm, hits logged as for a user;
- the same over real stdio to a ``memory mcp`` child (what Claude Code talks to);
- start to first answer: spawn ``memory --repo R mcp``, handshake, list tools, one search;
- spawn to ``initialize`` answered (issue 36: an agent waits for it at every start; goal
  p50 <= 250 ms with the resident server up), raw JSON-RPC over pipes so no client
  library is timed: ``memory mcp`` relayed to the clone's resident server
  (:mod:`memrepo.agents.mcp_front`), plain and in a namespace (``--namespace``); the
  same with none (first use: the server runs in-process and a resident starts
  meanwhile, stopped again after each start); with
  ``MEMREPO_NO_RESIDENT=1`` (in-process, as before the front); and a minimal server on the
  same SDK (one tool, the venv's python), the floor of an in-process server.

The warm rows are measured side by side: every query goes through the four paths in a
rotating order, after one unmeasured pass over all queries (the index's pages in the OS
cache) and five per path (each server's connection and caches). The start rows too: each
start goes through the five in a rotating order. The stdio rows run with the clone's
resident server up (the bench starts it and stops it at the end), as an agent finds it
once ``memory mcp`` has run there.

Repos: ``bench/common/corpus.py``'s ``ensure_memory_repo(n)`` under /tmp/memrepo-bench (built
when missing for 10K; a missing 100K repo is reported and skipped: it takes long to
build). Queries are made of the corpus's own topic words, so they hit real documents.
The hits each search logs go to raw/signals/hits-*.jsonl; the bench puts those files
back as it found them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from corpus import REPOS, ensure_memory_repo, label, messages, pct  # noqa: E402
from results import add_record_option, record  # noqa: E402


def summary(xs: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(xs), "p95": pct(xs, 95), "n": len(xs)}


#: the minimal server on the same SDK: what any in-process MCP server costs to start
MINIMAL_SERVER = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("minimal")


@app.tool()
def echo(text: str) -> str:
    \"\"\"Say it back.\"\"\"
    return text


app.run("stdio")
"""
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}).encode() + b"\n"
RESIDENT_WAIT_S = 120.0


def repo_for(n: int) -> Path | None:
    """The bench repo, built when missing for 10K; None for a 100K one not built yet."""
    repo = REPOS / f"repo-{label(n)}"
    if n > 10_000 and not (repo / ".git" / "bench-ready").exists():
        return None
    return ensure_memory_repo(n)


class HitsFiles:
    """raw/signals/hits-*.jsonl put back as found (removed when the bench made them)."""

    def __init__(self, repo: Path):
        self.dir = repo / "raw" / "signals"
        self.had_dir = self.dir.exists()
        self.sizes = {p: p.stat().st_size for p in self.dir.glob("hits-*.jsonl")}

    def restore(self) -> None:
        for p in self.dir.glob("hits-*.jsonl"):
            if p not in self.sizes:
                p.unlink()
            else:
                with open(p, "r+b") as fh:
                    fh.truncate(self.sizes[p])
        if not self.had_dir and self.dir.exists() and not any(self.dir.iterdir()):
            self.dir.rmdir()


async def bench_warm(repo: Path, qs: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """Each query through every path in turn (the order rotating), all of them open at
    once: the machine's load and the page cache drift alike for every row."""
    from mcp import Client, StdioServerParameters

    from memrepo.agents.mcp_server import build_server
    from memrepo.index.ranking import settings_from_config
    from memrepo.index.search import Search
    from memrepo.repo import discover
    from memrepo.resources import memory_command

    cfg = discover(repo).config["search"]
    cmd = memory_command()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "--repo", str(repo), "mcp"])
    servers = [build_server(repo), build_server(repo)]
    times: dict[str, list[float]] = {"floor": [], "auto": [], "legacy": [], "stdio warm": []}
    try:
        with Search(repo, settings_from_config(cfg), cfg["embedder"]) as floor:
            async with Client(servers[0], mode="auto") as auto, \
                    Client(servers[1], mode="legacy") as legacy, Client(params) as stdio:
                clients = {"auto": auto, "legacy": legacy, "stdio warm": stdio}

                async def one(name: str, q: str) -> float:
                    t0 = time.perf_counter()
                    if name == "floor":
                        floor.search(q, 10)
                    else:
                        r = await clients[name].call_tool("memory_search", {"query": q})
                        if r.is_error:
                            sys.exit(f"memory_search failed: {r.content[0].text}")
                    return (time.perf_counter() - t0) * 1000

                for q in qs:  # the index's pages into the OS cache
                    floor.search(q, 10)
                for name in clients:
                    for q in qs[:5]:
                        await one(name, q)
                order = list(times)
                for _ in range(rounds):
                    for i, q in enumerate(qs):
                        for name in order[i % 4:] + order[: i % 4]:
                            times[name].append(await one(name, q))
    finally:
        for srv in servers:
            srv.memrepo.close()  # type: ignore[attr-defined]
    return {name: summary(xs) for name, xs in times.items()}


async def bench_start(repo: Path, qs: list[str], starts: int) -> dict[str, dict[str, float]]:
    """Spawn ``memory mcp`` to initialized, and to its first search answered."""
    from mcp import Client, StdioServerParameters

    from memrepo.resources import memory_command

    cmd = memory_command()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "--repo", str(repo), "mcp"])
    first, ready = [], []
    for i in range(starts):
        t0 = time.perf_counter()
        async with Client(params) as client:
            ready.append((time.perf_counter() - t0) * 1000)
            await client.list_tools()
            r = await client.call_tool("memory_search", {"query": qs[i % len(qs)]})
            first.append((time.perf_counter() - t0) * 1000)
            if r.is_error:
                sys.exit(f"memory_search failed: {r.content[0].text}")
    return {"stdio ready": summary(ready), "stdio first": summary(first)}


def to_initialized(argv: list[str], env: dict[str, str] | None = None) -> float:
    """ms from spawning ``argv`` to its answer to ``initialize`` (one JSON-RPC line
    written, the first line read); then stdin is closed and the process waited for."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    ms = (time.perf_counter() - t0) * 1000
    proc.stdin.close()
    proc.wait(60)
    if b'"result"' not in line:
        sys.exit(f"{argv}: no answer to initialize: {line[:200]!r}")
    return ms


def resident_up(repo: Path, front: list[str], spawn: bool = True) -> None:
    """The clone's resident server running and its MCP server built (one unmeasured
    start through it waits for that); started here when none runs and ``spawn``."""
    from memrepo.index.remote import ping, private_dir, serve_dir
    from memrepo.spawn import detached

    if spawn and ping(repo) is None:
        sdir = serve_dir(repo)
        private_dir(sdir)
        detached([sys.executable, "-m", "memrepo.agents.resident", "serve", str(repo),
                  "--idle", "600"], sdir / "serve.log")
    deadline = time.monotonic() + RESIDENT_WAIT_S
    while (st := ping(repo)) is None or "mcp" not in st.get("services", {}):
        if time.monotonic() > deadline:
            sys.exit(f"{repo}: no resident server with MCP sessions came up")
        time.sleep(0.1)
    to_initialized(front)


def resident_down(repo: Path) -> None:
    from memrepo.resident.serve import stop

    stop(repo)


def bench_init(repo: Path, starts: int) -> dict[str, dict[str, float]]:
    """Spawn to ``initialize`` answered, five ways side by side (rotating order)."""
    from memrepo.resources import memory_command

    front = [*memory_command(), "--repo", str(repo), "mcp"]
    agent = [*memory_command(), "--repo", str(repo), "--namespace", "bench", "mcp"]
    env = {k: v for k, v in os.environ.items() if k not in ("MEMORY_DEBUG", "MEMORY_REPO")}
    inproc = {**env, "MEMREPO_NO_RESIDENT": "1"}
    times: dict[str, list[float]] = {"resident": [], "resident, namespaced": [],
                                     "first use": [], "in-process": [], "minimal SDK": []}
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        runs = {
            "resident": lambda: to_initialized(front, env),
            "resident, namespaced": lambda: to_initialized(agent, env),
            "first use": lambda: to_initialized(front, env),
            "in-process": lambda: to_initialized(front, inproc),
            "minimal SDK": lambda: to_initialized([sys.executable, str(minimal)], env),
        }
        to_initialized([sys.executable, str(minimal)], env)  # the SDK's files in the cache
        order = list(times)
        for i in range(starts):
            for name in order[i % len(order):] + order[: i % len(order)]:
                if name.startswith("resident"):
                    resident_up(repo, front)
                elif name == "first use":
                    resident_down(repo)
                times[name].append(runs[name]())
                if name == "first use":  # the one it started: up, then used by the next
                    resident_up(repo, front, spawn=False)
    return {name: summary(xs) for name, xs in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    # distinct queries, each asked once per round: a repeated query finds its pages in
    # SQLite's cache, which flatters every row alike
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--starts", type=int, default=3, help="server starts timed per size")
    ap.add_argument("--inits", type=int, default=20,
                    help="starts to initialize timed per way and size")
    ap.add_argument("--init-only", action="store_true",
                    help="only the start to initialize rows")
    add_record_option(ap)
    args = ap.parse_args()

    results: dict[int, dict[str, dict[str, float]]] = {}
    for n in args.sizes:
        repo = repo_for(n)
        if repo is None:
            print(f"{label(n)}: no repo at {REPOS / ('repo-' + label(n))} "
                  "(bench/common/corpus.py ensure_memory_repo builds it); skipped", file=sys.stderr)
            continue
        if not (repo / "memory.db").exists():
            sys.exit(f"{repo}: no memory.db; run 'memory index' there first")
        qs = messages(args.queries, n)
        hits = HitsFiles(repo)
        from memrepo.resources import memory_command

        try:
            resident_up(repo, [*memory_command(), "--repo", str(repo), "mcp"])
            res = {} if args.init_only else anyio.run(bench_warm, repo, qs, args.rounds)
            if not args.init_only:
                res.update(anyio.run(bench_start, repo, qs, args.starts))
            res.update({f"init {k}": v for k, v in bench_init(repo, args.inits).items()})
        finally:
            resident_down(repo)
            hits.restore()
        results[n] = res

    names = [
        ("floor", "Search.search in-process (no MCP)"),
        ("auto", "memory_search, in-process Client auto"),
        ("legacy", "memory_search, in-process Client legacy"),
        ("stdio warm", "memory_search over stdio, warm"),
        ("stdio ready", "spawn -> initialized (stdio)"),
        ("stdio first", "spawn -> first search answered"),
        ("init resident", "spawn -> initialize: memory mcp, resident"),
        ("init resident, namespaced", "spawn -> initialize: namespaced, resident"),
        ("init first use", "spawn -> initialize: memory mcp, none yet"),
        ("init in-process", "spawn -> initialize: MEMREPO_NO_RESIDENT"),
        ("init minimal SDK", "spawn -> initialize: minimal SDK server"),
    ]
    sizes = list(results)
    print(f"memory mcp, {args.queries} queries x {args.rounds} rounds, {args.inits} starts "
          "to initialize per way (ms, p50 / p95)")
    print(f"{'measure':42}" + "".join(f"{label(n):>18}" for n in sizes))
    for key, title in names:
        if not all(key in results[n] for n in sizes):
            continue
        cells = "".join(f"{results[n][key]['p50']:9.1f} /{results[n][key]['p95']:7.1f}"
                        for n in sizes)
        print(f"{title:42}{cells}")
    big = max(sizes, default=None)
    if big is not None and "auto" in results[big]:
        p50 = results[big]["auto"]["p50"]
        ok = "yes" if p50 <= 20 else "NO"
        print(f"goal: memory_search p50 <= 20 ms warm at {label(big)}: {p50:.1f} ms  {ok}")
    for n in sizes:
        mine, floor = results[n]["init resident"]["p50"], results[n]["init minimal SDK"]["p50"]
        ok = "yes" if mine <= 250 else "NO"
        print(f"goal: memory mcp initialize p50 <= 250 ms with the resident at {label(n)}: "
              f"{mine:.1f} ms ({mine / floor:.2f} of the minimal SDK server's)  {ok}")
    record(__file__, {"queries": args.queries, "rounds": args.rounds, "inits": args.inits,
                      **{label(n): r for n, r in results.items()}}, args)


if __name__ == "__main__":
    main()
