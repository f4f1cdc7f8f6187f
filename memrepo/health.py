"""What a health check reports: one line of ``memory doctor``.

Its own stdlib-only module, below everything that reports: the index
(:mod:`memrepo.index.health`) and capture (sessions left open) build their checks without
importing the doctor, which runs them (:mod:`memrepo.doctor`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memrepo.repo import MemoryRepo


@dataclass
class Check:
    """One line of the doctor's report. ``warning`` checks never make the repo unhealthy."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    warning: bool = False


#: A part's checks of a repo.
CheckFn = Callable[["MemoryRepo"], list[Check]]
