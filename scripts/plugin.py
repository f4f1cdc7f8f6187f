"""``memory plugin build``: memrepo as a Claude Code plugin, a Codex plugin and a Gemini CLI
extension, from the table ``memory install`` writes (the files are
:mod:`memrepo.agents.plugin`'s)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memrepo.agents import plugin as plugins

USAGE = "memory plugin build AGENT OUT_DIR, or memory plugin build --all OUT_DIR"


@click.group(short_help="Build memrepo's Claude Code, Codex and Gemini CLI plugins.")
def plugin() -> None:
    """memrepo as a plugin, for agents that install plugins from a marketplace
    (Claude Code, Codex) or extensions from a folder (Gemini CLI); `memory install`
    wires any agent without one."""


@plugin.command(short_help="Write a plugin folder (and its marketplace file).")
@click.argument("args", nargs=-1, metavar="[AGENT] OUT_DIR")
@click.option("--all", "all_agents", is_flag=True,
              help=f"Every agent with a plugin ({', '.join(plugins.PLUGIN_AGENTS)}), each in "
                   "OUT_DIR/AGENT.")
@click.option("--marketplace", "root", type=click.Path(file_okay=False, path_type=Path),
              help="Also write each agent's marketplace file under this folder (the root "
                   "of the git repository users add), listing the plugin by its path from "
                   "there (Gemini CLI has none: it installs the extension's folder).")
@click.option("--json", "as_json", is_flag=True, help="Report the files as JSON.")
def build(args: tuple[str, ...], all_agents: bool, root: Path | None, as_json: bool) -> int:
    """Write AGENT's plugin (claude-code, codex; gemini: a Gemini CLI extension) into
    OUT_DIR: manifest, hooks, MCP server, skill and README (Gemini: and its context file),
    the hooks and the server being the ones `memory install AGENT` writes, running the
    `memory` on PATH and finding the repo through $MEMORY_REPO or the session's folder.
    Only files whose bytes change are written (atomically); files of an older build are
    reported, not deleted. Then the client's own install commands, and what the client
    asks of the user after them.

    This repository's own plugins: memory plugin build --all plugins --marketplace .
    """
    if all_agents and len(args) == 1:
        targets = {agent: Path(args[0]) / agent for agent in plugins.PLUGIN_AGENTS}
    elif not all_agents and len(args) == 2:
        plugins.check_agent(args[0])
        targets = {args[0]: Path(args[1])}
    else:
        raise click.UsageError(USAGE)
    written, stale = plugins.build(targets, root)
    if as_json:
        click.echo(json.dumps({
            "plugins": {agent: str(folder) for agent, folder in targets.items()},
            "marketplace": str(root) if root is not None else None,
            "files": [{"path": str(w.path), "agent": w.agent, "kind": w.kind,
                       "changed": w.changed} for w in written],
            "stale": [str(p) for p in stale],
            "next": {agent: plugins.next_steps(agent, folder, root)
                     for agent, folder in targets.items()}}, indent=2))
        return 0
    for w in written:
        if w.changed:
            click.echo(f"wrote {w.path}")
    same = sum(not w.changed for w in written)
    click.echo(f"{len(written) - same} file(s) written, {same} unchanged")
    for path in stale:
        click.echo(f"not part of the plugin (left by an older build?): {path}", err=True)
    for agent, folder in targets.items():
        click.echo("\n".join(plugins.next_steps(agent, folder, root)))
    return 0
