"""Where the packaged templates and repo skeleton live (works installed or editable)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from memrepo.spawn import module_argv


def templates_dir() -> Path:
    return Path(str(resources.files("memrepo.templates")))


def skeleton_dir() -> Path:
    return Path(str(resources.files("memrepo.skeleton")))


def memory_command() -> list[str]:
    """How this interpreter runs ``memory``: the script installed beside it, else
    ``python -m memrepo`` (a ``--user`` or odd install may put scripts elsewhere)."""
    import sys

    exe = Path(sys.executable).with_name("memory")
    return [str(exe)] if exe.exists() else module_argv("memrepo")
