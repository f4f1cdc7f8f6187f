"""memory sync over a real bare remote; the pre-receive hook guarding it."""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import capture, committer
from memrepo.errors import MemrepoError
from memrepo.sync import SyncConflict, sync


def install_pre_receive(bare: Path) -> None:
    hook = bare / "hooks" / "pre-receive"
    memory = Path(sys.executable).parent / "memory"
    hook.write_text(f"#!/bin/sh\nexec {memory} hook pre-receive\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def crepo_remote(crepo: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(bare remote with the pre-receive hook, clone a, clone b)."""
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(crepo), str(bare))
    install_pre_receive(bare)
    a, b = tmp_path / "a", tmp_path / "b"
    for c in (a, b):
        run_git(tmp_path, "clone", "-q", str(bare), str(c))
    return bare, a, b


def _work(root: Path, name: str, rounds: int, errors: list[BaseException]) -> None:
    try:
        for r in range(rounds):
            sid = f"ses_{name}{r}"
            capture.start(root, session_id=sid, topic=f"{name} round {r}")
            capture.append(root, sid, "user", f"{name} says hello in round {r}")
            capture.append(root, sid, "agent", f"reply to {name} {r}")
            capture.end(root, sid)
            note = root / f"knowledge/reference/{name}-{r}.md"
            note.write_text(f"---\ntype: reference\n---\n- fact {r} from {name}\n")
            committer.run(root, use_llm=False, push=False)
            sync(root)
    except BaseException as exc:  # surfaced by the test
        errors.append(exc)


def test_two_clones_capture_and_sync_concurrently(crepo_remote) -> None:
    bare, a, b = crepo_remote
    rounds = 3
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_work, args=(c, n, rounds, errors))
               for c, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    sync(a)
    sync(b)
    heads = {run_git(c, "rev-parse", "HEAD").stdout for c in (a, b)}
    assert len(heads) == 1 and heads == {run_git(bare, "rev-parse", "main").stdout}
    files = run_git(a, "ls-files", "raw/conversations", "knowledge/reference").stdout.split()
    for name in "ab":
        for r in range(rounds):
            assert any(f"-ses_{name}{r}-" in f for f in files)
            assert f"knowledge/reference/{name}-{r}.md" in files
    assert run_git(a, "status", "--porcelain").stdout == ""
    assert run_memory(a, "verify").returncode == 0


def test_real_conflict_is_left_for_the_person(crepo_remote) -> None:
    _, a, b = crepo_remote
    for c, text in ((a, "- prefers tea\n"), (b, "- prefers coffee\n")):
        f = c / "knowledge/memory/MEMORY.md"
        f.write_text(f.read_text() + text)
        committer.run(c, use_llm=False, push=False)
    sync(a)
    mine = run_git(b, "rev-parse", "HEAD").stdout
    with pytest.raises(SyncConflict) as err:
        sync(b)
    assert err.value.files == ["knowledge/memory/MEMORY.md"]
    assert "knowledge/memory/MEMORY.md" in str(err.value) and "rebase was aborted" in str(err.value)
    assert run_git(b, "rev-parse", "HEAD").stdout == mine  # nothing dropped
    assert "prefers coffee" in (b / "knowledge/memory/MEMORY.md").read_text()
    assert not (b / ".git/rebase-merge").exists()
    proc = run_memory(b, "sync")
    assert proc.returncode == 1 and "MEMORY.md" in proc.stderr and "Traceback" not in proc.stderr


def test_pre_receive_refuses_a_rewritten_closed_transcript(crepo_remote) -> None:
    _, a, _ = crepo_remote
    capture.start(a, session_id="ses_imm", topic="immutable")
    capture.append(a, "ses_imm", "user", "the original words")
    done = capture.end(a, "ses_imm")
    sync(a)
    path = a / done.path
    path.write_text(path.read_text().replace("the original words", "words rewritten later"))
    run_git(a, "commit", "-q", "--no-verify", "-am", "memory: sneaky edit")
    with pytest.raises(MemrepoError, match="refused the push") as err:
        sync(a)
    assert done.path in str(err.value)
    push = run_git(a, "push", "origin", "HEAD:main", check=False)
    assert push.returncode != 0 and "closed" in push.stderr
    # A secret pushed past the local hook is refused too.
    run_git(a, "reset", "-q", "--hard", "origin/main")
    (a / "knowledge/reference/k.md").write_text(
        "---\ntype: reference\n---\nkey AKIAIOSFODNN7EXAMPLE\n")
    run_git(a, "add", "-A")
    run_git(a, "commit", "-q", "--no-verify", "-m", "memory: oops")
    push = run_git(a, "push", "origin", "HEAD:main", check=False)
    assert push.returncode != 0 and "aws-access-key" in push.stderr
    assert "AKIAIOSFODNN7EXAMPLE" not in push.stderr


def test_sync_without_remote_is_a_clear_error(crepo: Path) -> None:
    proc = run_memory(crepo, "sync")
    assert proc.returncode == 1 and "no git remote named 'origin'" in proc.stderr


def test_pre_receive_allows_growth_of_open_transcripts(crepo_remote) -> None:
    _, a, _ = crepo_remote
    s = capture.start(a, session_id="ses_grow", topic="growing")
    capture.append(a, "ses_grow", "user", "first")
    run_git(a, "add", s.path)
    run_git(a, "commit", "-q", "-m", "conversation: open")
    sync(a)
    capture.append(a, "ses_grow", "agent", "second")
    run_git(a, "commit", "-q", "-am", "conversation: more")
    sync(a)
    assert os.environ.get("GIT_DIR") is None
