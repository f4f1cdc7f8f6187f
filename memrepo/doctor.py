"""``memory doctor``: is this memory repo healthy, and the repairs of ``--fix``.

The checks are a plain list, :data:`CHECKS`: the foundation (config, layout, hooks,
``memory`` on PATH, git LFS), the sessions a crashed agent left open
(:func:`memrepo.transcript.recovery.health_checks`), the index
(:func:`memrepo.index.health.checks`) and the agent hooks' failures
(:func:`memrepo.agents.state.health_checks`: they fail open, so only their log says
so) and the agents' settings (:func:`memrepo.agents.install.health_checks`: each installed
integration runs a ``memory`` that runs, on a repo that exists, once). Each returns
:class:`~memrepo.health.Check` lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from memrepo import git, private, scaffold, worktree, yamlsafe
from memrepo.agents import install as agent_install
from memrepo.agents import plugin_installs
from memrepo.agents import state as agent_state
from memrepo.atomic import TMP_GRACE, atomic_write, leftover_tmp_files
from memrepo.commit import person, remotes, shared
from memrepo.config import IGNORED_KEYS
from memrepo.context import scopes
from memrepo.context.watchers.feedback import judge_ended
from memrepo.documents import (
    count_lines,
    stated_line_count,
    unclosed_comment,
    with_line_count,
)
from memrepo.errors import MemrepoError
from memrepo.health import Check, CheckFn
from memrepo.hooks import install
from memrepo.index import health as index_health
from memrepo.index.indexer import sync
from memrepo.layout import CONFIG_FILE, LAYOUT_DIRS, MEMORY_FILE, STATE_DIR
from memrepo.lifecycle.journal import LOCK_FILE, LOCK_WAIT
from memrepo.locks import LockBusy, file_lock
from memrepo.repo import MemoryRepo
from memrepo.transcript import recovery


def _config_check(repo: MemoryRepo) -> Check:
    try:
        repo.config  # noqa: B018 - loading validates
    except MemrepoError as exc:
        return Check("config", False, str(exc), "fix memory-config.yaml (see `memory config show`)")
    ignored = _ignored_keys(repo)
    if ignored:
        return Check("config", True, "memory-config.yaml is valid; ignored: " + "; ".join(
            f"{k} ({why})" for k, why in ignored.items()))
    return Check("config", True, "memory-config.yaml is valid")


def _ignored_keys(repo: MemoryRepo) -> dict[str, str]:
    """The keys of the config file memrepo accepts but never reads (config.IGNORED_KEYS)."""
    try:
        data = yamlsafe.load((repo.root / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, MemrepoError, yamlsafe.YAMLProblem):
        return {}
    found = {}
    for key, why in IGNORED_KEYS.items():
        section, name = key.split(".")
        if isinstance(data, dict) and isinstance(data.get(section), dict) \
                and name in data[section]:
            found[key] = why
    return found


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
#: more than the validators (bench/perf/bench_commit.py times each hook runner).
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
        return install.DEFAULT_RUNNER


def _hooks_run_check(repo: MemoryRepo) -> list[Check]:
    """Each installed direct shim run as git runs it (repo root, PATH=/usr/bin:/bin, no
    virtualenv) with MEMREPO_HOOK_PROBE: a deleted venv or a memrepo gone from it fails
    here instead of on the next commit."""
    if git.toplevel(repo.root) is None or _runner(repo) != "direct":
        return []
    failed = {k: v for k, v in install.probe_hooks(repo.root).items() if v}
    if failed:
        detail = "; ".join(f"{k}: {v}" for k, v in failed.items())
        return [Check("git hooks run", False, f"as git runs them (PATH={install.MINIMAL_PATH}):"
                      f" {detail}", "memory doctor --fix (from a memrepo install that runs)")]
    return [Check("git hooks run", True,
                  f"each hook starts memrepo with PATH={install.MINIMAL_PATH}")]


def _pre_commit_config_advice(repo: MemoryRepo) -> list[Check]:
    """The direct runner does not read .pre-commit-config.yaml: other hooks listed there
    run only when the pre-commit framework's git hook is chained (a warning otherwise)."""
    if _runner(repo) != "direct" or git.toplevel(repo.root) is None:
        return []
    others = install.other_pre_commit_hooks(repo.root)
    if not others:
        return []
    hooks = git.hooks_dir(repo.root)
    chained = [k for k in install.HOOK_TYPES
               if (hooks / (k + install.CHAIN_SUFFIX)).is_file()
               and install.runner_of((hooks / (k + install.CHAIN_SUFFIX)).read_text(
                   encoding="utf-8", errors="replace")) == "pre-commit"]
    ids = ", ".join(others)
    if chained:
        return [Check("other pre-commit hooks", True,
                      f"{ids} run first, through the pre-commit framework chained at "
                      + ", ".join(chained))]
    return [Check(
        "other pre-commit hooks", False,
        f"{install.PRE_COMMIT_CONFIG} lists hooks that are not memrepo's ({ids}); the direct "
        "runner does not run them",
        "`pre-commit install` then `memory doctor --fix` (memrepo chains the framework and "
        "runs it first), or `memory init --hooks pre-commit`", warning=True,
    )]


def _memory_on_path_check(runner: str = "pre-commit") -> Check:
    """The pre-commit runner's hooks run `memory` from the PATH git inherits; the direct
    runner's do not need it (a warning then: the command line does)."""
    exe = install.memory_on_path()
    if exe is None:
        if runner == "direct":
            return Check("memory on PATH", True, "not on PATH (the direct hooks do not need "
                         "it; `python -m memrepo` works as the command too)")
        return Check(
            "memory on PATH",
            False,
            "the pre-commit runner's hooks call `memory`, which is not on PATH",
            "memory init --hooks direct (hooks that name their Python), or add memrepo's "
            "bin/ to PATH for good",
        )
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        return Check("memory on PATH", False, f"{exe} does not run: {proc.stderr.strip()}")
    venv = os.environ.get("VIRTUAL_ENV")
    if runner == "pre-commit" and venv and Path(exe).parent == Path(venv) / "bin":
        return Check(
            "memory on PATH", False,
            f"{exe} is on PATH only because its virtualenv is active: git runs the hooks "
            "with your shell's PATH, so a shell without it fails every commit",
            "memory init --hooks direct, or put memrepo's bin/ on PATH for good",
            warning=True,
        )
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
        *_hooks_run_check(repo),
        *_pre_commit_config_advice(repo),
        *_runner_advice(repo),
        _memory_on_path_check(_runner(repo)),
        _lfs_check(repo),
    ]


def leftover_tmp_checks(repo: MemoryRepo) -> list[Check]:
    """Temp files of atomic writes a killed process left (transcripts, knowledge files,
    ``memory.db``): older than a grace period and not owned by a live process."""
    left = [p.relative_to(repo.root).as_posix() for p in leftover_tmp_files(repo.root)]
    if not left:
        return [Check("leftover temp files", True, "none")]
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    return [Check("leftover temp files", False,
                  f"{len(left)} *.tmp file(s) of interrupted writes, older than "
                  f"{TMP_GRACE / 60:g} min: {shown}", "memory doctor --fix (removes them)",
                  warning=True)]


def index_lock_checks(repo: MemoryRepo) -> list[Check]:
    """git's index.lock left by a memrepo commit that was killed: every git command that
    writes the index (a person's ``git add``, ``git commit``) fails until it is gone."""
    left = person.left_by_killed(repo.root)
    if left is None:
        return [Check("git index lock", True, "not left by a killed memrepo")]
    return [Check("git index lock", False,
                  f"{left} was left by a memrepo commit that was killed: git refuses to "
                  "write the index until it is removed",
                  "memory doctor --fix (removes it; the next memrepo commit does too)")]


def link_checks(repo: MemoryRepo) -> list[Check]:
    """Links and special files in the memory's own folders: commits refuse them, search
    and the compiler skip them, writers and capture stop at them (memrepo.worktree)."""
    tops = (*dict.fromkeys(d.split("/")[0] for d in LAYOUT_DIRS if d != "scratch"),
            STATE_DIR, CONFIG_FILE)
    found = worktree.irregular(repo.root, tops)
    if not found:
        return [Check("links in the work tree", True, "none")]
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return [Check("links in the work tree", False,
                  f"{len(found)} symlink(s) or special file(s), never read or written "
                  f"through (search skips them; writers and capture stop at them): {shown}",
                  "replace each link with the file or folder it points to, or remove it")]


def merge_driver_checks(repo: MemoryRepo) -> list[Check]:
    """memrepo's merge driver for knowledge files: defined in this clone's git config
    with an interpreter that exists, and named by .gitattributes. Without it a `git pull`
    stops on every pair of bullets two clones appended (`memory sync` defines it for its
    own rebase, so only merges run by hand miss it: a warning)."""
    from memrepo.commit import merge

    if git.toplevel(repo.root) is None:
        return []
    command = merge.configured(repo.root)
    if command is not None and not merge.driver_runs(command):
        return [Check("merge driver", False, f"{merge.DRIVER_KEY} names an interpreter that "
                      f"is gone ({command}): every merge of a knowledge file would stop",
                      "memory doctor --fix")]
    attr = merge.attribute_of(repo.root, "knowledge/memory/MEMORY.md")
    if command is None or attr != merge.NAME:
        what = (f"{merge.DRIVER_KEY} is not set in this clone" if command is None else
                f".gitattributes gives knowledge files merge={attr}, not merge={merge.NAME}")
        return [Check("merge driver", False, f"{what}: merges outside `memory sync` (git "
                      "pull, git rebase) stop on bullets both sides added",
                      "memory doctor --fix", warning=True)]
    return [Check("merge driver", True, f"knowledge files merge with {command}")]


def _line_count_problem(repo: MemoryRepo) -> tuple[str, str] | None:
    """(what is wrong, the corrected text) when MEMORY.md's ``line_count`` is missing or
    differs from its lines; None when it is right (or there is no MEMORY.md with
    frontmatter to keep it in)."""
    try:
        text = worktree.read_file(repo.root, MEMORY_FILE).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # missing or a link (the links check says so), or not UTF-8 (the
        # frontmatter check reports it)
    fixed = with_line_count(text)
    if fixed == text:
        return None
    present, value = stated_line_count(text)
    lines = count_lines(fixed)
    if not present:
        why = f"{MEMORY_FILE} has no line_count in its frontmatter ({lines} lines)"
    elif value is None:
        why = f"{MEMORY_FILE}: line_count is not a whole number (the file has {lines} lines)"
    else:
        why = f"{MEMORY_FILE}: line_count says {value}, the file has {lines} lines"
    return why, fixed


def memory_line_count_checks(repo: MemoryRepo) -> list[Check]:
    """MEMORY.md states its size (``line_count``, seed 000 §2.2); memrepo's writers keep it,
    a hand edit may not: a warning, never a failure (the cap counts the file itself)."""
    problem = _line_count_problem(repo)
    if problem is None:
        return [Check("MEMORY.md line_count", True, "matches the file")]
    return [Check("MEMORY.md line_count", False, problem[0],
                  "memory doctor --fix (sets it; commit with memory commit)", warning=True)]


def remote_checks(repo: MemoryRepo) -> list[Check]:
    """What guards each remote on the server side (memrepo.commit.remotes): a warning for
    one only the local hooks guard, which a `--no-verify` push walks past."""
    out = []
    for name in git.git(["remote"], repo.root).split():
        p = remotes.protection(repo.root, name)
        out.append(Check(f"remote {name}", p.ok, p.detail,
                         None if p.ok else f"memory remote protect {name}", warning=True))
    return out


def memory_comment_checks(repo: MemoryRepo) -> list[Check]:
    """A ``<!--`` never closed in MEMORY.md hides every later line in any Markdown view
    (the briefing shows them; the commit refuses the file)."""
    try:
        lines = worktree.read_file(repo.root, MEMORY_FILE).decode("utf-8", "replace")
    except OSError:
        return []
    opened = unclosed_comment(lines.split("\n"))
    if opened is None:
        return [Check("MEMORY.md comments", True, "every <!-- is closed")]
    return [Check("MEMORY.md comments", False,
                  f"{MEMORY_FILE}:{opened + 1}: this <!-- is never closed: every line after "
                  "it is hidden", "close it with --> or remove it, then memory commit")]


def _fix_line_count(repo: MemoryRepo) -> list[str]:
    """Doctor --fix: MEMORY.md's ``line_count`` set right (written under the lock every
    writer of knowledge files takes, not committed)."""
    with file_lock(repo.root / LOCK_FILE, wait=LOCK_WAIT, poll=0.005):
        problem = _line_count_problem(repo)
        if problem is None:
            return []
        atomic_write(repo.root / MEMORY_FILE, problem[1], root=repo.root)
    return [f"set line_count in {MEMORY_FILE} ({problem[0]})"]


#: Every check, in report order (foundation first).
CHECKS: list[CheckFn] = [foundation_checks, recovery.health_checks, index_health.checks,
                         agent_state.health_checks, agent_install.health_checks,
                         plugin_installs.health_checks,
                         leftover_tmp_checks, index_lock_checks, link_checks, merge_driver_checks,
                         memory_line_count_checks, memory_comment_checks, remote_checks,
                         scopes.health_checks, private.health_checks, shared.health_checks]


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


def _remove_leftover_tmp(repo: MemoryRepo) -> list[str]:
    """Doctor --fix: remove the temp files :func:`leftover_tmp_checks` reports."""
    out = []
    for path in leftover_tmp_files(repo.root):
        path.unlink(missing_ok=True)
        out.append(f"removed {path.relative_to(repo.root).as_posix()}")
    return out


def fix(repo: MemoryRepo) -> tuple[list[str], list[str]]:
    """Re-run the idempotent parts of init (missing files and directories, the hooks),
    close sessions a crashed agent left open and bring the index to HEAD; (what was fixed,
    what could not be)."""
    done = [f"{a.status} {a.path}" for a in scaffold.lay_down(repo.root) if a.status != "found"]
    status, detail = install.install_hooks(repo.root, _runner(repo))
    if status != "found":
        done.append(f"{status} git hooks ({detail})")
    rewritten = install.rewrite_failing_shims(repo.root)
    if rewritten:
        done.append(f"rewrote git hooks for {sys.executable}: {', '.join(rewritten)}")
    failed = []
    # torn sessions repaired before stale ones are closed; each closed one's topics judged
    for ok, line in recovery.repair_sessions(repo, after_end=judge_ended):
        (done if ok else failed).append(line)
    for ok, line in recovery.close_stale_sessions(repo, after_end=judge_ended):
        (done if ok else failed).append(line)
    done += _remove_leftover_tmp(repo)
    left = person.left_by_killed(repo.root)
    if left is not None:
        left.unlink(missing_ok=True)
        done.append(f"removed {left} (left by a killed memrepo commit)")
    try:
        done += agent_install.fast_hooks_fix(repo.root)
    except (MemrepoError, OSError) as exc:
        failed.append(f"agent hooks: {exc}")
    try:
        done += _fix_line_count(repo)
    except (MemrepoError, OSError, LockBusy) as exc:
        failed.append(f"MEMORY.md line_count: {exc or type(exc).__name__}")
    try:  # the index: brought to HEAD (rebuilt when its schema or embedder is not current)
        res = sync(repo.root, embedder_name=repo.config["search"]["embedder"])
        if res is not None and res.mode != "noop":
            done.append(f"index {res.mode} at {(res.commit or 'no commit')[:12]}")
    except Exception as exc:  # reported, like any other repair that failed
        failed.append(f"index: {exc}")
    return done, failed
