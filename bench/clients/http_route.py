"""The ``http`` route of bench/clients/run.py: the sandbox's own ``memory mcp --http``
with a write and a read-only token, the client installed with ``memory install --url
--token-env``, and the checks only that route has (401 without a token, a read-only token
refused a write, no token written into the client's files). MCP over HTTP is spoken here
by hand (urllib, no proxy), so a check does not depend on the SDK it is checking."""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

import clients
import mock_api
from sessions import memrepo_tools, ok, run, session, strings, tool_results

#: the http route: the variable `memory install --token-env` names, the write tool a
#: read-only token must not run, and what it would write (found nowhere after)
TOKEN_ENV = "MEMREPO_MCP_TOKEN"
WRITE_TOOL = "memory_remember"
PROBE = "read-only-probe-osprey-93"
READ_ONLY_PROMPT = "Remember for project Zephyrine that its release train moved to Fridays."
READ_TOOLS = ["memory_context", "memory_read", "memory_search"]
TOOL_ARGS = {"query": "zephyrine build cluster"}
#: urllib with no proxy: the sandbox points every proxy variable at a dead port
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(sb: clients.Sandbox, args: argparse.Namespace) -> list[str]:
    """The http route's server: a write token ``bench`` (in the client's environment as
    $TOKEN_ENV) and a read-only one, then ``memory mcp --http 127.0.0.1:PORT`` for the repo,
    a child of this process (so in its network namespace), up once it refuses a request
    without a token."""
    memory = str(args.memory)
    for name, extra in (("bench", []), ("bench-ro", ["--read-only"])):
        out = run([memory, "--repo", str(sb.repo), "mcp", "token", "create", name, *extra], sb,
                  cwd=sb.repo)
        sb.tokens[name] = out.stdout.strip()
    sb.env[TOKEN_ENV] = sb.tokens["bench"]
    port = free_port()
    sb.mcp_url = f"http://127.0.0.1:{port}/mcp"
    logfile = sb.root / "mcp-http.log"
    with open(logfile, "wb") as f:
        proc = subprocess.Popen([memory, "--repo", str(sb.repo), "mcp", "--http",
                                 f"127.0.0.1:{port}"], cwd=sb.repo, env=sb.env,
                                stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    sb.procs.append(proc)
    t0 = time.monotonic()
    while mcp_post(sb.mcp_url, None, initialize(1))[0] != 401:
        if proc.poll() is not None or time.monotonic() - t0 > 60:
            why = "not up after 60 s" if proc.poll() is None else f"exited {proc.returncode}"
            raise RuntimeError(f"memory mcp --http {why}: "
                               f"{logfile.read_text(errors='replace')[-600:]}")
        time.sleep(0.1)
    said = logfile.read_text(errors="replace").strip().splitlines()
    return ["memory mcp token create bench; memory mcp token create bench-ro --read-only "
            f"(the first in the client's environment as {TOKEN_ENV})",
            f"memory mcp --http 127.0.0.1:{port} (pid {proc.pid}, up in "
            f"{time.monotonic() - t0:.1f} s): {said[-1][:140] if said else ''}"]


def stop_procs(sb: clients.Sandbox) -> None:
    """End what the harness started for ``sb`` (the HTTP server), by pid."""
    for proc in sb.procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def initialize(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}


def mcp_post(url: str, token: str | None, msg: dict[str, Any], session: str | None = None,
             timeout: float = 60) -> tuple[int, dict[str, str], Any]:
    """One JSON-RPC message POSTed to the streamable HTTP endpoint: the status, the
    response headers (lower-cased) and the JSON-RPC answer (from JSON or an event stream;
    the error body for a refusal; None when nothing answered)."""
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if session:
        headers["mcp-session-id"] = session
        headers["mcp-protocol-version"] = "2025-06-18"
    req = urllib.request.Request(url, json.dumps(msg).encode(), headers, method="POST")
    try:
        with NO_PROXY.open(req, timeout=timeout) as resp:
            status, head, raw = resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as exc:
        status, head, raw = exc.code, dict(exc.headers.items()), exc.read()
    except OSError:
        return 0, {}, None
    head = {k.lower(): v for k, v in head.items()}
    text = raw.decode("utf-8", "replace")
    if "text/event-stream" in head.get("content-type", ""):
        for line in text.splitlines():
            if line.startswith("data:"):
                with contextlib.suppress(ValueError):
                    data = json.loads(line[5:])
                    if isinstance(data, dict) and data.get("id") == msg.get("id"):
                        return status, head, data
        return status, head, None
    try:
        return status, head, json.loads(text) if text.strip() else None
    except ValueError:
        return status, head, text


def mcp_session(url: str, token: str) -> str:
    """initialize + notifications/initialized with ``token``: the session id."""
    status, head, body = mcp_post(url, token, initialize(1))
    if status != 200 or not isinstance(body, dict) or "result" not in body:
        raise RuntimeError(f"initialize: HTTP {status}: {str(body)[:200]}")
    session = head.get("mcp-session-id", "")
    mcp_post(url, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def check_unauthorized(sb: clients.Sandbox) -> dict[str, Any]:
    """No token and a wrong token: 401 with a Bearer challenge; the right one: 200."""
    none = mcp_post(sb.mcp_url, None, initialize(1))
    wrong = mcp_post(sb.mcp_url, "mrp_" + "0" * 43, initialize(1))
    right = mcp_post(sb.mcp_url, sb.tokens["bench"], initialize(1))
    good = (none[0] == 401 and wrong[0] == 401 and right[0] == 200
            and "bearer" in none[1].get("www-authenticate", "").lower()
            and "invalid_token" in wrong[1].get("www-authenticate", ""))
    return ok(good, f"no token: {none[0]} ({none[1].get('www-authenticate', '-')}); wrong "
              f"token: {wrong[0]}; the token: {right[0]} (urllib)")


def probe_written(sb: clients.Sandbox) -> list[str]:
    """Files of the memory repo (raw/ and .git aside: a transcript may quote the model's
    call) that hold the read-only probe's text."""
    found = []
    for path in sb.repo.rglob("*"):
        rel = path.relative_to(sb.repo).parts
        if rel[0] in (".git", "raw") or not path.is_file():
            continue
        with contextlib.suppress(OSError):
            if PROBE in path.read_text(encoding="utf-8", errors="replace"):
                found.append("/".join(rel))
    return found


def check_read_only_http(sb: clients.Sandbox) -> dict[str, Any]:
    """The read-only token by hand: only the read tools listed; a write tool's call refused;
    nothing written."""
    token = sb.tokens["bench-ro"]
    session = mcp_session(sb.mcp_url, token)
    _, _, listed = mcp_post(sb.mcp_url, token, {"jsonrpc": "2.0", "id": 2,
                                                 "method": "tools/list"}, session)
    names = sorted(t.get("name") for t in ((listed or {}).get("result") or {}).get("tools", []))
    head_before = run(["git", "rev-parse", "HEAD"], sb, cwd=sb.repo).stdout.strip()
    _, _, called = mcp_post(sb.mcp_url, token, {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": WRITE_TOOL, "arguments": {"text": PROBE}}}, session)
    result = (called or {}).get("result") or {}
    said = " ".join(strings(result.get("content")))
    head_after = run(["git", "rev-parse", "HEAD"], sb, cwd=sb.repo).stdout.strip()
    written = probe_written(sb)
    good = (names == READ_TOOLS and result.get("isError") is True and "read-only" in said
            and head_before == head_after and not written)
    return ok(good, f"tools/list: {', '.join(names)}; {WRITE_TOOL}: "
              f"{'error' if result.get('isError') else 'ran'} {said[:90]!r}; "
              f"{'no commit' if head_before == head_after else 'a commit'}, "
              f"{'nothing written' if not written else 'written to ' + ', '.join(written)}")


def check_read_only_client(sb: clients.Sandbox, client: clients.Client, mock: mock_api.Mock
                           ) -> dict[str, Any]:
    """The client with the read-only token in its environment, the mock answering with a
    call of ``memory_remember``: the client is never offered it (or its call is refused),
    and the probe is written nowhere."""
    mock.tool, mock.tool_args = WRITE_TOOL, {"text": PROBE}
    sb.env[TOKEN_ENV] = sb.tokens["bench-ro"]
    try:
        s = session(sb, client, mock, READ_ONLY_PROMPT, check=True)
    finally:
        mock.tool, mock.tool_args = "memory_search", TOOL_ARGS
        sb.env[TOKEN_ENV] = sb.tokens["bench"]
    offered = memrepo_tools(client, s["requests"])
    calls = [r for r in s["requests"] if str(r.get("answer", "")).endswith(WRITE_TOOL)]
    results = " ".join(t for r in s["requests"] for t in tool_results(r.get("body")))
    written = probe_written(sb)
    refused = not calls or "read-only" in results
    good = s["rc"] == 0 and WRITE_TOOL not in offered and refused and not written
    how = ("the mock's call refused: " + repr(results[:80])) if calls else "never called"
    return ok(good, f"offered: {', '.join(offered) or 'none'}; {WRITE_TOOL} {how}; "
              f"{'nothing written' if not written else 'written to ' + ', '.join(written)}"
              + (f"; exit {s['rc']}: {s['stderr'][-200:]}" if s["rc"] else ""))


def check_missing_token(sb: clients.Sandbox, client: clients.Client) -> dict[str, Any]:
    """The client's ``mcp list`` with $TOKEN_ENV unset: not connected (what a user who did
    not export it sees)."""
    env = {k: v for k, v in sb.env.items() if k != TOKEN_ENV}
    listed = subprocess.run(client.mcp_list(), cwd=sb.proj, env=env, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=180)
    good, said = client.mcp_connected(listed.stdout + listed.stderr)
    return ok(not good, f"{TOKEN_ENV} unset: {said[:140]}")


def check_token_files(sb: clients.Sandbox) -> dict[str, Any]:
    """No file under the sandbox's home or project holds a token's value."""
    found = []
    for base in (sb.home, sb.proj):
        for path in base.rglob("*"):
            if path.is_file() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    data = path.read_bytes()
                    if any(t.encode() in data for t in sb.tokens.values()):
                        found.append(str(path.relative_to(sb.root)))
    return ok(not found, "the token is in the environment only" if not found
              else f"the token is written in {', '.join(found[:5])}")
