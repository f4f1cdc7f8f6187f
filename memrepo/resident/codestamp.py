"""Whether memrepo's code changed under a running resident server (an upgrade, an edit).

A resident started for the agents lives as long as they keep asking it, for days; after
``pip install -U memrepo`` it would go on answering every hook with the code it started
with. It looks at its modules now and then (:data:`CHECK_S`): when they changed it
retires, and the next client starts a server of the new code (memrepo.resident.server).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import time

#: memrepo's packages whose modules the stamp covers (the scripts and the git hooks may
#: live outside memrepo's folder in an editable install)
PACKAGES = ("memrepo", "memrepo.scripts", "memrepo.hooks")
#: how often, at most, the modules are looked at (a ``stat`` of each, a few hundred)
CHECK_S = 30.0


def stamp() -> str:
    """A digest of the path, size and mtime of each ``.py`` of :data:`PACKAGES`: an
    upgrade adds, removes or rewrites files, whatever mtimes it gives them."""
    h = hashlib.sha256()
    seen: set[str] = set()
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for top in (spec.submodule_search_locations or []) if spec else []:
            for folder, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for f in sorted(files):
                    path = os.path.join(folder, f)
                    if not f.endswith(".py") or path in seen:
                        continue
                    seen.add(path)
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


class CodeWatch:
    """:meth:`changed` since this was made, looked at every :data:`CHECK_S` at most."""

    def __init__(self, every: float | None = None) -> None:
        self.every = CHECK_S if every is None else every
        self.first = stamp()
        self._next = time.monotonic() + self.every

    def changed(self) -> bool:
        if time.monotonic() < self._next:
            return False
        self._next = time.monotonic() + self.every
        return stamp() != self.first
