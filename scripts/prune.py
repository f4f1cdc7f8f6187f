"""``memory prune [--dry-run] [--apply] [--offline]``."""

from __future__ import annotations

import datetime as dt

import click

from memrepo.lifecycle import prune as P
from memrepo.llm import for_repo
from memrepo.repo import discover
from memrepo.scripts._params import DATE


@click.command()
@click.option("--dry-run", is_flag=True, help="List every move and change; do nothing.")
@click.option("--apply", "apply_branches", is_flag=True,
              help="Also delete explore/* branches older than the limit (tagged first).")
@click.option("--offline", is_flag=True, help="No LLM for the MEMORY.md cap.")
@click.option("--date", "day", type=DATE, help="Pretend today is this date (YYYY-MM-DD).")
@click.pass_context
def prune(ctx: click.Context, dry_run: bool, apply_branches: bool, offline: bool,
          day: dt.date | None) -> None:
    """Cap MEMORY.md, archive old journals and stale knowledge (git mv), list old branches."""
    root = discover((ctx.obj or {}).get("repo")).root
    today = day or dt.date.today()
    llm = for_repo(root, offline=offline)
    result = P.plan_prune(root, today, llm)
    plan = result.plan
    if dry_run:
        click.echo(plan.diff(root) or "no changes")
    elif not plan.empty(root):
        sha = plan.apply(root, "maintenance: prune")
        click.echo(f"committed {sha[:10] if sha else '?'}: maintenance: prune")
    else:
        click.echo("nothing to prune")
    for note in plan.notes:
        click.echo(f"  {note}", err=True)
    for b in result.branches:
        click.echo(f"old branch: {b.name} (last commit {b.date}"
                   f"{', merged' if b.merged else ''})")
    if apply_branches and not dry_run and result.branches:
        for line in P.delete_branches(root, result.branches):
            click.echo(line)
    click.echo(llm.usage.summary(), err=True)
