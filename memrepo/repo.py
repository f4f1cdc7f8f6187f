"""Finding the memory repo: ``--repo PATH``, else ``MEMORY_REPO``, else walk up from cwd.

Every command opens its repo here, so this is also where a clone memrepo cannot work in
is refused, once: a sparse checkout, unless the command is one that works there. Its
left-out files look missing, and the writers would write over them (``memory doctor
--fix`` a template over MEMORY.md, ``memory remember`` a new journal over today's), which
the next commit would record. So a command says what it is about to do (``op``), and only
the operations of :data:`memrepo.sparse.OPS` run in a cone-mode sparse checkout (a
sub-agent's, docs/sub-agents.md), where memrepo never writes what git keeps out of the
work tree; everything else is refused as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo import sparse as sparse_mod
from memrepo.errors import MemrepoError
from memrepo.git import git, git_file_dir
from memrepo.layout import CONFIG_FILE

if TYPE_CHECKING:
    from memrepo.config import Config

ENV_VAR = "MEMORY_REPO"


@dataclass
class MemoryRepo:
    """A memory repo on disk: its root and (lazily) its validated config."""

    root: Path
    _config: Config | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            from memrepo.config import load_config  # YAML is imported only when needed

            self._config = load_config(self.root)
        return self._config

    def path(self, rel: str) -> Path:
        return self.root / rel


def find_root(start: str | Path) -> Path | None:
    """The nearest directory at or above ``start`` that holds memory-config.yaml."""
    here = Path(start).resolve()
    for candidate in (here, *here.parents):
        if (candidate / CONFIG_FILE).is_file():
            return candidate
    return None


def discover(explicit: str | Path | None = None, cwd: str | Path | None = None, *,
             op: str | None = None) -> MemoryRepo:
    """Resolve the memory repo a command works on, or say how to point at one. ``op``:
    what the command does, when it is one that works in a sparse checkout
    (:data:`memrepo.sparse.OPS`); None refuses a sparse checkout."""
    given = explicit or os.environ.get(ENV_VAR) or None
    if given:
        root = Path(given).expanduser().resolve()
        source = "--repo" if explicit else ENV_VAR
        if not (root / CONFIG_FILE).is_file():
            raise MemrepoError(
                f"{root} is not a memory repo (no {CONFIG_FILE}); "
                f"check {source} or run 'memory init {root}'"
            )
        require_full_checkout(root, op=op)
        return MemoryRepo(root)
    start = Path(cwd or os.getcwd())
    root = find_root(start)
    if root is None:
        raise MemrepoError(
            f"no memory repo found at or above {start} (no {CONFIG_FILE}); "
            f"pass --repo PATH, set {ENV_VAR}, or run 'memory init'"
        )
    require_full_checkout(root, op=op)
    return MemoryRepo(root)


def sparse_checkout(root: Path) -> bool:
    """Whether the clone at ``root`` is a sparse checkout: git's sparse-checkout file
    exists (a stat; ``.git`` read directly) and ``core.sparseCheckout`` is on (one git
    call, made only then: ``git sparse-checkout disable`` leaves the file behind)."""
    gitdir = git_file_dir(root)
    if gitdir is None or not (gitdir / "info" / "sparse-checkout").is_file():
        return False
    out = git(["config", "--bool", "core.sparseCheckout"], root, check=False)
    return out.strip() == "true"


def skipped_paths(root: Path, limit: int = 3) -> list[str]:
    """Up to ``limit`` tracked files git keeps out of the work tree (skip-worktree: a
    sparse checkout, or ``git update-index --skip-worktree``); reads git's index."""
    out = git(["ls-files", "-t", "-z"], root, check=False)
    found = []
    for row in out.split("\0"):
        if row.startswith("S "):
            found.append(row[2:])
            if len(found) >= limit:
                break
    return found


def require_full_checkout(root: Path, *, thorough: bool = False, op: str | None = None) -> None:
    """Refuse a sparse checkout (and, ``thorough``, any file git keeps out of the work
    tree) with what to do about it. Outside a git repository there is nothing to check.

    The allow-list: ``op`` of :data:`memrepo.sparse.OPS` runs in a cone-mode sparse
    checkout (its folders checked out first), never with ``thorough``, whose callers lay
    files down wherever one is missing (``memory init``, ``doctor --fix``)."""
    root = Path(root)
    sparse = sparse_checkout(root)
    if sparse and not thorough and sparse_mod.allows(root, op):
        return
    left_out = skipped_paths(root) if thorough or sparse else []
    if not sparse and not left_out:
        return
    what = "is a sparse checkout" if sparse else "has files git keeps out of the work tree"
    shown = f" (e.g. {', '.join(left_out)})" if left_out else ""
    undo = (f"'git -C {root} sparse-checkout disable'" if sparse else
            f"'git -C {root} update-index --no-skip-worktree PATH…'")
    works = (f" In a cone-mode sparse checkout ('memory clone --sparse DIR'), these work: "
             f"{sparse_mod.SHOWN}." if sparse else "")
    raise MemrepoError(
        f"{root} {what}{shown}: {'this command needs' if sparse else 'memrepo needs'} every "
        f"file of the memory checked out, or the files left out look missing and would be "
        f"written over (templates, a new journal). Nothing was changed. Run {undo}, or use "
        f"a full clone.{works}"
    )
