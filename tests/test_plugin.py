"""`memory plugin build`: memrepo as a Claude Code plugin and a Codex plugin, made from the
table `memory install` writes (memrepo.agents.settings), and the trees committed under
plugins/ (with the marketplace files at the repo root) never drifting from it.

Offline and fast. The last tests run the real clients when they are found
(``MEMREPO_CLAUDE_BIN`` / ``MEMREPO_CODEX_BIN``, else ``claude`` / ``codex`` on PATH) and are
skipped otherwise: `claude plugin validate`, `codex plugin marketplace add` + `plugin add`,
and one real session of each against a stand-in model API on loopback, in a temporary
home; anything else they would reach goes to a dead proxy on loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from memrepo import __version__
from memrepo.agents import plugin
from memrepo.agents.harness import HARNESSES, action
from memrepo.agents.settings import (
    AGENTS,
    HOOKS,
    MCP,
    SERVER_NAME,
    TIMEOUTS,
    Call,
    hook_handler,
    memrepo_call,
    server_entry,
)
from memrepo.errors import MemrepoError
from memrepo.scripts import cli

ROOT = Path(__file__).resolve().parent.parent
REBUILD = "memory plugin build --all plugins --marketplace ."
#: The plugins a marketplace lists; Gemini CLI's extension: tests/test_plugin_gemini.py.
AGENTS_WITH_PLUGINS = list(plugin.MARKETPLACE_AGENTS)
ALL_PLUGINS = list(plugin.PLUGIN_AGENTS)
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def _without_repo(entry: dict[str, Any], repo: str) -> dict[str, Any]:
    """The installer's entry with its ``--repo REPO`` taken out (the test's own oracle)."""
    entry = dict(entry)
    if "args" in entry:
        args = list(entry["args"])
        i = args.index("--repo")
        assert args[i + 1] == repo
        entry["args"] = args[:i] + args[i + 2:]
    else:
        argv = shlex.split(entry["command"])
        i = argv.index("--repo")
        assert argv[i + 1] == repo
        entry["command"] = shlex.join(argv[:i] + argv[i + 2:])
    return entry


def _files(agent: str) -> dict[str, str]:
    return plugin.plugin_files(agent)


def _doc(agent: str, rel: str) -> Any:
    return json.loads(_files(agent)[rel])


# --- the entries are the installer's --------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS_WITH_PLUGINS)
def test_hooks_are_the_install_tables_handlers_for_every_event(agent: str) -> None:
    doc = _doc(agent, "hooks/hooks.json")
    assert list(doc) == ["hooks"]  # Codex refuses any other top-level key
    assert list(doc["hooks"]) == list(HARNESSES[agent])
    for event, groups in doc["hooks"].items():
        installed = hook_handler(agent, event, "memory", "/the/repo")
        assert groups == [{"hooks": [_without_repo(installed, "/the/repo")]}]
        handler = groups[0]["hooks"][0]
        assert memrepo_call(handler) == Call("memory", None, HOOKS, agent, event)
        assert handler["timeout"] == TIMEOUTS[str(action(agent, event))] \
            * AGENTS[agent].timeout_unit


@pytest.mark.parametrize("agent", AGENTS_WITH_PLUGINS)
def test_mcp_server_is_the_install_tables_entry_on_path(agent: str) -> None:
    doc = _doc(agent, ".mcp.json")
    assert list(doc) == ["mcpServers"] and list(doc["mcpServers"]) == [SERVER_NAME]
    entry = doc["mcpServers"][SERVER_NAME]
    assert memrepo_call(entry) == Call("memory", None, MCP)
    expected = _without_repo(server_entry("memory", "/the/repo"), "/the/repo")
    if agent == "codex":  # Codex passes an MCP server only the variables it names
        expected["env_vars"] = ["MEMORY_REPO", "MEMREPO_NO_RESIDENT"]
    assert entry == expected


# --- manifests, marketplaces, skill ----------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS_WITH_PLUGINS)
def test_manifest_carries_the_required_fields(agent: str) -> None:
    files = _files(agent)
    manifest = json.loads(files[plugin.FORMATS[agent].manifest])
    assert NAME_RE.match(manifest["name"]) and manifest["name"] == plugin.NAME
    assert manifest["version"] == __version__
    assert manifest["description"] and manifest["author"]["name"]
    for key in ("skills", "mcpServers", "hooks"):  # named paths: relative, inside, present
        if key in manifest:
            path = manifest[key]
            assert path.startswith("./") and ".." not in path
            target = path[2:].rstrip("/")
            assert any(f == target or f.startswith(target + "/") for f in files), path
    if agent == "claude-code":  # naming the default hooks file loads it twice
        assert "hooks" not in manifest
    else:
        assert manifest["interface"]["displayName"]


def test_marketplaces_list_each_plugin_by_its_folder(tmp_path: Path) -> None:
    folders = {agent: tmp_path / "plugins" / agent for agent in AGENTS_WITH_PLUGINS}
    files = plugin.marketplace_files(folders, tmp_path)
    claude = json.loads(files[".claude-plugin/marketplace.json"])
    assert claude["name"] == plugin.NAME and claude["owner"]["name"]
    assert [(p["name"], p["source"]) for p in claude["plugins"]] == [
        (plugin.NAME, "./plugins/claude-code")]
    codex = json.loads(files[".agents/plugins/marketplace.json"])
    assert codex["name"] == plugin.NAME
    (entry,) = codex["plugins"]
    assert entry["source"] == {"source": "local", "path": "./plugins/codex"}
    assert entry["policy"] == {"installation": "AVAILABLE", "authentication": "ON_INSTALL"}


def test_a_plugin_outside_the_marketplace_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MemrepoError, match="not inside the marketplace root"):
        plugin.marketplace_files({"codex": tmp_path / "elsewhere"}, tmp_path / "root")


def _tool_names() -> set[str]:
    source = (ROOT / "memrepo" / "agents" / "mcp_server.py").read_text(encoding="utf-8")
    return set(re.findall(r"async def (memory_\w+)\(", source))


@pytest.mark.parametrize("agent", AGENTS_WITH_PLUGINS)
def test_skill_says_when_to_search_remember_and_update(agent: str) -> None:
    text = _files(agent)[f"skills/{plugin.SKILL}/SKILL.md"]
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta["name"] == plugin.SKILL and NAME_RE.match(meta["name"])
    assert 0 < len(meta["description"]) <= 1024
    named = set(re.findall(r"`(memory_\w+)`", body))
    assert named <= _tool_names(), named - _tool_names()  # only tools the server has
    assert {"memory_search", "memory_context", "memory_remember", "memory_update"} <= named
    assert "knowledge/identity/" in body and "read-only" in body
    assert len(body.splitlines()) < 40  # short: it costs context whenever it loads


def test_the_tools_named_are_the_servers() -> None:
    assert set(plugin.TOOLS) == _tool_names()
    for agent in AGENTS_WITH_PLUGINS:
        assert set(re.findall(r"\bmemory_\w+", _files(agent)["README.md"])) == _tool_names()


# --- the committed trees ---------------------------------------------------------------------


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("agent", ALL_PLUGINS)
def test_committed_plugin_is_what_the_generator_writes(agent: str) -> None:
    committed = _tree(ROOT / "plugins" / agent)
    assert committed == _files(agent), f"plugins/{agent} drifted from the table: run {REBUILD}"


def test_committed_marketplaces_are_what_the_generator_writes() -> None:
    folders = {agent: ROOT / "plugins" / agent for agent in AGENTS_WITH_PLUGINS}
    for rel, text in plugin.marketplace_files(folders, ROOT).items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel}: run {REBUILD}"
    assert sorted(p.name for p in (ROOT / "plugins").iterdir()) == sorted(ALL_PLUGINS)


# --- the hooks as an agent runs them ------------------------------------------------------


def _run_hook(agent: str, event: str, cwd: Path, env: dict[str, str]) -> Any:
    """Run ``event``'s handler from the built hooks.json as the agent does: exec form
    (command + args) or through the shell, the payload on stdin, ``memory`` from PATH."""
    handler = _doc(agent, "hooks/hooks.json")["hooks"][event][0]["hooks"][0]
    argv = [handler["command"], *handler["args"]] if "args" in handler else handler["command"]
    payload = {"session_id": "plugin-test", "cwd": str(cwd), "hook_event_name": event,
               "transcript_path": "", "source": "startup"}
    return subprocess.run(argv, shell="args" not in handler, cwd=cwd, env=env, text=True,
                          input=json.dumps(payload), capture_output=True, timeout=60)


@pytest.mark.parametrize("agent", AGENTS_WITH_PLUGINS)
def test_hooks_find_the_repo_through_memory_repo(agent: str, crepo: Path,
                                                 tmp_path: Path) -> None:
    proc = _run_hook(agent, "SessionStart", tmp_path, {**os.environ, "MEMORY_REPO": str(crepo)})
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)["hookSpecificOutput"]
    assert said["hookEventName"] == "SessionStart" and "memrepo" in said["additionalContext"]


@pytest.mark.parametrize("agent", AGENTS_WITH_PLUGINS)
def test_hooks_exit_zero_and_say_nothing_without_a_repo(agent: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_REPO"}
    for event in HARNESSES[agent]:
        proc = _run_hook(agent, event, tmp_path, env)
        assert (proc.returncode, proc.stdout) == (0, ""), (event, proc.stderr)


# --- memory plugin build ------------------------------------------------------------------------


def test_build_writes_one_plugin_then_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cc"
    assert cli.main(["plugin", "build", "claude-code", str(out)]) == 0
    assert "5 file(s) written, 0 unchanged" in capsys.readouterr().out
    assert _tree(out) == _files("claude-code")
    assert cli.main(["plugin", "build", "claude-code", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["plugins"] == {"claude-code": str(out)} and report["marketplace"] is None
    assert len(report["files"]) == 5 and not any(f["changed"] for f in report["files"])


def test_build_all_with_marketplace_lists_every_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plugins" / "codex").mkdir(parents=True)
    old = tmp_path / "plugins" / "codex" / "old.txt"
    old.write_text("left by an older build\n")
    code = cli.main(["plugin", "build", "--all", str(tmp_path / "plugins"), "--marketplace",
                     str(tmp_path), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    paths = {Path(f["path"]).relative_to(tmp_path).as_posix() for f in report["files"]}
    assert {".claude-plugin/marketplace.json", ".agents/plugins/marketplace.json",
            "plugins/claude-code/.claude-plugin/plugin.json",
            "plugins/codex/.codex-plugin/plugin.json"} <= paths
    assert len(paths) == sum(len(_files(a)) for a in ALL_PLUGINS) + len(AGENTS_WITH_PLUGINS)
    assert all(f["changed"] for f in report["files"])
    assert report["stale"] == [str(old)] and old.exists()  # reported, never deleted
    for agent in ALL_PLUGINS:
        assert {k: v for k, v in _tree(tmp_path / "plugins" / agent).items()
                if k != "old.txt"} == _files(agent)


@pytest.mark.parametrize(("agent", "said"), [
    ("cursor", "no plugin for 'cursor' (plugins: claude-code, codex, gemini)"),
])
def test_build_refuses_an_agent_without_a_plugin(
        agent: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugin", "build", agent, str(tmp_path / "out")]) == 1
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_build_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plugin", "build", str(tmp_path)]) == 2
    assert "memory plugin build --all OUT_DIR" in capsys.readouterr().err
    assert cli.main(["plugin", "build", "--all", "codex", str(tmp_path)]) == 2
    code = cli.main(["plugin", "build", "codex", str(tmp_path / "p"), "--marketplace",
                     str(tmp_path / "elsewhere")])
    assert code == 1 and "not inside the marketplace root" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()  # checked before anything is written


# --- the real clients, when found ------------------------------------------------------------


def _client(env: str, name: str) -> str:
    found = os.environ.get(env) or shutil.which(name)
    if not found:
        pytest.skip(f"{name} not found (set {env} to run it)")
    return found


def _isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """A temporary home; whatever a client would reach besides loopback goes to a dead
    proxy on loopback (its update checks, Codex's curated plugin sync)."""
    dead = "http://127.0.0.1:9"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               CODEX_HOME=str(home / ".codex"), XDG_STATE_HOME=str(home / "state"),
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1", MEMREPO_NO_RESIDENT="1",
               HTTPS_PROXY=dead, HTTP_PROXY=dead, ALL_PROXY=dead, https_proxy=dead,
               http_proxy=dead, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.update(extra)
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    return env


def _marketplace(tmp_path: Path) -> Path:
    root = tmp_path / "market"
    plugin.build({a: root / "plugins" / a for a in AGENTS_WITH_PLUGINS}, root)
    return root


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


#: A prompt the fresh repo's topics answer (topics/remembering.md): recall has something.
PROMPT = "remember that I like pineapple"
CODEX_OFF = ["--disable", "remote_plugin", "--disable", "plugin_sharing", "--disable", "apps"]


def test_claude_code_validates_the_plugin_and_the_marketplace(tmp_path: Path) -> None:
    claude = _client("MEMREPO_CLAUDE_BIN", "claude")
    root, env = _marketplace(tmp_path), _isolated_env(tmp_path / "home")
    for target in (root, root / "plugins" / "claude-code"):
        out = _run([claude, "plugin", "validate", "--strict", str(target)], env, tmp_path)
        assert "Validation passed" in out.stdout
    _run([claude, "plugin", "marketplace", "add", str(root)], env, tmp_path)
    _run([claude, "plugin", "install", f"{plugin.NAME}@{plugin.NAME}"], env, tmp_path)


def test_codex_adds_the_marketplace_and_installs_the_plugin(tmp_path: Path) -> None:
    codex = _client("MEMREPO_CODEX_BIN", "codex")
    root, env = _marketplace(tmp_path), _isolated_env(tmp_path / "home")
    _run([codex, "plugin", "marketplace", "add", str(root), *CODEX_OFF], env, tmp_path)
    added = json.loads(_run([codex, "plugin", "add", f"{plugin.NAME}@{plugin.NAME}", "--json",
                             *CODEX_OFF], env, tmp_path).stdout)
    assert added["version"] == __version__
    servers = json.loads(_run([codex, "mcp", "list", "--json", *CODEX_OFF], env,
                              tmp_path).stdout)
    (server,) = [s for s in servers if s["name"] == SERVER_NAME]
    assert server["transport"]["command"] == "memory"
    assert server["transport"]["args"] == ["mcp"]
    assert server["transport"]["env_vars"] == ["MEMORY_REPO", "MEMREPO_NO_RESIDENT"]


@contextlib.contextmanager
def _model_api(wire: str) -> Iterator[tuple[str, list[str]]]:
    """A stand-in model API on loopback: every request (its body kept) gets one short
    streamed answer, Anthropic Messages (``wire="messages"``) or OpenAI Responses."""
    seen: list[str] = []

    def sse(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    def answer() -> list[dict[str, Any]]:
        if wire == "responses":
            return [{"type": "response.created", "response": {"id": "r1"}},
                    {"type": "response.output_item.done", "item": {
                        "type": "message", "role": "assistant", "id": "m1",
                        "content": [{"type": "output_text", "text": "ok"}]}},
                    {"type": "response.completed", "response": {"id": "r1", "usage": {
                        "input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
                        "output_tokens_details": None, "total_tokens": 2}}}]
        msg = {"id": "m1", "type": "message", "role": "assistant", "model": "m",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 1}}
        return [{"type": "message_start", "message": msg},
                {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "ok"}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                    "stop_sequence": None},
                 "usage": {"output_tokens": 1}},
                {"type": "message_stop"}]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append(body.decode("utf-8", "replace"))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for event in answer():
                self.wfile.write(sse(event))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _log(root: Path) -> list[dict[str, Any]]:
    path = root / ".memrepo" / "agents.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_claude_code_session_runs_the_plugin(tmp_path: Path, crepo: Path) -> None:
    claude = _client("MEMREPO_CLAUDE_BIN", "claude")
    root, work = _marketplace(tmp_path), tmp_path / "work"
    work.mkdir()
    with _model_api("messages") as (url, seen):
        env = _isolated_env(tmp_path / "home", ANTHROPIC_BASE_URL=url,
                            ANTHROPIC_API_KEY="sk-ant-test", MEMORY_REPO=str(crepo))
        _run([claude, "-p", PROMPT, "--plugin-dir", str(root / "plugins" / "claude-code")],
             env, work)
    assert any("memrepo briefing" in body for body in seen)  # SessionStart's context
    assert any("memrepo recall" in body for body in seen)  # UserPromptSubmit's
    done = {(e["event"], e["status"]) for e in _log(crepo)}
    assert {("SessionStart", "ok"), ("UserPromptSubmit", "ok")} <= done


def test_codex_session_runs_the_plugin(tmp_path: Path, crepo: Path) -> None:
    codex = _client("MEMREPO_CODEX_BIN", "codex")
    root, work = _marketplace(tmp_path), tmp_path / "work"
    work.mkdir()
    with _model_api("responses") as (url, seen):
        env = _isolated_env(tmp_path / "home", FAKE_KEY="x", MEMORY_REPO=str(crepo))
        (tmp_path / "home" / ".codex" / "config.toml").write_text(
            f'model = "gpt-5.1"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
            'env_key = "FAKE_KEY"\n')
        _run([codex, "plugin", "marketplace", "add", str(root), *CODEX_OFF], env, work)
        _run([codex, "plugin", "add", f"{plugin.NAME}@{plugin.NAME}", *CODEX_OFF], env, work)
        _run([codex, "exec", *CODEX_OFF, "--skip-git-repo-check",
              "--dangerously-bypass-hook-trust", PROMPT], env, work)
    (body,) = [b for b in seen if "memrepo briefing" in b]
    assert "memrepo recall" in body
    namespaces = {t.get("name"): t for t in json.loads(body).get("tools", [])}
    tools = {t["name"] for t in namespaces[f"mcp__{SERVER_NAME}"]["tools"]}
    assert tools == _tool_names()  # the server started: MEMORY_REPO reached it
    done = {(e["event"], e["status"]) for e in _log(crepo)}
    assert {("SessionStart", "ok"), ("UserPromptSubmit", "ok")} <= done
