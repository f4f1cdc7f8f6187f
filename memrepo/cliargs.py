"""memrepo's global options in an argv, read without Click: ``--repo`` and ``--namespace``.

The fast path (``memory hook AGENT EVENT``, ``memory mcp``) serves agents without importing
Click, and ``memory install`` recognises its own entries in an agent's settings by what
they run; both read these two options the way the Click group takes them. Nothing here
imports more than the standard library's ``os``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

#: The variable that names an agent's namespace (memrepo.namespaces.ENV is this one: the
#: fast path reads it without importing that module).
NAMESPACE_ENV = "MEMREPO_NAMESPACE"


def split_repo(argv: Sequence[str], default: str | None = None) -> tuple[str | None, list[str]]:
    """(the repo, ``argv`` without it): ``--repo PATH`` / ``--repo=PATH`` anywhere before a
    ``--`` (the last one wins), else ``default``; as the Click commands take it."""
    repo, rest, i = default, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg == "--repo" and i + 1 < len(argv):
            repo, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--repo="):
            repo = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return repo, rest


def split_namespace(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the namespace, ``argv`` without it): ``--namespace NAME`` / ``--namespace=NAME``
    among the options before the command (``memory --namespace NAME hook …``), where the
    Click group takes it; a command's own ``--namespace`` (``memory search``) is its own."""
    ns, rest, i = None, list(argv), 0
    while i < len(rest) and rest[i].startswith("--") and rest[i] != "--":
        arg = rest[i]
        if arg == "--namespace" and i + 1 < len(rest):
            ns = rest[i + 1]
            del rest[i:i + 2]
        elif arg.startswith("--namespace="):
            ns = arg.split("=", 1)[1]
            del rest[i]
        else:
            i += 2 if arg == "--repo" else 1  # --repo PATH: its value is not the command
    return ns, rest


def take_namespace(argv: Sequence[str]) -> list[str]:
    """``argv`` without its global ``--namespace``, which becomes this process's (and its
    children's) ``$MEMREPO_NAMESPACE``: the hooks, the MCP server and the workers they
    start all act in it. memrepo.namespaces checks the name where it is read."""
    ns, rest = split_namespace(argv)
    if ns is not None:
        os.environ[NAMESPACE_ENV] = ns
    return rest
