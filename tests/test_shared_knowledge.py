"""`memory shared`: a team's memory repo mounted read-only under shared/NAME/ (issue #38)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memrepo.commit import shared
from memrepo.commit.write import commit_paths
from memrepo.errors import MemrepoError
from memrepo.layout import category_of, shared_mount
from memrepo.repo import discover
from tests.conftest import invoke_memory, run_git

NOTE = "---\ntype: reference\n---\n# Deploys\n\n- 2026-01-02: zebrafish canary goes first\n"
REF = "shared/team/knowledge/reference/deploys.md"


@pytest.fixture
def team(crepo_template: Path, tmp_path: Path) -> Path:
    """The team's memory repo: a reference note and a person, committed."""
    root = tmp_path / "team"
    shutil.copytree(crepo_template, root, symlinks=True)
    (root / "knowledge/reference/deploys.md").write_text(NOTE, encoding="utf-8")
    (root / "knowledge/people/ana-lima.md").write_text(
        "---\ntype: person\nname: Ana Lima\n---\n# Ana Lima\n\n- runs the quokka cluster\n",
        encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "team knowledge")
    return root


def _memory(cwd: Path, *args: str) -> tuple[int, str]:
    proc = invoke_memory(cwd, *args)
    return proc.returncode, proc.stdout + proc.stderr


def _search(root: Path, *words: str) -> list[dict]:
    code, out = _memory(root, "search", *words, "--json")
    assert code == 0, out
    return json.loads(out)


def _add(crepo: Path, team: Path) -> None:
    code, out = _memory(crepo, "shared", "add", "team", str(team))
    assert code == 0, out
    assert "team: added at" in out


def test_layout_maps_a_mounted_file_to_its_category() -> None:
    assert shared_mount(REF) == "team"
    assert category_of(REF) == "reference"
    assert category_of("shared/team/knowledge/people/ana.md") == "person"
    assert category_of("shared/team/topics/deploy.md") == "topic"
    assert category_of("shared/team/mount.json") is None
    assert shared_mount("shared/x") is None and shared_mount("knowledge/reference/x.md") is None


def test_added_team_knowledge_is_committed_indexed_and_searchable(crepo: Path, team: Path) -> None:
    _add(crepo, team)
    log = run_git(crepo, "log", "-1", "--format=%s%n%b").stdout
    assert log.startswith("shared: team at ") and f"Shared-From: {team} " in log
    tree = run_git(crepo, "ls-tree", "-r", "--name-only", "HEAD", "--", "shared/").stdout
    assert REF in tree and "shared/team/mount.json" in tree
    assert "memory-config.yaml" not in tree and "raw/" not in tree  # knowledge/, topics/ only
    assert run_git(crepo, "status", "--porcelain").stdout == ""
    hits = _search(crepo, "zebrafish", "canary")
    assert [(h["path"], h["category"]) for h in hits][:1] == [(REF, "reference")]
    assert _search(crepo, "quokka")[0]["category"] == "person"
    _code, out = _memory(crepo, "shared", "list", "--json")
    [m] = json.loads(out)
    assert (m["name"], m["prefix"], m["url"]) == ("team", "shared/team", str(team))
    checks = shared.health_checks(discover(crepo))
    assert [(c.name, c.ok) for c in checks] == [("shared team", True)]
    _code, out = _memory(crepo, "doctor")
    assert "shared team" in out and "read-only" in out


def test_a_team_update_pulled_shows_up_and_removals_go(crepo: Path, team: Path) -> None:
    _add(crepo, team)
    with open(team / "knowledge/reference/deploys.md", "a", encoding="utf-8") as f:
        f.write("- 2026-01-03: wombat rollback drill every friday\n")
    run_git(team, "rm", "-q", "knowledge/people/ana-lima.md")
    run_git(team, "commit", "-qam", "team update")
    code, out = _memory(crepo, "shared", "pull")
    assert code == 0 and "team: updated at" in out, out
    assert "wombat rollback" in (crepo / REF).read_text(encoding="utf-8")
    assert [h["path"] for h in _search(crepo, "wombat", "rollback")][:1] == [REF]
    assert not (crepo / "shared/team/knowledge/people/ana-lima.md").exists()
    assert not any(h["path"].endswith("ana-lima.md") for h in _search(crepo, "quokka"))
    team_head = run_git(team, "rev-parse", "HEAD").stdout.strip()
    assert shared.mounts(crepo)[0].commit == team_head
    assert run_git(crepo, "status", "--porcelain").stdout == ""
    code, out = _memory(crepo, "shared", "pull", "team")
    assert code == 0 and "up to date" in out


def test_writers_refuse_to_write_into_shared_knowledge(crepo: Path, team: Path) -> None:
    _add(crepo, team)
    before = (crepo / REF).read_bytes()
    code, out = _memory(crepo, "update", f"{REF}:6", "zebrafish canary goes last")
    assert code == 1 and "read-only" in out and "memory shared pull team" in out
    assert (crepo / REF).read_bytes() == before
    (crepo / REF).write_text(NOTE + "- mine\n", encoding="utf-8")
    with pytest.raises(MemrepoError, match="read-only"):
        commit_paths(crepo, [REF], "a writer that went astray")
    assert run_git(crepo, "log", "-1", "--format=%s").stdout.startswith("shared: team")
    # a hand edit: the doctor says so, and a pull refuses to overwrite it
    [check] = shared.health_checks(discover(crepo))
    assert not check.ok and REF in check.detail
    with open(team / "knowledge/reference/deploys.md", "a", encoding="utf-8") as f:
        f.write("- 2026-01-05: a team change\n")
    run_git(team, "commit", "-qam", "team change")
    code, out = _memory(crepo, "shared", "pull", "team")
    assert code == 1 and "read-only" in out and "git checkout -- shared/team" in out
    assert (crepo / REF).read_text(encoding="utf-8").endswith("- mine\n")


def test_an_unreachable_team_repo_leaves_the_mount_as_it_was(crepo: Path, team: Path) -> None:
    _add(crepo, team)
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    team.rename(team.with_name("team-gone"))
    code, out = _memory(crepo, "shared", "pull")
    assert code == 1 and "team: offline" in out
    assert run_git(crepo, "rev-parse", "HEAD").stdout == head
    assert (crepo / REF).read_text(encoding="utf-8") == NOTE
    assert _search(crepo, "zebrafish")[0]["path"] == REF


def test_add_refuses_bad_names_urls_and_a_second_mount(crepo: Path, team: Path) -> None:
    for name, url, said in (("Team!", str(team), "mount name"),
                            ("team", "https://u:secret@example.com/t.git", "password")):
        code, out = _memory(crepo, "shared", "add", name, url)
        assert code == 1 and said in out
    _add(crepo, team)
    code, out = _memory(crepo, "shared", "add", "team", str(team))
    assert code == 1 and "exists already" in out
