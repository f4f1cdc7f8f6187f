"""``memory remote``: add the memory's remote and guard it (which rules hold server-side)."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from memrepo.commit import remotes
from memrepo.config import load_config
from memrepo.git import git
from memrepo.repo import discover


def _default(root: object) -> str:
    return str(load_config(root)["git"].get("remote") or "origin")  # type: ignore[arg-type]


@click.group()
def remote() -> None:
    """Add a remote and say, or put in place, what guards it on the server side."""


@remote.command("add")
@click.argument("name")
@click.argument("url")
@click.option("--push", is_flag=True, help="Push the current branch there at once.")
@click.pass_context
def add(ctx: click.Context, name: str, url: str, push: bool) -> None:
    """Add remote NAME at URL (then `memory remote protect NAME`)."""
    root = discover((ctx.obj or {}).get("repo")).root
    click.echo(remotes.add(root, name, url))
    if push:
        git(["push", "-u", name, "HEAD"], root)
        click.echo(f"pushed to {name}")
    if name != _default(root):
        click.echo(f"note: `memory sync` uses {_default(root)!r}; set `git.remote: {name}` "
                   "in memory-config.yaml to make it this one")
    click.echo(f"next: `memory remote protect {name}`")


@remote.command("protect")
@click.argument("name", required=False)
@click.option("--install", "install", default=None, metavar="CMD",
              help="How a CI job installs memrepo (default: pip install memrepo).")
@click.pass_context
def protect(ctx: click.Context, name: str | None, install: str | None) -> None:
    """Guard remote NAME: memrepo's pre-receive hook on a bare repository memrepo can
    reach; a CI job running `memory verify` on GitHub or GitLab; else the server steps."""
    root = discover((ctx.obj or {}).get("repo")).root
    for line in remotes.protect(root, name or _default(root),
                                install or remotes.DEFAULT_INSTALL):
        click.echo(line)


@remote.command("status")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> int:
    """Each remote and what guards it; exit 1 when one is unguarded."""
    root = discover((ctx.obj or {}).get("repo")).root
    found = [remotes.protection(root, n) for n in git(["remote"], root).split()]
    if as_json:
        click.echo(json.dumps([asdict(p) for p in found]))
    elif not found:
        click.echo("no remote: `memory remote add NAME URL`")
    for p in [] if as_json else found:
        click.echo(f"{'ok  ' if p.ok else 'warn'} {p.remote} ({p.url}): {p.detail}")
    return 0 if all(p.ok for p in found) else 1
