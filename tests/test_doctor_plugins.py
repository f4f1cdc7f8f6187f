"""`memory doctor` sees memrepo installed as a plugin (memrepo.agents.plugin_installs): a
Claude Code or Codex plugin, a Gemini CLI extension, each laid out here as the real client's
own install command leaves it (Claude Code 2.1.332 `claude plugin install`, Codex 0.171.0
`codex plugin add`, Gemini CLI 0.61.0 `gemini extensions install` / `link`, each run in a
sandbox home: the files and their contents below are what they wrote).

Offline and fast: the clients are not run here (tests/test_plugin_gemini.py runs Gemini
CLI's own install when it finds it, and checks what it wrote is found).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memrepo import __version__, doctor
from memrepo.agents import install as agent_install
from memrepo.agents import plugin, plugin_installs
from memrepo.agents.plugin_installs import gemini_enabled, health_checks, installed_plugins
from memrepo.repo import MemoryRepo
from memrepo.scripts import cli

KEY = "memrepo@memrepo"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "MEMORY_REPO"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return home, project


def _copy(agent: str, folder: Path) -> Path:
    for rel, text in plugin.plugin_files(agent).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def _write_json(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))


def claude_install(home: Path, scope: str = "user", project: Path | None = None,
                   enabled: bool = True, agent: str = "claude-code") -> Path:
    """`claude plugin marketplace add MARKET` + `claude plugin install memrepo@memrepo
    [--scope …]`: the copy in the cache, installed_plugins.json, enabledPlugins."""
    root = home / ".claude"
    copy = _copy(agent, root / "plugins/cache/memrepo/memrepo" / __version__)
    entry: dict[str, str] = {"scope": scope, "installPath": str(copy), "version": __version__,
                             "installedAt": "2026-11-29T03:34:56.694Z",
                             "lastUpdated": "2026-11-29T03:34:56.694Z"}
    if project is not None:
        entry["projectPath"] = str(project)
    listed = root / "plugins/installed_plugins.json"
    doc = json.loads(listed.read_text()) if listed.exists() else {"version": 2, "plugins": {}}
    doc["plugins"].setdefault(KEY, []).append(entry)
    _write_json(listed, doc)
    _write_json(root / "plugins/known_marketplaces.json", {"memrepo": {
        "source": {"source": "directory", "path": "/src/memrepo"},
        "installLocation": "/src/memrepo", "lastUpdated": "2026-11-29T03:34:56.411Z"}})
    settings = {"user": root / "settings.json",
                "project": (project or Path()) / ".claude/settings.json",
                "local": (project or Path()) / ".claude/settings.local.json"}[scope]
    _write_json(settings, {"extraKnownMarketplaces": {"memrepo": {"source": {
        "source": "directory", "path": "/src/memrepo"}}}, "enabledPlugins": {KEY: enabled}})
    return copy


def codex_install(home: Path, enabled: bool = True) -> Path:
    """`codex plugin marketplace add MARKET` + `codex plugin add memrepo@memrepo`."""
    root = home / ".codex"
    copy = _copy("codex", root / "plugins/cache/memrepo/memrepo" / __version__)
    (root / "config.toml").write_text(
        '[marketplaces.memrepo]\nsource_type = "local"\nsource = "/src/memrepo"\n\n'
        f'[plugins."{KEY}"]\nenabled = {"true" if enabled else "false"}')
    return copy


def gemini_install(home: Path, source: Path | None = None, overrides: list[str] | None = None
                   ) -> Path:
    """`gemini extensions install SOURCE --consent` (a copy), or with ``source``
    `gemini extensions link SOURCE` (only the install metadata in the folder)."""
    base = home / ".gemini/extensions"
    folder = base / "memrepo"
    folder.mkdir(parents=True)
    if source is None:
        _copy("gemini", folder)
        meta = {"source": "/src/memrepo/plugins/gemini", "type": "local"}
    else:
        _copy("gemini", source)
        meta = {"source": str(source), "type": "link"}
    _write_json(folder / ".gemini-extension-install.json", meta)
    _write_json(base / "extension-enablement.json",
                {"memrepo": {"overrides": overrides or [f"{home}/*"]}})
    return source or folder


# --- found, one line each ---------------------------------------------------------------


def test_nothing_installed_says_nothing(places: tuple[Path, Path], crepo: Path) -> None:
    home, project = places
    assert health_checks(MemoryRepo(crepo), home, project) == []
    assert plugin_installs.health_checks in doctor.CHECKS


def test_claude_code_plugin_at_user_scope(places: tuple[Path, Path], crepo: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = places
    copy = claude_install(home)
    monkeypatch.setenv("MEMORY_REPO", str(crepo))
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert check.ok and check.name == "claude-code plugin"
    assert check.detail == (f"installed as plugin {KEY} ({__version__}), user scope, enabled: "
                            f"5 hooks, MCP server memrepo → $MEMORY_REPO ({crepo})")
    [found], errors = installed_plugins(home, project)
    assert errors == [] and found.path == copy and found.server
    assert found.hooks == ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop",
                           "SessionEnd")


def test_claude_code_plugin_disabled_and_at_project_scope(places: tuple[Path, Path],
                                                          crepo: Path) -> None:
    home, project = places
    claude_install(home, enabled=False)  # `claude plugin disable memrepo@memrepo`
    claude_install(home, "project", project)
    user, proj = health_checks(MemoryRepo(crepo), home, project)
    assert user.ok and user.detail.endswith("user scope: disabled, so none of it runs")
    assert proj.ok and f"project scope for {project}, enabled: 5 hooks" in proj.detail
    assert "the nearest memory repo above the session's folder" in proj.detail


def test_claude_config_dir_and_the_env_block(places: tuple[Path, Path], crepo: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    home, _ = places
    elsewhere = home / "cfg"
    claude_install(elsewhere)  # writes <elsewhere>/.claude
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(elsewhere / ".claude"))
    settings = elsewhere / ".claude/settings.json"
    doc = json.loads(settings.read_text())
    doc["env"] = {"MEMORY_REPO": str(crepo)}  # Claude Code passes it to hooks and server
    settings.write_text(json.dumps(doc))
    [check] = health_checks(MemoryRepo(crepo))
    assert check.ok and f"→ the env block's MEMORY_REPO ({crepo})" in check.detail


def test_codex_plugin_says_its_hooks_wait_for_trust(places: tuple[Path, Path],
                                                    crepo: Path) -> None:
    home, project = places
    codex_install(home)
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert check.ok and check.name == "codex plugin"
    assert check.detail.startswith(f"installed as plugin {KEY} ({__version__}), user scope, "
                                   "enabled: 4 hooks, MCP server memrepo")
    assert "trust memrepo's hooks in `/hooks`" in check.detail
    codex_install(home, enabled=False)
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert check.ok and "disabled" in check.detail


def test_gemini_extension_copied_or_linked(places: tuple[Path, Path], crepo: Path,
                                           tmp_path: Path) -> None:
    home, project = places
    folder = gemini_install(home)
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert check.ok and check.name == "gemini plugin"
    assert check.detail.startswith(f"installed as plugin memrepo ({__version__}), Gemini CLI "
                                   f"extension at {folder}, enabled: 5 hooks, MCP server")
    other = tmp_path / "home2"
    source = gemini_install(other, source=tmp_path / "checkout/plugins/gemini")
    [check] = health_checks(MemoryRepo(crepo), other, project)
    assert check.ok and f"extension linked to {source}, enabled" in check.detail


def test_gemini_enablement_rules_as_gemini_reads_them(places: tuple[Path, Path],
                                                      crepo: Path) -> None:
    """`gemini extensions disable memrepo [--scope workspace]` appends a `!` rule; the last
    rule matching the folder wins (rules copied from what Gemini CLI 0.61 wrote)."""
    home, project = places
    gemini_install(home, overrides=[f"{home}/*", f"!{project}/*"])
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert check.ok and "disabled, so none of it runs" in check.detail
    doc = {"memrepo": {"overrides": ["/h/*", "!/h/*", "/h/*", "!/w/p/*"]}}
    assert gemini_enabled(doc, "memrepo", Path("/h/x"))
    assert not gemini_enabled(doc, "memrepo", Path("/w/p"))
    assert not gemini_enabled(doc, "memrepo", Path("/w/p/sub"))
    assert gemini_enabled(doc, "memrepo", Path("/w/pq"))
    assert gemini_enabled({}, "memrepo", Path("/anywhere"))  # no rule: enabled


def test_gemini_hooks_switched_off_is_a_warning(places: tuple[Path, Path],
                                                crepo: Path) -> None:
    home, project = places
    gemini_install(home)
    (home / ".gemini/settings.json").write_text(
        '{\n  // mine\n  "hooksConfig": {"enabled": false}\n}\n')  # Gemini reads comments
    (project / ".gemini").mkdir()
    (project / ".gemini/settings.json").write_text(
        '{"hooksConfig": {"disabled": ["memrepo-BeforeAgent"]}}')
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert not check.ok and check.warning
    assert "hooks are off" in check.detail and "hooksConfig.enabled is false" in check.detail
    assert "hooksConfig.disabled turns off memrepo-BeforeAgent" in check.detail


# --- what keeps a plugin from running -----------------------------------------------------


def test_memory_not_on_path_is_a_warning(places: tuple[Path, Path], crepo: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = places
    claude_install(home)
    monkeypatch.setenv("PATH", "/nonexistent")
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert not check.ok and check.warning
    assert "`memory` is not on PATH here, and the plugin runs the `memory` on PATH" \
        in check.detail


def test_memory_repo_that_is_no_repo_is_a_warning(places: tuple[Path, Path], crepo: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    home, project = places
    codex_install(home)
    monkeypatch.setenv("MEMORY_REPO", str(tmp_path / "gone"))
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert not check.ok and check.warning
    assert f"$MEMORY_REPO ({tmp_path / 'gone'}) is not a memory repo" in check.detail


def test_plugin_and_memory_install_both_running_hooks(places: tuple[Path, Path],
                                                      crepo: Path) -> None:
    home, project = places
    claude_install(home)
    agent_install.apply(agent_install.plan(
        "claude-code", "user", memory=str(Path(sys.executable).with_name("memory")),
        repo=str(crepo), home=home, project=project), home)
    checks = health_checks(MemoryRepo(crepo), home, project)
    [both] = [c for c in checks if c.name == "claude-code plugin and memory install"]
    assert both.warning and not both.ok
    assert f"from the plugin {KEY} and from memory install ({home / '.claude/settings.json'})" \
        in both.detail
    assert both.fix == ("keep one: memory uninstall claude-code --scope user, or claude plugin "
                        f"uninstall {KEY}")


def test_plugin_beside_an_mcp_only_install_is_fine(places: tuple[Path, Path],
                                                   crepo: Path) -> None:
    home, project = places
    gemini_install(home)
    agent_install.apply(agent_install.plan("gemini", "user", url="http://127.0.0.1:8765/mcp",
                                           home=home, project=project), home)
    checks = health_checks(MemoryRepo(crepo), home, project)
    assert [c.name for c in checks] == ["gemini plugin"] and checks[0].ok


# --- what is not memrepo's, or not readable ----------------------------------------------------


def test_other_plugins_are_not_memrepos(places: tuple[Path, Path], crepo: Path) -> None:
    home, project = places
    copy = claude_install(home)
    (copy / "hooks/hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "memoryless hook claude-code Stop"}]}]}}))
    (copy / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "x"}}}))
    gemini = home / ".gemini/extensions/other"
    gemini.mkdir(parents=True)
    (gemini / "gemini-extension.json").write_text('{"name": "other", "version": "1"}')
    assert health_checks(MemoryRepo(crepo), home, project) == []


def test_an_unreadable_client_file_is_named(places: tuple[Path, Path], crepo: Path) -> None:
    home, project = places
    listed = home / ".claude/plugins/installed_plugins.json"
    listed.parent.mkdir(parents=True)
    listed.write_text("{oops")
    [check] = health_checks(MemoryRepo(crepo), home, project)
    assert check.name == "agent plugins" and check.warning and str(listed) in check.detail


def test_memory_doctor_prints_the_plugin(places: tuple[Path, Path], crepo: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    home, _ = places
    gemini_install(home)
    cli.main(["--repo", str(crepo), "doctor"])
    out = capsys.readouterr().out
    assert f"gemini plugin: installed as plugin memrepo ({__version__})" in out
