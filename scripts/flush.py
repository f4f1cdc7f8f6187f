"""``memory flush``: write a session's durable notes before its context is compacted.

An agent runtime calls it when the context window nears capacity (seed 000 §6.4), with
the session as a transcript or a messages JSON (``--session FILE``, or on stdin). It
prints ``FLUSH_OK`` when nothing was worth keeping (and writes nothing), otherwise one
line per note written. Files are written, not committed: the next ``memory commit`` (or
the auto-commit) records them like any other edit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memrepo.documents import decode
from memrepo.errors import MemrepoError
from memrepo.lifecycle import flush as F
from memrepo.llm import for_repo
from memrepo.repo import discover
from memrepo.transcript.messages import read_text


@click.command("flush")
@click.option(
    "--session",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A transcript (.md) or a messages JSON / JSONL; '-' or none: read stdin.",
)
@click.option("--offline", is_flag=True, help="Use the heuristics, never the model.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="The notes, edits and files as JSON.")
@click.option("--source", help="The [src: …] reference of each bullet (default: the session).")
@click.pass_context
def flush(
    ctx: click.Context,
    session: Path | None,
    offline: bool,
    dry_run: bool,
    as_json: bool,
    source: str | None,
) -> None:
    """Save the session's decisions, lessons, people and tasks to memory (or say FLUSH_OK)."""
    repo = discover((ctx.obj or {}).get("repo"))
    if session is None or str(session) == "-":
        if sys.stdin.isatty():
            raise MemrepoError("give --session FILE or pipe the session on stdin")
        text, path = decode(sys.stdin.buffer.read(), "stdin"), None
    else:
        if not session.is_file():
            raise MemrepoError("session file not found", session)
        text, path = read_text(session), session
    llm = for_repo(repo.root, offline=offline)
    chars = int(repo.config.get("llm", {}).get("max_transcript_chars", 12000)) * 2
    report = F.flush(
        repo.root, text, path=path, llm=llm, dry_run=dry_run, source=source, max_chars=chars
    )
    click.echo(F.dumps(report) if as_json else F.summary(report))
    if report.fallback and as_json:
        click.echo(
            f"memory flush: LLM answer unusable ({report.fallback}); offline path used", err=True
        )
    if llm.usage.calls or llm.usage.fallbacks:
        click.echo(llm.usage.summary(), err=True)
