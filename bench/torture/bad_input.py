"""Bad-input torture: hundreds of hostile inputs through the real `memory`, none may crash it.

Usage: ``python bench/torture/bad_input.py [--quick] [--only SUBSTRING] [--show N]``

Every case (``bad_input_corpus.py``) gets a fresh copy of one template memory repo, writes
its files, runs one `memory` command as a subprocess (timeout 20 s) and is classified:

- ``traceback``: "Traceback" on stderr (a bug, whatever the input);
- ``hang``: the command did not finish in time;
- ``wrong-acceptance``: exit 0 for an invalid input, or the outside secret (a file next
  to, not inside, the repo: an export's asset, a link's target) found in the repo
  afterwards or in what the command printed;
- ``wrong-refusal``: non-zero exit for a valid input;
- ``no-file``: a refusal that does not name the file the problem is in;
- ``no-line``: a refusal that does not name the line (or JSON place) when there is one;
- ``changed``: the repo differs after a refusal (HEAD, the index, the work tree);
- for an agent hook (the ``transcripts`` cases: a payload's ``transcript_path`` naming a
  FIFO, a device, a folder, a link to a file outside, nothing, a 200 MB sparse file),
  whose detached worker is waited for: ``hang`` when a worker of the case's repo still
  runs after WORKER_BOUND seconds (killed), ``memory`` when a worker's peak resident
  memory passed WORKER_MB, ``wrong-acceptance`` when a worker did not log a refusal it
  owed, or wrote a transcript from what it should have refused.

Prints counts per class and per surface, then one summary line; exits 1 if any class but
``ok`` has a case. ``--quick`` runs every fifth case (under a minute).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from bad_input_corpus import SENTINEL, Case, all_cases
from common import worker_pids
from results import add_record_option, record

BIN = Path(sys.executable).parent
TIMEOUT = 20.0
CLASSES = ("traceback", "hang", "wrong-acceptance", "wrong-refusal", "no-file", "no-line",
           "changed", "memory")
#: A detached agent worker still running after this is hung (killed and counted).
WORKER_BOUND = 60.0
#: A detached worker whose peak resident memory passes this read an unbounded part of a log.
WORKER_MB = 400
#: Files a refused command may still touch: caches and per-clone logs, never memory.
VOLATILE = re.compile(r"^(memory\.db.*|\.memrepo/.*\.(log|lock|jsonl)|\.memrepo/signals/.*)$")


def make_env(base: Path) -> dict[str, str]:
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Torture\n\temail = torture@example.com\n"
        "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
    )
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
           "GIT_CONFIG_NOSYSTEM": "1", "MEMREPO_NO_HOOKS": "1", "TZ": "UTC",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    for var in ("MEMORY_REPO", "MEMORY_SESSION", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
                "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MEMORY_DEBUG"):
        env.pop(var, None)
    return env


def template(base: Path, env: dict[str, str]) -> Path:
    repo = base / "template"
    proc = subprocess.run([str(BIN / "memory"), "init", str(repo), "--hooks", "direct"],
                          cwd=base, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"memory init failed: {proc.stderr}")
    return repo


def snapshot(repo: Path, env: dict[str, str]) -> str:
    """HEAD, the index and every work-tree file's bytes (caches and logs aside)."""
    h = hashlib.sha256()
    for args in (["rev-parse", "HEAD"], ["ls-files", "-s"]):
        h.update(subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True).stdout)
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if rel == ".git" or rel.startswith(".git/") or VOLATILE.match(rel):
            continue
        if p.is_symlink():
            h.update(rel.encode() + b"\0" + os.readlink(p).encode())
        elif p.is_file():  # folders aside: an empty one (.memrepo/sessions) is no change
            h.update(rel.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def leaked(repo: Path) -> list[str]:
    out = []
    for p in repo.rglob("*"):
        if ".git" in p.relative_to(repo).parts[:1] or p.is_symlink() or not p.is_file():
            continue
        if SENTINEL in p.read_bytes():
            out.append(p.relative_to(repo).as_posix())
    objects = subprocess.run(["git", "grep", "-l", SENTINEL.decode(), "HEAD"], cwd=repo,
                             capture_output=True, text=True).stdout.split()
    return out + objects


def _peak_kb(pid: int) -> int:
    """A process's peak resident memory so far (VmHWM), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def watch_workers(repo: Path) -> tuple[list[dict], list[int], int]:
    """Wait for the detached workers of ``repo`` to log their outcome and exit, sampling
    their peak memory; (their log entries, the pids still running after WORKER_BOUND,
    killed, the highest peak seen in kB)."""
    log = repo / ".memrepo" / "agents.log"
    end = time.monotonic() + WORKER_BOUND
    peak = 0
    while True:
        pids = worker_pids(repo)
        peak = max([peak, *(_peak_kb(pid) for pid in pids)])
        try:
            lines = log.read_text("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        done = [json.loads(ln) for ln in lines if '"detached": true' in ln]
        if done and not pids:
            return done, [], peak
        if time.monotonic() > end:
            for pid in pids:  # the workers this case started, by their id
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            return done, pids, peak
        time.sleep(0.02)


def judge_workers(case: Case, repo: Path) -> tuple[list[str], str]:
    """The classes of a hook case's detached work, and what its workers logged."""
    done, hung, peak = watch_workers(repo)
    classes = ["hang"] if hung else []
    if peak > WORKER_MB * 1024:
        classes.append("memory")
    last = done[-1] if done else {}
    wrote = any((repo / "raw").rglob("*.md"))
    if case.worker == "refuse" and (last.get("status") != "failed" or wrote):
        classes.append("wrong-acceptance")
    if not done and not hung:
        classes.append("setup")
    note = (f"\nworker: {last.get('status')} {last.get('detail') or last.get('note') or ''}"
            f" (peak {peak // 1024} MB, read {last.get('read', '-')})")
    return classes, note


def run_case(case: Case, tpl: Path, env: dict[str, str], work: Path, idx: int) -> dict:
    try:
        return _run_case(case, tpl, env, work, idx)
    except Exception as exc:  # the harness's own failure: counted, never hidden
        return {"case": case, "classes": ["setup"], "out": f"harness: {exc!r}", "rc": None}
    finally:
        shutil.rmtree(work / f"c{idx}", ignore_errors=True)


def names_place(case: Case, out: str) -> bool:
    """Whether a refusal names the line (``FILE:LINE`` or ``line N``) and the JSON place
    the case expects."""
    if case.line is not None and not re.search(
            rf"{re.escape(case.where or '')}[^\n]*?:{case.line}\b|line {case.line}\b", out):
        return False
    return not case.mention or case.mention in out


def _run(args: list[str], repo: Path, env: dict[str, str], stdin: bytes | None,
         timeout: float) -> subprocess.CompletedProcess[bytes]:
    """One `memory` run in its own process group: on a timeout the whole group is killed,
    so a child holding the pipes open cannot stall the harness."""
    proc = subprocess.Popen(args, cwd=repo, env=env, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _run_case(case: Case, tpl: Path, env: dict[str, str], work: Path, idx: int) -> dict:
    base = work / f"c{idx}"
    repo = base / "repo"
    ext = base / "ext"
    shutil.copytree(tpl, repo, symlinks=True)
    ext.mkdir(parents=True)
    for rel, data in case.files.items():
        target = base / rel if rel.startswith("ext/") else repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = data.replace(b"@ABS@", str(ext / "secret.png").encode())
        target.write_bytes(data)
    for link, dest in case.links.items():
        where = base / link if link.startswith("ext/") else repo / link
        where.parent.mkdir(parents=True, exist_ok=True)
        if where.is_symlink() or where.is_file():  # a link in place of a template's file
            where.unlink()
        elif where.is_dir():  # ... or of a template's folder
            shutil.rmtree(where)
        where.symlink_to(base / dest)
    for rel in case.fifos:
        where = base / rel if rel.startswith("ext/") else repo / rel
        where.parent.mkdir(parents=True, exist_ok=True)
        if where.is_file():
            where.unlink()
        os.mkfifo(where)
    for rel, size in case.holes.items():  # a sparse file: zeros, never written
        with open(base / rel if rel.startswith("ext/") else repo / rel, "ab") as fh:
            fh.truncate(size)
    memory = str(BIN / "memory")
    for args, stdin in case.setup:
        proc = _run([memory, *args], repo, env, stdin, 120)
        if proc.returncode != 0:
            return {"case": case, "classes": ["setup"],
                    "out": proc.stderr.decode("utf-8", "replace")[-300:], "rc": proc.returncode}
    args = [str(base / a[1:]) if a.startswith("@ext/") else a for a in case.args]
    stdin = case.stdin.replace(b"@EXT@", str(ext).encode()) if case.stdin else case.stdin
    if case.detached:  # an agent hook: what keeps hooks from firing in tests must not here
        env = {k: v for k, v in env.items() if k != "MEMREPO_NO_HOOKS"}
    before = snapshot(repo, env)
    start = time.monotonic()
    try:
        proc = _run([memory, *args], repo, env, stdin, TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"case": case, "classes": ["hang"], "out": "", "rc": None, "secs": TIMEOUT}
    secs = time.monotonic() - start
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    classes = []
    if case.detached:
        found, note = judge_workers(case, repo.resolve())
        classes += found
        out += note
    if "Traceback" in proc.stderr.decode("utf-8", "replace"):
        classes.append("traceback")
    refused = proc.returncode != 0
    if case.sentinel and (leaked(repo) or SENTINEL.decode() in out):
        classes.append("wrong-acceptance")
    if not refused and case.expect == "refuse":
        classes.append("wrong-acceptance")
    if refused and case.expect == "accept":
        classes.append("wrong-refusal")
    if refused and "traceback" not in classes:
        if case.where and case.where not in out:
            classes.append("no-file")
        elif not names_place(case, out):
            classes.append("no-line")
    if refused and snapshot(repo, env) != before:
        classes.append("changed")
    return {"case": case, "classes": list(dict.fromkeys(classes)) or ["ok"], "out": out,
            "rc": proc.returncode, "secs": secs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="every fifth case")
    ap.add_argument("--only", help="cases whose surface:name contains this")
    ap.add_argument("--show", type=int, default=3, help="examples printed per class")
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    add_record_option(ap)
    opts = ap.parse_args(argv)
    cases = all_cases()
    total = len(cases)
    if opts.only:
        cases = [c for c in cases if opts.only in f"{c.surface}:{c.name}"]
    if opts.quick:
        cases = cases[::5]
    if opts.list:
        for c in cases:
            print(f"{c.surface}:{c.name}  expect={c.expect}")
        print(f"{len(cases)} of {total} cases")
        return 0
    work = Path(tempfile.mkdtemp(prefix="memrepo-badinput-"))
    started = time.monotonic()
    try:
        env = make_env(work)
        tpl = template(work, env)
        results = []
        with cf.ThreadPoolExecutor(opts.jobs) as pool:
            futures = [pool.submit(run_case, c, tpl, env, work, i) for i, c in enumerate(cases)]
            for fut in cf.as_completed(futures):
                results.append(fut.result())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_class: Counter[str] = Counter()
    by_surface: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(results, key=lambda r: (r["case"].surface, r["case"].name)):
        for cls in r["classes"]:
            by_class[cls] += 1
            by_surface[r["case"].surface][cls] += 1
            examples[cls].append(r)
    for cls in (*CLASSES, "setup"):
        rows = examples.get(cls, [])
        for r in rows[: opts.show]:
            c = r["case"]
            last = [ln for ln in r["out"].strip().splitlines() if ln.strip()][-1:] or [""]
            print(f"[{cls}] {c.surface}:{c.name} rc={r['rc']} :: {last[0][:200]}")
        if len(rows) > opts.show:
            print(f"[{cls}] ... and {len(rows) - opts.show} more")
    print("\nper surface:")
    for surface, counts in sorted(by_surface.items()):
        n = sum(1 for r in results if r["case"].surface == surface)
        bad = ", ".join(f"{k}={v}" for k, v in sorted(counts.items()) if k != "ok")
        print(f"  {surface:<12} {n:>4} cases  ok={counts['ok']}  {bad}")
    slow = max((r.get("secs", 0) for r in results), default=0)
    summary = "  ".join(f"{cls}={by_class[cls]}" for cls in ("ok", *CLASSES, "setup"))
    print(f"\nbad-input: {len(results)} cases in {time.monotonic() - started:.0f}s "
          f"(slowest {slow:.1f}s)  {summary}")
    record(__file__, {"cases": len(results), "seconds": round(time.monotonic() - started),
                      "slowest_s": slow,
                      "by_class": {c: by_class[c] for c in ("ok", *CLASSES, "setup")},
                      "per_surface": {s: dict(c) for s, c in sorted(by_surface.items())}}, opts)
    return 1 if any(by_class[c] for c in (*CLASSES, "setup")) else 0


if __name__ == "__main__":
    raise SystemExit(main())
