"""``memory mcp``: serve the memory repo to an agent over MCP (stdio).

An agent (Claude Code, Codex, Gemini CLI) starts it and talks JSON-RPC on its stdin and
stdout; nothing else may print there. The repo is found before the protocol starts, so
a wrong ``--repo`` is one line on stderr and exit status 1, not a server that fails
every call. The MCP SDK is imported here only: no other command pays its slow import
(bench/perf/bench_mcp.py times the server's start).
"""

from __future__ import annotations

import click

from memrepo.repo import discover


@click.command("mcp")
@click.pass_context
def mcp(ctx: click.Context) -> None:
    """Serve memory to an agent over MCP on stdio (tools: search, context, read,
    remember, update, reinforce, demote)."""
    repo = discover((ctx.obj or {}).get("repo"))
    from memrepo.agents.mcp_server import serve

    serve(repo.root)
