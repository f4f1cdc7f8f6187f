"""`memory plugin build gemini`: memrepo as a Gemini CLI extension (Gemini CLI 0.61.0's
format: gemini-extension.json with the MCP server and the context file, hooks/hooks.json,
skills/), made from the table `memory install gemini` writes. The committed copy
(plugins/gemini) is compared with the generator in tests/test_plugin.py.

Offline and fast. The last tests run the real Gemini CLI when they find it
(``MEMREPO_GEMINI_BIN``, else ``gemini`` on PATH; bench/clients keeps one under
~/.cache/memrepo-bench/clients) and are skipped otherwise: `gemini extensions validate`,
`install` and `link` in a temporary home, and `memory doctor` finding what they wrote.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memrepo import __version__
from memrepo.agents import plugin
from memrepo.agents.harness import HARNESSES
from memrepo.agents.plugin_installs import installed_plugins
from memrepo.agents.settings import HOOKS, MCP, SERVER_NAME, Call, hook_handler, memrepo_call
from memrepo.scripts import cli

ROOT = Path(__file__).resolve().parent.parent
FILES = plugin.plugin_files("gemini")
#: Keys of gemini-extension.json Gemini CLI 0.61 documents (docs/extensions/reference.md)
MANIFEST_KEYS = {"name", "version", "description", "mcpServers", "contextFileName",
                 "excludeTools", "migratedTo", "plan", "settings", "themes"}


def _tool_names() -> set[str]:
    source = (ROOT / "memrepo" / "agents" / "mcp_server.py").read_text(encoding="utf-8")
    return set(re.findall(r"async def (memory_\w+)\(", source))


def test_the_files_of_the_extension() -> None:
    assert sorted(FILES) == sorted(["gemini-extension.json", "hooks/hooks.json", "GEMINI.md",
                                    "skills/memory/SKILL.md", "README.md"])
    assert plugin.FORMATS["gemini"].marketplace is None
    assert "gemini" in plugin.PLUGIN_AGENTS and "gemini" not in plugin.MARKETPLACE_AGENTS


def test_hooks_are_the_install_tables_handlers_without_repo() -> None:
    doc = json.loads(FILES["hooks/hooks.json"])
    assert list(doc) == ["hooks"] and list(doc["hooks"]) == list(HARNESSES["gemini"])
    for event, groups in doc["hooks"].items():
        want = hook_handler("gemini", event, "memory", "/the/repo")
        argv = shlex.split(want["command"])
        i = argv.index("--repo")
        want["command"] = shlex.join(argv[:i] + argv[i + 2:])
        assert groups == [{"hooks": [want]}]
        handler = groups[0]["hooks"][0]
        assert handler["name"] == f"memrepo-{event}"  # Gemini enables/disables by name
        assert handler["timeout"] >= 1000  # milliseconds
        assert memrepo_call(handler) == Call("memory", None, HOOKS, "gemini", event)


def test_manifest_names_the_server_and_the_context_file() -> None:
    manifest = json.loads(FILES["gemini-extension.json"])
    assert set(manifest) <= MANIFEST_KEYS
    assert manifest["name"] == plugin.NAME and manifest["version"] == __version__
    assert manifest["description"] == plugin.DESCRIPTION
    assert manifest["mcpServers"] == {SERVER_NAME: {"command": "memory", "args": ["mcp"]}}
    assert memrepo_call(manifest["mcpServers"][SERVER_NAME], SERVER_NAME) == Call(
        "memory", None, MCP)
    assert "trust" not in manifest["mcpServers"][SERVER_NAME]  # ignored in an extension
    assert manifest["contextFileName"] == "GEMINI.md" and "GEMINI.md" in FILES


def test_context_and_skill_say_when_to_search_remember_and_update() -> None:
    text = FILES["GEMINI.md"]
    named = set(re.findall(r"`(memory_\w+)`", text))
    assert {"memory_search", "memory_remember", "memory_update"} <= named <= _tool_names()
    assert "knowledge/identity/" in text and "read-only" in text
    assert len(text.splitlines()) <= 15  # loaded into every session
    assert FILES["skills/memory/SKILL.md"] == plugin.SKILL_TEXT  # the other plugins' skill
    meta = yaml.safe_load(FILES["skills/memory/SKILL.md"].split("---\n", 2)[1])
    assert meta["name"] == plugin.SKILL


def test_readme_gives_the_install_and_the_policy_step() -> None:
    text = FILES["README.md"]
    assert set(re.findall(r"\bmemory_\w+", text)) == _tool_names()
    assert "gemini extensions install <path of this folder> --consent" in text
    assert "gemini extensions link <path of this folder> --consent" in text
    assert f"```toml\n{plugin.GEMINI_POLICY}```" in text
    assert plugin.GEMINI_POLICY_FILE in text and "hooksConfig.enabled" in text


def test_the_harness_writes_the_readmes_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("bench_clients",
                                                  ROOT / "bench/clients/clients.py")
    assert spec and spec.loader
    clients = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_clients", clients)  # its dataclasses look it up
    spec.loader.exec_module(clients)
    assert clients.GEMINI_POLICY == plugin.GEMINI_POLICY
    assert "plugin" in clients.Gemini.routes


def _run_hook(event: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``event``'s handler as Gemini CLI does: the command through the shell, the
    payload on stdin, ``memory`` from PATH."""
    handler = json.loads(FILES["hooks/hooks.json"])["hooks"][event][0]["hooks"][0]
    payload = {"session_id": "ext-test", "cwd": str(cwd), "hook_event_name": event,
               "transcript_path": "", "source": "startup", "prompt": "hello"}
    return subprocess.run(["sh", "-c", handler["command"]], cwd=cwd, env=env, text=True,
                          input=json.dumps(payload), capture_output=True, timeout=60)


def test_hooks_brief_through_memory_repo_and_say_nothing_without(crepo: Path,
                                                                 tmp_path: Path) -> None:
    proc = _run_hook("SessionStart", tmp_path, {**os.environ, "MEMORY_REPO": str(crepo)})
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)["hookSpecificOutput"]
    assert said["hookEventName"] == "SessionStart" and "memrepo" in said["additionalContext"]
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_REPO"}
    proc = _run_hook("BeforeAgent", tmp_path, env)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr


def test_build_writes_the_extension_and_says_the_next_steps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ext"
    assert cli.main(["plugin", "build", "gemini", str(out), "--marketplace",
                     str(tmp_path / "market")]) == 0
    said = capsys.readouterr().out
    assert "5 file(s) written, 0 unchanged" in said
    assert f"gemini extensions install {out} --consent" in said
    assert f"gemini extensions link {out} --consent" in said
    assert "answer y" in said and plugin.GEMINI_POLICY_FILE in said
    assert 'mcpName = "memrepo"' in said
    assert not (tmp_path / "market").exists()  # no marketplace for Gemini CLI
    assert cli.main(["plugin", "build", "gemini", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not any(f["changed"] for f in report["files"])
    assert report["next"]["gemini"][1] == f"  gemini extensions install {out} --consent"


# --- the real Gemini CLI, when found -----------------------------------------------------------


def _gemini() -> str:
    found = os.environ.get("MEMREPO_GEMINI_BIN") or shutil.which("gemini")
    if not found:
        pytest.skip("gemini not found (set MEMREPO_GEMINI_BIN to run it)")
    return found


def _env(home: Path) -> dict[str, Any]:
    dead = "http://127.0.0.1:9"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    env.update(HOME=str(home), HTTPS_PROXY=dead, HTTP_PROXY=dead, https_proxy=dead,
               http_proxy=dead, NO_PROXY="127.0.0.1,localhost")
    return env


def _gem(argv: list[str], home: Path, cwd: Path, stdin: str = "") -> str:
    proc = subprocess.run(argv, env=_env(home), cwd=cwd, input=stdin, text=True,
                          capture_output=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_gemini_validates_installs_and_links_the_extension(tmp_path: Path) -> None:
    gemini = _gemini()
    ext, home, work = tmp_path / "ext", tmp_path / "home", tmp_path / "work"
    plugin.build({"gemini": ext})
    home.mkdir()
    work.mkdir()
    assert "successfully validated" in _gem([gemini, "extensions", "validate", str(ext)],
                                            home, work)
    # a local source asks "Do you trust the files in this folder?": the user's y
    said = _gem([gemini, "extensions", "install", str(ext), "--consent"], home, work, "y\n")
    assert 'Extension "memrepo" installed successfully and enabled.' in said
    listed = _gem([gemini, "extensions", "list"], home, work)
    assert f"memrepo ({__version__})" in listed and "GEMINI.md" in listed
    [found], errors = installed_plugins(home, work)
    assert errors == [] and found.enabled and not found.linked and found.server
    assert found.hooks == tuple(HARNESSES["gemini"]) and found.version == __version__
    linked = tmp_path / "home2"
    linked.mkdir()
    _gem([gemini, "extensions", "link", str(ext), "--consent"], linked, work)
    [found], _ = installed_plugins(linked, work)
    assert found.linked and found.path == ext and found.enabled
    _gem([gemini, "extensions", "disable", "memrepo", "--scope", "workspace"], linked, work)
    [found], _ = installed_plugins(linked, work)
    assert not found.enabled
