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

Compressed files: ``memory prune`` keeps old archives as ``archive/**.md.gz`` (gzip of
UTF-8 markdown, ``lifecycle.retention``). Every check reads such a file inflated (the
Context does it, capped at ``validation.max_file_kb``), so here the only questions are
whether it may be compressed at all and whether it can be read: gzip anywhere else
(outside attachments/, where binaries belong), or gzip that is corrupt, truncated, a
bomb or not UTF-8 inside, is refused naming the file. The server (pre-receive, ``memory
verify``) refuses only what it cannot read, since it cannot scan that for secrets.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo import compression

from .engine import INFLATE_EXEMPT, Context, run_main
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


def check_compressed(paths: Sequence[str], ctx: Context, *, unreadable_only: bool = False
                     ) -> None:
    """Refuse gzip files outside ``archive/**.md.gz`` and any that cannot be inflated to
    UTF-8 text (``unreadable_only``: the latter alone, the server's rule). Costs a look
    at each path's first bytes, which the other checks read anyway."""
    for path in paths:
        if path.startswith(INFLATE_EXEMPT):
            continue
        ctx.sniff(path, CHECK_ID)  # a gzip file is read (inflated) and noted here
        if path not in ctx.compressed:
            continue  # not gzip (or deleted)
        why = ctx.compressed[path]
        if why is not None:
            ctx.report.error(path, None, f"{why}; its text cannot be read or checked "
                             "(scanned for secrets), so it may not be committed", CHECK_ID)
            continue
        if ctx.text(path, CHECK_ID) is None:
            continue  # not UTF-8 inside: reported once, naming the line
        if not unreadable_only and not compression.allowed(path):
            ctx.report.error(
                path, None,
                "gzip data outside archive/**.md.gz: only archived markdown may be stored "
                "compressed (memory prune does it, see lifecycle.retention); commit the "
                "plain text, or binaries under attachments/", CHECK_ID)


def check(paths: Sequence[str], ctx: Context) -> None:
    """Refuse staged symlinks, submodules and anything else that is not a regular file,
    and gzip that is not a readable ``archive/**.md.gz``."""
    report(ctx.staged_modes(paths), ctx)
    check_compressed(paths, ctx)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)],
                    "Refuse symlinks, submodules and gzip outside archive/**.md.gz.")


if __name__ == "__main__":
    raise SystemExit(main())
