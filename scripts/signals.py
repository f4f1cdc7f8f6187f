"""``memory remember``, ``memory reinforce``, ``memory demote``: discrete memories and signals.

``remember`` appends a dated bullet to today's journal. ``reinforce`` (+3) and ``demote``
(-1) append an event to ``raw/signals/YYYY-MM.jsonl`` and fold it into the index at once,
so the next search ranks with it (seed 001).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import click

from memrepo.errors import MemrepoError
from memrepo.repo import discover


@click.command("remember")
@click.argument("text")
@click.option("--tags", default="", help="Comma-separated tags, e.g. payments,hmac.")
@click.pass_context
def remember(ctx: click.Context, text: str, tags: str) -> None:
    """Append TEXT as a dated bullet to today's journal (created if missing)."""
    from memrepo import formats
    from memrepo.atomic import atomic_write

    repo = discover((ctx.obj or {}).get("repo"))
    text = " ".join(text.split())
    if not text:
        raise MemrepoError("nothing to remember: TEXT is empty")
    tag_list = [t.strip().lstrip("#") for t in tags.split(",") if t.strip().lstrip("#")]
    now = dt.datetime.now().astimezone()
    rel = f"knowledge/journal/{now:%Y-%m-%d}.md"
    path = repo.path(rel)
    if path.exists():
        doc = formats.read_document(path, rel)
        meta, body = doc.meta, doc.body
    else:
        meta, body = {"type": "journal", "date": now.date()}, f"\n## {now:%Y-%m-%d}\n"
    if tag_list:
        old = meta.get("tags") or []
        old = old if isinstance(old, list) else [str(old)]
        meta["tags"] = [*old, *(t for t in tag_list if t not in old)]
    suffix = ("  " + " ".join(f"#{t}" for t in tag_list)) if tag_list else ""
    bullet = f"- {now:%H:%M} {text}{suffix}"
    body = body.rstrip("\n") + "\n" + bullet + "\n"
    if not body.startswith("\n"):
        body = "\n" + body
    content = formats.render_document(meta, body)
    atomic_write(path, content)
    line = content.rstrip("\n").count("\n") + 1
    click.echo(f"{rel}:{line}")


def _signal(ctx: click.Context, ref: str, event: str) -> None:
    from memrepo.index import signals
    from memrepo.index.paths import db_path

    repo = discover((ctx.obj or {}).get("repo"))
    r = signals.parse_ref(ref)
    if Path(r.path).is_absolute():
        try:
            r.path = Path(r.path).resolve().relative_to(repo.root).as_posix()
        except ValueError:
            raise MemrepoError(f"{ref} is outside the memory repo {repo.root}") from None
    con = None
    if db_path(repo.root).exists():
        from memrepo.index.db import connect

        try:
            con = connect(db_path(repo.root))
        except sqlite3.DatabaseError:
            con = None
    try:
        known = repo.path(r.path).is_file()
        if con is not None:
            row = con.execute("SELECT id FROM documents WHERE path = ?", (r.path,)).fetchone()
            known = known or row is not None
            if r.ord is not None and row is not None:
                span = con.execute(
                    "SELECT start_line FROM chunks WHERE doc_id = ? AND ord = ?", (row[0], r.ord)
                ).fetchone()
                r.line = span[0] if span else None
        if not known:
            raise MemrepoError(f"{r.path}: no such file in the memory repo")
        ev = {"event": event, "path": r.path}
        if r.line:
            ev["line"] = r.line
        where = signals.append(repo.root, [ev])
        score = None
        if con is not None:
            try:
                con.execute("BEGIN IMMEDIATE")
                signals.apply(con, [ev])
                con.execute("COMMIT")
                row = con.execute(
                    "SELECT score FROM signals WHERE path = ? AND line = ?", (r.path, r.line or 0)
                ).fetchone()
                score = row[0] if row else None
            except sqlite3.DatabaseError:
                score = None
    finally:
        if con is not None:
            con.close()
    rel = where.relative_to(repo.root).as_posix()
    now = f" (score now {score:+g})" if score is not None else ""
    click.echo(f"{event}d {r}{now}; logged in {rel}")


@click.command("reinforce")
@click.argument("ref")
@click.pass_context
def reinforce(ctx: click.Context, ref: str) -> None:
    """REF was useful (+3): PATH, PATH:LINE, PATH:A-B as search prints it, or PATH#CHUNK."""
    _signal(ctx, ref, "reinforce")


@click.command("demote")
@click.argument("ref")
@click.pass_context
def demote(ctx: click.Context, ref: str) -> None:
    """REF is stale or wrong (-1): PATH, PATH:LINE, PATH:A-B, or PATH#CHUNK."""
    _signal(ctx, ref, "demote")
