"""Health checks that ``memory doctor`` runs: each part of memrepo contributes its own."""

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


CheckFn = Callable[["MemoryRepo"], list[Check]]

#: "module:function" providers, imported lazily by the doctor (foundation first).
PROVIDERS: list[str] = [
    "memrepo.scripts.doctor:foundation_checks",
    "memrepo.scripts.capture:health_checks",
    "memrepo.index.health:checks",
]
