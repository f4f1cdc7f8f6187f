"""Start a process that outlives its parent: the one way hooks and servers detach work.

A hook must return at once and an agent's timeout or Ctrl-C must not reach what it
started, so the child gets a session of its own (``setsid``), stdout to /dev/null and
stderr appended to a private log file. ``posix_spawn`` where there is one: no
``subprocess`` import on a hook's path, and no copy of this process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: Set by an agent hook in its own process and so in the worker it detaches (its value:
#: the agent). Both inherit the agent's environment, whose ``ANTHROPIC_API_KEY`` /
#: ``ANTHROPIC_BASE_URL`` are the agent's, not given to memrepo: :mod:`memrepo.llm` stays
#: offline there unless ``MEMREPO_AGENT_LLM=1`` is set too.
AGENT_WORKER_ENV = "MEMREPO_AGENT_WORKER"

#: What ``python -c`` runs to run a module as ``python -m`` would, but without the current
#: folder first on ``sys.path``: memrepo's processes start in an agent's project, and a
#: ``json.py`` or ``http.py`` there would be imported in place of the standard library's
#: (``-P`` does this from Python 3.11 only).
RUN_MODULE = ("import runpy, sys\nif sys.path[:1] == ['']: del sys.path[0]\n"
              "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")


def module_argv(module: str, *args: str) -> list[str]:
    """``python -m MODULE ARGS`` (this interpreter), safe from the current folder."""
    import sys

    return [sys.executable, "-c", RUN_MODULE, module, *args]


def detached(argv: list[str], stderr: Path, *, stdin: Path | None = None,
             env: dict[str, str] | None = None, fd3: int | None = None) -> None:
    """Run ``argv`` detached; ``stdin`` from a file (else /dev/null); ``fd3``: a
    descriptor the child inherits as fd 3 (a lock it goes on holding)."""
    env = dict(os.environ) if env is None else env
    if hasattr(os, "posix_spawn"):
        actions: list[tuple[Any, ...]] = [
            (os.POSIX_SPAWN_OPEN, 0, str(stdin or os.devnull), os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, str(stderr), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
        ]
        if fd3 is not None:
            actions.append((os.POSIX_SPAWN_DUP2, fd3, 3))
        os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
        return
    import subprocess  # pragma: no cover - Windows (no fd 3 to pass there)

    with (open(stdin or os.devnull, "rb") as fin,  # pragma: no cover
          open(stderr, "ab") as ferr):
        subprocess.Popen(argv, stdin=fin, stdout=subprocess.DEVNULL, stderr=ferr, env=env,
                         start_new_session=True, close_fds=True)
