"""Laying down a memory repo: ``memory init`` (layout, identity, the first commit), which
``memory doctor --fix`` re-runs to restore what is missing. The git hooks are
:mod:`memrepo.hooks.install`'s.

Every step is idempotent: an existing file is never overwritten, a line already present
is never added twice, and each step says what it found or did, so a second run changes
nothing and reports why.
"""

from __future__ import annotations

import datetime as dt
import string
from dataclasses import dataclass
from pathlib import Path

from memrepo import clock, git, yamlsafe
from memrepo.atomic import atomic_write
from memrepo.config import load_config, render_default_config, set_setting
from memrepo.documents import with_line_count
from memrepo.errors import MemrepoError
from memrepo.hooks.install import HOOK_TYPES, PRE_COMMIT_CONFIG, env_with_memory_on_path
from memrepo.layout import CONFIG_FILE, LAYOUT_DIRS, MEMORY_FILE, PEOPLE_INDEX, PROJECTS_INDEX
from memrepo.repo import require_full_checkout
from memrepo.resources import skeleton_dir, templates_dir

#: template (under templates/knowledge/) -> where init writes it.
KNOWLEDGE_TEMPLATES = {
    "SOUL.md": "knowledge/identity/SOUL.md",
    "USER.md": "knowledge/identity/USER.md",
    "AGENTS.md": "knowledge/identity/AGENTS.md",
    "TOOLS.md": "knowledge/identity/TOOLS.md",
    "MEMORY.md": MEMORY_FILE,
    "projects_active.md": PROJECTS_INDEX,
    "people_index.md": PEOPLE_INDEX,
}
#: Files whose lines init merges into an existing copy instead of skipping it.
MERGED_LINE_FILES = (".gitignore", ".gitattributes")
INIT_MESSAGE = "maintenance: initialize memory repo"
RESTORE_MESSAGE = "maintenance: restore memory repo layout"
#: Directories git cannot track while empty get this placeholder (not scratch/: ignored).
KEEP_FILE = ".gitkeep"


@dataclass
class Action:
    """One step of init: ``status`` is created, updated, found or installed."""

    status: str
    path: str
    detail: str = ""


def render_template(name: str, today: dt.date) -> str:
    """A knowledge template for ``today``; one that states its ``line_count`` (MEMORY.md)
    states it right."""
    text = (templates_dir() / "knowledge" / name).read_text(encoding="utf-8")
    return with_line_count(string.Template(text).substitute(date=today.isoformat()), add=False)


def skeleton_files() -> dict[str, bytes]:
    """repo-skeleton/ as {destination path: content}; ``dot-x`` is written as ``.x``."""
    base = skeleton_dir()
    files: dict[str, bytes] = {}
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base)
        if path.is_dir() or "__pycache__" in rel.parts or rel.name == "__init__.py":
            continue
        parts = [p.replace("dot-", ".", 1) if p.startswith("dot-") else p for p in rel.parts]
        files["/".join(parts)] = path.read_bytes()
    return files


def planned_files(today: dt.date, runner: str | None = None) -> dict[str, bytes]:
    """Everything init writes, by repo-relative path."""
    files = skeleton_files()
    overrides = {"git": {"hook_runner": runner}} if runner else None
    files[CONFIG_FILE] = render_default_config(overrides).encode()
    for name, dest in KNOWLEDGE_TEMPLATES.items():
        files[dest] = render_template(name, today).encode()
    return files


def ensure_git_repo(root: Path) -> Action | None:
    """``git init`` when ``root`` is not in a repo; refuse a subdirectory of another repo."""
    top = git.toplevel(root)
    if top is not None:
        if top.resolve() != root.resolve():
            raise MemrepoError(
                f"{root} is inside the git repo {top}; a memory repo needs its own repository "
                f"root: run 'memory init {top}' or choose a directory outside it"
            )
        return None
    branch = git.git(["config", "--get", "init.defaultBranch"], root, check=False).strip()
    git.git(["init", "-q", f"--initial-branch={branch or 'main'}"], root)
    return Action("created", ".git", f"git repository (branch {branch or 'main'})")


#: The identity a memory repo commits with when git has none (a fresh machine, a container):
#: set in the repo's own config, never the user's global one.
FALLBACK_NAME = "memrepo"
FALLBACK_EMAIL = "memrepo@localhost"


def ensure_identity(root: Path) -> Action | None:
    """Give the repo an author identity when git has none, so init's commit (and every
    later one an agent makes) does not fail on a machine nobody configured."""
    if git.git(["var", "GIT_COMMITTER_IDENT"], root, check=False).strip():
        return None
    for key, value in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
        if not git.git(["config", "--get", key], root, check=False).strip():
            git.git(["config", key, value], root)
    return Action(
        "configured", "git identity",
        f"{FALLBACK_NAME} <{FALLBACK_EMAIL}> for this repo (git had none; change it with "
        "'git config user.name' and 'git config user.email')",
    )


def _merge_lines(existing: str, wanted: str) -> str | None:
    """``existing`` plus the lines of ``wanted`` it lacks (comments included), or None."""
    have = {line.strip() for line in existing.splitlines()}
    missing = [ln for ln in wanted.splitlines() if ln.strip() and ln.strip() not in have]
    if not any(ln for ln in missing if not ln.lstrip().startswith("#")):
        return None
    sep = "" if existing.endswith("\n") or not existing else "\n"
    return existing + sep + "\n" + "\n".join(missing) + "\n"


def _merge_pre_commit_config(existing: str, ours: str) -> str | None:
    """Add our local hooks to someone else's pre-commit config (None if already there)."""
    try:
        data = yamlsafe.load(existing) or {}
    except yamlsafe.YAMLProblem as exc:
        raise MemrepoError(exc.message, PRE_COMMIT_CONFIG, exc.line) from None
    if not isinstance(data, dict):
        raise MemrepoError("is not a mapping; fix it or move it away", PRE_COMMIT_CONFIG)
    repos = data.setdefault("repos", [])
    ids = {h.get("id") for r in repos if isinstance(r, dict) for h in r.get("hooks", [])}
    mine = yamlsafe.load(ours)
    missing = [h for r in mine["repos"] for h in r["hooks"] if h["id"] not in ids]
    if not missing:
        return None
    repos.append({"repo": "local", "hooks": missing})
    types = data.get("default_install_hook_types") or ["pre-commit"]
    data["default_install_hook_types"] = list(dict.fromkeys([*types, *HOOK_TYPES]))
    data.setdefault("minimum_pre_commit_version", mine["minimum_pre_commit_version"])
    return yamlsafe.dump(data)


def lay_down(root: Path, today: dt.date | None = None, runner: str | None = None) -> list[Action]:
    """Create what is missing; merge our lines into .gitignore and .gitattributes.

    ``runner`` (the hook runner asked for on the command line) goes into a new config, and
    replaces the setting in an existing one.
    """
    from memrepo.commit.merge import install_driver

    require_full_checkout(root, thorough=True)  # never a template over a file left out
    today = today or clock.today()
    actions = [Action("configured", "merge driver", d) for d in install_driver(root)]
    files = planned_files(today, runner)
    for rel, content in files.items():
        path = root / rel
        if path.exists() or path.is_symlink():
            text = path.read_text(encoding="utf-8", errors="replace")
            merged = None
            if rel in MERGED_LINE_FILES:
                merged = _merge_lines(text, content.decode())
            elif rel == PRE_COMMIT_CONFIG:
                merged = _merge_pre_commit_config(text, content.decode())
            elif (
                rel == CONFIG_FILE and runner and load_config(root)["git"]["hook_runner"] != runner
            ):
                merged = set_setting(text, "git", "hook_runner", runner)
            if merged is not None:
                atomic_write(path, merged)
                actions.append(Action("updated", rel, "added memrepo entries"))
            else:
                actions.append(Action("found", rel))
            continue
        atomic_write(path, content)
        actions.append(Action("created", rel))
    for rel in LAYOUT_DIRS:
        d = root / rel
        existed = d.is_dir()
        d.mkdir(parents=True, exist_ok=True)
        if rel != "scratch" and not any(d.iterdir()):
            (d / KEEP_FILE).write_bytes(b"")
            actions.append(Action("created", f"{rel}/{KEEP_FILE}"))
        elif not existed:
            actions.append(Action("created", f"{rel}/"))
    return actions


def was_initialised(root: Path) -> bool:
    """Whether HEAD already holds a memory repo (its config is committed): init then only
    restores missing files; otherwise this is the first commit of the layout, even in a
    repository that has other history."""
    if git.head(root) is None:
        return False
    probe = git.git(["cat-file", "-t", f"HEAD:{CONFIG_FILE}"], root, check=False).strip()
    return probe == "blob"


def commit(root: Path, actions: list[Action]) -> str | None:
    """Commit the files init created or updated (and nothing else); return the short sha."""
    # On an unborn branch (a first run whose commit failed, say) commit the whole layout.
    wanted = ("created", "updated", "found") if git.head(root) is None else ("created", "updated")
    paths = [
        a.path.rstrip("/")
        for a in actions
        if a.status in wanted
        and a.path not in (".git", "git hooks", "git identity")
        and not a.path.startswith("scratch")
        and (root / a.path).exists()
    ]
    if not paths:
        return None
    env = env_with_memory_on_path()
    git.git(["add", "--", *paths], root, env=env)
    staged = git.git(["diff", "--cached", "--name-only", "--", *paths], root).strip()
    if not staged and git.head(root) is not None:
        return None
    message = RESTORE_MESSAGE if was_initialised(root) else INIT_MESSAGE
    git.git(["commit", "-q", "-m", message, "--", *paths], root, env=env)
    return git.git(["rev-parse", "--short", "HEAD"], root).strip()
