"""Where each agent keeps memrepo's hooks and MCP server, and what memrepo's entries look like.

One table (:data:`AGENTS`) says, per agent and scope, which files hold the hooks and the
MCP server and where inside them. memrepo's entries (:func:`hook_handler`,
:func:`server_entry`) are recognised by what they run (:func:`memrepo_call`: a ``memory``
executable with ``hook <agent>`` or ``mcp`` in its arguments), never by their position,
so a second install with another repo or another ``memory`` replaces them in place.
Sources of every format: ../shared/reviews/agent-integration.md §1.1, §1.2, §1.7, §2.4
(Claude Code), §4.1 (Codex), §4.2 (Gemini CLI). Merging the entries into the files is
:mod:`memrepo.agents.install`'s.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.agents import hook_client
from memrepo.agents.harness import BRIEF, CAPTURE, END, FLUSH, HARNESSES, RECALL, action
from memrepo.cliargs import split_namespace, split_repo
from memrepo.errors import MemrepoError

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
        next_step="Codex runs new hooks only once trusted, and until then captures "
                  "nothing: start `codex` in this folder and approve memrepo's hooks in "
                  "`/hooks` (a one-off `codex exec` can pass "
                  "`--dangerously-bypass-hook-trust`).",
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
        next_step="Gemini CLI runs the hooks (before 0.61: turn on `/settings` → Advanced "
                  "→ Enable Hooks System; `/hooks panel` lists them) and the MCP server in "
                  "trusted folders only: trust the folder when Gemini asks. `gemini -p` "
                  "offers the model only trusted servers' tools: to have memrepo's there, "
                  "add `\"trust\": true` to `mcpServers.memrepo` in settings.json (its "
                  "tools then run without asking).",
    ),
}
assert set(AGENTS) == set(HARNESSES), "one installer entry per harness of harness.py"


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


def place_keys(place: Place, project: Path) -> tuple[str, ...]:
    """``place``'s keys, the project placeholder replaced by ``project``'s path."""
    return tuple(str(project) if k == PROJECT_KEY else k for k in place.keys)


# --- what memrepo's entries look like ------------------------------------------------


@dataclass(frozen=True)
class Client:
    """How a hook runs through :mod:`memrepo.agents.hook_client`: this ``python`` with no
    site, memrepo from ``site``, the clone's resident server on ``socket``."""

    python: str
    site: str
    socket: str

    def argv(self) -> list[str]:
        return [self.python, "-I", "-S", "-c", hook_client.CODE, self.site, self.socket]


def hook_handler(agent: str, event: str, memory: str, repo: str,
                 namespace: str | None = None, client: Client | None = None
                 ) -> dict[str, Any]:
    """The handler that runs ``memory --repo REPO [--namespace NAME] hook AGENT EVENT``,
    through ``client`` when given (the same hook, asked of the resident server first)."""
    spec = AGENTS[agent]
    argv = [memory, "--repo", repo, *_namespace_args(namespace), "hook", agent, event]
    if client is not None:
        argv = [*client.argv(), *argv]
    handler: dict[str, Any] = {"name": f"memrepo-{event}"} if spec.named else {}
    handler["type"] = "command"
    if spec.shell_form:
        handler["command"] = shlex.join(argv)
    else:  # exec form: no shell, no quoting, no reliance on the hook's PATH
        handler["command"], handler["args"] = argv[0], argv[1:]
    handler["timeout"] = TIMEOUTS[str(action(agent, event))] * spec.timeout_unit
    return handler


def _namespace_args(namespace: str | None) -> list[str]:
    return ["--namespace", namespace] if namespace else []


def server_entry(memory: str, repo: str, *, agent: str | None = None,
                 url: str | None = None, token_env: str | None = None,
                 namespace: str | None = None) -> dict[str, Any]:
    """The MCP server entry: ``memory --repo REPO [--namespace NAME] mcp`` on stdio (the
    same shape in all three agents), or, with ``url``, ``agent``'s entry for a streamable
    HTTP server (``memory mcp --http``) sending the token in ``$token_env`` (docs/remote-mcp.md):

    - Claude Code: ``type: http``, ``url``, ``headers`` (``${VAR}`` expanded there)
    - Gemini CLI: ``httpUrl`` (its ``url`` is SSE), ``headers`` (``${VAR}`` expanded)
    - Codex: ``url`` and ``bearer_token_env_var`` (it refuses a token in the file)
    """
    if url is None:
        return {"command": memory, "args": ["--repo", repo, *_namespace_args(namespace), "mcp"]}
    bearer = {"Authorization": f"Bearer ${{{token_env}}}"} if token_env else None
    if agent == "codex":
        return {"url": url, **({"bearer_token_env_var": token_env} if token_env else {})}
    if agent == "gemini":
        return {"httpUrl": url, **({"headers": bearer} if bearer else {})}
    if agent == "claude-code":
        return {"type": "http", "url": url, **({"headers": bearer} if bearer else {})}
    raise MemrepoError(f"an HTTP server entry needs the agent (one of {', '.join(AGENTS)})")


#: The agents' names in what memrepo tells the user.
TITLES = {"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}


def token_step(agent: str, token_env: str) -> str:
    """The user's step for an HTTP entry's token: each agent reads ``$token_env`` from the
    environment it starts in, and without it runs without memrepo's tools (Codex without a
    word): bench/clients/run.py --routes http."""
    return (f"the token: export {token_env}=mrp_… (from `memory mcp token create NAME`) in "
            f"the environment {TITLES[agent]} starts from; unset, the server refuses it (401) "
            "and the model gets none of memrepo's tools")


#: Keys of a server entry that say how it is reached: memrepo's entry owns them, so an
#: install replaces them all (Codex refuses ``url`` beside ``command`` or ``env``); the
#: user's other keys (Gemini's ``trust``, Claude Code's ``alwaysLoad``) stay.
HTTP_KEYS = frozenset({"type", "url", "httpUrl", "headers", "bearer_token_env_var"})
STDIO_ONLY_KEYS = frozenset({"env", "cwd"})


def merged_entry(current: object, want: dict[str, Any]) -> dict[str, Any]:
    """``want`` over ``current``'s keys that are the user's: every key saying how the
    server is reached is ``want``'s, and a stdio entry's ``env`` and ``cwd`` are kept only
    while it stays on stdio."""
    if not isinstance(current, dict):
        return want
    owned = (HTTP_KEYS - {"type"}) | {"command", "args"}
    if "command" not in want:
        owned |= STDIO_ONLY_KEYS | {"type"}
    elif current.get("type") not in (None, "stdio"):  # a `"type": "stdio"` stays
        owned |= {"type"}
    return {**{k: v for k, v in current.items() if k not in owned}, **want}


#: How a URL may look for ``memory install --url`` and a token's variable name.
URL_SCHEMES = ("http://", "https://")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_url(url: str, token_env: str | None) -> None:
    """MemrepoError for a URL no agent would reach, or a variable name no shell has."""
    if not url.startswith(URL_SCHEMES) or len(url) <= len("https://") or any(
            c.isspace() for c in url):
        raise MemrepoError(f"--url {url!r}: an http:// or https:// URL, e.g. "
                           "http://127.0.0.1:8765/mcp")
    if token_env is not None and not ENV_NAME.match(token_env):
        raise MemrepoError(f"--token-env {token_env!r}: an environment variable's name "
                           "(letters, digits, _), e.g. MEMREPO_TOKEN")


@dataclass(frozen=True)
class Call:
    """What one of memrepo's entries runs."""

    memory: str
    repo: str | None
    kind: str  # HOOKS, MCP, or "legacy" (`memory compile --format claude-code-hook`)
    harness: str | None = None
    event: str | None = None
    url: str | None = None  # an HTTP server entry's (memory and repo then empty)
    namespace: str | None = None  # ``memory --namespace NAME …``: the agent's namespace
    client: Client | None = None  # a hook run through memrepo.agents.hook_client


def memrepo_call(entry: object, name: str | None = None) -> Call | None:
    """What ``entry`` (a hook handler, or the MCP server entry named ``name``) runs, when
    it is memrepo's. An HTTP server entry names no executable: it is memrepo's when it is
    named :data:`SERVER_NAME` (what ``memory install --url`` writes)."""
    if name == SERVER_NAME and isinstance(entry, dict) and "command" not in entry:
        url = entry.get("url", entry.get("httpUrl"))
        return Call("", None, MCP, url=url) if isinstance(url, str) else None
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
    client = None  # recognised by the module it runs: another release's code is ours too
    if len(argv) > 7 and argv[1:4] == ["-I", "-S", "-c"] and hook_client.__name__ in argv[4]:
        client, argv = Client(argv[0], argv[5], argv[6]), argv[7:]
    if not argv or Path(argv[0]).name not in EXE_NAMES:
        return None
    ns, args = split_namespace(argv[1:])
    repo, rest = split_repo(args)
    if rest[:1] == ["hook"] and len(rest) > 1 and rest[1] in HARNESSES:
        return Call(argv[0], repo, HOOKS, rest[1], rest[2] if len(rest) > 2 else None,
                    namespace=ns, client=client)
    if rest[:1] == ["mcp"]:
        return Call(argv[0], repo, MCP, namespace=ns)
    if "compile" in rest and "claude-code-hook" in rest:
        return Call(argv[0], repo, "legacy")
    return None
