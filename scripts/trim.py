"""``memory trim --messages FILE.json --context-window N``: smart trim with recalled context."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memrepo.errors import MemrepoError
from memrepo.repo import discover
from memrepo.transcript.messages import parse_messages, read_text


@click.command("trim")
@click.option(
    "--messages",
    "path",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help='Messages: a JSON list, {"messages": [...]} (Anthropic or OpenAI shape), or JSONL.',
)
@click.option("--context-window", type=click.IntRange(min=100), required=True, help="Tokens.")
@click.option("--reserve", type=click.IntRange(min=0), help="Tokens kept free for the reply.")
@click.option("--hard-cap", type=click.IntRange(min=0), default=4000, show_default=True,
              help="Most tokens of recalled context (also at most 10% of the window).")  # fmt: skip
@click.option("--keep-last", type=click.IntRange(min=0), default=6, show_default=True)
@click.pass_context
def trim(
    ctx: click.Context,
    path: Path,
    context_window: int,
    reserve: int | None,
    hard_cap: int,
    keep_last: int,
) -> None:
    """Print the messages trimmed to fit CONTEXT-WINDOW (same JSON shape); a summary on stderr.

    A {"messages": [...]} object keeps its other keys; a list or JSONL prints as a list.
    When the protected messages alone do not fit, the output is as small as trimming can
    make it and a warning on stderr says by how much it is over. In a memory repo (--repo,
    $MEMORY_REPO or the cwd) the recalled context also holds what the repo knows about the
    last user messages; elsewhere it is built from the dropped messages alone.
    """
    from memrepo.context.trim import smart_trim

    msgs, wrapper = parse_messages(read_text(path), str(path))
    explicit = (ctx.obj or {}).get("repo")
    try:
        root = discover(explicit).root
    except MemrepoError:
        if explicit:
            raise
        root = None  # not in a memory repo: the messages alone
    res = smart_trim(msgs, context_window, reserve=reserve, hard_cap=hard_cap,
                     keep_last=keep_last, root=root)  # fmt: skip
    out = {**wrapper, "messages": res.messages} if wrapper is not None else res.messages
    click.echo(json.dumps(out, ensure_ascii=False, indent=1))
    click.echo(
        f"memory trim: {res.tokens_before} -> {res.tokens_after} tokens (safe limit "
        f"{res.safe_limit}), {len(res.trimmed)} message(s) trimmed, recalled context "
        f"{res.recall_tokens} tokens"
        + (f" ({res.repo_facts} facts and {res.repo_passages} passages from the repo)"
           if root is not None else ""),
        err=True,
    )
    for note in res.notes:
        click.echo(f"memory trim: {note}", err=True)
    if res.warning:
        click.echo(f"memory trim: warning: {res.warning}", err=True)
