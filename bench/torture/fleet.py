"""Torture: a fleet of clones capturing, remembering and syncing at once through a git server.

Why: ``sync.py`` has three clones of a local bare repo take turns. A real fleet (many
machines, several agents each) writes and syncs at the same time, over HTTP, into a remote
guarded by memrepo's pre-receive hook. This harness measures what that costs as the fleet
grows, and checks the promise that holds whatever the load: every acknowledged write
(``memory capture append`` or ``memory remember`` that exited 0) is in the converged history.

How: ``git http-backend`` runs as CGI behind Python's ``http.server`` on 127.0.0.1 over a
bare repo guarded with ``memory remote protect`` (pre-receive on every push; receive-pack
on). Per fleet size N: N clones over ``http://127.0.0.1:PORT/`` (``memory init`` in each),
one process each, started together. In a clone, ``--agents`` threads each run ``--rounds``
sessions (``capture start``, ``--turns`` appends, a ``memory remember``, ``capture end``;
every turn and note carries a unique token) while a sync thread loops ``memory commit
--no-push`` + ``memory sync --json`` (timed). ``--gate``: a clone's writers wait while that
clone syncs (the fleet still runs at once); without it, a clone's writers run during its
own sync too. A sync that stops for a person is merged as sync.py's person does. Then every
clone ends what is open, commits and syncs until each HEAD is the remote's; the tokens are
looked up in the remote's ``main`` (a lost one: in which clone's reflog or work tree, if
any); a probe push of a rewritten closed transcript (``--no-verify``) must be refused.

    .venv/bin/python bench/torture/fleet.py --quick          # 2 and 4 clones, 2 rounds
    .venv/bin/python bench/torture/fleet.py --clones 2,10,20 --rounds 2   # the full run

Per fleet size: items written and lost, syncs stopped for a person, given up (push race)
or refused (pre-receive), sync p50 / p95 (given-up syncs included) and growth, attempts,
the server's receive-packs (accepted, lost the ref race, refused); a ``SUMMARY`` line.
Exit 1 when an acknowledged item is lost, a fleet does not converge or the probe lands.

What breaks first at 100 agents (figures: bench/README.md and bench/results/). The one
branch: every clone pushes to ``refs/heads/main``; the server accepts one push per
pre-receive run, and every other push racing it loses after paying a fetch, a rebase and
a pre-receive run. Lost races per accepted push and syncs given up grow with the fleet;
nothing is lost (the commits stay local), but at 100 agents most syncs would give up and
the memory would go stale. (This harness first found a correctness bug, writes lost to a
sync's rebase; fixed by memrepo.worktree.writing.)
The design that answers it: no shared ref to win. Each clone pushes to its own branch
(``refs/heads/agents/<clone>``: always a fast-forward, never a race), the pre-receive check
runs once per push; one integrator on the server (post-receive queue) folds those branches
into ``main`` one at a time with memrepo's merge driver (sessions are separate files and
journals merge by lines, so this never needs a person), and clones fetch ``main``. Until
then: sync on a timer, not per session, and retry with a backoff that grows with the fleet.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
sys.path.append(str(Path(__file__).resolve().parent))  # sync.py (keep_both)
from common import sandbox_env
from results import add_record_option, record

MEMORY = str(Path(sys.executable).with_name("memory"))
TOKEN = re.compile(r"\bc\d+a\d+r\d+[tn]\d+x\b")  # c<clone>a<agent>r<round>t<turn>x / n0x
FAIL_KINDS = (("could not fetch", "fetch"), ("Nothing was lost", "stopped"),
              ("failed and was aborted", "aborted"), ("gave up pushing", "gave_up"),
              ("refused the push", "refused"), ("is in progress", "busy"),
              ("HEAD is detached", "detached"))


# ---------------------------------------------------------------- the git server (CGI)

class GitCGI(BaseHTTPRequestHandler):
    """``git http-backend`` as CGI: one process per request, its output relayed."""

    root: Path
    base_env: dict[str, str]
    stats: dict[str, list[float] | int]
    lock = threading.Lock()

    def do_GET(self) -> None:
        self.cgi()

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the figures are counted instead

    def body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if not size:
                    self.rfile.readline()  # the blank line after the last chunk
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def cgi(self) -> None:
        path, _, query = self.path.partition("?")
        data = self.body() if self.command == "POST" else b""
        env = {**self.base_env, "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
               "REMOTE_USER": "fleet", "REMOTE_ADDR": self.client_address[0],
               "REQUEST_METHOD": self.command, "QUERY_STRING": query,
               "PATH_INFO": unquote(path), "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(data)), "GATEWAY_INTERFACE": "CGI/1.1",
               "SERVER_PROTOCOL": "HTTP/1.0"}
        for name in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(name):
                env["HTTP_" + name.upper().replace("-", "_")] = self.headers[name]
        t0 = time.monotonic()
        proc = subprocess.run(["git", "http-backend"], input=data, env=env,
                              capture_output=True)
        cut = min((i for i in (proc.stdout.find(b"\r\n\r\n"), proc.stdout.find(b"\n\n"))
                   if i >= 0), default=-1)
        head = proc.stdout[:cut].decode("latin-1") if cut >= 0 else ""
        out = proc.stdout[cut:].lstrip(b"\r\n") if cut >= 0 else b""
        headers = [ln.split(":", 1) for ln in head.splitlines() if ":" in ln]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
        if proc.returncode != 0 and cut < 0:
            status, out = 500, proc.stderr
        if path.endswith("/git-receive-pack"):
            self.count_push(out, time.monotonic() - t0)
        self.send_response(status)
        for k, v in headers:
            if k.lower() != "status":
                self.send_header(k, v.strip())
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def count_push(self, out: bytes, took: float) -> None:
        kind = ("refused" if b"pre-receive hook declined" in out
                else "accepted" if b"ok refs/heads/" in out else "lost_race")
        with self.lock:
            self.stats[kind] = int(self.stats.get(kind, 0)) + 1  # type: ignore[arg-type]
            self.stats.setdefault("seconds", []).append(took)  # type: ignore[union-attr]


def serve(bare_parent: Path, env: dict[str, str]) -> tuple[ThreadingHTTPServer, dict]:
    stats: dict = {}
    handler = type("Handler", (GitCGI,), {"root": bare_parent, "base_env": env,
                                         "stats": stats})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, stats


# ---------------------------------------------------------------- processes

def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600,
        ) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {timeout} s")


def memory(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run([MEMORY, *args], cwd, env)


def git(cwd: Path, env: dict[str, str], *args: str) -> str:
    proc = run(["git", *args], cwd, env)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])} in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


def make_env(base: Path) -> dict[str, str]:
    env = {**sandbox_env(base / "home", MEMORY, "Fleet"), "GIT_TERMINAL_PROMPT": "0"}
    for var in [k for k in env if k.lower().endswith("_proxy")]:
        env.pop(var, None)
    return env


def setup(base: Path, n: int, env: dict[str, str], port: int) -> list[Path]:
    """The seed, the protected bare remote ``srv/memory.git`` and ``n`` clones over HTTP."""
    seed, bare = base / "seed", base / "srv" / "memory.git"
    must(memory(base, env, "init", "--hooks", "direct", str(seed)))
    git(base, env, "clone", "-q", "--bare", str(seed), str(bare))
    git(bare, env, "config", "http.receivepack", "true")
    must(memory(seed, env, "remote", "add", "origin", str(bare)))
    must(memory(seed, env, "remote", "protect", "origin"))  # the pre-receive hook
    url = f"http://127.0.0.1:{port}/memory.git"
    clones = []
    for i in range(1, n + 1):
        root = base / f"clone{i}"
        git(base, env, "clone", "-q", url, str(root))
        git(root, env, "config", "user.name", f"machine {i}")
        must(memory(root, env, "init", str(root)))  # a new machine: hooks, merge driver
        clones.append(root)
    return clones


def must(proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(proc.args[1:4])}: {proc.stderr.strip()}")


def failure_kind(stderr: str) -> str:
    return next((kind for text, kind in FAIL_KINDS if text in stderr), "other")


# ---------------------------------------------------------------- one clone (a process)

class Gate:
    """``--gate``: a clone's writers wait while that clone commits and syncs (a
    readers-writer lock: agents share it, the sync excludes them). Off: all at once."""

    def __init__(self, on: bool) -> None:
        self.on, self.cond, self.active, self.syncing = on, threading.Condition(), 0, False

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        if not self.on:
            yield
            return
        with self.cond:
            self.cond.wait_for(lambda: not self.syncing)
            self.active += 1
        try:
            yield
        finally:
            with self.cond:
                self.active -= 1
                self.cond.notify_all()

    @contextlib.contextmanager
    def sync(self) -> Iterator[None]:
        with self.cond:
            self.cond.wait_for(lambda: not self.syncing)
            self.syncing = True  # new writers wait from now on
            self.cond.wait_for(lambda: self.active == 0)
        try:
            yield
        finally:
            with self.cond:
                self.syncing = False
                self.cond.notify_all()


class CloneLog:
    """What one clone's threads did; written as JSON for the main process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # acked: tokens written with exit 0; unacked: exit != 0 (not promised);
        # open_sessions: ends that never succeeded; syncs: one dict per timed sync
        self.acked, self.unacked, self.open_sessions, self.errors = [], [], [], []
        self.syncs: list[dict] = []

    def add(self, attr: str, value: object) -> None:
        with self.lock:
            getattr(self, attr).append(value)


def agent(root: Path, env: dict[str, str], i: int, a: int, args: dict, log: CloneLog,
          gate: Gate, seed: int) -> None:
    """``rounds`` sessions: start, ``turns`` appends, a note, end; each item a token."""
    rng = random.Random(seed)

    def step(what: str, tok: str | None, *cmd: str) -> bool:
        with gate.write():
            proc = memory(root, senv, *cmd)
        if tok:
            log.add("acked" if proc.returncode == 0 else "unacked", tok)
        if proc.returncode != 0:
            log.add("errors", f"{tok or sid} {what}: {proc.stderr.strip()[-300:]}")
        return proc.returncode == 0

    for r in range(args["rounds"]):
        sid = f"c{i}a{a}r{r}"
        senv = {**env, "MEMORY_SESSION": sid}
        if not step("start", None, "capture", "start", "--session", sid, "--topic",
                    f"fleet clone {i} agent {a}"):
            continue
        for t in range(args["turns"]):
            tok = f"{sid}t{t}x"
            step("append", tok, "capture", "append", "--role", ("user", "agent")[t % 2],
                 f"turn {t} about the {rng.choice(['queue', 'ledger', 'cache'])} {tok}")
        step("remember", f"{sid}n0x", "remember", f"clone {i} agent {a} decided {sid}n0x")
        for _ in range(3):
            if step("end", None, "capture", "end"):
                break
            time.sleep(0.5)
        else:
            log.add("open_sessions", sid)
        time.sleep(rng.uniform(0, args["gap"]))


def timed_sync(root: Path, env: dict[str, str], log: CloneLog | None) -> dict:
    """``memory commit --no-push`` then a timed ``memory sync``; a stop is merged by hand."""
    proc = memory(root, env, "commit", "--no-llm", "--no-push")
    if proc.returncode != 0 and log is not None:
        log.add("errors", f"commit: {proc.stderr.strip()[-300:]}")
    t0 = time.monotonic()
    proc = memory(root, env, "sync", "--json")
    rec: dict = {"seconds": round(time.monotonic() - t0, 3), "ok": proc.returncode == 0}
    if proc.returncode == 0:
        rec["attempts"] = json.loads(proc.stdout.strip().splitlines()[-1])["attempts"]
    else:
        rec["kind"] = failure_kind(proc.stderr)
        rec["said"] = proc.stderr.strip()[-600:]
        if rec["kind"] == "stopped":
            rec["merged"] = merge_by_hand(root, env)
    if log is not None:
        log.add("syncs", rec)
    return rec


def merge_by_hand(root: Path, env: dict[str, str]) -> bool:
    """What sync.py's person does: rebase, keep both sides of each hunk, continue."""
    from sync import keep_both  # bench/torture/sync.py: what sync.py's person keeps

    env = {**env, "GIT_EDITOR": "true"}
    proc = run(["git", "rebase", "origin/main"], root, env)
    for _ in range(50):
        if proc.returncode == 0:
            return True
        files = git(root, env, "diff", "--name-only", "--diff-filter=U").split()
        if not files:
            run(["git", "rebase", "--abort"], root, env)
            return False
        for rel in files:
            (root / rel).write_text(keep_both((root / rel).read_text()))
            git(root, env, "add", "--", rel)
        proc = run(["git", "rebase", "--continue"], root, env)
    return False


def clone_main(root: str, env: dict[str, str], i: int, args: dict, start_at: float,
               out: str) -> None:
    """One clone: ``agents`` agent threads and a sync loop at once, then a last sync."""
    log = CloneLog()
    path, rng = Path(root), random.Random(args["seed"] * 1000 + i)
    time.sleep(max(0.0, start_at - time.time()))
    gate = Gate(args["gate"])
    threads = [threading.Thread(target=agent, args=(path, env, i, a, args, log, gate,
                                                    rng.randrange(1 << 30)))
               for a in range(args["agents"])]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(rng.uniform(0, args["sync_gap"]))
        with gate.sync():
            timed_sync(path, env, log)
    for t in threads:
        t.join()
    timed_sync(path, env, log)
    Path(out).write_text(json.dumps({k: v for k, v in vars(log).items() if k != "lock"}))


# ---------------------------------------------------------------- one fleet size

def converge(clones: list[Path], bare: Path, env: dict[str, str],
             logs: list[dict]) -> tuple[bool, list[str]]:
    """End what is still open, commit, sync every clone until all HEADs are the remote's."""
    problems: list[str] = []
    for root, log in zip(clones, logs, strict=True):
        for sid in log["open_sessions"]:
            proc = memory(root, {**env, "MEMORY_SESSION": sid}, "capture", "end")
            if proc.returncode != 0:
                problems.append(f"{root.name} {sid}: end still fails: {proc.stderr[-200:]}")
    for _ in range(4):
        for root in clones:
            rec = timed_sync(root, env, None)
            if not rec["ok"] and rec["kind"] != "gave_up":
                problems.append(f"{root.name}: drain sync {rec['kind']}: {rec['said'][-200:]}")
        tip = git(bare, env, "rev-parse", "main").strip()
        if all(git(c, env, "rev-parse", "HEAD").strip() == tip for c in clones):
            dirty = [c.name for c in clones
                     if git(c, env, "status", "--porcelain", "--", "knowledge", "raw")]
            problems += [f"{d}: uncommitted knowledge or transcripts after the drain"
                         for d in dirty]
            return True, problems
    return False, problems


def audit(bare: Path, env: dict[str, str], acked: set[str]) -> tuple[list[str], list[str]]:
    """(tokens lost, broken things) in the remote's converged ``main``."""
    proc = run(["git", "grep", "-h", "-o", "-E", r"c[0-9]+a[0-9]+r[0-9]+[tn][0-9]+x",
                "main"], bare, env)
    found = set(TOKEN.findall(proc.stdout))
    broken = []
    marks = run(["git", "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>) ", "main"], bare, env)
    broken += [f"conflict markers: {p}" for p in marks.stdout.split()]
    fsck = run(["git", "fsck", "--no-progress", "--no-dangling"], bare, env)
    if fsck.returncode != 0:
        broken.append(f"git fsck: {(fsck.stdout + fsck.stderr).strip()[:300]}")
    return sorted(acked - found), broken


def where_lost(clones: list[Path], env: dict[str, str], lost: list[str]) -> dict[str, str]:
    """Each lost token: still in its clone's reflog (an orphaned commit), in its work tree
    (never committed) or nowhere."""
    out = {}
    for tok in lost[:50]:
        root = clones[int(tok[1:tok.index("a")]) - 1]
        hit = run(["git", "log", "--all", "--reflog", "-S", tok, "--format=%h", "-n1"],
                  root, env).stdout.strip()
        here = run(["grep", "-rl", "--exclude-dir=.git", tok, "."], root, env).stdout.strip()
        out[tok] = (f"{root.name} reflog {hit}" if hit else f"{root.name} work tree {here}"
                    if here else "nowhere")
    return out


def probe_refused(clone: Path, env: dict[str, str]) -> bool:
    """Rewrite a closed transcript, commit past the local hook, push over HTTP: refused?"""
    closed = sorted(clone.glob("raw/conversations/*/*/*/*.md"))
    if not closed:
        return False
    closed[0].write_text(closed[0].read_text() + "\nrewritten afterwards\n")
    git(clone, env, "commit", "-qam", "rewrite a transcript", "--no-verify")
    proc = run(["git", "push", "-q", "origin", "HEAD:refs/heads/main"], clone, env)
    git(clone, env, "reset", "-q", "--hard", "origin/main")
    return proc.returncode != 0 and "pre-receive" in proc.stderr


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3)


def figures(n: int, args: argparse.Namespace, logs: list[dict], server: dict,
            lost: list[str], broken: list[str], converged: bool, problems: list[str],
            probe: bool, took: float) -> dict:
    syncs = [s for log in logs for s in log["syncs"]]
    kinds: dict[str, int] = {}
    for s in syncs:
        if not s["ok"]:
            kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    lat = [s["seconds"] for s in syncs]
    attempts = [s["attempts"] for s in syncs if s["ok"]]
    push_s = server.get("seconds", [])
    return {
        "clones": n, "agents": n * args.agents, "rounds": args.rounds, "gate": args.gate,
        "items_written": sum(len(log["acked"]) for log in logs),
        "writes_refused": sum(len(log["unacked"]) for log in logs), "lost": len(lost),
        "syncs": len(syncs), "stopped": kinds.get("stopped", 0),
        "gave_up": kinds.get("gave_up", 0), "refused": kinds.get("refused", 0),
        "other_failures": sum(v for k, v in kinds.items()
                              if k not in ("stopped", "gave_up", "refused")),
        "failure_kinds": kinds, "sync_p50_s": pct(lat, 0.5), "sync_p95_s": pct(lat, 0.95),
        "sync_max_s": pct(lat, 1.0),
        "attempts_mean": round(statistics.fmean(attempts), 2) if attempts else 0,
        "attempts_max": max(attempts, default=0),
        "server_pushes": {k: server.get(k, 0) for k in ("accepted", "lost_race", "refused")},
        "server_push_p50_s": pct(push_s, 0.5), "server_push_p95_s": pct(push_s, 0.95),
        "converged": converged, "broken": len(broken), "probe_refused": probe,
        "errors": sum(len(log["errors"]) for log in logs) + len(problems),
        "seconds": round(took),
    }


def fleet(n: int, args: argparse.Namespace) -> tuple[dict, list[str]]:
    """One fleet of ``n`` clones: set up, run at once, drain, audit; (figures, notes)."""
    base = Path(tempfile.mkdtemp(prefix=f"memrepo-torture-fleet{n}-"))
    env = make_env(base)
    (base / "srv").mkdir()
    server, stats = serve(base / "srv", {k: env[k] for k in (
        "PATH", "HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "TZ")})
    try:
        clones = setup(base, n, env, server.server_address[1])
        stats.clear()
        spec = {k: getattr(args, k) for k in ("rounds", "agents", "turns", "gap",
                                              "sync_gap", "seed", "gate")}
        ctx = multiprocessing.get_context("spawn")
        start_at, t0 = time.time() + 3, time.monotonic()
        procs = [ctx.Process(target=clone_main, args=(str(c), env, i, spec, start_at,
                                                       str(base / f"log{i}.json")))
                 for i, c in enumerate(clones, 1)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        took = time.monotonic() - t0
        died = {"acked": [], "unacked": [], "open_sessions": [], "syncs": [], "errors": []}
        logs = [json.loads(f.read_text()) if (f := base / f"log{i}.json").exists() else
                {**died, "errors": [f"clone {i} process died"]} for i in range(1, n + 1)]
        server_run = {k: (list(v) if isinstance(v, list) else v) for k, v in stats.items()}
        bare = base / "srv" / "memory.git"
        converged, problems = converge(clones, bare, env, logs)
        acked = {t for log in logs for t in log["acked"]}
        lost, broken = audit(bare, env, acked)
        lost_at = where_lost(clones, env, lost)
        probe = probe_refused(clones[0], env)
    finally:
        server.shutdown()
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    figs = figures(n, args, logs, server_run, lost, broken, converged, problems, probe, took)
    figs["lost_in_reflog"] = sum("reflog" in w for w in lost_at.values())
    notes = [f"lost: {t} ({lost_at.get(t, '?')})" for t in lost[:20]]
    notes += [f"broken: {b}" for b in broken[:10]]
    notes += problems[:10] + [e for log in logs for e in log["errors"]][:10]
    notes += [f"sync {s['kind']}: {s['said'][-200:]}" for log in logs for s in log["syncs"]
              if not s["ok"]][:10]
    return figs, notes


# ---------------------------------------------------------------- main

def growth(rows: list[dict]) -> dict:
    """Each fleet's p50 / p95 and lost races per accepted push against the smallest."""
    first = rows[0]
    out = {}
    for r in rows:
        acc = max(1, r["server_pushes"]["accepted"])
        out[str(r["clones"])] = {
            "p50_x": round(r["sync_p50_s"] / max(first["sync_p50_s"], 1e-9), 2),
            "p95_x": round(r["sync_p95_s"] / max(first["sync_p95_s"], 1e-9), 2),
            "lost_races_per_push": round(r["server_pushes"]["lost_race"] / acc, 2)}
    return out


def print_table(rows: list[dict], grow: dict) -> None:
    print("clones agents rounds items lost stopped gave_up refused syncs  p50 s  p95 s"
          "  attempts(mean/max) pushes ok/raced  growth p50/p95")
    for r in rows:
        g = grow[str(r["clones"])]
        print(f"{r['clones']:>6} {r['agents']:>6} {r['rounds']:>6} {r['items_written']:>5} "
              f"{r['lost']:>4} {r['stopped']:>7} {r['gave_up']:>7} {r['refused']:>7} "
              f"{r['syncs']:>5} {r['sync_p50_s']:>6.2f} {r['sync_p95_s']:>6.2f} "
              f"{r['attempts_mean']:>10}/{r['attempts_max']:<8}"
              f"{r['server_pushes']['accepted']:>6}/{r['server_pushes']['lost_race']:<7}"
              f" {g['p50_x']}x/{g['p95_x']}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", default="2,10,20", help="fleet sizes, comma-separated")
    ap.add_argument("--rounds", type=int, default=2, help="sessions per agent")
    ap.add_argument("--agents", type=int, default=2, help="agents per clone")
    ap.add_argument("--turns", type=int, default=3, help="captured turns per session")
    ap.add_argument("--gap", type=float, default=1.0,
                    help="an agent's max random pause between sessions, seconds")
    ap.add_argument("--sync-gap", type=float, default=2.0,
                    help="a clone's max random pause between syncs, seconds")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--gate", action="store_true",
                    help="a clone's writers wait while it syncs (not at once within a clone)")
    ap.add_argument("--quick", action="store_true", help="2 and 4 clones, 2 rounds")
    ap.add_argument("--keep", action="store_true", help="keep the temp dirs and print them")
    add_record_option(ap)
    args = ap.parse_args()
    if args.quick:
        args.clones, args.rounds = "2,4", 2
    sizes = [int(x) for x in args.clones.split(",") if x.strip()]
    rows, bad = [], False
    for n in sizes:
        figs, notes = fleet(n, args)
        rows.append(figs)
        for note in notes:
            print(f"  clones={n}: {note}")
        print(f"clones={n}: {json.dumps(figs)}", file=sys.stderr, flush=True)
        bad |= bool(figs["lost"] or figs["broken"] or not figs["converged"]
                    or not figs["probe_refused"])
    grow = growth(rows)
    print_table(rows, grow)
    summary = ("SUMMARY fleet: " + "; ".join(
        f"clones={r['clones']} items={r['items_written']} lost={r['lost']} "
        f"stopped={r['stopped']} gave_up={r['gave_up']} refused={r['refused']} "
        f"p50={r['sync_p50_s']} p95={r['sync_p95_s']}" for r in rows)
        + f" {'FAIL' if bad else 'OK'}")
    print(summary)
    record(__file__, {"summary": summary, "verdict": "FAIL" if bad else "OK",
                      "fleets": {str(r["clones"]): r for r in rows}, "growth": grow}, args)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
