"""`memory install|uninstall AGENT`: memrepo's hooks and MCP server merged into the real
settings files of Claude Code, Codex and Gemini CLI, and nothing else touched.

Every test works in a temporary home and project (``--home``/``--project``): the real ~
is never read or written. The memory repo is the session's template (install only reads
it)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import tomlkit

from memrepo.agents import install as agents
from memrepo.agents.harness import HARNESSES
from memrepo.agents.settings import AGENTS, HOOKS, MCP, TIMEOUTS, hook_handler, memrepo_call
from memrepo.errors import MemrepoError
from memrepo.repo import MemoryRepo
from memrepo.scripts import cli

MEMORY = str(Path(sys.executable).with_name("memory"))
COMBOS = [(agent, scope) for agent, spec in AGENTS.items() for scope in spec.scopes]

# What a user already has: other hooks and servers, in each file's own style (4 spaces and
# no final newline, 2 spaces, tabs and CRLF, one line, TOML with comments).
CLAUDE_SETTINGS = """{
    "model": "opus",
    "permissions": {"allow": ["Bash(git *)"], "deny": []},
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ],
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [
                    {"type": "command", "command": "prettier --write", "timeout": 30}
                ]
            }
        ]
    },
    "env": {"GREETING": "grüß dich"}
}"""
CLAUDE_LOCAL = '{"permissions":{"allow":["Read"]}}\n'
MCP_JSON = '{\r\n\t"mcpServers": {\r\n\t\t"other": {"command": "npx", "args": ["-y", "x"]}\r\n\t}\r\n}\r\n'
CODEX_TOML = """# my codex config
model = "o3"  # the best one

[mcp_servers.github]
command = "npx"
args = ["-y", "gh-mcp"]

# profiles below
[profiles.fast]
model = "o4-mini"
"""
CODEX_HOOKS = """{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  }
}
"""
GEMINI = """{
  "theme": "GitHub",
  "hooks": {
    "disabled": ["noisy"],
    "BeforeTool": [
      {
        "matcher": "write_file",
        "hooks": [{"name": "noisy", "type": "command", "command": "lint", "timeout": 5000}]
      }
    ]
  },
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "gh-mcp"]}
  }
}
"""


def _claude_state(project: Path) -> str:
    return json.dumps({
        "numStartups": 12,
        "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "gh"]}},
        "projects": {str(project.resolve()): {"allowedTools": [], "mcpServers": {},
                                               "hasTrustDialogAccepted": True}},
    }, indent=2)


def seed(home: Path, project: Path) -> None:
    """Every settings file of the three agents, as a user already has them."""
    files = {
        home / ".claude/settings.json": CLAUDE_SETTINGS,
        home / ".claude.json": _claude_state(project),
        project / ".claude/settings.json": CLAUDE_SETTINGS,
        project / ".claude/settings.local.json": CLAUDE_LOCAL,
        project / ".mcp.json": MCP_JSON,
        home / ".codex/config.toml": CODEX_TOML,
        home / ".codex/hooks.json": CODEX_HOOKS,
        project / ".codex/config.toml": CODEX_TOML,
        home / ".gemini/settings.json": GEMINI,
        project / ".gemini/settings.json": GEMINI,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def snapshot(*dirs: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for d in dirs for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


@pytest.fixture(autouse=True)
def _no_agent_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)


def install(agent: str, scope: str, home: Path, project: Path, repo: Path | str,
            memory: str = MEMORY) -> list[agents.FileChange]:
    changes = agents.plan(agent, scope, memory=memory, repo=str(repo), home=home,
                          project=project)
    agents.apply(changes, home)
    return changes


def uninstall(agent: str, scope: str, home: Path, project: Path) -> list[agents.FileChange]:
    changes = agents.plan(agent, scope, home=home, project=project)
    agents.apply(changes, home)
    return changes


def _load(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return tomlkit.parse(text).unwrap() if path.suffix == ".toml" else json.loads(text)


def _without_memrepo(value: object, repo: str) -> object:
    """``value`` less memrepo's entries (the handlers and servers naming ``repo``) and less
    every empty list or table: equal before and after an install that touched nothing else."""
    if isinstance(value, (dict, list)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        kept = [(k, _without_memrepo(v, repo)) for k, v in items
                if not (isinstance(v, dict) and "command" in v and repo in json.dumps(v))]
        kept = [(k, v) for k, v in kept if v not in ([], {})]
        return dict(kept) if isinstance(value, dict) else [v for _, v in kept]
    return value


# --- the three promises: only memrepo's entries, idempotent, reversible --------------------


@pytest.mark.parametrize(("agent", "scope"), COMBOS)
def test_install_changes_only_memrepos_entries(places: tuple[Path, Path], crepo_template: Path,
                                               agent: str, scope: str) -> None:
    home, project = places
    seed(home, project)
    before = snapshot(home, project)
    changes = install(agent, scope, home, project, crepo_template)
    after = snapshot(home, project)
    touched = {c.path for c in changes if c.changed}
    assert touched and touched == {p for p in after if after[p] != before.get(p)}
    for path in touched:
        old = _load_text(before[path], path) if path in before else {}
        assert _without_memrepo(_load(path), str(crepo_template)) == _without_memrepo(
            old, str(crepo_template))
    found, errors = agents.installed(home, project)
    assert errors == []
    mine = [f for f in found if f.agent == agent and f.scope == scope]
    assert {f.name for f in mine if f.what == HOOKS} == set(HARNESSES[agent])
    assert [f.name for f in mine if f.what == MCP] == ["memrepo"]
    assert {f.call.memory for f in mine} == {MEMORY}
    assert {f.call.repo for f in mine} == {str(crepo_template)}


def _load_text(data: bytes, path: Path) -> dict:
    text = data.decode("utf-8")
    return tomlkit.parse(text).unwrap() if path.suffix == ".toml" else json.loads(text)


@pytest.mark.parametrize("seeded", [True, False], ids=["existing-files", "no-files"])
@pytest.mark.parametrize(("agent", "scope"), COMBOS)
def test_twice_changes_nothing_and_uninstall_restores_every_byte(
        places: tuple[Path, Path], crepo_template: Path, agent: str, scope: str,
        seeded: bool) -> None:
    home, project = places
    if seeded:
        seed(home, project)
    original = snapshot(home, project)
    install(agent, scope, home, project, crepo_template)
    once = snapshot(home, project)
    assert once != original
    again = install(agent, scope, home, project, crepo_template)
    assert not any(c.changed for c in again)
    assert snapshot(home, project) == once
    removed = uninstall(agent, scope, home, project)
    assert any(c.changed for c in removed)
    assert snapshot(home, project) == original  # files install created are gone too
    assert not any(c.changed for c in uninstall(agent, scope, home, project))


@pytest.mark.parametrize(("agent", "scope"), [("claude-code", "user"), ("codex", "user"),
                                              ("gemini", "project"), ("claude-code", "local")])
def test_another_repo_replaces_memrepos_entries_in_place(
        places: tuple[Path, Path], crepo_template: Path, tmp_path: Path, agent: str,
        scope: str) -> None:
    """Installing for repo B over repo A gives the bytes a fresh install for B gives."""
    home, project = places
    seed(home, project)
    install(agent, scope, home, project, "/somewhere/old-repo", memory="/opt/old/bin/memory")
    install(agent, scope, home, project, crepo_template)
    over = snapshot(home, project)
    uninstall(agent, scope, home, project)
    install(agent, scope, home, project, crepo_template)
    assert snapshot(home, project) == over
    assert "old-repo" not in str(over) and "/opt/old" not in str(over)


def test_recognised_by_what_it_runs_not_where_it_sits(places: tuple[Path, Path],
                                                      crepo_template: Path) -> None:
    """The user moved memrepo's handler into their own group (and copied it twice):
    install updates it there, uninstall takes out only memrepo's handlers."""
    home, project = places
    settings = home / ".claude/settings.json"
    settings.parent.mkdir()
    old = {"type": "command", "command": "/old/venv/bin/memory",
           "args": ["--repo", "/old/mem", "hook", "claude-code", "SessionStart"], "timeout": 3}
    theirs = {"type": "command", "command": "echo hi"}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [
        {"matcher": "startup", "hooks": [theirs, old]},
        {"hooks": [dict(old, command="memory")]},
    ]}}, indent=2) + "\n")
    install("claude-code", "user", home, project, crepo_template)
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert len(groups) == 1 and groups[0]["matcher"] == "startup"
    assert groups[0]["hooks"][0] == theirs
    assert groups[0]["hooks"][1]["command"] == MEMORY
    assert groups[0]["hooks"][1]["args"][1] == str(crepo_template)
    assert groups[0]["hooks"][1]["timeout"] == TIMEOUTS["brief"]
    uninstall("claude-code", "user", home, project)
    assert json.loads(settings.read_text()) == {
        "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [theirs]}]}}


@pytest.mark.parametrize("text", [
    '{"a":{"x":1},"b":[1,2]}',  # one line, no spaces, no final newline
    '{"a": {}, "b": 1}\n',
    '\ufeff{\r\n\t"b": 1,\r\n\t"a": {\r\n\t\t"x": 1\r\n\t}\r\n}\r\n',  # BOM, tabs, CRLF
    '{\n    "a": {"x": [1, 2]},\n    "a": {"y": 2}\n}\n',  # a duplicate key: the last counts
])
def test_json_edits_are_exact_inverses(text: str) -> None:
    from memrepo.agents.settings_edit import JsonText

    doc = JsonText(text, "f.json")
    doc.set(("hooks", "Stop"), [{"hooks": [{"type": "command", "command": "memory mcp"}]}])
    doc.set(("a", "z"), {"k": "grüß"})
    assert json.loads(doc.dumps().lstrip("\ufeff"))["a"]["z"] == {"k": "grüß"}
    doc.remove(("a", "z"))
    doc.remove(("hooks",))
    assert doc.dumps() == text


# --- what gets written ---------------------------------------------------------------------


def test_handlers_are_exec_form_for_claude_and_quoted_commands_elsewhere() -> None:
    repo = "/home/me/my memory"  # a space: the shell forms must quote it
    claude = hook_handler("claude-code", "UserPromptSubmit", MEMORY, repo)
    assert claude == {"type": "command", "command": MEMORY, "timeout": 5,
                      "args": ["--repo", repo, "hook", "claude-code", "UserPromptSubmit"]}
    codex = hook_handler("codex", "Stop", MEMORY, repo)
    assert shlex.split(codex["command"]) == [MEMORY, "--repo", repo, "hook", "codex", "Stop"]
    assert "args" not in codex and codex["timeout"] == 10
    gemini = hook_handler("gemini", "BeforeAgent", MEMORY, repo)
    assert gemini["name"] == "memrepo-BeforeAgent" and gemini["timeout"] == 5000  # ms
    for handler in (claude, codex, gemini):
        call = memrepo_call(handler)
        assert call is not None and call.repo == repo and call.memory == MEMORY
    assert memrepo_call({"command": "memory hook pre-commit"}) is None  # git's
    assert memrepo_call({"command": "echo", "args": ["hook", "codex"]}) is None


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_installed_hook_runs_without_path_or_cwd(places: tuple[Path, Path],
                                                    crepo_template: Path, agent: str) -> None:
    """The baked-in line, run as the agent runs it (exec form, or through the shell) from
    a directory that is no memory repo, with a PATH that has no `memory`: a briefing."""
    import subprocess

    home, project = places
    install(agent, "user", home, project, crepo_template)
    hooks = _load(home / (".claude/settings.json" if agent == "claude-code" else
                          ".codex/hooks.json"))["hooks"]
    handler = hooks["SessionStart"][-1]["hooks"][-1]
    argv = ([handler["command"], *handler["args"]] if "args" in handler
            else ["/bin/sh", "-c", handler["command"]])
    payload = {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup",
               "cwd": str(project), "transcript_path": None}
    proc = subprocess.run(argv, input=json.dumps(payload), capture_output=True, text=True,
                          cwd=project, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and out["additionalContext"]


def test_a_symlinked_settings_file_stays_a_link(places: tuple[Path, Path],
                                                crepo_template: Path) -> None:
    home, project = places
    dotfiles = home / "dotfiles/claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(CLAUDE_SETTINGS)
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").symlink_to(dotfiles)
    install("claude-code", "user", home, project, crepo_template)
    assert (home / ".claude/settings.json").is_symlink()
    assert "hook" in dotfiles.read_text()
    uninstall("claude-code", "user", home, project)
    assert dotfiles.read_text() == CLAUDE_SETTINGS


def test_agent_home_variables_are_honoured(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    codex = {c.path for c in agents.plan("codex", "user", memory=MEMORY, repo="/r")}
    claude = {c.path for c in agents.plan("claude-code", "user", memory=MEMORY, repo="/r")}
    assert codex == {tmp_path / "codex/hooks.json", tmp_path / "codex/config.toml"}
    assert claude == {tmp_path / "claude/settings.json", tmp_path / "claude/.claude.json"}


# --- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "text", "where"), [
    (".claude/settings.json", '{\n  "model": "opus",\n  "hooks": \n}\n', "line 4"),
    (".claude/settings.json", '{\n  // my settings\n  "model": "opus"\n}\n', "line 2"),
    (".claude/settings.json", '{"hooks": ["not", "an", "object"]}\n', "hooks is not"),
    (".codex/config.toml", 'model = "o3"\n[mcp_servers\ncommand = 1\n', "line 2"),
])
def test_a_broken_file_is_named_and_never_overwritten(
        places: tuple[Path, Path], crepo_template: Path, capsys: pytest.CaptureFixture[str],
        rel: str, text: str, where: str) -> None:
    home, _ = places
    path = home / rel
    path.parent.mkdir(parents=True)
    path.write_text(text)
    agent = "codex" if "codex" in rel else "claude-code"
    with pytest.raises(MemrepoError, match=where) as err:
        agents.plan(agent, "user", memory=MEMORY, repo=str(crepo_template), home=home)
    assert str(path) in str(err.value)
    code = cli.main(["install", agent, "--repo", str(crepo_template), "--home", str(home)])
    assert code == 1 and str(path) in capsys.readouterr().err
    assert cli.main(["uninstall", agent, "--home", str(home)]) == 1
    assert path.read_text() == text


def test_refuses_a_directory_that_is_not_a_memory_repo(
        places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    home, project = places
    code = cli.main(["install", "claude-code", "--repo", str(project), "--home", str(home)])
    assert code == 1 and "is not a memory repo" in capsys.readouterr().err
    assert snapshot(home, project) == {}


@pytest.mark.parametrize(("name", "body", "said"), [
    ("memory", "not a program\n", "does not run"),
    ("memory-old", "#!/bin/sh\necho memory, version 1\n", "not a `memory` executable"),
    ("memory", "#!/bin/sh\necho broken >&2\nexit 3\n", "does not run: broken"),
])
def test_refuses_a_memory_that_does_not_run(
        places: tuple[Path, Path], crepo_template: Path, capsys: pytest.CaptureFixture[str],
        tmp_path: Path, name: str, body: str, said: str) -> None:
    home, project = places
    exe = tmp_path / "bin" / name
    exe.parent.mkdir()
    exe.write_text(body)
    exe.chmod(0o755 if body.startswith("#!") else 0o644)
    code = cli.main(["install", "claude-code", "--repo", str(crepo_template), "--home", str(home),
                     "--memory", str(exe)])
    assert code == 1 and said in capsys.readouterr().err
    assert snapshot(home, project) == {}


def test_print_shows_the_diff_and_writes_nothing(
        places: tuple[Path, Path], crepo_template: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    home, project = places
    seed(home, project)
    before = snapshot(home, project)
    code = cli.main(["install", "gemini", "--scope", "project", "--print", "--repo",
                     str(crepo_template), "--home", str(home), "--project", str(project)])
    out = capsys.readouterr().out
    assert code == 0 and snapshot(home, project) == before
    assert f"+++ {project / '.gemini/settings.json'}" in out
    assert '+            "name": "memrepo-SessionStart",' in out
    lines = out.splitlines()
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    assert removed and all(f"+{line}," in lines for line in removed)  # only a comma added
    install("gemini", "project", home, project, crepo_template)
    assert cli.main(["uninstall", "gemini", "--scope", "project", "--print", "--home",
                     str(home), "--project", str(project)]) == 0
    assert "-            \"name\": \"memrepo-SessionStart\"," in capsys.readouterr().out
    assert (project / ".gemini/settings.json").read_text() != GEMINI  # still installed


def test_cli_install_then_uninstall(places: tuple[Path, Path], crepo_template: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    home, project = places
    args = ["--home", str(home), "--project", str(project)]
    assert cli.main(["install", "claude-code", "--scope", "local", "--repo", str(crepo_template),
                     *args]) == 0
    out = capsys.readouterr().out
    assert "added SessionStart hook" in out and "added MCP server 'memrepo'" in out
    state = json.loads((home / ".claude.json").read_text())
    server = state["projects"][str(project.resolve())]["mcpServers"]["memrepo"]
    assert server == {"command": MEMORY, "args": ["--repo", str(crepo_template), "mcp"]}
    assert cli.main(["--repo", str(crepo_template), "install", "claude-code", "--scope",
                     "local", *args]) == 0
    assert "nothing to install" in capsys.readouterr().out
    assert cli.main(["uninstall", "claude-code", "--scope", "local", *args]) == 0
    assert snapshot(home, project) == {}
    assert cli.main(["install", "codex", "--scope", "local", *args]) == 1
    assert "no 'local' scope" in capsys.readouterr().err


# --- memory doctor ---------------------------------------------------------------------------


@pytest.fixture
def doctor_env(places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, project = places
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return home, project


def test_doctor_reports_a_healthy_install(doctor_env: tuple[Path, Path],
                                          crepo_template: Path) -> None:
    home, project = doctor_env
    assert [c.detail for c in agents.health_checks(MemoryRepo(crepo_template))] == [
        "none installed (memory install claude-code|codex|gemini)"]
    install("claude-code", "user", home, project, crepo_template)
    [check] = agents.health_checks(MemoryRepo(crepo_template))
    assert check.ok and check.name == "claude-code (user)"
    assert check.detail == (f"5 hooks (plain `memory hook`: memory doctor --fix makes them "
                            f"ask the resident first), MCP server "
                            f"memrepo → "
                            f"{crepo_template}")


def test_doctor_reports_a_stale_install(doctor_env: tuple[Path, Path], crepo_template: Path,
                                        tmp_path: Path) -> None:
    """The `memory` baked in is gone (a deleted venv): a failure for this repo."""
    home, project = doctor_env
    link = tmp_path / "old-venv/bin/memory"
    link.parent.mkdir(parents=True)
    link.symlink_to(MEMORY)
    install("gemini", "user", home, project, crepo_template, memory=str(link))
    assert all(c.ok for c in agents.health_checks(MemoryRepo(crepo_template)))
    link.unlink()
    [check] = agents.health_checks(MemoryRepo(crepo_template))
    assert not check.ok and not check.warning and check.name == "gemini (user)"
    assert f"{link} does not run" in check.detail
    assert check.fix and "memory install gemini --scope user" in check.fix


def test_doctor_reports_a_missing_repo_as_a_warning_elsewhere(
        doctor_env: tuple[Path, Path], crepo_template: Path, tmp_path: Path) -> None:
    home, project = doctor_env
    install("codex", "user", home, project, tmp_path / "gone")
    [check] = agents.health_checks(MemoryRepo(crepo_template))
    assert not check.ok and check.warning  # another repo's integration: not this one's health
    assert f"{tmp_path / 'gone'} is not a memory repo" in check.detail


def test_doctor_warns_when_a_handler_is_installed_twice(doctor_env: tuple[Path, Path],
                                                        crepo_template: Path) -> None:
    home, project = doctor_env
    install("claude-code", "user", home, project, crepo_template)
    install("claude-code", "project", home, project, crepo_template)
    checks = agents.health_checks(MemoryRepo(crepo_template))
    [dup] = [c for c in checks if c.name == "claude-code duplicates"]
    assert dup.warning and not dup.ok
    assert "SessionStart ×2" in dup.detail and "UserPromptSubmit ×2" in dup.detail
    assert str(home / ".claude/settings.json") in dup.detail
    assert str(project / ".claude/settings.json") in dup.detail
    assert "MCP" not in dup.detail  # one name in two scopes: Claude Code starts one server


def test_doctor_names_a_broken_settings_file(doctor_env: tuple[Path, Path],
                                             crepo_template: Path) -> None:
    home, _ = doctor_env
    (home / ".gemini").mkdir()
    (home / ".gemini/settings.json").write_text("{oops}\n")
    checks = agents.health_checks(MemoryRepo(crepo_template))
    assert any(c.warning and str(home / ".gemini/settings.json") in c.detail for c in checks)


def test_doctor_runs_the_check(doctor_env: tuple[Path, Path], crepo_template: Path) -> None:
    from memrepo import doctor

    assert agents.health_checks in doctor.CHECKS


def test_uninstall_leaves_files_without_memrepo_alone(places: tuple[Path, Path]) -> None:
    home, project = places
    seed(home, project)
    (project / ".mcp.json").write_text("")  # an empty file reads as {} but stays empty
    before = snapshot(home, project)
    for agent, scope in COMBOS:
        assert not any(c.changed for c in uninstall(agent, scope, home, project))
    assert snapshot(home, project) == before


def test_uninstall_at_local_scope_gives_back_an_empty_projects_map(
        places: tuple[Path, Path], crepo_template: Path) -> None:
    """``"projects": {}`` was in ~/.claude.json before: uninstall leaves it there."""
    home, project = places
    state = home / ".claude.json"
    state.write_text('{\n  "numStartups": 3,\n  "projects": {}\n}\n')
    before = state.read_bytes()
    install("claude-code", "local", home, project, crepo_template)
    assert "memrepo" in state.read_text()
    uninstall("claude-code", "local", home, project)
    assert state.read_bytes() == before


def test_gemini_settings_with_comments_are_edited_comments_and_all(
        places: tuple[Path, Path], crepo_template: Path) -> None:
    """Gemini CLI reads settings.json with // and /* */ comments: so does memrepo, and
    uninstall gives the commented bytes back."""
    home, project = places
    settings = home / ".gemini/settings.json"
    settings.parent.mkdir()
    settings.write_text('// mine\n{\n  "theme": "Default", // x\n'
                        '  "url": "http://a/*not a comment*/" /* c */\n}\n')
    before = settings.read_bytes()
    install("gemini", "user", home, project, crepo_template)
    text = settings.read_text()
    assert "// mine" in text and "// x" in text and "/* c */" in text
    assert "memrepo" in text
    uninstall("gemini", "user", home, project)
    assert settings.read_bytes() == before


def test_an_unknown_agent_name_does_not_block_the_prompt(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 is "block this prompt" to Claude Code: a misspelt agent name says so on
    stderr and exits 1."""
    assert cli.main(["hook", "nosuch", "UserPromptSubmit"]) == 1
    err = capsys.readouterr().err
    assert "no hook or agent named 'nosuch'" in err and "claude-code" in err


def test_a_trust_the_user_gave_memrepos_gemini_server_is_kept(
        places: tuple[Path, Path], crepo_template: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`gemini -p` offers only trusted servers' tools: the install says how, and a
    reinstall (another repo) keeps the user's `"trust": true`."""
    home, project = places
    assert cli.main(["install", "gemini", "--repo", str(crepo_template), "--home", str(home),
                     "--project", str(project)]) == 0
    assert '"trust": true' in capsys.readouterr().out
    settings = home / ".gemini/settings.json"
    data = json.loads(settings.read_text())
    data["mcpServers"]["memrepo"]["trust"] = True
    settings.write_text(json.dumps(data, indent=2) + "\n")
    install("gemini", "user", home, project, "/elsewhere/repo")
    entry = json.loads(settings.read_text())["mcpServers"]["memrepo"]
    assert entry["trust"] is True and "/elsewhere/repo" in entry["args"]


def test_install_offers_to_import_what_the_agent_already_remembers(
        places: tuple[Path, Path], crepo_template: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    home, project = places
    (home / ".claude").mkdir()
    (home / ".claude/CLAUDE.md").write_text("# Mine\n\n- Always answer in French.\n")
    assert cli.main(["install", "claude-code", "--repo", str(crepo_template), "--home",
                     str(home), "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "1 file(s) of claude-code's own memory found (CLAUDE.md)" in out, out
    assert f"memory import --from claude-code --home {home}" in out
    assert not (crepo_template / "knowledge/reference/agent-instructions").exists()
