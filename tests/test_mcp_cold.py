"""``memory mcp`` with no resident up: the handshake answered from the record at once, the
session handed to a server at the first request only a server can answer.

A client that does not wait for a slow server (Codex) started its session without
memrepo's tools while ``memory mcp`` imported the SDK (issue 36). The record is the live
server's own answers (checked here against it); the front replays the handshake to the
resident it started, or, when that does not come up, to a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_mcp_front import INIT, MEMORY, _env, _front, repo  # noqa: F401 - the fixture

from memrepo.agents import mcp_front, mcp_record
from memrepo.index import remote
from memrepo.resident import serve

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "Dana owns"}}}


def _send(proc: subprocess.Popen[bytes], *msgs: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], mid: object) -> dict:
    assert proc.stdout is not None
    while True:
        msg = json.loads(proc.stdout.readline())
        if msg.get("id") == mid:
            return msg


def test_the_record_is_what_the_live_server_answers() -> None:
    """After a change to the tools: ``python -m memrepo.agents.mcp_record``."""
    assert mcp_front.load_record() == mcp_record.live_record(MEMORY)


def test_a_cold_front_answers_the_handshake_and_the_resident_the_tool_call(
        repo: Path) -> None:  # noqa: F811
    rec = mcp_front.load_record()
    assert rec is not None
    proc = _front(repo)
    try:
        _send(proc, INIT)
        init = _answer(proc, 1)
        assert init["result"] == {**rec["initialize"], "protocolVersion": "2025-06-18"}
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"},
              {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
              {"jsonrpc": "2.0", "id": 3, "method": "ping"})
        tools = _answer(proc, 2)["result"]["tools"]
        assert _answer(proc, 3)["result"] == {}
        assert {t["name"] for t in tools} >= {"memory_search", "memory_remember"}
        _send(proc, CALL)  # only a server can answer: handed over, the handshake replayed
        hit = _answer(proc, 7)["result"]
        assert not hit.get("isError") and "ledger.md" in hit["content"][0]["text"]
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0
        assert "answering the handshake" in err.decode() and "handing over" in err.decode()
        st = remote.ping(repo, budget=5.0)
        assert st is not None and st["services"]["mcp"] == 1
    finally:
        proc.kill()
        serve.stop(repo)


def test_an_unknown_protocol_version_gets_the_latest_and_a_next_page_the_server(
        repo: Path) -> None:  # noqa: F811
    rec = mcp_front.load_record()
    assert rec is not None
    ask = {**INIT, "params": {**INIT["params"], "protocolVersion": "1999-01-01"}}
    answer = mcp_front.recorded_answer(rec, ask)
    assert answer is not None
    assert answer["result"]["protocolVersion"] == rec["latest_handshake_version"]
    page = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"cursor": "x"}}
    modern = {"jsonrpc": "2.0", "id": 5, "method": "tools/list",
              "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
    assert mcp_front.recorded_answer(rec, page) is None
    # Codex asks for the tools with a progress token: still the first page
    codex = {"jsonrpc": "2.0", "id": 6, "method": "tools/list",
             "params": {"_meta": {"progressToken": 0}}}
    assert mcp_front.recorded_answer(rec, codex)["result"]["tools"] == rec["tools"]
    assert mcp_front.recorded_answer(rec, modern) is None
    assert mcp_front.recorded_answer(rec, CALL) is None


def test_a_record_of_another_version_is_not_used(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    rec = json.loads(mcp_front.RECORD.read_text(encoding="utf-8"))
    rec["initialize"]["serverInfo"]["version"] = "0.0.0-other"
    stale = tmp_path / "mcp_handshake.json"
    stale.write_text(json.dumps(rec), encoding="utf-8")
    monkeypatch.setattr(mcp_front, "RECORD", stale)
    assert mcp_front.load_record() is None
    stale.write_text("{not json", encoding="utf-8")
    assert mcp_front.load_record() is None


CHILD = """
import sys
from memrepo.agents import mcp_front
mcp_front.RESIDENT_WAIT_S = 0.0           # the resident never comes up in time
mcp_front.start_resident = lambda root, sdir: None
sys.exit(mcp_front.run(sys.argv[1]))
"""


def test_when_no_resident_takes_the_session_a_child_process_serves_it(
        repo: Path) -> None:  # noqa: F811
    env = {**_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(repo)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        _send(proc, INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, CALL)
        assert _answer(proc, 1)["result"]["serverInfo"]["name"] == "memrepo"
        hit = _answer(proc, 7)["result"]
        assert "ledger.md" in hit["content"][0]["text"]
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "a child process serves" in err.decode()
        assert remote.ping(repo, budget=0.5) is None  # no resident was involved
    finally:
        proc.kill()
