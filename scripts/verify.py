"""``memory verify [--since REV] [--json]``: audit history for the rules hooks can be skipped on."""

from __future__ import annotations

import json

import click

from memrepo.repo import discover


@click.command()
@click.option("--since", metavar="REV", help="Only commits after REV (default: all history).")
@click.option("--rev", default="HEAD", show_default=True, help="The history to audit.")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def verify(ctx: click.Context, since: str | None, rev: str, as_json: bool) -> int:
    """Check each commit: closed transcripts unchanged, open ones only grown, none deleted
    or renamed, no secrets. Exit 1 and name each offending commit when one is found."""
    from memrepo.hooks import verify as audit

    root = discover((ctx.obj or {}).get("repo"), op="verify").root
    commits = audit.commits_since(root, since, rev)
    findings = audit.audit_commits(root, commits)
    if as_json:
        click.echo(json.dumps({"checked": len(commits), "ok": not findings,
                               "offending": [f.__dict__ for f in findings]}, indent=2))
    else:
        if findings:
            click.echo(audit.format_findings(findings))
        click.echo(f"{len(commits)} commit(s) checked, {len(findings)} offending")
    return 1 if findings else 0
