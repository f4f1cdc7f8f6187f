"""The agent's key is never spent silently: what the real hooks ask of a model, counted.

Claude Code's environment carries its ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``, and
every hook (and the worker it detaches) inherits them. The hooks run here as Claude Code
runs them, with a key and a base URL pointing at a counting mock on 127.0.0.1: without
``MEMREPO_AGENT_LLM=1`` no request reaches it; with it, a session end costs one request
(all extractors in one answer), whose items land in the memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git, run_memory

ANSWER = {"decisions": [{"text": "The team chose PostgreSQL 16 for the ledger database."}],
          "lessons": [], "people": [], "procedures": [], "facts": [], "journal": []}


class Mock:
    """A Messages API on loopback: counts requests, answers each with ``ANSWER``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                mock.requests.append(body)
                out = json.dumps({
                    "id": "msg_1", "type": "message", "role": "assistant",
                    "model": body["model"], "stop_reason": "end_turn", "stop_sequence": None,
                    "content": [{"type": "text", "text": json.dumps(ANSWER)}],
                    "usage": {"input_tokens": 100, "output_tokens": 20}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def mock() -> Iterator[Mock]:
    m = Mock()
    yield m
    m.server.shutdown()


def _session(repo: Path, log: Path, env: dict[str, str]) -> None:
    """One Claude Code session through the installed hook commands."""
    common = {"session_id": log.stem, "cwd": str(repo), "transcript_path": str(log)}

    def hook(event: str, extra: dict[str, Any]) -> None:
        proc = subprocess.run(["memory", "--repo", str(repo), "hook", "claude-code", event],
                              input=json.dumps({**common, **extra, "hook_event_name": event}),
                              text=True, capture_output=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr

    hook("SessionStart", {"source": "startup"})
    turns = [("user", "We decided to use PostgreSQL 16 for the ledger database because we "
                      "need strict transactions. Marta owns the billing service."),
             ("assistant", "Noted: PostgreSQL 16 for the ledger, Marta for billing.")]
    for n, (kind, text) in enumerate(turns):
        message: dict[str, Any] = {"role": kind, "content": text}
        if kind == "assistant":
            message = {"id": "m1", "role": kind, "model": "x",
                       "content": [{"type": "text", "text": text}]}
        with log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"type": kind, "sessionId": log.stem, "uuid": f"u{n}",
                                 "timestamp": f"2026-03-05T10:0{n}:00.000Z",
                                 "message": message}) + "\n")
        hook("UserPromptSubmit" if kind == "user" else "Stop",
             {"prompt": text} if kind == "user" else {"stop_hook_active": False})
    hook("SessionEnd", {"reason": "exit"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the detached worker: closed, committed, extracted
        if "extract:" in run_git(repo, "log", "--format=%s").stdout:
            return
        time.sleep(0.2)
    raise AssertionError("no extraction commit")


@pytest.mark.parametrize("switched_on", [False, True])
def test_hooks_spend_the_agents_key_only_when_switched_on(
        tmp_path: Path, mock: Mock, switched_on: bool) -> None:
    assert run_memory(tmp_path, "init", "mem").returncode == 0
    repo = tmp_path / "mem"
    env = {k: v for k, v in os.environ.items()
           if k not in ("MEMREPO_NO_HOOKS", "MEMORY_REPO", "MEMREPO_OFFLINE",
                        "MEMREPO_AGENT_LLM")}
    env.update(ANTHROPIC_API_KEY="sk-ant-agents-own-key", ANTHROPIC_BASE_URL=mock.url,
               MEMREPO_NO_RESIDENT="1")
    if switched_on:
        env["MEMREPO_AGENT_LLM"] = "1"
    _session(repo, tmp_path / "s1.jsonl", env)
    if not switched_on:
        assert mock.requests == []
        return
    assert len(mock.requests) == 1  # all extractors in one request, no retry, no reconcile
    assert "extractor" in json.dumps(mock.requests[0]["messages"])
    decisions = run_git(repo, "grep", "-l", "The team chose PostgreSQL 16",
                        check=False).stdout
    assert decisions.strip()


def test_install_says_what_llm_use_costs_and_how_to_turn_it_on(
        crepo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    out = run_memory(crepo, "install", "claude-code", "--scope", "project")
    assert out.returncode == 0, out.stderr
    assert "offline" in out.stdout and "agents.llm: true" in out.stdout
    assert "one request per session end" in out.stdout and "$" in out.stdout
    cfg = crepo / "memory-config.yaml"
    text = cfg.read_text(encoding="utf-8")
    assert "\n  llm: false" in text
    cfg.write_text(text.replace("\n  llm: false", "\n  llm: true", 1), encoding="utf-8")
    run_memory(crepo, "uninstall", "claude-code", "--scope", "project")
    out = run_memory(crepo, "install", "claude-code", "--scope", "project")
    assert "LLM use is on (agents.llm)" in out.stdout, out.stdout + out.stderr
