"""``memory hook NAME [FILES…]``: the plumbing git hooks call (through pre-commit).

Validators take staged file names and may block the commit. The post-* hooks bring the
index up to date and must never fail or block anything: whatever goes wrong there is
logged for ``memory doctor``, and the exit status is always 0.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

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
GIT_EVENTS = ("post-commit", "post-merge", "post-rewrite", "post-checkout")
#: Server-side hooks: run in a bare repository, read ``<old> <new> <ref>`` lines on stdin.
SERVER_HOOKS = {"pre-receive": "pre_receive"}


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    short_help="Plumbing: run a validator or a post-* hook.",
)
@click.argument("name", type=click.Choice([*VALIDATORS, *GIT_EVENTS, *SERVER_HOOKS]))
@click.argument("files", nargs=-1, type=click.UNPROCESSED)
def hook(name: str, files: tuple[str, ...]) -> int:
    """Run the validator or git-event hook NAME (called by the installed git hooks)."""
    if name in VALIDATORS:
        module = importlib.import_module(f"memrepo.hooks.{VALIDATORS[name]}")
        return int(module.main(list(files)) or 0)
    if name in SERVER_HOOKS:
        module = importlib.import_module(f"memrepo.hooks.{SERVER_HOOKS[name]}")
        return int(module.main() or 0)
    run_git_event(Path.cwd(), name)
    return 0


def run_git_event(root: Path, event: str) -> None:
    """Forward a git event to the indexer; swallow everything (it is logged there)."""
    if not (root / "memory-config.yaml").is_file():
        return
    try:
        from memrepo.index.hook import on_git_event
    except ImportError:  # the index is optional: nothing to keep up to date
        return
    try:
        on_git_event(root, event)
    except Exception as exc:  # on_git_event logs its own errors; this is the last net
        print(f"memrepo: {event} hook failed: {exc} (see 'memory doctor')", file=sys.stderr)
