"""Two installs of memrepo side by side in one run: did a change make the hot paths slower?

For each repo size, rounds alternate A and B (which goes first alternates too: the second
of a pair meets warmer caches), each an installed ``memory`` (e.g. the wheel
of the last release and the wheel of this checkout) on the same generated memory repo:
  pre-commit stage   git commit of 10 files with the direct hooks, minus --no-verify
  post-commit stage  git commit --no-verify, minus a commit with no hooks at all
  search             one `memory search` process
  compile            one `memory compile` process (UserPromptSubmit's work)
The direct hooks call `memory` from PATH, so each round puts A's or B's bin first.
Medians are printed with the ratio B / A (1.00 = no change; the machine is noisy, so read
anything within ~10 % as noise).

    python bench/bench_ab.py --a /tmp/old-venv --b .venv                 # 10K and 100K
    python bench/bench_ab.py --a OLD --b NEW --sizes 10000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_commit import _stage_ten
from corpus import ensure_memory_repo, git

HOOKS = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "# memrepo direct hook"
QUERIES = ("deploy rollback", "payment webhook retries", "who owns the ledger", "kubernetes")


def _direct_hooks(repo: Path) -> None:
    """The direct runner's shims (the same text in every version): `exec memory hook …`."""
    hooks = Path(git(repo, "rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else repo / hooks
    for kind in HOOKS:
        call = "pre-commit --index" if kind == "pre-commit" else f'{kind} "$@"'
        path = hooks / kind
        path.write_text(f"#!/bin/sh\n{MARKER} (git.hook_runner: direct)\nexec memory hook {call}\n")
        path.chmod(0o755)


def _ms(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    dt = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return dt


def measure(n: int, rounds: int, installs: dict[str, Path]) -> dict[str, dict[str, float]]:
    repo = ensure_memory_repo(n)
    _direct_hooks(repo)
    times: dict[str, dict[str, list[float]]] = {k: {} for k in installs}
    with tempfile.TemporaryDirectory() as empty:
        for r in range(rounds + 1):  # round 0 warms caches and the index up
            order = list(installs.items())
            for name, venv in order if r % 2 else order[::-1]:  # neither always goes first
                env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
                tag = f"{r}-{name}-{time.time_ns()}"
                got = {}
                commit = ["git", "commit", "-q", "-m", f"memory: bench {tag}"]
                _stage_ten(repo, tag + "b")
                bare = _ms(["git", "-c", f"core.hooksPath={empty}", *commit[1:]], repo, env)
                _stage_ten(repo, tag + "n")
                no_verify = _ms([*commit, "--no-verify"], repo, env)
                _stage_ten(repo, tag + "h")
                hooked = _ms(commit, repo, env)
                got["pre-commit stage"] = hooked - no_verify
                got["post-commit stage"] = no_verify - bare
                memory = str(venv / "bin" / "memory")
                got["search process"] = _ms(
                    [memory, "search", "--limit", "10", QUERIES[r % len(QUERIES)]], repo, env
                )
                got["compile process"] = _ms(
                    [memory, "compile", "--budget", "2000", QUERIES[r % len(QUERIES)]], repo, env
                )
                if r:
                    for k, v in got.items():
                        times[name].setdefault(k, []).append(v)
    return {name: {k: statistics.median(v) for k, v in by.items()} for name, by in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--a", required=True, help="virtualenv of install A (the baseline)")
    ap.add_argument("--b", required=True, help="virtualenv of install B (the change)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    installs = {"A": Path(args.a).resolve(), "B": Path(args.b).resolve()}
    for n in args.sizes:
        res = measure(n, args.rounds, installs)
        print(f"\n{n:,} files, medians of {args.rounds} rounds (ms)")
        print(f"{'':20} {'A':>9} {'B':>9} {'B/A':>6}")
        for k in res["A"]:
            a, b = res["A"][k], res["B"][k]
            print(f"{k:20} {a:9.1f} {b:9.1f} {b / a if a > 0 else float('nan'):6.2f}")


if __name__ == "__main__":
    main()
