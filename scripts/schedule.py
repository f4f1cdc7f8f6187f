"""``memory schedule run|install|status``."""

from __future__ import annotations

from pathlib import Path

import click

from memrepo.repo import discover


@click.group()
def schedule() -> None:
    """Run the lifecycle jobs on a clock (commit, extract, condense, prune, tags)."""


def _root(ctx: click.Context) -> Path:
    return discover((ctx.obj or {}).get("repo")).root


@schedule.command("run")
@click.option("--once", is_flag=True, help="Run the jobs due this minute, then exit.")
@click.option("--job", "job_name", help="Run this one job now (under the lock) and exit; "
              "what the crontab lines call.")
@click.option("--wait", type=click.FloatRange(min=0), default=None,
              help="Seconds --job waits for a running job to finish (default: 900).")
@click.pass_context
def run(ctx: click.Context, once: bool, job_name: str | None, wait: float | None) -> None:
    """Foreground scheduler: jobs never overlap (a lock) and every run is logged."""
    from memrepo.lifecycle import schedule as S

    root = _root(ctx)
    if job_name:
        found = [j for j in S.jobs(root) if j.name == job_name]
        if not found:
            raise click.BadParameter(f"unknown job {job_name!r} (jobs: "
                                     + ", ".join(j.name for j in S.jobs(root)) + ")",
                                     param_hint="'--job'")
        code = S.run_job(root, found[0], S.LOCK_WAIT if wait is None else wait)
        last = S.status(root)
        line = next((s for s in last if s["job"] == job_name), None)
        click.echo(f"{job_name}: {line['status'] if line else '?'} (exit {code})")
        if code and line and line["detail"]:
            click.echo(line["detail"].splitlines()[-1], err=True)
        ctx.exit(code)
    click.echo(f"memory schedule: {len(S.jobs(root))} jobs for {root}; Ctrl-C to stop",
               err=True)
    S.run_forever(root, once=once)


@schedule.command("install")
@click.option("--print", "just_print", is_flag=True, help="Print the crontab lines only.")
@click.pass_context
def install(ctx: click.Context, just_print: bool) -> None:
    """Write the jobs as crontab lines (replacing this repo's earlier ones)."""
    from memrepo.lifecycle import schedule as S

    root = _root(ctx)
    if just_print:
        click.echo("\n".join(S.crontab_lines(root)))
        return
    S.install_crontab(root)
    click.echo(f"installed {len(S.jobs(root))} crontab lines for {root}")


@schedule.command("status")
@click.pass_context
def status(ctx: click.Context) -> None:
    """Last and next run of every job, and failures."""
    from memrepo.lifecycle import schedule as S

    for s in S.status(_root(ctx)):
        line = (f"{s['job']:<16} {s['cron']:<14} last {s['last'] or 'never'}"
                f" ({s['status'] or '-'}), next {s['next']}, failures {s['failures']}"
                f"  [{' → '.join(s['steps'])}]")
        click.echo(line)
        if s["detail"]:
            click.echo(f"    {s['detail'].splitlines()[-1]}")


@schedule.command("fire")
@click.argument("event")
@click.option("--json", "as_json", is_flag=True, help="Print the event and its time as JSON.")
@click.pass_context
def fire(ctx: click.Context, event: str, as_json: bool) -> None:
    """Fire a cron topic's event now (what its scheduler job does): the compiles of the
    next 12 hours carry it, as `memory compile --event cron:NAME` would."""
    import json

    from memrepo.context.watchers import fired
    from memrepo.context.watchers.loader import load_topics

    if not event.startswith("cron:") or event == "cron:":
        raise click.BadParameter(f"{event!r} is not cron:NAME", param_hint="'EVENT'")
    root = _root(ctx)
    unknown = fired.unknown_cron(load_topics(root), event)
    if unknown:
        raise click.BadParameter(unknown, param_hint="'EVENT'")
    at = fired.record(root, event)
    if as_json:
        click.echo(json.dumps({"event": event, "at": at.isoformat(timespec="seconds")}))
    else:
        click.echo(f"fired {event} at {at.isoformat(timespec='seconds')}")
