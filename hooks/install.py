"""Installing memrepo's git hooks, and telling whose hooks are installed.

The two ways git runs memrepo's hooks (``git.hook_runner``): direct shims (the default:
their cost is the commit's, not the repo's), or the pre-commit framework. ``memory init``
and ``memory doctor --fix`` install them, the doctor checks them (:func:`hooks_status`,
:func:`probe_hooks`), and :mod:`memrepo.commit.write` asks on every commit memrepo makes
whether they are memrepo's alone (:func:`only_memrepo_hooks`): then it runs them
in-process instead.

A direct shim names the Python that installed it (``"/abs/python" -c …``), so a shell
without the virtualenv on PATH commits as well as one with it; when that interpreter is
gone the shim says so in one line and refuses (validating hooks) or steps aside (the
index upkeep, which must never fail a commit). A hook that was there before memrepo
(somebody else's, or the pre-commit framework running other hooks) is kept beside it as
``<hook>.pre-memrepo`` and run first, with the same arguments and stdin; uninstalling or
switching to the pre-commit runner puts it back.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from memrepo import git, yamlsafe
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.hooks.post_commit import GIT_EVENTS

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
#: Every git hook memrepo installs: the validators (files, then the message), then the
#: index upkeep.
HOOK_TYPES = ("pre-commit", "commit-msg", *GIT_EVENTS)
#: First line after the shebang of a direct hook; how hooks_status recognises one.
DIRECT_MARKER = "# memrepo direct hook"
RUNNERS = ("direct", "pre-commit")
DEFAULT_RUNNER = "direct"
#: The entry every memrepo hook runs (repo-skeleton/dot-pre-commit-config.yaml).
MEMREPO_ENTRY = "memory hook "
#: Where a direct shim keeps the hook it replaced (run first, restored on uninstall).
CHAIN_SUFFIX = ".pre-memrepo"
#: Hooks git feeds on stdin: a chained hook and memrepo's each need the whole of it.
STDIN_HOOKS = frozenset(
    {"post-rewrite", "pre-push", "pre-receive", "post-receive", "reference-transaction"}
)
#: Set by a shim for the hook it chains: memrepo's own entries in a chained pre-commit
#: framework config then do nothing (the shim runs them itself, once).
CHAINED_ENV = "MEMREPO_CHAINED"
#: Set by ``memory doctor`` to run a shim as git would, but cheaply (``memory hook probe``).
PROBE_ENV = "MEMREPO_HOOK_PROBE"
#: The PATH doctor runs the hooks with: what a bare ``sh`` on any machine has.
MINIMAL_PATH = "/usr/bin:/bin"
#: ``-c`` rather than ``-m memrepo``: ``-m`` puts the cwd (the memory repo, whose files
#: anyone who can push writes) first on sys.path, so a ``memrepo.py`` there would run.
#: A Python without memrepo says so in one line (exit status 1).
_PY_ENTRY = (
    "import sys\n"
    "sys.path[:] = [p for p in sys.path if p]\n"
    "try:\n"
    "    from memrepo.scripts.fastpath import main\n"
    "except ImportError as exc:\n"
    "    sys.exit(f'memrepo: {sys.executable} cannot import memrepo ({exc}); run "
    "memory doctor --fix with a working memrepo')\n"
    "main()\n"
)


def validating(kind: str) -> bool:
    """Whether git refuses the operation when hook ``kind`` fails (not the post-* ones)."""
    return not kind.startswith("post-")


def _memrepo_args(kind: str) -> str:
    if kind == "pre-commit":
        return "hook pre-commit --index"
    if kind == "pre-receive":
        return "hook pre-receive"
    return f'hook {kind} "$@"'


def direct_hook_script(kind: str, python: str | None = None) -> str:
    """The shim git runs for hook ``kind``: the hook it replaced first (if any), then
    memrepo through ``python`` (this interpreter by default), PATH unused."""
    py = python or sys.executable
    chain = f'"$here/{kind}{CHAIN_SUFFIX}"'
    stdin = kind in STDIN_HOOKS
    stop = " || exit $?" if validating(kind) else ""
    if validating(kind):
        gone = (f"memrepo: cannot run the {kind} hook: $py (the Python that installed it) is "
                "gone; run 'memory doctor --fix' with a working memrepo"
                + (", or use --no-verify" if kind in ("pre-commit", "commit-msg") else ""))
        gone_exit = "exit 1"
    else:
        gone = (f"memrepo: {kind} hook skipped (search index not updated): $py (the Python "
                "that installed it) is gone; run 'memory doctor --fix' with a working memrepo")
        gone_exit = f'[ -z "${{{PROBE_ENV}:-}}" ] || exit 1\n    exit 0'
    lines = [
        "#!/bin/sh",
        f"{DIRECT_MARKER} (git.hook_runner: direct); `memory doctor` checks it.",
        f"# Runs {kind}{CHAIN_SUFFIX} beside it first, when there is one (the hook it "
        "replaced), then",
        "# memrepo with the Python that installed it: PATH plays no part.",
        f"py={shlex.quote(py)}",
        f"entry={shlex.quote(_PY_ENTRY)}",
        'here=$(dirname "$0")',
        *(["buf="] if stdin else []),
        f'if [ -z "${{{PROBE_ENV}:-}}" ] && [ -x {chain} ]; then',
    ]
    if stdin:
        lines += [
            '    buf=$(mktemp "${TMPDIR:-/tmp}/memrepo-hook.XXXXXX") || exit 1',
            "    trap 'rm -f \"$buf\"' EXIT",
            '    cat > "$buf"',
            f'    {CHAINED_ENV}=1 {chain} "$@" < "$buf"{stop}',
        ]
    else:
        lines.append(f'    {CHAINED_ENV}=1 {chain} "$@"{stop}')
    lines += [
        "fi",
        'if [ ! -x "$py" ]; then',
        f'    echo "{gone}" >&2',
        f"    {gone_exit}",
        "fi",
        f'if [ -n "${{{PROBE_ENV}:-}}" ]; then exec "$py" -c "$entry" hook probe {kind}; fi',
    ]
    run = f'"$py" -c "$entry" {_memrepo_args(kind)}'
    if stdin:
        lines.append(f'if [ -n "$buf" ]; then {run} < "$buf"; exit $?; fi')
    lines.append(f"exec {run}")
    return "\n".join(lines) + "\n"


def shim_python(text: str) -> str | None:
    """The interpreter a direct shim runs (None for an older shim that used PATH)."""
    m = re.search(r"^py=(.+)$", text, re.MULTILINE)
    if not m:
        return None
    try:
        parts = shlex.split(m.group(1))
    except ValueError:
        return None
    return parts[0] if len(parts) == 1 else None


def runner_of(text: str) -> str | None:
    """Which runner installed the hook script ``text``: "direct", "pre-commit", or None
    (somebody else's hook)."""
    if DIRECT_MARKER in text:
        return "direct"
    if "pre-commit" in text and "hook-impl" in text:
        return "pre-commit"
    return None


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def only_memrepo_hooks(root: Path) -> bool:
    """Whether every installed git hook of ``root`` is one of memrepo's."""
    hooks = git.hooks_dir(root)
    if not hooks.is_dir():
        return True
    framework = False
    for path in hooks.iterdir():
        if path.name.endswith(".sample") or not path.is_file():
            continue
        if path.name.endswith((".legacy", CHAIN_SUFFIX)):
            return False  # a hook that pre-commit or a direct shim found and chains
        runner = runner_of(_read(path))
        if runner is None:
            return False
        framework |= runner == "pre-commit"
    return not framework or not other_pre_commit_hooks(root)


def other_pre_commit_hooks(root: Path, stage: str | None = None) -> list[str]:
    """Ids of the hooks in ``.pre-commit-config.yaml`` that are not memrepo's (those of
    ``stage`` only, when given); ``["?"]`` when the file cannot be read as a config."""
    path = root / PRE_COMMIT_CONFIG
    if not path.is_file():
        return []
    try:
        data = yamlsafe.load(path.read_text(encoding="utf-8"))
    except (OSError, MemrepoError, yamlsafe.YAMLProblem):
        return ["?"]  # unreadable: not provably memrepo's alone, so the real hooks run
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, list):
        return ["?"]
    default_stages = data.get("default_stages")
    others = []
    for repo in repos:
        if not isinstance(repo, dict):
            return ["?"]
        for hook in repo.get("hooks") or []:
            if not isinstance(hook, dict):
                return ["?"]
            entry = str(hook.get("entry", ""))
            if repo.get("repo") == "local" and entry.startswith(MEMREPO_ENTRY):
                continue
            stages = hook.get("stages") or default_stages
            if stage and isinstance(stages, list) and stage not in stages and not (
                stage == "pre-commit" and "commit" in stages
            ):
                continue
            others.append(str(hook.get("id", "?")))
    return others


def hooks_status(root: Path, runner: str = DEFAULT_RUNNER) -> dict[str, str]:
    """For each hook type: ok, missing, foreign (not memrepo's), installed by the other
    runner than ``runner``, not executable, or (a direct shim) its interpreter gone or
    the shim outdated."""
    hooks = git.hooks_dir(root)
    status = {}
    for kind in HOOK_TYPES:
        path = hooks / kind
        if not path.is_file():
            status[kind] = "missing"
            continue
        text = _read(path)
        found = runner_of(text)
        if found is None:
            status[kind] = "foreign"
        elif found != runner:
            status[kind] = f"installed by {found}, config says {runner}"
        elif not os.access(path, os.X_OK):
            status[kind] = "not executable"
        elif found == "direct":
            status[kind] = _shim_status(kind, text)
        else:
            status[kind] = "ok"
    return status


def _shim_status(kind: str, text: str) -> str:
    py = shim_python(text)
    if py is None:
        return "outdated shim (runs `memory` from PATH)"
    if not os.access(py, os.X_OK):
        return f"its Python is gone ({py})"
    if text != direct_hook_script(kind, py):
        return "outdated shim"
    return "ok"


def install_hooks(root: Path, runner: str = DEFAULT_RUNNER) -> tuple[str, str]:
    """Install the git hooks for every stage memrepo uses, with the configured runner;
    ("installed" or "found", what), the step ``memory init`` reports.

    A hook that is not memrepo's is kept: the direct runner chains it
    (``<hook>.pre-memrepo``), pre-commit as ``<hook>.legacy``. Switching runners moves
    the chained hook from one to the other.
    """
    if runner not in RUNNERS:
        raise MemrepoError(f"unknown hook runner {runner!r} (use {' or '.join(RUNNERS)})")
    before = hooks_status(root, runner)
    todo = [k for k, v in before.items() if v != "ok"]
    if not todo:
        return "found", f"{', '.join(HOOK_TYPES)} via {runner}"
    hooks = git.hooks_dir(root)
    chained: list[str] = []
    if runner == "direct":
        hooks.mkdir(parents=True, exist_ok=True)
        for kind in todo:
            if _make_room_for_shim(root, hooks, kind, before[kind]):
                chained.append(kind)
            atomic_write(hooks / kind, direct_hook_script(kind), mode=0o755)
    else:
        for kind in HOOK_TYPES:
            _remove_shim(hooks, kind)  # its chained hook back, for pre-commit to chain
        args = ["install", "--config", PRE_COMMIT_CONFIG]
        for kind in HOOK_TYPES:
            args += ["--hook-type", kind]
        proc = _pre_commit_cmd(root, *args)
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip()
            raise MemrepoError(f"pre-commit could not install the git hooks: {msg}")
    detail = f"{', '.join(todo)} via {runner}"
    if chained:
        detail += f"; kept and chained: {', '.join(k + CHAIN_SUFFIX for k in chained)}"
    return "installed", detail


def _make_room_for_shim(root: Path, hooks: Path, kind: str, status: str) -> bool:
    """Move whatever is at ``hooks/kind`` out of the shim's way; True when it is kept as
    the chained hook. The pre-commit framework's script is kept only while the config has
    other hooks for this stage (it would run memrepo's alone, a second time)."""
    path, chain, legacy = hooks / kind, hooks / (kind + CHAIN_SUFFIX), hooks / f"{kind}.legacy"
    if legacy.is_file() and runner_of(_read(legacy)) == "direct":
        legacy.unlink()  # our shim, which `pre-commit install` moved aside: it would loop
    keep = status == "foreign" or (
        status.startswith("installed by pre-commit") and other_pre_commit_hooks(root, kind)
    )
    if status.startswith("installed by pre-commit") and not keep:
        path.unlink()
        if legacy.is_file() and not chain.exists():
            os.replace(legacy, chain)  # the user's hook pre-commit was chaining
            return True
        return False
    if not keep:
        return chain.is_file()
    if chain.exists():
        raise MemrepoError(
            f"{path} is not memrepo's, and {chain.name} (the hook memrepo chains) is there "
            "already; merge the two into one hook, then run 'memory doctor --fix'"
        )
    os.replace(path, chain)
    return True


def _remove_shim(hooks: Path, kind: str) -> bool:
    """Remove memrepo's direct shim for ``kind`` and put back the hook it chained."""
    path, chain = hooks / kind, hooks / (kind + CHAIN_SUFFIX)
    if not path.is_file() or runner_of(_read(path)) != "direct":
        return False
    path.unlink()
    if chain.exists():
        os.replace(chain, path)
    return True


def uninstall_hooks(root: Path) -> list[str]:
    """Remove memrepo's direct shims and give back the hooks they chained; the hook types
    removed. (The pre-commit runner's hooks are the framework's: ``pre-commit uninstall``
    or a config without memrepo's entries.)"""
    hooks = git.hooks_dir(root)
    return [kind for kind in HOOK_TYPES if _remove_shim(hooks, kind)]


def install_server_hook(git_dir: Path) -> str:
    """Install the ``pre-receive`` shim in a (bare) repository's hooks directory, keeping
    and chaining a pre-receive hook that is there; what was done."""
    hooks = Path(git_dir) / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    path = hooks / "pre-receive"
    kept = ""
    if path.is_file() and runner_of(_read(path)) is None:
        _make_room_for_shim(Path(git_dir), hooks, "pre-receive", "foreign")
        kept = f"; kept and chained: pre-receive{CHAIN_SUFFIX}"
    atomic_write(path, direct_hook_script("pre-receive"), mode=0o755)
    return f"installed {path}{kept}"


def _pre_commit_cmd(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=root,
        capture_output=True,
        text=True,
    )


def git_hook_env() -> dict[str, str]:
    """The environment of a hook git runs from a new shell: a minimal PATH, no
    virtualenv (git sets its own variables), ``MEMREPO_HOOK_PROBE`` set."""
    keep = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_NOSYSTEM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(PATH=MINIMAL_PATH, **{PROBE_ENV: "1"})
    return env


def probe_hooks(root: Path) -> dict[str, str]:
    """Run each installed direct shim the way git would (from the repo root, minimal
    PATH, no virtualenv), with ``MEMREPO_HOOK_PROBE`` set so that it only proves memrepo
    starts; {hook type: "" when it ran, else the last line it said}. In parallel: each is
    a Python start."""
    from concurrent.futures import ThreadPoolExecutor

    hooks = git.hooks_dir(root)
    env = git_hook_env()
    kinds = [k for k in HOOK_TYPES
             if (hooks / k).is_file() and runner_of(_read(hooks / k)) == "direct"]

    def probe(kind: str) -> str:
        try:
            proc = subprocess.run([str(hooks / kind)], cwd=root, env=env, capture_output=True,
                                  text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        if proc.returncode == 0:
            return ""
        return said[-1] if said else f"exit status {proc.returncode}"

    with ThreadPoolExecutor(max_workers=len(kinds) or 1) as pool:
        return dict(zip(kinds, pool.map(probe, kinds), strict=True))


def rewrite_failing_shims(root: Path) -> list[str]:
    """Rewrite, for this interpreter, every direct shim whose probe fails (its Python
    exists but cannot run memrepo any more); the hook types rewritten."""
    hooks = git.hooks_dir(root)
    failing = [kind for kind, said in probe_hooks(root).items() if said]
    for kind in failing:
        atomic_write(hooks / kind, direct_hook_script(kind), mode=0o755)
    return failing


def memory_on_path(path: str | None = None) -> str | None:
    """The ``memory`` the pre-commit runner's hooks will run (they find it on PATH)."""
    return shutil.which("memory", path=path)


def env_with_memory_on_path() -> dict[str, str]:
    """PATH with this interpreter's scripts dir first, so that the hooks of a commit made
    from here (``memory init``'s first one) find ``memory``."""
    scripts = str(Path(sys.executable).parent)
    return {"PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
