"""What ``memory hook NAME [FILES…]`` runs: kept free of Click, because git runs it on
every commit (``memrepo.scripts.fastpath`` calls it without loading the command tree).

Validators take staged file names and may block the commit. The post-* hooks bring the
index up to date and must never fail or block anything: whatever goes wrong there is
logged for ``memory doctor``, and the exit status is always 0. ``memory hook probe KIND``
is what a shim runs for ``memory doctor`` instead of its work: it proves this Python has
memrepo and the modules hook KIND needs, and does nothing else.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import memrepo
from memrepo.hooks.post_commit import GIT_EVENTS, run_git_event

#: validator name -> module in memrepo.hooks (each has main(argv) -> int).
VALIDATORS = {
    "pre-commit": "pre_commit",
    "commit-msg": "commit_msg",
    "check-filetypes": "check_filetypes",
    "check-frontmatter": "check_frontmatter",
    "check-transcripts": "check_transcripts",
    "check-memory-cap": "check_memory_cap",
    "check-topics": "check_topics",
    "check-journal": "check_journal",
    "check-secrets": "check_secrets",
    "check-size": "check_size",
    "check-links": "check_links",
}
#: Server-side hooks: run in a bare repository, read ``<old> <new> <ref>`` lines on stdin.
SERVER_HOOKS = {"pre-receive": "pre_receive"}
PROBE = "probe"
NAMES = (*VALIDATORS, *GIT_EVENTS, *SERVER_HOOKS, PROBE)
#: Set by a direct shim for the hook it chains (memrepo.hooks.install.CHAINED_ENV).
CHAINED_ENV = "MEMREPO_CHAINED"


def probe(args: Sequence[str]) -> int:
    """Import what hook ``args[0]`` needs and say which memrepo and Python answered."""
    kind = args[0] if args else "pre-commit"
    module = VALIDATORS.get(kind) or SERVER_HOOKS.get(kind)
    if module:
        importlib.import_module(f"memrepo.hooks.{module}")
    print(f"memrepo {memrepo.__version__} ({sys.executable}): {kind} hook ready")
    return 0


def run(name: str, files: Sequence[str]) -> int:
    """Run the validator, server hook or git-event hook ``name``; its exit status."""
    if name == PROBE:
        return probe(files)
    if os.environ.get(CHAINED_ENV) and name != "pre-receive":
        # memrepo's own entry in a hook chained by a direct shim (the pre-commit
        # framework's config): the shim runs memrepo itself, right after
        return 0
    if name in VALIDATORS:
        module = importlib.import_module(f"memrepo.hooks.{VALIDATORS[name]}")
        return int(module.main(list(files)) or 0)
    if name in SERVER_HOOKS:
        module = importlib.import_module(f"memrepo.hooks.{SERVER_HOOKS[name]}")
        return int(module.main() or 0)
    run_git_event(Path.cwd(), name)
    return 0
