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
anything within ~10 % as noise), each as wall time and as CPU time (user + system of the
process and all it waited for): on a machine other work keeps busy, wall time mostly
measures that work, CPU time far less.

    python bench/ab/bench_ab.py --a /tmp/old-venv --b .venv                 # 10K and 100K
    python bench/ab/bench_ab.py --a OLD --b NEW --sizes 10000 --rounds 5

When A and B keep different index schemas (each would find the other's ``memory.db``
unusable and search without it), ``--separate-repos`` gives each install its own copy of
the repo, indexed by that install before the rounds; ``--inproc N`` also times N Latin
queries through ``Searcher`` inside one process of each install (no start-up cost) per
round, and at the end 3N queries answered by an A and a B process taking turns, query by
query, CPU and wall time each (the fairest comparison when other work loads the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perf"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from bench_commit import _stage_ten
from corpus import ensure_memory_repo, git
from results import add_record_option, record

#: every hook memrepo installs, direct (a repo made by an older init may hold the pre-commit
#: framework's commit-msg hook: it diffs the whole work tree, +0.9 s a commit at 100K files)
HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-merge", "post-checkout",
         "post-rewrite")
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


#: CPU milliseconds (user + system) of the last _ms command and every process it waited
#: for: on a busy machine wall time mostly measures the other work, CPU time much less.
LAST_CPU = [0.0]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def _ms(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    c0 = _cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    dt = (time.perf_counter() - t0) * 1000
    LAST_CPU[0] = _cpu() - c0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return dt


def _own_copy(repo: Path, name: str, venv: Path) -> Path:
    """A copy of ``repo`` for one install, its index rebuilt by that install."""
    copy = repo.with_name(f"{repo.name}-{name}")
    if not (copy / ".git" / "bench-ready").exists():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns("memory.db*"))
    subprocess.run([str(venv / "bin" / "memory"), "index"], cwd=copy, check=True,
                   capture_output=True)  # fmt: skip
    return copy


INPROC = (
    "import json, sys, time\nfrom pathlib import Path\n"
    "from memrepo.index.search import Searcher\n"
    "s = Searcher(Path('.'))\nqs = json.loads(sys.argv[1])\ns.search(qs[0])\nts = []\n"
    "cs = []\n"
    "for q in qs:\n    t, c = time.perf_counter(), time.process_time(); s.search(q, 10)\n"
    "    ts.append(time.perf_counter() - t); cs.append(time.process_time() - c)\n"
    "print(json.dumps([ts, cs]))"
)


def _inproc(venv: Path, repo: Path, queries: list[str]) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of each query, in one process of the install."""
    out = subprocess.run([str(venv / "bin" / "python"), "-c", INPROC, json.dumps(queries)],
                         cwd=repo, check=True, capture_output=True, text=True).stdout  # fmt: skip
    ts, cs = json.loads(out)
    return [1000 * t for t in ts], [1000 * c for c in cs]


PAIRED_WORKER = (
    "import json, sys, time\nfrom pathlib import Path\n"
    "from memrepo.index.search import Searcher\n"
    "s = Searcher(Path(sys.argv[1]))\n"
    "for line in sys.stdin:\n"
    "    t, w = time.process_time(), time.perf_counter(); s.search(json.loads(line), 10)\n"
    "    print(json.dumps([time.process_time() - t, time.perf_counter() - w]), flush=True)"
)


def paired(installs: dict[str, Path], repos: dict[str, Path], queries: list[str]) -> None:
    """A and B searchers answer the same queries one after the other, query by query (the
    order alternating), so both meet the same load: the fairest in-process comparison on a
    busy machine. Prints CPU and wall medians and the median of the per-query B/A ratios."""
    procs = {
        k: subprocess.Popen([str(v / "bin" / "python"), "-c", PAIRED_WORKER, str(repos[k])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=repos[k])  # not this checkout's memrepo on sys.path
        for k, v in installs.items()
    }  # fmt: skip
    got: dict[str, list[list[float]]] = {k: [] for k in procs}
    for i, q in enumerate(queries * 3):  # the first pass warms the caches up
        for k in sorted(procs, reverse=bool(i % 2)):
            procs[k].stdin.write(json.dumps(q) + "\n")  # type: ignore[union-attr]
            procs[k].stdin.flush()  # type: ignore[union-attr]
            if i >= len(queries):
                got[k].append(json.loads(procs[k].stdout.readline()))  # type: ignore[union-attr]
            else:
                procs[k].stdout.readline()  # type: ignore[union-attr]
    for p in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()
    for j, name in ((0, "CPU"), (1, "wall")):
        a = [x[j] * 1000 for x in got["A"]]
        b = [x[j] * 1000 for x in got["B"]]
        ratio = statistics.median(y / x for x, y in zip(a, b, strict=True) if x > 0)
        print(f"paired search, {len(a)} queries, {name}: A p50 {statistics.median(a):.2f} ms, "
              f"B p50 {statistics.median(b):.2f} ms, median B/A per query {ratio:.3f}")


def measure(
    n: int, rounds: int, installs: dict[str, Path], separate: bool = False, inproc: int = 0
) -> dict[str, dict[str, float]]:
    base = ensure_memory_repo(n)
    repos = {k: _own_copy(base, k, v) if separate else base for k, v in installs.items()}
    for repo in set(repos.values()):
        _direct_hooks(repo)
    times: dict[str, dict[str, list[float]]] = {k: {} for k in installs}
    latin: list[str] = []
    if inproc:
        from corpus import messages

        latin = messages(inproc, n)
    with tempfile.TemporaryDirectory() as empty:
        for r in range(rounds + 1):  # round 0 warms caches and the index up
            order = list(installs.items())
            for name, venv in order if r % 2 else order[::-1]:  # neither always goes first
                repo = repos[name]
                env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
                tag = f"{r}-{name}-{time.time_ns()}"
                got = {}
                commit = ["git", "commit", "-q", "-m", f"memory: bench {tag}"]
                _stage_ten(repo, tag + "b")
                bare = _ms(["git", "-c", f"core.hooksPath={empty}", *commit[1:]], repo, env)
                bare_cpu = LAST_CPU[0]
                _stage_ten(repo, tag + "n")
                no_verify = _ms([*commit, "--no-verify"], repo, env)
                no_verify_cpu = LAST_CPU[0]
                _stage_ten(repo, tag + "h")
                hooked = _ms(commit, repo, env)
                got["pre-commit stage"] = hooked - no_verify
                got["post-commit stage"] = no_verify - bare
                got["pre-commit stage, CPU"] = LAST_CPU[0] - no_verify_cpu
                got["post-commit stage, CPU"] = no_verify_cpu - bare_cpu
                memory = str(venv / "bin" / "memory")
                got["search process"] = _ms(
                    [memory, "search", "--limit", "10", QUERIES[r % len(QUERIES)]], repo, env
                )
                got["search process, CPU"] = LAST_CPU[0]
                got["compile process"] = _ms(
                    [memory, "compile", "--budget", "2000", QUERIES[r % len(QUERIES)]], repo, env
                )
                got["compile process, CPU"] = LAST_CPU[0]
                if latin:
                    ts, cpu = _inproc(venv, repo, latin)
                    got["search in-process p50"] = statistics.median(ts)
                    got["search in-process p95"] = sorted(ts)[int(0.95 * (len(ts) - 1))]
                    got["search in-process, CPU p50"] = statistics.median(cpu)
                if r:
                    for k, v in got.items():
                        times[name].setdefault(k, []).append(v)
    if latin:
        paired(installs, repos, latin * 3)
    return {name: {k: statistics.median(v) for k, v in by.items()} for name, by in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--a", required=True, help="virtualenv of install A (the baseline)")
    ap.add_argument("--b", required=True, help="virtualenv of install B (the change)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--separate-repos", action="store_true",
                    help="one copy of the repo per install (different index schemas)")
    ap.add_argument("--inproc", type=int, default=0, metavar="N",
                    help="also time N queries in-process per round")
    add_record_option(ap)
    args = ap.parse_args()
    installs = {"A": Path(args.a).resolve(), "B": Path(args.b).resolve()}
    figures: dict[str, object] = {"rounds": args.rounds,
                                  "installs": {k: str(v) for k, v in installs.items()}}
    for n in args.sizes:
        res = measure(n, args.rounds, installs, args.separate_repos, args.inproc)
        figures[f"{n} files, median ms"] = res
        print(f"\n{n:,} files, medians of {args.rounds} rounds (ms)")
        print(f"{'':20} {'A':>9} {'B':>9} {'B/A':>6}")
        for k in res["A"]:
            a, b = res["A"][k], res["B"][k]
            print(f"{k:20} {a:9.1f} {b:9.1f} {b / a if a > 0 else float('nan'):6.2f}")
    record(__file__, figures, args)


if __name__ == "__main__":
    main()
