"""A memory repo holds regular files only: no symlinks, no submodules.

git stores a symlink as its target's path and a submodule as a commit id, so neither is
"content" the validators can read: a ``.md`` symlink to ``/etc/passwd`` or a symlinked
``knowledge/etc -> /etc`` passes every other check, and then the indexer, ``memory_read``
or a prompt compiler on another machine follows it (a dangling one breaks them instead).
Every staged entry whose new mode is not a regular file's (100644 or 100755) is refused,
naming the path, whatever its folder: attachments/ are LFS pointers, regular files too.
Deleting such an entry is allowed (that is the fix).

The modes come from ``git diff --cached --raw`` (the direct hook and memrepo's own
commits), from the pushed trees (pre-receive, ``memory verify``), or, for a call with
file names (the pre-commit framework), from the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from .engine import Context, run_main
from .modes import DELETED, GITLINK, REGULAR, SYMLINK

CHECK_ID = "check-filetypes"


def problem(mode: str) -> str | None:
    """Why an entry of ``mode`` may not be committed, or None for a regular file."""
    if mode in REGULAR or mode == DELETED:
        return None
    if mode == SYMLINK:
        return ("is a symlink; a memory repo holds regular files only (git stores the "
                "link, and readers on other machines would follow it): commit a copy of "
                "the file instead")
    if mode == GITLINK:
        return "is a submodule (gitlink); a memory repo holds regular files only"
    return f"has git mode {mode}, not a regular file's; a memory repo holds regular files only"


def report(modes: dict[str, str], ctx: Context) -> None:
    """An error for each path whose mode is not a regular file's."""
    for path, mode in modes.items():
        why = problem(mode)
        if why:
            ctx.report.error(path, None, why, CHECK_ID)


def check(paths: Sequence[str], ctx: Context) -> None:
    """Refuse staged symlinks, submodules and anything else that is not a regular file."""
    report(ctx.staged_modes(paths), ctx)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Refuse symlinks and submodules.")


if __name__ == "__main__":
    raise SystemExit(main())
