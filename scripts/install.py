"""``memory install|uninstall AGENT``: memrepo's hooks and MCP server in an agent's settings
(the merge itself is :mod:`memrepo.agents.install`)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memrepo import namespaces
from memrepo.agents import install as agents
from memrepo.agents.harness import HARNESSES
from memrepo.agents.settings import AGENTS, check_scope, check_url
from memrepo.errors import MemrepoError
from memrepo.lifecycle.migrate_sources import find_sources
from memrepo.repo import discover
from memrepo.scripts.cli import NAMESPACE, accepts_repo

_agent = click.argument("agent", type=click.Choice(list(HARNESSES)))
_scope = click.option(
    "--scope", type=click.Choice(["user", "project", "local"]), default="user",
    show_default=True,
    help="user: every project on this machine; project: this project, shared (commit the "
         "files); local: this project, this machine (Claude Code only).")
_print = click.option("--print", "dry_run", is_flag=True,
                      help="Show the change as a diff; write nothing.")
_home = click.option("--home", type=click.Path(file_okay=False, path_type=Path),
                     help="The home directory whose settings to edit (default: ~).")
_project = click.option("--project", type=click.Path(file_okay=False, path_type=Path),
                        help="The project of the project and local scopes (default: the cwd).")


def _report(changes: list, dry_run: bool, verb: str) -> bool:
    """Print the diff (dry run) or what changed per file; True when anything changes."""
    changed = [c for c in changes if c.changed]
    if dry_run:
        for c in changed:
            click.echo(c.diff(), nl=False)
        if not changed:
            click.echo(f"nothing to {verb}: every file is as it would be", err=True)
        return bool(changed)
    for c in changed:
        what = "removed the file" if c.after is None else "; ".join(c.what)
        click.echo(f"{c.path}: {what}")
    if not changed:
        click.echo(f"nothing to {verb}: every file already is as it should be")
    return bool(changed)


@click.command(short_help="Wire memrepo into Claude Code, Codex or Gemini CLI.")
@_agent
@_scope
@accepts_repo()
@click.option("--memory", "memory_exe", type=click.Path(dir_okay=False),
              help="The `memory` executable the agent runs (default: the one running now).")
@click.option("--url", help="The MCP server is this `memory mcp --http` endpoint "
              "(http(s)://HOST:PORT/mcp), not a `memory mcp` the agent starts.")
@click.option("--token-env", metavar="VAR",
              help="With --url: the agent sends `Authorization: Bearer $VAR`.")
@click.option("--namespace", metavar="NAME", type=NAMESPACE, envvar=namespaces.ENV,
              help="The agent acts in this namespace: its own transcripts and journal lines, "
              "the rest shared (default: $MEMREPO_NAMESPACE; docs/namespaces.md).")
@_print
@_home
@_project
@click.pass_context
def install(ctx: click.Context, agent: str, scope: str, memory_exe: str | None, url: str | None,
            token_env: str | None, namespace: str | None, dry_run: bool, home: Path | None,
            project: Path | None) -> int:
    """Wire memrepo into AGENT (claude-code, codex, gemini): its hooks brief each session,
    recall per prompt, flush before compaction and capture every turn; its MCP server
    `memrepo` gives the model search and writes.

    The absolute paths of this `memory` and of the memory repo are written into the
    agent's settings, so nothing depends on the agent's PATH or cwd. Only memrepo's own
    entries change (recognised by what they run); running it again changes nothing.

    With --url the MCP server entry is that HTTP endpoint instead (docs/remote-mcp.md);
    the hooks are installed too when a memory repo is found here, else left as they are.

    With --namespace NAME the hooks and the server run `memory --namespace NAME …`: the
    agent keeps its own transcripts and journal lines and shares the rest.
    """
    check_scope(agent, scope)
    if token_env and not url:
        raise click.UsageError("--token-env goes with --url")
    if url:
        check_url(url, token_env)
    repo = _local_repo(ctx, required=not url)
    exe = None
    if repo is not None:
        exe = str(Path(memory_exe).absolute()) if memory_exe else agents.running_memory()
        agents.memory_version(exe)
    changes = agents.plan(agent, scope, memory=exe, repo=str(repo) if repo else None,
                          home=home, project=project, url=url, token_env=token_env,
                          namespace=namespace,
                          client=agents.fast_client(exe, str(repo)) if repo and exe else None)
    if _report(changes, dry_run, "install") and not dry_run:
        agents.apply(changes, home)
        ns = f" --namespace {namespace}" if namespace else ""
        hooks = f"hooks: {exe} --repo {repo}{ns}" if repo else "no hooks (no memory repo here)"
        click.echo(f"installed: MCP server {url}; {hooks}" if url else
                   f"installed: {exe} --repo {repo}{ns}")
        if url and namespace:  # the server acts in the token's namespace, not the hooks'
            click.echo(f"The token in ${token_env or 'its variable'} must act in "
                       f"{namespace} too: make it on the server with `memory mcp token "
                       f"create NAME --namespace {namespace}`")
        click.echo(AGENTS[agent].next_step)
        if repo is not None:
            click.echo(agents.llm_note(repo))
        click.echo(f"Undo: memory uninstall {agent} --scope {scope}")
    _offer_import(agent, home, project)
    return 0


def _local_repo(ctx: click.Context, required: bool) -> Path | None:
    """The memory repo the hooks run on; None when none is found and none is
    ``required`` (an HTTP server's agent may have no clone: a repo named with --repo or
    $MEMORY_REPO must still exist)."""
    named = (ctx.obj or {}).get("repo") or os.environ.get("MEMORY_REPO")
    try:
        return discover(named).root
    except MemrepoError:
        if required or named:
            raise
        return None


def _offer_import(agent: str, home: Path | None, project: Path | None) -> None:
    """What the agent already remembers (its memory notes, CLAUDE.md / AGENTS.md /
    GEMINI.md): the command that brings it in (never done unasked)."""
    found = find_sources(agent, home, project)
    if found:
        where = " ".join(f"--{k} {v}" for k, v in (("home", home), ("project", project)) if v)
        click.echo(f"{len(found)} file(s) of {agent}'s own memory found "
                   f"({', '.join(sorted({s.path.name for s in found})[:4])}): "
                   f"`memory import --from {agent}{' ' + where if where else ''}` brings "
                   "them in (`--dry-run` shows where each goes)")


@click.command(short_help="Take memrepo's hooks and MCP server out of an agent.")
@_agent
@_scope
@_print
@_home
@_project
def uninstall(agent: str, scope: str, dry_run: bool, home: Path | None,
              project: Path | None) -> int:
    """Take memrepo's hooks and MCP server out of AGENT's settings at SCOPE.

    Nothing else changes: a file that held only memrepo's entries is removed, any other
    file gets back the bytes it had before `memory install`.
    """
    changes = agents.plan(agent, scope, home=home, project=project)
    if _report(changes, dry_run, "uninstall") and not dry_run:
        agents.apply(changes, home)
    return 0
