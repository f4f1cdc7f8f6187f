"""Running a real client's one-shot session in a sandbox, and reading what it did: the
requests the mock saw, the new lines of memrepo's agents log, the tools offered and the
tool results (bench/clients/run.py's checks read these)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import clients
import mock_api


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def procs_matching(*needles: str) -> list[int]:
    """Pids whose command line holds every needle."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if all(n in cmd for n in needles):
            found.append(int(entry))
    return found


def wait_workers(repo: Path, timeout: float = 120.0) -> float:
    """Wait until no detached memrepo worker runs for ``repo``; the seconds waited (-1 on
    timeout)."""
    t0 = time.monotonic()
    while procs_matching("memrepo.agents.worker", str(repo)):
        if time.monotonic() - t0 > timeout:
            return -1.0
        time.sleep(0.05)
    return time.monotonic() - t0


def run(argv: list[str], sb: clients.Sandbox, cwd: Path | None = None, timeout: float = 300,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd or sb.proj, env=sb.env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: "
                           f"{(proc.stdout + proc.stderr).strip()[-800:]}")
    return proc


def agents_log(repo: Path, offset: int = 0) -> list[dict[str, Any]]:
    path = repo / ".memrepo" / "agents.log"
    if not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(offset)
        lines = f.read().decode("utf-8", "replace").splitlines()
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def log_size(repo: Path) -> int:
    path = repo / ".memrepo" / "agents.log"
    return path.stat().st_size if path.exists() else 0


def session(sb: clients.Sandbox, client: clients.Client, mock: mock_api.Mock, prompt: str, *,
            check: bool = False, timeout: float = 300) -> dict[str, Any]:
    """One one-shot run of the client in the project folder, then its detached workers
    waited for: wall time and its split, the requests the mock saw, the new agents.log lines."""
    offset, n0 = log_size(sb.repo), len(mock.requests)
    w0 = time.time()
    proc = subprocess.run(client.one_shot(prompt, sb, check=check), cwd=sb.proj, env=sb.env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
    w1 = time.time()
    waited = wait_workers(sb.repo)
    reqs = mock.since(n0)
    posts = [r for r in reqs if r["method"] == "POST"]
    out: dict[str, Any] = {"rc": proc.returncode, "wall": w1 - w0, "waited": waited,
                           "requests": reqs, "log": agents_log(sb.repo, offset),
                           "stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]}
    if posts:
        out["pre"] = posts[0]["t"] - w0
        out["api"] = max(r.get("t_done", r["t"]) for r in posts) - posts[0]["t"]
        out["post"] = w1 - max(r.get("t_done", r["t"]) for r in posts)
    return out


def strings(obj: Any) -> list[str]:
    """Every string inside a parsed JSON body."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings(v)]
    return []


def memrepo_tools(client: clients.Client, reqs: list[dict[str, Any]]) -> list[str]:
    """memrepo's tools offered in any request, by their short names."""
    names: set[str] = set()
    for r in reqs:
        if isinstance(r.get("body"), dict):
            for n in mock_api._tool_names(r["body"]):
                for p in client.tool_prefixes():
                    if n.startswith(p):
                        names.add(n[len(p):])
    return sorted(names)


def ok(flag: bool, detail: str) -> dict[str, Any]:
    return {"ok": bool(flag), "detail": detail}


def segment(text: str, marker: str) -> str:
    """What memrepo injected, from ``marker`` to the end of its fenced block."""
    i = text.find(marker)
    if i < 0:
        return ""
    opening = text.find("```", i)
    if opening < 0:
        return text[i:]
    fence_end = opening
    while fence_end < len(text) and text[fence_end] == "`":
        fence_end += 1
    fence = text[opening:fence_end]
    closing = text.find(fence, fence_end)
    return text[i:closing + len(fence)] if closing >= 0 else text[i:]


def tool_results(obj: Any) -> list[str]:
    """The text of every result of the mock's tool call in a request body: an Anthropic
    ``tool_result``, an OpenAI ``function_call_output`` or a Gemini ``functionResponse``."""
    found: list[str] = []
    if isinstance(obj, dict):
        ids = (obj.get("tool_use_id"), obj.get("call_id"), obj.get("id"))
        mine = any(isinstance(x, str) and x.endswith(mock_api.CALL_ID) for x in ids)
        if mine and obj.get("type") in ("tool_result", "function_call_output"):
            return strings(obj.get("content") or obj.get("output"))
        resp = obj.get("functionResponse")
        if isinstance(resp, dict) and resp.get("id") == mock_api.CALL_ID:
            return strings(resp.get("response"))
        for v in obj.values():
            found += tool_results(v)
    elif isinstance(obj, list):
        for v in obj:
            found += tool_results(v)
    return found
