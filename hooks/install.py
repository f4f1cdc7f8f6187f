"""Installing memrepo's git hooks, and telling whose hooks are installed.

The two ways git runs memrepo's hooks (``git.hook_runner``): the pre-commit framework, or
direct shims. ``memory init`` and ``memory doctor --fix`` install them, the doctor checks
them (:func:`hooks_status`), and :mod:`memrepo.commit.write` asks on every commit memrepo
makes whether they are memrepo's alone (:func:`only_memrepo_hooks`): then it runs them
in-process instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from memrepo import git, yamlsafe
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.hooks.post_commit import GIT_EVENTS

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
#: Every git hook memrepo installs: the validators, then the index upkeep.
HOOK_TYPES = ("pre-commit", *GIT_EVENTS)
#: First line after the shebang of a direct hook; how hooks_status recognises one.
DIRECT_MARKER = "# memrepo direct hook"
RUNNERS = ("pre-commit", "direct")
#: The entry every memrepo hook runs (repo-skeleton/dot-pre-commit-config.yaml).
MEMREPO_ENTRY = "memory hook "


def direct_hook_script(kind: str) -> str:
    """A git hook that calls the installed ``memory`` with no framework in between."""
    call = "memory hook pre-commit --index" if kind == "pre-commit" else f'memory hook {kind} "$@"'
    return (
        f"#!/bin/sh\n{DIRECT_MARKER} (git.hook_runner: direct); `memory doctor` checks it.\n"
        f"exec {call}\n"
    )


def runner_of(text: str) -> str | None:
    """Which runner installed the hook script ``text``: "direct", "pre-commit", or None
    (somebody else's hook)."""
    if DIRECT_MARKER in text:
        return "direct"
    if "pre-commit" in text and "hook-impl" in text:
        return "pre-commit"
    return None


def only_memrepo_hooks(root: Path) -> bool:
    """Whether every installed git hook of ``root`` is one of memrepo's."""
    hooks = git.hooks_dir(root)
    if not hooks.is_dir():
        return True
    framework = False
    for path in hooks.iterdir():
        if path.name.endswith(".sample") or not path.is_file():
            continue
        if path.name.endswith(".legacy"):
            return False  # a hook pre-commit found and chains
        runner = runner_of(path.read_text(encoding="utf-8", errors="replace"))
        if runner is None:
            return False
        framework |= runner == "pre-commit"
    return not framework or _config_is_memrepos(root / PRE_COMMIT_CONFIG)


def _config_is_memrepos(path: Path) -> bool:
    """A pre-commit config whose hooks are all memrepo's local ones."""
    try:
        data = yamlsafe.load(path.read_text(encoding="utf-8"))
    except (OSError, MemrepoError, yamlsafe.YAMLProblem):
        return False  # unreadable: not provably memrepo's alone, so the real hooks run
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, list):
        return False
    for repo in repos:
        if not isinstance(repo, dict) or repo.get("repo") != "local":
            return False
        for hook in repo.get("hooks") or []:
            entry = str(hook.get("entry", "")) if isinstance(hook, dict) else ""
            if not entry.startswith(MEMREPO_ENTRY):
                return False
    return True


def hooks_status(root: Path, runner: str = "pre-commit") -> dict[str, str]:
    """For each hook type: ok, missing, foreign (not memrepo's), or installed by the other
    runner than ``runner``."""
    hooks = git.hooks_dir(root)
    status = {}
    for kind in HOOK_TYPES:
        path = hooks / kind
        if not path.is_file():
            status[kind] = "missing"
            continue
        found = runner_of(path.read_text(encoding="utf-8", errors="replace"))
        if found is None:
            status[kind] = "foreign"
        elif found != runner:
            status[kind] = f"installed by {found}, config says {runner}"
        elif not os.access(path, os.X_OK):
            status[kind] = "not executable"
        else:
            status[kind] = "ok"
    return status


def install_hooks(root: Path, runner: str = "pre-commit") -> tuple[str, str]:
    """Install the git hooks for every stage memrepo uses, with the configured runner;
    ("installed" or "found", what), the step ``memory init`` reports.

    pre-commit chains a foreign hook it finds (as ``<hook>.legacy``); the direct runner
    refuses to replace one. Switching runners replaces memrepo's own hooks only.
    """
    if runner not in RUNNERS:
        raise MemrepoError(f"unknown hook runner {runner!r} (use {' or '.join(RUNNERS)})")
    before = hooks_status(root, runner)
    todo = [k for k, v in before.items() if v != "ok"]
    if not todo:
        return "found", f"{', '.join(HOOK_TYPES)} via {runner}"
    hooks = git.hooks_dir(root)
    if runner == "direct":
        foreign = [k for k in todo if before[k] == "foreign"]
        if foreign:
            raise MemrepoError(
                f"{hooks / foreign[0]} is not memrepo's; move it away, or use "
                "git.hook_runner: pre-commit, which runs an existing hook too"
            )
        hooks.mkdir(parents=True, exist_ok=True)
        for kind in todo:
            atomic_write(hooks / kind, direct_hook_script(kind), mode=0o755)
    else:
        for kind in todo:  # a direct shim would be chained as .legacy and run twice
            if before[kind].startswith("installed by direct"):
                (hooks / kind).unlink()
        args = ["install", "--config", PRE_COMMIT_CONFIG]
        for kind in HOOK_TYPES:
            args += ["--hook-type", kind]
        proc = _pre_commit_cmd(root, *args)
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip()
            raise MemrepoError(f"pre-commit could not install the git hooks: {msg}")
    return "installed", f"{', '.join(todo)} via {runner}"


def _pre_commit_cmd(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=root,
        capture_output=True,
        text=True,
    )


def memory_on_path() -> str | None:
    """The ``memory`` the hooks will run (they find it on PATH), if any."""
    return shutil.which("memory")


def env_with_memory_on_path() -> dict[str, str]:
    """PATH with this interpreter's scripts dir first, so that the hooks of a commit made
    from here (``memory init``'s first one) find ``memory``."""
    scripts = str(Path(sys.executable).parent)
    return {"PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
