"""What ``memory hook NAME [FILES…]`` runs: kept free of Click, because git runs it on
every commit (``memrepo.scripts.fastpath`` calls it without loading the command tree).

Validators take staged file names and may block the commit. The post-* hooks bring the
index up to date and must never fail or block anything: whatever goes wrong there is
logged for ``memory doctor``, and the exit status is always 0.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from memrepo.hooks.post_commit import GIT_EVENTS, run_git_event

#: validator name -> module in memrepo.hooks (each has main(argv) -> int).
VALIDATORS = {
    "pre-commit": "pre_commit",
    "check-frontmatter": "check_frontmatter",
    "check-transcripts": "check_transcripts",
    "check-memory-cap": "check_memory_cap",
    "check-topics": "check_topics",
    "check-journal": "check_journal",
    "check-secrets": "check_secrets",
    "check-size": "check_size",
}
#: Server-side hooks: run in a bare repository, read ``<old> <new> <ref>`` lines on stdin.
SERVER_HOOKS = {"pre-receive": "pre_receive"}
NAMES = (*VALIDATORS, *GIT_EVENTS, *SERVER_HOOKS)


def run(name: str, files: Sequence[str]) -> int:
    """Run the validator, server hook or git-event hook ``name``; its exit status."""
    if name in VALIDATORS:
        module = importlib.import_module(f"memrepo.hooks.{VALIDATORS[name]}")
        return int(module.main(list(files)) or 0)
    if name in SERVER_HOOKS:
        module = importlib.import_module(f"memrepo.hooks.{SERVER_HOOKS[name]}")
        return int(module.main() or 0)
    run_git_event(Path.cwd(), name)
    return 0

