"""`memory doctor`: reports health by exit status and repairs with --fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_memory

from memrepo import doctor, git
from memrepo.repo import discover


def test_fresh_repo_is_healthy(memrepo_root: Path) -> None:
    proc = run_memory(memrepo_root, "doctor", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["healthy"] is True
    names = {c["name"]: c for c in report["checks"]}
    for name in ("config", "layout", "git hooks", "memory on PATH", "git lfs"):
        assert name in names
    assert names["git hooks"]["ok"] and names["memory on PATH"]["ok"]


def test_missing_hook_and_directory_are_reported_then_fixed(memrepo_root: Path) -> None:
    (git.hooks_dir(memrepo_root) / "post-merge").unlink()
    os.rmdir(memrepo_root / "scratch")
    proc = run_memory(memrepo_root, "doctor")
    assert proc.returncode == 1
    assert "post-merge: missing" in proc.stdout
    assert "missing: scratch" in proc.stdout
    assert "unhealthy" in proc.stdout
    proc = run_memory(memrepo_root, "doctor", "--fix")
    assert proc.returncode == 0, proc.stdout
    assert "fixed: installed git hooks (post-merge via pre-commit)" in proc.stdout
    assert (memrepo_root / "scratch").is_dir()


def test_invalid_config_makes_the_repo_unhealthy(memrepo_root: Path) -> None:
    (memrepo_root / "memory-config.yaml").write_text("search:\n  vector_weight: lots\n")
    proc = run_memory(memrepo_root, "doctor")
    assert proc.returncode == 1
    assert "memory-config.yaml:2: 'search.vector_weight' must be a number" in proc.stdout


def test_a_big_repo_on_the_pre_commit_runner_gets_advice_not_a_failure(
    memrepo_root: Path, monkeypatch
) -> None:
    repo = discover(memrepo_root)
    assert doctor._runner_advice(repo) == []  # a fresh repo is small
    monkeypatch.setattr(doctor, "BIG_REPO_FILES", 3)
    (advice,) = doctor._runner_advice(repo)
    assert advice.warning and not advice.ok and advice.fix == "memory init --hooks direct"
    assert "tracked files" in advice.detail
