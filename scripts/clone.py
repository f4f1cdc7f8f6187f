"""``memory clone SRC DEST [--sparse DIR]…``: a clone of the memory, whole or sparse (a
sub-agent's view of just the folders it needs), with memrepo's hooks and an index."""

from __future__ import annotations

import json

import click

from memrepo.commit import clone as engine


@click.command("clone")
@click.argument("src")
@click.argument("dest", type=click.Path(file_okay=False))
@click.option("--sparse", "folders", multiple=True, metavar="DIR",
              help="Check out only this folder (repeatable; git's cone mode): a sub-agent's "
                   "clone. Without it, the whole memory.")
@click.option("--branch", help="The branch to check out (default: the remote's).")
@click.option("--no-index", is_flag=True, help="Do not build the search index now.")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
def clone(src: str, dest: str, folders: tuple[str, ...], branch: str | None, no_index: bool,
          as_json: bool) -> int:
    """Clone the memory at SRC (a path or URL) into DEST, ready for `memory` commands.

    With --sparse, the clone holds the top-level files and the folders given, nothing
    else: capture, commit, search, index, remember, reinforce, sync and verify work there
    and never write over what is left out; commands that rewrite the whole memory refuse
    (docs/sub-agents.md).
    """
    done = engine.clone(src, dest, list(folders) if folders else None, branch=branch,
                        index=not no_index)
    if as_json:
        click.echo(json.dumps(done.as_json(), indent=1))
        return 0
    what = (f"a sparse clone of {', '.join(f + '/' for f in done.folders)}"
            if done.folders is not None else "a full clone")
    click.echo(f"cloned {src} into {done.root}: {what}; hooks: {done.hooks}")
    for note in done.notes:
        click.echo(note)
    return 0
