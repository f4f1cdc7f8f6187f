"""What ``memory doctor`` finds of memrepo installed as a plugin: a Claude Code or Codex
plugin, or a Gemini CLI extension (:mod:`memrepo.agents.plugin` builds them), read where
each client's own install command left it, and checked beside ``memory install``'s entries
(:func:`memrepo.agents.install.installed`).

What the clients write (Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, each run in
a sandbox home; tests/test_doctor_plugins.py lays the files out the same way):

- Claude Code (``claude plugin install NAME@MARKET [--scope user|project|local]``):
  ``~/.claude/plugins/installed_plugins.json`` (``{"version": 2, "plugins": {"NAME@MARKET":
  [{"scope", "installPath", "version", "projectPath"?}]}}``), the copy under
  ``~/.claude/plugins/cache/MARKET/NAME/VERSION/``, and ``enabledPlugins`` in the scope's
  settings file (``~/.claude/settings.json``, ``<project>/.claude/settings.json`` or
  ``settings.local.json``); ``$CLAUDE_CONFIG_DIR`` moves ``~/.claude``.
- Codex (``codex plugin add NAME@MARKET``): the copy under
  ``$CODEX_HOME/plugins/cache/MARKET/NAME/VERSION/`` and ``[plugins."NAME@MARKET"] enabled
  = true`` in ``$CODEX_HOME/config.toml``.
- Gemini CLI (``gemini extensions install PATH`` / ``link PATH``):
  ``~/.gemini/extensions/NAME/`` holding a copy (or, linked, only
  ``.gemini-extension-install.json`` naming the source folder), and
  ``~/.gemini/extensions/extension-enablement.json`` (per extension, path rules,
  ``!`` disabling; the last rule matching the folder wins); ``$GEMINI_CLI_HOME`` moves
  the home.

A plugin is memrepo's by what it runs (:func:`memrepo.agents.settings.memrepo_call`), as
``memory install``'s entries are, whatever its name or marketplace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.agents import install as agent_install
from memrepo.agents.plugin import EXE, FORMATS
from memrepo.agents.settings import BASES, HOOKS, MCP, SERVER_NAME, memrepo_call
from memrepo.agents.settings_edit import JsonText, TomlText
from memrepo.errors import MemrepoError
from memrepo.health import Check
from memrepo.layout import CONFIG_FILE
from memrepo.repo import ENV_VAR

#: How a user takes each client's plugin out again.
REMOVE = {"claude-code": "claude plugin uninstall {name}",
          "codex": "codex plugin remove {name}",
          "gemini": "gemini extensions uninstall {name}"}
#: Where Gemini CLI's home is when ``$GEMINI_CLI_HOME`` is set (its ``.gemini`` under it).
GEMINI_HOME_ENV = "GEMINI_CLI_HOME"


@dataclass(frozen=True)
class PluginInstall:
    """memrepo's plugin as one client installed it."""

    agent: str
    name: str  # as the client names it: memrepo@memrepo (Claude Code, Codex), memrepo
    version: str
    path: Path  # the installed copy (a linked Gemini extension: its source folder)
    scope: str  # user, project or local (Claude Code); user (Codex, Gemini CLI)
    enabled: bool
    hooks: tuple[str, ...]  # the events whose handler is memrepo's
    server: bool  # memrepo's MCP server is in it
    project: str = ""  # the folder a project- or local-scope install is for
    linked: bool = False  # a Gemini extension linked to its source, not copied
    problems: tuple[str, ...] = ()  # what keeps the client from running it


def _home_dir(base: str, home: Path | None) -> Path:
    """A client's folder (``~/.claude``, ``~/.codex``, ``~/.gemini``), moved by its own
    variable when no home is given."""
    rel, env = BASES[base]
    if base == "gemini":
        env = None
        if home is None and os.environ.get(GEMINI_HOME_ENV):
            return Path(os.environ[GEMINI_HOME_ENV]).expanduser() / rel
    if home is None and env and os.environ.get(env):
        return Path(os.environ[env]).expanduser()
    return (home or Path.home()) / rel


def _json(path: Path, errors: list[str], comments: bool = False) -> Any:
    """``path``'s JSON (None when it is absent; an error noted when it does not parse)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{path}: {exc}")
        return None
    if comments:
        try:
            return JsonText(text, str(path), comments=True).value
        except MemrepoError as exc:
            errors.append(str(exc))
            return None
    try:
        return json.loads(text)
    except ValueError as exc:
        errors.append(f"{path}: not JSON ({exc})")
        return None


def _hooks(folder: Path, errors: list[str]) -> dict[str, list[str]]:
    """The events of ``folder/hooks/hooks.json`` that run memrepo's hook, each with the
    names of memrepo's handlers there (Gemini disables a hook by its name)."""
    doc = _json(folder / "hooks" / "hooks.json", errors)
    events = doc.get("hooks") if isinstance(doc, dict) else None
    found: dict[str, list[str]] = {}
    for event, groups in (events if isinstance(events, dict) else {}).items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                call = memrepo_call(handler)
                if call is not None and call.kind == HOOKS:
                    found.setdefault(event, []).append(
                        str(handler.get("name") or handler.get("command")))
    return found


def _has_server(servers: Any) -> bool:
    return isinstance(servers, dict) and any(
        (call := memrepo_call(entry, name)) is not None and call.kind == MCP
        for name, entry in servers.items())


def _mcp_json(folder: Path, errors: list[str]) -> bool:
    """Whether ``folder/.mcp.json`` holds memrepo's server (``mcpServers``, or the servers
    at its top level as Claude Code also reads it)."""
    doc = _json(folder / ".mcp.json", errors)
    if not isinstance(doc, dict):
        return False
    return _has_server(doc.get("mcpServers", doc))


def _manifest_version(path: Path, errors: list[str]) -> str | None:
    doc = _json(path, errors)
    version = doc.get("version") if isinstance(doc, dict) else None
    return str(version) if version else None


# --- each client ---------------------------------------------------------------------------


def _claude(home: Path | None, errors: list[str]) -> list[PluginInstall]:
    """Claude Code: installed_plugins.json's entries whose copy runs memrepo."""
    root = _home_dir("claude", home)
    doc = _json(root / "plugins" / "installed_plugins.json", errors)
    plugins = doc.get("plugins") if isinstance(doc, dict) else None
    out = []
    for key, entries in (plugins if isinstance(plugins, dict) else {}).items():
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("installPath"), str):
                continue
            path = Path(entry["installPath"])
            hooks, server = _hooks(path, errors), _mcp_json(path, errors)
            if not hooks and not server:
                continue
            scope = str(entry.get("scope") or "user")
            project = entry.get("projectPath") if isinstance(entry.get("projectPath"),
                                                             str) else ""
            settings = {"user": root / "settings.json",
                        "project": Path(project) / ".claude" / "settings.json",
                        "local": Path(project) / ".claude" / "settings.local.json"}.get(scope)
            flags = _json(settings, errors) if settings and (project or scope == "user") \
                else None
            enabled = isinstance(flags, dict) and isinstance(flags.get("enabledPlugins"), dict) \
                and flags["enabledPlugins"].get(key) is True
            version = str(entry.get("version") or _manifest_version(
                path / FORMATS["claude-code"].manifest, errors) or "?")
            out.append(PluginInstall("claude-code", key, version, path, scope, enabled,
                                     tuple(hooks), server, project))
    return out


def _codex(home: Path | None, errors: list[str]) -> list[PluginInstall]:
    """Codex: the cached copies that run memrepo, and ``[plugins."NAME@MARKET"]``."""
    root = _home_dir("codex", home)
    cache = root / "plugins" / "cache"
    if not cache.is_dir():
        return []
    config: dict[str, Any] = {}
    try:
        text = (root / "config.toml").read_text(encoding="utf-8")
        config = TomlText(text, str(root / "config.toml")).get(("plugins",)) or {}
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, MemrepoError) as exc:
        errors.append(str(exc))
    out = []
    for folder in sorted(p for p in cache.glob("*/*/*") if p.is_dir()):
        hooks, server = _hooks(folder, errors), _mcp_json(folder, errors)
        if not hooks and not server:
            continue
        key = f"{folder.parent.name}@{folder.parent.parent.name}"
        entry = config.get(key) if isinstance(config, dict) else None
        enabled = isinstance(entry, dict) and entry.get("enabled", True) is not False
        version = _manifest_version(folder / FORMATS["codex"].manifest, errors) or folder.name
        out.append(PluginInstall("codex", key, version, folder, "user", enabled,
                                 tuple(hooks), server))
    return out


def _glob_regex(rule: str) -> str:
    """A Gemini enablement rule as the regular expression Gemini CLI matches folders with
    (``globToRegex``: ``*`` after a ``/`` matches the folder and everything under it)."""
    escaped = re.sub(r"[.+?^${}()|\[\]\\]", lambda m: "\\" + m.group(0), rule)
    return re.sub(r"(/?)\*", r"(\1.*)?", escaped)


def gemini_enabled(doc: Any, name: str, folder: Path) -> bool:
    """Whether Gemini CLI runs extension ``name`` in ``folder``, by
    extension-enablement.json (``doc``): enabled unless the last rule matching says ``!``."""
    entry = doc.get(name) if isinstance(doc, dict) else None
    rules = entry.get("overrides") if isinstance(entry, dict) else None
    where = "/" + folder.as_posix().strip("/") + "/"
    enabled = True
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, str):
            continue
        off = rule.startswith("!")
        if re.fullmatch(_glob_regex(rule[1:] if off else rule), where):
            enabled = not off
    return enabled


def _gemini_problems(root: Path, project: Path, names: list[str],
                     errors: list[str]) -> list[str]:
    """What in Gemini's settings (user, then the project's) keeps the hooks from running."""
    problems = []
    for path in (root / "settings.json", project / ".gemini" / "settings.json"):
        doc = _json(path, errors, comments=True)
        cfg = doc.get("hooksConfig") if isinstance(doc, dict) else None
        if not isinstance(cfg, dict):
            continue
        if cfg.get("enabled") is False:
            problems.append(f"hooks are off ({path}: hooksConfig.enabled is false): no "
                            "briefing, recall or capture")
        off = [n for n in names if n in (cfg.get("disabled") or [])]
        if off:
            problems.append(f"{path}: hooksConfig.disabled turns off {', '.join(off)}")
    return problems


def _gemini(home: Path | None, project: Path, errors: list[str]) -> list[PluginInstall]:
    """Gemini CLI: the extensions (copied or linked) that run memrepo."""
    root = _home_dir("gemini", home)
    base = root / "extensions"
    if not base.is_dir():
        return []
    enablement = _json(base / "extension-enablement.json", errors)
    out = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        meta = _json(folder / ".gemini-extension-install.json", errors)
        linked = isinstance(meta, dict) and meta.get("type") == "link" \
            and isinstance(meta.get("source"), str)
        path = Path(meta["source"]) if linked else folder
        manifest = _json(path / FORMATS["gemini"].manifest, errors)
        if not isinstance(manifest, dict):
            continue
        hooks = _hooks(path, errors)
        server = _has_server(manifest.get("mcpServers"))
        if not hooks and not server:
            continue
        name = str(manifest.get("name") or folder.name)
        names = [n for handlers in hooks.values() for n in handlers]
        out.append(PluginInstall(
            "gemini", name, str(manifest.get("version") or "?"), path, "user",
            gemini_enabled(enablement, name, project), tuple(hooks), server, linked=linked,
            problems=tuple(_gemini_problems(root, project, names, errors) if hooks else ())))
    return out


def installed_plugins(home: Path | None = None, project: Path | None = None) -> tuple[
        list[PluginInstall], list[str]]:
    """memrepo's plugins as Claude Code, Codex and Gemini CLI installed them under the
    home (``project``: the folder a session would run in, for Gemini's enablement), and
    the files that could not be read."""
    project = (project or Path.cwd()).resolve()
    errors: list[str] = []
    found = _claude(home, errors) + _codex(home, errors) + _gemini(home, project, errors)
    return found, errors


# --- memory doctor ----------------------------------------------------------------------------


def _repo_target(agent: str, home: Path | None) -> tuple[str, str | None]:
    """Where the plugin's ``memory`` finds its repo, and what is wrong with it."""
    value = os.environ.get(ENV_VAR)
    source = f"${ENV_VAR}"
    if not value and agent == "claude-code":  # Claude Code also takes it from settings
        doc = _json(_home_dir("claude", home) / "settings.json", [])
        env = doc.get("env") if isinstance(doc, dict) else None
        value = env.get(ENV_VAR) if isinstance(env, dict) else None
        source = f"the env block's {ENV_VAR}"
    if not value:
        return f"the nearest memory repo above the session's folder (${ENV_VAR} not set)", None
    if not (Path(str(value)).expanduser() / CONFIG_FILE).is_file():
        return f"{source} ({value})", f"{source} ({value}) is not a memory repo (no {CONFIG_FILE})"
    return f"{source} ({value})", None


def _check(p: PluginInstall, home: Path | None) -> Check:
    fmt = FORMATS[p.agent]
    where = f"{p.scope} scope" + (f" for {p.project}" if p.project else "")
    if p.agent == "gemini":
        where = f"{fmt.title} extension {'linked to' if p.linked else 'at'} {p.path}"
    what = ", ".join(filter(None, [f"{len(p.hooks)} hooks" if p.hooks else "",
                                   f"MCP server {SERVER_NAME}" if p.server else ""]))
    head = f"installed as plugin {p.name} ({p.version}), {where}"
    name = f"{p.agent} plugin"
    if not p.enabled:
        return Check(name, True, f"{head}: disabled, so none of it runs")
    target, bad_repo = _repo_target(p.agent, home)
    problems = [*p.problems, *([bad_repo] if bad_repo else [])]
    if shutil.which(EXE) is None:
        problems.append(f"`{EXE}` is not on PATH here, and the {fmt.kind} runs the `{EXE}` "
                        "on PATH (install memrepo with pipx or pip)")
    if problems:
        return Check(name, False, f"{head}: " + "; ".join(problems),
                     f"see the {fmt.kind}'s README (docs/plugins.md)", warning=True)
    note = f"; {fmt.steps[0]}" if p.agent == "codex" and p.hooks else ""
    return Check(name, True, f"{head}, enabled: {what} → {target}{note}")


def _both(found: list[PluginInstall], entries: list[agent_install.Installed]) -> list[Check]:
    """Per agent, a warning when memrepo's hooks run from an enabled plugin and from
    ``memory install``'s entries both: each copy runs (a brief twice, every turn captured
    twice)."""
    checks = []
    for agent in FORMATS:
        plugins = [p for p in found if p.agent == agent and p.enabled and p.hooks]
        settings = [i for i in entries if i.agent == agent and i.what == HOOKS]
        if not plugins or not settings:
            continue
        scopes = sorted({i.scope for i in settings})
        files = ", ".join(sorted({str(i.path) for i in settings}))
        names = ", ".join(sorted({p.name for p in plugins}))
        removes = " or ".join(REMOVE[agent].format(name=p.name) for p in plugins)
        checks.append(Check(
            f"{agent} plugin and memory install", False,
            f"memrepo's hooks run twice: from the plugin {names} and from memory install "
            f"({files}); each copy runs",
            f"keep one: memory uninstall {agent} --scope {' / '.join(scopes)}, or {removes}",
            warning=True))
    return checks


def health_checks(repo: Any, home: Path | None = None,
                  project: Path | None = None) -> list[Check]:
    """``memory doctor``: one line per plugin of memrepo's a client installed ("installed
    as plugin NAME (VERSION)"), a warning when something keeps it from running, and one
    when ``memory install``'s hooks run beside it. Nothing when there is no plugin."""
    found, errors = installed_plugins(home, project)
    checks = [Check("agent plugins", False, e, warning=True) for e in errors]
    if not found:
        return checks
    checks += [_check(p, home) for p in found]
    entries, _ = agent_install.installed(home, project)
    return checks + _both(found, entries)
