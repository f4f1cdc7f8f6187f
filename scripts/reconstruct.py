"""``memory reconstruct --branch NAME [--extractors …] [--model …] [--dry-run]``."""

from __future__ import annotations

import click

from memrepo.lifecycle import reconstruct as R
from memrepo.llm import for_repo
from memrepo.repo import discover
from memrepo.scripts._params import offline_heuristics


@click.command()
@click.option("--branch", "name", required=True, help="Replay onto extract/NAME.")
@click.option("--extractors", help="Comma-separated extractor names (default: all).")
@click.option("--model", help="Model for every LLM step of the replay (overrides the config).")
@offline_heuristics
@click.option("--dry-run", is_flag=True, help="Print the planned LLM calls and their cost.")
@click.option("--batch", default=200, show_default=True, type=click.IntRange(min=1),
              help="Transcripts per commit.")
@click.pass_context
def reconstruct(ctx: click.Context, name: str, extractors: str | None, model: str | None,
                offline: bool, dry_run: bool, batch: int) -> None:
    """Regenerate knowledge from every committed transcript on extract/NAME; main is
    never touched.

    Runs in .memrepo/worktrees/NAME; an interrupted run resumes where it stopped. A
    transcript that cannot be read is reported (file:line: reason) and skipped, and the
    exit status is 1.
    """
    root = discover((ctx.obj or {}).get("repo")).root
    llm = for_repo(root, offline=offline, model=model)
    names = [n.strip() for n in extractors.split(",")] if extractors else None
    if dry_run:
        n = len(R.committed_transcripts(root))
        if not llm.available:
            click.echo(f"offline: {n} transcripts would be replayed by the heuristics; "
                       "no LLM calls, $0")
            return
        p = R.plan(root, llm, names)
        click.echo(f"{n} transcripts; planned LLM calls: {p.planned_calls} extraction "
                   f"({p.cached_calls} cached, model {llm.model_for('extract')}), up to "
                   f"{p.reconcile_calls} reconcile, {p.condense_calls} weekly condensation "
                   f"({p.weeks} weeks, model {llm.model_for('condense')}); estimated cost "
                   f"${p.estimated_cost:.4f} (before prompt-cache savings)")
        for problem in p.bad:
            click.echo(f"memory: {problem} (would be skipped)", err=True)
        return
    bar: list = []

    def start(total: int, done: int) -> None:
        if done:
            click.echo(f"resuming: {done} of {total} transcripts already replayed", err=True)
        bar.append(click.progressbar(length=total - done, label="replaying", file=None))
        bar[0].__enter__()

    res = R.reconstruct(root, name, llm, names, batch=batch,
                        progress=lambda n: bar[0].update(n) if bar else None, start=start)
    if bar:
        bar[0].__exit__(None, None, None)
    e = res.edits
    click.echo(f"{res.branch}: {res.replayed} transcripts replayed; {e.get('ADD', 0)} added, "
               f"{e.get('UPDATE', 0)} updated, {e.get('SUPERSEDE', 0)} superseded, "
               f"{e.get('NONE', 0)} already known; {res.weeks} weekly rollups "
               f"(worktree {res.worktree})")
    click.echo(res.diffstat.rstrip() or "no difference with main under knowledge/")
    for problem in res.bad:
        click.echo(f"memory: {problem} (skipped)", err=True)
    click.echo(llm.usage.summary(), err=True)
    if res.bad:
        ctx.exit(1)
