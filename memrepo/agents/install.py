"""``memory install`` / ``uninstall``: memrepo's hooks and MCP server in an agent's settings.

Which files and where inside them, and what memrepo's entries look like, is
:mod:`memrepo.agents.settings`'s table; one code path here merges memrepo's entries into
those files and takes them out again, and tells ``memory doctor`` what is installed.

Everything else in the files is left as it was, to the byte
(:mod:`memrepo.agents.settings_edit`), and an uninstall after an install gives back the
original file. A file that does not parse is an error naming it and its line, never
overwritten.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.agents import hook_client
from memrepo.agents.harness import HARNESSES
from memrepo.agents.settings import (
    AGENTS,
    EXE_NAMES,
    HOOKS,
    MCP,
    SERVER_NAME,
    Call,
    Client,
    check_scope,
    hook_handler,
    memrepo_call,
    merged_entry,
    place_keys,
    place_path,
    server_entry,
    token_step,
)
from memrepo.agents.settings_edit import Doc, JsonText, Key, TomlText
from memrepo.atomic import atomic_write
from memrepo.config import load_config
from memrepo.errors import MemrepoError
from memrepo.health import Check
from memrepo.index.remote import serve_dir
from memrepo.layout import CONFIG_FILE, socket_path
from memrepo.llm import estimate_cost

#: Agents that read their JSON settings with ``//`` and ``/* */`` comments (Gemini CLI).
JSONC_AGENTS = frozenset({"gemini"})

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


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemrepoError(f"{path}: not UTF-8 text (byte {exc.start}); not touching it") from None


def _open(path: Path, text: str | None, agent: str) -> Doc:
    if path.suffix == ".toml":
        return TomlText(text, str(path))
    return JsonText(text, str(path), comments=agent in JSONC_AGENTS)


def plan(agent: str, scope: str, *, memory: str | None = None, repo: str | None = None,
         home: Path | None = None, project: Path | None = None, url: str | None = None,
         token_env: str | None = None, namespace: str | None = None,
         client: Client | None = None, hooks_only: bool = False) -> list[FileChange]:
    """The changes that install (``memory`` and ``repo`` given) or uninstall (neither)
    ``agent`` at ``scope``: nothing is written (see :func:`apply`). ``url``: the MCP
    server is that HTTP endpoint (its token in ``$token_env``), not ``memory mcp``; the
    hooks, which need a local clone, are left as they are when ``repo`` is not given.
    ``namespace``: the hooks and the server run ``memory --namespace NAME …``;
    ``client``: through :mod:`memrepo.agents.hook_client` (:func:`fast_client`);
    ``hooks_only``: the MCP server entries are left as they are."""
    spec = check_scope(agent, scope)
    hooks = bool(memory and repo) or url is None
    want = (server_entry(memory or "", repo or "", agent=agent, url=url, token_env=token_env,
                         namespace=namespace)
            if url or (memory and repo) else None)
    project = (project or Path.cwd()).resolve()
    home = home.absolute() if home else None
    docs: dict[Path, tuple[str | None, Doc, list[str]]] = {}
    for place in spec.scopes[scope]:
        path = place_path(place, home, project)
        if path not in docs:
            before = _read(path)
            docs[path] = (before, _open(path, before, agent), [])
        _, doc, notes = docs[path]
        keys = place_keys(place, project)
        if place.what == MCP and hooks_only:
            continue
        if place.what == HOOKS:
            notes += (_merge_hooks(doc, keys, agent, memory, repo, namespace, client)
                      if hooks else [])
        else:
            done = _merge_server(doc, keys, want, place.keep_empty)
            notes += done + ([token_step(agent, token_env)] if done and url and token_env
                             else [])
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
                 repo: str | None, namespace: str | None = None,
                 client: Client | None = None) -> list[str]:
    """Make memrepo's handlers in ``doc`` the wanted ones (none for an uninstall)."""
    want = ({event: hook_handler(agent, event, memory, repo, namespace, client)
             for event in HARNESSES[agent]} if memory and repo else {})
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


def _remove_pruned(doc: Doc, path: tuple[Key, ...], keep: tuple[Key, ...] | None = None,
                   stay: tuple[Key, ...] | None = None) -> None:
    """Remove ``path`` and the containers it leaves empty, up to (not including) the top
    level; ``keep`` stays as ``{}`` where it shares its parent with other keys (Claude Code
    keeps an ``mcpServers: {}`` in each of its project entries); ``stay``, the agent's own
    map (``~/.claude.json``'s ``projects``), stays as ``{}`` unless it is all the file
    holds (then memrepo made the file)."""
    target = path
    while len(target) > 1:
        parent = target[:-1]
        if len(doc.get(parent)) > 1:
            break
        if parent == keep and len(doc.get(parent[:-1]) or {}) > 1:
            break
        if parent == stay and len(doc.get(())) > 1:
            break
        target = parent
    doc.remove(target)


def _merge_server(doc: Doc, base: tuple[str, ...], want: dict[str, Any] | None,
                  keep_empty: bool) -> list[str]:
    """Make memrepo's MCP server entry in ``doc`` ``want`` (None: none, an uninstall)."""
    servers = doc.get(base)
    if servers is not None and not isinstance(servers, dict):
        raise MemrepoError(f"{doc.name}: {'.'.join(base)} is not a table; not touching it")
    ours = [n for n, e in (servers or {}).items()
            if (c := memrepo_call(e, n)) and c.kind == MCP]
    keep = (ours[0] if ours else SERVER_NAME) if want else None
    notes = []
    for name in reversed(ours):
        if name == keep:
            continue
        if isinstance(doc, JsonText):
            _remove_pruned(doc, (*base, name), base if keep_empty else None,
                           base[:1] if keep_empty else None)
        else:  # TOML: an emptied [mcp_servers] is no table at all
            doc.remove((*base, name))
        notes.append(f"removed MCP server {name!r}")
    if want is not None and keep is not None:
        current = doc.get((*base, keep))
        merged = merged_entry(current, want)
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


def llm_note(repo: Path) -> str:
    """What the hooks' LLM use costs and how to turn it on (issue 35: the worker used to
    spend the agent's key, twelve requests a session, without a word)."""
    cfg = load_config(repo)
    model, chars = cfg["llm"]["extract_model"], int(cfg["llm"]["max_transcript_chars"])
    cost = estimate_cost(model, chars, 3000)
    each = (f"one request per session end ({model}, up to {chars:,} characters in: "
            f"at most ~${cost:.3f} a session)")
    if cfg["agents"]["llm"]:
        return f"LLM use is on (agents.llm): {each}, with the agent's ANTHROPIC_API_KEY."
    return ("Extraction after each session is offline: memrepo does not spend the agent's "
            f"API key. To extract with a model, set agents.llm: true in {CONFIG_FILE}: "
            f"{each}.")


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


def fast_client(memory: str, repo: str) -> Client | None:
    """How the hooks run through :mod:`memrepo.agents.hook_client`: with this interpreter
    and this memrepo, when ``memory`` is this installation's (:func:`running_memory`);
    None (plain ``memory hook``) for another ``memory``, or where there are no UNIX
    sockets. ``MEMREPO_PLAIN_HOOKS=1``: None."""
    if os.name != "posix" or os.environ.get(PLAIN_HOOKS_ENV):
        return None
    try:
        ours = running_memory()
    except MemrepoError:
        return None
    if os.path.realpath(ours) != os.path.realpath(memory):
        return None
    site = Path(hook_client.__file__).resolve().parent.parent.parent
    try:
        sock = socket_path(serve_dir(Path(repo)))
    except (OSError, MemrepoError):  # no repo there (doctor asks of any install)
        return None
    return Client(sys.executable, str(site), str(sock))


#: hook_client.py under the folder memrepo is installed in (``Client.site``)
CLIENT_FILE = "memrepo/agents/hook_client.py"
#: Set to anything, ``memory install`` writes plain ``memory hook`` commands.
PLAIN_HOOKS_ENV = "MEMREPO_PLAIN_HOOKS"


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
                path, keys = place_path(place, home, project), place_keys(place, project)
                if (path, keys) in seen:
                    continue
                seen.add((path, keys))
                try:
                    text = _read(path)
                    if text is None:
                        continue
                    section = _open(path, text, agent).get(keys)
                except MemrepoError as exc:
                    errors.append(str(exc))
                    continue
                if not isinstance(section, dict):
                    continue
                if place.what == MCP:
                    for name, entry in section.items():
                        call = memrepo_call(entry, name)
                        if call and call.kind == MCP:
                            found.append(Installed(agent, scope, path, MCP, name, call))
                    continue
                found += [Installed(agent, scope, path, call.kind, event, call)
                          for event, call in _hook_calls(section)]
    return found, errors


def _hook_calls(section: dict[str, Any]) -> Iterator[tuple[str, Call]]:
    """(event, call) of memrepo's handlers in a hooks object (``{event: [groups]}``)."""
    for event, groups in section.items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                call = memrepo_call(handler)
                if call and call.kind in (HOOKS, "legacy"):
                    yield event, call


def hooks_in(project: Path, home: Path | None = None) -> Call | None:
    """What memrepo's Claude Code hooks run in ``project``: the narrowest scope's (local,
    then project, then user), or None when none are installed. ``memory capture sweep``
    asks it of each log it has never read: whose repo, in which namespace."""
    for scope in ("local", "project", "user"):  # its settings files only: ~/.claude.json,
        for place in AGENTS["claude-code"].scopes[scope]:  # the MCP one, may be megabytes
            if place.what != HOOKS:
                continue
            path = place_path(place, home, project)
            try:
                text = _read(path)
                section = _open(path, text, "claude-code").get(place_keys(place, project)) \
                    if text is not None else None
            except MemrepoError:
                continue
            for _, call in _hook_calls(section if isinstance(section, dict) else {}):
                if call.kind == HOOKS:
                    return call
    return None


def fast_hooks_fix(root: Path, home: Path | None = None, project: Path | None = None
                   ) -> list[str]:
    """``memory doctor --fix``: the hooks of this repo installed as plain ``memory hook``
    (before memrepo.agents.hook_client) rewritten through the client, where their
    ``memory`` is this installation's; the MCP entries are left alone. What it did."""
    found, _ = installed(home, project)
    here = Path(root).resolve()
    todo: dict[tuple[str, str], Call] = {}
    for i in found:
        if i.what == HOOKS and i.call.client is None and i.call.repo and \
                Path(i.call.repo).expanduser().resolve() == here:
            todo.setdefault((i.agent, i.scope), i.call)
    done = []
    for (agent, scope), call in todo.items():
        client = fast_client(call.memory, str(call.repo))
        if client is None:
            continue
        changes = plan(agent, scope, memory=call.memory, repo=call.repo, home=home,
                       project=project, namespace=call.namespace, client=client,
                       hooks_only=True)
        apply(changes, home)
        files = ", ".join(str(c.path) for c in changes if c.changed)
        if files:
            done.append(f"{agent} ({scope}) hooks now ask the resident server first: {files}")
    return done


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
        local = [i for i in items if i.call.url is None]  # an HTTP server runs nothing here
        for exe in sorted({i.call.memory for i in local}):
            if exe not in versions:
                try:
                    versions[exe] = memory_version(exe)
                except MemrepoError as exc:
                    versions[exe] = None
                    problems.append(str(exc))
        for repo_path in sorted({i.call.repo or "" for i in local}):
            if not repo_path:
                problems.append("an entry names no --repo (it follows the agent's cwd)")
            elif not (Path(repo_path).expanduser() / CONFIG_FILE).is_file():
                problems.append(f"{repo_path} is not a memory repo (no {CONFIG_FILE})")
        problems += _client_problems(local)
        spaces = sorted({i.call.namespace or "" for i in local})
        if len(spaces) > 1:  # its tools would show what its hooks keep apart, or the reverse
            problems.append("its entries act in different namespaces ("
                            + ", ".join(n or "none" for n in spaces) + ")")
        mine = any(i.call.repo and Path(i.call.repo).expanduser().resolve() == here
                   for i in items)
        legacy = [i.name for i in items if i.what == "legacy"]
        if legacy:
            where = ", ".join(sorted({str(i.path) for i in items if i.what == "legacy"}))
            problems.append("old `memory compile --format claude-code-hook` handlers "
                            f"({', '.join(legacy)}) also run: remove them from {where}")
        hooks = sorted({i.name for i in items if i.what == HOOKS})
        servers = sorted({i.name for i in items if i.what == MCP})
        plain = [i for i in local if i.what == HOOKS and i.call.client is None]
        fixable = any(i.call.repo and fast_client(i.call.memory, i.call.repo) for i in plain)
        what = ", ".join(filter(None, [
            f"{len(hooks)} hooks" + (" (plain `memory hook`" + (": memory doctor --fix makes "
                                     "them ask the resident first)" if fixable else ")")
                                     if plain else "") if hooks else "",
            f"MCP server {', '.join(servers)}"
            if servers else ""]))
        repos = ", ".join(sorted({i.call.url or i.call.repo or "?" for i in items}))
        if spaces[:1] != [""] and len(spaces) == 1:
            repos += f" in namespace {spaces[0]}"
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


def _client_problems(items: list[Installed]) -> list[str]:
    """What keeps hooks installed through memrepo.agents.hook_client from running fast: the
    interpreter or memrepo they name gone (each hook then fails), or a resident socket
    that is not where this repo's server listens (each hook then runs in full)."""
    problems = []
    for client in sorted({i.call.client for i in items if i.call.client},
                         key=lambda c: (c.python, c.site)):
        if not (os.access(client.python, os.X_OK) and (
                Path(client.site) / CLIENT_FILE).is_file()):
            problems.append(f"the hooks run {client.python} with memrepo from "
                            f"{client.site}, which is gone")
    for repo in sorted({i.call.repo for i in items if i.call.client and i.call.repo}):
        sockets = {i.call.client.socket for i in items
                   if i.call.client and i.call.repo == repo}
        try:
            now = str(socket_path(serve_dir(Path(repo).expanduser())))
        except (OSError, MemrepoError):
            continue  # not a repo: said above
        if sockets - {now}:
            problems.append(f"the hooks ask a resident server at {', '.join(sorted(sockets))}, "
                            f"not {now} where {repo}'s listens (each hook runs in full)")
    return problems


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
