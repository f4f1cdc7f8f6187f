"""``memory install`` / ``uninstall``: memrepo's hooks and MCP server in an agent's settings.

One table (:data:`AGENTS`) says, per agent and scope, which files hold the hooks and the
MCP server and where inside them; one code path merges memrepo's entries into them and
takes them out again. memrepo's entries are recognised by what they run (a ``memory``
executable with ``hook <agent>`` or ``mcp`` in its arguments), never by their position,
so a second install with another repo or another ``memory`` replaces them in place.

Everything else in the files is left as it was, to the byte
(:mod:`memrepo.agents.settings_edit`), and an uninstall after an install gives back the
original file. A file that does not parse is an error naming it and its line, never
overwritten. Sources of every format: ../shared/reviews/agent-integration.md §1.1,
§1.2, §1.7, §2.4 (Claude Code), §4.1 (Codex), §4.2 (Gemini CLI).
"""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.agents.harness import BRIEF, CAPTURE, END, FLUSH, HARNESSES, RECALL, action
from memrepo.agents.settings_edit import Doc, JsonText, Key, TomlText
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.health import Check
from memrepo.layout import CONFIG_FILE

HOOKS = "hooks"
MCP = "mcp"
#: The MCP server's name in the agents' server tables.
SERVER_NAME = "memrepo"
#: Names of the executable an entry must run to be memrepo's.
EXE_NAMES = frozenset({"memory", "memory.exe"})

#: Seconds an agent waits for memrepo's hook before it gives up on it (Gemini takes
#: milliseconds: scaled by :attr:`Agent.timeout_unit`). A timeout only matters when
#: something hangs; the hooks themselves answer in well under a second.
#: - brief 10 s: a cold start (first import after an upgrade, a cold disk) must still
#:   brief the session; Claude Code starts the session without it past the limit.
#: - recall 5 s: the prompt waits for it, and Claude Code's default (30 s) would hold a
#:   prompt half a minute when something hangs; past 5 s the prompt goes on without recall.
#: - flush and capture 10 s: the work is detached, the hook only starts it; a hung
#:   PreCompact would hold up compaction, so no more than brief.
#: - end 5 s: SessionEnd hooks share a 1.5 s budget that the highest timeout in the
#:   settings files raises (up to 60 s); 5 s lets a cold Python start hand the work to
#:   its detached process without keeping Claude Code from exiting for long.
TIMEOUTS: dict[str, int] = {BRIEF: 10, RECALL: 5, FLUSH: 10, CAPTURE: 10, END: 5}

#: Placeholder in :attr:`Place.keys` for the project's absolute path (Claude Code's
#: local-scope MCP servers live under ``projects.<path>.mcpServers`` in ~/.claude.json).
PROJECT_KEY = "<project>"


@dataclass(frozen=True)
class Place:
    """One file memrepo writes for an agent at one scope, and where in it."""

    what: str  # HOOKS or MCP
    base: str  # a key of BASES: the directory ``file`` is under
    file: str
    keys: tuple[str, ...]  # path to the hooks object / the MCP server table
    keep_empty: bool = False  # an emptied server table stays as {} (the agent keeps one)


@dataclass(frozen=True)
class Agent:
    """How one agent runs a hook and where it reads its settings, per scope."""

    shell_form: bool  # command is a shell string (Codex, Gemini), else command + args
    timeout_unit: int  # 1: seconds, 1000: milliseconds
    named: bool  # handlers carry a "name" (Gemini's /hooks enable|disable NAME)
    scopes: dict[str, tuple[Place, ...]]
    next_step: str


#: base -> (directory under the home, environment variable that moves it).
BASES: dict[str, tuple[str, str | None]] = {
    "claude": (".claude", "CLAUDE_CONFIG_DIR"),
    "claude-state": ("", "CLAUDE_CONFIG_DIR"),  # ~/.claude.json
    "codex": (".codex", "CODEX_HOME"),
    "gemini": (".gemini", None),
    "project": ("", None),
}

AGENTS: dict[str, Agent] = {
    # Hooks in the settings files (merged across scopes), MCP servers where `claude mcp
    # add --scope …` puts them (review §1.1, §2.4).
    "claude-code": Agent(
        shell_form=False, timeout_unit=1, named=False,
        scopes={
            "user": (Place(HOOKS, "claude", "settings.json", ("hooks",)),
                     Place(MCP, "claude-state", ".claude.json", ("mcpServers",))),
            "project": (Place(HOOKS, "project", ".claude/settings.json", ("hooks",)),
                        Place(MCP, "project", ".mcp.json", ("mcpServers",))),
            "local": (Place(HOOKS, "project", ".claude/settings.local.json", ("hooks",)),
                      Place(MCP, "claude-state", ".claude.json",
                            ("projects", PROJECT_KEY, "mcpServers"), keep_empty=True)),
        },
        next_step="Claude Code reads hooks when a session starts: start a new session "
                  "(`/hooks` lists them, `/mcp` the server).",
    ),
    # Hooks in hooks.json, not inline [hooks] in config.toml: the same JSON shape as
    # Claude Code's (one editor), and the user's hand-written config.toml gets one small
    # table only. Codex runs `command` through the shell and has no `args` (review §4.1).
    "codex": Agent(
        shell_form=True, timeout_unit=1, named=False,
        scopes={
            "user": (Place(HOOKS, "codex", "hooks.json", ("hooks",)),
                     Place(MCP, "codex", "config.toml", ("mcp_servers",))),
            "project": (Place(HOOKS, "project", ".codex/hooks.json", ("hooks",)),
                        Place(MCP, "project", ".codex/config.toml", ("mcp_servers",))),
        },
        next_step="Codex runs new hooks only once trusted: review them with `/hooks` in "
                  "Codex.",
    ),
    # Hooks and MCP servers in one settings.json; timeouts in ms (review §4.2).
    "gemini": Agent(
        shell_form=True, timeout_unit=1000, named=True,
        scopes={
            "user": (Place(HOOKS, "gemini", "settings.json", ("hooks",)),
                     Place(MCP, "gemini", "settings.json", ("mcpServers",))),
            "project": (Place(HOOKS, "project", ".gemini/settings.json", ("hooks",)),
                        Place(MCP, "project", ".gemini/settings.json", ("mcpServers",))),
        },
        next_step="Gemini CLI runs hooks when its hooks system is on (`/settings` → "
                  "Advanced → Enable Hooks System); `/hooks panel` lists them.",
    ),
}
assert set(AGENTS) == set(HARNESSES), "one installer entry per harness of harness.py"


# --- what memrepo's entries look like ------------------------------------------------


def hook_handler(agent: str, event: str, memory: str, repo: str) -> dict[str, Any]:
    """The handler that runs ``memory --repo REPO hook AGENT EVENT``."""
    spec = AGENTS[agent]
    argv = [memory, "--repo", repo, "hook", agent, event]
    handler: dict[str, Any] = {"name": f"memrepo-{event}"} if spec.named else {}
    handler["type"] = "command"
    if spec.shell_form:
        handler["command"] = shlex.join(argv)
    else:  # exec form: no shell, no quoting, no reliance on the hook's PATH
        handler["command"], handler["args"] = memory, argv[1:]
    handler["timeout"] = TIMEOUTS[str(action(agent, event))] * spec.timeout_unit
    return handler


def server_entry(memory: str, repo: str) -> dict[str, Any]:
    """The MCP server entry (the same shape in all three agents)."""
    return {"command": memory, "args": ["--repo", repo, "mcp"]}


@dataclass(frozen=True)
class Call:
    """What one of memrepo's entries runs."""

    memory: str
    repo: str | None
    kind: str  # HOOKS, MCP, or "legacy" (`memory compile --format claude-code-hook`)
    harness: str | None = None
    event: str | None = None


def _split_repo(args: Sequence[str]) -> tuple[str | None, list[str]]:
    repo, rest, i = None, [], 0
    while i < len(args):
        if args[i] == "--repo" and i + 1 < len(args):
            repo, i = args[i + 1], i + 2
            continue
        if args[i].startswith("--repo="):
            repo = args[i].split("=", 1)[1]
        else:
            rest.append(args[i])
        i += 1
    return repo, rest


def memrepo_call(entry: object) -> Call | None:
    """What ``entry`` (a hook handler or an MCP server entry) runs, when it is memrepo's."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args")
    if args is None:
        try:
            argv = shlex.split(entry["command"])
        except ValueError:
            return None
    elif isinstance(args, list) and all(isinstance(a, str) for a in args):
        argv = [entry["command"], *args]
    else:
        return None
    if not argv or Path(argv[0]).name not in EXE_NAMES:
        return None
    repo, rest = _split_repo(argv[1:])
    if rest[:1] == ["hook"] and len(rest) > 1 and rest[1] in HARNESSES:
        return Call(argv[0], repo, HOOKS, rest[1], rest[2] if len(rest) > 2 else None)
    if rest[:1] == ["mcp"]:
        return Call(argv[0], repo, MCP)
    if "compile" in rest and "claude-code-hook" in rest:
        return Call(argv[0], repo, "legacy")
    return None


# --- planning -------------------------------------------------------------------------

@dataclass
class FileChange:
    """One file's text before and after (None: absent), and what changed in it."""

    path: Path
    before: str | None
    after: str | None
    what: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            a, b, "/dev/null" if self.before is None else str(self.path),
            "/dev/null" if self.after is None else str(self.path))
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in lines)


def check_scope(agent: str, scope: str) -> Agent:
    """``agent``'s entry, or MemrepoError when it has no such scope."""
    if agent not in AGENTS:
        raise MemrepoError(f"unknown agent {agent!r} (one of: {', '.join(AGENTS)})")
    if scope not in AGENTS[agent].scopes:
        raise MemrepoError(f"{agent} has no {scope!r} scope (one of: "
                           f"{', '.join(AGENTS[agent].scopes)})")
    return AGENTS[agent]


def place_path(place: Place, home: Path | None, project: Path) -> Path:
    """Where ``place``'s file is: under the home (or the agent's own env override when no
    home is given) or the project."""
    if place.base == "project":
        return project / place.file
    rel, env = BASES[place.base]
    if home is None and env and os.environ.get(env):
        return Path(os.environ[env]).expanduser() / place.file
    return (home or Path.home()) / rel / place.file


def _keys(place: Place, project: Path) -> tuple[str, ...]:
    return tuple(str(project) if k == PROJECT_KEY else k for k in place.keys)


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemrepoError(f"{path}: not UTF-8 text (byte {exc.start}); not touching it") from None


def _open(path: Path, text: str | None) -> Doc:
    return TomlText(text, str(path)) if path.suffix == ".toml" else JsonText(text, str(path))


def plan(agent: str, scope: str, *, memory: str | None = None, repo: str | None = None,
         home: Path | None = None, project: Path | None = None) -> list[FileChange]:
    """The changes that install (``memory`` and ``repo`` given) or uninstall (neither)
    ``agent`` at ``scope``: nothing is written (see :func:`apply`)."""
    spec = check_scope(agent, scope)
    project = (project or Path.cwd()).resolve()
    home = home.absolute() if home else None
    docs: dict[Path, tuple[str | None, Doc, list[str]]] = {}
    for place in spec.scopes[scope]:
        path = place_path(place, home, project)
        if path not in docs:
            before = _read(path)
            docs[path] = (before, _open(path, before), [])
        _, doc, notes = docs[path]
        keys = _keys(place, project)
        if place.what == HOOKS:
            notes += _merge_hooks(doc, keys, agent, memory, repo)
        else:
            notes += _merge_server(doc, keys, memory, repo, place.keep_empty)
    changes = []
    for path, (before, doc, notes) in docs.items():
        after: str | None = doc.dumps()
        if not notes:
            after = before  # untouched, even where reading normalised it (an empty file)
        elif memory is None and doc.is_empty():
            after = None  # it held memrepo's entries only: uninstall removes the file
        changes.append(FileChange(path, before, after, notes))
    return changes


def _merge_hooks(doc: Doc, base: tuple[str, ...], agent: str, memory: str | None,
                 repo: str | None) -> list[str]:
    """Make memrepo's handlers in ``doc`` the wanted ones (none for an uninstall)."""
    want = ({event: hook_handler(agent, event, memory, repo) for event in HARNESSES[agent]}
            if memory and repo else {})
    hooks = doc.get(base)
    if hooks is not None and not isinstance(hooks, dict):
        raise MemrepoError(f"{doc.name}: {'.'.join(base)} is not an object; not touching it")
    notes: list[str] = []
    while True:  # drop memrepo's stale handlers and duplicates, one at a time
        found = _handlers(doc.get(base) or {})
        seen: set[str] = set()
        extra = []
        for event, gi, hi in found:
            if event in want and event not in seen:
                seen.add(event)
            else:
                extra.append((event, gi, hi))
        if not extra:
            break
        event, gi, hi = extra[-1]
        _remove_handler(doc, base, event, gi, hi)
        notes.append(f"removed {event} hook")
    kept = {event: (gi, hi) for event, gi, hi in _handlers(doc.get(base) or {})}
    for event, handler in want.items():
        if event in kept:
            gi, hi = kept[event]
            path = (*base, event, gi, "hooks", hi)
            current = doc.get(path)
            merged = {**current, **handler}
            if "args" not in handler:
                merged.pop("args", None)
            if merged != current:
                doc.set(path, merged)
                notes.append(f"updated {event} hook")
        elif isinstance(doc.get((*base, event)), list):
            doc.append((*base, event), {"hooks": [handler]})
            notes.append(f"added {event} hook")
        elif doc.get((*base, event)) is not None:
            raise MemrepoError(f"{doc.name}: {'.'.join((*base, event))} is not a list; "
                               "not touching it")
        else:
            doc.set((*base, event), [{"hooks": [handler]}])
            notes.append(f"added {event} hook")
    return notes


def _handlers(hooks: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(event, group index, handler index) of memrepo's handlers, in file order."""
    found = []
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue  # e.g. Gemini's "disabled": [names]
        for gi, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
                call = memrepo_call(handler)
                if call is not None and call.kind == HOOKS:
                    found.append((event, gi, hi))
    return found


def _remove_handler(doc: Doc, base: tuple[str, ...], event: str, gi: int, hi: int) -> None:
    """Remove one handler, with the group it leaves without handlers (whatever its
    matcher), and the event list and hooks object left empty."""
    if len(doc.get((*base, event, gi, "hooks"))) > 1:
        doc.remove((*base, event, gi, "hooks", hi))
    else:
        _remove_pruned(doc, (*base, event, gi))


def _remove_pruned(doc: Doc, path: tuple[Key, ...], keep: tuple[Key, ...] | None = None) -> None:
    """Remove ``path`` and the containers it leaves empty, up to (not including) the top
    level; ``keep`` stays as ``{}`` where it shares its parent with other keys (Claude Code
    keeps an ``mcpServers: {}`` in each of its project entries)."""
    target = path
    while len(target) > 1:
        parent = target[:-1]
        if len(doc.get(parent)) > 1:
            break
        if parent == keep and len(doc.get(parent[:-1]) or {}) > 1:
            break
        target = parent
    doc.remove(target)


def _merge_server(doc: Doc, base: tuple[str, ...], memory: str | None, repo: str | None,
                  keep_empty: bool) -> list[str]:
    """Make memrepo's MCP server entry in ``doc`` the wanted one (none for an uninstall)."""
    servers = doc.get(base)
    if servers is not None and not isinstance(servers, dict):
        raise MemrepoError(f"{doc.name}: {'.'.join(base)} is not a table; not touching it")
    ours = [n for n, e in (servers or {}).items() if (c := memrepo_call(e)) and c.kind == MCP]
    want = server_entry(memory, repo) if memory and repo else None
    keep = (ours[0] if ours else SERVER_NAME) if want else None
    notes = []
    for name in reversed(ours):
        if name == keep:
            continue
        if isinstance(doc, JsonText):
            _remove_pruned(doc, (*base, name), base if keep_empty else None)
        else:  # TOML: an emptied [mcp_servers] is no table at all
            doc.remove((*base, name))
        notes.append(f"removed MCP server {name!r}")
    if want is not None and keep is not None:
        current = doc.get((*base, keep))
        merged = {**current, **want} if isinstance(current, dict) else want
        if merged != current:
            doc.set((*base, keep), merged)
            notes.append(f"{'updated' if current else 'added'} MCP server {keep!r}")
    return notes


def apply(changes: Sequence[FileChange], home: Path | None = None) -> None:
    """Write the changed files (atomically; into a symlink's target, so a dotfiles link
    stays a link), refusing any file that changed since it was planned."""
    for change in changes:
        if not change.changed:
            continue
        if _read(change.path) != change.before:
            raise MemrepoError(f"{change.path} changed while memrepo was editing it; run again")
    for change in changes:
        if not change.changed:
            continue
        target = Path(os.path.realpath(change.path))
        if change.after is None:
            target.unlink()
            continue
        under_home = str(target).startswith(str((home or Path.home()).resolve()) + os.sep)
        mode = None if change.before is not None else (0o600 if under_home else 0o644)
        atomic_write(target, change.after, mode=mode)


# --- the memory to bake in ------------------------------------------------------------


def running_memory() -> str:
    """The absolute path of the ``memory`` executable running now: the script that was
    started, else the one beside this interpreter (a venv's bin/), else the one on PATH.

    Symlinks are kept, not resolved: a package manager's link (``/usr/local/bin/memory``)
    survives upgrades that move the versioned file it points at.
    """
    candidates = []
    if sys.argv and Path(sys.argv[0]).name in EXE_NAMES:
        candidates.append(os.path.abspath(sys.argv[0]))
    candidates += [str(Path(sys.executable).with_name(n)) for n in sorted(EXE_NAMES)]
    candidates.append(shutil.which("memory") or "")
    for exe in candidates:
        if exe and os.path.isfile(exe) and os.access(exe, os.X_OK):
            return os.path.abspath(exe)
    raise MemrepoError("cannot find the `memory` executable to install; pass --memory PATH")


def memory_version(exe: str) -> str:
    """``exe --version``, or MemrepoError saying why it does not run."""
    if Path(exe).name not in EXE_NAMES:
        raise MemrepoError(f"{exe}: not a `memory` executable (its name must be memory)")
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                              env={k: v for k, v in os.environ.items() if k != "MEMORY_REPO"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MemrepoError(f"{exe} does not run: {exc}") from None
    if proc.returncode != 0 or "memory" not in proc.stdout:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise MemrepoError(f"{exe} does not run: {why}")
    return proc.stdout.strip()


# --- what is installed, for memory doctor ---------------------------------------------


@dataclass(frozen=True)
class Installed:
    """One of memrepo's entries found in an agent's settings."""

    agent: str
    scope: str
    path: Path
    what: str  # HOOKS, MCP or "legacy"
    name: str  # the event, or the server's name
    call: Call


def installed(home: Path | None = None, project: Path | None = None) -> tuple[
        list[Installed], list[str]]:
    """memrepo's entries in every agent's settings (home and project), and the files that
    could not be read."""
    project = (project or Path.cwd()).resolve()
    found: list[Installed] = []
    errors: list[str] = []
    seen: set[tuple[Path, tuple[str, ...]]] = set()
    for agent, spec in AGENTS.items():
        for scope, places in spec.scopes.items():
            for place in places:
                path, keys = place_path(place, home, project), _keys(place, project)
                if (path, keys) in seen:
                    continue
                seen.add((path, keys))
                try:
                    text = _read(path)
                    if text is None:
                        continue
                    section = _open(path, text).get(keys)
                except MemrepoError as exc:
                    errors.append(str(exc))
                    continue
                if not isinstance(section, dict):
                    continue
                if place.what == MCP:
                    for name, entry in section.items():
                        call = memrepo_call(entry)
                        if call and call.kind == MCP:
                            found.append(Installed(agent, scope, path, MCP, name, call))
                    continue
                for event, groups in section.items():
                    for group in groups if isinstance(groups, list) else []:
                        handlers = group.get("hooks") if isinstance(group, dict) else None
                        for handler in handlers if isinstance(handlers, list) else []:
                            call = memrepo_call(handler)
                            if call and call.kind in (HOOKS, "legacy"):
                                found.append(Installed(agent, scope, path, call.kind, event,
                                                       call))
    return found, errors


def health_checks(repo: Any) -> list[Check]:
    """``memory doctor``: each installed integration runs a ``memory`` that runs, on a
    repo that exists; one handler installed twice is a warning. An integration of
    another repo than the one checked only ever warns (it is not this repo's health)."""
    found, errors = installed()
    checks = [Check("agent settings", False, e, warning=True) for e in errors]
    if not found:
        return [*checks, Check("agent integrations", True,
                               "none installed (memory install claude-code|codex|gemini)")]
    here = Path(repo.root).resolve()
    versions: dict[str, str | None] = {}
    by_integration: dict[tuple[str, str], list[Installed]] = {}
    for item in found:
        by_integration.setdefault((item.agent, item.scope), []).append(item)
    for (agent, scope), items in by_integration.items():
        name = f"{agent} ({scope})"
        problems = []
        for exe in sorted({i.call.memory for i in items}):
            if exe not in versions:
                try:
                    versions[exe] = memory_version(exe)
                except MemrepoError as exc:
                    versions[exe] = None
                    problems.append(str(exc))
        for repo_path in sorted({i.call.repo or "" for i in items}):
            if not repo_path:
                problems.append("an entry names no --repo (it follows the agent's cwd)")
            elif not (Path(repo_path).expanduser() / CONFIG_FILE).is_file():
                problems.append(f"{repo_path} is not a memory repo (no {CONFIG_FILE})")
        mine = any(i.call.repo and Path(i.call.repo).expanduser().resolve() == here
                   for i in items)
        legacy = [i.name for i in items if i.what == "legacy"]
        if legacy:
            where = ", ".join(sorted({str(i.path) for i in items if i.what == "legacy"}))
            problems.append("old `memory compile --format claude-code-hook` handlers "
                            f"({', '.join(legacy)}) also run: remove them from {where}")
        hooks = sorted({i.name for i in items if i.what == HOOKS})
        servers = sorted({i.name for i in items if i.what == MCP})
        what = ", ".join(filter(None, [
            f"{len(hooks)} hooks" if hooks else "", f"MCP server {', '.join(servers)}"
            if servers else ""]))
        repos = ", ".join(sorted({i.call.repo or "?" for i in items}))
        fix = f"memory install {agent} --scope {scope} (or: memory uninstall {agent} " \
              f"--scope {scope})"
        if problems:
            files = ", ".join(sorted({str(i.path) for i in items}))
            checks.append(Check(name, False, f"{files}: " + "; ".join(problems), fix,
                                warning=not mine))
        else:
            checks.append(Check(name, True, f"{what} → {repos}"))
    checks += _duplicates(found)
    return checks


def _duplicates(found: list[Installed]) -> list[Check]:
    """Per agent, one warning naming the handlers (or MCP servers) installed more than once:
    copies in several files run each (Claude Code runs only identical copies once)."""
    checks = []
    for agent in AGENTS:
        mine = [i for i in found if i.agent == agent]
        events: dict[str, list[Installed]] = {}
        for item in mine:
            if item.what != MCP:
                events.setdefault(item.name, []).append(item)
        twice = {e: items for e, items in events.items() if len(items) > 1}
        servers = {i.name for i in mine if i.what == MCP}
        dup = [f"{e} ×{len(items)}" for e, items in twice.items()]
        if len(servers) > 1:  # one name in several scopes is one server (the agent picks)
            dup.append(f"MCP servers {', '.join(sorted(servers))}")
        if not dup:
            continue
        spots = sorted({(i.scope, str(i.path)) for items in twice.values() for i in items}
                       | {(i.scope, str(i.path)) for i in mine
                          if i.what == MCP and len(servers) > 1})
        where = ", ".join(f"{scope}: {path}" for scope, path in spots)
        checks.append(Check(
            f"{agent} duplicates", False,
            f"installed more than once: {', '.join(dup)} ({where}); each copy runs",
            f"keep one: memory uninstall {agent} --scope SCOPE", warning=True))
    return checks
