"""``memory remember``, ``memory reinforce``, ``memory demote``: discrete memories and signals.

``remember`` appends a dated bullet to today's journal (:mod:`memrepo.lifecycle.journal`).
``reinforce`` (+3) and ``demote`` (-1) append an event to ``raw/signals/YYYY-MM.jsonl``
and fold it into the index at once, so the next search ranks with it (seed 001,
:mod:`memrepo.index.refs`).
"""

from __future__ import annotations

import click

from memrepo.index import refs
from memrepo.lifecycle import journal
from memrepo.repo import discover


@click.command("remember")
@click.argument("text", nargs=-1, required=True)
@click.option("--tags", default="", help="Comma-separated tags, e.g. payments,hmac.")
@click.pass_context
def remember(ctx: click.Context, text: tuple[str, ...], tags: str) -> None:
    """Append TEXT as a dated bullet to today's journal (created if missing)."""
    repo = discover((ctx.obj or {}).get("repo"), op="remember")
    rel, line = journal.remember(repo.root, " ".join(text), tags.split(","))
    click.echo(f"{rel}:{line}")
    # the index follows commits: say so, or a search right after finds nothing
    click.echo("memory: not committed yet; search finds it after `memory commit`", err=True)


def _signal(ctx: click.Context, ref: str, event: str) -> None:
    repo = discover((ctx.obj or {}).get("repo"), op="reinforce")
    done = refs.record(repo.root, ref, event)
    rel = done.logged.relative_to(repo.root).as_posix()
    now = f" (score now {done.score:+g})" if done.score is not None else ""
    click.echo(f"{event}d {done.ref}{now}; logged in {rel}")


@click.command("reinforce")
@click.argument("ref")
@click.pass_context
def reinforce(ctx: click.Context, ref: str) -> None:
    """REF was useful (+3): PATH, PATH:LINE, PATH:A-B as search prints it, or PATH#CHUNK."""
    _signal(ctx, ref, "reinforce")


@click.command("demote")
@click.argument("ref")
@click.pass_context
def demote(ctx: click.Context, ref: str) -> None:
    """REF is stale or wrong (-1): PATH, PATH:LINE, PATH:A-B, or PATH#CHUNK."""
    _signal(ctx, ref, "demote")
