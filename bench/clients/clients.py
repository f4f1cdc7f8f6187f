"""The three real clients: their npm packages in a cache folder, and how each one is set up
in a sandbox home, pointed at the loopback mock, asked for its MCP servers and run once.

The packages are installed with npm into ``~/.cache/memrepo-bench/clients`` (or
``$MEMREPO_BENCH_CLIENTS``) on the first run and reused after; ``--update`` asks the registry
for the newest again. Nothing else here touches the network: every client runs with its
model API on 127.0.0.1 and a dead proxy on loopback for whatever else it would reach (its
update checks, telemetry, Codex's curated plugin sync), inside the harness's own network
namespace (``netns.py``).

Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(os.environ.get("MEMREPO_BENCH_CLIENTS")
             or Path.home() / ".cache" / "memrepo-bench" / "clients")
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
}
DEAD_PROXY = "http://127.0.0.1:9"
#: Codex features that reach the network on their own (remote plugins, sharing, apps)
CODEX_OFF = ["--disable", "remote_plugin", "--disable", "plugin_sharing", "--disable", "apps"]
#: What memrepo's Gemini extension README has a user put in ~/.gemini/policies/memrepo.toml
#: (memrepo.agents.plugin.GEMINI_POLICY; tests/test_plugin_gemini.py compares)
GEMINI_POLICY = ('[[rule]]\nmcpName = "memrepo"\ntoolName = "*"\ndecision = "allow"\n'
                 'priority = 100\n')


# --- npm ---------------------------------------------------------------------------------------


def bin_dir(cache: Path = CACHE) -> Path:
    return cache / "node_modules" / ".bin"


def ensure(cache: Path = CACHE, *, update: bool = False,
           pins: dict[str, str] | None = None) -> list[str]:
    """Install the clients into ``cache`` unless there already (or ``update``); returns the
    npm command run (empty when nothing was installed). ``pins``: client -> version."""
    pins = pins or {}
    wanted = {PACKAGES[name]: pins.get(name, "latest") for name in PACKAGES}
    have = all((bin_dir(cache) / b).exists() for b in ("claude", "codex", "gemini"))
    manifest = cache / "package.json"
    old = json.loads(manifest.read_text()).get("dependencies", {}) if manifest.exists() else {}
    pinned_changed = any(old.get(pkg) != spec for pkg, spec in wanted.items() if spec != "latest")
    if have and not update and not pinned_changed:
        return []
    if shutil.which("npm") is None:
        raise OSError("npm not found: install Node.js (>= 20) and npm")
    cache.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"name": "memrepo-bench-clients", "private": True,
                                    "dependencies": wanted}, indent=2) + "\n")
    argv = ["npm", "install", "--prefix", str(cache), "--prefer-online", "--no-audit",
            "--no-fund", "--loglevel", "error",
            *[f"{pkg}@{spec}" for pkg, spec in wanted.items()]]
    subprocess.run(argv, check=True, cwd=cache)
    return argv


def versions(cache: Path = CACHE) -> dict[str, str]:
    """The installed version of each package, from its package.json (and the client's own
    ``--version`` for the three clients: Claude Code's binary comes from a platform package)."""
    out: dict[str, str] = {}
    for name, pkg in PACKAGES.items():
        meta = cache / "node_modules" / pkg / "package.json"
        out[name] = json.loads(meta.read_text())["version"] if meta.exists() else "missing"
    return out


# --- one client ----------------------------------------------------------------------------


@dataclass
class Sandbox:
    """One client's world: a home, a project folder (the agent's cwd) and a memory repo."""

    root: Path
    client: str
    route: str  # none | install | plugin | http | hooks | mcp
    url: str = ""  # the mock's
    env: dict[str, str] = field(default_factory=dict)
    mcp_url: str = ""  # the http route's `memory mcp --http` endpoint
    tokens: dict[str, str] = field(default_factory=dict)  # its bearer tokens, by name
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)  # started for it

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def proj(self) -> Path:
        return self.root / "proj"

    @property
    def repo(self) -> Path:
        return self.root / "repo"


def base_env(sb: Sandbox, venv_bin: Path, cache: Path) -> dict[str, str]:
    """A clean environment: the sandbox's home, the clients and memrepo's venv on PATH, no
    key or proxy of the machine, every proxy variable a dead port on loopback."""
    home = sb.home
    env = {
        "PATH": os.pathsep.join([str(bin_dir(cache)), str(venv_bin),
                                 "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home), "USER": os.environ.get("USER", "bench"), "LANG": "C.UTF-8",
        "TERM": "dumb", "TZ": os.environ.get("TZ", "UTC"),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local/share"),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        env[var] = env[var.lower()] = DEAD_PROXY
    return env


class Client:
    """What differs between the clients. Subclasses: Claude, Codex, Gemini."""

    name = ""
    agent = ""  # `memory install AGENT`
    routes: tuple[str, ...] = ("install",)
    #: the prompt of the start-up timing (the clients' one-shot mode)
    hello = "hello"

    def __init__(self, cache: Path = CACHE) -> None:
        self.cache = cache
        self.exe = str(bin_dir(cache) / self.name)

    def env(self, sb: Sandbox) -> dict[str, str]:
        return {}

    def configure(self, sb: Sandbox) -> None:
        """Client settings in the sandbox home: the mock as its model API, the project trusted."""

    def plugin_steps(self, sb: Sandbox, marketplace: Path) -> list[list[str]]:
        return []

    def plugin_setup(self, sb: Sandbox, marketplace: Path) -> list[str]:
        """Steps a user takes for the plugin that the client asks for and the harness
        cannot type (a prompt's answer, a policy); what was done, one line each."""
        return []

    def after_install(self, sb: Sandbox) -> list[str]:
        """Steps a user takes after `memory install` that the client, not memrepo, asks for;
        what was done, one line each."""
        return []

    def mcp_list(self) -> list[str]:
        return [self.exe, "mcp", "list"]

    def mcp_connected(self, out: str) -> tuple[bool, str]:
        line = next((ln.strip() for ln in out.splitlines() if "memrepo" in ln), "")
        return ("Connected" in line and "✘" not in line), (line or out.strip()[-300:])

    def one_shot(self, prompt: str, sb: Sandbox, *, check: bool = False) -> list[str]:
        raise NotImplementedError

    def tool_prefixes(self) -> tuple[str, ...]:
        """How this client names memrepo's tools to the model (install, plugin)."""
        return ()


class Claude(Client):
    name, agent = "claude", "claude-code"
    routes = ("install", "plugin", "http")
    TOOLS = ("mcp__memrepo__", "mcp__plugin_memrepo_memrepo__")

    def env(self, sb: Sandbox) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": sb.url, "ANTHROPIC_API_KEY": "sk-ant-api03-mock-bench",
                "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}

    def after_install(self, sb: Sandbox) -> list[str]:
        # A project's .mcp.json server waits for the user's approval in Claude Code's
        # dialog ("Pending approval" in `claude mcp list`); approving records this.
        if sb.route not in ("install", "http", "mcp", "stub", "floor", "async"):
            return []
        path = sb.home / ".claude.json"
        doc = json.loads(path.read_text()) if path.exists() else {}
        entry = doc.setdefault("projects", {}).setdefault(str(sb.proj), {})
        entry.update(hasTrustDialogAccepted=True, enabledMcpjsonServers=["memrepo"])
        path.write_text(json.dumps(doc, indent=2) + "\n")
        return ["approved the project's .mcp.json server `memrepo` as Claude Code's dialog "
                "does (~/.claude.json projects.<dir>.enabledMcpjsonServers)"]

    def plugin_steps(self, sb: Sandbox, marketplace: Path) -> list[list[str]]:
        return [[self.exe, "plugin", "marketplace", "add", str(marketplace)],
                [self.exe, "plugin", "install", "memrepo@memrepo"]]

    def one_shot(self, prompt: str, sb: Sandbox, *, check: bool = False) -> list[str]:
        argv = [self.exe, "-p", prompt, "--output-format", "json"]
        if check:  # `-p` runs no tool the user has not allowed
            argv += ["--allowedTools", ",".join(p + "memory_search" for p in self.TOOLS)]
        return argv

    def tool_prefixes(self) -> tuple[str, ...]:
        return self.TOOLS


class Codex(Client):
    name, agent = "codex", "codex"
    routes = ("install", "plugin", "http")

    def env(self, sb: Sandbox) -> dict[str, str]:
        return {"MOCK_KEY": "mock"}

    def configure(self, sb: Sandbox) -> None:
        cfg = sb.home / ".codex" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(
            'model = "gpt-5.1"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
            f'name = "mock"\nbase_url = "{sb.url}/v1"\nwire_api = "responses"\n'
            'env_key = "MOCK_KEY"\n\n[analytics]\nenabled = false\n\n'
            f'[projects.{json.dumps(str(sb.proj))}]\ntrust_level = "trusted"\n')

    def plugin_steps(self, sb: Sandbox, marketplace: Path) -> list[list[str]]:
        return [[self.exe, "plugin", "marketplace", "add", str(marketplace), *CODEX_OFF],
                [self.exe, "plugin", "add", "memrepo@memrepo", *CODEX_OFF]]

    def mcp_list(self) -> list[str]:
        return [self.exe, "mcp", "list", "--json", *CODEX_OFF]

    def mcp_connected(self, out: str) -> tuple[bool, str]:
        # Codex lists what it would start; it does not start it (the session shows it ran)
        try:
            servers, _ = json.JSONDecoder().raw_decode(out[out.index("["):])
        except ValueError:
            return False, out.strip()[-300:]
        mine = [s for s in servers if s.get("name") == "memrepo"]
        if not mine:
            return False, "memrepo not listed"
        s = mine[0]
        t = s.get("transport") or {}
        if t.get("url"):  # streamable HTTP: the token's variable, never the token
            argv = f"{t['url']} (bearer ${t.get('bearer_token_env_var')})"
        else:
            argv = " ".join([str(t.get("command")), *(t.get("args") or [])])
        said = f"listed, enabled={s.get('enabled')}: {argv}"
        return bool(s.get("enabled", True)), said

    def one_shot(self, prompt: str, sb: Sandbox, *, check: bool = False) -> list[str]:
        # Codex runs new hooks only once trusted (/hooks); this flag trusts them for one run
        return [self.exe, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
                *CODEX_OFF, prompt]

    def tool_prefixes(self) -> tuple[str, ...]:
        return ("mcp__memrepo.", "mcp__memrepo__")


class Gemini(Client):
    name, agent = "gemini", "gemini"
    routes = ("install", "plugin", "http")

    def env(self, sb: Sandbox) -> dict[str, str]:
        return {"GEMINI_API_KEY": "mock", "GOOGLE_GEMINI_BASE_URL": sb.url}

    def configure(self, sb: Sandbox) -> None:
        gdir = sb.home / ".gemini"
        gdir.mkdir(parents=True, exist_ok=True)
        # GOOGLE_GEMINI_BASE_URL alone selects an auth method 0.61 then refuses
        (gdir / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}, indent=2) + "\n")
        (gdir / "trustedFolders.json").write_text(
            json.dumps({str(sb.proj): "TRUST_FOLDER"}, indent=2) + "\n")

    def after_install(self, sb: Sandbox) -> list[str]:
        # What `memory install gemini` says to do for `gemini -p` to offer memrepo's tools
        if sb.route not in ("install", "http", "mcp", "stub", "floor", "async"):
            return []
        path = sb.proj / ".gemini" / "settings.json"
        doc = json.loads(path.read_text())
        doc["mcpServers"]["memrepo"]["trust"] = True
        path.write_text(json.dumps(doc, indent=2) + "\n")
        return ['added "trust": true to mcpServers.memrepo, as `memory install gemini` says '
                "for `gemini -p` to offer its tools"]

    @staticmethod
    def extension(marketplace: Path) -> Path:
        return marketplace / "plugins" / "gemini"

    def plugin_setup(self, sb: Sandbox, marketplace: Path) -> list[str]:
        # `gemini extensions install PATH` asks "Do you trust the files in this folder?"
        # of a local source; answering y records it in trustedFolders.json, as done here
        path = sb.home / ".gemini" / "trustedFolders.json"
        doc = json.loads(path.read_text())
        doc[str(self.extension(marketplace).resolve())] = "TRUST_FOLDER"
        path.write_text(json.dumps(doc, indent=2) + "\n")
        # `gemini -p` offers only tools the policy allows; an extension cannot allow its
        # own (`trust` is ignored there): the user's policy file does, as the README says
        policy = sb.home / ".gemini" / "policies" / "memrepo.toml"
        policy.parent.mkdir(parents=True, exist_ok=True)
        policy.write_text(GEMINI_POLICY)
        return ["answered y to `gemini extensions install`'s \"Do you trust the files in "
                "this folder?\" (trustedFolders.json)",
                "wrote ~/.gemini/policies/memrepo.toml (allow memrepo's tools), as the "
                "extension's README says for `gemini -p` to offer them"]

    def plugin_steps(self, sb: Sandbox, marketplace: Path) -> list[list[str]]:
        return [[self.exe, "extensions", "install", str(self.extension(marketplace)),
                 "--consent"]]

    def one_shot(self, prompt: str, sb: Sandbox, *, check: bool = False) -> list[str]:
        return [self.exe, "-p", prompt]

    def mcp_connected(self, out: str) -> tuple[bool, str]:
        line = next((ln.strip() for ln in out.splitlines() if "memrepo" in ln), "")
        return bool(re.search(r"\bConnected\b", line)) and "Disconnected" not in line, \
            (line or out.strip()[-300:])

    def tool_prefixes(self) -> tuple[str, ...]:
        return ("mcp_memrepo_",)


CLIENTS: dict[str, type[Client]] = {"claude": Claude, "codex": Codex, "gemini": Gemini}
