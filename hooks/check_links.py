"""Warn about links that break: a link to a missing file, and a rename that strands links.

Links between memory files (``[[name]]``, ``[text](path.md)``: memrepo.index.links) are how
a recalled file brings its neighbours; a broken one fails silently. So the commit that
writes one, or that renames or deletes a file others link to, is told where (file:line).
A warning, not an error: a link may point at a page still to be written. A link to
``archive/x.md`` is not broken when ``memory prune`` compressed it to ``archive/x.md.gz``
(the index resolves it there: :mod:`memrepo.index.links`), so neither the link nor the
prune commit is warned about.

Cost grows with the commit: one ``git ls-files`` for the markdown targets of the staged
files, and the index (memory.db, at HEAD) for wikilink names and for the backlinks of what
the commit moves; without an index those two parts are skipped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memrepo import git
from memrepo.errors import GitError
from memrepo.index import links as L
from memrepo.index.paths import db_path, is_indexed
from memrepo.layout import TRANSCRIPT_ROOT

from .engine import Context, run_main

if TYPE_CHECKING:
    from memrepo.index.db import Connection

CHECK_ID = "check-links"


def check(paths: Sequence[str], ctx: Context) -> None:
    found: list[L.Link] = []
    for path in paths:
        if not is_indexed(path) or path.startswith(TRANSCRIPT_ROOT):
            continue
        text = ctx.text(path, CHECK_ID)
        if text and "[" in text:
            found += L.extract(path, text)
    moved = [] if _is_bare(ctx) else [
        (st, path, new) for prefix in ("knowledge/", "topics/")
        for st, path, new in ctx.staged_status(prefix) if st.startswith(("D", "R"))]
    if not found and not moved:
        return
    staged = set(paths)
    wanted = {k.target for k in found if k.kind == "md"} - staged
    packed = {c for t in wanted if (c := L.compressed_form(t))}  # archive/x.md.gz
    present = staged | _tracked(ctx, wanted | packed)
    con = _index(ctx, db_path)
    try:
        for k in found:
            if k.kind == "md" and k.target not in present and (
                    L.compressed_form(k.target) not in present):
                ctx.report.warning(k.src, k.line, f"link to {k.target}: no such file", CHECK_ID)
            elif k.kind == "wiki" and con is not None and not _wiki_ok(con, k, staged):
                ctx.report.warning(k.src, k.line, f"[[{k.target}]]: no memory file of that name",
                                   CHECK_ID)
        if con is not None:
            gone = {old for _st, old, _new in moved}  # a source this commit moved away
            for st, old, new in moved:
                what = f"renamed to {new}" if st.startswith("R") and new else "deleted"
                for k in L.incoming(con, old):
                    if k.src not in staged and k.src not in gone:
                        ctx.report.warning(k.src, k.line, f"links to {old}, which this commit "
                                           f"{what}: update the link", CHECK_ID)
    finally:
        if con is not None:
            con.close()


def _is_bare(ctx: Context) -> bool:
    return not (ctx.root / ".git").exists() and (ctx.root / "HEAD").is_file()


def _tracked(ctx: Context, targets: set[str]) -> set[str]:
    """Which of ``targets`` git's index holds (one ls-files for all of them)."""
    if not targets or _is_bare(ctx):
        return set(targets)  # nothing to ask, or no index to ask: no warning
    try:
        out = git.git(["ls-files", "-z", "--", *sorted(targets)], ctx.root)
    except (GitError, OSError):
        return set(targets)
    return {p for p in out.split("\0") if p}


def _index(ctx: Context, db_path) -> Connection | None:
    """memory.db, read-only, opened as the index opens it (only a commit with links pays)."""
    path = db_path(ctx.root)
    if not path.is_file():
        return None
    from memrepo.index import db, schema

    with contextlib.suppress(db.Error):
        con = db.connect(path, readonly=True)
        if schema.get_meta(con).get("schema_version") == str(schema.SCHEMA_VERSION):
            return con  # an older index has no links (the next `memory index` rebuilds it)
        con.close()
    return None


def _wiki_ok(con: Connection, link, staged: set[str]) -> bool:
    from memrepo.index import db

    if any(L.is_memory_name(p) and (L.stem(p) == link.key
                                    or L.name_key(L.bare(p)).endswith("/" + link.key))
           for p in staged):  # written in this very commit
        return True
    try:
        return L.resolve(con, link) is not None
    except db.Error:
        return True


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Warn about links that break.")


if __name__ == "__main__":
    raise SystemExit(main())
