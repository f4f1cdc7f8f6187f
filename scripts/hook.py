"""``memory hook NAME [FILES…]``: the plumbing git hooks call (see memrepo.hooks.dispatch).

Git runs these on every commit, so ``memory hook …`` is normally served by
``memrepo.scripts.fastpath`` without loading Click; this command is the same call for
``memory --help`` and any form the fast path leaves to Click.
"""

from __future__ import annotations

import click

from memrepo.hooks.dispatch import NAMES, run


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    short_help="Plumbing: run a validator or a post-* hook.",
)
@click.argument("name", type=click.Choice(NAMES))
@click.argument("files", nargs=-1, type=click.UNPROCESSED)
def hook(name: str, files: tuple[str, ...]) -> int:
    """Run the validator or git-event hook NAME (called by the installed git hooks)."""
    return run(name, files)
