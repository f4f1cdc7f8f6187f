"""``memory hook NAME [FILES…]``: the plumbing git hooks call (see memrepo.hooks.dispatch),
and ``memory hook HARNESS EVENT``: an agent's hook (see memrepo.agents.events).

Git runs these on every commit and agents on every prompt, so ``memory hook …`` is
normally served by ``memrepo.scripts.fastpath`` without loading Click; this command is the
same call for ``memory --help`` and any form the fast path leaves to Click.
"""

from __future__ import annotations

import click

from memrepo.agents.harness import HARNESSES
from memrepo.hooks.dispatch import NAMES, run


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    short_help="Plumbing: a git validator or post-* hook, or an agent's hook.",
)
@click.argument("name", metavar=f"{{{'|'.join([*NAMES, *HARNESSES])}}}")
@click.argument("files", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def hook(ctx: click.Context, name: str, files: tuple[str, ...]) -> int:
    """Run the validator or git-event hook NAME (called by the installed git hooks), or
    answer an agent's hook: ``memory hook claude-code|codex|gemini EVENT`` with the hook
    payload on stdin (installed by ``memory install``; always exits 0).

    ``memory hook probe KIND`` only proves that this Python can run hook KIND (what
    ``memory doctor`` has each installed shim do)."""
    if name not in NAMES and name not in HARNESSES:
        # exit 1, not Click's 2: an agent reads 2 as "block this prompt"
        click.echo(f"memory hook: no hook or agent named {name!r} (agents: "
                   f"{', '.join(HARNESSES)}; git hooks: {', '.join(NAMES)}); check the "
                   "command in the agent's settings (`memory install AGENT` rewrites it)",
                   err=True)
        ctx.exit(1)
    if name in HARNESSES:
        if len(files) != 1:
            raise click.UsageError(f"memory hook {name} EVENT (one of: "
                                   f"{', '.join(HARNESSES[name])})")
        from memrepo.agents.events import run as agent_hook

        return agent_hook(name, files[0], (ctx.obj or {}).get("repo"))
    return run(name, files)
