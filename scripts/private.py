"""``memory private``: private knowledge with git-crypt (docs/private.md)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from memrepo import private as priv
from memrepo.repo import discover


@click.group("private")
def private() -> None:
    """Private knowledge: private.paths encrypted by git-crypt in every remote."""


@private.command("init")
@click.argument("patterns", nargs=-1)
@click.option("--no-commit", is_flag=True,
              help="Write .gitattributes (and the config) but commit nothing.")
@click.pass_context
def init(ctx: click.Context, patterns: tuple[str, ...], no_commit: bool) -> None:
    """Encrypt private.paths (plus PATTERNS, added to it; e.g. 'knowledge/people/**'):
    a git-crypt key (this clone's, or a new one), memrepo's lines in .gitattributes, and a
    commit that stores the private files encrypted."""
    root = discover((ctx.obj or {}).get("repo")).root
    for line in priv.init(root, list(patterns), commit=not no_commit):
        click.echo(line)
    click.echo("")
    for line in priv.guide():
        click.echo(line)


@private.command("status")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> int:
    """The private paths, their files, and what a push would carry in the clear; exit 1
    when something would (or this clone is locked)."""
    root = discover((ctx.obj or {}).get("repo")).root
    st = priv.status(root)
    bad = bool(st.patterns) and bool(st.uncovered or st.locked or st.clear or not st.filter)
    if as_json:
        click.echo(json.dumps(asdict(st)))
        return 1 if bad else 0
    if not st.patterns:
        click.echo("no private paths (private.paths is empty): `memory private init PATTERN`")
        return 0
    click.echo(f"private.paths: {', '.join(st.patterns)}")
    click.echo(f"git-crypt: {st.git_crypt or 'not installed'}; key in this clone: "
               f"{'yes' if st.key else 'no'}; encrypting on git add: "
               f"{'yes' if st.filter else 'no'}")
    click.echo(f"{len(st.files)} private file(s) tracked")
    for path in st.uncovered:
        click.echo(f"warn not covered by a git-crypt attribute: {path}")
    for path in st.locked:
        click.echo(f"warn locked (ciphertext here): {path}")
    for c in st.clear:
        where = "HEAD, on a remote already" if c.pushed else f"{c.commit}, not pushed"
        click.echo(f"warn in the clear: {c.path} ({where})")
    return 1 if bad else 0


@private.command("unlock")
@click.argument("keyfile", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def unlock(ctx: click.Context, keyfile: Path) -> None:
    """Read the private files in this clone: `git-crypt unlock KEYFILE`, then the index
    rebuilt with their text."""
    repo = discover((ctx.obj or {}).get("repo"))
    for line in priv.unlock(repo.root, keyfile.resolve(), repo.config["search"]["embedder"]):
        click.echo(line)


@private.command("export-key")
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_key(ctx: click.Context, dest: Path) -> None:
    """Write this clone's git-crypt key to DEST (`git-crypt export-key`), for
    `memory private unlock DEST` in another clone. Keep it out of the repo."""
    root = discover((ctx.obj or {}).get("repo")).root
    click.echo(priv.export_key(root, dest.resolve()))
