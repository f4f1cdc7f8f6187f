"""The post-commit hook process alone, two installs side by side (CPU time, one run).

    python bench/ab/bench_post_commit_ab.py --a OLD_VENV --b NEW_VENV --size 10000

``bench/ab/bench_ab.py --separate-repos`` times a whole ``git commit`` with and without
hooks and subtracts, which on a busy machine moves by ±30 %; this times only
``memory hook post-commit`` after a 10-file commit made without hooks, rounds
alternating which install goes first, each on its own copy of the repo that
``bench_ab.py --separate-repos`` left (``/tmp/memrepo-bench/repo-n10k-A`` and ``-B``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from results import add_record_option, record

BENCH = Path("/tmp/memrepo-bench")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True, type=Path)
    ap.add_argument("--b", required=True, type=Path)
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=6)
    add_record_option(ap)
    args = ap.parse_args()
    tag = f"n{args.size // 1000}k"
    venvs = {"A": args.a, "B": args.b}
    cpu: dict[str, list[float]] = {"A": [], "B": []}
    for r in range(args.rounds):
        for v in ("A", "B") if r % 2 == 0 else ("B", "A"):
            repo = BENCH / f"repo-{tag}-{v}"
            for i in range(10):
                p = repo / f"knowledge/reference/pc-bench-{i}.md"
                head = "" if p.exists() else "---\ntype: reference\n---\n\n"
                with p.open("a", encoding="utf-8") as fh:
                    fh.write(f"{head}- round {r}, note {i}, about deploys\n")
            git = ["git", "-c", "core.hooksPath=/dev/null"]
            subprocess.run([*git, "add", "-A", "knowledge/reference"], cwd=repo, check=True)
            subprocess.run([*git, "commit", "-qm", "bench"], cwd=repo, check=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([str(venvs[v] / "bin/memory"), "hook", "post-commit"], cwd=repo,
                           check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[v].append((after.ru_utime + after.ru_stime
                           - before.ru_utime - before.ru_stime) * 1000)
    a, b = statistics.median(cpu["A"]), statistics.median(cpu["B"])
    print(f"{args.size:,} files, post-commit hook CPU median: A {a:.1f} ms, B {b:.1f} ms, "
          f"B/A {b / a:.2f}")
    record(__file__, {"files": args.size, "rounds": args.rounds,
                      "installs": {"A": str(args.a), "B": str(args.b)},
                      "post-commit CPU median ms": {"A": a, "B": b}, "B/A": b / a}, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
