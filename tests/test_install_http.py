"""`memory install AGENT --url URL --token-env VAR`: the HTTP entry each real client connected
with (bench/clients/run.py --routes http: Claude Code, Codex and Gemini CLI, the token in
their environment only), and the step it prints for the token, which no client asks for.

Offline: plans and applies in a temporary home and project, runs no client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomlkit

from memrepo.agents import install as agents
from memrepo.agents.settings import token_step

URL = "http://127.0.0.1:8765/mcp"
VAR = "MEMREPO_MCP_TOKEN"
#: where the MCP entry lands at project scope, and how to read it
ENTRY = {
    "claude-code": (".mcp.json", lambda t: json.loads(t)["mcpServers"]["memrepo"]),
    "gemini": (".gemini/settings.json", lambda t: json.loads(t)["mcpServers"]["memrepo"]),
    "codex": (".codex/config.toml", lambda t: tomlkit.parse(t)["mcp_servers"]["memrepo"].unwrap()),
}
#: what the clients took in the harness: Claude Code and Gemini CLI expand ${VAR} in a
#: header, Codex reads the variable it is named
WANT = {
    "claude-code": {"type": "http", "url": URL,
                    "headers": {"Authorization": "Bearer ${MEMREPO_MCP_TOKEN}"}},
    "gemini": {"httpUrl": URL, "headers": {"Authorization": "Bearer ${MEMREPO_MCP_TOKEN}"}},
    "codex": {"url": URL, "bearer_token_env_var": VAR},
}


def _install(agent: str, tmp_path: Path, **kw: str | None) -> list[agents.FileChange]:
    changes = agents.plan(agent, "project", memory="/opt/bin/memory", repo=str(tmp_path / "r"),
                          home=tmp_path / "home", project=tmp_path / "proj", **kw)
    agents.apply(changes, tmp_path / "home")
    return changes


@pytest.mark.parametrize("agent", sorted(ENTRY))
def test_url_install_writes_the_entry_the_client_took_and_says_the_token_step(
        agent: str, tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    changes = _install(agent, tmp_path, url=URL, token_env=VAR)
    rel, read = ENTRY[agent]
    assert read((tmp_path / "proj" / rel).read_text()) == WANT[agent]
    mcp = next(c for c in changes if c.path == tmp_path / "proj" / rel)
    step = token_step(agent, VAR)
    assert step in mcp.what and f"export {VAR}=" in step and "memory mcp token create" in step
    hooks = [c for c in changes if any(n.endswith("hook") for n in c.what)]
    assert hooks, "a local repo given: its hooks are installed beside the HTTP entry"
    again = _install(agent, tmp_path, url=URL, token_env=VAR)  # idempotent: no step twice
    assert not any(c.changed for c in again) and not any(step in c.what for c in again)


@pytest.mark.parametrize("agent", sorted(ENTRY))
def test_no_token_step_without_a_token_variable_or_on_stdio(agent: str, tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    open_server = _install(agent, tmp_path, url=URL)  # an open loopback server: no header
    stdio = _install(agent, tmp_path)  # back to `memory mcp`
    notes = [n for c in open_server + stdio for n in c.what]
    assert notes and not any("export" in n for n in notes)
    rel, read = ENTRY[agent]
    assert read((tmp_path / "proj" / rel).read_text())["command"] == "/opt/bin/memory"
