"""The one error type a person sees: it names the file, and the line when there is one."""

from __future__ import annotations

from pathlib import Path


class MemrepoError(Exception):
    """An actionable failure. Commands print ``str(err)`` and exit non-zero, never a traceback."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line

    def __str__(self) -> str:
        where = self.path or ""
        if where and self.line:
            where += f":{self.line}"
        return f"{where}: {self.message}" if where else self.message


class GitError(MemrepoError):
    """A git command failed; the message is git's own."""


class ConfigError(MemrepoError):
    """memory-config.yaml is invalid; the message names the key path."""


class FormatError(MemrepoError):
    """A memory file does not follow its format (frontmatter, transcript, topic...)."""
