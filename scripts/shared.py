"""``memory shared``: knowledge mounted from another memory repo (docs/shared-knowledge.md)."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from memrepo.commit import shared as sh
from memrepo.repo import discover


@click.group("shared")
def shared() -> None:
    """Knowledge from another memory repo (a team's), read-only under shared/NAME/."""


@shared.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--branch", default="", help="The branch to follow (default: its HEAD).")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def add(ctx: click.Context, name: str, url: str, branch: str, as_json: bool) -> None:
    """Mount the memory repo at URL as shared/NAME/ (its knowledge/ and topics/), committed
    and indexed."""
    root = discover((ctx.obj or {}).get("repo")).root
    done = sh.add(root, name, url, branch)
    click.echo(json.dumps(asdict(done)) if as_json else done.line)


@shared.command("pull")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def pull(ctx: click.Context, name: str | None, as_json: bool) -> int:
    """Bring every mount (or NAME) to its repo's newest commit; exit 1 when one could not
    be reached (it stays as it was)."""
    root = discover((ctx.obj or {}).get("repo")).root
    done = sh.pull(root, name)
    if as_json:
        click.echo(json.dumps([asdict(p) for p in done]))
    elif not done:
        click.echo("nothing mounted: `memory shared add NAME URL`")
    for p in [] if as_json else done:
        click.echo(p.line)
    return 1 if any(p.status == "offline" for p in done) else 0


@shared.command("list")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """The mounts: name, source, the commit their files are from."""
    root = discover((ctx.obj or {}).get("repo")).root
    found = sh.mounts(root)
    if as_json:
        click.echo(json.dumps([{**asdict(m), "prefix": m.prefix} for m in found]))
        return
    if not found:
        click.echo("nothing mounted: `memory shared add NAME URL`")
    for m in found:
        branch = f" ({m.branch})" if m.branch else ""
        click.echo(f"{m.name}\t{m.prefix}/\t{m.url}{branch}\t{m.commit[:12]}")
