"""A closed transcript is immutable to the byte: re-committed with CRLF line endings (what a
Windows checkout without the attribute, or git plumbing, stores), it is refused by the
server's pre-receive hook and reported by ``memory verify``. A work tree's CRLF is
another matter (git stores LF on add): tests/test_check_transcripts.py keeps that one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.hooks.install import install_server_hook

TRANSCRIPT = "raw/conversations/2026/02/16/1845-ses_a1b2c3d4-restructuring.md"
CLOSED = """---
type: conversation
session_id: ses_a1b2c3d4
started: 2026-02-16T18:45:00+00:00
ended: 2026-02-16T19:00:00+00:00
model: claude-opus-4.6
channel: cli
tags: [coding]
---

# Restructuring

## 18:45 — user
Read all open issues and give me a summary.

## 18:46 — agent
Here are all 12 open issues.
"""


def _commit_bytes(root: Path, rel: str, data: bytes, message: str) -> None:
    """Commit ``data`` as ``rel``'s blob exactly (no eol filter), past the local hooks."""
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    sha = run_git(root, "hash-object", "-w", "--no-filters", rel).stdout.strip()
    run_git(root, "update-index", "--add", "--cacheinfo", f"100644,{sha},{rel}")
    run_git(root, "commit", "-q", "--no-verify", "-m", message)


def test_a_closed_transcript_recommitted_with_crlf_is_refused(memrepo_root: Path,
                                                               tmp_path: Path) -> None:
    root = memrepo_root
    _commit_bytes(root, TRANSCRIPT, CLOSED.encode(), "conversation: closed")
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(root), str(bare))
    install_server_hook(bare)
    run_git(root, "remote", "add", "origin", str(bare))
    _commit_bytes(root, TRANSCRIPT, CLOSED.replace("\n", "\r\n").encode(),
                  "conversation: crlf")
    blob = subprocess.run(["git", "cat-file", "blob", f"HEAD:{TRANSCRIPT}"], cwd=root,
                          capture_output=True, check=True).stdout
    assert b"\r\n" in blob  # the history really holds other bytes
    proc = run_git(root, "push", "origin", "HEAD:main", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "pre-receive hook declined" in out, out
    assert TRANSCRIPT in out and "closed" in out and "line endings" in out, out
    ver = invoke_memory(root, "verify", "--since", "HEAD~1")
    assert ver.returncode == 1 and "closed" in ver.stdout and "line endings" in ver.stdout, (
        ver.stdout + ver.stderr)
