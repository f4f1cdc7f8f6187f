"""Capture and commit timings, as processes a harness or cron would run them.

  append   `memory capture append` of one turn (process wall time)       goal < 50 ms
  end      `memory capture end` with its commit (hooks installed), in
           a 100K-file memory repo                                       goal < 500 ms
  commit   `memory commit --no-llm --no-push` of 20 changed knowledge
           files in the same repo                                        goal < 500 ms

Medians over ``--rounds``; the floor (`memory --version`, `python -c pass`) is printed
beside them, since process start-up is most of a 50 ms budget. The 100K repo comes from
bench/common/corpus.py (built once, then reused); everything this script commits there is reset
at the end. It works in its own clone of that repo (with the hooks installed by
`memory init`), so benchmarks running at the same time never see its commits.

    python bench/perf/bench_capture.py                   # 100K files, 5 rounds
    python bench/perf/bench_capture.py --size 10000 --rounds 10
    python bench/perf/bench_capture.py --memory /tmp/wheel-venv/bin/memory   # a wheel install
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from corpus import REPOS, ensure_memory_repo, git, label
from results import add_record_option, record

BIN = Path(sys.executable).parent


def timed(cmd: list[str], cwd: Path, stdin: str | None = None) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    elapsed = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def report(name: str, samples: list[float], goal: float | None = None) -> dict[str, float]:
    med = statistics.median(samples)
    verdict = "" if goal is None else ("  ok" if med < goal else "  OVER GOAL")
    print(f"{name:<34} median {med:7.1f} ms   min {min(samples):7.1f}   "
          f"max {max(samples):7.1f}" + (f"   goal < {goal:.0f} ms{verdict}" if goal else ""))
    out = {"median_ms": med, "min_ms": min(samples), "max_ms": max(samples)}
    return {**out, "goal_ms": goal} if goal else out


def work_repo(n: int) -> Path:
    """A private clone of the shared bench repo, hooks installed (made once, then reused)."""
    shared = ensure_memory_repo(n)
    repo = REPOS / f"capture-{label(n)}"
    if not (repo / ".git" / "bench-capture-ready").exists():
        shutil.rmtree(repo, ignore_errors=True)
        git(shared.parent, "clone", "-q", "--local", str(shared), str(repo))
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        subprocess.run([str(BIN / "memory"), "init", str(repo)], check=True, env=env,
                       capture_output=True)
        (repo / ".git" / "bench-capture-ready").write_text("")
    return repo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--memory", help="the memory script to time (default: this venv's); an "
                    "editable install pays ~10 ms per process for its import finder, so "
                    "time a wheel install too: pip wheel . && pip install the wheel in a venv")
    add_record_option(ap)
    args = ap.parse_args()
    repo = work_repo(args.size)
    memory = args.memory or str(BIN / "memory")
    python = str(Path(memory).with_name("python")) if args.memory else sys.executable
    start_head = git(repo, "rev-parse", "HEAD").strip()
    print(f"repo: {repo} ({args.size} files), {args.rounds} rounds")
    try:
        floor = [timed([python, "-c", "pass"], repo) for _ in range(args.rounds * 2)]
        version = [timed([memory, "--version"], repo) for _ in range(args.rounds * 2)]
        appends, ends, commits = [], [], []
        for r in range(args.rounds):
            sid = f"ses_bench{os.getpid()}_{r}"
            timed([memory, "capture", "start", "--session", sid, "--topic", f"bench {r}"], repo)
            for i in range(5):
                appends.append(timed(
                    [memory, "capture", "append", "--session", sid, "--role",
                     "user" if i % 2 == 0 else "agent"], repo,
                    stdin=f"turn {i} of round {r}: " + "words " * 60))
            ends.append(timed([memory, "capture", "end", "--session", sid], repo))
            files = sorted((repo / "knowledge" / "projects").rglob("*.md"))[r * 20:(r + 1) * 20]
            for f in files:
                with f.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n- bench note {r}\n")
            commits.append(timed([memory, "commit", "--no-llm", "--no-push"], repo))
        figures = {
            "python -c pass (floor)": report("python -c pass (floor)", floor),
            "memory --version (floor)": report("memory --version (floor)", version),
            "memory capture append": report("memory capture append", appends, 50),
            "memory capture end + commit": report("memory capture end + commit", ends, 500),
            "memory commit (20 files, no LLM)": report("memory commit (20 files, no LLM)",
                                                       commits, 500),
        }
    finally:
        git(repo, "reset", "-q", "--hard", start_head)
        shutil.rmtree(repo / "attachments" / "bench", ignore_errors=True)
        shutil.rmtree(repo / ".memrepo" / "sessions", ignore_errors=True)
    record(__file__, {"files": args.size, "rounds": args.rounds, **figures}, args)


if __name__ == "__main__":
    main()
