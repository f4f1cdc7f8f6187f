#!/usr/bin/env python3
"""What a prompt's length costs: `memory search` and the prompt hook's recall, two source
trees side by side.

    python bench/perf/bench_long_prompt.py --a /tmp/old/ --b . --size 100000
    python bench/perf/bench_long_prompt.py --size 10000 --rounds 2       # this checkout alone

Agents paste logs, diffs and files into a prompt; every search word used to join one
FTS5 OR query, whose cost is its matches times its words. The prompts are passages of
the generated corpus's transcripts (their text, not their frontmatter) of 100 to 6,000
characters. Each round runs one child process per tree (``PYTHONPATH`` set to the tree,
which goes first alternating) on the FTS5-alone repo of ``corpus.ensure_memory_repo``:
a ``Searcher`` search of 10 results and the recall of the UserPromptSubmit hook
(``agents.recall.recall``: compile's P2 and P3, then the shared-word filter), each prompt once
after one untimed warm-up search. Printed: medians per prompt length, and B / A.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

LENGTHS = (100, 500, 2000, 6000)


def prompts(repo: Path, seed: int = 3) -> list[str]:
    """One passage of each LENGTHS of a random transcript's text (after its first 400
    characters: the frontmatter's words are in every transcript)."""
    files = sorted((repo / "raw" / "conversations").rglob("*.md"))
    rng = random.Random(seed)
    out = []
    for n in LENGTHS:
        text = ""
        while len(text) < n:
            text = rng.choice(files).read_text(encoding="utf-8")[400 : 400 + n]
        out.append(text)
    return out


def child(repo: Path) -> dict[str, dict[str, float]]:
    """Times of one search and one recall per prompt length, in ms, in this process."""
    try:
        from memrepo.agents.recall import recall
    except ImportError:  # an A tree from before agents/recall.py
        from memrepo.agents.events import recall  # type: ignore[attr-defined,no-redef]
    from memrepo.index.search import Searcher

    out: dict[str, dict[str, float]] = defaultdict(dict)
    searcher = Searcher(repo)
    try:
        searcher.search("deploy rollback", 10)  # the first query opens pages for all
        for text in prompts(repo):
            t0 = time.perf_counter()
            searcher.search(text, 10)
            out["search"][str(len(text))] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            recall(repo, "claude-code", {"prompt": text})
            out["recall"][str(len(text))] = (time.perf_counter() - t0) * 1000
    finally:
        searcher.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    trees_mod.add_options(ap)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    add_record_option(ap)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    from corpus import ensure_memory_repo

    repo = ensure_memory_repo(args.size)
    subprocess.run([sys.executable, "-m", "memrepo", "index"], cwd=repo, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(args.b.resolve())})
    trees = trees_mod.chosen(args)
    results: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in range(args.rounds):
        for name in trees_mod.in_turn(trees, r):
            for what, by_len in trees_mod.run_child(__file__, trees[name], str(repo)).items():
                for length, ms in by_len.items():
                    results[(name, what, length)].append(ms)
    print(f"{args.size} files, {args.rounds} rounds; medians, ms")
    print(f"{'what':<8} {'chars':>6}" + "".join(f"{n:>10}" for n in trees)
          + ("   B / A" if len(trees) == 2 else ""))
    figures: dict[str, object] = {"files": args.size, "rounds": args.rounds,
                                  "trees": {n: str(t) for n, t in trees.items()}}
    for what, length in sorted({(w, n) for _, w, n in results}, key=lambda t: (t[0], int(t[1]))):
        samples = {n: results[(n, what, length)] for n in trees}
        print(trees_mod.row(f"{what:<8} {length:>6}", samples, 10, 0))
        figures[f"{what} {length} chars, median ms"] = {
            n: statistics.median(xs) for n, xs in samples.items() if xs}
    record(__file__, figures, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
