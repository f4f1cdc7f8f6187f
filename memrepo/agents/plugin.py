"""memrepo as a Claude Code plugin, a Codex plugin and a Gemini CLI extension, built from the
table `memory install` writes: for users who install plugins, the way they get every other one.

A plugin is a folder an agent installs from a marketplace (a git repository or a local
path): its manifest, its hooks (``hooks/hooks.json``), its MCP server (``.mcp.json``), a
skill telling the model when to search, remember and update (``skills/memory/SKILL.md``)
and a README. The handlers are :func:`memrepo.agents.settings.hook_handler`'s for every
event of :data:`memrepo.agents.harness.HARNESSES`, with its timeouts, and the server is
:func:`memrepo.agents.settings.server_entry`'s, so a plugin and ``memory install`` differ
only where a plugin, written once for everyone, cannot do the same:

- it runs ``memory`` from PATH (the user installs memrepo with pipx or pip), not an
  absolute path;
- it names no ``--repo``: ``memory`` finds the repo as every command does, ``$MEMORY_REPO``
  else the nearest memory repo above the session's folder (:func:`memrepo.repo.discover`).
  Where there is none, every hook still exits 0 with no output (it logs one line to the
  user's agents log) and the MCP server does not start (the agent lists it as failed);
- Codex's server names the variables Codex is to pass it (below).

Formats, as the clients read them (Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0;
docs/plugins.md):

- Claude Code: ``.claude-plugin/plugin.json``; ``hooks/hooks.json``, ``.mcp.json`` and
  ``skills/`` are found by default (a manifest naming the default hooks file loads it
  twice); the marketplace is ``.claude-plugin/marketplace.json`` at the marketplace root.
- Codex: ``.codex-plugin/plugin.json`` naming the same files; the marketplace is
  ``.agents/plugins/marketplace.json``, which Codex reads before a
  ``.claude-plugin/marketplace.json``, so one git repository is a marketplace for both.
  Codex starts an MCP server with a short list of variables (HOME, PATH, …):
  ``env_vars`` passes ``MEMORY_REPO`` (and ``MEMREPO_NO_RESIDENT``) on to it.
- Gemini CLI: an extension, a folder ``gemini extensions install`` copies (or ``link``
  links) into ``~/.gemini/extensions/<name>``: ``gemini-extension.json`` (name, version,
  the MCP servers, ``contextFileName``), ``hooks/hooks.json`` (read only from there, in
  the settings' hooks format), ``skills/`` and the context file (``GEMINI.md``, loaded
  into every session). No marketplace: a local folder or a git repository whose root is
  the extension. Gemini hands a hook the whole environment and a stdio MCP server all but
  secret-looking variables, so ``MEMORY_REPO`` reaches both. ``gemini -p`` offers the
  model only the tools a policy allows, and an extension cannot allow its own: the
  README and the build's output give the user's rule (:data:`GEMINI_POLICY`).
"""

from __future__ import annotations

import json
import os
import shlex
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memrepo import __version__
from memrepo.agents.harness import HARNESSES
from memrepo.agents.mcp_front import NO_RESIDENT_ENV
from memrepo.agents.settings import SERVER_NAME, TITLES, hook_handler, server_entry
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.repo import ENV_VAR

#: The plugin's name and its marketplace's: ``memrepo@memrepo``.
NAME = "memrepo"
#: The executable a plugin runs, found on PATH.
EXE = "memory"
#: The skill's folder and name.
SKILL = "memory"
#: Stands for the repo while the table's entries are built; taken out with its ``--repo``.
_UNNAMED = "<memory-repo>"

#: The MCP server's tools (memrepo.agents.mcp_server; tests/test_plugin.py compares).
TOOLS = ("memory_search", "memory_context", "memory_read", "memory_remember", "memory_update",
         "memory_reinforce", "memory_demote")
DESCRIPTION = ("Long-term memory in a git repo: each session briefed, each prompt given what "
               "it needs, every turn captured, and search and write tools over MCP.")
KEYWORDS = ["memory", "long-term-memory", "git", "mcp", "knowledge-base"]
AUTHOR = {"name": "memrepo"}


@dataclass(frozen=True)
class Format:
    """Where one agent reads a plugin and its marketplace, and how a user adds them."""

    title: str
    manifest: str  # the manifest's path inside the plugin
    marketplace: str | None  # the marketplace file's path under the marketplace root
    server_extra: dict[str, Any] = field(default_factory=dict)  # keys the server entry adds
    add: str = ""  # how a user adds the marketplace and installs the plugin
    notes: str = ""  # what else the user should know (README)
    mcp_file: str = ".mcp.json"  # the file that holds the MCP server
    kind: str = "plugin"  # what the agent calls it
    steps: tuple[str, ...] = ()  # what the client asks of the user after installing
    extra: str = ""  # Markdown the README adds after the notes


#: The file Gemini CLI loads into every session of an extension's (``contextFileName``).
CONTEXT_FILE = "GEMINI.md"
#: Where a Gemini CLI user allows memrepo's tools for ``gemini -p``, and the rule: an
#: extension cannot (Gemini ignores ``allow`` in an extension's policies and ``trust`` in
#: its servers), and ``gemini -p`` offers the model only the tools a policy allows
#: (bench/clients/clients.py writes the same rule).
GEMINI_POLICY_FILE = "~/.gemini/policies/memrepo.toml"
GEMINI_POLICY = (f'[[rule]]\nmcpName = "{SERVER_NAME}"\ntoolName = "*"\ndecision = "allow"\n'
                 'priority = 100\n')
#: What Gemini CLI asks of the user around the extension (README, build output).
GEMINI_STEPS = (
    "`gemini extensions install` asks \"Do you trust the files in this folder?\" of a local "
    "folder: answer y (`link` does not ask).",
    "Gemini CLI runs an extension's hooks while its hooks system is on "
    "(`hooksConfig.enabled` in settings.json, the default in 0.61; before 0.61: `/settings` "
    "→ Advanced → Enable Hooks System), and starts its MCP server in trusted folders only: "
    "trust the folder when Gemini asks.",
    f"`gemini -p` offers the model only the tools a policy allows: for memrepo's, write "
    f"{GEMINI_POLICY_FILE} (below); they then run without asking.",
)
GEMINI_EXTRA = f"""\
`gemini -p` offers the model only the tools a policy allows, and an extension cannot
allow its own (Gemini ignores `allow` in an extension's policies and `trust` in its
servers). For memrepo's tools in `gemini -p`, put this rule in
`{GEMINI_POLICY_FILE}` (they then run without asking, as after `memory
install gemini` with `"trust": true`):

```toml
{GEMINI_POLICY}```"""

FORMATS: dict[str, Format] = {
    "claude-code": Format(
        title=TITLES["claude-code"],
        manifest=".claude-plugin/plugin.json",
        marketplace=".claude-plugin/marketplace.json",
        add=f"/plugin marketplace add <git URL, owner/repo or local path of memrepo>\n"
            f"/plugin install {NAME}@{NAME}",
        notes=f"Claude Code also reads `{ENV_VAR}` from the `env` block of "
              "`~/.claude/settings.json`. Start a new session after installing: `/hooks` "
              f"lists the hooks, `/mcp` the server (as `plugin:{NAME}:{SERVER_NAME}`).",
    ),
    "codex": Format(
        title=TITLES["codex"],
        manifest=".codex-plugin/plugin.json",
        marketplace=".agents/plugins/marketplace.json",
        server_extra={"env_vars": [ENV_VAR, NO_RESIDENT_ENV]},
        add=f"codex plugin marketplace add <git URL, owner/repo or local path of memrepo>\n"
            f"codex plugin add {NAME}@{NAME}",
        notes=f"Codex runs a plugin's hooks only once they are trusted, and until then "
              "briefs, recalls and captures nothing: start `codex` and trust memrepo's hooks "
              "in `/hooks` (a one-off `codex exec` can pass "
              "`--dangerously-bypass-hook-trust`). Codex hands an MCP server only the "
              f"variables it names: this plugin names `{ENV_VAR}` and `{NO_RESIDENT_ENV}`.",
        steps=("Codex runs the plugin's hooks only once trusted: start `codex` and trust "
               "memrepo's hooks in `/hooks`.",),
    ),
    "gemini": Format(
        title=TITLES["gemini"],
        manifest="gemini-extension.json",
        marketplace=None,
        mcp_file="gemini-extension.json",
        kind="extension",
        add="gemini extensions install <path of this folder> --consent\n"
            "# or, to follow a checkout as it changes:\n"
            "gemini extensions link <path of this folder> --consent",
        notes=" ".join(GEMINI_STEPS[:2]) + (
            f" Gemini copies the extension on `install` (`gemini extensions update {NAME}` "
            "after a rebuild) and follows the folder on `link`; `gemini extensions list` "
            "shows it, `/hooks panel` the hooks, `/mcp` the server."),
        steps=GEMINI_STEPS,
        extra=GEMINI_EXTRA,
    ),
}
PLUGIN_AGENTS = tuple(FORMATS)
#: The agents whose plugin a marketplace file lists (Gemini installs a folder).
MARKETPLACE_AGENTS = tuple(a for a, f in FORMATS.items() if f.marketplace)
assert set(PLUGIN_AGENTS) <= set(HARNESSES), "a plugin per harness of harness.py"


def check_agent(agent: str) -> Format:
    """``agent``'s format, or MemrepoError naming the agents that have a plugin."""
    if agent not in FORMATS:
        hint = (f"; `memory install {agent}` wires it without a plugin"
                if agent in HARNESSES else "")
        raise MemrepoError(f"no plugin for {agent!r} (plugins: {', '.join(PLUGIN_AGENTS)})"
                           f"{hint}")
    return FORMATS[agent]


# --- the entries: the installer's, on PATH and without --repo ------------------------


def _drop_repo(argv: list[str]) -> list[str]:
    """``argv`` without the ``--repo <placeholder>`` the table's entry was built with."""
    i = argv.index("--repo")
    if argv[i + 1] != _UNNAMED:
        raise AssertionError(f"unexpected --repo {argv[i + 1]!r}")
    return argv[:i] + argv[i + 2:]


def hook_entry(agent: str, event: str) -> dict[str, Any]:
    """The handler of ``event``: :func:`hook_handler`'s (its form, its timeout), running the
    ``memory`` on PATH with no ``--repo``."""
    handler = hook_handler(agent, event, EXE, _UNNAMED)
    if "args" in handler:
        handler["args"] = _drop_repo(list(handler["args"]))
    else:
        handler["command"] = shlex.join(_drop_repo(shlex.split(handler["command"])))
    return handler


def hooks_document(agent: str) -> dict[str, Any]:
    """``hooks/hooks.json``: one group per event of the harness, as ``memory install``
    writes them (no matcher: every source of the event)."""
    return {"hooks": {event: [{"hooks": [hook_entry(agent, event)]}]
                      for event in HARNESSES[agent]}}


def mcp_entry(agent: str) -> dict[str, Any]:
    """The MCP server: :func:`server_entry`'s, on PATH, with no ``--repo``."""
    entry = server_entry(EXE, _UNNAMED)
    entry["args"] = _drop_repo(list(entry["args"]))
    return {**entry, **FORMATS[agent].server_extra}


def mcp_document(agent: str) -> dict[str, Any]:
    """``.mcp.json``."""
    return {"mcpServers": {SERVER_NAME: mcp_entry(agent)}}


# --- manifests ------------------------------------------------------------------------


def manifest(agent: str) -> dict[str, Any]:
    """The plugin manifest (``plugin.json``)."""
    if agent == "gemini":  # hooks/hooks.json, skills/ and the context file by their place
        return {"name": NAME, "version": __version__, "description": DESCRIPTION,
                "mcpServers": mcp_document(agent)["mcpServers"],
                "contextFileName": CONTEXT_FILE}
    common: dict[str, Any] = {"name": NAME, "version": __version__, "description": DESCRIPTION,
                              "author": AUTHOR, "license": "MIT", "keywords": KEYWORDS}
    if agent == "claude-code":
        return common  # hooks/hooks.json, .mcp.json and skills/ are read by default
    return {**common, "skills": "./skills/", "mcpServers": "./.mcp.json",
            "hooks": "./hooks/hooks.json", "interface": {
                "displayName": NAME,
                "shortDescription": "Long-term memory in a git repo",
                "longDescription": DESCRIPTION,
                "developerName": AUTHOR["name"],
                "category": "Productivity",
                "capabilities": ["Read", "Write"],
                "defaultPrompt": ["What do you remember about this project?"]}}


def marketplace(agent: str, source: str) -> dict[str, Any]:
    """The marketplace file listing the plugin at ``source`` (``./plugins/<agent>``,
    relative to the marketplace root)."""
    if agent == "claude-code":
        return {"name": NAME, "owner": AUTHOR,
                "metadata": {"description": "memrepo: long-term memory for AI agents"},
                "plugins": [{"name": NAME, "source": source, "description": DESCRIPTION,
                             "version": __version__, "author": AUTHOR,
                             "category": "productivity", "keywords": KEYWORDS}]}
    return {"name": NAME, "interface": {"displayName": NAME},
            "plugins": [{"name": NAME, "source": {"source": "local", "path": source},
                         "policy": {"installation": "AVAILABLE",
                                    "authentication": "ON_INSTALL"},
                         "category": "Productivity"}]}


# --- the texts --------------------------------------------------------------------------

SKILL_DESCRIPTION = (
    "Use the user's long-term memory (memrepo's MCP tools). Search it before answering "
    "anything that may depend on an earlier session (a past decision, a preference, a "
    "person, how something was done); save durable decisions, preferences and lessons; "
    "correct a remembered fact that changed. Use when the user refers to past work, asks "
    "what was decided, states a preference, or says to remember or forget something.")

SKILL_TEXT = f"""---
name: {SKILL}
description: {SKILL_DESCRIPTION}
---

# Long-term memory (memrepo)

The `{SERVER_NAME}` MCP server is the user's long-term memory: Markdown notes in a git
repo (journal, projects, people, procedures, past conversations). Each session already
starts with a briefing and each prompt comes with what memory recalled for it; call the
tools for what those did not bring.

- `memory_search` (query): before answering anything that may depend on an earlier
  session, when the recalled passages do not settle it. Open a hit with `memory_read`
  (ref: `path`, `path:12` or `path:12-30`, as search returns them).
- `memory_context` (message): at the start of a larger task, one briefing of what memory
  holds on it (identity, core memory, matching topics and passages).
- `memory_remember` (text): when something durable is decided or learned (a decision and
  its reason, a preference, a lesson, a fact about a person or project). One
  self-contained line; not chit-chat, not what memory already says, never a secret.
- `memory_update` (ref, text): when a remembered fact changed, supersede its line (ref
  `path:LINE` from a search) rather than remember a contradiction beside it.
- `memory_reinforce` / `memory_demote` (ref): a hit that helped / one stale or wrong.

`knowledge/identity/` (who the user is, how to work with them) is read-only to these
tools: when it is wrong, say so and let the user edit it.

No memrepo tools, or "no memory repo found": `memory` finds the repo through
`{ENV_VAR}`, else the nearest memory repo above the session's folder; tell the user.
"""


CONTEXT_TEXT = f"""# Long-term memory (memrepo)

The `{SERVER_NAME}` MCP server is the user's long-term memory (Markdown notes in a git
repo). Each session starts with its briefing and each prompt comes with what it recalled.
Beyond that (the `{SKILL}` skill says more):

- `memory_search` before answering anything that may depend on an earlier session;
- `memory_remember` a durable decision, preference or lesson (one line, never a secret);
- `memory_update` a remembered fact that changed, rather than contradict it.

`knowledge/identity/` is read-only to these tools: when it is wrong, tell the user.
"""


def _bullet(text: str) -> str:
    return textwrap.fill(text, 90, subsequent_indent="  ")


def readme(agent: str) -> str:
    """The plugin's README.md: what it adds, what it needs, how to install it."""
    fmt = FORMATS[agent]
    events = ", ".join(f"{event} ({act})" for event, act in HARNESSES[agent].items())
    hooks = _bullet(f"- **Hooks** (`hooks/hooks.json`): {events}.")
    notes = textwrap.fill(fmt.notes, 90)
    extra = f"\n{fmt.extra}\n" if fmt.extra else ""
    runs = "the plugin" if fmt.kind == "plugin" else "it"
    tools = _bullet(f"- **MCP server** `{SERVER_NAME}` (`{fmt.mcp_file}`: `{EXE} mcp`): "
                    f"{', '.join(TOOLS)}.")
    if agent == "gemini":
        tools += "\n" + _bullet(f"- **Context** `{CONTEXT_FILE}`, loaded into every session: "
                                 "when to search, remember and update.")
    return f"""# memrepo for {fmt.title}

Generated by `memory plugin build {agent}` from the table `memory install {agent}` writes;
edit memrepo/agents/plugin.py (or settings.py), not these files.

{hooks}
{tools}
- **Skill** `{SKILL}`: when to search, remember and update.

## Install

1. memrepo, with `pipx` or `pip`, so that `{EXE}` is on the PATH {fmt.title} runs hooks
   with: {runs} runs `{EXE}` from PATH (`{EXE} --version` must work in a new shell).
2. A memory repo: `{EXE} init ~/agent-memory`.
3. Point at it: `export {ENV_VAR}=~/agent-memory` in your shell profile. Without it the
   repo is the nearest memory repo above the folder the session runs in.
4. {"In a shell" if agent == "gemini" else "In " + fmt.title}:

```
{fmt.add}
```

{notes}
{extra}
Use the {fmt.kind} or `{EXE} install {agent}`, not both: each runs its own hooks. Where no
memory repo is found, each hook exits 0 with no output (one line in
`$XDG_STATE_HOME/memrepo/agents.log`) and the MCP server does not start.
`MEMREPO_NO_HOOKS=1` turns the hooks off for one session. More: docs/plugins.md in memrepo.
"""


_MARKET = "<git URL, owner/repo or local path of memrepo>"
_FOLDER = "<path of this folder>"


def next_steps(agent: str, folder: Path, root: Path | None = None) -> list[str]:
    """What a user does after a build, one line each: the client's own install commands
    (this build's folder or marketplace filled in) and what the client then asks of them."""
    fmt = FORMATS[agent]
    add = fmt.add.replace(_FOLDER, os.path.abspath(folder))
    if root is not None:
        add = add.replace(_MARKET, os.path.abspath(root))
    out = [f"{fmt.title}: install the {fmt.kind} with the client's own commands:"]
    out += [f"  {line}" for line in add.splitlines()]
    out += [f"  - {step}" for step in fmt.steps]
    if agent == "gemini":
        out += [f"    {line}" for line in GEMINI_POLICY.splitlines()]
    return out


# --- the files --------------------------------------------------------------------------


def _json(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def plugin_files(agent: str) -> dict[str, str]:
    """Every file of ``agent``'s plugin: path inside the plugin -> text."""
    fmt = check_agent(agent)
    files = {fmt.manifest: _json(manifest(agent)),
             "hooks/hooks.json": _json(hooks_document(agent))}
    if fmt.mcp_file != fmt.manifest:
        files[fmt.mcp_file] = _json(mcp_document(agent))
    if agent == "gemini":
        files[CONTEXT_FILE] = CONTEXT_TEXT
    return {**files, f"skills/{SKILL}/SKILL.md": SKILL_TEXT, "README.md": readme(agent)}


def source_path(root: Path, plugin_dir: Path) -> str:
    """``plugin_dir`` as a marketplace names it: ``./`` and a path inside ``root``."""
    try:
        rel = Path(os.path.abspath(plugin_dir)).relative_to(os.path.abspath(root))
    except ValueError:
        raise MemrepoError(f"{plugin_dir} is not inside the marketplace root {root}: a "
                           "marketplace lists plugins inside it") from None
    if not rel.parts:
        raise MemrepoError(f"{plugin_dir}: a plugin cannot be the marketplace root itself")
    return "./" + PurePosixPath(*rel.parts).as_posix()


def marketplace_files(plugin_dirs: dict[str, Path], root: Path) -> dict[str, str]:
    """The marketplace file of each agent in ``plugin_dirs`` (agent -> its plugin's folder)
    that has one, path under ``root`` -> text."""
    return {str(FORMATS[agent].marketplace): _json(marketplace(agent, source_path(root, folder)))
            for agent, folder in plugin_dirs.items() if FORMATS[agent].marketplace}


# --- writing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One file of a build: where, whether its bytes changed, and whose it is."""

    path: Path
    changed: bool
    agent: str
    kind: str  # "plugin" or "marketplace"


def _write(base: Path, files: dict[str, str], agent: str, kind: str) -> list[Written]:
    out = []
    for rel, text in files.items():
        path = base / rel
        try:
            same = path.read_text(encoding="utf-8") == text
        except (FileNotFoundError, UnicodeDecodeError, IsADirectoryError):
            same = False
        if not same:
            atomic_write(path, text, mode=0o644)
        out.append(Written(path, not same, agent, kind))
    return out


def stale_files(folder: Path, files: Iterable[str]) -> list[Path]:
    """Files under ``folder`` that are not in the plugin (left by an older build)."""
    keep = {PurePosixPath(f) for f in files}
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()):
        if PurePosixPath(*path.relative_to(folder).parts) not in keep:
            found.append(path)
    return found


def build(targets: dict[str, Path], root: Path | None = None) -> tuple[list[Written],
                                                                       list[Path]]:
    """Write each agent's plugin into its folder (agent -> folder) and, given a
    marketplace ``root``, each agent's marketplace file under it; atomically, and only the
    files whose bytes change. Returns what was written and the stale files found in the
    plugin folders (reported, never deleted)."""
    for agent in targets:
        check_agent(agent)
    markets = marketplace_files(targets, root) if root is not None else {}  # checked first
    written: list[Written] = []
    stale: list[Path] = []
    for agent, folder in targets.items():
        files = plugin_files(agent)
        written += _write(folder, files, agent, "plugin")
        stale += stale_files(folder, files)
    if root is not None:
        for agent in targets:
            rel = FORMATS[agent].marketplace
            if rel is not None:
                written += _write(root, {rel: markets[rel]}, agent, "marketplace")
    return written, stale
