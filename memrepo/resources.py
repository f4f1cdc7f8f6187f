"""Where the packaged templates and repo skeleton live (works installed or editable)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def templates_dir() -> Path:
    return Path(str(resources.files("memrepo.templates")))


def skeleton_dir() -> Path:
    return Path(str(resources.files("memrepo.skeleton")))


def template_text(name: str) -> str:
    return (templates_dir() / name).read_text(encoding="utf-8")
