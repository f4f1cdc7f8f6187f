"""Rule scopes (docs/scopes.md): global → repo → project → local identity, merged in the
briefing and in ``memory compile`` with the narrower scope winning, each part's origin in
its marker. Real files in temp folders (HOME and XDG_CONFIG_HOME point there), the
briefing through the SessionStart hook as Claude Code runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import doctor
from memrepo.agents import harness as H
from memrepo.agents.recall import brief
from memrepo.context import scopes
from memrepo.context.compiler import CompileRequest, compile_context
from memrepo.context.sections import Lines
from memrepo.repo import MemoryRepo

GLOBAL_USER = """# User

- name: Ada
- timezone: Europe/London
- Prefers short answers.

## Style
- British spelling.
- Oxford commas.
"""
LOCAL_USER = """- timezone: America/New_York

## Style
- American spelling on this machine.
"""
RULES = """---
type: project_notes
---

# Ledger rules

- tests: run `make check` before every commit
- Money is integer cents.
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home and an XDG config folder of this test's own; the global identity folder."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "memrepo" / "identity"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def p0(root: Path, cwd: str | Path | None = None, budget: int | None = None):
    return compile_context(MemoryRepo(root), CompileRequest(
        slots=frozenset({0}), record_hits=False, cwd=cwd, budget=budget))


def hook_brief(root: Path, payload: dict) -> str:
    """The SessionStart hook as Claude Code runs it: its additionalContext."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", H.GUARD_ENV, "MEMORY_REPO")}
    data = json.dumps({"hook_event_name": "SessionStart", "session_id": "s1",
                       "source": "startup", **payload})
    proc = subprocess.run(["memory", "--repo", str(root), "hook", "claude-code",
                           "SessionStart"], input=data, capture_output=True, text=True,
                          env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


# -- the merge ---------------------------------------------------------------------------


def test_keys_a_narrower_scope_can_replace() -> None:
    assert scopes.bullet_key("- timezone: Europe/London") == "timezone"
    assert scopes.bullet_key("- **Time zone:** UTC") == "time zone"
    assert scopes.bullet_key("- See https://example.com for more") is None
    assert scopes.bullet_key("- 2026-03-05: decided") is None
    assert scopes.bullet_key("  - nested: not a rule of the file") is None
    assert scopes.section_key("## Code  Style:") == "code style"
    assert scopes.section_key("# User") is None  # a title is never replaced


def _part(rank: int, rows: str) -> scopes.Part:
    numbered = list(enumerate(rows.split("\n"), 1))
    return scopes.Part("USER.md", rank, str(rank), f"p{rank}", Lines(f"p{rank}", numbered),
                       len(numbered))


def test_sections_keys_and_repeated_bullets_give_way_to_the_narrower() -> None:
    wide = _part(scopes.GLOBAL, "# User\n- name: Ada\n- editor: vim\n  with plugins\n"
                 "- Be brief.\n\n## Style\n- British spelling.\n\n## Keep\n- kept")
    mid = _part(scopes.REPO, "# User\n- editor: helix\n- Be brief.")
    narrow = _part(scopes.LOCAL, "## style\n- American spelling.")
    scopes.merge([wide, mid, narrow])
    assert [t for _, t in wide.lines.numbered] == [
        "# User", "- name: Ada", "", "## Keep", "- kept"]
    assert wide.overridden == [3, 4, 5, 7, 8]  # the key with its continuation, the repeat
    assert [t for _, t in mid.lines.numbered] == ["# User", "- editor: helix", "- Be brief."]
    assert narrow.overridden == []


def test_narrower_scope_wins_and_every_part_names_its_origin(crepo: Path, config: Path
                                                             ) -> None:
    write(config / "USER.md", GLOBAL_USER)
    write(crepo / "knowledge/identity/USER.local.md", LOCAL_USER)
    res = p0(crepo)
    text = res.prompt()
    # outside the home folder: named by its absolute path
    assert f"<!-- P0 identity: {config}/USER.md:1-5 (global) -->" in text
    assert "<!-- P0 identity: knowledge/identity/USER.md:7-7 (repo) -->" in text
    assert "<!-- P0 identity: knowledge/identity/USER.local.md:1-4 (local) -->" in text
    # the narrower wins: its key and its section; the rest of the global file adds up
    assert "Europe/London" not in text and "British spelling" not in text
    assert "Oxford commas" not in text  # the whole section was replaced
    assert "- timezone: America/New_York" in text and "- name: Ada" in text
    assert "Prefers short answers." in text
    # each file's parts together, the widest first (the later word is the narrower one)
    assert text.index("(global)") < text.index("USER.md:7-7 (repo)") < text.index("(local)")
    assert text.index("SOUL.md") < text.index("(global)") < text.index("AGENTS.md")
    origins = {s.path: s.as_json().get("origin") for s in res.sections}
    assert origins["knowledge/identity/USER.local.md"] == "local"
    why = [o.reason for o in res.omitted if o.path.endswith("memrepo/identity/USER.md")]
    assert why == ["lines 4, 7-9 overridden by a narrower scope's USER.md"]


def test_a_global_file_under_home_is_named_from_home(crepo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write(tmp_path / ".config/memrepo/identity/TOOLS.md", "# Tools\n- shell: fish\n")
    text = p0(crepo).prompt()
    assert "<!-- P0 identity: ~/.config/memrepo/identity/TOOLS.md:1-2 (global) -->" in text
    assert "- shell: fish" in text


# -- the project the agent works in ------------------------------------------------------


def test_the_project_is_the_nearest_folder_named_like_one(crepo: Path, config: Path,
                                                          tmp_path: Path) -> None:
    for slug in ("ledger-service", "api"):
        write(crepo / f"knowledge/projects/{slug}/context.md", "---\ntype: project_context\n---\n")
    home = tmp_path / "home"
    assert scopes.project_of(crepo, home / "src/Ledger_Service/web") == "ledger-service"
    assert scopes.project_of(crepo, home / "src/Ledger_Service/api") == "api"  # nearest
    assert scopes.project_of(crepo, home / "src/other") is None
    assert scopes.project_of(crepo, home) is None  # the walk up stops at the home folder
    assert scopes.project_of(crepo, tmp_path / "api") == "api"  # outside it: up to the root
    assert scopes.project_of(crepo, crepo / "knowledge/projects/api") is None  # the memory
    assert scopes.project_of(crepo, None) is None


def test_session_start_hook_merges_global_project_and_local(crepo: Path, config: Path,
                                                            tmp_path: Path) -> None:
    """The briefing through `memory hook claude-code SessionStart`: the payload's cwd picks
    the project, whose rules win over the repo's AGENTS.md and lose to the local file."""
    agents = crepo / "knowledge/identity/AGENTS.md"
    agents.write_text(agents.read_text() + "- tests: run pytest\n- deploy: on Fridays\n")
    write(crepo / "knowledge/projects/ledger/rules.md", RULES)
    run_git(crepo, "add", "-A")
    run_git(crepo, "commit", "-q", "-m", "memory: ledger rules")  # through the hooks
    write(config / "AGENTS.md", "# Everywhere\n- editor: helix\n- deploy: never\n")
    write(crepo / "knowledge/identity/AGENTS.local.md", "- deploy: ask first, on this box\n")
    work = tmp_path / "home/src/ledger/api"
    work.mkdir(parents=True)

    ctx = hook_brief(crepo, {"cwd": str(work)})
    assert "/memrepo/identity/AGENTS.md:1-2 (global) -->\n# Everywhere\n- editor: helix" in ctx
    assert "<!-- P0 identity: knowledge/projects/ledger/rules.md:5-8 (project ledger) -->" in ctx
    assert "run `make check` before every commit" in ctx and "run pytest" not in ctx
    assert "- deploy: ask first, on this box" in ctx
    assert "on Fridays" not in ctx and "deploy: never" not in ctx
    order = [ctx.index(s) for s in ("(global)", "AGENTS.md:7-", "(project ledger)",
                                    "AGENTS.local.md")]
    assert order == sorted(order)

    elsewhere = hook_brief(crepo, {"cwd": str(tmp_path / "home")})
    assert "make check" not in elsewhere and "- tests: run pytest" in elsewhere
    assert "deploy: ask first" in elsewhere  # global and local hold wherever it runs
    # `memory compile` takes the project from the folder it runs in
    out = run_memory(work, "--repo", str(crepo), "compile", "--budget", "2000", "tests")
    assert out.returncode == 0, out.stderr
    assert "(project ledger)" in out.stdout and "make check" in out.stdout


def test_the_narrower_scope_is_kept_first_when_the_budget_cuts(crepo: Path, config: Path
                                                               ) -> None:
    for name in ("SOUL.md", "AGENTS.md", "TOOLS.md"):
        (crepo / "knowledge/identity" / name).unlink()
    write(config / "USER.md", "# User\n\n" + "".join(
        f"## Habit {i}\n- Habit {i} is a long standing preference of the user, kept.\n"
        for i in range(60)))
    write(crepo / "knowledge/identity/USER.local.md", "- timezone: America/New_York\n")
    res = p0(crepo, budget=200)
    assert res.tokens <= 200
    by_origin = {s.origin: s for s in res.sections}
    assert not by_origin["local"].cut and "America/New_York" in by_origin["local"].text
    assert by_origin["global"].cut and "Habit 59" not in res.prompt()
    assert res.prompt().index("(global)") < res.prompt().index("(local)")


# -- local never committed; nothing changes without other scopes --------------------------


def test_local_files_are_never_committed(crepo: Path, config: Path) -> None:
    write(crepo / "knowledge/identity/USER.local.md", LOCAL_USER)
    run_git(crepo, "add", "-A")
    staged = run_git(crepo, "diff", "--cached", "--name-only").stdout
    assert "local.md" not in staged
    ignored = run_git(crepo, "status", "--porcelain", "--ignored").stdout
    assert "!! knowledge/identity/USER.local.md" in ignored
    checks = scopes.health_checks(MemoryRepo(crepo))
    assert [c.ok for c in checks] == [True]
    assert "local: USER.local.md" in checks[0].detail
    assert scopes.health_checks in doctor.CHECKS
    # a repo whose .gitignore predates the scopes: the doctor says so, --fix mends it
    gi = crepo / ".gitignore"
    gi.write_text(gi.read_text().replace("*.local.md\n", ""))
    bad = scopes.health_checks(MemoryRepo(crepo))[-1]
    assert not bad.ok and "knowledge/identity/USER.local.md" in bad.detail
    doctor.fix(MemoryRepo(crepo))
    assert [c.ok for c in scopes.health_checks(MemoryRepo(crepo))] == [True]


def test_nothing_changes_without_global_or_local_files(crepo: Path, config: Path,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    write(crepo / "knowledge/projects/ledger/context.md", "---\ntype: project_context\n---\n")
    (config).mkdir(parents=True)  # an empty global folder, and a project without rules
    work = tmp_path / "home/src/ledger"
    work.mkdir(parents=True)
    before = p0(crepo).as_json()

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("no scope file: nothing to read, nothing to place")

    monkeypatch.setattr(scopes, "place", refuse)
    monkeypatch.setattr(scopes, "read_repo_document", refuse)
    found = scopes.find(crepo, work)
    assert not found.scoped and found.repo == [f"knowledge/identity/{n}" for n in (
        "SOUL.md", "USER.md", "AGENTS.md", "TOOLS.md")]
    after = p0(crepo, cwd=work).as_json()
    assert after == before
    assert "<!-- P0 identity: knowledge/identity/AGENTS.md:7-13 -->" in after["prompt"]
    assert all("origin" not in s for s in after["sections"])
    text = brief(crepo, "claude-code", {"cwd": str(work)})
    assert "(repo)" not in text and "<!-- P0 identity: knowledge/identity/AGENTS.md" in text
