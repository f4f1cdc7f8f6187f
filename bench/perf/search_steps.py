#!/usr/bin/env python3
"""Where a search through ``memory serve`` spends its time, step by step, and two source
trees of memrepo side by side against one warmed server.

    nice -n 10 python bench/perf/search_steps.py                              # this checkout, 100K
    python bench/perf/search_steps.py --a /tmp/old/ --b . --rounds 8 --size 10000
    python bench/perf/search_steps.py --warm 60       # each searcher first runs 60 other prompts

One server holds the MiniLM-shaped copy of the generated repo (``bench_resident.py``
builds it); timing starts once its start-up catch-up is over, and it is warmed by 60
searches first. It runs from tree A when there is one: the
baseline release's protocol, which a newer client must still speak (a client-side A/B;
an older client against a newer server would miss what the newer server stopped
sending). Each round runs one child process per tree (``PYTHONPATH`` set to the tree,
which goes first alternating: the second of a pair meets pages the first read) on 15
messages neither has searched.
A child times each query twice in one ``Searcher``: *new* (the server embeds the text;
its pages may be cold) and *again* (the same texts: the server's cache answers and the
pages are warm), with the time of each searcher step
that exists in its tree, summed over the step's calls in the query; a step called inside
another is named ``outer>inner`` (``_expanded>_fts``: the neighbours' FTS5 query).
The ``cpu:`` rows are what a query cost in CPU (ms): the searching process, the server
(its process, and the thread that answered each op; onnxruntime's own threads count in
the process only), and both: on 2 cores no mean wall time can be under half their sum.
Printed: medians per tree and position, and B / A. The *first* of a pair is the new
prompt proper: the second meets the server's cached vectors of the same texts. A step's
``… ends at`` row is when its last call in the query ended, in ms from the query's start:
the timeline (``_vectors>wait nearest ends at`` is when the server's reply was read).
``--warm N``: each child first searches N other new messages, untimed: a searcher that
has lived a while (``memory mcp``'s) has its pages mapped, its SQLite cache and word
counts filled, where a fresh one pays for them in its first queries (with the server
settled, new prompts read the same at 0, 60 and 300: docs/search.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
import trees as trees_mod  # noqa: E402
from results import add_record_option, record  # noqa: E402

#: the searcher's steps timed (a step a tree does not have is skipped)
STEPS = ("_vector_text", "_ask_early", "_rarest", "_prune_common", "_fts", "_cjk", "_expanded",
         "_vectors", "_score_vectors", "_signals")
MODULE_STEPS = ("nearest_k", "fuse", "date_ranges", "rank", "to_hits")
QUERIES = 15


def _client() -> object:
    """The resident server's client module: ``memrepo.index.remote`` (an A tree from before
    the ``memrepo.resident`` package calls it ``memrepo.index.resident``)."""
    try:
        from memrepo.index import remote
    except ImportError:
        from memrepo.index import resident as remote  # type: ignore[attr-defined,no-redef]
    return remote


def _serve() -> object:
    """Starting and stopping a server: ``memrepo.resident.serve`` (``memrepo.index.serve``
    before)."""
    try:
        from memrepo.resident import serve
    except ImportError:
        from memrepo.index import serve  # type: ignore[attr-defined,no-redef]
    return serve


def child(repo: Path, seed: int) -> dict[str, dict[str, float]]:
    """Time 15 new messages, then the same again, in one Searcher of this tree."""
    from bench_resident import configured_searcher
    from corpus import messages

    from memrepo.index import search as S

    spent: dict[str, list[float]] = defaultdict(list)  # step -> its time in each query
    now: dict[str, float] = defaultdict(float)  # step -> its time in this query so far
    ends: dict[str, float] = {}  # step -> when its last call in this query ended
    started = [0.0]  # when this query started
    active: list[str] = []  # the steps running: a step inside another is "outer>inner"

    def timed(owner: object, name: str, label: str | None = None) -> None:
        fn = getattr(owner, name, None)
        if fn is None:
            return
        label = label or name

        def wrapper(*a: object, **k: object) -> object:
            key = f"{active[-1]}>{label}" if active else label
            active.append(label)
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                t1 = time.perf_counter()
                now[key] += (t1 - t0) * 1000
                ends[key] = (t1 - started[0]) * 1000
                active.pop()

        setattr(owner, name, wrapper)

    for name in STEPS:
        timed(S.Searcher, name)
    for name in MODULE_STEPS:
        timed(S, name)
    try:  # a tree that chooses a prompt's words outside the Searcher
        from memrepo.index.wordcounts import WordCounts
    except ImportError:
        WordCounts = None
    timed(WordCounts, "rarest", "_rarest")
    timed(WordCounts, "prune_common", "_prune_common")
    remote = _client()
    # after FTS5, if at all: a hosted server's thread, or the reply read from the socket
    timed(getattr(S, "_Early", None) or getattr(remote, "Early", None), "result",
          "wait nearest")
    timed(getattr(remote, "NearestRequest", None), "result", "wait nearest")
    timed(getattr(S, "q", None), "terms", "query terms")
    s = configured_searcher(repo)
    s.search("hello world")
    size = int(os.environ["STEPS_SIZE"])
    for q in messages(int(os.environ.get("STEPS_WARM", "0")), size, seed=seed + 500_000):
        s.search(q)
    qs = messages(QUERIES, size, seed=seed)
    out = {}
    for phase in ("new", "again"):
        spent.clear()
        now.clear()
        total = []
        before = _cpu(repo)
        for q in qs:
            t0 = started[0] = time.perf_counter()
            hits = s.search(q)
            total.append((time.perf_counter() - t0) * 1000)
            for step, ms in now.items():
                spent[step].append(ms)
            for step, ms in ends.items():  # the timeline: what the search waits on
                spent[f"{step} ends at"].append(ms)
            now.clear()
            ends.clear()
            assert hits and hits[0].explain["vectors"] == "on", s.notes
        out[phase] = {"total": statistics.median(total),
                      **{k: statistics.median(v) for k, v in spent.items()},
                      **_cpu_per_query(before, _cpu(repo), len(qs))}
    s.close()
    return out


def _cpu(repo: Path) -> dict[str, float]:
    """CPU seconds so far: this process's, the server's, and the server's threads' per op
    (``memory serve --status``'s ``ops``; a server older than it has none)."""
    got = {"searcher": time.process_time()}
    st = _client().ping(repo, budget=2.0) or {}  # type: ignore[attr-defined]
    if "cpu_s" in st:
        got["server"] = st["cpu_s"]
        for op, o in st.get("ops", {}).items():
            if op != "ping":  # this bench's own
                got[f"server: {op}"] = o["cpu_s"]  # the thread that answered it
    return got


def _cpu_per_query(before: dict[str, float], after: dict[str, float], n: int
                   ) -> dict[str, float]:
    """The CPU a query cost each process (ms), and both together: what 2 cores share."""
    out = {f"cpu: {k}": (after[k] - before.get(k, 0.0)) * 1000 / n for k in after}
    if "server" in after:
        out["cpu: searcher + server"] = out["cpu: searcher"] + out["cpu: server"]
    return out


def run_child(tree: Path, repo: Path, seed: int, size: int, warm: int = 0
              ) -> dict[str, dict[str, float]]:
    return trees_mod.run_child(__file__, tree, str(repo), str(seed),
                               env={"STEPS_SIZE": str(size), "STEPS_WARM": str(warm)})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    trees_mod.add_options(ap)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warm", type=int, default=0,
                    help="other new messages each searcher runs before it is timed")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    add_record_option(ap)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child[0]), int(args.child[1]))))
        return 0
    from bench_resident import minilm_copy, wait_nearest, wait_settled
    from corpus import ensure_memory_repo

    serve = _serve()
    repo = minilm_copy(ensure_memory_repo(args.size), args.size)
    trees = trees_mod.chosen(args)
    seed0 = int(time.time()) % 100_000 * 10  # messages no earlier run searched
    serve.stop(repo)
    server_tree = trees.get("A", trees["B"])
    subprocess.run([sys.executable, "-m", "memrepo", "serve", "--detach", "--idle", "900"],
                   cwd=repo, env={**os.environ, "PYTHONPATH": str(server_tree)}, check=True,
                   capture_output=True)
    results: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    try:
        wait_nearest(repo, lambda nr: nr.get("state") == "ready")
        wait_settled(repo)
        for k in range(2):  # the server answers as it runs, not as it starts
            run_child(trees["B"], repo, seed0 + 1000 + k, args.size, args.warm)
        for r in range(args.rounds):
            for pos, name in enumerate(trees_mod.in_turn(trees, r)):
                got = run_child(trees[name], repo, seed0 + r, args.size, args.warm)
                for phase, steps in got.items():
                    for step, ms in steps.items():
                        results[(name, f"{phase}, {'first' if pos == 0 else 'second'}",
                                 step)].append(ms)
                        results[(name, phase, step)].append(ms)
    finally:
        serve.stop(repo)
    rows = sorted({(ph, st) for _, ph, st in results}, key=lambda t: (t[0], t[1] != "total", t[1]))
    print(f"{args.size} files, {args.rounds} rounds of {QUERIES} messages"
          f"{f' after {args.warm} others' if args.warm else ''}; medians, ms")
    print(f"{'phase':<16} {'step':<36}" + "".join(f"{n:>8}" for n in trees)
          + ("   B / A" if len(trees) == 2 else ""))
    figures: dict[str, object] = {"files": args.size, "rounds": args.rounds, "warm": args.warm,
                                  "trees": {n: str(t) for n, t in trees.items()}}
    for phase, step in rows:
        samples = {n: results.get((n, phase, step), []) for n in trees}
        print(trees_mod.row(f"{phase:<16} {step:<36}", samples))
        figures[f"{phase}: {step}, median ms"] = {
            n: statistics.median(xs) for n, xs in samples.items() if xs}
    record(__file__, figures, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
