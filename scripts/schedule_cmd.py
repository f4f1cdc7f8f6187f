"""``memory schedule run|install|status``."""

from __future__ import annotations

import click


@click.group()
def schedule() -> None:
    """Run the lifecycle jobs on a clock (commit, condense, prune, tags)."""


def _root(ctx: click.Context):
    from memrepo.repo import discover

    return discover((ctx.obj or {}).get("repo")).root


@schedule.command("run")
@click.option("--once", is_flag=True, help="Run what is due now, then exit.")
@click.option("--job", "job_name", help="Run this one job now (under the lock) and exit.")
@click.pass_context
def run(ctx: click.Context, once: bool, job_name: str | None) -> None:
    """Foreground scheduler: jobs never overlap (a lock) and every run is logged."""
    from memrepo import schedule as S

    root = _root(ctx)
    if job_name:
        found = [j for j in S.jobs(root) if j.name == job_name]
        if not found:
            raise click.ClickException(f"unknown job {job_name!r}: "
                                       + ", ".join(j.name for j in S.jobs(root)))
        ctx.exit(S.run_job(root, found[0]))
    click.echo(f"memory schedule: {len(S.jobs(root))} jobs for {root}; Ctrl-C to stop",
               err=True)
    S.run_forever(root, once=once)


@schedule.command("install")
@click.option("--print", "just_print", is_flag=True, help="Print the crontab lines only.")
@click.pass_context
def install(ctx: click.Context, just_print: bool) -> None:
    """Write the jobs as crontab lines (replacing this repo's earlier ones)."""
    from memrepo import schedule as S

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
    from memrepo import schedule as S

    for s in S.status(_root(ctx)):
        line = (f"{s['job']:<16} {s['cron']:<14} last {s['last'] or 'never'}"
                f" ({s['status'] or '-'}), next {s['next']}, failures {s['failures']}")
        click.echo(line)
        if s["detail"]:
            click.echo(f"    {s['detail'].splitlines()[-1]}")
