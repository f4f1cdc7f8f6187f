"""Where the index keeps its files, and which repo files it indexes."""

from __future__ import annotations

from pathlib import Path

from memrepo import compression
from memrepo.layout import DB_NAME, EXCLUDED_ROOTS


def db_path(root: Path) -> Path:
    return Path(root) / DB_NAME


def state_dir(git_dir: Path) -> Path:
    """``<git-dir>/memrepo``: the lock and the hook log (never committed, per clone)."""
    return Path(git_dir) / "memrepo"


def is_indexed(path: str) -> bool:
    """Markdown files outside scratch/ and attachments/ (and hidden folders), and the
    compressed archives ``archive/**.md.gz`` (read inflated), whose name is valid UTF-8
    (SQLite stores text as UTF-8: a name git gave us with surrogate escapes cannot be
    stored, so it is skipped rather than breaking every update)."""
    return (is_markdown(path) or compression.allowed(path)) and is_utf8(path)


def is_markdown(path: str) -> bool:
    """What the index would hold, whatever the name's encoding."""
    return path.endswith(".md") and not path.startswith(EXCLUDED_ROOTS) and "/." not in path


def is_utf8(text: str) -> bool:
    """False for a str holding surrogates (bytes that were not UTF-8, decoded with
    ``surrogateescape``, or a lone ``\\udXXX`` escape from JSON): SQLite refuses them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(path: str) -> str:
    """A name with undecodable bytes shown as ``\\xff`` escapes (safe to print or log)."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
