"""A REF as ``memory reinforce`` / ``demote`` take it, checked against the repo and the
index, and the signal recorded for it.

A REF is ``PATH``, ``PATH:LINE``, ``PATH:A-B`` as search prints it, or ``PATH#CHUNK``
(parsed by :func:`memrepo.index.signals.parse_ref`). It is checked fully before anything
is written: ``raw/signals/`` is append-only, so an event logged for a place that does not
exist would stay forever.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memrepo import compression, worktree
from memrepo.config import load_config
from memrepo.errors import ConfigError, FormatError, MemrepoError
from memrepo.index import anchors, gitsource, signals
from memrepo.index.db import Connection, DatabaseError, connect, write
from memrepo.index.indexer import short_write
from memrepo.index.lock import Busy, IndexLock
from memrepo.index.paths import db_path, is_indexed, state_dir
from memrepo.index.writer import parse

#: how long a reinforce waits for another indexer before leaving the fold to its next pass
FOLD_WAIT_S = 1.0


@dataclass
class Recorded:
    """What :func:`record` logged: the resolved REF, the signal file, the new score."""

    ref: signals.Ref
    logged: Path
    #: the (path, line)'s score in the index now; None without a usable index
    score: float | None


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


def _line_count(root: Path, rel: str, con: Connection | None) -> int | None:
    """Lines of the working-tree file (what the user sees; a compressed archive's text),
    else of the indexed one."""
    with contextlib.suppress(OSError, FormatError):  # never through a link, nor a FIFO
        text = worktree.read_plain(root, rel)
        return max(1, text.count(b"\n") + (0 if text.endswith(b"\n") else 1))
    if con is not None:
        row = con.execute("SELECT lines FROM documents WHERE path = ?", (rel,)).fetchone()
        if row is not None:
            return int(row[0])
    return None


def _chunk_lines(root: Path, rel: str, con: Connection | None) -> list[int]:
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
        data = worktree.read_file(root, rel)
    except OSError:
        return []
    gz = compression.is_gzip_name(rel)
    limit = compression.limit_for(root) if gz else compression.DEFAULT_LIMIT
    return [c.start_line for c in parse(rel, data, limit).chunks]


def _open_index(root: Path) -> Connection | None:
    """The index, or None when there is none or it cannot be read (REFs then check the
    working tree only)."""
    if not db_path(root).exists():
        return None
    try:
        con = connect(db_path(root), readonly=True)  # writes go through _fold, under the lock
        con.execute("SELECT 1 FROM documents LIMIT 1")
    except DatabaseError:
        return None
    return con


def _resolve(root: Path, ref: str, con: Connection | None) -> signals.Ref:
    """``ref`` parsed and checked: a file search indexes, a chunk or line inside it."""
    try:
        r = signals.parse_ref(ref)
    except signals.BadRef as exc:
        raise MemrepoError(str(exc)) from None

    def in_index(rel: str) -> bool:
        if con is None:
            return False
        q = "SELECT 1 FROM documents WHERE path = ?"
        return con.execute(q, (rel,)).fetchone() is not None

    r.path = _resolve_path(root, r.path, in_index)
    if not is_indexed(r.path):
        raise MemrepoError(
            f"{r.path}: not a file search indexes (Markdown outside scratch/, "
            "attachments/ and hidden folders)"
        )
    if not ((root / r.path).is_file() or in_index(r.path)):
        raise MemrepoError(f"{r.path}: no such file in the memory repo")
    if r.ord is not None:
        starts = _chunk_lines(root, r.path, con)
        if r.ord >= len(starts):
            raise MemrepoError(
                f"{r.path} has {len(starts)} chunk(s) (#0 to #{len(starts) - 1}), "
                f"no #{r.ord}"
                if starts
                else f"{r.path} has no chunks, so no #{r.ord}"
            )
        r.line = starts[r.ord]
    elif r.line is not None:
        count = _line_count(root, r.path, con)
        if r.line < 1:
            raise MemrepoError(f"{ref}: lines are numbered from 1")
        if count is not None and r.line > count:
            raise MemrepoError(f"{r.path} has {count} line(s), no line {r.line}")
    return r


def resolve_file(root: Path, given: str) -> str:
    """A FILE argument (from the cwd or the repo root) as the repo path search indexes;
    a MemrepoError names what is wrong with it."""
    con = _open_index(root)
    try:
        r = _resolve(root, given, con)
    finally:
        if con is not None:
            con.close()
    return r.path


def _weights(root: Path) -> tuple[float, float]:
    """(reinforce, demote) weights of the repo's config (the defaults when it is broken:
    the event is already written, and the score shown is only a report)."""
    try:
        cfg = load_config(root)["search"]
    except (ConfigError, OSError):
        return signals.WEIGHTS["reinforce"], -signals.WEIGHTS["demote"]
    return float(cfg["reinforce_weight"]), float(cfg["demote_weight"])


def record(root: Path, ref: str, event: str) -> Recorded:
    """Check ``ref``, append the ``event`` (reinforce, demote) for it to raw/signals/, and
    fold it into the index at once, so the next search ranks with it."""
    con = _open_index(root)
    try:
        r = _resolve(root, ref, con)
    finally:
        if con is not None:
            con.close()
    ev: dict[str, object] = {"event": event, "path": r.path}
    if r.line:
        ev["line"] = r.line
        text = anchors.line_text(root, r.path, r.line)
        if text:  # the anchor: the signal follows this entry through edits and git mv
            ev["text"] = text
    where = signals.append(root, [ev])
    return Recorded(r, where, _fold(root, ev))


def _fold(root: Path, ev: dict[str, object]) -> float | None:
    """Fold the logged ``ev`` into the index under the index lock (a write outside it can
    land in a memory.db a rebuild has swapped out: :func:`~memrepo.index.indexer.
    short_write`); its place's score then. An indexer holding the lock past
    :data:`FOLD_WAIT_S` (a rebuild) gets a pending mark instead: its next pass re-folds
    the log, which holds ``ev``. None: no index, or the score is not known yet."""
    if not db_path(root).exists():
        return None
    try:
        gd = gitsource.locate(root)[0]
        with short_write(root, gd, wait=FOLD_WAIT_S) as con:
            if con is None:
                return None
            with write(con):
                signals.apply(con, [ev])
            row = con.execute(
                "SELECT reinforces, demotes FROM signals WHERE path = ? AND line = ?",
                (ev["path"], ev.get("line") or 0),
            ).fetchone()
    except Busy:
        IndexLock(state_dir(gd)).mark_pending()
        return None
    except (DatabaseError, MemrepoError):
        return None
    return signals.weighted(*row, *_weights(root)) if row else None
