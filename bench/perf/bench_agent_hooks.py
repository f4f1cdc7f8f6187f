#!/usr/bin/env python3
"""Agent hooks as whole processes: ``memory --repo R hook claude-code EVENT`` at 10K and 100K.

    nice -n 10 python bench/perf/bench_agent_hooks.py                 # 10K and 100K side by side
    python bench/perf/bench_agent_hooks.py --sizes 10000 --prompts 30
    python bench/perf/bench_agent_hooks.py --client     # and with the resident, as installed

Why these numbers: Claude Code runs UserPromptSubmit before every prompt and waits for it
(goal p50 ≤ 150 ms at 10K files, ≤ 250 ms at 100K), SessionStart before the first one
(≤ 200 ms), and Stop / SessionEnd after every answer and at exit, where SessionEnd has
1.5 s for all its hooks: those must only hand the work to a detached process (≤ 100 ms).

Each call is a new process, as the agent runs it, the payload on stdin, measured from
spawn to exit (wall) and in CPU time (user + system of the hook process alone, which a
busy machine inflates less). Bytecode is cached in a temp dir, as a pip install has its
.pyc files. The repos are ``bench/common/corpus.py``'s (built when missing; 100K is skipped,
and said so, unless it is ready or ``--build`` is given); prompts are made of each
corpus's own topic words, ten per session, so later prompts meet passages already shown.
Stop and SessionEnd point at a log that does not exist: the hook's own work is the same
(it never reads the log), and the detached worker fails at once instead of writing into
the shared bench repo; one pause per call lets that worker finish first. The detached
work itself (capture of a real Claude Code log, then close, commit and extract) is timed
on a scratch repo. What the hooks leave in a bench repo (their log and state, search-hit
signal lines) is removed afterwards.
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

from memrepo.resources import memory_command

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))

from bench_compile import ensure_index  # noqa: E402
from corpus import REPOS, ensure_memory_repo, label, messages, pct  # noqa: E402
from results import add_record_option, record  # noqa: E402

FIXTURE = HERE.parents[1] / "tests" / "fixtures" / "agents" / "claude-code"
GOALS = {"UserPromptSubmit": {10_000: 150, 100_000: 250}, "SessionStart": 200,
         "Stop": 100, "SessionEnd": 100}


def call(repo: Path, event: str, payload: dict, env: dict[str, str],
         via: list[str] | None = None) -> tuple[float, float, str]:
    """(wall ms, CPU ms, stdout) of one hook process; ``via``: the argv before ``memory``'s
    arguments (what ``memory install`` writes: :func:`client_argv`), else ``memory``."""
    data = json.dumps({"hook_event_name": event, **payload})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([*(via or memory_command()), "--repo", str(repo), "hook",
                           "claude-code", event],
                          input=data, capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if proc.returncode != 0 or proc.stderr:
        sys.exit(f"memory hook {event} failed: {proc.returncode} {proc.stderr}")
    return wall, cpu, proc.stdout


def log_lines(repo: Path) -> int:
    path = repo / ".memrepo" / "agents.log"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def wait_lines(repo: Path, n: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while log_lines(repo) < n and time.monotonic() < end:
        time.sleep(0.02)


def summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(walls), "p95": pct(walls, 95),
            "cpu_p50": statistics.median(cpus), "n": len(walls)}


class Cleanup:
    """Puts a shared bench repo back as it was: the agents' state and log, the search-hit
    lines the recalls appended under raw/signals/ and the topic gate's log lines."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.signals_dir = repo / "raw" / "signals"
        self.had_signals = self.signals_dir.exists()
        self.logs = [*self.signals_dir.glob("*"), repo / ".memrepo" / "gate-log.jsonl"]
        self.sizes = {p: p.stat().st_size for p in self.logs if p.exists()}
        self.state = [repo / ".memrepo" / n for n in ("agents.log", "agents", "follow")]
        self.had = {p for p in self.state if p.exists()}

    def __enter__(self) -> Cleanup:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.had_signals:
            shutil.rmtree(self.signals_dir, ignore_errors=True)
        for p in {*self.signals_dir.glob("*"), *self.logs}:
            if p not in self.sizes:
                p.unlink(missing_ok=True)
            elif p.stat().st_size != self.sizes[p]:
                with p.open("r+b") as fh:
                    fh.truncate(self.sizes[p])
        for p in self.state:
            if p not in self.had:
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


def client_argv(repo: Path) -> list[str]:
    """The installed hook's argv up to ``memory``: memrepo.agents.hook_client asking the
    clone's resident server (memrepo.agents.install.fast_client)."""
    from memrepo.agents.install import fast_client

    exe = memory_command()
    client = fast_client(exe[0], str(repo)) if len(exe) == 1 else None
    if client is None:
        sys.exit("--client: no memory script beside this interpreter")
    return [*client.argv(), exe[0]]


class Resident:
    """The clone's resident server with the agents' services, as ``memory mcp`` starts it,
    for as long as the ``with`` lasts."""

    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        from memrepo.index import remote

        self.sock = remote.socket_path(remote.serve_dir(repo))
        self.proc = subprocess.Popen([sys.executable, "-m", "memrepo.agents.resident", "serve",
                                      str(repo), "--idle", "900"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self) -> Resident:
        from memrepo.index import remote

        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                if remote.request(self.sock, {"op": "ping"}, 1.0).get("loaded"):
                    return self
            except remote.Unavailable:
                pass
            if self.proc.poll() is not None:
                sys.exit(f"the resident server exited ({self.proc.returncode})")
            time.sleep(0.2)
        sys.exit("the resident server did not load its model within 120 s")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def bench_repo(repo: Path, size: int, prompts: int, runs: int, rounds: int,
               env: dict[str, str], via: list[str] | None = None
               ) -> dict[str, dict[str, float]]:
    """The four hooks' figures on ``repo``, run as ``via`` says (:func:`call`)."""
    stamp = f"{os.getpid()}-{int(time.time())}-{'client' if via else 'plain'}"
    res: dict[str, dict[str, float]] = {}
    with Cleanup(repo):
        qs = messages(prompts, size)
        call(repo, "UserPromptSubmit", {"session_id": f"warm-{stamp}", "prompt": qs[0]}, env, via)
        call(repo, "SessionStart", {"session_id": f"warm-{stamp}", "source": "startup"}, env, via)
        walls, cpus, chars = [], [], []
        for r, (i, q) in ((r, iq) for r in range(rounds) for iq in enumerate(qs)):
            sid = f"bench-{stamp}-{r}-{i // 10}"
            w, c, out = call(repo, "UserPromptSubmit", {"session_id": sid, "prompt": q}, env, via)
            walls.append(w)
            cpus.append(c)
            chars.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"])
                         if out.strip() else 0)
        res["UserPromptSubmit"] = {**summary(walls, cpus),
                                   "injected_share": sum(1 for x in chars if x) / len(chars),
                                   "chars_mean": statistics.mean(chars)}
        walls, cpus = [], []
        for i in range(runs):
            w, c, out = call(repo, "SessionStart", {"session_id": f"start-{stamp}-{i}",
                                                    "source": "startup"}, env, via)
            walls.append(w)
            cpus.append(c)
        res["SessionStart"] = {**summary(walls, cpus), "chars": len(out)}
        missing = str(Path(tempfile.gettempdir()) / f"no-such-log-{stamp}.jsonl")
        for event in ("Stop", "SessionEnd"):
            walls, cpus = [], []
            for i in range(runs):
                n = log_lines(repo)
                w, c, out = call(repo, event, {"session_id": f"stop-{stamp}-{i}",
                                               "transcript_path": missing}, env, via)
                assert out == ""
                walls.append(w)
                cpus.append(c)
                wait_lines(repo, n + 2)  # the hook's line and its worker's
            res[event] = summary(walls, cpus)
    return res


def bench_detached(env: dict[str, str]) -> dict[str, float]:
    """The work Stop and SessionEnd hand over, on a scratch repo and the fixture log:
    hook start to the worker's logged outcome."""
    stages = sorted(FIXTURE.glob("*.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "mem"
        subprocess.run([*memory_command(), "init", str(repo)], check=True, capture_output=True,
                       env=env)
        log = Path(tmp) / "session.jsonl"
        out: dict[str, float] = {}
        common = {"session_id": "bench", "transcript_path": str(log)}
        for i, (event, upto) in enumerate((("Stop", 3), ("Stop", 5), ("SessionEnd", 6))):
            log.write_bytes(b"".join(p.read_bytes() for p in stages[:upto]))
            t0 = time.perf_counter()
            call(repo, event, common, env)
            wait_lines(repo, 2 * (i + 1), timeout=120)
            key = {0: "capture_first", 1: "capture_more", 2: "end_commit_extract"}[i]
            out[key] = (time.perf_counter() - t0) * 1000
        entries = [json.loads(x) for x in (repo / ".memrepo" / "agents.log").read_text(
            encoding="utf-8").splitlines()]
        bad = [e for e in entries if e.get("status") == "failed"]
        if bad:
            sys.exit(f"detached work failed: {bad}")
    return out


def size_of(lb: str) -> int:
    """The repo size a results label names ("n10k", "n100k served")."""
    return int(lb.split()[0][1:-1]) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2, help="times each prompt is sent (in "
                    "sessions of their own)")
    ap.add_argument("--runs", type=int, default=15, help="SessionStart, Stop, SessionEnd calls")
    ap.add_argument("--build", action="store_true", help="build the 100K repo when missing")
    ap.add_argument("--json-out", help="also write the figures to this file")
    ap.add_argument("--client", action="store_true",
                    help="then, with the clone's resident server up, the hooks again as "
                         "`memory hook` and as installed (memrepo.agents.hook_client)")
    add_record_option(ap)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, dict] = {}
    notes = []
    with tempfile.TemporaryDirectory() as pyc:
        env = {k: v for k, v in os.environ.items()
               if k not in ("ANTHROPIC_API_KEY", "MEMREPO_NO_HOOKS", "MEMORY_REPO",
                            "PYTHONDONTWRITEBYTECODE")}
        env["PYTHONPYCACHEPREFIX"] = pyc
        env["XDG_STATE_HOME"] = str(Path(pyc) / "state")
        for size in sizes:
            ready = (REPOS / f"repo-{label(size)}" / ".git" / "bench-ready").exists()
            if size > 10_000 and not ready and not args.build:
                notes.append(f"{label(size)}: repo not built (run with --build); skipped")
                continue
            repo = ensure_memory_repo(size)
            ensure_index(repo)
            results[label(size)] = bench_repo(repo, size, args.prompts, args.runs,
                                              args.rounds, env)
            if args.client:
                with Resident(repo, env):
                    results[f"{label(size)} served"] = bench_repo(
                        repo, size, args.prompts, args.runs, args.rounds, env)
                    results[f"{label(size)} client"] = bench_repo(
                        repo, size, args.prompts, args.runs, args.rounds, env,
                        client_argv(repo))
        results["detached"] = bench_detached(env)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    labels = [k for k in results if k != "detached"]
    print(f"memory hook claude-code EVENT, whole processes (load average {load:.2f}, "
          f"{os.cpu_count()} CPUs); served: the resident server up; client: the hook as "
          "installed (memrepo.agents.hook_client)")
    head = "".join(f" {lb + ' p50':>17} {lb + ' cpu':>17}" for lb in labels)
    print(f"{'event':18}{head}  goal p50")
    for event in ("UserPromptSubmit", "SessionStart", "Stop", "SessionEnd"):
        cells = "".join(f" {results[lb][event]['p50']:17.1f} {results[lb][event]['cpu_p50']:17.1f}"
                        for lb in labels)
        goal = GOALS[event]
        goal_text = ("/".join(f"{v}" for v in goal.values()) if isinstance(goal, dict)
                     else str(goal))
        ok = all(results[lb][event]["p50"] <= (goal[size_of(lb)] if isinstance(
            goal, dict) else goal) for lb in labels)
        print(f"{event:18}{cells}  ≤ {goal_text} ms {'yes' if ok else 'NO'}")
    for lb in labels:
        u = results[lb]["UserPromptSubmit"]
        print(f"{lb}: UserPromptSubmit p95 {u['p95']:.1f} ms, injected on "
              f"{u['injected_share']:.0%} of prompts, {u['chars_mean']:.0f} chars on average; "
              f"SessionStart p95 {results[lb]['SessionStart']['p95']:.1f} ms")
    d = results["detached"]
    print(f"detached work (scratch repo, fixture log): first capture "
          f"{d['capture_first']:.0f} ms, next capture {d['capture_more']:.0f} ms, "
          f"close + commit + extract {d['end_commit_extract']:.0f} ms")
    for n in notes:
        print(f"note: {n}")
    results["notes"] = notes  # type: ignore[assignment]
    results["load_average"] = load  # type: ignore[assignment]
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    record(__file__, results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
