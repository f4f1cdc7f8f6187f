#!/usr/bin/env python3
"""``memory compile`` on a 10K-file generated repo, and topic matching with 100 topics.

    nice -n 10 python bench/perf/bench_compile.py                  # 50 queries, 10k files
    nice -n 10 python bench/perf/bench_compile.py --queries 20 --rounds 3

Why these three numbers: an agent runtime calls ``memory compile`` before every model
call, so its latency is added to every turn (goal: p50 < 50 ms in-process, < 200 ms as a
process), and the watchers run on every message (goal: < 5 ms per message, 100 topics).

The repo is ``bench/common/corpus.py``'s ``ensure_memory_repo(10_000)`` (cached under
/tmp/memrepo-bench); its search index is built first when missing, since P3 reads it.
Queries are drawn from the corpus's own topic words (bench/corpus/n10k.files.tsv), so
they hit real documents. Compiling records hits, as it does for a user (signal lines
under raw/signals/, removed afterwards when the bench created them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memrepo.resources import memory_command

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from corpus import CACHE, ensure_memory_repo, label, messages, pct  # noqa: E402
from results import add_record_option, record  # noqa: E402


def ensure_index(repo: Path) -> None:
    """``memory index`` (incremental; a rebuild when missing or of an older schema)."""
    print(f"updating the search index of {repo} …", file=sys.stderr)
    subprocess.run([*memory_command(), "index"], cwd=repo, check=True, capture_output=True)


def bench_in_process(repo: Path, qs: list[str], rounds: int) -> dict[str, float]:
    from memrepo.context.compiler import CompileRequest, compile_context
    from memrepo.repo import discover

    r = discover(repo)
    compile_context(r, CompileRequest(qs[0]))  # warm: imports, topic and index caches
    times, tokens, p3 = [], [], []
    for _ in range(rounds):
        for q in qs:
            t0 = time.perf_counter()
            res = compile_context(discover(repo), CompileRequest(q))
            times.append((time.perf_counter() - t0) * 1000)
            tokens.append(res.tokens)
            p3.append(sum(1 for s in res.sections if s.slot == 3))
    return {
        "p50": statistics.median(times),
        "p95": pct(times, 95),
        "tokens_mean": statistics.mean(tokens),
        "p3_sections_mean": statistics.mean(p3),
    }


def process_env(pyc: bool, cache: Path) -> dict[str, str]:
    """The environment of the ``memory`` processes; with ``pyc``, bytecode is cached.

    A pip-installed memrepo has its .pyc files; an environment with
    PYTHONDONTWRITEBYTECODE (this sandbox's) recompiles every module on every start,
    ~50 ms of a ~200 ms process. The cache goes to a temp dir, not into the source tree.
    """
    env = dict(os.environ)
    if pyc:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def bench_process(repo: Path, qs: list[str], env: dict[str, str]) -> dict[str, float]:
    cmd = [*memory_command(), "compile"]
    subprocess.run([*cmd, qs[0], "--json"], cwd=repo, env=env, capture_output=True)  # warm
    times = []
    for q in qs:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [*cmd, q, "--json"], cwd=repo, env=env, capture_output=True, text=True
        )
        times.append((time.perf_counter() - t0) * 1000)
        if proc.returncode != 0:
            sys.exit(f"memory compile failed: {proc.stderr}")
        json.loads(proc.stdout)
    return {"p50": statistics.median(times), "p95": pct(times, 95)}


def write_topics(root: Path, n: int, seed: int = 7) -> None:
    """``n`` topics of pattern and keyword triggers, descriptions from corpus words."""
    rows = (CACHE / f"{label(10_000)}.files.tsv").read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    words = sorted({w for row in rows for w in row.split("\t")[3].split()})
    base = root / "topics"
    base.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        kw = rng.sample(words, 4)
        pat = "|".join(rng.sample(words, 3))
        text = (
            f"---\ntype: topic\ndescription: Work on {kw[0]} {kw[1]} and the {kw[2]} service.\n"
            f'triggers:\n  - type: pattern\n    match: "\\\\b({pat})\\\\b"\n'
            f"  - type: keyword\n    keywords: [{kw[0]}, {kw[3]}]\n"
            f"activation: auto\npriority: medium\n---\n\n# Topic {i}\n\n"
            f"When {kw[0]} comes up, check the {kw[1]} notes and the {kw[2]} runbook first.\n"
        )
        (base / f"topic-{i:03d}.md").write_text(text, encoding="utf-8")


def bench_match(qs: list[str], n_topics: int, rounds: int) -> dict[str, float]:
    from memrepo.config import defaults
    from memrepo.context.watchers.match import match_topics

    cfg = defaults()["watchers"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_topics(root, n_topics)
        r = match_topics(root, qs[0], config=cfg)  # warm: load and compile the topics
        assert not r.problems, r.problems
        times, active = [], []
        for _ in range(rounds):
            for q in qs:
                t0 = time.perf_counter()
                r = match_topics(root, q, config=cfg)
                times.append((time.perf_counter() - t0) * 1000)
                active.append(len(r.activated))
    return {
        "p50": statistics.median(times),
        "p95": pct(times, 95),
        "activated_mean": statistics.mean(active),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3, help="in-process repetitions")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--json-out", help="also write the figures to this file")
    add_record_option(ap)
    args = ap.parse_args(argv)
    repo = ensure_memory_repo(10_000)
    ensure_index(repo)
    qs = messages(args.queries, seed=6)
    signals = repo / "raw" / "signals"
    had_signals = signals.exists()
    try:
        with tempfile.TemporaryDirectory() as pyc:
            res = {
                "in_process": bench_in_process(repo, qs, args.rounds),
                "process": bench_process(repo, qs, process_env(True, Path(pyc))),
                "process_no_pyc": bench_process(repo, qs, process_env(False, Path(pyc))),
                "match": bench_match(qs, args.topics, args.rounds),
            }
    finally:
        if not had_signals:  # leave the shared bench repo as it was
            shutil.rmtree(signals, ignore_errors=True)
    rows = [
        ("compile in-process (ms)", res["in_process"], 50),
        ("compile whole process (ms)", res["process"], 200),
        ("  same without .pyc files", res["process_no_pyc"], 200),
        (f"topic match, {args.topics} topics (ms/msg)", res["match"], 5),
    ]
    print(f"memory compile, {label(10_000)} repo, {len(qs)} queries")
    print(f"{'measure':40} {'p50':>8} {'p95':>8} {'goal p50':>9}  ok")
    for name, r, goal in rows:
        ok = "yes" if r["p50"] < goal else "NO"
        print(f"{name:40} {r['p50']:8.1f} {r['p95']:8.1f} {'< ' + str(goal):>9}  {ok}")
    ip = res["in_process"]
    active = res["match"]["activated_mean"]
    print(
        f"(mean prompt {ip['tokens_mean']:.0f} tokens, {ip['p3_sections_mean']:.1f} P3 "
        f"sections; {active:.2f} topics activated per message)"
    )
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    record(__file__, {"files": 10_000, "queries": len(qs), **res}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
