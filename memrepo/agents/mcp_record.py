"""The record of what ``memory mcp`` answers to a client's handshake, for the cold front.

:mod:`memrepo.agents.mcp_front` answers ``initialize``, ``ping`` and the four lists from
``memrepo/data/mcp_handshake.json`` while no resident server is up (a client that does not
wait for a slow server would start its session without memrepo's tools). The record is
the live server's own answers, taken here through a real stdio session; the file is
rewritten by ``python -m memrepo.agents.mcp_record`` after a change to the tools, and
tests/test_mcp_cold.py fails while it differs from the live answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from memrepo.agents.mcp_front import LISTS, RECORD

#: every handshake-era protocol version a client may ask for, probed for the answer
PROBE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01")


def _exchange(argv: list[str], env: dict[str, str], messages: list[dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """The answers of one server process to ``messages`` (requests answered in order)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    out = []
    try:
        for msg in messages:
            proc.stdin.write(json.dumps(msg).encode() + b"\n")
            proc.stdin.flush()
            if "id" in msg:
                while True:
                    reply = json.loads(proc.stdout.readline())
                    if reply.get("id") == msg["id"]:
                        out.append(reply)
                        break
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return out


def live_record(memory: str | None = None) -> dict[str, Any]:
    """What the in-process server answers now (a throwaway memory repo, no resident)."""
    exe = [memory] if memory else [sys.executable, "-m", "memrepo"]
    env = {**os.environ, "MEMREPO_NO_RESIDENT": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mem"
        subprocess.run([*exe, "init", str(root)], env=env, check=True, capture_output=True)
        argv = [*exe, "--repo", str(root), "mcp"]
        hello = {"capabilities": {}, "clientInfo": {"name": "mcp_record", "version": "0"}}
        versions: dict[str, str] = {}
        result: dict[str, Any] = {}
        for v in PROBE_VERSIONS:
            (init,) = _exchange(argv, env, [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                             "params": {**hello, "protocolVersion": v}}])
            result = dict(init["result"])
            versions[v] = result.pop("protocolVersion")
        asks = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {**hello, "protocolVersion": PROBE_VERSIONS[-2]}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        asks += [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(LISTS, 1)]
        answers = _exchange(argv, env, asks)[1:]
    lists = {key: a["result"][key] for (_, key), a in zip(LISTS.items(), answers, strict=True)}
    known = sorted(v for v, got in versions.items() if got == v)
    latest = versions[PROBE_VERSIONS[-1]]  # what an unknown version gets
    return {"handshake_versions": known, "latest_handshake_version": latest,
            "initialize": result, **lists}


def main() -> None:
    RECORD.write_text(json.dumps(live_record(), indent=1, sort_keys=True) + "\n",
                      encoding="utf-8")
    print(f"wrote {RECORD}")


if __name__ == "__main__":
    main()
