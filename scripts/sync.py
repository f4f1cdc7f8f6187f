"""``memory sync``: fetch, rebase local commits onto the remote, push (with retries)."""

from __future__ import annotations

import json

import click

from memrepo.repo import discover


@click.command()
@click.option("--remote", help="Remote to sync with (default: git.remote, origin).")
@click.option("--branch", help="Branch to sync (default: git.branch, else the current one).")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def sync(ctx: click.Context, remote: str | None, branch: str | None, as_json: bool) -> int:
    """Share this memory with the remote; a real conflict is left for you, never dropped."""
    from memrepo.commit import sync as engine

    root = discover((ctx.obj or {}).get("repo"), op="sync").root
    result = engine.sync(root, remote, branch)
    if as_json:
        click.echo(json.dumps({**result.__dict__, "summary": result.summary}))
    else:
        click.echo(result.summary)
    return 0
