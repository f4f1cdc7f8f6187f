"""``memory export``: the memory's entries with their sources, as JSON Lines or markdown."""

from __future__ import annotations

import datetime as dt

import click

from memrepo.lifecycle import export
from memrepo.repo import discover
from memrepo.scripts._params import DATE


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(export.FORMATS), default="jsonl",
              show_default=True, help="JSON Lines for programs, markdown for people.")
@click.option("--since", type=DATE, help="Only entries dated on or after (YYYY-MM-DD).")
@click.option("--include-archive", is_flag=True, help="archive/ too.")
@click.pass_context
def export_cmd(ctx: click.Context, fmt: str, since: dt.date | None,
               include_archive: bool) -> None:
    """Every knowledge entry (one bullet each) with its file, line, section, date, sources
    and whether it was superseded; written to stdout."""
    root = discover((ctx.obj or {}).get("repo")).root
    for chunk in export.render(export.entries(root, since, include_archive), fmt):
        click.echo(chunk, nl=False)
