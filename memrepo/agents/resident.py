"""The resident server with the agents' services: what ``memory serve`` and ``memory mcp``
run, and ``python -m memrepo.agents.resident serve ROOT`` (what ``memory serve --detach``
spawns).

The server (:mod:`memrepo.resident.server`) knows the model and the index; the ops a hook
asks of it live here, a floor up, and are handed to it (``services``):

- ``recall``: the prompt hook's recall (:func:`memrepo.agents.recall.recall`), compiled in
  the server, where memrepo is imported and the model's nearest index is in memory. The
  hook asks it first (:func:`memrepo.agents.recall.recall_served`) and recalls itself when
  no server answers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrepo.agents import recall
from memrepo.agents.harness import HARNESSES
from memrepo.resident import serve
from memrepo.resident.server import Server, Service


def recall_service(server: Server, req: dict[str, Any], asked: Callable[[], bool]
                   ) -> dict[str, Any]:
    """``{op: recall, harness, payload, root}`` -> ``{ok, text}``: what the hook would print.
    Refused for another working tree than the server's (a linked worktree shares the
    git dir, so its hooks reach this socket): that hook recalls itself. A hook that gave
    up waiting recalls itself too, so this one then writes nothing (shown passages, hit
    signals): the hook's recall must not find its passages already shown."""
    harness, payload, root = req.get("harness"), req.get("payload"), req.get("root")
    if not isinstance(harness, str) or harness not in HARNESSES or not isinstance(
            payload, dict):
        return {"ok": False, "error": "recall needs harness (one of "
                f"{', '.join(HARNESSES)}) and payload (an object)"}
    if not isinstance(root, str) or Path(root).resolve() != server.root.resolve():
        return {"ok": False, "error": f"this server serves {server.root}, not {root}"}
    with server.hosted_search() as search:
        text = recall.recall(server.root, harness, payload, search, asked)
    return {"ok": True, "text": text}


SERVICES: dict[str, Service] = {"recall": recall_service}


def main(argv: list[str] | None = None) -> int:
    """``python -m memrepo.agents.resident serve ROOT [--model M] [--idle S]``: the
    server, with :data:`SERVICES`."""
    return serve.main(argv, services=SERVICES)


if __name__ == "__main__":
    sys.exit(main())
