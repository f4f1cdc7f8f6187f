"""``memory init [PATH]``: scaffold a memory repo, install its hooks, make the first commit."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from memrepo import git, scaffold
from memrepo.config import load_config
from memrepo.hooks import install
from memrepo.index.indexer import sync
from memrepo.index.paths import db_path


@click.command()
@click.argument("path", default=".", type=click.Path(file_okay=False))
@click.option("--no-hooks", is_flag=True, help="Lay down the files but install no git hooks.")
@click.option("--no-commit", is_flag=True, help="Leave the new files uncommitted.")
@click.option(
    "--hooks",
    "runner",
    type=click.Choice(install.RUNNERS),
    help="How git runs the hooks (saved as git.hook_runner): direct shims that name this "
    "Python and cost what the commit changes (default for a new repo), or the pre-commit "
    "framework (its hooks find `memory` on PATH). An existing repo keeps its setting "
    "unless this is given.",
)
@click.option("--json", "as_json", is_flag=True, help="Report the steps as JSON.")
def init(path: str, no_hooks: bool, no_commit: bool, runner: str | None, as_json: bool) -> int:
    """Scaffold a memory repo at PATH (default: the current directory).

    Runs `git init` when PATH is not a repository, lays down the layout, identity files,
    MEMORY.md, an example topic, memory-config.yaml, .gitignore, .gitattributes and the
    pre-commit config, installs the git hooks and commits. Safe to run again: existing
    files are never overwritten, and a second run changes nothing.
    """
    root = Path(path).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    actions: list[scaffold.Action] = []
    created_repo = scaffold.ensure_git_repo(root)
    if created_repo:
        actions.append(created_repo)
    identity = scaffold.ensure_identity(root)
    if identity:
        actions.append(identity)
    actions += scaffold.lay_down(root, runner=runner)
    if not no_hooks:
        runner = load_config(root)["git"]["hook_runner"]
        status, detail = install.install_hooks(root, runner)
        actions.append(scaffold.Action(status, "git hooks", detail))
    sha = None if no_commit else scaffold.commit(root, actions)
    index_note = None if no_commit else _first_index(root)
    on_path = install.memory_on_path()
    if as_json:
        report = {
            "root": str(root),
            "actions": [asdict(a) for a in actions],
            "commit": sha,
            "index": index_note,
            "memory_on_path": on_path,
        }
        click.echo(json.dumps(report, indent=2))
        return 0
    changed = [a for a in actions if a.status != "found"]
    found = [a for a in actions if a.status == "found"]
    for a in changed:
        click.echo(f"{a.status:<9} {a.path}" + (f"  ({a.detail})" if a.detail else ""))
    if found:
        click.echo(
            f"found     {len(found)} existing item(s), left as they were: "
            + ", ".join(a.path for a in found)
        )
    if sha:
        click.echo(f"committed {sha}")
    if index_note:
        click.echo(index_note)
    if not changed:
        click.echo(f"{root} is already a memory repo; nothing changed.")
    else:
        click.echo(f"memory repo ready at {root}")
    for line in [] if no_hooks else _hook_warnings(root, on_path):
        click.echo(f"warning: {line}", err=True)
    return 0


def _hook_warnings(root: Path, on_path: str | None) -> list[str]:
    """What the installed hooks will not do: find `memory` (the pre-commit runner), or
    run the other hooks of a .pre-commit-config.yaml (the direct runner)."""
    runner = load_config(root)["git"]["hook_runner"]
    if runner == "pre-commit":
        if on_path is None:
            return ["`memory` is not on PATH, so the pre-commit runner's hooks will fail; "
                    "add memrepo's bin/ to PATH for good, or use `memory init --hooks "
                    "direct` (see `memory doctor`)."]
        return []
    others = install.other_pre_commit_hooks(root)
    hooks = git.hooks_dir(root)
    if others and not (hooks / f"pre-commit{install.CHAIN_SUFFIX}").is_file():
        return [f"{install.PRE_COMMIT_CONFIG} has hooks that are not memrepo's "
                f"({', '.join(others)}), which the direct runner does not run: "
                "`pre-commit install` then `memory doctor --fix` runs them first, "
                "or use `memory init --hooks pre-commit`."]
    return []


#: A first index is built by init up to this many tracked files; past it, a minute or more
#: of indexing is left to an explicit ``memory index`` (the git hooks keep it current after).
INIT_INDEX_MAX_FILES = 5000


def _first_index(root: Path) -> str | None:
    """Build memory.db when there is none, so that the hooks keep it current from now on
    (they never build a first index: a commit must not wait minutes)."""
    if db_path(root).exists() or git.head(root) is None:
        return None
    files = git.tracked_count(root)
    if files > INIT_INDEX_MAX_FILES:
        return f"{files:,} files: run 'memory index' to build the search index"
    try:
        search = load_config(root)["search"]
        res = sync(root, embedder_name=search["embedder"], replies=search["reply_vectors"])
    except Exception as exc:  # init has done its job; the doctor reports the index
        return f"search index not built ({exc}); run 'memory index'"
    return f"indexed {res.files} files into memory.db" if res is not None else None

