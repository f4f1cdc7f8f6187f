"""git's entry modes (from ``--raw`` diffs: :func:`memrepo.git.parse_raw`) or the work
tree's: what a memory repo may hold is a regular file (``check_filetypes`` refuses the
rest). Imports nothing of memrepo.hooks, so the engine and the checks can both use it."""

from __future__ import annotations

import stat

#: git's modes for what it stores: a regular file (executable or not) is all we accept.
REGULAR = ("100644", "100755")
SYMLINK = "120000"
GITLINK = "160000"
DELETED = "000000"

def worktree_mode(full_mode: int) -> str:
    """git's mode string for an ``lstat`` result."""
    if stat.S_ISLNK(full_mode):
        return SYMLINK
    if stat.S_ISDIR(full_mode):
        return GITLINK  # a directory named as a file is a nested repository
    if stat.S_ISREG(full_mode):
        return "100755" if full_mode & 0o111 else "100644"
    return "0" + oct(stat.S_IFMT(full_mode))[2:]
