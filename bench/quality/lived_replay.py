"""Live a LoCoMo conversation through memrepo's real hooks: the replay half of lived.py.

Each LoCoMo session becomes a Claude Code session: a JSONL log in Claude Code's format
that grows turn by turn, and ``memory --repo R hook claude-code EVENT`` exactly as
``memory install claude-code`` writes it (SessionStart, UserPromptSubmit for each of the
user's turns, Stop after each of the agent's, SessionEnd). The first speaker is the user,
the other the agent; each message starts with its speaker's name, as the fresh corpus's
turns do, so lived and fresh differ only by how the memory was lived. ``$MEMREPO_NOW`` is
the session's date (one minute per turn) for every hook, and the jobs of
``memory-config.yaml`` run between sessions at their cron times through ``memory schedule
run --job NAME``, as cron runs them. Between two sessions a job runs at its first and at
its last occurrence: the occurrences between find nothing new (no session came in).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "torture"))
from common import Env, make_env, worker_pids  # noqa: E402

#: Seconds a session's detached work may take before the replay goes on without it.
SETTLE_BOUND = 120.0


class CountingLLM:
    """A model API on 127.0.0.1 that counts requests and answers each with an error:
    the replay runs with a key and this base URL in the agent's environment, so any
    background LLM use is counted, never sent anywhere."""

    def __init__(self) -> None:
        self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.count += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = b'{"type":"error","error":{"type":"invalid_request_error","message":"mock"}}'
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


@dataclass
class Lived:
    """One conversation's memory repo after its replay, and what the replay saw."""

    env: Env
    hook_env: dict[str, str]
    session_ids: dict[int, str] = field(default_factory=dict)  # LoCoMo session -> memrepo id
    growth: list[dict[str, Any]] = field(default_factory=list)
    briefings: list[int] = field(default_factory=list)  # chars at each SessionStart
    jobs_run: int = 0
    failed_hooks: int = 0

    @property
    def repo(self) -> Path:
        return self.env.repo


def new_repo(settings: dict[str, object], llm: CountingLLM, plain: bool = False) -> Lived:
    """A ``memory init`` repo (search overrides in its config; ``plain``: no extraction)
    and the hooks' environment: the agent's key in it, pointed at the counting mock."""
    env = make_env()
    if plain:
        settings = {**settings, "extraction_trigger": "manual"}
    if settings:
        cfg = env.repo / "memory-config.yaml"
        text = cfg.read_text(encoding="utf-8")
        for k, v in settings.items():  # the key's line (under search:, or lifecycle:)
            text, n = re.subn(rf"^  {re.escape(k)}: [^\n]*", f"  {k}: {json.dumps(v)}", text,
                              count=1, flags=re.MULTILINE)
            if not n:
                raise SystemExit(f"lived: no search.{k} in the default config")
        cfg.write_text(text, encoding="utf-8")
        env.git("commit", "-qam", "maintenance: lived config", "--no-verify")
    hook_env = {k: v for k, v in env.env.items() if k != "MEMREPO_NO_HOOKS"}
    hook_env.update(ANTHROPIC_API_KEY="sk-ant-lived-harness", ANTHROPIC_BASE_URL=llm.url,
                    MEMREPO_NO_RESIDENT=os.environ.get("MEMREPO_NO_RESIDENT", ""))
    if not hook_env["MEMREPO_NO_RESIDENT"]:
        del hook_env["MEMREPO_NO_RESIDENT"]
    return Lived(env, hook_env)


def stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def hook(lived: Lived, event: str, payload: dict[str, Any], now: dt.datetime) -> str:
    """Run one hook as Claude Code does; its injected text (empty when none)."""
    env = {**lived.hook_env, "MEMREPO_NOW": stamp(now)}
    proc = subprocess.run(
        [lived.env.memory, "--repo", str(lived.repo), "hook", "claude-code", event],
        input=json.dumps({**payload, "hook_event_name": event}).encode(), env=env,
        capture_output=True, cwd=lived.repo, timeout=120,
    )
    if proc.returncode != 0:
        lived.failed_hooks += 1
        return ""
    out = proc.stdout.decode("utf-8", "replace").strip()
    if not out:
        return ""
    try:
        return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])
    except (ValueError, KeyError, TypeError):
        return ""


def log_record(kind: str, sid: str, n: int, text: str, when: dt.datetime) -> str:
    """One record of a Claude Code session log (user or assistant message)."""
    message: dict[str, Any] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"id": f"msg-{sid}-{n}", "role": kind, "model": "claude-lived",
                   "content": [{"type": "text", "text": text}],
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
    rec = {"type": kind, "sessionId": sid, "uuid": f"{sid}-{n}",
           "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "message": message}
    return json.dumps(rec) + "\n"


def memrepo_id(claude_sid: str) -> str:
    """The id memrepo's Claude Code importer gives a session (``cc-<12 hex>``)."""
    return f"cc-{hashlib.sha256(claude_sid.encode()).hexdigest()[:12]}"


def live_session(lived: Lived, conv: Any, s: Any) -> None:
    """Session ``s`` of ``conv`` as a Claude Code session through the hooks."""
    sid = f"{conv.sample_id}-s{s.num:02d}"
    log = lived.env.base / "claude-logs" / f"{sid}.jsonl"
    log.parent.mkdir(exist_ok=True)
    common = {"session_id": sid, "cwd": str(lived.repo), "transcript_path": str(log)}
    lived.session_ids[s.num] = memrepo_id(sid)
    brief = hook(lived, "SessionStart", {**common, "source": "startup"}, s.when)
    lived.briefings.append(len(brief))
    user = conv.speakers[0]
    for n, t in enumerate(s.turns):
        when = s.when + dt.timedelta(minutes=n)
        text = f"{t.speaker}: {' '.join(t.text.split())}"
        if t.caption:
            text += f"\n> [image] {t.caption}"
        kind = "user" if t.speaker == user else "assistant"
        with log.open("a", encoding="utf-8") as fh:
            fh.write(log_record(kind, sid, n, text, when))
        if kind == "user":
            hook(lived, "UserPromptSubmit", {**common, "prompt": text}, when)
        else:
            hook(lived, "Stop", {**common, "stop_hook_active": False}, when)
    end = s.when + dt.timedelta(minutes=len(s.turns))
    hook(lived, "SessionEnd", {**common, "reason": "exit"}, end)
    settle(lived)


def settle(lived: Lived) -> None:
    """Wait for the session's detached workers (what the next session would find)."""
    t0 = time.monotonic()
    while worker_pids(lived.repo) and time.monotonic() - t0 < SETTLE_BOUND:
        time.sleep(0.1)


def run_jobs(lived: Lived, after: dt.datetime, before: dt.datetime) -> None:
    """The scheduled jobs due between two sessions, in time order, as cron runs them."""
    from croniter import croniter

    from memrepo.lifecycle.schedule import jobs

    due: set[tuple[dt.datetime, str]] = set()
    for job in jobs(lived.repo):
        it = croniter(job.cron, after)
        first = it.get_next(dt.datetime)
        if first >= before:
            continue
        last = first
        for _ in range(100_000):
            nxt = it.get_next(dt.datetime)
            if nxt >= before:
                break
            last = nxt
        due |= {(first, job.name), (last, job.name)}
    cron_env = {k: v for k, v in lived.hook_env.items()  # cron has no agent's key
                if not k.startswith("ANTHROPIC_")}
    for when, name in sorted(due):
        env = {**cron_env, "MEMREPO_NOW": stamp(when)}
        subprocess.run([lived.env.memory, "--repo", str(lived.repo), "schedule", "run",
                        "--job", name], env=env, capture_output=True, cwd=lived.repo,
                       timeout=600)
        lived.jobs_run += 1
    settle(lived)


def growth(lived: Lived, day: dt.date) -> dict[str, Any]:
    """Files, bytes, commits, MEMORY.md lines and the day's journal after a session."""
    files = lived.env.git("ls-files", "-z").split("\0")
    size = sum((lived.repo / f).stat().st_size for f in files if f and (lived.repo / f).exists())
    journal = lived.repo / "knowledge" / "journal" / f"{day.isoformat()}.md"
    memory = lived.repo / "knowledge" / "memory" / "MEMORY.md"
    return {
        "files": len([f for f in files if f]), "bytes": size,
        "commits": int(lived.env.git("rev-list", "--count", "HEAD").strip()),
        "memory_lines": len(memory.read_text("utf-8").splitlines()) if memory.exists() else 0,
        "journal_bytes": journal.stat().st_size if journal.exists() else 0,
    }


def replay(conv: Any, settings: dict[str, object], llm: CountingLLM,
           sessions: int | None = None, plain: bool = False) -> Lived:
    """Live ``conv`` (its first ``sessions`` sessions) in a new memory repo; ``plain``:
    the transcripts alone (no extraction at session end, no scheduled job)."""
    from eval_compile_locomo import resident_model

    lived = new_repo(settings, llm, plain)
    prev: dt.datetime | None = None
    with resident_model(lived.repo, settings):  # MiniLM: the resident a user would run
        for s in conv.sessions[:sessions]:
            if prev is not None and not plain:
                run_jobs(lived, prev, s.when)
            live_session(lived, conv, s)
            prev = s.when + dt.timedelta(minutes=len(s.turns) + 1)
            lived.growth.append({"session": s.num, **growth(lived, s.when.date())})
            print(f"  {conv.sample_id} session {s.num}: {lived.growth[-1]}", file=sys.stderr,
                  flush=True)
    return lived


def hook_times(repo: Path) -> dict[str, dict[str, float]]:
    """Per hook (and detached worker): calls, p50, p95 and max ms, from the agents log."""
    by: dict[str, list[float]] = {}
    for line in (repo / ".memrepo" / "agents.log").read_text("utf-8").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if "ms" not in e:
            continue
        key = f"{e.get('event')}{' worker' if e.get('detached') else ''}"
        by.setdefault(key, []).append(float(e["ms"]))
    out = {}
    for key, xs in sorted(by.items()):
        xs.sort()
        out[key] = {"n": len(xs), "p50": xs[len(xs) // 2],
                    "p95": xs[min(len(xs) - 1, int(0.95 * len(xs)))], "max": xs[-1]}
    return out
