"""``memory import``: an agent's existing memory (CLAUDE.md, AGENTS.md, GEMINI.md, Claude
Code's auto memory, a flat MEMORY.md or memory/*.md) into the knowledge files, once.

Where each kind goes and how a second run stays a no-op: :mod:`memrepo.lifecycle.migrate`.
Conversation logs are ``memory capture import``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from memrepo.lifecycle import migrate
from memrepo.repo import discover


@click.command("import")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--from", "agents", multiple=True, type=click.Choice(migrate.FROM_CHOICES),
              help="Whose memory: an agent's own files, or 'path' for the PATHs (repeatable).")
@click.option("--home", type=click.Path(file_okay=False, path_type=Path),
              help="The home folder the agents' user files are in (default: ~).")
@click.option("--project", type=click.Path(file_okay=False, path_type=Path),
              help="The project whose CLAUDE.md / AGENTS.md / GEMINI.md and auto memory "
                   "to import (default: the cwd).")
@click.option("--dry-run", is_flag=True, help="Say what would be imported; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.option("--no-commit", is_flag=True, help="Write the files but leave them uncommitted.")
@click.pass_context
def import_cmd(ctx: click.Context, paths: tuple[Path, ...], agents: tuple[str, ...],
               home: Path | None, project: Path | None, dry_run: bool, as_json: bool,
               no_commit: bool) -> None:
    """Import an agent's existing memory (--from claude-code|codex|gemini) or the files
    and folders PATH… into knowledge/, recording where each came from (source:
    migration). Importing again adds or updates only what changed."""
    root = discover((ctx.obj or {}).get("repo")).root
    sources = migrate.gather(agents, paths, home, project)
    result = migrate.import_memory(root, sources, dry_run=dry_run, commit=not no_commit)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
        return
    if not result.items:
        click.echo(f"no existing memory found for {', '.join(agents) or 'the PATHs'}")
        return
    width = max(len(i.action) for i in result.items)
    for i in result.items:
        where = f"{i.path} ({i.section})" if i.section else i.path or "-"
        notes = [f"{i.redacted} secret{'s' if i.redacted != 1 else ''} redacted"] if (
            i.redacted) else []
        notes += [i.why] if i.why else []
        tail = f": {'; '.join(notes)}" if notes else ""
        click.echo(f"{i.action:<{width}}  {where} <- {i.source}{tail}")
    click.echo(_summary(result, no_commit))


def _summary(result: migrate.Result, no_commit: bool) -> str:
    n = len(result.new)
    files = f"{len(result.written)} file{'s' if len(result.written) != 1 else ''}"
    if not n:
        return "nothing new to import"
    if result.dry_run:
        return f"--dry-run: {n} to import into {files}; nothing written"
    if no_commit or result.commit is None:
        return f"imported {n} into {files}, not committed (`memory commit` commits them)"
    return f"imported {n} into {files} in commit {result.commit[:12]}"
