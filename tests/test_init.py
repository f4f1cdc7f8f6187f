"""`memory init`: layout, hooks, first commit, idempotence, existing repos."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import scaffold
from memrepo.config import defaults, load_config
from memrepo.documents import read_document
from memrepo.hooks import install
from memrepo.layout import LAYOUT_DIRS, expected_types, needs_frontmatter


@pytest.fixture
def memrepo_root(tmp_path: Path) -> Path:
    """Here each test runs the real `memory init` itself (elsewhere a copy of one is used)."""
    root = tmp_path / "mem"
    proc = run_memory(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_init_lays_down_layout_hooks_and_first_commit(memrepo_root: Path) -> None:
    root = memrepo_root
    for d in LAYOUT_DIRS:
        assert (root / d).is_dir(), d
    for rel in scaffold.KNOWLEDGE_TEMPLATES.values():
        doc = read_document(root / rel, rel)
        assert doc.meta["type"] in expected_types(rel), rel
    assert (root / "topics/remembering.md").is_file()
    assert load_config(root) == defaults()
    assert "memory.db" in (root / ".gitignore").read_text()
    assert "filter=lfs" in (root / ".gitattributes").read_text()
    assert install.hooks_status(root) == {k: "ok" for k in install.HOOK_TYPES}
    log = run_git(root, "log", "--format=%s").stdout.splitlines()
    assert log == ["maintenance: initialize memory repo"]
    assert run_git(root, "status", "--porcelain").stdout == ""
    tracked = run_git(root, "ls-files").stdout.split()
    assert "knowledge/identity/SOUL.md" in tracked and "raw/conversations/.gitkeep" in tracked
    assert not any(p.startswith("scratch") for p in tracked)


def test_every_markdown_file_init_writes_has_valid_frontmatter(memrepo_root: Path) -> None:
    for path in memrepo_root.rglob("*.md"):
        rel = str(path.relative_to(memrepo_root))
        if needs_frontmatter(rel):
            doc = read_document(path, rel)
            assert doc.has_frontmatter and doc.meta.get("type") in expected_types(rel), rel


def test_second_run_changes_nothing_and_says_so(memrepo_root: Path) -> None:
    before = _snapshot(memrepo_root)
    head = run_git(memrepo_root, "rev-parse", "HEAD").stdout
    proc = run_memory(memrepo_root, "init")
    assert proc.returncode == 0, proc.stderr
    assert "nothing changed" in proc.stdout
    assert "found" in proc.stdout
    assert _snapshot(memrepo_root) == before
    assert run_git(memrepo_root, "rev-parse", "HEAD").stdout == head


def test_rerun_restores_missing_files_and_keeps_user_edits(memrepo_root: Path) -> None:
    root = memrepo_root
    soul = root / "knowledge/identity/SOUL.md"
    soul.write_text(soul.read_text().replace("# Soul", "# Soul\n\nI am Silas."))
    (root / "knowledge/identity/USER.md").unlink()
    run_git(root, "commit", "-qam", "identity: edit soul, drop user")
    proc = run_memory(root, "init")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "I am Silas." in soul.read_text()
    assert (root / "knowledge/identity/USER.md").is_file()
    assert run_git(root, "log", "-1", "--format=%s").stdout.strip() == scaffold.RESTORE_MESSAGE


def test_init_in_existing_repo_leaves_unrelated_files_alone(tmp_path: Path) -> None:
    root = tmp_path / "existing"
    root.mkdir()
    run_git(root, "init", "-q")
    (root / "notes.txt").write_text("mine\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: mine\n        name: mine\n"
        "        entry: 'true'\n        language: system\n"
    )
    run_git(root, "add", ".gitignore", ".pre-commit-config.yaml")
    run_git(root, "commit", "-qm", "user stuff", "--no-verify")
    proc = run_memory(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    gitignore = (root / ".gitignore").read_text()
    assert gitignore.startswith("*.log\n") and "memory.db" in gitignore
    config = (root / ".pre-commit-config.yaml").read_text()
    assert "id: mine" in config and "memory hook pre-commit" in config
    assert (root / "notes.txt").read_text() == "mine\n"
    status = run_git(root, "status", "--porcelain").stdout
    assert status.strip() == "?? notes.txt"  # untouched and not committed by init
    # the layout is laid down for the first time: the first memory commit, not a "restore"
    log = run_git(root, "log", "--format=%s").stdout.splitlines()
    assert log == [scaffold.INIT_MESSAGE, "user stuff"]


def test_init_adds_the_knowledge_merge_driver_to_an_older_memory_repo(memrepo_root: Path) -> None:
    root = memrepo_root
    attrs = root / ".gitattributes"
    line = "knowledge/**/*.md merge=memrepo"
    assert line in attrs.read_text().splitlines()
    older = [ln for ln in attrs.read_text().splitlines() if ln != line]
    attrs.write_text("\n".join(older) + "\n")
    run_git(root, "commit", "-qam", "maintenance: an older memrepo's attributes")
    proc = run_memory(root, "init")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "updated   .gitattributes" in proc.stdout
    assert attrs.read_text().splitlines().count(line) == 1
    assert run_git(root, "check-attr", "merge", "--", "knowledge/journal/2026-01-01.md"
                   ).stdout.strip().endswith("merge: memrepo")
    assert run_git(root, "log", "-1", "--format=%s").stdout.strip() == scaffold.RESTORE_MESSAGE
    assert run_memory(root, "init").stdout.count("updated") == 0  # idempotent


def test_init_refuses_a_subdirectory_of_another_repo(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / "sub").mkdir(parents=True)
    run_git(outer, "init", "-q")
    proc = run_memory(tmp_path, "init", str(outer / "sub"))
    assert proc.returncode == 1
    assert "is inside the git repo" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (outer / "sub" / "memory-config.yaml").exists()


def test_init_on_a_machine_without_a_git_identity(tmp_path: Path, monkeypatch) -> None:
    """A fresh machine has no user.name/email: init gives the repo one (locally) and commits."""
    home = tmp_path / "home"
    home.mkdir()
    empty = home / "gitconfig"
    empty.write_text("[user]\n\tuseConfigOnly = true\n")  # no guessing from the hostname
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("HOME", str(home))
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "mem"
    proc = run_memory(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "configured git identity" in proc.stdout
    author = run_git(root, "log", "-1", "--format=%an <%ae>").stdout.strip()
    assert author == "memrepo <memrepo@localhost>"
    assert empty.read_text() == "[user]\n\tuseConfigOnly = true\n"  # global config untouched
    again = run_memory(tmp_path, "init", str(root))
    assert "configured git identity" not in again.stdout and "nothing changed" in again.stdout


def test_init_defaults_to_direct_and_names_other_pre_commit_hooks(tmp_path: Path) -> None:
    """A new repo gets the direct runner; a .pre-commit-config.yaml with other hooks is
    said to need chaining (the direct runner does not read it)."""
    root = tmp_path / "mem"
    root.mkdir()
    run_git(root, "init", "-q")
    (root / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: lint\n        name: lint\n"
        "        entry: 'true'\n        language: system\n"
    )
    proc = run_memory(tmp_path, "init", str(root))
    assert proc.returncode == 0, proc.stderr
    assert load_config(root)["git"]["hook_runner"] == "direct"
    assert "hooks that are not memrepo's (lint)" in proc.stderr
    assert "pre-commit install" in proc.stderr and "--hooks pre-commit" in proc.stderr
