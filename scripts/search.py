"""``memory search QUERY``: ranked files with their best chunk, with or without the index.

``--batch`` reads JSONL queries ``{"id", "query", "k"}`` on stdin and writes one
``{"id", "results"}`` line per query from one process (no Python start per query).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import click

from memrepo.index.dates import BadBound, parse_bound
from memrepo.index.ranking import Filters, Hit, settings_from_config
from memrepo.index.search import QUERY_ERRORS, Search
from memrepo.index.signals import record_hits
from memrepo.layout import category_names
from memrepo.repo import discover
from memrepo.scripts._params import DATE
from memrepo.scripts.cli import NAMESPACE
from memrepo.sparse import view as sparse_view


def _date(value: str | None, option: str) -> str | None:
    if not value:
        return None
    try:
        return parse_bound(value)
    except BadBound as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def _print_text(hits: list[Hit], explain: bool,
                linked: dict[str, list[str]] | None = None) -> None:
    if not hits:
        click.echo("no results")
        return
    for i, h in enumerate(hits, 1):
        cat = f"  [{h.category}]" if h.category else ""
        click.echo(f"{i:>2}. {h.ref}{cat}  {h.score:.4g}")
        if h.snippet:
            click.echo(f"    {h.snippet}")
        if linked and linked.get(h.path):
            click.echo(f"    links to: {', '.join(linked[h.path])}")
        if explain and h.explain:
            parts = ", ".join(f"{k}={v}" for k, v in h.explain.items() if v is not None)
            click.echo(f"    explain: {parts}")


@click.command("search")
@click.argument("query", nargs=-1)
@click.option(
    "--limit",
    "-n",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Files to return.",
)
@click.option("--category", "-c", multiple=True, help="Only this category (repeatable, or a,b).")
@click.option("--path", "path_glob", help="Only paths matching this glob, e.g. 'knowledge/*'.")
@click.option("--since", help="Only files dated on or after (YYYY-MM-DD or 7d, 2w, 3m, 1y).")
@click.option("--until", help="Only files dated on or before.")
@click.option("--include-archive", is_flag=True, help="Search archive/ too (down-ranked).")
@click.option("--now", type=DATE,
              help="The day 'yesterday', 'last week', 'in March' are read against (default today).")
@click.option("--namespace", "namespace", type=NAMESPACE,
              help="As this agent's namespace sees it (default: $MEMREPO_NAMESPACE).")
@click.option("--all-namespaces", is_flag=True,
              help="Every namespace's transcripts and journal lines (as without one).")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of results.")
@click.option("--explain", is_flag=True, help="Show every score component.")
@click.option("--batch", is_flag=True, help='JSONL {"id","query","k"} on stdin, JSONL out.')
@click.option("--links", "with_links", is_flag=True,
              help="Also list the files each result links to ([[wikilinks]], markdown links).")
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    limit: int,
    category: tuple[str, ...],
    path_glob: str | None,
    since: str | None,
    until: str | None,
    include_archive: bool,
    now: dt.date | None,
    namespace: str | None,
    all_namespaces: bool,
    as_json: bool,
    explain: bool,
    batch: bool,
    with_links: bool,
) -> None:
    """Search the memory repo: BM25 (and vectors when configured), ranked per file."""
    repo = discover((ctx.obj or {}).get("repo"), op="search")
    cfg = repo.config["search"]
    view = sparse_view(repo.root)
    if view is not None:  # its cone may have changed since the last commit's index update
        from memrepo.index.indexer import follow_checkout

        follow_checkout(repo.root)
    try:
        cats = category_names(category) or None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--category") from None
    filters = Filters(
        cats, path_glob, _date(since, "--since"), _date(until, "--until"), include_archive, now
    )
    if namespace is not None or all_namespaces:  # else $MEMREPO_NAMESPACE's
        filters.namespace = None if all_namespaces else namespace

    def failed(why: str) -> None:
        click.echo(f"memory: search {why}; scanning files", err=True)

    # --batch answers many queries: loading a heavy model here is amortised; one query asks
    # the resident process (memory serve) or goes without vectors
    with Search(repo.root, settings_from_config(cfg), cfg["embedder"], failed,
                local_model=batch) as engine:
        if engine.why:
            how = "ripgrep" if engine.mode == "ripgrep" else "a pure-Python scan"
            click.echo(f"memory: search index unavailable ({engine.why}); using {how}", err=True)
        for note in engine.notes:
            click.echo(f"memory: {note}", err=True)
        if view is not None:
            click.echo(f"memory: {view.note}", err=True)
        if batch:
            for line in sys.stdin:
                if line.strip():
                    answer = _answer(engine, line, limit, filters, explain)
                    click.echo(json.dumps(answer, ensure_ascii=False))
            return
        hits = engine.search(" ".join(query), limit, filters)
    linked = None
    if with_links and hits:
        from memrepo.index.links import linked as linked_from

        linked = linked_from(repo.root, list(dict.fromkeys(h.path for h in hits)))
    if as_json:
        out = [h.as_json(explain) for h in hits]
        if linked is not None:
            for row, h in zip(out, hits, strict=True):
                row["links"] = linked.get(h.path, [])
        click.echo(json.dumps(out, indent=1, ensure_ascii=False))
    else:
        _print_text(hits, explain, linked)
    if hits and cfg.get("record_hits", True):
        record_hits(repo.root, [(h.path, h.start_line) for h in hits])


def _answer(
    engine: Search, line: str, limit: int, filters: Filters, explain: bool
) -> dict[str, Any]:
    """One batch line's answer: ``{"id", "results"}`` or ``{"id", "error"}``."""
    req = _batch_request(line, limit)
    if "error" in req:
        return req
    try:
        hits = engine.search(req["query"], req["k"], filters)
    except QUERY_ERRORS as exc:
        return {"id": req["id"], "error": f"search failed: {exc}"}
    return {"id": req["id"], "results": [h.as_json(explain) for h in hits]}


def _batch_request(line: str, limit: int) -> dict[str, Any]:
    """``{"id", "query", "k"}`` checked, or ``{"id", "error"}`` (the id kept whenever the
    line parsed): one bad line answers with an error and the batch goes on."""
    try:
        req = json.loads(line)
    except (ValueError, RecursionError):
        return {"id": None, "error": "not JSON"}
    if not isinstance(req, dict):
        return {"id": None, "error": "not a JSON query object"}
    qid = req.get("id")
    text = req.get("query", "")
    if not isinstance(text, str):
        return {"id": qid, "error": f"query must be a string, got {json.dumps(text)[:80]}"}
    k = req.get("k")
    if k is None:
        k = limit
    elif isinstance(k, float) and k.is_integer():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        return {"id": qid, "error": f"k must be a positive integer, got {json.dumps(k)[:80]}"}
    return {"id": qid, "query": text, "k": k}
