"""``memory tag daily|weekly|milestone|before|extract …`` and ``memory log --at TAG PATH``."""

from __future__ import annotations

import datetime as dt

import click

from memrepo import clock
from memrepo.errors import MemrepoError
from memrepo.lifecycle import tags
from memrepo.repo import discover
from memrepo.scripts._params import DATE


@click.command()
@click.argument("kind", type=click.Choice(["daily", "weekly", "milestone", "before", "extract"]))
@click.argument("name", required=False)
@click.option("--date", "day", type=DATE,
              help="Date for daily/weekly tags, YYYY-MM-DD (default: today).")
@click.option("--force", is_flag=True, help="Move an existing tag.")
@click.option("-m", "--message", "note", help="What the tag marks (kept in the tag's message).")
@click.pass_context
def tag(ctx: click.Context, kind: str, name: str | None, day: dt.date | None,
        force: bool, note: str | None) -> None:
    """Tag the memory (annotated, with a summary of what changed).

    daily and weekly tags are made only when knowledge changed since the previous one.
    """
    root = discover((ctx.obj or {}).get("repo")).root
    if kind in ("daily", "weekly"):
        value: str | dt.date = day or clock.today()
    elif not name:
        raise MemrepoError(f"memory tag {kind} needs a NAME")
    else:
        value = name
    made = tags.make(root, kind, value, force, note)
    since = tags.previous(root, kind, before=tags.tag_name(kind, value))
    click.echo(made or f"no {kind} tag: nothing changed since {since}")


@click.command("log")
@click.option("--at", "at", required=True,
              help="A tag (memory/daily/2026-02-01 or daily/…) or a date (YYYY-MM-DD).")
@click.argument("path")
@click.pass_context
def log_at(ctx: click.Context, at: str, path: str) -> None:
    """Show what PATH said at a memory tag, or on a date (the last commit made by the end
    of that day; its daily tag when the tag names that commit)."""
    root = discover((ctx.obj or {}).get("repo")).root
    click.echo(tags.show_at(root, at, path), nl=False)
