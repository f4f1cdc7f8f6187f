"""Sparse checkouts: a sub-agent works on just the folders it needs (docs/sub-agents.md).

In a sparse checkout git keeps the files outside its patterns in history and in the
index but out of the work tree, so to memrepo they look missing. The danger is a writer
that "creates" one of them (a new journal over today's, a template over MEMORY.md): the
next commit would replace what it could not see. memrepo therefore works in a sparse
checkout under three rules:

- **Only git's cone mode** (folders, not gitignore patterns): a path is in or out by its
  folder alone, which memrepo decides here without running git (:class:`View`), and git
  itself refuses to stage a path outside the cone (``git add`` without ``--sparse``), so
  a file written over an invisible one can never be committed by mistake.
- **What memrepo writes is inside the cone.** A new file outside it (a session's
  transcript in a new day's folder) first has its folder added to the checkout
  (:func:`before_write`, from :func:`memrepo.worktree.check_write`), so everything beside
  it is visible too; a path git tracks but keeps out is never written (refused, naming
  the folder to add).
- **An allow-list of operations** (:data:`OPS`): capture, commit, search, index,
  remember, reinforce, sync and verify work on what is checked out; whatever rewrites the
  whole memory (condense, prune, extract, reconstruct, update, flush, doctor --fix, init)
  stays refused by :func:`memrepo.repo.require_full_checkout`. An operation may name the
  folders it reads and writes (``remember``: the journals); they are checked out first, so
  it reads the file it is about to rewrite.

This module stays light (the standard library and :mod:`memrepo.git`): the post-commit
indexer asks :func:`view` on every commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memrepo.errors import MemrepoError
from memrepo.git import git, git_file_dir, retry_locked
from memrepo.layout import DB_NAME, JOURNAL_DIR, SIGNALS_DIR, STATE_DIR

#: The operations that work in a cone-mode sparse checkout, each with the folders it reads
#: and rewrites (checked out before it runs). ``capture`` and ``end`` are also the agent
#: hooks' detached actions (memrepo.agents.harness); an ``end`` there skips extraction.
OPS: dict[str, tuple[str, ...]] = {
    "capture": (),  # a new transcript: its day's folder is checked out when written
    "end": (),
    "commit": (),
    "sync": (),
    "search": (),
    "index": (),
    "verify": (),
    "remember": (JOURNAL_DIR,),
    "reinforce": (SIGNALS_DIR.rstrip("/"),),
}
#: The allow-list as a person types it (the refusal names it).
SHOWN = "memory capture, commit, search, index, remember, reinforce, demote, sync, verify"
#: Never memory files: written freely wherever the cone is (gitignored state, the index).
_PRIVATE = (f"{STATE_DIR}/", "scratch/", DB_NAME)


@dataclass(frozen=True)
class View:
    """The cone of a sparse checkout: ``folders`` are checked out whole; the files directly
    in the folders above them (the root's included) are there too, as git's cone mode
    has it."""

    folders: tuple[str, ...]

    @property
    def parents(self) -> frozenset[str]:
        out = {""}
        for f in self.folders:
            parts = f.split("/")
            out.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return frozenset(out)

    def shows(self, rel: str) -> bool:
        """Whether the repo path ``rel`` is inside the cone (in the work tree if git has it)."""
        folder = rel.rpartition("/")[0]
        return folder in self.parents or any(rel.startswith(f + "/") for f in self.folders)

    @property
    def stamp(self) -> str:
        """What the index records of the cone it was built for ('' for a full checkout)."""
        return "cone:" + ",".join(self.folders)

    @property
    def note(self) -> str:
        shown = ", ".join(f"{f}/" for f in self.folders) or "the top-level files only"
        return f"a sparse checkout: only {shown} here is indexed and searched"


def parse_cone(text: str) -> tuple[str, ...] | None:
    """The folders of a cone-mode ``info/sparse-checkout`` file, None when it is not in
    the cone format (gitignore-style patterns, which memrepo does not take)."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if lines[:2] != ["/*", "!/*/"]:
        return None
    dirs, parents = [], set()
    for ln in lines[2:]:
        neg = ln.startswith("!")
        body = ln[1:] if neg else ln
        if neg and body.startswith("/") and body.endswith("/*/") and len(body) > 4:
            parents.add(body[1:-3])
        elif not neg and body.startswith("/") and body.endswith("/") and len(body) > 2:
            dirs.append(body[1:-1])
        else:
            return None
    dirs = [d.replace("\\", "") for d in dirs if d not in parents]
    if any(p in ("", ".", "..") for d in dirs for p in d.split("/")):
        return None
    return tuple(sorted(dirs))


def view(root: str | Path, gitdir: Path | None = None) -> View | None:
    """The cone of the clone at ``root``; None for a full checkout, and for a sparse
    checkout that is not in cone mode (refused by memrepo.repo). One stat when there is no
    sparse-checkout file; else one ``git config`` (``sparse-checkout disable`` leaves the
    file behind)."""
    gd = gitdir or git_file_dir(root)
    if gd is None:
        return None
    try:
        text = (Path(gd) / "info" / "sparse-checkout").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if git(["config", "--bool", "core.sparseCheckout"], root, check=False).strip() != "true":
        return None
    folders = parse_cone(text)
    return None if folders is None else View(folders)


def allows(root: str | Path, op: str | None) -> bool:
    """Whether ``op`` may run in the sparse checkout at ``root`` (a cone-mode one, and
    ``op`` in :data:`OPS`); its folders are checked out first."""
    if op not in OPS:
        return False
    v = view(root)
    if v is None:
        return False
    include(root, OPS[op], v)
    return True


def include(root: str | Path, folders: Iterable[str], v: View | None = None) -> list[str]:
    """Add ``folders`` to the cone of the sparse checkout at ``root`` (those not in it
    yet); what was added. Nothing in the work tree is lost: git checks the folders' files
    out, keeps what is staged, and leaves untracked files alone."""
    v = v or view(root)
    if v is None:
        return []
    wanted = sorted({f.strip("/") for f in folders if f.strip("/")})
    missing = [f for f in wanted if not v.shows(f + "/x")]
    if missing:
        retry_locked(lambda: git(["sparse-checkout", "add", "--", *missing], root))
    return missing


def before_write(root: str | Path, path: str | Path) -> None:
    """Called before a new file is written at ``path`` (it does not exist yet): in a
    sparse checkout, refuse a path git tracks but keeps out of the work tree (its text
    would be replaced by what the writer made of "missing"), and check a new file's folder
    out, so that what memrepo writes is always inside the cone. Nothing in a full
    checkout (one stat)."""
    rel = os.path.relpath(os.fspath(path), os.fspath(root)).replace(os.sep, "/")
    if rel.startswith(_PRIVATE) or rel.startswith("../"):
        return
    v = view(root)
    if v is None or v.shows(rel):
        return
    folder = rel.rpartition("/")[0]
    if git(["ls-files", "--", f":(literal){rel}"], root, check=False).strip():
        raise MemrepoError(
            f"{rel}: not in this sparse checkout ({root}): git has it, but keeps it out of "
            f"the work tree, and memrepo never writes over a file it cannot see. Nothing "
            f"was written. Check its folder out: 'git -C {root} sparse-checkout add {folder}'"
        )
    include(root, [folder], v)
