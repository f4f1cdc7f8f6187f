"""What-if branches (seed 000 §3.3): ``explore/NAME``, each in a worktree of its own.

An agent or a person tries a scenario (topics reorganised, knowledge rewritten under a
hypothesis, another extraction) without touching ``main``: ``memory explore start NAME``
branches off and checks the branch out in ``<git-dir>/memrepo/explore/NAME``, a memory
repo like any other (its own index, the same git hooks). ``merge`` keeps it (a ``--no-ff``
merge, memrepo's merge driver for the journals); ``drop`` throws it away, its tip tagged
``memory/before/delete-explore-NAME`` first when it was never merged. ``memory prune
--apply`` drops the ones older than ``lifecycle.explore_branch_days`` the same way.

Nothing uncommitted is ever lost: a worktree with changes is not removed unless asked
(``--force``), and prune keeps such a branch and says so.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

from memrepo.config import load_config
from memrepo.errors import GitError, MemrepoError
from memrepo.git import git
from memrepo.index.paths import state_dir

PREFIX = "explore/"
#: A scenario's name: one lower-case path component (it names a branch and a folder).
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


@dataclass
class Branch:
    name: str  # explore/NAME
    date: dt.date  # its last commit's
    merged: bool  # into the current branch
    path: str | None = None  # its worktree, when one has it checked out
    ahead: int = 0  # commits the current branch does not have


def check_name(name: str) -> str:
    """``name`` when it can name a scenario, else MemrepoError saying what can."""
    if not NAME.match(name) or ".." in name or name.endswith((".", ".lock")):
        raise MemrepoError(f"explore name {name!r}: use 1-63 lower-case letters, digits, "
                           "'.', '-' or '_', starting with a letter or digit")
    return name


def worktree_path(root: Path, name: str) -> Path:
    """Where ``explore/NAME`` is checked out: under the clone's state folder in its
    common git dir (never inside the memory's own files)."""
    common = Path(git(["rev-parse", "--path-format=absolute", "--git-common-dir"], root)
                  .strip())
    return state_dir(common) / "explore" / name


def start(root: Path, name: str, base: str = "HEAD") -> Path:
    """Branch ``explore/NAME`` off ``base`` and check it out in its worktree; its path."""
    branch = PREFIX + check_name(name)
    if git(["branch", "--list", branch], root).strip():
        raise MemrepoError(f"{branch} exists: `memory explore list` shows where it is "
                           "checked out; merge or drop it first")
    path = worktree_path(root, name)
    if path.exists():
        raise MemrepoError(f"{path} exists and is not {branch}'s worktree: remove it first")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        git(["worktree", "add", "-q", "-b", branch, str(path), base], root)
    except GitError as exc:
        raise MemrepoError(f"cannot start {branch} from {base}: {exc}") from None
    return path


def worktrees(root: Path) -> dict[str, str]:
    """branch (short name) -> the path of the worktree that has it checked out."""
    out: dict[str, str] = {}
    path = None
    for line in git(["worktree", "list", "--porcelain"], root).splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree "):]
        elif line.startswith("branch refs/heads/") and path is not None:
            out[line[len("branch refs/heads/"):]] = path
    return out


def branches(root: Path) -> list[Branch]:
    """Every ``explore/*`` branch, oldest first."""
    out = git(["for-each-ref", "--sort=committerdate",
               "--format=%(refname:short) %(committerdate:short)", "refs/heads/" + PREFIX],
              root)
    merged = set(git(["branch", "--format=%(refname:short)", "--merged", "HEAD"], root).split())
    where = worktrees(root)
    found = []
    for line in out.splitlines():
        name, _, date = line.partition(" ")
        ahead = int(git(["rev-list", "--count", f"HEAD..{name}"], root).strip() or 0)
        found.append(Branch(name, dt.date.fromisoformat(date), name in merged,
                            where.get(name), ahead))
    return found


def days_left(root: Path, b: Branch, today: dt.date) -> int:
    """Days before ``memory prune --apply`` drops ``b`` (negative: the next one does)."""
    return int(load_config(root)["lifecycle"]["explore_branch_days"]) - (today - b.date).days


def old(root: Path, today: dt.date) -> list[Branch]:
    """The ``explore/*`` branches whose last commit is older than the config's limit."""
    return [b for b in branches(root) if days_left(root, b, today) < 0]


def find(root: Path, name: str) -> Branch:
    branch = PREFIX + check_name(name.removeprefix(PREFIX))
    for b in branches(root):
        if b.name == branch:
            return b
    raise MemrepoError(f"no branch {branch} (`memory explore list` shows them)")


def uncommitted(b: Branch) -> list[str]:
    """The changes in ``b``'s worktree that no commit holds (``git status`` lines)."""
    if b.path is None or not Path(b.path).is_dir():
        return []
    return git(["status", "--porcelain"], Path(b.path)).splitlines()


def merge(root: Path, name: str) -> str:
    """Merge ``explore/NAME`` into the current branch (``--no-ff``), then remove its
    worktree and the branch; the merge commit. Refused while its worktree holds
    uncommitted changes, or when the merge conflicts (aborted: nothing changed)."""
    b = find(root, name)
    if b.path is not None and Path(b.path).resolve() == Path(root).resolve():
        raise MemrepoError(f"{b.name} is checked out here: run merge from the main worktree")
    if changes := uncommitted(b):
        raise MemrepoError(f"{b.path} has uncommitted changes ({len(changes)}): commit them "
                           f"there (`memory commit`) or drop the scenario with --force")
    try:
        git(["merge", "--no-ff", "-q", "-m", f"explore: merge {b.name}", b.name], root)
    except GitError as exc:
        conflicts = git(["diff", "--name-only", "--diff-filter=U"], root, check=False).split()
        git(["merge", "--abort"], root, check=False)
        raise MemrepoError(f"merging {b.name} conflicts in {', '.join(conflicts) or exc}: "
                           "nothing was changed; resolve in its worktree (`git merge` the "
                           "current branch there) and merge again") from None
    sha = git(["rev-parse", "HEAD"], root).strip()
    remove(root, [Branch(b.name, b.date, True, b.path, 0)], force=True)
    return sha


def remove(root: Path, found: list[Branch], *, force: bool = False,
           why: str = "memory explore drop") -> list[str]:
    """Remove each branch and its worktree, tagging an unmerged tip first so no commit
    becomes unreachable; what was done, a line each. A worktree with uncommitted changes
    is kept (and said) unless ``force``."""
    done = []
    for b in found:
        if b.path is not None and not force and (changes := uncommitted(b)):
            done.append(f"kept {b.name}: {len(changes)} uncommitted change(s) in {b.path}")
            continue
        if not b.merged:
            tag = f"memory/before/delete-{b.name.replace('/', '-')}"
            git(["tag", "-a", "-f", tag, b.name, "-m", f"{b.name} before {why}"], root)
            done.append(f"tagged {tag}")
        if b.path is not None:
            git(["worktree", "remove", "--force", b.path], root)
            done.append(f"removed {b.path}")
        git(["branch", "-D", b.name], root)
        done.append(f"deleted {b.name}")
    return done
