"""All the validators in one process: what the memory repo's own pre-commit hook runs.

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
from memrepo.layout import CONFIG_FILE

from . import (
    check_encoded,
    check_filetypes,
    check_frontmatter,
    check_journal,
    check_links,
    check_memory_cap,
    check_names,
    check_private,
    check_secrets,
    check_size,
    check_topics,
    check_transcripts,
)
from .engine import BlobContext, CheckFn, run_checks, run_main

#: In report order: what kind of entry, a file's structure, its content, then its bytes.
CHECKS: tuple[tuple[str, CheckFn], ...] = tuple(
    (module.CHECK_ID, module.check)
    for module in (
        check_filetypes,
        check_frontmatter,
        check_transcripts,
        check_memory_cap,
        check_topics,
        check_journal,
        check_secrets,
        check_encoded,
        check_names,
        check_private,
        check_size,
        check_links,
    )
)


def staged_context(
    root: Path, raw: list[git.StagedRow] | None = None
) -> tuple[list[str], BlobContext]:
    """The staged paths and a Context serving their staged content (and the staged config).

    One ``git diff --cached`` for everything (each command that reads the index costs as
    much as the repo is big; bench/perf/bench_commit.py): it names the staged blobs, which are
    then read by sha, and the transcripts check takes its deletions and renames from it.
    """
    entry_modes = None
    if raw is None:
        entries = git.staged_entries(root)  # symlinks and submodules: refused by mode
        raw = [(st, path, new, sha) for st, path, new, sha, _mode in entries]
        entry_modes = {new or path: mode for st, path, new, _sha, mode in entries if st != "D"}
    shas = {new or path: sha for status, path, new, sha in raw if status != "D"}
    config_rev = shas.get(CONFIG_FILE) or (
        f"HEAD:{CONFIG_FILE}" if git.head(root) is not None else f":{CONFIG_FILE}"
    )
    blobs = git.read_blobs(root, [*shas.values(), config_rev])
    staged = {p: blobs[sha] for p, sha in shas.items()}
    ctx = BlobContext(root, staged, blobs[config_rev], entry_modes)
    ctx.staged_rows = [(status, path, new) for status, path, new, _sha in raw]
    return list(shas), ctx


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--index"]:
        paths, ctx = staged_context(Path.cwd())
        return run_checks(CHECKS, paths, ctx)
    return run_main(args, CHECKS, "Run every memrepo validator over the staged files.")


if __name__ == "__main__":
    raise SystemExit(main())
