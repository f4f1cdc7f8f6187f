"""`memory doctor`: reports health by exit status and repairs with --fix."""

from __future__ import annotations

import json
import os
import re
import time
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
    assert "fixed: installed git hooks (post-merge via direct)" in proc.stdout
    assert (memrepo_root / "scratch").is_dir()


def test_invalid_config_makes_the_repo_unhealthy(memrepo_root: Path) -> None:
    (memrepo_root / "memory-config.yaml").write_text("search:\n  vector_weight: lots\n")
    proc = run_memory(memrepo_root, "doctor")
    assert proc.returncode == 1
    assert "memory-config.yaml:2: 'search.vector_weight' must be a number" in proc.stdout


def test_a_big_repo_on_the_pre_commit_runner_gets_advice_not_a_failure(
    memrepo_root: Path, monkeypatch
) -> None:
    from memrepo.config import set_setting

    cfg = memrepo_root / "memory-config.yaml"
    cfg.write_text(set_setting(cfg.read_text(), "git", "hook_runner", "pre-commit"))
    repo = discover(memrepo_root)
    assert doctor._runner_advice(repo) == []  # a fresh repo is small
    monkeypatch.setattr(doctor, "BIG_REPO_FILES", 3)
    (advice,) = doctor._runner_advice(repo)
    assert advice.warning and not advice.ok and advice.fix == "memory init --hooks direct"
    assert "tracked files" in advice.detail


def test_doctor_runs_the_hooks_without_the_virtualenv_on_path(memrepo_root: Path) -> None:
    """A new shell without the venv's bin/ commits fine (the shims name their Python);
    a shim whose Python is gone is unhealthy until --fix rewrites it."""
    report = json.loads(run_memory(memrepo_root, "doctor", "--json").stdout)
    names = {c["name"]: c for c in report["checks"]}
    assert names["git hooks run"]["ok"], names["git hooks run"]
    hook = git.hooks_dir(memrepo_root) / "pre-commit"
    hook.write_text(re.sub(r"(?m)^py=.*$", "py=/deleted/bin/python", hook.read_text()))
    report = json.loads(run_memory(memrepo_root, "doctor", "--json").stdout)
    names = {c["name"]: c for c in report["checks"]}
    assert not report["healthy"]
    assert "pre-commit: its Python is gone (/deleted/bin/python)" in names["git hooks"]["detail"]
    assert "/deleted/bin/python" in names["git hooks run"]["detail"]
    assert run_memory(memrepo_root, "doctor", "--fix").returncode == 0


def test_the_pre_commit_runner_needs_memory_on_path(memrepo_root: Path, monkeypatch) -> None:
    from memrepo.config import set_setting

    cfg = memrepo_root / "memory-config.yaml"
    cfg.write_text(set_setting(cfg.read_text(), "git", "hook_runner", "pre-commit"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    check = doctor._memory_on_path_check("pre-commit")
    if check.ok:  # a memory installed system-wide
        return
    assert "not on PATH" in check.detail and "--hooks direct" in check.fix
    assert doctor._memory_on_path_check("direct").ok  # the direct shims do not need it


# --- what a killed writer leaves (issue #14) ------------------------------------------


def test_leftover_tmp_files_are_reported_and_removed_but_never_a_live_ones(
    memrepo_root: Path,
) -> None:
    old = time.time() - 3600
    dead = memrepo_root / "knowledge/journal/.2026-01-01.md.999999.abcd1234.tmp"
    db = memrepo_root / ".memory.db.999998.tmp"
    live = memrepo_root / f"knowledge/.notes.md.{os.getpid()}.abcd1234.tmp"  # our own pid
    young = memrepo_root / "topics/.t.md.999997.abcd1234.tmp"
    mine = memrepo_root / "knowledge/.draft.tmp"  # a user's file: no pid, no random part
    for p in (dead, db, live, young, mine):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("half")
    for p in (dead, db, live, mine):
        os.utime(p, (old, old))
    checks = {c.name: c for c in doctor.run_checks(discover(memrepo_root))}
    left = checks["leftover temp files"]
    assert not left.ok and left.warning and "2 *.tmp" in left.detail
    assert dead.name in left.detail and db.name in left.detail
    done, failed = doctor.fix(discover(memrepo_root))
    assert failed == [] and not dead.exists() and not db.exists()
    assert live.exists() and young.exists() and mine.exists()
    assert any(line.startswith("removed ") for line in done)


def test_interrupted_sessions_and_uncommitted_transcripts_are_reported_and_fixed(
    memrepo_root: Path,
) -> None:
    from memrepo.transcript import capture
    from memrepo.transcript.session import OpenSession, _state_file, save_session
    from memrepo.transcript.tail import _note_tail

    root = memrepo_root
    torn = capture.start(root, session_id="ses_torn", topic="torn tail")
    capture.append(root, "ses_torn", "user", "kept")
    st = (root / torn.path).stat()
    _note_tail(root, "ses_torn", st.st_ino, st.st_size, 500)
    with (root / torn.path).open("ab") as fh:
        fh.write("\n## 10:00 — agent\nhalf a tu".encode())
    capture.start(root, session_id="ses_loose", topic="never committed")
    capture.append(root, "ses_loose", "user", "hello")
    loose = capture.end(root, "ses_loose", commit=False)
    capture.start(root, session_id="ses_half", topic="half ended")
    capture.append(root, "ses_half", "user", "hello")
    state = json.loads(_state_file(root, "ses_half").read_text())
    half = capture.end(root, "ses_half", commit=False)
    save_session(root, OpenSession(
        **{**state, "phase": "closing", "closing_path": half.path}))

    checks = {c.name: c for c in doctor.run_checks(discover(root))}
    bad = checks["interrupted sessions"]
    assert not bad.ok and not bad.warning
    assert "ses_torn" in bad.detail and "torn turn" in bad.detail
    assert "ses_half" in bad.detail and "did not finish" in bad.detail
    assert "memory capture end --session ses_half" in bad.fix
    unc = checks["uncommitted transcripts"]
    assert unc.warning and loose.path in unc.detail and half.path not in unc.detail

    done, failed = doctor.fix(discover(root))
    assert failed == [], failed
    assert any("cut a torn last turn" in line for line in done)
    assert any(f"finished ending session ses_half: {half.path}" in line for line in done)
    assert any(f"committed {loose.path}" in line for line in done)
    assert (root / torn.path).read_text(encoding="utf-8").endswith("kept\n")
    tracked = git.git(["ls-files", "--", "raw/conversations/"], root)
    assert loose.path in tracked and half.path in tracked
    checks = {c.name: c for c in doctor.run_checks(discover(root))}
    assert checks["interrupted sessions"].ok and "uncommitted transcripts" not in checks


def test_a_comment_never_closed_in_memory_md_is_named(memrepo_root: Path) -> None:
    path = memrepo_root / "knowledge/memory/MEMORY.md"
    path.write_text(path.read_text() + "<!-- to self\n- hidden in any Markdown view\n")
    checks = {c.name: c for c in doctor.run_checks(discover(memrepo_root))}
    check = checks["MEMORY.md comments"]
    assert not check.ok and "never closed" in check.detail, check
