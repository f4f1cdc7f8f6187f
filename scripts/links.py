"""``memory links FILE``: the links written in a memory file, its backlinks, and co-recall."""

from __future__ import annotations

import json

import click

from memrepo.index import links as L
from memrepo.index.indexer import sync
from memrepo.index.refs import resolve_file
from memrepo.repo import discover


@click.command("links")
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.pass_context
def links(ctx: click.Context, file: str, as_json: bool) -> None:
    """[[wikilinks]] and relative markdown links in FILE (each resolved, or broken), the
    files that link to it, and the files recalled together with it (this clone's hits)."""
    repo = discover((ctx.obj or {}).get("repo"))
    rel = resolve_file(repo.root, file)
    sync(repo.root)
    found = L.report(repo.root, rel)
    if as_json:
        click.echo(json.dumps(found, ensure_ascii=False, indent=1))
        return
    click.echo(f"{rel}")
    for lk in found["links"]:
        where = lk["path"] or "BROKEN: no such file"
        click.echo(f"  -> {rel}:{lk['line']} [{lk['kind']}] {lk['target']} : {where}")
    for lk in found["backlinks"]:
        click.echo(f"  <- {lk['path']}:{lk['line']} [{lk['kind']}]")
    for co in found["co_recalled"]:
        click.echo(f"  ~  {co['path']} (recalled together {co['times']}x)")
    if not (found["links"] or found["backlinks"] or found["co_recalled"]):
        click.echo("  no links, backlinks or co-recall yet")
