"""``memory commit [--dry-run] [--json]``: commit the batch of knowledge edits (cron-safe)."""

from __future__ import annotations

import json

import click

from memrepo.repo import discover


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the message and the files; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.option("--llm/--no-llm", "use_llm", default=None,
              help="Force or forbid the LLM message (default: when ANTHROPIC_API_KEY is set).")
@click.option("--push/--no-push", "push", default=None,
              help="Sync with the remote after committing (default: git.auto_push).")
@click.pass_context
def commit(ctx: click.Context, dry_run: bool, as_json: bool, use_llm: bool | None,
           push: bool | None) -> int:
    """Stage knowledge/, topics/, archive/, event logs and closed transcripts, and commit them.

    Never open transcripts, never scratch/. Nothing to commit is not an error (exit 0, no
    empty commit), so this is safe to run from cron.
    """
    from memrepo.commit import batch

    root = discover((ctx.obj or {}).get("repo"), op="commit").root
    result = batch.run(root, dry_run=dry_run, use_llm=use_llm, push=push)
    if as_json:
        click.echo(json.dumps({**result.__dict__, "dry_run": dry_run}, indent=2))
        _usage(result.llm_usage)
        return 0
    if not result.files:
        click.echo("nothing to commit")
    elif dry_run:
        click.echo(result.message.rstrip())
        click.echo("")
        click.echo("files:")
        for f in result.files:
            click.echo(f"  {f}")
    else:
        click.echo(f"committed {result.commit[:10] if result.commit else '?'} "
                   f"{result.message.splitlines()[0]}")
        if result.pushed:
            click.echo(result.pushed)
    for s in result.skipped:
        click.echo(f"left out: {s}", err=True)
    _usage(result.llm_usage)
    return 0


def _usage(line: str | None) -> None:
    """Tokens and cost of the LLM message, at the end, as every LLM command prints them."""
    if line:
        click.echo(line, err=True)
