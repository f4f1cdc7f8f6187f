"""``memory doctor``: is this memory repo healthy, and the repairs of ``--fix``.

The checks are a plain list, :data:`CHECKS`: the foundation (config, layout, hooks,
``memory`` on PATH, git LFS), the sessions a crashed agent left open
(:func:`memrepo.transcript.capture.health_checks`), the index
(:func:`memrepo.index.health.checks`) and the agent hooks' failures
(:func:`memrepo.agents.state.health_checks`: they fail open, so only their log says
so) and the agents' settings (:func:`memrepo.agents.install.health_checks`: each installed
integration runs a ``memory`` that runs, on a repo that exists, once). Each returns
:class:`~memrepo.health.Check` lines.
"""

from __future__ import annotations

import shutil
import subprocess

from memrepo import git, scaffold
from memrepo.agents import install as agent_install
from memrepo.agents import state as agent_state
from memrepo.errors import MemrepoError
from memrepo.health import Check, CheckFn
from memrepo.hooks import install
from memrepo.index import health as index_health
from memrepo.index.indexer import sync
from memrepo.layout import LAYOUT_DIRS
from memrepo.repo import MemoryRepo
from memrepo.transcript import capture


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
    status = install.hooks_status(repo.root, runner)
    bad = {k: v for k, v in status.items() if v != "ok"}
    if bad:
        detail = ", ".join(f"{k}: {v}" for k, v in bad.items())
        return Check("git hooks", False, detail, "memory doctor --fix")
    cfg = repo.root / install.PRE_COMMIT_CONFIG
    text = cfg.read_text(encoding="utf-8") if cfg.is_file() else ""
    if runner == "pre-commit" and "memory hook pre-commit" not in text:
        return Check(
            "git hooks",
            False,
            f"{install.PRE_COMMIT_CONFIG} lacks the memrepo hooks",
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
    exe = install.memory_on_path()
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


#: Every check, in report order (foundation first).
CHECKS: list[CheckFn] = [foundation_checks, capture.health_checks, index_health.checks,
                         agent_state.health_checks, agent_install.health_checks]


def run_checks(repo: MemoryRepo) -> list[Check]:
    """Every check's lines; a check that crashes is itself a failed check."""
    checks: list[Check] = []
    for check in CHECKS:
        try:
            checks += check(repo)
        except Exception as exc:  # a broken check must not hide the others
            name = f"{check.__module__}:{check.__name__}"
            checks.append(Check(name, False, f"check crashed: {exc!r}"))
    return checks


def fix(repo: MemoryRepo) -> tuple[list[str], list[str]]:
    """Re-run the idempotent parts of init (missing files and directories, the hooks),
    close sessions a crashed agent left open and bring the index to HEAD; (what was fixed,
    what could not be)."""
    done = [f"{a.status} {a.path}" for a in scaffold.lay_down(repo.root) if a.status != "found"]
    status, detail = install.install_hooks(repo.root, _runner(repo))
    if status != "found":
        done.append(f"{status} git hooks ({detail})")
    failed = []
    for ok, line in capture.close_stale_sessions(repo):
        (done if ok else failed).append(line)
    try:  # the index: brought to HEAD (rebuilt when its schema or embedder is not current)
        res = sync(repo.root, embedder_name=repo.config["search"]["embedder"])
        if res is not None and res.mode != "noop":
            done.append(f"index {res.mode} at {(res.commit or 'no commit')[:12]}")
    except Exception as exc:  # reported, like any other repair that failed
        failed.append(f"index: {exc}")
    return done, failed
