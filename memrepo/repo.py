"""Finding the memory repo: ``--repo PATH``, else ``MEMORY_REPO``, else walk up from cwd."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo.errors import MemrepoError
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


def discover(explicit: str | Path | None = None, cwd: str | Path | None = None) -> MemoryRepo:
    """Resolve the memory repo a command works on, or say how to point at one."""
    given = explicit or os.environ.get(ENV_VAR) or None
    if given:
        root = Path(given).expanduser().resolve()
        source = "--repo" if explicit else ENV_VAR
        if not (root / CONFIG_FILE).is_file():
            raise MemrepoError(
                f"{root} is not a memory repo (no {CONFIG_FILE}); "
                f"check {source} or run 'memory init {root}'"
            )
        return MemoryRepo(root)
    start = Path(cwd or os.getcwd())
    root = find_root(start)
    if root is None:
        raise MemrepoError(
            f"no memory repo found at or above {start} (no {CONFIG_FILE}); "
            f"pass --repo PATH, set {ENV_VAR}, or run 'memory init'"
        )
    return MemoryRepo(root)
