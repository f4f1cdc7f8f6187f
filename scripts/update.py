"""``memory update REF TEXT [--replace]``: change one knowledge entry, committed (seed 001).

The default supersedes: the old line stays, struck through and marked with what
replaced it and when; ``--replace`` rewrites the line in place (a typo, a wording). The
entry keeps its line, so its reinforcement follows it (:mod:`memrepo.lifecycle.update`).
"""

from __future__ import annotations

import click

from memrepo.lifecycle.update import update_entry
from memrepo.repo import discover


@click.command("update")
@click.argument("ref")
@click.argument("text", nargs=-1, required=True)
@click.option("--replace", is_flag=True, help="Rewrite the line in place instead of superseding.")
@click.pass_context
def update(ctx: click.Context, ref: str, text: tuple[str, ...], replace: bool) -> None:
    """Supersede the entry at REF (PATH:LINE) with TEXT, and commit."""
    repo = discover((ctx.obj or {}).get("repo"))
    done = update_entry(repo.root, ref, " ".join(text), "replace" if replace else "supersede")
    what = "replaced" if replace else "superseded"
    kept = f"; the old line is kept struck through at :{done.old_line}" if done.old_line else ""
    sha = f" ({done.commit[:10]})" if done.commit else ""
    click.echo(f"{what} {done.ref}{kept}{sha}")
