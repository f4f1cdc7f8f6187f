"""``memory explore start|list|merge|drop``: what-if branches (memrepo.lifecycle.explore)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memrepo import clock
from memrepo.lifecycle import explore as E
from memrepo.repo import discover


def _root(ctx: click.Context) -> Path:
    return discover((ctx.obj or {}).get("repo")).root


@click.group(short_help="What-if branches: explore/NAME in a worktree of its own.")
def explore() -> None:
    """Try a scenario on a branch of its own (`explore/NAME`, checked out in a worktree
    of its own), then merge it into the memory or drop it. `memory prune --apply` drops
    the ones older than `lifecycle.explore_branch_days` (7), their commits tagged first."""


@explore.command()
@click.argument("name")
@click.option("--from", "base", default="HEAD", show_default=True,
              help="The commit or branch to start from.")
@click.pass_context
def start(ctx: click.Context, name: str, base: str) -> int:
    """Branch explore/NAME off --from and check it out in a worktree of its own."""
    path = E.start(_root(ctx), name, base)
    click.echo(f"explore/{name}: {path}")
    click.echo(f"Work there (`cd {path}`, or `memory --repo {path} …`); then `memory explore "
               f"merge {name}` keeps it, `memory explore drop {name}` throws it away.")
    return 0


@explore.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per branch, in a list.")
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> int:
    """The explore/* branches: last commit, commits ahead, merged, worktree, days left."""
    root = _root(ctx)
    rows = [{"name": b.name, "date": b.date.isoformat(), "ahead": b.ahead,
             "merged": b.merged, "path": b.path,
             "days_left": E.days_left(root, b, clock.today())} for b in E.branches(root)]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return 0
    if not rows:
        click.echo("no explore/* branches (`memory explore start NAME`)")
    for r in rows:
        left = (f"{r['days_left']} day(s) left" if r["days_left"] >= 0
                else "pruned by the next `memory prune --apply`")
        click.echo(f"{r['name']}  {r['date']}  {r['ahead']} ahead"
                   f"{', merged' if r['merged'] else ''}  {left}  "
                   f"{r['path'] or '(no worktree)'}")
    return 0


@explore.command()
@click.argument("name")
@click.pass_context
def merge(ctx: click.Context, name: str) -> int:
    """Merge explore/NAME into the current branch, then remove it and its worktree."""
    sha = E.merge(_root(ctx), name)
    click.echo(f"merged explore/{name.removeprefix(E.PREFIX)}: {sha[:10]}")
    return 0


@explore.command()
@click.argument("name")
@click.option("--force", is_flag=True, help="Also when its worktree has uncommitted changes "
              "(they are lost).")
@click.pass_context
def drop(ctx: click.Context, name: str, force: bool) -> int:
    """Remove explore/NAME and its worktree; its commits stay reachable from a
    memory/before/delete-explore-NAME tag when it was never merged."""
    root = _root(ctx)
    done = E.remove(root, [E.find(root, name)], force=force)
    click.echo("\n".join(done))
    if done and done[0].startswith("kept "):
        raise click.ClickException(f"{done[0]}: commit them there, or --force")
    return 0
