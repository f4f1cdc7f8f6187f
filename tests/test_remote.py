"""`memory remote`: add a remote, guard it, and say which server-side rules hold where."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_git, run_memory

from memrepo import doctor
from memrepo.commit import remotes
from memrepo.repo import discover


def test_a_bare_remote_gets_the_pre_receive_hook(memrepo_root: Path, tmp_path: Path) -> None:
    bare = tmp_path / "memory.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    add = run_memory(memrepo_root, "remote", "add", "origin", str(bare), "--push")
    assert add.returncode == 0, add.stderr
    assert "protect origin" in add.stdout
    status = run_memory(memrepo_root, "remote", "status", "--json")
    assert status.returncode == 1
    [row] = json.loads(status.stdout)
    assert row["kind"] == "pre-receive" and not row["ok"]
    checks = {c.name: c for c in doctor.run_checks(discover(memrepo_root))}
    assert not checks["remote origin"].ok and checks["remote origin"].warning
    done = run_memory(memrepo_root, "remote", "protect")
    assert done.returncode == 0 and "refused before it lands" in done.stdout, done.stderr
    assert (bare / "hooks/pre-receive").is_file()
    assert run_memory(memrepo_root, "remote", "status").returncode == 0
    # the hook guards it: a secret pushed past the local hooks is refused by the server
    (memrepo_root / "knowledge/reference/keys.md").write_text(
        "---\ntype: reference\n---\n- token ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2 + "\n")
    run_git(memrepo_root, "add", "-A")
    run_git(memrepo_root, "commit", "-qm", "keys", "--no-verify")
    pushed = subprocess.run(["git", "push", "-q", "origin", "HEAD"], cwd=memrepo_root,
                            capture_output=True, text=True)
    assert pushed.returncode != 0 and "secret" in (pushed.stderr + pushed.stdout).lower()


def test_github_gets_a_verify_workflow_and_the_steps_to_require_it(
        memrepo_root: Path) -> None:
    run_git(memrepo_root, "remote", "add", "origin", "git@github.com:me/memory.git")
    out = run_memory(memrepo_root, "remote", "protect", "--install", "pip install ./memrepo")
    assert out.returncode == 0, out.stderr
    assert "Require status checks" in out.stdout
    flow = (memrepo_root / remotes.GITHUB_WORKFLOW).read_text()
    assert "memory verify" in flow and "pip install ./memrepo" in flow
    assert "fetch-depth: 0" in flow  # verify reads the whole history
    p = remotes.protection(memrepo_root, "origin")
    assert p.kind == "github-ci" and not p.ok  # written, not committed yet
    run_git(memrepo_root, "add", remotes.GITHUB_WORKFLOW)
    run_git(memrepo_root, "commit", "-qm", "ci: memrepo verify")
    assert remotes.protection(memrepo_root, "origin").ok


def test_gitlab_ci_of_the_users_own_is_not_overwritten(memrepo_root: Path) -> None:
    run_git(memrepo_root, "remote", "add", "lab", "https://gitlab.com/me/memory.git")
    (memrepo_root / ".gitlab-ci.yml").write_text("build:\n  script: [make]\n")
    out = run_memory(memrepo_root, "remote", "protect", "lab")
    assert out.returncode == 1 and "not memrepo's" in out.stderr
    assert (memrepo_root / ".gitlab-ci.yml").read_text() == "build:\n  script: [make]\n"


def test_an_ssh_host_gets_the_server_one_liner(memrepo_root: Path) -> None:
    run_git(memrepo_root, "remote", "add", "origin", "me@box.example:memory.git")
    out = run_memory(memrepo_root, "remote", "protect")
    assert out.returncode == 0 and "install_server_hook" in out.stdout
    assert remotes.protection(memrepo_root, "origin").kind == "none"
    assert run_memory(memrepo_root, "remote", "protect", "nosuch").returncode == 1
