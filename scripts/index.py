"""``memory index [--rebuild] [--json]``: bring memory.db to HEAD (the hooks do it too)."""

from __future__ import annotations

import json
import sys

import click

from memrepo.errors import MemrepoError
from memrepo.index import embedders
from memrepo.index.indexer import sync
from memrepo.index.lock import Busy
from memrepo.repo import discover


class _Bar:
    """A click progress bar created on the first report, when stderr is a terminal."""

    def __init__(self, enabled: bool, label: str = "indexing"):
        self.enabled = enabled
        self.label = label
        self.bar = None
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 200:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Build a fresh index and swap it in atomically.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_context
def index(ctx: click.Context, rebuild: bool, as_json: bool) -> None:
    """Bring the search index (memory.db) up to HEAD: only changed files are read."""
    repo = discover((ctx.obj or {}).get("repo"), op="index")
    name = repo.config["search"]["embedder"]
    missing = embedders.available(name)
    if missing:
        raise MemrepoError(f"search.embedder is {name!r} but it is not installed: {missing}")
    tty = not as_json and sys.stderr.isatty()
    bar, embed_bar = _Bar(tty), _Bar(tty, "embedding")
    try:
        res = sync(repo.root, embedder_name=name, force_rebuild=rebuild, progress=bar,
                   embed_progress=embed_bar, replies=repo.config["search"]["reply_vectors"])
    except Busy as exc:
        raise MemrepoError(f"{exc}; try again when it finishes") from None
    finally:
        bar.close()
        embed_bar.close()
    if res is None:  # only a hook call returns None; said anyway, never silent
        raise MemrepoError("another indexer is running; it will bring the index to HEAD")
    if as_json:
        click.echo(json.dumps(res.as_dict(), indent=1))
        return
    commit = (res.commit or "no commit")[:12]
    notes = list(res.notes)
    if res.mode == "noop":
        click.echo(f"index is up to date with {commit}")
    elif res.mode == "rebuild":
        rate = res.files / res.seconds if res.seconds else 0
        why = f" ({notes.pop(0)})" if notes else ""
        click.echo(
            f"rebuilt the index at {commit}{why}: {res.files} files, {res.chunks} chunks "
            f"in {res.seconds:.1f}s ({rate:.0f} files/s)"
        )
    else:
        click.echo(
            f"indexed {commit}: {res.added} added, {res.updated} changed, {res.removed} removed "
            f"in {res.seconds * 1000:.0f} ms"
        )
    for note in notes:
        click.echo(f"note: {note}")
    if res.embedded:
        click.echo(f"embedded {res.embedded} chunks")
    if res.pending_vectors:
        click.echo(f"{res.pending_vectors} chunks still wait for vectors")
