"""git's entry modes, read from ``--raw`` diffs or the work tree: what a memory repo may
hold is a regular file (``check_filetypes`` refuses the rest). Imports nothing of
memrepo.hooks, so the engine and the checks can both use it."""

from __future__ import annotations

import stat

#: git's modes for what it stores: a regular file (executable or not) is all we accept.
REGULAR = ("100644", "100755")
SYMLINK = "120000"
GITLINK = "160000"
DELETED = "000000"

RawRow = tuple[str, str, "str | None", str, str]


def parse_raw(out: str) -> list[RawRow]:
    """``--raw -z`` records of ``git diff``/``diff-tree`` as (status letter, path, new path
    for R/C, new sha, new mode)."""
    fields = out.split("\0")
    rows: list[RawRow] = []
    i = 0
    while i < len(fields) - 1:
        meta = fields[i].split()  # ":100644 120000 <old> <new> T"
        if len(meta) < 5:
            break
        status, mode, sha = meta[-1][:1], meta[1], meta[3]
        if status in ("R", "C"):
            rows.append((status, fields[i + 1], fields[i + 2], sha, mode))
            i += 3
        else:
            rows.append((status, fields[i + 1], None, sha, mode))
            i += 2
    return rows


def worktree_mode(full_mode: int) -> str:
    """git's mode string for an ``lstat`` result."""
    if stat.S_ISLNK(full_mode):
        return SYMLINK
    if stat.S_ISDIR(full_mode):
        return GITLINK  # a directory named as a file is a nested repository
    if stat.S_ISREG(full_mode):
        return "100755" if full_mode & 0o111 else "100644"
    return "0" + oct(stat.S_IFMT(full_mode))[2:]
