"""``memory prune [--dry-run] [--apply] [--offline] [--json]``."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from memrepo import clock
from memrepo.lifecycle import explore
from memrepo.lifecycle import prune as P
from memrepo.llm import for_repo
from memrepo.repo import discover
from memrepo.scripts._params import DATE


def _report(result: P.PruneResult, changed: list[str], sha: str | None,
            dry_run: bool, deleted: list[str]) -> dict[str, Any]:
    """``--json``: what the prune did, or with ``--dry-run`` would do."""
    plan = result.plan
    return {
        "dry_run": dry_run,
        "commit": sha,
        "moves": [{"from": a, "to": b} for a, b in plan.moves],
        "compress": [{"from": a, "to": b} for a, b in plan.compress],
        "changed": changed,
        "links": [k.as_dict() for k in result.links],
        "notes": plan.notes,
        "branches": [{"name": b.name, "date": b.date.isoformat(), "merged": b.merged}
                     for b in result.branches],
        "deleted": deleted,
    }


@click.command()
@click.option("--dry-run", is_flag=True,
              help="List every move, change and link rewrite; do nothing.")
@click.option("--apply", "apply_branches", is_flag=True,
              help="Also delete explore/* branches older than the limit (tagged first).")
@click.option("--offline", is_flag=True, help="No LLM for the MEMORY.md cap.")
@click.option("--date", "day", type=DATE, help="Pretend today is this date (YYYY-MM-DD).")
@click.option("--json", "as_json", is_flag=True,
              help="What it did (with --dry-run: would do) as one JSON object.")
@click.pass_context
def prune(ctx: click.Context, dry_run: bool, apply_branches: bool, offline: bool,
          day: dt.date | None, as_json: bool) -> None:
    """Cap MEMORY.md, archive old journals and stale knowledge (git mv, links rewritten to
    follow), list old branches."""
    root = discover((ctx.obj or {}).get("repo")).root
    today = day or clock.today()
    llm = for_repo(root, offline=offline)
    result = P.plan_prune(root, today, llm)
    plan = result.plan
    changed = sorted(plan.changed(root))
    sha: str | None = None
    out: list[str] = []
    if dry_run:
        out.append(plan.diff(root) or "no changes")
    elif not plan.empty(root):
        sha = plan.apply(root, "maintenance: prune")
        out.append(f"committed {sha[:10] if sha else '?'}: maintenance: prune")
    else:
        out.append("nothing to prune")
    out += [f"link {k.path}:{k.line}: {k.old} -> {k.new}" for k in result.links]
    out += [f"old branch: {b.name} (last commit {b.date}{', merged' if b.merged else ''})"
            for b in result.branches]
    deleted: list[str] = []
    if apply_branches and not dry_run and result.branches:
        deleted = explore.remove(root, result.branches, why="memory prune")
    if as_json:
        click.echo(json.dumps(_report(result, changed, sha, dry_run, deleted),
                              ensure_ascii=False, indent=1))
    else:
        click.echo("\n".join(out + deleted))
    for note in plan.notes:
        click.echo(f"  {note}", err=True)
    click.echo(llm.usage.summary(), err=True)
