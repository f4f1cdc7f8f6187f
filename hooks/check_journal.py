"""Check journal names and dates: ``knowledge/journal/YYYY-MM-DD.md`` with a matching ``date``.

The context compiler loads "today and yesterday" by file name and archiving goes by age,
so a journal's name must be a real date and agree with its frontmatter.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Sequence

from memrepo import compression, documents, layout

from .check_frontmatter import date_value, line_of, require_fields, require_frontmatter
from .engine import Context, run_main

CHECK_ID = "check-journal"
JOURNAL_DIRS = ("knowledge/journal/", "archive/journal/", "archive/knowledge/journal/")


def journal_day(path: str) -> dt.date | None:
    """The date a journal path names, or None when it is not ``journal/YYYY-MM-DD.md``."""
    m = layout.JOURNAL_PATH.match(compression.plain_name(path))  # archive/…/DAY.md.gz too
    if m is None:
        return None
    try:
        return dt.date.fromisoformat(m["date"])
    except ValueError:
        return None


def check_file(path: str, ctx: Context) -> None:
    day = journal_day(path)
    if day is None:
        ctx.report.error(
            path,
            None,
            "journal files must be named YYYY-MM-DD.md after a real date, directly in journal/",
            CHECK_ID,
        )
        return
    why = documents.date_range_problem(day)
    if why:  # 0001-01-01.md: a real date, but one no memory has
        ctx.report.error(path, None, f"journal file name: {why}", CHECK_ID)
        return
    doc = ctx.document(path, CHECK_ID)
    text = ctx.text(path, CHECK_ID)
    if doc is None or text is None or not require_frontmatter(ctx, doc, CHECK_ID):
        return
    if require_fields(ctx, path, text, doc.meta, "journal", CHECK_ID):
        return
    value = date_value(ctx, path, text, doc.meta, "date", CHECK_ID)
    if value is not None and value != day:
        ctx.report.error(
            path,
            line_of(text, "date"),
            f"date {value.isoformat()} does not match the file name ({day.isoformat()})",
            CHECK_ID,
        )


def check(paths: Sequence[str], ctx: Context) -> None:
    """Check every file under a journal directory (hidden files such as .gitkeep aside)."""
    for path in paths:
        if path.startswith(JOURNAL_DIRS) and not posixpath.basename(path).startswith("."):
            check_file(path, ctx)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Check journal file names and dates.")


if __name__ == "__main__":
    raise SystemExit(main())
