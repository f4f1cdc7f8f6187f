"""``memory merge-driver``: what git runs to merge a knowledge file (hidden plumbing).

Wired by ``.gitattributes`` (``knowledge/**/*.md merge=memrepo``) and the clone's git
config (``merge.memrepo.driver``, set by ``memory init`` and ``memory doctor --fix``;
``memory sync`` passes it to its own rebase). The merge is
:mod:`memrepo.commit.merge`'s.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("merge-driver", hidden=True)
@click.option("--marker-size", type=int, default=7, show_default=True,
              help="Length of the conflict markers (git's %L).")
@click.argument("base", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ours", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("theirs", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("path", default="")
def merge_driver(marker_size: int, base: Path, ours: Path, theirs: Path, path: str) -> int:
    """Merge BASE, OURS and THEIRS (git's %O %A %B) into OURS; PATH is git's %P.

    Exit status 0 when merged cleanly, 1 when conflict markers were left for a person.
    """
    from memrepo.commit import merge

    return merge.run_driver(base, ours, theirs, path, marker_size)
