"""Claude Code, Codex and Gemini sessions at once, through the real hooks, beside a person.

Codex and Gemini CLI logs are not read by memrepo: their turns come from the hook
payloads. The prompt hook (Codex ``UserPromptSubmit``, Gemini ``BeforeAgent``) parks the
prompt; the detached worker of the turn's end (``Stop``, ``AfterAgent``) captures it with
the answer. A Claude Code session writes its own log, turn by turn, and memrepo follows
it (``UserPromptSubmit``, ``Stop``, ``SessionEnd`` name the log); each one's second prompt
is ``--huge-kb`` long (a pasted log: the prompt hook must keep its deadline, and the turn
must not cost the session its later turns). This harness runs K sessions of each kind at
once, each sending M prompts through ``memory hook claude-code|codex|gemini EVENT`` (real
processes, the payload on stdin) with random gaps of 0 to ``--max-gap`` seconds, while a
person edits and ``git commit``s in the same repo and one CPU-bound process a core keeps
the machine busy (``--busy``). When the detached workers are done (or a time bound
passed), it counts:

  prompts sent vs user turns in the transcripts: lost, doubled, out of order
  answers not right after their own prompt (mismatched), answers lost
  hook exits != 0, hook calls slower than the installer's 5 s timeout, hung processes
  refused person commits, failed lines in the agents log

    .venv/bin/python bench/torture/agent_sessions.py --quick     # K=3, M=15 (< 2 min)
    .venv/bin/python bench/torture/agent_sessions.py             # K=5, M=30
    .venv/bin/python bench/torture/agent_sessions.py --quick --installed   # as installed

``--installed``: each hook runs as ``memory install`` writes it (memrepo.agents.hook_client),
the clone's resident server up and answering them.

Prints the counts, a final ``SUMMARY`` line, and exits 1 when a promise breaks (a prompt
lost, doubled or out of order, a hook exit != 0 or past 5 s, a hung process, a refused
person commit).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from common import Env, make_env, transcripts, unparseable, worker_pids
from results import add_record_option, record_summary

#: The prompt hook's timeout as the installer writes it (memrepo.agents.settings).
HOOK_TIMEOUT = 5.0
#: A hook process still running after this is hung (killed and counted).
HUNG_AFTER = 30.0
#: (harness, prompt event, end-of-turn event, session prefix)
KINDS = (("codex", "UserPromptSubmit", "Stop", "codex"),
         ("gemini", "BeforeAgent", "AfterAgent", "gemini"))
USER = re.compile(r"^## \d\d:\d\d — (user|agent)\s*$", re.MULTILINE)
MARK = re.compile(r"\b([QA])(\w+?)x(\d\d)z\b")
PERSON_FILE = "knowledge/reference/person-notes.md"


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: Counter = field(default_factory=Counter)
    bad_exit: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    worst: float = 0.0
    sent: dict[str, list[str]] = field(default_factory=dict)  # memrepo session -> markers
    person_ok: int = 0
    person_refused: list[str] = field(default_factory=list)


#: what runs before ``memory``'s arguments: the installed hook's client with --installed
VIA: list[str] = []


def start_resident(env: Env) -> subprocess.Popen[bytes]:
    """The clone's resident server (as ``memory mcp`` starts it), once it answers; the
    hooks then run through memrepo.agents.hook_client (:data:`VIA`)."""
    from memrepo.agents import hook_client
    from memrepo.agents.settings import Client
    from memrepo.index import remote

    sock = remote.socket_path(remote.serve_dir(env.repo))
    site = Path(hook_client.__file__).resolve().parents[2]
    VIA[:] = Client(sys.executable, str(site), str(sock)).argv()
    proc = subprocess.Popen([sys.executable, "-m", "memrepo.agents.resident", "serve",
                             str(env.repo), "--idle", "900"], env=env.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            remote.request(sock, {"op": "ping"}, 1.0)
            return proc
        except remote.Unavailable:
            time.sleep(0.1)
    proc.kill()
    sys.exit("the resident server did not answer within 60 s")


def stop_resident(env: Env, proc: subprocess.Popen[bytes]) -> int:
    """Stop it; how many hook calls it answered."""
    from memrepo.index import remote

    sock = remote.socket_path(remote.serve_dir(env.repo))
    try:
        served = remote.request(sock, {"op": "ping"}, 5.0)["services"].get("hook", 0)
    except (remote.Unavailable, KeyError):
        served = -1
    proc.terminate()
    proc.wait(60)
    return served


def hook(env: Env, t: Tally, harness: str, event: str, payload: dict) -> None:
    data = json.dumps({"hook_event_name": event, **payload}).encode("utf-8")
    hook_env = {k: v for k, v in env.env.items() if k != "MEMREPO_NO_HOOKS"}
    start = time.monotonic()
    p = subprocess.Popen([*VIA, env.memory, "--repo", str(env.repo), "hook", harness, event],
                         cwd=env.repo, env=hook_env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(data, timeout=HUNG_AFTER)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        with t.lock:
            t.hung.append(f"{harness} {event}")
        return
    took = time.monotonic() - start
    with t.lock:
        t.calls[f"{harness} {event}"] += 1
        t.worst = max(t.worst, took)
        if p.returncode != 0:
            t.bad_exit.append(f"{harness} {event}: exit {p.returncode} {err[-200:]!r}")
        if took > HOOK_TIMEOUT:
            t.slow.append(f"{harness} {event}: {took:.1f} s")


def session(env: Env, t: Tally, kind: tuple[str, str, str, str], k: int, m: int,
            gap: float, seed: int) -> None:
    harness, ask, done, prefix = kind
    rnd = random.Random(seed)
    hsid = f"{harness}-sess-{k}-{seed}"
    base = f"{prefix}-{hashlib.sha256(hsid.encode()).hexdigest()[:12]}"
    tag = f"{harness[0]}{k}"
    marks = t.sent.setdefault(base, [])
    for i in range(m):
        q = f"Q{tag}x{i:02d}z"
        prompt = (f"{q} please look at the ledger database migration for the accounts "
                  f"table, step {i} of {m}")
        marks.append(q)
        common = {"session_id": hsid, "cwd": str(env.repo), "transcript_path": None}
        if harness == "codex":
            hook(env, t, harness, ask, {**common, "turn_id": f"turn-{i}", "model": "gpt-5",
                                         "prompt": prompt})
        else:
            hook(env, t, harness, ask, {**common, "prompt": prompt})
        time.sleep(rnd.uniform(0, gap))
        answer = f"A{tag}x{i:02d}z done with step {i}"
        if harness == "codex":
            hook(env, t, harness, done, {**common, "turn_id": f"turn-{i}", "model": "gpt-5",
                                          "stop_hook_active": False,
                                          "last_assistant_message": answer})
        else:
            hook(env, t, harness, done, {**common, "prompt": prompt,
                                          "prompt_response": answer})
        time.sleep(rnd.uniform(0, gap))


def _cc_record(kind: str, hsid: str, i: int, text: str) -> bytes:
    """One record of a Claude Code session log (the shape memrepo's importer reads)."""
    when = f"2026-11-28T10:{i // 60:02d}:{i % 60:02d}Z"
    message: dict = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"id": f"msg-{hsid}-{i}", "role": kind, "model": "claude-x",
                   "content": [{"type": "text", "text": text}],
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
    rec = {"type": kind, "sessionId": hsid, "uuid": f"{kind}-{hsid}-{i}", "timestamp": when,
           "message": message}
    return json.dumps(rec).encode() + b"\n"


def claude_session(env: Env, t: Tally, k: int, m: int, gap: float, seed: int,
                   huge_kb: int) -> None:
    """A Claude Code session: its log grows turn by turn (memrepo follows it: capture
    reads the log, not the payload), UserPromptSubmit and Stop at each turn, SessionEnd
    at the end; the second prompt is ``huge_kb`` KB long (a pasted log)."""
    rnd = random.Random(seed)
    hsid = f"claude-sess-{k}-{seed}"
    base = f"cc-{hashlib.sha256(hsid.encode()).hexdigest()[:12]}"
    log = env.base / "claude-logs" / f"{hsid}.jsonl"
    log.parent.mkdir(exist_ok=True)
    marks = t.sent.setdefault(base, [])
    common = {"session_id": hsid, "cwd": str(env.repo), "transcript_path": str(log)}
    for i in range(m):
        q = f"Qc{k}x{i:02d}z"
        prompt = f"{q} please look at the ledger database migration, step {i} of {m}"
        if i == 1 and huge_kb:
            prompt += " " + "pasted log line 42 ERROR timeout\n" * (huge_kb * 1024 // 34)
        marks.append(q)
        with log.open("ab") as fh:
            fh.write(_cc_record("user", hsid, 2 * i, prompt))
        hook(env, t, "claude-code", "UserPromptSubmit", {**common, "prompt": prompt})
        time.sleep(rnd.uniform(0, gap))
        with log.open("ab") as fh:
            fh.write(_cc_record("assistant", hsid, 2 * i + 1, f"Ac{k}x{i:02d}z done"))
        hook(env, t, "claude-code", "Stop", {**common, "stop_hook_active": False})
        time.sleep(rnd.uniform(0, gap))
    hook(env, t, "claude-code", "SessionEnd", {**common, "reason": "exit"})


def person(env: Env, t: Tally, stop: threading.Event) -> None:
    """A person editing one note and committing it, again and again (their own hooks
    run: the repo's pre-commit validators)."""
    path = env.repo / PERSON_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    while not stop.wait(0.3):
        n += 1
        lines = "".join(f"- person note {j}\n" for j in range(1, n + 1))
        path.write_text(f"---\ntype: reference\n---\n\n# Person notes\n\n{lines}",
                        encoding="utf-8")
        add = subprocess.run(["git", "add", "--", PERSON_FILE], cwd=env.repo, env=env.env,
                             capture_output=True, text=True)
        proc = add if add.returncode else subprocess.run(
            ["git", "commit", "-q", "-m", f"person: note {n}", "--", PERSON_FILE],
            cwd=env.repo, env=env.env, capture_output=True, text=True)
        with t.lock:
            if proc.returncode == 0:
                t.person_ok += 1
            else:
                t.person_refused.append((proc.stderr or proc.stdout).strip()[-300:])


def burn() -> subprocess.Popen[bytes]:
    """A CPU-bound process at normal priority, killed by the caller: a busy machine, where
    the detached workers run niced. In a session of its own, as the workers are: where
    the kernel groups by session (autogroup), a burner in this one would slow only the
    hooks."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            start_new_session=True)


def detached_logged(repo: Path) -> int:
    try:
        lines = (repo / ".memrepo/agents.log").read_text("utf-8", "replace").splitlines()
    except OSError:
        return 0
    return sum('"detached": true' in line for line in lines)


def settle(env: Env, expected: int, bound: float) -> tuple[float, list[int]]:
    """Wait until ``expected`` detached jobs logged and none runs, within ``bound``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < bound:
        if detached_logged(env.repo) >= expected and not worker_pids(env.repo):
            break
        time.sleep(0.25)
    return time.monotonic() - t0, worker_pids(env.repo)


def count(repo: Path, sent: dict[str, list[str]]) -> tuple[Counter, list[str]]:
    """Lost, doubled, out-of-order prompts; lost and mismatched answers."""
    c: Counter = Counter()
    ex: list[str] = []
    texts: dict[str, str] = {}
    for p in transcripts(repo):
        for base in sent:
            if f"-{base}" in p.name:
                texts[base] = texts.get(base, "") + p.read_text("utf-8", "replace")
    for base, marks in sent.items():
        body = texts.get(base, "")
        turns = []  # (role, marker) in the transcript's order
        parts = USER.split(body)
        for role, text in zip(parts[1::2], parts[2::2], strict=False):
            m = MARK.search(text)
            turns.append((role, m.group(0) if m else ""))
        users = [mk for role, mk in turns if role == "user"]
        c["user turns"] += len(users)
        for q in marks:
            n = users.count(q)
            if n == 0:
                c["lost"] += 1
                if len(ex) < 10:
                    ex.append(f"lost {q} ({base})")
            elif n > 1:
                c["doubled"] += n - 1
        seen = [q for q in users if q in marks]
        order = [marks.index(q) for q in seen]
        c["out of order"] += sum(1 for a, b in itertools.pairwise(order) if b < a)
        answers = {mk for role, mk in turns if role == "agent"}
        c["answers lost"] += sum(1 for q in marks if "A" + q[1:] not in answers)
        for (r1, m1), (r2, m2) in itertools.pairwise(turns):
            if r1 == "user" and m1.startswith("Q") and r2 == "agent" and m2 != "A" + m1[1:]:
                c["mismatched"] += 1
    return c, ex


def log_notes(repo: Path) -> Counter:
    c: Counter = Counter()
    try:
        lines = (repo / ".memrepo/agents.log").read_text("utf-8", "replace").splitlines()
    except OSError:
        return c
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("status") == "failed":
            c[f"failed: {str(e.get('detail'))[:90]}"] += 1
        if e.get("unprompted"):
            c["answer without a prompt (logged)"] += 1
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="K=3 sessions of each kind")
    ap.add_argument("--sessions", type=int, default=None, help="K, of each kind (3/5)")
    ap.add_argument("--prompts", type=int, default=None, help="M, per session (15/30)")
    ap.add_argument("--max-gap", type=float, default=0.3, help="seconds between events")
    ap.add_argument("--no-person", action="store_true", help="no person committing")
    ap.add_argument("--huge-kb", type=int, default=2048,
                    help="KB of each Claude Code session's second prompt (0: none)")
    ap.add_argument("--busy", type=int, default=None,
                    help="CPU-bound processes beside the sessions (default: one a core)")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--memory", help="the memory executable (default: beside this python)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repo")
    ap.add_argument("--installed", action="store_true",
                    help="the hooks as `memory install` writes them (memrepo.agents.hook_client), "
                         "the clone's resident server answering them")
    add_record_option(ap)
    a = ap.parse_args()
    k = a.sessions or (3 if a.quick else 5)
    m = a.prompts or (15 if a.quick else 30)
    env = make_env(a.memory)
    t = Tally()
    stop = threading.Event()
    t0 = time.monotonic()
    resident = start_resident(env) if a.installed else None
    try:
        threads = [threading.Thread(target=session, args=(env, t, kind, i, m, a.max_gap,
                                                          a.seed * 100 + j * 10 + i))
                   for j, kind in enumerate(KINDS) for i in range(k)]
        threads += [threading.Thread(target=claude_session,
                                     args=(env, t, i, m, a.max_gap, a.seed * 100 + 90 + i,
                                           a.huge_kb)) for i in range(k)]
        who = [] if a.no_person else [threading.Thread(target=person, args=(env, t, stop))]
        burners = [burn() for _ in range(os.cpu_count() or 1 if a.busy is None else a.busy)]
        for th in threads + who:
            th.start()
        for th in threads:
            th.join()
        stop.set()
        for b in burners:
            b.kill()
            b.wait()
        for th in who:
            th.join()
        driven = time.monotonic() - t0
        waited, alive = settle(env, 3 * k * m + k, bound=180.0)
        c, ex = count(env.repo, t.sent)
        notes = log_notes(env.repo)
        bad = unparseable(env.repo)
    finally:
        if resident is not None:
            served = stop_resident(env, resident)
        if a.keep:
            print(f"kept {env.base}")
        else:
            shutil.rmtree(env.base, ignore_errors=True)
    sent = sum(len(v) for v in t.sent.values())
    print("calls:", ", ".join(f"{h} {n}" for h, n in sorted(t.calls.items())))
    print(f"driven in {driven:.0f} s, workers settled in {waited:.0f} s; slowest hook "
          f"{t.worst:.2f} s; person commits {t.person_ok} ok, {len(t.person_refused)} refused")
    for line in (t.bad_exit + t.slow + t.hung)[:10]:
        print("  HOOK", line)
    for line in t.person_refused[:3]:
        print("  PERSON", line)
    for line in ex:
        print("  LOST", line)
    for what, n in notes.most_common(8):
        print(f"  LOG {n} x {what}")
    for b in bad[:5]:
        print("  UNPARSEABLE", b)
    if resident is not None:
        print(f"installed hooks: the resident server answered {served} of them")
    summary = (f"SUMMARY {'installed ' if resident else ''}sessions={3 * k} prompts={sent} "
               f"user_turns={c['user turns']} "
               f"lost={c['lost']} doubled={c['doubled']} out_of_order={c['out of order']} "
               f"answers_lost={c['answers lost']} mismatched={c['mismatched']} "
               f"hook_exit_nonzero={len(t.bad_exit)} hook_over_5s={len(t.slow)} "
               f"hung={len(t.hung) + len(alive)} person_refused={len(t.person_refused)} "
               f"unparseable={len(bad)} seconds={time.monotonic() - t0:.0f}")
    print(summary)
    record_summary(__file__, summary, a)
    broken = (c["lost"] or c["doubled"] or c["out of order"] or t.bad_exit or t.slow
              or t.hung or alive or t.person_refused or bad)
    return 1 if broken else 0


if __name__ == "__main__":
    os.environ.pop("MEMREPO_NO_HOOKS", None)
    sys.exit(main())
