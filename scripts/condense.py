"""``memory condense daily|weekly|monthly [--date D] [--dry-run] [--offline]``."""

from __future__ import annotations

import datetime as dt

import click

from memrepo import clock
from memrepo.lifecycle import condense as C
from memrepo.llm import for_repo
from memrepo.repo import discover
from memrepo.scripts._params import DATE


@click.command()
@click.argument("period", type=click.Choice(["daily", "weekly", "monthly"]))
@click.option("--date", "day", type=DATE,
              help="The day (or a day of the week/month), YYYY-MM-DD; default today.")
@click.option("--dry-run", is_flag=True, help="Show the diff; write nothing.")
@click.option("--offline", is_flag=True, help="No LLM: the deterministic path.")
@click.option("--model", help="Model for this run (overrides llm.condense_model).")
@click.pass_context
def condense(ctx: click.Context, period: str, day: dt.date | None, dry_run: bool,
             offline: bool, model: str | None) -> None:
    """Daily journal from the day's transcripts; weekly rollup into MEMORY.md (within its
    cap); monthly distillation (archive old journals, review, cap).

    A transcript that cannot be read is reported (file:line: reason) and skipped; the
    others are condensed, and the exit status is 1.
    """
    root = discover((ctx.obj or {}).get("repo")).root
    when = day or clock.today()
    llm = for_repo(root, offline=offline, model=model)
    plan = {"daily": C.daily, "weekly": C.weekly, "monthly": C.monthly}[period](root, when, llm)
    if dry_run:
        click.echo(plan.diff(root) or "no changes")
    elif plan.empty(root):
        click.echo("no changes")
    else:
        sha = plan.apply(root, f"maintenance: {period} condensation {when}")
        click.echo(f"committed {sha[:10] if sha else '?'}: {period} condensation {when}")
    for note in plan.notes:
        click.echo(f"  {note}", err=True)
    for problem in plan.errors:
        click.echo(f"memory: {problem} (skipped)", err=True)
    click.echo(llm.usage.summary(), err=True)
    if plan.errors:
        ctx.exit(1)
