"""``memory clone SRC DEST [--sparse DIR]…``: a clone of the memory, whole or sparse, ready.

A sub-agent gets a sparse clone of just the folders it needs (docs/sub-agents.md): a
clone of its own, not a worktree of the parent's repository, because a clone has its own
branch, index, ``memory.db`` and session state, shares the memory through ``memory
sync`` like any other machine (two worktrees cannot have one branch checked out), and
its sparse-checkout never touches the parent's git config (a worktree's needs
``extensions.worktreeConfig`` there). A local clone hard-links git's objects, so it costs
little beyond the files checked out.

Git's cone mode: the sparse checkout is a list of folders (:mod:`memrepo.sparse`). The
clone is checked out sparse from the start (``git clone --sparse``: the top-level files
only, so ``memory-config.yaml`` is there), then the folders asked for; then memrepo's git
hooks and merge driver are installed as ``memory init`` would, and the index is built
from what is checked out.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memrepo.commit.merge import install_driver
from memrepo.config import load_config
from memrepo.errors import GitError, MemrepoError
from memrepo.git import git
from memrepo.hooks.install import install_hooks
from memrepo.index import embedders
from memrepo.index.indexer import sync as index_sync
from memrepo.layout import CONFIG_FILE

#: What a cone-mode folder may not hold: gitignore pattern characters (cone mode takes
#: folders, not patterns) and a backslash (git escapes, never a folder of memrepo's).
_PATTERN = set("*?[]!\\")


@dataclass
class Cloned:
    root: Path
    folders: tuple[str, ...] | None  # None: a full clone
    hooks: str
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {"root": str(self.root), "sparse": self.folders is not None,
                "folders": list(self.folders or ()), "hooks": self.hooks, "notes": self.notes}


def clean_folders(folders: Sequence[str]) -> tuple[str, ...]:
    """The folders of a cone, as repo paths (``topics``, ``knowledge/projects/atlas``);
    MemrepoError for anything that is not one."""
    out = []
    for given in folders:
        rel = given.strip().strip("/")
        if not rel or any(p in ("", ".", "..") for p in rel.split("/")) or _PATTERN & set(rel):
            raise MemrepoError(
                f"--sparse {given!r}: give a folder of the memory, relative to its top "
                "(e.g. topics, knowledge/projects/atlas); git's cone mode takes folders, "
                "not patterns"
            )
        out.append(rel)
    return tuple(sorted(set(out)))


def clone(src: str, dest: Path, folders: Sequence[str] | None = None, *,
          branch: str | None = None, index: bool = True) -> Cloned:
    """Clone the memory at ``src`` into ``dest`` (absent or empty): sparse with the cone
    ``folders`` when given (None: a full clone), hooks installed, index built."""
    cone = clean_folders(folders) if folders is not None else None
    if cone == ():
        raise MemrepoError("--sparse needs at least one folder (e.g. --sparse topics)")
    dest = Path(dest).expanduser().absolute()
    made = not dest.exists()
    if not made and (not dest.is_dir() or any(dest.iterdir())):
        raise MemrepoError(f"{dest} exists and is not an empty folder; nothing was cloned")
    dest.parent.mkdir(parents=True, exist_ok=True)
    args = ["clone", "-q", *(["--sparse"] if cone is not None else []),
            *(["--branch", branch] if branch else []), "--", src, str(dest)]
    try:
        git(args, dest.parent)
        if not (dest / CONFIG_FILE).is_file():
            raise MemrepoError(f"{src} is not a memory repo (no {CONFIG_FILE} at its top); "
                               "nothing was cloned")
        if cone is not None:
            git(["sparse-checkout", "set", "--cone", "--", *cone], dest)
        _, hooks = install_hooks(dest, load_config(dest)["git"]["hook_runner"])
        install_driver(dest)
    except (MemrepoError, GitError):
        with contextlib.suppress(OSError):
            if made:
                shutil.rmtree(dest)
            else:
                for child in dest.iterdir():
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    done = Cloned(dest, cone, hooks)
    if index:
        done.notes += _index(dest)
    return done


def _index(root: Path) -> list[str]:
    """Build the clone's index (of what is checked out); what to tell the person."""
    search = load_config(root)["search"]
    missing = embedders.available(search["embedder"])
    if missing:
        return [f"no index built: search.embedder {search['embedder']!r} is not installed "
                f"({missing}); 'memory index' builds it once it is"]
    res = index_sync(root, embedder_name=search["embedder"], replies=search["reply_vectors"])
    if res is None:
        return ["another indexer is running; it builds the index"]
    return [f"indexed {res.files or res.added} files at {(res.commit or '')[:12]}"]
