"""What the hooks add to a 10-file `git commit`, at 10K and 100K files, side by side.

For each repo size and each hook runner (git.hook_runner: the pre-commit framework, or
the direct shims), rounds alternate three ways of committing 10 files (5 new notes,
5 edited project notes) and report medians:
  bare       git -c core.hooksPath=<empty dir> commit   (no hooks at all)
  no-verify  git commit --no-verify                     (post-commit hooks only)
  hooked     git commit                                 (pre-commit validators + post-commit)
The pre-commit stage's cost is hooked - no-verify; the post-commit stage's is
no-verify - bare (it includes keeping the search index up to date).
Goal (issue 2): the validators add < 300 ms, and the same at 10K and 100K (ratio <= 1.2).

    python bench/perf/bench_commit.py                # 10K and 100K (first run builds the corpora)
    python bench/perf/bench_commit.py --sizes 10000 --rounds 5
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from corpus import ensure_memory_repo, git
from results import add_record_option, record

from memrepo.hooks.install import install_hooks


def _stage_ten(repo: Path, tag: str) -> None:
    projects = sorted((repo / "knowledge" / "projects").rglob("*.md"))[:200]
    for i in range(5):
        p = repo / "knowledge" / "projects" / "bench" / f"note-{tag}-{i}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(
            f"---\ntype: project_context\nproject: bench\nupdated: 2026-02-16\n---\n\n"
            f"# Note {tag} {i}\n\n- a decision about the bench, round {tag}\n"
        )
        git(repo, "add", str(p.relative_to(repo)))
    for p in projects[(hash(tag) % 190) : (hash(tag) % 190) + 5]:
        with p.open("a") as fh:
            fh.write(f"- appended in round {tag}\n")
        git(repo, "add", str(p.relative_to(repo)))


def _timed_commit(repo: Path, mode: str, tag: str, env: dict[str, str], empty_hooks: str) -> float:
    _stage_ten(repo, tag)
    args = ["git"]
    if mode == "bare":
        args += ["-c", f"core.hooksPath={empty_hooks}"]
    args += ["commit", "-q", "-m", f"memory: bench {tag}"]
    if mode == "no-verify":
        args.append("--no-verify")
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"commit failed ({mode}):\n{proc.stdout}\n{proc.stderr}")
    return dt * 1000


def measure(n: int, rounds: int, runners: list[str]) -> dict[str, dict[str, float]]:
    repo = ensure_memory_repo(n)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    modes = ("bare", "no-verify", "hooked")
    times = {r: {m: [] for m in modes} for r in runners}
    with tempfile.TemporaryDirectory() as empty_hooks:
        for r in range(rounds + 1):  # round 0 warms caches, pre-commit and the index up
            for runner in runners:
                install_hooks(repo, runner)
                for m in modes:
                    ms = _timed_commit(
                        repo, m, f"{r}-{runner}-{m}-{time.time_ns()}", env, empty_hooks
                    )
                    if r:
                        times[runner][m].append(ms)
        install_hooks(repo, "pre-commit")
    out = {}
    for runner, by_mode in times.items():
        med = {m: statistics.median(v) for m, v in by_mode.items()}
        med["pre-commit stage"] = med["hooked"] - med["no-verify"]
        med["post-commit stage"] = med["no-verify"] - med["bare"]
        out[runner] = med
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runners", nargs="+", default=["pre-commit", "direct"])
    add_record_option(ap)
    a = ap.parse_args()
    results = {n: measure(n, a.rounds, a.runners) for n in a.sizes}
    cols = ("bare", "no-verify", "hooked", "pre-commit stage", "post-commit stage")
    print(f"\n10-file commit, median of {a.rounds} rounds (ms)")
    print(f"{'files':>8} {'runner':>11} " + " ".join(f"{c:>17}" for c in cols))
    for n, by_runner in results.items():
        for runner, r in by_runner.items():
            print(f"{n:>8} {runner:>11} " + " ".join(f"{r[c]:>17.0f}" for c in cols))
    if len(results) >= 2:
        lo, hi = min(results), max(results)
        for runner in a.runners:
            for stage in ("pre-commit stage", "post-commit stage"):
                ratio = results[hi][runner][stage] / max(results[lo][runner][stage], 1e-9)
                print(f"{runner}: {stage} {hi}/{lo} ratio {ratio:.2f}")
    record(__file__, {f"{n} files": r for n, r in results.items()}, a)


if __name__ == "__main__":
    main()
