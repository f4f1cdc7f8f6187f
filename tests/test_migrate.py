"""``memory import``: an agent's existing memory into the knowledge files (issue #36).

Fake home and project trees hold every format (Claude Code's auto memory with its
frontmatter, CLAUDE.md user and project, AGENTS.md, GEMINI.md, a flat MEMORY.md and
memory/*.md); the real CLI imports them into a repo made by ``memory init``, through the
real commit path and its validators.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git, run_memory

from memrepo.documents import parse_document
from memrepo.errors import MemrepoError
from memrepo.lifecycle import migrate
from memrepo.lifecycle.migrate_sources import find_sources

#: Built at run time, so this file never holds a key a scanner would stop.
SECRET = "sk-ant-api03-" + "a" * 20 + "Xy7Qz" * 12 + "AA"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _memdir(home: Path, project: Path) -> Path:
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project)) / "memory"


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, project, a flat OpenClaw-style workspace) holding every format."""
    home, project, flat = tmp_path / "home", tmp_path / "work" / "app", tmp_path / "clawd"
    _write(home / ".claude/CLAUDE.md",
           f"# My rules\n\n- Always use pnpm, never npm.\n- ANTHROPIC_API_KEY={SECRET}\n")
    _write(home / ".codex/AGENTS.md", "# Codex\n\n- Prefer small commits.\n")
    _write(home / ".gemini/GEMINI.md", "# Gemini\n\n- Answer in English.\n")
    _write(project / "CLAUDE.md", "# App\n\nBuild with `make`.\n")
    _write(project / "CLAUDE.local.md", "# Local\n\nSandbox at http://localhost:8080.\n")
    _write(project / "AGENTS.md", "# App agents\n\nRun the tests with pytest.\n")
    _write(project / "GEMINI.md", "# App for Gemini\n\nUse the staging API.\n")
    mem = _memdir(home, project)
    _write(mem / "MEMORY.md", "# Memory index\n\n"
           "- [User role](user_role.md) — data scientist, new to React\n"
           "- [No mocks](feedback_no_mocks.md) — tests hit a real DB\n"
           "- [Freeze](project_freeze.md) — merge freeze from 2026-03-05\n")
    _write(mem / "user_role.md", "---\nname: User role\ndescription: who the user is\n"
           "type: user\n---\nThe user is a data scientist, new to React.\n")
    _write(mem / "feedback_no_mocks.md", "---\nname: No mocks\n"
           "description: Fix: tests must hit a real database\ntype: feedback\n---\n"
           "Integration tests hit a real database, never mocks.\n")
    _write(mem / "project_freeze.md", "---\nname: Merge freeze\nmetadata:\n  type: project\n"
           "---\nMerge freeze begins 2026-03-05 for the mobile release.\n")
    _write(mem / "reference_grafana.md", "---\nname: Grafana dashboards\ntype: reference\n"
           "---\nLatency: grafana.internal/d/api. See [no mocks](feedback_no_mocks.md).\n")
    _write(flat / "MEMORY.md", "- 2026-01-02: Moved to Berlin\n- Likes green tea\n")
    _write(flat / "memory/2026-02-16.md", "# 2026-02-16\n\n- Met Bob about the launch\n")
    _write(flat / "memory/ideas.md", "# Ideas\n\n- A CLI for memory\n")
    return home, project, flat


def _import(root: Path, home: Path, project: Path, *args: str, run=invoke_memory):
    return run(project, "--repo", str(root), "import", "--home", str(home),
                      "--project", str(project), *args)


def _everything(root: Path, trees: tuple[Path, Path, Path], *args: str, run=invoke_memory):
    home, project, flat = trees
    return _import(root, home, project, "--from", "claude-code", "--from", "codex",
                   "--from", "gemini", str(flat / "MEMORY.md"), str(flat / "memory"), *args,
                   run=run)


def _head(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD").stdout.strip()


def _meta(root: Path, rel: str) -> dict:
    return parse_document((root / rel).read_text(encoding="utf-8"), rel).meta


EXPECTED = {
    "knowledge/reference/agent-instructions/claude-code.md": ("reference", "~/.claude/CLAUDE.md"),
    "knowledge/reference/agent-instructions/codex.md": ("reference", "~/.codex/AGENTS.md"),
    "knowledge/reference/agent-instructions/gemini.md": ("reference", "~/.gemini/GEMINI.md"),
    "knowledge/reference/agent-instructions/claude-code-app.md": ("reference", "CLAUDE.md"),
    "knowledge/reference/agent-instructions/claude-code-app-local.md":
        ("reference", "CLAUDE.local.md"),
    "knowledge/reference/agent-instructions/codex-app.md": ("reference", "AGENTS.md"),
    "knowledge/reference/agent-instructions/gemini-app.md": ("reference", "GEMINI.md"),
    "knowledge/reference/user/user-role.md": ("reference", "user_role.md"),
    "knowledge/procedures/no-mocks.md": ("procedure", "feedback_no_mocks.md"),
    "knowledge/projects/app/merge-freeze.md": ("project_notes", "project_freeze.md"),
    "knowledge/reference/grafana-dashboards.md": ("reference", "reference_grafana.md"),
    "knowledge/journal/2026-02-16.md": ("journal", "memory/2026-02-16.md"),
    "knowledge/reference/ideas.md": ("reference", "memory/ideas.md"),
}


def test_every_format_lands_where_designed_in_one_commit(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    before = _head(memrepo_root)
    proc = _everything(memrepo_root, trees, run=run_memory)  # a process, as a person runs it
    assert proc.returncode == 0, proc.stderr
    assert run_git(memrepo_root, "rev-list", "--count", f"{before}..HEAD").stdout.strip() == "1"
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""
    for rel, (kind, origin) in EXPECTED.items():
        meta = _meta(memrepo_root, rel)
        assert meta["type"] == kind, rel
        assert meta["source"] == "migration", rel
        assert meta["imported_from"].endswith(origin), rel
        assert re.fullmatch(r"[0-9a-f]{16}", meta["imported_hash"]), rel
    assert _meta(memrepo_root, "knowledge/procedures/no-mocks.md")["description"] == (
        "Fix: tests must hit a real database")  # not strict YAML in the source: still read
    core = (memrepo_root / "knowledge/memory/MEMORY.md").read_text(encoding="utf-8")
    assert "## Imported: claude-code-app" in core and "## Imported: clawd" in core
    assert "- Likes green tea" in core
    # the index's links follow the notes to where they went
    assert "[User role](../reference/user/user-role.md)" in core
    grafana = (memrepo_root / "knowledge/reference/grafana-dashboards.md").read_text()
    assert "[no mocks](../procedures/no-mocks.md)" in grafana
    assert run_memory(memrepo_root, "verify").returncode == 0
    assert run_memory(memrepo_root, "doctor").stdout.count("MEMORY.md line_count: matches")


def test_a_secret_is_never_written_in_clear(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    proc = _everything(memrepo_root, trees)
    assert proc.returncode == 0, proc.stderr
    assert "1 secret redacted" in proc.stdout
    text = (memrepo_root / "knowledge/reference/agent-instructions/claude-code.md").read_text()
    assert "ANTHROPIC_API_KEY=[REDACTED:anthropic-api-key]" in text
    assert SECRET not in run_git(memrepo_root, "log", "-p", "--all").stdout
    assert not run_git(memrepo_root, "grep", "-l", SECRET[:20], check=False).stdout


def test_a_second_import_changes_nothing(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    assert _everything(memrepo_root, trees).returncode == 0
    head = _head(memrepo_root)
    again = _everything(memrepo_root, trees)
    assert again.returncode == 0, again.stderr
    assert "nothing new to import" in again.stdout
    assert {line.split()[0] for line in again.stdout.splitlines()[:-1]} == {"unchanged"}
    assert _head(memrepo_root) == head
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""


def test_a_changed_source_updates_only_what_is_new(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    home, project, _ = trees
    assert _everything(memrepo_root, trees).returncode == 0
    head = _head(memrepo_root)
    with (home / ".codex/AGENTS.md").open("a") as fh:
        fh.write("- Never force-push.\n")
    mem = _memdir(home, project)
    _write(mem / "feedback_terse.md", "---\nname: Terse answers\ntype: feedback\n---\nNo "
           "summaries at the end.\n")
    with (mem / "MEMORY.md").open("a") as fh:
        fh.write("- [Terse](feedback_terse.md) — no summaries\n")
    proc = _everything(memrepo_root, trees)
    assert proc.returncode == 0, proc.stderr
    changed = run_git(memrepo_root, "diff", "--name-only", head, "HEAD").stdout.split()
    assert sorted(changed) == ["knowledge/memory/MEMORY.md", "knowledge/procedures/terse-answers.md",
                               "knowledge/reference/agent-instructions/codex.md"]
    assert "Never force-push" in (
        memrepo_root / "knowledge/reference/agent-instructions/codex.md").read_text()
    core = (memrepo_root / "knowledge/memory/MEMORY.md").read_text()
    assert core.count("[User role]") == 1  # a section only gains the lines it lacks
    assert "[Terse](../procedures/terse-answers.md)" in core


def test_an_import_edited_since_is_left_as_it_is(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    home, project, _ = trees
    assert _import(memrepo_root, home, project, "--from", "gemini").returncode == 0
    rel = "knowledge/reference/agent-instructions/gemini.md"
    edited = (memrepo_root / rel).read_text() + "- A person's own line.\n"
    (memrepo_root / rel).write_text(edited)
    run_git(memrepo_root, "commit", "-qam", "memory: my own line")
    with (home / ".gemini/GEMINI.md").open("a") as fh:
        fh.write("- Changed upstream.\n")
    proc = _import(memrepo_root, home, project, "--from", "gemini")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^skipped .*gemini\.md <- ~/\.gemini/GEMINI\.md: edited since", proc.stdout,
                     re.MULTILINE)
    assert (memrepo_root / rel).read_text() == edited


def test_a_persons_file_is_never_overwritten(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    home, project, _ = trees
    mine = "---\ntype: reference\ntitle: My dashboards\n---\n\nMine.\n"
    _write(memrepo_root / "knowledge/reference/grafana-dashboards.md", mine)
    run_git(memrepo_root, "add", "-A")
    run_git(memrepo_root, "commit", "-qm", "memory: my dashboards")
    for _ in range(2):
        proc = _import(memrepo_root, home, project, "--from", "claude-code")
        assert proc.returncode == 0, proc.stderr
    assert (memrepo_root / "knowledge/reference/grafana-dashboards.md").read_text() == mine
    assert _meta(memrepo_root, "knowledge/reference/grafana-dashboards-2.md")[
        "imported_from"].endswith("reference_grafana.md")
    assert "nothing new to import" in proc.stdout


def test_a_memory_md_too_big_for_core_memory_becomes_reference(
        memrepo_root: Path, tmp_path: Path) -> None:
    big = _write(tmp_path / "bot" / "MEMORY.md", "".join(f"- fact {i}\n" for i in range(200)))
    proc = invoke_memory(tmp_path, "--repo", str(memrepo_root), "import", str(big))
    assert proc.returncode == 0, proc.stderr
    assert "warning line" in proc.stdout
    meta = _meta(memrepo_root, "knowledge/reference/imported/bot-memory.md")
    assert meta["source"] == "migration" and meta["imported_from"].endswith("bot/MEMORY.md")
    assert "fact 199" not in (memrepo_root / "knowledge/memory/MEMORY.md").read_text()
    again = invoke_memory(tmp_path, "--repo", str(memrepo_root), "import", str(big))
    assert "nothing new to import" in again.stdout


def _fifo(project: Path, tmp_path: Path) -> Path:
    os.mkfifo(project / "AGENTS.md.fifo")
    (project / "AGENTS.md").unlink()
    os.rename(project / "AGENTS.md.fifo", project / "AGENTS.md")
    return project / "AGENTS.md"


def _link_out(project: Path, tmp_path: Path) -> Path:
    secret = _write(tmp_path / "outside" / "credentials.md", "aws creds\n")
    (project / "AGENTS.md").unlink()
    (project / "AGENTS.md").symlink_to(secret)
    return project / "AGENTS.md"


def _huge(project: Path, tmp_path: Path) -> Path:
    (project / "AGENTS.md").write_text("x" * (1100 * 1024))
    return project / "AGENTS.md"


def _binary(project: Path, tmp_path: Path) -> Path:
    (project / "AGENTS.md").write_bytes(b"# rules\n\x00\x01")
    return project / "AGENTS.md"


def _latin1(project: Path, tmp_path: Path) -> Path:
    (project / "AGENTS.md").write_bytes(b"# r\xe8gles\n")
    return project / "AGENTS.md"


@pytest.mark.parametrize(("make", "says"), [
    (_fifo, "not a regular file"), (_link_out, "outside"), (_huge, "validation.max_file_kb"),
    (_binary, "binary"), (_latin1, "not UTF-8"),
], ids=["fifo", "symlink-out", "huge", "binary", "not-utf8"])
def test_bad_input_is_refused_in_one_line_and_nothing_written(
        memrepo_root: Path, trees: tuple[Path, Path, Path], tmp_path: Path, make, says: str
) -> None:
    home, project, _ = trees
    bad = make(project, tmp_path)
    head = _head(memrepo_root)
    proc = _import(memrepo_root, home, project, "--from", "codex")
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"memory: {bad}") and says in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert _head(memrepo_root) == head
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""


def test_a_symlink_inside_the_project_is_followed(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    home, project, _ = trees
    (project / "CLAUDE.md").unlink()
    (project / "CLAUDE.md").symlink_to("AGENTS.md")  # the common CLAUDE.md -> AGENTS.md
    proc = _import(memrepo_root, home, project, "--from", "claude-code", "--from", "codex")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^skipped .*AGENTS\.md: the same file as .*CLAUDE\.md", proc.stdout,
                     re.MULTILINE)


def test_dry_run_writes_nothing(memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    head = _head(memrepo_root)
    proc = _everything(memrepo_root, trees, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "nothing written" in proc.stdout
    assert "added  knowledge/procedures/no-mocks.md" in proc.stdout
    assert _head(memrepo_root) == head
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""
    assert not (memrepo_root / "knowledge/procedures/no-mocks.md").exists()


def test_json_reports_every_source(memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    proc = _everything(memrepo_root, trees, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"dry_run", "commit", "written", "items"}
    assert out["dry_run"] is False and out["commit"] == _head(memrepo_root)
    assert set(out["written"]) == {*EXPECTED, "knowledge/memory/MEMORY.md"}
    for item in out["items"]:
        assert set(item) == {"source", "agent", "path", "action", "why", "redacted", "section"}
        assert item["action"] == "added"
    by_source = {i["source"]: i for i in out["items"]}
    assert by_source["~/.claude/CLAUDE.md"]["redacted"] == 1
    assert {i["agent"] for i in out["items"]} == {"claude-code", "codex", "gemini", "path"}
    sections = [i["section"] for i in out["items"] if i["section"]]
    assert sorted(sections) == ["Imported: claude-code-app", "Imported: clawd"]


def test_no_commit_leaves_the_files_to_commit(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    home, project, _ = trees
    head = _head(memrepo_root)
    proc = _import(memrepo_root, home, project, "--from", "codex", "--no-commit")
    assert proc.returncode == 0, proc.stderr
    assert "not committed" in proc.stdout and _head(memrepo_root) == head
    assert "knowledge/reference/agent-instructions/codex.md" in run_git(
        memrepo_root, "status", "--porcelain", "-uall").stdout
    again = _import(memrepo_root, home, project, "--from", "codex")
    assert "nothing new to import" in again.stdout


def test_a_refused_commit_puts_everything_back(
        memrepo_root: Path, trees: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project, _ = trees
    core = (memrepo_root / "knowledge/memory/MEMORY.md").read_bytes()

    def refuse(*_: object) -> None:
        raise MemrepoError("knowledge/x.md:1: refused [check-something]")

    monkeypatch.setattr(migrate, "commit_paths", refuse)
    with pytest.raises(MemrepoError, match="nothing was imported"):
        migrate.import_memory(memrepo_root, find_sources("claude-code", home, project))
    assert (memrepo_root / "knowledge/memory/MEMORY.md").read_bytes() == core
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""


def test_find_sources_lists_without_reading(trees: tuple[Path, Path, Path]) -> None:
    """What `memory install` calls to offer the import: stats only, never a read."""
    home, project, _ = trees
    os.mkfifo(project / ".claude-fifo")
    (project / ".claude").mkdir()
    os.rename(project / ".claude-fifo", project / ".claude" / "CLAUDE.md")  # never opened
    found = find_sources("claude-code", home, project)
    kinds = {(s.path.name, s.kind) for s in found}
    assert ("CLAUDE.md", "instructions") in kinds and ("MEMORY.md", "index") in kinds
    assert len(found) == 9  # user, project, .claude/, local, 5 auto-memory files
    assert [s.path.name for s in find_sources("codex", home, project)] == ["AGENTS.md"] * 2
    assert find_sources("gemini", home / "nobody", project / "none") == []
    with pytest.raises(MemrepoError, match="unknown agent"):
        find_sources("cursor", home, project)


@pytest.mark.parametrize(("args", "says"), [
    ((), "nothing to import"), (("--from", "path"), "--from path needs"),
    (("/no/such/MEMORY.md",), "no such file"),
])
def test_usage_errors_are_one_line(memrepo_root: Path, tmp_path: Path, args: tuple[str, ...],
                                   says: str) -> None:
    proc = invoke_memory(tmp_path, "--repo", str(memrepo_root), "import", *args)
    assert proc.returncode == 1 and says in proc.stderr and "Traceback" not in proc.stderr


def test_a_dated_note_whose_day_has_a_journal_goes_to_reference(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    _, _, flat = trees
    assert invoke_memory(memrepo_root, "remember", "a note of my own").returncode == 0
    day = next((memrepo_root / "knowledge/journal").glob("*.md")).name
    run_git(memrepo_root, "add", "-A")
    run_git(memrepo_root, "commit", "-qm", "memory: today")
    mine = (memrepo_root / "knowledge/journal" / day).read_text()
    _write(flat / "memory" / day, "- from the old tool\n")
    proc = invoke_memory(flat, "--repo", str(memrepo_root), "import", str(flat / "memory"))
    assert proc.returncode == 0, proc.stderr
    assert (memrepo_root / "knowledge/journal" / day).read_text() == mine
    meta = _meta(memrepo_root, f"knowledge/reference/{day}")
    assert meta["type"] == "reference" and meta["imported_from"].endswith(day)


def test_a_line_a_person_removed_from_a_section_is_not_brought_back(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    _, _, flat = trees
    args = ("--repo", str(memrepo_root), "import", str(flat / "MEMORY.md"))
    assert invoke_memory(flat, *args).returncode == 0
    core = memrepo_root / "knowledge/memory/MEMORY.md"
    core.write_text(core.read_text().replace("- Likes green tea\n", ""))
    run_git(memrepo_root, "commit", "-qam", "memory: not true any more")
    assert "nothing new to import" in invoke_memory(flat, *args).stdout
    assert "green tea" not in core.read_text()


def test_an_import_stays_where_it_is_when_a_lower_name_is_freed(
        memrepo_root: Path, trees: tuple[Path, Path, Path]) -> None:
    home, project, _ = trees
    mine = memrepo_root / "knowledge/reference/agent-instructions/codex.md"
    _write(mine, "---\ntype: reference\n---\n\nMine.\n")
    assert _import(memrepo_root, home, project, "--from", "codex").returncode == 0
    assert (mine.parent / "codex-2.md").is_file()
    mine.unlink()
    proc = _import(memrepo_root, home, project, "--from", "codex")
    assert "nothing new to import" in proc.stdout and not mine.exists()
