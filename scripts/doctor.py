"""``memory doctor``: is this memory repo healthy, and what to do when it is not."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from dataclasses import asdict

import click

from memrepo import git, scaffold
from memrepo.doctor import PROVIDERS, Check
from memrepo.errors import MemrepoError
from memrepo.layout import LAYOUT_DIRS
from memrepo.repo import MemoryRepo, discover


def _config_check(repo: MemoryRepo) -> Check:
    try:
        repo.config  # noqa: B018 - loading validates
    except MemrepoError as exc:
        return Check("config", False, str(exc), "fix memory-config.yaml (see `memory config show`)")
    return Check("config", True, "memory-config.yaml is valid")


def _layout_check(repo: MemoryRepo) -> Check:
    missing = [d for d in LAYOUT_DIRS if not (repo.root / d).is_dir()]
    missing += [p for p in scaffold.KNOWLEDGE_TEMPLATES.values() if not (repo.root / p).is_file()]
    if missing:
        return Check("layout", False, "missing: " + ", ".join(missing), "memory doctor --fix")
    return Check("layout", True, "directories and core files present")


def _hooks_check(repo: MemoryRepo) -> Check:
    if git.toplevel(repo.root) is None:
        return Check("git hooks", False, "not a git repository", "memory init")
    runner = _runner(repo)
    status = scaffold.hooks_status(repo.root, runner)
    bad = {k: v for k, v in status.items() if v != "ok"}
    if bad:
        detail = ", ".join(f"{k}: {v}" for k, v in bad.items())
        return Check("git hooks", False, detail, "memory doctor --fix")
    cfg = repo.root / scaffold.PRE_COMMIT_CONFIG
    text = cfg.read_text(encoding="utf-8") if cfg.is_file() else ""
    if runner == "pre-commit" and "memory hook pre-commit" not in text:
        return Check(
            "git hooks",
            False,
            f"{scaffold.PRE_COMMIT_CONFIG} lacks the memrepo hooks",
            "memory doctor --fix",
        )
    how = "through pre-commit" if runner == "pre-commit" else "as direct shims"
    return Check("git hooks", True, f"installed {how}: " + ", ".join(status))


#: From this many tracked files on, the pre-commit framework's own work-tree scans cost
#: more than the validators (bench/bench_commit.py: 0.4 s per commit at 10K, 1 s at 100K).
BIG_REPO_FILES = 20_000


def _runner_advice(repo: MemoryRepo) -> list[Check]:
    """A warning, never a failure: a big repo committing through the pre-commit framework."""
    if _runner(repo) != "pre-commit" or git.toplevel(repo.root) is None:
        return []
    n = git.tracked_count(repo.root)
    if n < BIG_REPO_FILES:
        return []
    return [Check(
        "hook runner", False,
        f"{n:,} tracked files: the pre-commit framework scans them all several times per "
        "commit; the direct runner costs what the commit changes",
        "memory init --hooks direct", warning=True,
    )]


def _runner(repo: MemoryRepo) -> str:
    try:
        return repo.config["git"]["hook_runner"]
    except MemrepoError:  # an invalid config is its own failed check
        return "pre-commit"


def _memory_on_path_check() -> Check:
    exe = scaffold.memory_on_path()
    if exe is None:
        return Check(
            "memory on PATH",
            False,
            "the hooks call `memory`, which is not on PATH",
            "activate the environment memrepo is installed in, or add its bin/ to PATH",
        )
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        return Check("memory on PATH", False, f"{exe} does not run: {proc.stderr.strip()}")
    return Check("memory on PATH", True, f"{exe} ({proc.stdout.strip()})")


def _lfs_check(repo: MemoryRepo) -> Check:
    proc = (
        subprocess.run(["git", "lfs", "version"], capture_output=True, text=True, cwd=repo.root)
        if shutil.which("git")
        else None
    )
    if proc is None or proc.returncode != 0:
        return Check(
            "git lfs",
            False,
            "git-lfs is not installed: attachments/ will be stored as ordinary git blobs",
            "install git-lfs, then `git lfs install`",
            warning=True,
        )
    return Check("git lfs", True, proc.stdout.strip())


def foundation_checks(repo: MemoryRepo) -> list[Check]:
    return [
        _config_check(repo),
        _layout_check(repo),
        _hooks_check(repo),
        *_runner_advice(repo),
        _memory_on_path_check(),
        _lfs_check(repo),
    ]


def run_checks(repo: MemoryRepo) -> list[Check]:
    """Every provider's checks; a provider that crashes is itself a failed check."""
    checks: list[Check] = []
    for spec in PROVIDERS:
        module, attr = spec.split(":")
        try:
            checks += getattr(importlib.import_module(module), attr)(repo)
        except ImportError:
            continue  # an optional part that is not installed
        except Exception as exc:  # a broken check must not hide the others
            checks.append(Check(spec, False, f"check crashed: {exc!r}"))
    return checks


def fix(repo: MemoryRepo) -> tuple[list[str], list[str]]:
    """Re-run the idempotent parts of init (missing files and directories, the hooks),
    close sessions a crashed agent left open and bring the index to HEAD; (what was fixed,
    what could not be)."""
    from memrepo.scripts.capture import close_stale_sessions

    done = [f"{a.status} {a.path}" for a in scaffold.lay_down(repo.root) if a.status != "found"]
    action = scaffold.install_hooks(repo.root, _runner(repo))
    if action.status != "found":
        done.append(f"{action.status} {action.path} ({action.detail})")
    failed = []
    for ok, line in close_stale_sessions(repo):
        (done if ok else failed).append(line)
    try:  # the index: brought to HEAD (rebuilt when its schema or embedder is not current)
        from memrepo.index.indexer import sync

        res = sync(repo.root, embedder_name=repo.config["search"]["embedder"])
        if res is not None and res.mode != "noop":
            done.append(f"index {res.mode} at {(res.commit or 'no commit')[:12]}")
    except ImportError:
        pass
    except Exception as exc:  # reported, like any other repair that failed
        failed.append(f"index: {exc}")
    return done, failed


@click.command()
@click.option("--fix", "do_fix", is_flag=True, help="Repair what can be repaired, then check.")
@click.option("--json", "as_json", is_flag=True, help="Report as JSON.")
@click.pass_context
def doctor(ctx: click.Context, do_fix: bool, as_json: bool) -> int:
    """Check the memory repo: config, layout, hooks, `memory` on PATH, git LFS (and the index).

    --fix also closes and commits sessions left open with no append for a day (a crashed
    agent), as `memory capture end` would. Exit status 0 when healthy (warnings allowed),
    1 otherwise.
    """
    repo = discover(ctx.obj.get("repo") if ctx.obj else None)
    fixed, not_fixed = fix(repo) if do_fix else ([], [])
    checks = run_checks(repo)
    healthy = all(c.ok or c.warning for c in checks)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "root": str(repo.root),
                    "healthy": healthy,
                    "fixed": fixed,
                    "not_fixed": not_fixed,
                    "checks": [asdict(c) for c in checks],
                },
                indent=2,
            )
        )
        return 0 if healthy else 1
    for line in fixed:
        click.echo(f"fixed: {line}")
    for line in not_fixed:
        click.echo(f"not fixed: {line}")
    for c in checks:
        mark = "ok  " if c.ok else ("warn" if c.warning else "FAIL")
        click.echo(f"[{mark}] {c.name}: {c.detail}")
        if not c.ok and c.fix:
            click.echo(f"       fix: {c.fix}")
    click.echo("healthy" if healthy else "unhealthy")
    return 0 if healthy else 1
