"""``memory config``: the effective configuration (memory-config.yaml over the defaults)."""

from __future__ import annotations

import json

import click

from memrepo import yamlsafe
from memrepo.config import SCHEMA, Config, defaults
from memrepo.errors import MemrepoError
from memrepo.repo import discover


def _effective(ctx: click.Context, use_defaults: bool) -> Config:
    if use_defaults:
        return Config(defaults())
    return discover(ctx.obj.get("repo") if ctx.obj else None).config


@click.group()
def config() -> None:
    """Show the configuration; invalid settings are reported with their key path and line."""


@config.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.option("--defaults", "use_defaults", is_flag=True, help="Print the built-in defaults.")
@click.pass_context
def show(ctx: click.Context, as_json: bool, use_defaults: bool) -> int:
    """Print the effective configuration (every setting, defaults filled in)."""
    cfg = _effective(ctx, use_defaults)
    click.echo(json.dumps(cfg, indent=2) if as_json else yamlsafe.dump(dict(cfg)).rstrip())
    return 0


@config.command()
@click.argument("key")
@click.pass_context
def get(ctx: click.Context, key: str) -> int:
    """Print one setting, e.g. `memory config get search.bm25_weight`."""
    section, _, name = key.partition(".")
    if section not in SCHEMA or name not in SCHEMA[section]:
        raise MemrepoError(f"unknown setting '{key}' (see `memory config show`)")
    value = _effective(ctx, False)[section][name]
    click.echo(json.dumps(value) if not isinstance(value, str) else value)
    return 0
