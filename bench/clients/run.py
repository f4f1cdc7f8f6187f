#!/usr/bin/env python3
"""memrepo inside the real clients: Claude Code, Codex and Gemini CLI, each from npm, each
against a loopback mock of its model API that records every request. One command:

    .venv/bin/python bench/clients/run.py                               # all three, 5 rounds
    .venv/bin/python bench/clients/run.py --clients claude --rounds 7
    .venv/bin/python bench/clients/run.py --skip-timing                 # the checks alone

Not part of the test suite (it installs ~400 MB of clients once and takes minutes). The
clients go to ``~/.cache/memrepo-bench/clients`` (npm, the only network use; reused after,
``--update`` for the newest). Then the harness re-runs itself inside ``unshare -n``: a network
namespace with nothing but loopback, so no client, mock or memrepo process can reach
anything else (``--no-netns``: loopback base URLs and a dead proxy alone).

For each client and each way of installing memrepo (``memory install AGENT --scope
project``; the plugin through the client's own commands, ``claude plugin marketplace add``
+ ``claude plugin install``, ``codex plugin marketplace add`` + ``codex plugin add``,
``gemini extensions install`` with the steps its README gives, the repo through
``MEMORY_REPO``; ``http``: ``memory mcp --http`` for the repo with a bearer token, and
``memory install AGENT --scope project --url URL --token-env MEMREPO_MCP_TOKEN``, the token
in the client's environment), in a sandbox home with a fresh ``memory init`` repo holding
one canary note (knowledge/reference/zephyrine.md: "kestrel-7"), it checks:

- ``mcp_connects``: the client's own ``mcp list`` says memrepo's server is connected (Codex
  only lists it: that it started shows in ``tool_call``);
- ``briefing``: the SessionStart briefing is in a request the mock received;
- ``recall``: the prompt's recall is, with the canary;
- ``tool_call``: the mock answers the prompt with a call of memrepo's ``memory_search`` (after a
  ``ToolSearch`` where Claude Code defers MCP tools), the client runs it in its real session,
  and the next request carries the result with the canary's file;
- ``captured_once``: one transcript in raw/conversations holds the prompt, once;
- ``no_failed_hooks``: no hook or detached worker logged a failure in .memrepo/agents.log;
- ``no_memrepo_model_calls``: every request came from the client (memrepo spent no model call);
- ``same_as_install`` (plugin and http routes): the same hooks ran, with the same outcome,
  and the same tools reached the model as with ``memory install``;
- ``http`` route (the server a child of the harness, so inside the same network namespace
  as the client): ``mcp_connects`` and ``tool_call`` above go through HTTP (the client's
  entry is the URL); ``unauthorized_401``: a request with no token, or a wrong one, is
  refused 401 (Python urllib); ``missing_token`` (Claude Code, Gemini CLI): with the
  variable unset, the client's ``mcp list`` does not show it connected; ``read_only_http``:
  with a ``--read-only`` token the write tools are not listed and a ``memory_remember`` call
  is refused, nothing written; ``read_only_client``: the client run with the read-only
  token, the mock asking for ``memory_remember``: the client never gets it to write;
  ``token_not_in_files``: no file of the home or project holds a token. Not timed.
- ``startup_ratio`` (Claude Code): the wall time of ``claude -p hello`` with memrepo installed
  over the same without, <= ``--max-ratio`` (1.3).

Start-up cost: every variant has its own sandbox: none, install, plugin, and for Claude
Code the diagnostic ones (``hooks``: the hooks alone; ``mcp``: the server alone; ``stub``: a
15-line Python MCP server instead of memrepo's; ``noop``: five hooks running ``true``;
``floor``: both, the least any integration with hooks and a Python MCP server costs;
``httpfloor``: the floor with four of the hooks Claude Code's ``http`` hooks answered ``{}``
by this process; ``plain``: memrepo installed with ``MEMREPO_PLAIN_HOOKS=1``, its hooks
``memory hook`` processes rather than :mod:`memrepo.agents.hook_client`). After
``--warmup`` unmeasured runs each (the first starts memrepo's resident server), ``--rounds``
rounds run them interleaved, the order rotating, each run after the previous one's detached
workers finished. A run's wall time is split by the mock's clock into before the first
request, the API exchange, and after the last answer; the hooks' own times come from
.memrepo/agents.log. Then ``memory mcp``'s spawn to ``initialize`` answered, and the floors
of a Python process and of a ``memory hook`` that does nothing (``MEMREPO_NO_HOOKS=1``).

Prints a markdown summary, records the run in bench/results/ (``--no-record`` skips it) and
exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "common"))

import clients  # noqa: E402
import mock_api  # noqa: E402
import netns  # noqa: E402
from http_route import (  # noqa: E402
    TOKEN_ENV,
    TOOL_ARGS,
    check_missing_token,
    check_read_only_client,
    check_read_only_http,
    check_token_files,
    check_unauthorized,
    start_http,
    stop_procs,
)
from results import add_record_option, record  # noqa: E402
from sessions import (  # noqa: E402
    agents_log,
    log,
    memrepo_tools,
    ok,
    procs_matching,
    run,
    segment,
    session,
    strings,
    tool_results,
    wait_workers,
)

PROMPT = "Which build cluster does project Zephyrine use?"
TRIGGER = "Zephyrine"
CANARY = "kestrel-7"
CANARY_FILE = "knowledge/reference/zephyrine.md"
SEED = """---
type: reference
title: Project Zephyrine build cluster
---

# Project Zephyrine

- Project Zephyrine builds on the kestrel-7 cluster; Priya Raman owns its release train.
- The Zephyrine canary word is marmalade-42.
"""
#: the floor of any stdio MCP server in Python: answers initialize and tools/list, nothing else
STUB_SERVER = """import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m:
        continue
    if m.get("method") == "initialize":
        r = {"protocolVersion": m["params"].get("protocolVersion", "2025-06-18"),
             "capabilities": {"tools": {}}, "serverInfo": {"name": "stub", "version": "0"}}
    elif m.get("method") == "tools/list":
        r = {"tools": [{"name": "memory_search", "description": "stub",
                        "inputSchema": {"type": "object", "properties": {}}}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n")
    sys.stdout.flush()
"""
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "BeforeAgent", "Stop", "AfterAgent",
               "SessionEnd")


# --- processes -------------------------------------------------------------------------------


def stop_resident(sb: clients.Sandbox, memory: Path) -> str:
    """Stop the memory repo's resident server (started by ``memory mcp``); kill it by pid
    if it is still there after 5 s."""
    if not sb.repo.exists():
        return "no repo"
    run([str(memory), "--repo", str(sb.repo), "serve", "--stop"], sb, cwd=sb.repo, check=False,
        timeout=60)
    t0 = time.monotonic()
    while (pids := procs_matching("memrepo", "serve", str(sb.repo))) \
            and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    return f"killed {pids}" if pids else "stopped"


# --- sandboxes ----------------------------------------------------------------------------------


def make_sandbox(work: Path, client: clients.Client, route: str, url: str, args: argparse.Namespace
                 ) -> tuple[clients.Sandbox, list[str]]:
    """A home, a memory repo with the canary note, a project folder, and memrepo installed
    by ``route``; the steps taken, one line each."""
    sb = clients.Sandbox(work / f"{client.name}-{route}", client.name, route, url)
    sb.home.mkdir(parents=True)
    sb.proj.mkdir()
    (sb.home / ".gitconfig").write_text(
        "[user]\n\tname = Bench User\n\temail = bench@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n")
    sb.env = {**clients.base_env(sb, args.memory.parent, args.cache), **client.env(sb)}
    if route == "plugin":
        sb.env["MEMORY_REPO"] = str(sb.repo)  # how a plugin finds the repo (docs/plugins.md)
    memory = str(args.memory)
    run([memory, "init", str(sb.repo)], sb, cwd=sb.root)
    (sb.repo / CANARY_FILE).write_text(SEED)
    run(["git", "add", CANARY_FILE], sb, cwd=sb.repo)
    run(["git", "commit", "-q", "-m", "reference: project Zephyrine"], sb, cwd=sb.repo)
    run(["git", "init", "-q"], sb)
    client.configure(sb)
    try:
        return sb, setup_route(sb, client, route, args)
    except BaseException:
        stop_procs(sb)  # the http route's server, when what came after it failed
        raise


def setup_route(sb: clients.Sandbox, client: clients.Client, route: str,
                args: argparse.Namespace) -> list[str]:
    """memrepo installed in ``sb`` by ``route``; the steps taken, one line each."""
    memory = str(args.memory)
    steps: list[str] = []
    if route in ("install", "http", "hooks", "mcp", "async", "stub", "plain"):
        http: list[str] = []
        plain = {"MEMREPO_PLAIN_HOOKS": "1"} if route == "plain" else {}
        if route == "http":
            steps += start_http(sb, args)
            http = ["--url", sb.mcp_url, "--token-env", TOKEN_ENV]
        sb.env.update(plain)  # plain: `memory hook` commands, not memrepo.agents.hook_client
        out = run([memory, "install", client.agent, "--scope", "project", "--repo", str(sb.repo),
                   "--home", str(sb.home), "--project", str(sb.proj), *http], sb)
        for key in plain:
            sb.env.pop(key)
        steps.append(" ".join([*(f"{k}={v}" for k, v in plain.items()), "memory install",
                               client.agent, "--scope project", *http]))
        steps += [f"  | {line}" for line in out.stdout.splitlines() if line.strip()]
        if route == "hooks":
            (sb.proj / ".mcp.json").unlink()
            steps.append("removed .mcp.json (hooks only)")
        elif route in ("mcp", "stub"):
            (sb.proj / ".claude" / "settings.json").unlink()
            steps.append("removed .claude/settings.json (MCP server only)")
        if route == "stub":
            write_stub(sb, args)
            steps.append("the server is a 15-line Python stdio stub, not memrepo's")
        elif route == "async":  # Claude Code runs an `async` hook without waiting for it
            path = sb.proj / ".claude" / "settings.json"
            doc = json.loads(path.read_text())
            for event in ("Stop", "SessionEnd"):
                for group in doc["hooks"][event]:
                    for handler in group["hooks"]:
                        handler["async"] = True
            path.write_text(json.dumps(doc, indent=2) + "\n")
            steps.append("Stop and SessionEnd hooks made `async: true`")
        steps += client.after_install(sb)
    elif route in ("noop", "floor", "httpfloor"):  # the client's own cost of five hooks
        events = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
        hooks = {e: [{"hooks": [{"type": "command", "command": "true"}]}] for e in events}
        if route == "httpfloor":  # SessionStart `true`, the rest POSTs answered `{}`
            url = empty_http_server()
            for e in events[1:]:
                hooks[e] = [{"hooks": [{"type": "http", "url": f"{url}/{e}"}]}]
        (sb.proj / ".claude").mkdir()
        (sb.proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        steps.append("five hooks running `true` (the client's own cost of a hook)")
        if route in ("floor", "httpfloor"):  # and of a Python stdio MCP server
            write_stub(sb, args)
            steps.append("and a 15-line Python stdio MCP server (the floor of any such setup)")
            steps += client.after_install(sb)
    elif route == "plugin":
        steps += client.plugin_setup(sb, args.marketplace)
        for argv in client.plugin_steps(sb, args.marketplace):
            out = run(argv, sb)
            shown = " ".join(Path(a).name if a == client.exe else a for a in argv)
            said = [ln for ln in (out.stdout.strip().splitlines() or out.stderr.splitlines())
                    if ln.strip() and not ln.startswith("WARNING")]
            steps.append(f"{shown}: {said[-1].strip()[:160] if said else 'ok'}")
    return steps


def empty_http_server() -> str:
    """A loopback HTTP server in this process answering every POST ``{}``: the floor of
    Claude Code's ``http`` hooks."""
    import http.server
    import threading

    class Empty(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Empty)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}/hook"


def write_stub(sb: clients.Sandbox, args: argparse.Namespace) -> None:
    """The project's MCP server `memrepo` is the 15-line stub (STUB_SERVER), not memrepo's."""
    (sb.root / "stub_mcp.py").write_text(STUB_SERVER)
    stub = {"command": str(args.memory.parent / "python"), "args": [str(sb.root / "stub_mcp.py")]}
    (sb.proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"memrepo": stub}}))


# --- the checks ---------------------------------------------------------------------------------


def check_session(client: clients.Client, s: dict[str, Any]) -> dict[str, dict[str, Any]]:
    reqs = s["requests"]
    texts = [t for r in reqs for t in strings(r.get("body"))]
    res: dict[str, dict[str, Any]] = {}
    brief = [segment(t, "memrepo briefing") for t in texts if "memrepo briefing" in t]
    res["briefing"] = ok(bool(brief), f"{len(brief[0])} chars reached the model" if brief
                         else "no 'memrepo briefing' in any request")
    recall = [segment(t, "memrepo recall") for t in texts if "memrepo recall" in t]
    hit = [t for t in recall if CANARY in t]
    res["recall"] = ok(bool(hit), f"{len(hit[0])} chars reached the model, with {CANARY!r}"
                       if hit else (f"recall without {CANARY!r}: {recall[0][:120]!r}" if recall
                                    else "no 'memrepo recall' in any request"))
    calls = [r for r in reqs if str(r.get("answer", "")).endswith("memory_search")]
    if not calls:
        offered = memrepo_tools(client, reqs)
        res["tool_call"] = ok(False, "memory_search never offered to the model (tools: "
                              f"{', '.join(offered) or 'none'})")
    else:
        name = calls[0]["answer"].split(":", 1)[1]
        results = [t for r in reqs if r["n"] > calls[0]["n"] for t in tool_results(r.get("body"))
                   if t.strip()]
        text = " ".join(results)
        first = next((ln.strip() for ln in text.splitlines() if " hit" in ln), text[:80])
        res["tool_call"] = ok(CANARY_FILE in text, f"{name} → {first[:90]!r}" if results
                              else f"{name} called; no result came back")
    agents = sorted({r.get("headers", {}).get("user-agent", "?").split(" ")[0] for r in reqs
                     if r["method"] == "POST"})
    foreign = [a for a in agents if "python" in a.lower()]
    res["no_memrepo_model_calls"] = ok(not foreign, f"user agents: {', '.join(agents)}")
    if s["rc"] != 0:
        res["session_exit"] = ok(False, f"exit {s['rc']}: {s['stderr'][-300:]}")
    return res


def transcripts_with(repo: Path, text: str) -> list[Path]:
    base = repo / "raw" / "conversations"
    return sorted(p for p in base.rglob("*.md") if text in p.read_text(encoding="utf-8",
                                                                       errors="replace"))


def check_capture(sb: clients.Sandbox) -> dict[str, Any]:
    found = transcripts_with(sb.repo, PROMPT)
    if len(found) != 1:
        return ok(False, f"{len(found)} transcripts hold the prompt: "
                  f"{[p.name for p in found]}")
    text = found[0].read_text(encoding="utf-8")
    body = text.split("\n---\n", 1)[-1]
    times = body.count(PROMPT)
    rel = found[0].relative_to(sb.repo).as_posix()
    tracked = run(["git", "log", "--oneline", "--", rel], sb, cwd=sb.repo).stdout.strip()
    state = "committed" if tracked else "open, not committed yet"
    return ok(times == 1, f"{found[0].name} ({state}), the prompt {times}x")


def session_events(s: dict[str, Any]) -> list[str]:
    return sorted({f"{e.get('event')}:{e.get('action')}:{e.get('status')}"
                   f"{':worker' if e.get('detached') else ''}" for e in s["log"]})


def check_route(work: Path, client: clients.Client, route: str, args: argparse.Namespace
                ) -> dict[str, Any]:
    """Every check for one client and one install route, in a fresh sandbox."""
    log(f"== {client.name} / {route}")
    out: dict[str, Any] = {"checks": {}, "steps": [], "notes": []}
    checks = out["checks"]
    with mock_api.Mock(work / f"requests-{client.name}-{route}.jsonl", trigger=TRIGGER,
                       tool_args=TOOL_ARGS) as mock:
        sb: clients.Sandbox | None = None
        try:
            sb, out["steps"] = make_sandbox(work, client, route, mock.url, args)
            listed = run(client.mcp_list(), sb, check=False, timeout=180)
            good, said = client.mcp_connected(listed.stdout + listed.stderr)
            checks["mcp_connects"] = ok(good, said)
            cold = session(sb, client, mock, client.hello)
            out["cold"] = {"wall": round(cold["wall"], 2),
                           "tools_offered": memrepo_tools(client, cold["requests"])}
            if client.name != "claude" and not out["cold"]["tools_offered"]:
                out["notes"].append(
                    f"first session (resident server cold, {cold['wall']:.1f} s): memrepo's "
                    "tools not offered to the model (the client did not wait for the server)")
            s = session(sb, client, mock, PROMPT, check=True)
            checks.update(check_session(client, s))
            out["events"] = session_events(s)
            out["tools"] = memrepo_tools(client, s["requests"])
            if s["waited"] < 0:
                checks["workers_finish"] = ok(False, "detached workers still running after 120 s")
            checks["captured_once"] = check_capture(sb)
            if route == "http":
                checks["unauthorized_401"] = check_unauthorized(sb)
                if not isinstance(client, clients.Codex):  # its `mcp list` connects nothing
                    checks["missing_token"] = check_missing_token(sb, client)
                checks["read_only_http"] = check_read_only_http(sb)
                checks["read_only_client"] = check_read_only_client(sb, client, mock)
                checks["token_not_in_files"] = check_token_files(sb)
            failed = [e for e in agents_log(sb.repo) if e.get("status") == "failed"]
            checks["no_failed_hooks"] = ok(
                not failed, f"{len(agents_log(sb.repo))} agents.log lines, none failed"
                if not failed else "; ".join(f"{e.get('event')}: {str(e.get('detail'))[:160]}"
                                             for e in failed[:3]))
        except Exception as exc:  # a broken setup is a failed check, not a traceback
            checks["run"] = ok(False, f"{type(exc).__name__}: {str(exc)[:600]}")
        finally:
            if sb is not None:
                wait_workers(sb.repo, 30)
                stop_procs(sb)
                out["resident"] = stop_resident(sb, args.memory)
    return out


def compare_routes(install: dict[str, Any], plugin: dict[str, Any]) -> dict[str, Any]:
    """The plugin route against `memory install`: the same hooks and outcomes, the same tools."""
    a, b = install.get("events", []), plugin.get("events", [])
    ta, tb = install.get("tools", []), plugin.get("tools", [])
    diff = sorted(set(a) ^ set(b))
    same = a == b and ta == tb and bool(a)
    detail = (f"{len(a)} hook outcomes and tools [{', '.join(ta)}] alike" if same else
              f"hooks differ: {diff}; tools {ta} vs {tb}")
    return ok(same, detail)


# --- start-up cost ------------------------------------------------------------------------------


SPLIT = ("hooks", "mcp", "stub", "noop", "floor", "httpfloor", "plain")


def variants_of(client: clients.Client, args: argparse.Namespace) -> list[str]:
    timed = [r for r in client.routes if r != "http"]  # the http route is not timed
    if args.variants:
        wanted = ["none", *[v for v in args.variants if v != "none"]]
        return [v for v in wanted if v in timed or v == "none"
                or (client.name == "claude" and v in (*SPLIT, "async"))]
    out = ["none", *[r for r in timed if r in args.routes]]
    if client.name == "claude" and args.split:
        out += SPLIT
    return out


def init_ms(sb: clients.Sandbox, memory: Path, n: int) -> list[float]:
    """Spawn ``memory --repo R mcp`` to ``initialize`` answered, ms, n times (raw JSON-RPC)."""
    msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}) + "\n"
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.Popen([str(memory), "--repo", str(sb.repo), "mcp"], env=sb.env,
                             cwd=sb.proj, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        assert p.stdin and p.stdout
        p.stdin.write(msg.encode())
        p.stdin.flush()
        p.stdout.readline()
        times.append((time.perf_counter() - t0) * 1000)
        p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return times


def process_ms(argv: list[str], sb: clients.Sandbox, n: int, payload: str = "",
               env: dict[str, str] | None = None) -> float | None:
    """Median ms of running ``argv`` to its exit, payload on stdin."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, input=payload, text=True, capture_output=True, cwd=sb.proj,
                       env={**sb.env, **(env or {})}, check=False)
        times.append((time.perf_counter() - t0) * 1000)
    return med(times)


def med(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 3) if xs else None


def timing(work: Path, client: clients.Client, args: argparse.Namespace) -> dict[str, Any]:
    variants = variants_of(client, args)
    log(f"== {client.name}: start-up, {' / '.join(variants)}, {args.rounds} rounds")
    mocks, boxes = {}, {}
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    cold: dict[str, float] = {}
    out: dict[str, Any] = {"variants": {}, "rounds": args.rounds}
    try:
        for v in variants:
            mocks[v] = mock_api.Mock(work / f"requests-time-{client.name}-{v}.jsonl").__enter__()
            boxes[v], _ = make_sandbox(work / "time", client, v, mocks[v].url, args)
        for i in range(args.warmup):
            for v in variants:
                s = session(boxes[v], client, mocks[v], client.hello)
                if i == 0:
                    cold[v] = round(s["wall"], 3)
        for r in range(args.rounds):
            k = r % len(variants)
            for v in variants[k:] + variants[:k]:
                s = session(boxes[v], client, mocks[v], client.hello)
                if s["rc"] != 0:
                    out.setdefault("errors", []).append(f"{v}: exit {s['rc']}: "
                                                        f"{s['stderr'][-200:]}")
                runs[v].append(s)
            log(f"   round {r + 1}: " + ", ".join(f"{v} {runs[v][-1]['wall']:.2f}s"
                                                    for v in variants))
        if "install" in boxes:
            sb, n = boxes["install"], max(5, 2 * args.rounds)
            out["mcp_initialize_ms"] = med(init_ms(sb, args.memory, n))
            py = str(args.memory.parent / "python")
            payload = json.dumps({"session_id": "floor", "hook_event_name": "Stop",
                                  "cwd": str(sb.proj)})
            out["floor_ms"] = {
                "python -c pass": process_ms([py, "-c", "pass"], sb, n),
                "memory hook, MEMREPO_NO_HOOKS=1": process_ms(
                    [str(args.memory), "--repo", str(sb.repo), "hook", client.agent, "Stop"],
                    sb, n, payload, {"MEMREPO_NO_HOOKS": "1"}),
            }
    finally:
        for sb in boxes.values():
            wait_workers(sb.repo, 30)
            stop_resident(sb, args.memory)
        for m in mocks.values():
            m.__exit__(None, None, None)
    base = runs["none"]
    for v in variants:
        walls = [s["wall"] for s in runs[v]]
        row: dict[str, Any] = {
            "wall_s": med(walls), "min_s": round(min(walls), 3), "max_s": round(max(walls), 3),
            "pre_request_s": med([s.get("pre") for s in runs[v]]),
            "api_s": med([s.get("api") for s in runs[v]]),
            "after_answer_s": med([s.get("post") for s in runs[v]]),
            "cold_s": cold.get(v),
        }
        if v != "none":
            row["ratio_median_paired"] = med([s["wall"] / b["wall"] for s, b in
                                              zip(runs[v], base, strict=True)])
            row["ratio_of_medians"] = round(row["wall_s"] / med([b["wall"] for b in base]), 3)
            hooks: dict[str, list[float]] = {}
            for s in runs[v]:
                for e in s["log"]:
                    if not e.get("detached") and e.get("event") in HOOK_EVENTS and "ms" in e:
                        hooks.setdefault(e["event"], []).append(e["ms"])
            row["hook_ms"] = {ev: med(xs) for ev, xs in hooks.items()}
        out["variants"][v] = row
    return out


# --- the summary -------------------------------------------------------------------------------


def fmt(x: Any, unit: str = "") -> str:
    if x is None:
        return "–"
    return f"{x:.2f}{unit}" if isinstance(x, float) else f"{x}{unit}"


def where_time_goes(t: dict[str, Any]) -> list[str]:
    """What memrepo adds to a run, by the clock of the mock and of agents.log, and what the
    diagnostic variants say (seconds over ``none``, medians)."""
    rows = t["variants"]
    base, inst = rows.get("none"), rows.get("install")
    if not base or not inst or inst["wall_s"] is None:
        return []

    def add(row: dict[str, Any], key: str = "wall_s") -> str:
        a, b = row.get(key), base.get(key)
        return "?" if a is None or b is None else f"{a - b:+.2f} s"

    hooks = inst.get("hook_ms") or {}
    out = [f"- install adds {add(inst)}: {add(inst, 'pre_request_s')} before the first request,"
           f" {add(inst, 'after_answer_s')} after the answer; its hooks' own times sum to "
           f"{sum(x for x in hooks.values() if x) / 1000:.2f} s ("
           + ", ".join(f"{k} {x:.0f} ms" for k, x in hooks.items() if x) + ")"]
    said = {"hooks": "the hooks alone", "mcp": "the MCP server alone",
            "stub": "a minimal Python MCP server instead", "noop": "five hooks running `true`",
            "floor": "five `true` hooks and the minimal MCP server",
            "httpfloor": "SessionStart `true`, four `http` hooks answered `{}`, the minimal "
                         "MCP server",
            "async": "Stop and SessionEnd `async: true`", "plugin": "the plugin",
            "plain": "memrepo's hooks as plain `memory hook` processes"}
    out += [f"- {said[v]} ({v}): {add(rows[v])}" for v in said if v in rows]
    return out


def summary(res: dict[str, Any]) -> str:
    lines = ["## memrepo in the real clients", ""]
    v = res["versions"]
    lines += [f"Claude Code {v['claude']}, Codex {v['codex']}, Gemini CLI {v['gemini']} (npm); "
              f"memrepo {res['memrepo']}; isolation: {res['isolation']}; load {res['load']}", ""]
    if res["checks"]:
        lines += ["| client | route | check | result | detail |", "| --- | --- | --- | --- | --- |"]
        for name, routes in res["checks"].items():
            for route, r in routes.items():
                for check, c in r["checks"].items():
                    mark = "ok" if c["ok"] else "**FAIL**"
                    detail = str(c["detail"]).replace("|", "\\|").replace("\n", " ")[:150]
                    lines.append(f"| {name} | {route} | {check} | {mark} | {detail} |")
        lines.append("")
        for name, routes in res["checks"].items():
            for route, r in routes.items():
                for note in r.get("notes", []):
                    lines.append(f"- {name} / {route}: {note}")
                for step in r.get("steps", []):
                    if not step.startswith("  |"):
                        lines.append(f"- {name} / {route} setup: {step}")
        lines.append("")
    for name, t in res["timing"].items():
        if "error" in t:
            lines += [f"### start-up, {name}: **FAIL** {t['error']}", ""]
            continue
        lines += [f"### start-up, {name} (median of {t['rounds']} interleaved rounds, seconds)",
                  "", "| variant | wall | × none (paired median) | before 1st request | API | "
                  "after answer | first run | hooks (ms, p50) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for var, row in t["variants"].items():
            hooks = ", ".join(f"{k} {fmt(x)}" for k, x in (row.get("hook_ms") or {}).items())
            lines.append(f"| {var} | {fmt(row['wall_s'])} | {fmt(row.get('ratio_median_paired'))}"
                         f" | {fmt(row['pre_request_s'])} | {fmt(row['api_s'])} | "
                         f"{fmt(row['after_answer_s'])} | {fmt(row['cold_s'])} | {hooks} |")
        if t.get("mcp_initialize_ms") is not None:
            lines.append(f"\n`memory mcp` spawn to `initialize` answered (resident up): "
                         f"{t['mcp_initialize_ms']:.0f} ms p50; process floors, p50: " +
                         ", ".join(f"{k} {x:.0f} ms" for k, x in t["floor_ms"].items()))
        lines += ["", *where_time_goes(t)]
        for err in t.get("errors", []):
            lines.append(f"- error: {err}")
        lines.append("")
    lines.append(f"**{res['verdict']}**")
    return "\n".join(lines)


def plain(res: dict[str, Any]) -> dict[str, Any]:
    """The run's figures for bench/results (no sandboxes, no request bodies)."""
    checks = {name: {route: {c: ("ok" if v["ok"] else f"FAIL: {v['detail']}")
                             for c, v in r["checks"].items()}
                     | ({"notes": r["notes"]} if r.get("notes") else {})
                     for route, r in routes.items()} for name, routes in res["checks"].items()}
    return {"versions": res["versions"], "isolation": res["isolation"], "checks": checks,
            "cold_first_session": {name: {route: r.get("cold") for route, r in routes.items()}
                                   for name, routes in res["checks"].items()},
            "timing": res["timing"], "verdict": res["verdict"]}


# --- main ---------------------------------------------------------------------------------------


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", default="claude,codex,gemini",
                    help="comma-separated: claude, codex, gemini (default: all three)")
    ap.add_argument("--routes", default="install,plugin",
                    help="install routes to check: install (memory install --scope project), "
                         "plugin (each client's own plugin or extension install), http "
                         "(memory mcp --http with a token, memory install --url; not timed)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (5)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured runs per variant (1)")
    ap.add_argument("--max-ratio", type=float, default=1.3,
                    help="claude -p with memrepo over without, at most (1.3)")
    ap.add_argument("--no-split", dest="split", action="store_false",
                    help="time Claude Code without the diagnostic variants (hooks: hooks only; "
                         "mcp: the MCP server only; stub: a minimal Python MCP server instead "
                         "of memrepo's; noop: five hooks running `true`; floor: noop and "
                         "stub together)")
    ap.add_argument("--variants", default="",
                    help="the timing variants instead of the default, comma-separated: none, "
                         "install, plugin, and for Claude Code hooks, mcp, stub, noop, floor, "
                         "async (Stop and SessionEnd hooks `async: true`)")
    ap.add_argument("--skip-checks", action="store_true", help="timing only")
    ap.add_argument("--skip-timing", action="store_true", help="checks only")
    ap.add_argument("--update", action="store_true", help="npm install the newest clients")
    ap.add_argument("--pin", action="append", default=[], metavar="CLIENT=VERSION",
                    help="a client version to install (claude=2.1.332); repeatable")
    ap.add_argument("--cache", type=Path, default=clients.CACHE, help="npm prefix of the clients")
    ap.add_argument("--memory", type=Path, default=Path(sys.executable).parent / "memory",
                    help="the `memory` to install (default: this venv's)")
    ap.add_argument("--marketplace", type=Path, default=CHECKOUT,
                    help="the plugin marketplace (default: this checkout)")
    ap.add_argument("--keep", action="store_true", help="keep the sandboxes and request logs")
    ap.add_argument("--no-netns", action="store_true",
                    help="no network namespace: loopback base URLs and a dead proxy only")
    add_record_option(ap)
    args = ap.parse_args(argv)
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    args.routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [c for c in args.clients if c not in clients.CLIENTS]
    if bad:
        ap.error(f"unknown client(s) {bad}: {', '.join(clients.CLIENTS)}")
    return args


def inner(args: argparse.Namespace, isolation: str) -> int:
    work = Path(tempfile.mkdtemp(prefix="mrcb-", dir="/tmp"))
    chosen = [clients.CLIENTS[c](args.cache) for c in args.clients]
    memrepo = subprocess.run([str(args.memory), "--version"], capture_output=True, text=True,
                             check=False).stdout.strip().rsplit(" ", 1)[-1]
    res: dict[str, Any] = {"versions": clients.versions(args.cache), "memrepo": memrepo,
                           "isolation": isolation, "checks": {}, "timing": {},
                           "load": ", ".join(f"{x:.1f}" for x in os.getloadavg())}
    failed: list[str] = []
    try:
        for client in chosen:
            if args.skip_checks:
                break
            routes = [r for r in client.routes if r in args.routes]
            res["checks"][client.name] = {r: check_route(work, client, r, args) for r in routes}
            got = res["checks"][client.name]
            for other in ("plugin", "http"):
                if "install" in got and other in got:
                    got[other]["checks"]["same_as_install"] = compare_routes(got["install"],
                                                                             got[other])
        for client in chosen:
            if args.skip_timing:
                break
            try:
                t = timing(work, client, args)
            except Exception as exc:  # a client that cannot run is a failed check
                res["timing"][client.name] = {"error": f"{type(exc).__name__}: {exc}"[:800]}
                failed.append(f"{client.name}/timing")
                continue
            res["timing"][client.name] = t
            if client.name == "claude" and not args.skip_checks:
                for route in res["checks"].get("claude", {}):
                    row = t["variants"].get(route)
                    if row:
                        r = row["ratio_median_paired"]
                        res["checks"]["claude"][route]["checks"]["startup_ratio"] = ok(
                            r is not None and r <= args.max_ratio,
                            f"claude -p hello: {row['wall_s']:.2f} s against "
                            f"{t['variants']['none']['wall_s']:.2f} s without, {r:.2f}x "
                            f"(median of {args.rounds} paired rounds; at most {args.max_ratio})")
        for name, routes in res["checks"].items():
            for route, r in routes.items():
                failed += [f"{name}/{route}/{c}" for c, v in r["checks"].items() if not v["ok"]]
        res["verdict"] = f"FAIL: {', '.join(failed)}" if failed else "all checks passed"
        print(summary(res), flush=True)
        record(__file__, plain(res), args)
    finally:
        left = procs_matching("memrepo", "serve", str(work)) + procs_matching(
            "mcp", "--http", str(work))  # left by an interruption
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        if args.keep or failed:
            log(f"sandboxes and request logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if not netns.inside():
        pins = dict(p.split("=", 1) for p in args.pin)
        installed = clients.ensure(args.cache, update=args.update, pins=pins)
        if installed:
            log(f"installed: {' '.join(installed[5:])}")
        log("clients: " + ", ".join(f"{k} {v}" for k, v in clients.versions(args.cache).items())
            + f" ({args.cache})")
        if not args.no_netns:
            return netns.reexec_inside([str(Path(__file__).resolve()), *sys.argv[1:]])
        return inner(args, "loopback base URLs and a dead proxy (no network namespace)")
    netns.enter()
    return inner(args, "unshare -n (loopback only)")


if __name__ == "__main__":
    sys.exit(main())
