"""``memory trim --messages FILE.json --context-window N``: smart trim with recalled context."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("trim")
@click.option(
    "--messages",
    "path",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help='A messages JSON: a list, or {"messages": [...]} (Anthropic or OpenAI shape).',
)
@click.option("--context-window", type=click.IntRange(min=100), required=True, help="Tokens.")
@click.option("--reserve", type=click.IntRange(min=0), help="Tokens kept free for the reply.")
@click.option("--hard-cap", type=click.IntRange(min=0), default=4000, show_default=True,
              help="Most tokens of recalled context (also at most 10% of the window).")  # fmt: skip
@click.option("--keep-last", type=click.IntRange(min=0), default=6, show_default=True)
def trim(
    path: Path, context_window: int, reserve: int | None, hard_cap: int, keep_last: int
) -> None:
    """Print the messages trimmed to fit CONTEXT-WINDOW (same JSON shape); a summary on stderr."""
    from memrepo.compile.messages import load_messages
    from memrepo.trim import smart_trim

    raw = json.loads(path.read_text(encoding="utf-8"))
    msgs = load_messages(path)
    res = smart_trim(msgs, context_window, reserve=reserve, hard_cap=hard_cap, keep_last=keep_last)
    out = {**raw, "messages": res.messages} if isinstance(raw, dict) else res.messages
    click.echo(json.dumps(out, ensure_ascii=False, indent=1))
    click.echo(
        f"memory trim: {res.tokens_before} -> {res.tokens_after} tokens (safe limit "
        f"{res.safe_limit}), {len(res.trimmed)} message(s) trimmed, recalled context "
        f"{res.recall_tokens} tokens",
        err=True,
    )
