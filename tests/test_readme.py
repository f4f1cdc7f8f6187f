"""The README is for users: short, no release history, its links resolve, and CI finds its
test command (the same awk rule as .ci/run). History lives in CHANGELOG.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: Release history and before/after figures belong in CHANGELOG.md and bench/results/.
HISTORY = [
    re.compile(r"release before", re.IGNORECASE),
    re.compile(r"\bThis release\b", re.IGNORECASE),
    re.compile(r"\bBefore:"),
    re.compile(r"B\s*/\s*A"),
]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_is_at_most_300_lines() -> None:
    assert len(_readme().splitlines()) <= 300


def test_readme_carries_no_release_history() -> None:
    text = _readme()
    found = [p.pattern for p in HISTORY if p.search(text)]
    assert not found, found


def _ci_test_command(text: str) -> str | None:
    """awk '/^Run the tests/ {f=1} f && /^```bash/ {getline; print; exit}' README.md"""
    lines = text.splitlines()
    started = False
    for i, line in enumerate(lines):
        if line.startswith("Run the tests"):
            started = True
        if started and line.startswith("```bash"):
            return lines[i + 1] if i + 1 < len(lines) else ""
    return None


def test_ci_finds_the_test_command() -> None:
    command = _ci_test_command(_readme())
    assert command is not None, "no 'Run the tests' line followed by a ```bash block"
    assert command.startswith("python3 -m venv"), command


def test_every_relative_link_points_at_a_file() -> None:
    missing = []
    for target in LINK.findall(_readme()):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        path = target.split("#", 1)[0]
        if path and not (ROOT / path).exists():
            missing.append(target)
    assert not missing, missing


def test_changelog_exists() -> None:
    changelog = ROOT / "CHANGELOG.md"
    assert changelog.is_file()
    assert changelog.read_text(encoding="utf-8").startswith("# Changelog")
