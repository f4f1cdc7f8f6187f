"""memory verify: history audited commit by commit with the pre-commit validators' rules."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.transcript import capture


def test_verify_reports_each_offending_commit(crepo: Path) -> None:
    assert invoke_memory(crepo, "verify").returncode == 0
    capture.start(crepo, session_id="ses_v", topic="verify me")
    capture.append(crepo, "ses_v", "user", "original")
    done = capture.end(crepo, "ses_v")
    good = run_git(crepo, "rev-parse", "HEAD").stdout.strip()
    t = crepo / done.path
    t.write_text(t.read_text().replace("original", "rewritten"))
    run_git(crepo, "commit", "-q", "--no-verify", "-am", "memory: rewrite history")
    bad1 = run_git(crepo, "rev-parse", "HEAD").stdout.strip()
    (crepo / "knowledge/reference/k.md").write_text(
        "---\ntype: reference\n---\nkey AKIAIOSFODNN7EXAMPLE\n")
    run_git(crepo, "add", "-A")
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "memory: leak")
    bad2 = run_git(crepo, "rev-parse", "HEAD").stdout.strip()
    run_git(crepo, "rm", "-q", done.path)
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "memory: delete evidence")
    proc = invoke_memory(crepo, "verify")
    assert proc.returncode == 1
    out = proc.stdout
    assert f"{bad1[:10]} memory: rewrite history" in out and "closed" in out
    assert f"{bad2[:10]} memory: leak" in out and "aws-access-key" in out
    assert "memory: delete evidence" in out and "may not be deleted" in out
    assert "AKIAIOSFODNN7EXAMPLE" not in out
    assert "3 offending" in out
    proc = invoke_memory(crepo, "verify", "--since", bad1, "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["checked"] == 2 and len(data["offending"]) == 2
    assert invoke_memory(crepo, "verify", "--rev", good).returncode == 0


def test_a_key_added_to_an_open_transcript_is_caught_by_verify_and_pre_receive(
    crepo: Path, tmp_path: Path
) -> None:
    """The rule lives in check_transcripts.check_history, which both audits share."""
    import stat
    import sys

    s = capture.start(crepo, session_id="ses_k", topic="keys")
    capture.append(crepo, "ses_k", "user", "first words")
    run_git(crepo, "add", s.path)
    run_git(crepo, "commit", "-q", "-m", "conversation: open")
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(crepo), str(bare))
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nexec {Path(sys.executable).parent / 'memory'} hook pre-receive\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    run_git(crepo, "remote", "add", "origin", str(bare))
    t = crepo / s.path
    t.write_text(t.read_text().replace("topic: keys\n", "topic: keys\nmodel: other\n"))
    local = invoke_memory(crepo, "hook", "pre-commit", s.path)
    assert local.returncode == 1 and "frontmatter 'model' was added" in local.stdout
    run_git(crepo, "commit", "-q", "--no-verify", "-am", "conversation: new key")
    proc = invoke_memory(crepo, "verify")
    assert proc.returncode == 1 and "frontmatter 'model' was added" in proc.stdout
    push = run_git(crepo, "push", "origin", "HEAD:main", check=False)
    assert push.returncode != 0 and "frontmatter 'model' was added" in push.stderr


def test_verify_reports_symlinks_and_secrets_in_messages_and_names(crepo: Path) -> None:
    (crepo / "knowledge/reference/passwd.md").symlink_to("/etc/passwd")
    run_git(crepo, "add", "-A")
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "memory: link")
    (crepo / "knowledge/reference/AKIAIOSFODNN7EXAMPLE.md").write_text(
        "---\ntype: reference\n---\nfine\n")
    run_git(crepo, "add", "-A")
    run_git(crepo, "commit", "-q", "--no-verify", "-m", "memory: ok\n\nghp_" + "aB3" * 12)
    proc = invoke_memory(crepo, "verify")
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "knowledge/reference/passwd.md: error: is a symlink" in out
    assert "[REDACTED:aws-access-key].md: error: possible aws-access-key in the file name" in out
    assert "commit message:3: error: possible github-token" in out
    assert "AKIAIOSFODNN7EXAMPLE" not in out and "aB3aB3" not in out
