"""Shared test set-up: real git and real pre-commit, isolated from the user's machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test: a private git identity and config, pre-commit's cache in a temp dir,
    and the `memory` this interpreter installed first on PATH (hooks call it by name)."""
    home = tmp_path_factory.getbasetemp() / "home"
    home.mkdir(exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text(
            "[user]\n\tname = Test\n\temail = test@example.com\n"
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("PRE_COMMIT_HOME", str(home / "pre-commit-cache"))
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    monkeypatch.delenv("MEMORY_REPO", raising=False)
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def run_git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run real git; return the completed process (stdout and stderr as text)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_memory(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `memory` command as a user would."""
    return subprocess.run(
        ["memory", *args], cwd=cwd, capture_output=True, text=True, input=input
    )


@pytest.fixture
def memrepo_root(tmp_path: Path) -> Path:
    """A memory repo made by the real `memory init` (hooks installed, first commit made)."""
    root = tmp_path / "mem"
    proc = run_memory(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return root
