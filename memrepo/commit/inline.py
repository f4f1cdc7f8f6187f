"""memrepo's own commits run memrepo's hooks in-process instead of through git.

``capture end``, ``memory commit``, extraction and condensation commit from inside a
``memory`` process that has the validators and the indexer at hand. Going through the
installed git hooks would start Python twice more and, with the pre-commit framework,
scan the whole work tree several times per commit (1.8 s at 100K files, see
bench/bench_commit.py). So when every installed hook is memrepo's own (the direct shims,
or pre-commit running a config of memrepo's local hooks only), the same checks run here
on the staged content, git commits with hooks off, and the index is brought up to date
here. Any other hook (a user's linter, a chained ``.legacy`` hook) means the real hooks
run instead: nothing a person installed is ever skipped.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from memrepo import git
from memrepo.commit import trees
from memrepo.errors import GitError, MemrepoError
from memrepo.hooks.install import PRE_COMMIT_CONFIG, runner_of

#: The entry every memrepo hook runs (repo-skeleton/dot-pre-commit-config.yaml).
MEMREPO_ENTRY = "memory hook "


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
    from memrepo import yamlsafe

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


def validate_staged(root: Path, rows: list[git.StagedRow] | None = None) -> None:
    """The pre-commit validators over the staged content; warnings to stderr, errors raised
    the way a refused hook reads (``path:line: error: message [check]`` lines)."""
    from memrepo.hooks.engine import run_checks
    from memrepo.hooks.pre_commit import CHECKS, staged_context

    paths, ctx = staged_context(root, rows)
    said = io.StringIO()
    if run_checks(CHECKS, paths, ctx, out=said):
        raise MemrepoError(f"the pre-commit checks refused the commit:\n{said.getvalue()}")
    sys.stderr.write(said.getvalue())  # warnings (MEMORY.md near its cap), as the hook shows


class HeadMoved(MemrepoError):
    """Another commit landed between reading HEAD and updating it: build on the new one."""


def plumbing_ok(root: Path) -> bool:
    """Whether a commit of ``root`` may be written here with plumbing: every installed hook
    is memrepo's, and nothing asks for ``git commit`` itself (see :func:`_needs_git_commit`)."""
    return only_memrepo_hooks(root) and not _needs_git_commit(root)


def commit(root: Path, message: str, rows: list[git.StagedRow] | None = None) -> None:
    """Commit the index with memrepo's hooks run here (see the module doc); ``rows``: what
    is staged, when the caller has just asked git."""
    validate_staged(root, rows)
    _commit_index(root, message)
    _after_commit(root)


def commit_tree(root: Path, message: str, prepared: trees.Prepared) -> None:
    """Commit a :func:`memrepo.commit.trees.prepare` result: the validators over its changes, the
    index set for its paths, the commit written on its parent, then the search index.

    Callers check :func:`plumbing_ok` first. The index is set before the commit, as
    ``git add`` would have; a refused commit leaves it untouched.
    """
    validate_staged(root, prepared.rows)
    trees.update_index(root, prepared)
    _write_commit(root, prepared.tree, prepared.parent, message, prepared.base_tree)
    _after_commit(root)


def _after_commit(root: Path) -> None:
    """What the post-commit hook does (the index never fails a commit; errors are logged)."""
    from memrepo.hooks.dispatch import run_git_event

    run_git_event(root, "post-commit")


def _needs_git_commit(root: Path) -> bool:
    """Signed commits, and a merge, cherry-pick or revert in progress (whose commit has
    more to it than one parent), go through ``git commit``."""
    signed = git.git(["config", "--type=bool", "--get", "commit.gpgsign"], root, check=False)
    gdir = git.git_dir(root)
    pending = any((gdir / f).exists() for f in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"))
    return signed.strip() == "true" or pending


def _commit_index(root: Path, message: str) -> None:
    """``git commit`` of the index, with plumbing: write-tree, commit-tree, update-ref.

    ``git commit`` first re-stats every tracked file (175 ms at 100K files) to refresh
    the index; the callers have just staged exactly what they commit, so the tree is
    written straight from the index.
    """
    if _needs_git_commit(root):  # git commit knows signing and merge parents
        no_hooks = ["-c", f"core.hooksPath={os.devnull}"]
        git.git([*no_hooks, "commit", "-q", "--no-verify", "-F", "-"], root, input=message)
        return
    _write_commit(root, git.git(["write-tree"], root).strip(), git.head(root), message)


def _write_commit(
    root: Path, tree: str, parent: str | None, message: str, parent_tree: str | None = None
) -> None:
    """commit-tree and update-ref (HEAD must still be ``parent``), as ``git commit`` would;
    ``parent_tree``: the parent's tree, when the caller has read it already."""
    if parent and parent_tree is None:
        parent_tree = git.git(["rev-parse", f"{parent}^{{tree}}"], root).strip()
    if parent and parent_tree == tree:
        raise MemrepoError("nothing to commit: the index is the same as HEAD")
    text = git.git(["stripspace"], root, input=message)
    sha = git.git(["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"], root,
                  input=text).strip()
    subject = text.split("\n", 1)[0]
    what = "commit" if parent else "commit (initial)"
    try:
        git.git(["update-ref", "-m", f"{what}: {subject}", "HEAD", sha, parent or ""], root)
    except GitError:
        if git.head(root) != parent:
            raise HeadMoved(f"HEAD moved while committing (another commit landed first): "
                            f"{subject}") from None
        raise
    git.git(["maintenance", "run", "--auto", "--quiet"], root, check=False)  # as commit does
