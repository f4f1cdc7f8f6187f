"""All seven validators in one process: what the memory repo's own pre-commit hook runs.

Starting a Python per check costs more than the checks; here one Context is shared, so
each staged file is read, decoded and parsed at most once, a broken file is reported once,
and git is asked only what the transcripts check needs (a fixed number of calls).

Two ways in:
- ``memory hook pre-commit FILES…`` (through the pre-commit framework, which passes the
  staged file names and stashes unstaged changes so the work tree shows what is staged);
- ``memory hook pre-commit --index`` (the direct git hook): the staged names come from
  ``git diff --cached`` and their content from the index in one ``git cat-file --batch``,
  so nothing is stashed and no command looks at the rest of the work tree.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from memrepo import git
from memrepo.config import CONFIG_FILE

from . import (
    check_frontmatter,
    check_journal,
    check_memory_cap,
    check_secrets,
    check_size,
    check_topics,
    check_transcripts,
)
from ._common import BlobContext, CheckFn, run_checks, run_main

#: In report order: a file's structure first, then its content, then its bytes.
CHECKS: tuple[tuple[str, CheckFn], ...] = tuple(
    (module.CHECK_ID, module.check)
    for module in (
        check_frontmatter,
        check_transcripts,
        check_memory_cap,
        check_topics,
        check_journal,
        check_secrets,
        check_size,
    )
)


def staged_context(root: Path) -> tuple[list[str], BlobContext]:
    """The staged paths and a Context serving their staged content (and the staged config).

    One ``git diff --cached`` for everything (each reads the whole index: 25 ms at 100K
    files); the transcripts check takes its deletions and renames from the same rows.
    """
    rows = git.staged_status(root)
    if not rows and git.head(root) is None:  # the first commit: everything staged is new
        out = git.git(["diff", "--cached", "--name-only", "-z", "--no-ext-diff"], root)
        rows = [("A", p, None) for p in out.split("\0") if p]
    paths = [new or path for status, path, new in rows if status != "D"]
    blobs = git.read_blobs(root, [f":{p}" for p in [*paths, CONFIG_FILE]])
    staged = {p: blobs[f":{p}"] for p in paths}
    ctx = BlobContext(root, staged, blobs[f":{CONFIG_FILE}"])
    ctx.staged_rows = rows
    return paths, ctx


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--index"]:
        paths, ctx = staged_context(Path.cwd())
        return run_checks(CHECKS, paths, ctx)
    return run_main(args, CHECKS, "Run every memrepo validator over the staged files.")


if __name__ == "__main__":
    raise SystemExit(main())
