"""``memory remember``, ``memory reinforce``, ``memory demote``: discrete memories and signals.

``remember`` appends a dated bullet to today's journal. ``reinforce`` (+3) and ``demote``
(-1) append an event to ``raw/signals/YYYY-MM.jsonl`` and fold it into the index at once,
so the next search ranks with it (seed 001).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import click

from memrepo.errors import MemrepoError
from memrepo.repo import discover


@click.command("remember")
@click.argument("text", nargs=-1, required=True)
@click.option("--tags", default="", help="Comma-separated tags, e.g. payments,hmac.")
@click.pass_context
def remember(ctx: click.Context, text: tuple[str, ...], tags: str) -> None:
    """Append TEXT as a dated bullet to today's journal (created if missing)."""
    from memrepo import documents
    from memrepo.atomic import atomic_write

    repo = discover((ctx.obj or {}).get("repo"))
    said = " ".join(" ".join(text).split())
    if not said:
        raise MemrepoError("nothing to remember: TEXT is empty")
    tag_list = [t.strip().lstrip("#") for t in tags.split(",") if t.strip().lstrip("#")]
    now = dt.datetime.now().astimezone()
    rel = f"knowledge/journal/{now:%Y-%m-%d}.md"
    path = repo.path(rel)
    if path.exists():
        doc = documents.read_document(path, rel)
        # a journal written by hand without frontmatter still gets what the validator needs
        meta = {"type": "journal", "date": now.date(), **doc.meta}
        body = doc.body
    else:
        meta, body = {"type": "journal", "date": now.date()}, f"\n## {now:%Y-%m-%d}\n"
    if tag_list:
        old = meta.get("tags") or []
        old = old if isinstance(old, list) else [str(old)]
        meta["tags"] = [*old, *(t for t in tag_list if t not in old)]
    suffix = ("  " + " ".join(f"#{t}" for t in tag_list)) if tag_list else ""
    bullet = f"- {now:%H:%M} {said}{suffix}"
    body = body.rstrip("\n") + "\n" + bullet + "\n"
    if not body.startswith("\n"):
        body = "\n" + body
    content = documents.render_document(meta, body)
    atomic_write(path, content)
    line = content.rstrip("\n").count("\n") + 1
    click.echo(f"{rel}:{line}")
    # the index follows commits: say so, or a search right after finds nothing
    click.echo("memory: not committed yet; search finds it after `memory commit`", err=True)


def _repo_relative(root: Path, target: Path) -> str | None:
    """``target`` (absolute) as a normalised repo path, or None when it is outside."""
    norm = Path(os.path.normpath(target))
    for base in (root, root.resolve()):
        try:
            return norm.relative_to(base).as_posix()
        except ValueError:
            pass
    with contextlib.suppress(OSError, ValueError):
        return norm.resolve().relative_to(root.resolve()).as_posix()
    return None


def _resolve_path(root: Path, given: str, indexed: Callable[[str], bool]) -> str:
    """A REF's path as a repo path: relative to the current directory first (a shell's
    tab completion), else to the repo root (what search prints)."""
    if Path(given).is_absolute():
        rel = _repo_relative(root, Path(given))
        if rel is None:
            raise MemrepoError(f"{given} is outside the memory repo {root}")
        return rel
    from_cwd = _repo_relative(root, Path.cwd() / given)
    from_root = _repo_relative(root, root / given)
    for rel in (from_cwd, from_root):
        if rel is not None and rel != "." and ((root / rel).is_file() or indexed(rel)):
            return rel
    if from_root is None or from_root == ".":
        raise MemrepoError(f"{given} is outside the memory repo {root}")
    return from_root


def _line_count(root: Path, rel: str, con: sqlite3.Connection | None) -> int | None:
    """Lines of the working-tree file (what the user sees), else of the indexed one."""
    with contextlib.suppress(OSError), open(root / rel, "rb") as fh:
        return max(1, sum(1 for _ in fh))
    if con is not None:
        row = con.execute("SELECT lines FROM documents WHERE path = ?", (rel,)).fetchone()
        if row is not None:
            return int(row[0])
    return None


def _chunk_lines(root: Path, rel: str, con: sqlite3.Connection | None) -> list[int]:
    """Start line of each chunk (``#N`` anchors): the index's, else the file's own chunking."""
    if con is not None:
        rows = con.execute(
            "SELECT c.start_line FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.path = ? ORDER BY c.ord",
            (rel,),
        ).fetchall()
        if rows:
            return [r[0] for r in rows]
    try:
        data = (root / rel).read_bytes()
    except OSError:
        return []
    from memrepo.index.indexer import parse

    return [c.start_line for c in parse(rel, data).chunks]


def _open_index(root: Path) -> sqlite3.Connection | None:
    from memrepo.index.paths import db_path

    if not db_path(root).exists():
        return None
    from memrepo.index.db import connect

    try:
        con = connect(db_path(root))
        con.execute("SELECT 1 FROM documents LIMIT 1")
    except sqlite3.DatabaseError:
        return None
    return con


def _signal(ctx: click.Context, ref: str, event: str) -> None:
    """Validate REF fully, then log the event: a bad REF writes nothing (the JSONL is
    append-only, a wrong event stays forever)."""
    from memrepo.index import signals
    from memrepo.index.paths import is_indexed

    repo = discover((ctx.obj or {}).get("repo"))
    try:
        r = signals.parse_ref(ref)
    except signals.BadRef as exc:
        raise MemrepoError(str(exc)) from None
    con = _open_index(repo.root)
    try:

        def in_index(rel: str) -> bool:
            if con is None:
                return False
            q = "SELECT 1 FROM documents WHERE path = ?"
            return con.execute(q, (rel,)).fetchone() is not None

        r.path = _resolve_path(repo.root, r.path, in_index)
        if not is_indexed(r.path):
            raise MemrepoError(
                f"{r.path}: not a file search indexes (Markdown outside scratch/, "
                "attachments/ and hidden folders)"
            )
        if not (repo.path(r.path).is_file() or in_index(r.path)):
            raise MemrepoError(f"{r.path}: no such file in the memory repo")
        if r.ord is not None:
            starts = _chunk_lines(repo.root, r.path, con)
            if r.ord >= len(starts):
                raise MemrepoError(
                    f"{r.path} has {len(starts)} chunk(s) (#0 to #{len(starts) - 1}), "
                    f"no #{r.ord}"
                    if starts
                    else f"{r.path} has no chunks, so no #{r.ord}"
                )
            r.line = starts[r.ord]
        elif r.line is not None:
            count = _line_count(repo.root, r.path, con)
            if r.line < 1:
                raise MemrepoError(f"{ref}: lines are numbered from 1")
            if count is not None and r.line > count:
                raise MemrepoError(f"{r.path} has {count} line(s), no line {r.line}")
        ev: dict[str, object] = {"event": event, "path": r.path}
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
