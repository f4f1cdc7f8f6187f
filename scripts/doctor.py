"""``memory doctor``: is this memory repo healthy, and what to do when it is not (the
checks and repairs are :mod:`memrepo.doctor`)."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from memrepo.doctor import fix, run_checks
from memrepo.repo import discover


@click.command()
@click.option("--fix", "do_fix", is_flag=True,
              help="Repair what can be repaired (hooks rewritten for this Python), then check.")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def doctor(ctx: click.Context, do_fix: bool, as_json: bool) -> int:
    """Check the memory repo: config, layout, hooks (each run as git runs it, with
    PATH=/usr/bin:/bin), `memory` on PATH, git LFS (and the index).

    --fix also closes and commits sessions left open with no append for a day (a crashed
    agent), as `memory capture end` would. Exit status 0 when healthy (warnings allowed),
    1 otherwise.
    """
    repo = discover(ctx.obj.get("repo") if ctx.obj else None)
    fixed, not_fixed = fix(repo) if do_fix else ([], [])
    checks = run_checks(repo)
    healthy = all(c.ok or c.warning for c in checks)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "root": str(repo.root),
                    "healthy": healthy,
                    "fixed": fixed,
                    "not_fixed": not_fixed,
                    "checks": [asdict(c) for c in checks],
                },
                indent=2,
            )
        )
        return 0 if healthy else 1
    for line in fixed:
        click.echo(f"fixed: {line}")
    for line in not_fixed:
        click.echo(f"not fixed: {line}")
    for c in checks:
        mark = "ok  " if c.ok else ("warn" if c.warning else "FAIL")
        click.echo(f"[{mark}] {c.name}: {c.detail}")
        if not c.ok and c.fix:
            click.echo(f"       fix: {c.fix}")
    click.echo("healthy" if healthy else "unhealthy")
    return 0 if healthy else 1
