"""The two ways git runs memrepo's hooks (``git.hook_runner``), and how to tell them apart.

Standard library only: ``memrepo.commit.inline`` asks on every commit memrepo makes
whether the installed hooks are memrepo's alone.
"""

from __future__ import annotations

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
HOOK_TYPES = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
#: First line after the shebang of a direct hook; how hooks_status recognises one.
DIRECT_MARKER = "# memrepo direct hook"
RUNNERS = ("pre-commit", "direct")


def direct_hook_script(kind: str) -> str:
    """A git hook that calls the installed ``memory`` with no framework in between."""
    call = "memory hook pre-commit --index" if kind == "pre-commit" else f'memory hook {kind} "$@"'
    return (
        f"#!/bin/sh\n{DIRECT_MARKER} (git.hook_runner: direct); `memory doctor` checks it.\n"
        f"exec {call}\n"
    )


def runner_of(text: str) -> str | None:
    """Which runner installed the hook script ``text``: "direct", "pre-commit", or None
    (somebody else's hook)."""
    if DIRECT_MARKER in text:
        return "direct"
    if "pre-commit" in text and "hook-impl" in text:
        return "pre-commit"
    return None
