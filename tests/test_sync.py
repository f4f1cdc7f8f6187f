"""memory sync over a real bare remote; the pre-receive hook guarding it."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git, run_memory

from memrepo import documents
from memrepo.commit import batch
from memrepo.commit.sync import SyncConflict, sync
from memrepo.errors import MemrepoError
from memrepo.transcript import capture


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


def _memory_ok(root: Path, *args: str) -> str:
    proc = run_memory(root, *args)
    if proc.returncode != 0:
        raise AssertionError(f"memory {' '.join(args)} in {root.name}: {proc.stderr}{proc.stdout}")
    return proc.stdout


def _work(root: Path, name: str, rounds: int, errors: list[BaseException]) -> None:
    """One machine: each round captures a session, remembers a fact, commits and syncs
    (`commit --push`), every step a separate `memory` process."""
    try:
        for r in range(rounds):
            sid = f"ses_{name}{r}"
            _memory_ok(root, "capture", "start", "--session", sid, "--topic", f"{name} round {r}")
            _memory_ok(root, "capture", "append", "--session", sid, "--role", "user",
                       f"{name} says hello in round {r}")
            _memory_ok(root, "capture", "end", "--session", sid)
            _memory_ok(root, "remember", f"fact {r} from {name}")
            out = _memory_ok(root, "commit", "--no-llm", "--push")  # commit, then sync
            if "sync failed" in out or "pushed" not in out:
                raise AssertionError(f"{root.name} round {r}: {out}")
    except BaseException as exc:  # surfaced by the test
        errors.append(exc)


def test_two_clones_capture_and_sync_concurrently(crepo_remote) -> None:
    """Both clones write today's journal (the second creates it too: add/add) and sessions,
    in separate processes, for many rounds: nothing conflicts, nothing is lost."""
    bare, a, b = crepo_remote
    rounds = 10
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_work, args=(c, n, rounds, errors))
               for c, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    sync(a)
    sync(b)
    heads = {run_git(c, "rev-parse", "HEAD").stdout for c in (a, b)}
    assert len(heads) == 1 and heads == {run_git(bare, "rev-parse", "main").stdout}
    files = run_git(a, "ls-files", "raw/conversations", "knowledge/journal").stdout.split()
    journals = [f for f in files if f.startswith("knowledge/journal/") and f.endswith(".md")]
    text = "".join((a / j).read_text() for j in journals)
    for name in "ab":
        for r in range(rounds):
            assert any(f"-ses_{name}{r}-" in f for f in files)
            assert text.count(f" fact {r} from {name}\n") == 1
    for j in journals:
        assert documents.read_document(a / j, j).meta["type"] == "journal"
    assert invoke_memory(a, "hook", "pre-commit", *journals).returncode == 0
    assert run_git(a, "status", "--porcelain").stdout == ""
    assert invoke_memory(a, "verify").returncode == 0


def test_both_clones_creating_the_days_journal_merge_without_conflict(crepo_remote) -> None:
    """The add/add case: each clone creates today's journal with the same frontmatter."""
    _, a, b = crepo_remote
    for c, fact in ((a, "alpha fact"), (b, "beta fact")):
        _memory_ok(c, "remember", fact, "--tags", "shared")
        _memory_ok(c, "commit", "--no-llm", "--no-push")
    _memory_ok(a, "sync")
    out = _memory_ok(b, "sync")
    assert "pulled 1 and pushed 1" in out
    [journal] = [f for f in run_git(b, "ls-files", "knowledge/journal").stdout.split()
                 if f.endswith(".md")]
    doc = documents.read_document(b / journal, journal)
    assert doc.meta["tags"] == ["shared"]
    assert doc.body.count("## ") == 1  # the day's heading once
    assert "alpha fact" in doc.body and "beta fact" in doc.body
    assert invoke_memory(b, "hook", "pre-commit", journal).returncode == 0


def _journal_both_sides(a: Path, b: Path) -> str:
    """A journal both clones share, then each bumps `updated` and adds a bullet."""
    path = "knowledge/journal/2026-03-01.md"
    (a / path).parent.mkdir(parents=True, exist_ok=True)
    (a / path).write_text("---\ntype: journal\ndate: 2026-03-01\nupdated: 2026-03-01\n---\n\n"
                          "## 2026-03-01\n- first\n")
    _memory_ok(a, "commit", "--no-llm", "--no-push")
    _memory_ok(a, "sync")
    _memory_ok(b, "sync")
    for c, day, fact in ((a, "02", "from a"), (b, "03", "from b")):
        f = c / path
        f.write_text(f.read_text().replace("updated: 2026-03-01", f"updated: 2026-03-{day}")
                     + f"- {fact}\n")
        _memory_ok(c, "commit", "--no-llm", "--no-push")
    _memory_ok(a, "sync")
    return path


def test_both_clones_changing_a_frontmatter_date_merge_to_the_later(crepo_remote) -> None:
    """The merge driver (passed by sync to its rebase: these plain clones have no driver in
    their git config) merges frontmatter key by key: both bumped `updated`, the later wins."""
    _, a, b = crepo_remote
    assert run_git(b, "config", "--get", "merge.memrepo.driver", check=False).stdout == ""
    path = _journal_both_sides(a, b)
    assert sync(b).pushed == 1
    text = (b / path).read_text()
    assert text.count("updated:") == 1 and "updated: 2026-03-03" in text
    assert "- first\n- from a\n- from b\n" in text
    assert invoke_memory(b, "hook", "pre-commit", path).returncode == 0


def test_a_union_merge_that_breaks_frontmatter_is_a_conflict(crepo_remote) -> None:
    """A repo whose journals still merge with union (an older .gitattributes, here forced
    in info/attributes) keeps both values of a key: a duplicate key, so sync stops."""
    _, a, b = crepo_remote
    (b / ".git/info/attributes").write_text("knowledge/journal/*.md merge=union\n")
    path = _journal_both_sides(a, b)
    mine = run_git(b, "rev-parse", "HEAD").stdout
    with pytest.raises(SyncConflict) as err:
        sync(b)
    assert err.value.files == [path] and "duplicate key 'updated'" in str(err.value)
    assert run_git(b, "rev-parse", "HEAD").stdout == mine  # branch as it was
    assert "from b" in (b / path).read_text() and "from a" not in (b / path).read_text()
    assert run_git(b, "status", "--porcelain").stdout == ""


def test_bullets_both_clones_added_and_changed_need_no_person(crepo_remote) -> None:
    """Two clones append to MEMORY.md's same section and reword the same bullet: all kept,
    the earlier rewording struck through and pointing at the later one."""
    _, a, b = crepo_remote
    f = "knowledge/memory/MEMORY.md"
    text = (a / f).read_text().replace("## Key Decisions\n",
                                       "## Key Decisions\n- 2026-03-01: ledger on MySQL\n")
    (a / f).write_text(text)
    batch.run(a, use_llm=False, push=False)
    sync(a)
    sync(b)
    for c, day, db, extra in ((a, "02", "PostgreSQL", "tea"), (b, "03", "SQLite", "coffee")):
        t = (c / f).read_text().replace("- 2026-03-01: ledger on MySQL",
                                        f"- 2026-03-{day}: ledger on {db}")
        (c / f).write_text(t.replace("## Lessons Learned\n",
                                     f"## Lessons Learned\n- 2026-03-{day}: prefers {extra}\n"))
        batch.run(c, use_llm=False, push=False)
    sync(a)
    assert sync(b).pushed == 1
    merged = (b / f).read_text()
    assert "- 2026-03-03: ledger on SQLite\n- ~~2026-03-02: ledger on PostgreSQL~~ " \
           "(superseded 2026-03-03 by: ledger on SQLite)\n" in merged
    assert "prefers tea" in merged and "prefers coffee" in merged and "MySQL" not in merged
    assert "<<<<<<<" not in merged
    assert invoke_memory(b, "hook", "pre-commit", f).returncode == 0


def test_a_failed_fetch_is_retried(crepo_remote, tmp_path: Path) -> None:
    """A transient failure (here: upload-pack fails twice, as a dropped connection does)."""
    _, a, _ = crepo_remote
    count = tmp_path / "fetches"
    flaky = tmp_path / "flaky-upload-pack"
    flaky.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}\n"
        'if [ "$n" -lt 2 ]; then echo "fatal: the remote end hung up unexpectedly" >&2; '
        "exit 128; fi\n"
        'exec git-upload-pack "$@"\n'
    )
    flaky.chmod(0o755)
    run_git(a, "config", "remote.origin.uploadpack", str(flaky))
    _memory_ok(a, "remember", "survives a flaky network")
    _memory_ok(a, "commit", "--no-llm", "--no-push")
    result = sync(a)
    assert count.read_text().strip() == "3" and result.pushed == 1
    count.write_text("-100")  # from now on every fetch fails
    with pytest.raises(MemrepoError, match="could not fetch from origin after 3 attempts"):
        sync(a, attempts=3)


def test_a_fetch_that_cannot_succeed_fails_at_once(crepo_remote, tmp_path: Path) -> None:
    _, a, _ = crepo_remote
    run_git(a, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    start = time.monotonic()
    proc = invoke_memory(a, "sync")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "could not fetch from origin;" in proc.stderr
    assert "does not appear to be a git repository" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert time.monotonic() - start < 5


def test_real_conflict_is_left_for_the_person(crepo_remote) -> None:
    """Prose both clones changed differently: the driver leaves it to a person."""
    _, a, b = crepo_remote
    for c, word in ((a, "Distilled, tea-scented"), (b, "Distilled, coffee-scented")):
        f = c / "knowledge/memory/MEMORY.md"
        f.write_text(f.read_text().replace("Distilled", word, 1) + f"- {word} note\n")
        batch.run(c, use_llm=False, push=False)
    sync(a)
    mine = run_git(b, "rev-parse", "HEAD").stdout
    with pytest.raises(SyncConflict) as err:
        sync(b)
    assert err.value.files == ["knowledge/memory/MEMORY.md"]
    assert "knowledge/memory/MEMORY.md" in str(err.value) and "rebase was aborted" in str(err.value)
    assert run_git(b, "rev-parse", "HEAD").stdout == mine  # nothing dropped
    assert "coffee-scented note" in (b / "knowledge/memory/MEMORY.md").read_text()
    assert not (b / ".git/rebase-merge").exists()
    proc = invoke_memory(b, "sync")
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
    proc = invoke_memory(crepo, "sync")
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
