"""Check topic files against the topic schema (seed 000 §2.2, memrepo.topics).

A topic's regexes run on every message the agent sees and its subscriptions are injected
into prompts, so a broken or dangerous topic must not land: the schema lives in
memrepo.topics (shared with the watchers); this check maps each problem to its line.
"""

from __future__ import annotations

from collections.abc import Sequence

from .check_frontmatter import check_type, line_of, require_fields, require_frontmatter
from .engine import Context, run_main

CHECK_ID = "check-topics"


def check_file(path: str, ctx: Context) -> None:
    from memrepo import topics  # imports `regex`, slow to load: only when a topic is staged

    doc = ctx.document(path, CHECK_ID)
    text = ctx.text(path, CHECK_ID)
    if doc is None or text is None or not require_frontmatter(ctx, doc, CHECK_ID):
        return
    meta = dict(doc.meta)
    check_type(ctx, path, text, meta, CHECK_ID)
    if require_fields(ctx, path, text, meta, "topic", CHECK_ID):
        meta["triggers"] = []  # said once above; check the rest of the topic as manual-only
    for problem in topics.topic_problems(meta, ctx.root):
        ctx.report.error(path, line_of(text, problem.key), problem.message, CHECK_ID)


def check(paths: Sequence[str], ctx: Context) -> None:
    """Check every topic file among ``paths``."""
    for path in paths:
        if path.startswith("topics/") and path.endswith(".md"):
            check_file(path, ctx)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Check topic files (topics/*.md).")


if __name__ == "__main__":
    raise SystemExit(main())
