"""Where the index keeps its files, and which repo files it indexes."""

from __future__ import annotations

from pathlib import Path

from memrepo.index import DB_NAME

#: Trees that are never indexed: scratch space and binary attachments.
EXCLUDED_ROOTS = ("scratch/", "attachments/", ".")
#: Append-only usage events (seed 001 signals), one JSON object a line.
SIGNALS_DIR = "raw/signals/"


def db_path(root: Path) -> Path:
    return Path(root) / DB_NAME


def state_dir(git_dir: Path) -> Path:
    """``<git-dir>/memrepo``: the lock and the hook log (never committed, per clone)."""
    return Path(git_dir) / "memrepo"


def is_indexed(path: str) -> bool:
    """Markdown files outside scratch/ and attachments/ (and hidden folders)."""
    return path.endswith(".md") and not path.startswith(EXCLUDED_ROOTS) and "/." not in path


def is_signal_file(path: str) -> bool:
    return path.startswith(SIGNALS_DIR) and path.endswith(".jsonl")
