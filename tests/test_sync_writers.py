"""Writers beside ``memory sync``'s rebase wait for it: nothing they acknowledge is lost.

bench/torture/fleet.py found it: a session ending (its transcript committed on the
rebase's detached HEAD) and a note remembered while a sync rebased were both gone after
the rebase failed on them and was aborted, though both had exited 0. The writers here
start at the rebase's first checkout (a post-checkout hook memrepo chains starts them,
detached, as a Stop worker or an MCP ``memory_remember`` would run beside a sync); the
locks make them wait for the sync.
"""

from __future__ import annotations

import stat
import time
from pathlib import Path

from conftest import run_git, run_memory

HOOK = """#!/bin/sh
[ -d .git/rebase-merge ] || exit 0
[ -e .git/raced ] && exit 0
touch .git/raced
# detached from the rebase as an agent's writers are (its hold is not theirs)
unset MEMREPO_TREE_HELD
(memory capture end --session s1 >.git/end.out 2>&1; echo $? >.git/end.rc) </dev/null >/dev/null 2>&1 &
(memory remember "TOKEN_NOTE_2" >.git/note.out 2>&1; echo $? >.git/note.rc) </dev/null >/dev/null 2>&1 &
sleep 1  # the writers start while the rebase is still to replay b's commit
exit 0
"""


def _ok(cwd: Path, *args: str) -> str:
    out = run_memory(cwd, *args)
    assert out.returncode == 0, f"memory {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


def test_a_session_end_and_a_note_beside_a_syncs_rebase_are_kept(tmp_path: Path) -> None:
    _ok(tmp_path, "init", "--hooks", "direct", "seed")
    run_git(tmp_path, "clone", "-q", "--bare", "seed", "remote.git")
    for c in ("a", "b"):
        run_git(tmp_path, "clone", "-q", "remote.git", c)
        _ok(tmp_path, "init", c)
    a, b = tmp_path / "a", tmp_path / "b"
    _ok(a, "remember", "note from a")
    _ok(a, "commit", "--no-llm", "--no-push")
    _ok(a, "sync")  # the remote is ahead of b now
    _ok(b, "remember", "note from b")
    _ok(b, "commit", "--no-llm", "--no-push")  # and b ahead of it: sync must rebase
    _ok(b, "capture", "start", "--session", "s1", "--topic", "race")
    _ok(b, "capture", "append", "--session", "s1", "--role", "user", "turn TOKEN_TURN_1")
    hook = b / ".git" / "hooks" / "post-checkout.pre-memrepo"
    hook.write_text(HOOK, encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    _ok(b, "sync")
    assert (b / ".git" / "raced").exists()  # the writers did start during the rebase
    deadline = time.monotonic() + 120
    while not all((b / ".git" / f).exists() for f in ("end.rc", "note.rc")):
        assert time.monotonic() < deadline, "the writers never finished"
        time.sleep(0.1)
    for name in ("end", "note"):
        rc = (b / ".git" / f"{name}.rc").read_text().strip()
        assert rc == "0", (b / ".git" / f"{name}.out").read_text()
    hook.unlink()
    _ok(b, "commit", "--no-llm", "--no-push")
    _ok(b, "sync")
    found = run_git(tmp_path / "remote.git", "grep", "-h", "-o", "-e", "TOKEN_TURN_1", "-e",
                    "TOKEN_NOTE_2", "main").stdout
    assert "TOKEN_TURN_1" in found and "TOKEN_NOTE_2" in found
    # and nothing of b's own history was left behind on the side
    orphans = run_git(b, "log", "--all", "--format=%H", "-S", "TOKEN_TURN_1").stdout.split()
    assert orphans and all(
        run_git(b, "merge-base", "--is-ancestor", c, "HEAD", check=False).returncode == 0
        for c in orphans)
