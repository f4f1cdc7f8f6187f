"""``memory extract [TRANSCRIPT…] [--since DATE] [--extractors a,b] [--offline]``."""

from __future__ import annotations

import datetime as dt

import click

from memrepo.lifecycle.extract.runner import extract as run
from memrepo.lifecycle.extract.runner import select
from memrepo.llm import for_repo
from memrepo.repo import discover
from memrepo.scripts._params import DATE, offline_heuristics


@click.command()
@click.argument("transcripts", nargs=-1, type=click.Path())
@click.option("--since", type=DATE, help="Transcripts started on or after this date (YYYY-MM-DD).")
@click.option("--all", "everything", is_flag=True, help="Every transcript, extracted or not.")
@click.option("--extractors", help="Comma-separated: decisions,lessons,people,procedures,"
              "facts,journal (default: all).")
@offline_heuristics
@click.option("--model", help="Model for this run (overrides llm.extract_model).")
@click.option("--no-commit", is_flag=True, help="Write the files, do not commit.")
@click.pass_context
def extract(ctx: click.Context, transcripts: tuple[str, ...], since: dt.date | None,
            everything: bool, extractors: str | None, offline: bool, model: str | None,
            no_commit: bool) -> None:
    """Extract decisions, lessons, people, procedures, facts and journal entries.

    Without TRANSCRIPT arguments: the transcripts not extracted yet. Each line written
    carries a [src: …] reference to its transcript; the commit (``extract: …``) lists them
    as Session: trailers. Transcripts are never modified. A transcript that cannot be
    read is reported (file:line: reason) and skipped, the others are extracted, and the
    exit status is 1; open transcripts are skipped until their session ends.
    """
    root = discover((ctx.obj or {}).get("repo")).root
    paths = select(root, transcripts, since.isoformat() if since else None,
                   pending_only=not everything)
    llm = for_repo(root, offline=offline, model=model)
    if not paths:
        click.echo("nothing to extract")
        return
    names = [n.strip() for n in extractors.split(",")] if extractors else None
    report = run(root, paths, llm, names, commit=not no_commit)
    c = report.counts()
    click.echo(f"{len(report.transcripts)} transcripts: {c['ADD']} added, {c['UPDATE']} updated,"
               f" {c['SUPERSEDE']} superseded, {c['NONE']} already known; "
               f"{len(report.written)} files" + (f", commit {report.commit[:10]}"
                                                if report.commit else ""))
    if transcripts:
        for path in report.open:
            click.echo(f"skipped (open): {path} — extracted once its session ends", err=True)
    elif report.open:
        click.echo(f"skipped {len(report.open)} open transcript"
                   f"{'s' if len(report.open) != 1 else ''} (extracted once they end)", err=True)
    for problem in report.bad:
        click.echo(f"memory: {problem} (skipped)", err=True)
    if report.offline_pairs and not llm.available:
        click.echo("offline: heuristics only (no ANTHROPIC_API_KEY, or --offline)", err=True)
    click.echo(llm.usage.summary(), err=True)
    if report.bad:
        ctx.exit(1)
