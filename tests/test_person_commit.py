"""A person's ``git commit`` beside memrepo's own commits (issue #37, defect 3).

A person's commit reads HEAD when it starts and moves it from that value when it ends,
after the pre-commit hook (memrepo's validators) has run. memrepo committing in between
made git refuse the person's commit ("cannot lock ref 'HEAD'"). Real git, real hooks: the
person's pre-commit is slowed by a hook run before memrepo's (``core.hooksPath``, so
memrepo's own route stays the plumbing one), and memrepo commits while it sleeps.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from memrepo.commit import person
from memrepo.commit.write import commit_paths
from tests.conftest import run_git, run_memory

SLEEP = 1.0


def _slow_hooks(root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A hooks folder whose pre-commit says it started, sleeps, then runs memrepo's."""
    hooks = tmp_path / "slow-hooks"
    hooks.mkdir()
    started = tmp_path / "hook-started"
    real = root / ".git/hooks"
    for shim in real.iterdir():
        if shim.name.endswith(".sample"):
            continue
        target = hooks / shim.name
        if shim.name == "pre-commit":
            target.write_text(f'#!/bin/sh\ntouch "{started}"\nsleep {SLEEP}\n'
                              f'exec "{shim}" "$@"\n')
        else:
            target.write_text(f'#!/bin/sh\nexec "{shim}" "$@"\n')
        target.chmod(0o755)
    return hooks, started


def _wait_for(path: Path, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


@pytest.mark.parametrize("style", ["plain", "all"])
def test_person_commit_survives_memrepo_commit_during_its_hook(
    memrepo_root: Path, tmp_path: Path, style: str
) -> None:
    root = memrepo_root
    hooks, started = _slow_hooks(root, tmp_path)
    (root / "notes-by-hand.md").write_text("# By hand\n\nwritten by a person\n")
    run_git(root, "add", "notes-by-hand.md")
    if style == "all":  # `git commit -a` holds index.lock through its hook
        run_git(root, "add", "-N", ".gitignore")
    args = ["git", "-c", f"core.hooksPath={hooks}", "commit", "-q",
            *(["-a"] if style == "all" else []), "-m", "person: notes by hand"]
    person_commit = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
    _wait_for(started)
    journal = root / "knowledge/journal/2030-01-01.md"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text("---\ntype: journal\ndate: 2030-01-01\n---\n\n# 2030-01-01\n\n"
                       "- remembered beside a person's commit\n")
    done: dict[str, object] = {}

    def remember() -> None:
        try:
            done["sha"] = commit_paths(root, [str(journal.relative_to(root))],
                                       "remember: beside a person")
        except Exception as exc:  # pragma: no cover - the assertion below says it
            done["error"] = exc

    writer = threading.Thread(target=remember)
    writer.start()
    _out, err = person_commit.communicate(timeout=60)
    writer.join(timeout=60)
    assert person_commit.returncode == 0, f"the person's commit was refused: {err}"
    assert "error" not in done, done
    log = run_git(root, "log", "--format=%s", "-5").stdout
    assert "person: notes by hand" in log and "remember: beside a person" in log, log
    tree = run_git(root, "ls-tree", "-r", "--name-only", "HEAD").stdout.split()
    assert "notes-by-hand.md" in tree and "knowledge/journal/2030-01-01.md" in tree
    assert not (root / ".git/index.lock").exists()
    assert run_git(root, "status", "--porcelain", "--", "knowledge", "notes-by-hand.md"
                   ).stdout == ""


def test_memrepo_gives_up_on_a_commit_that_never_ends(memrepo_root: Path) -> None:
    """Another process holds index.lock past the wait: memrepo's commit is refused, the
    file stays on disk, and index.lock stays the other process's."""
    root = memrepo_root
    lock = root / ".git/index.lock"
    lock.write_bytes(b"")
    rel = "knowledge/journal/2030-01-02.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("---\ntype: journal\ndate: 2030-01-02\n---\n\n# 2030-01-02\n\n"
                            "- waits\n")
    before = run_git(root, "rev-parse", "HEAD").stdout
    old = person.PERSON_WAIT
    person.PERSON_WAIT = 0.3
    try:
        with pytest.raises(person.PersonCommitting):
            commit_paths(root, [rel], "remember: waits")
    finally:
        person.PERSON_WAIT = old
    assert lock.exists() and run_git(root, "rev-parse", "HEAD").stdout == before
    assert (root / rel).exists()
    lock.unlink()
    commit_paths(root, [rel], "remember: waits")
    assert rel in run_git(root, "ls-tree", "-r", "--name-only", "HEAD").stdout


def test_a_stale_lock_of_a_killed_memrepo_is_taken_back(memrepo_root: Path) -> None:
    """memrepo killed while it held index.lock: the next memrepo commit removes it (it
    names a dead memrepo); a lock git holds (an index in it) is never removed."""
    root = memrepo_root
    gdir = root / ".git"
    dead = subprocess.Popen(["true"])
    dead.wait()
    (gdir / "index.lock").write_bytes(person.OWNER + f"{dead.pid}\n".encode())
    (gdir / f"{person.COPY_PREFIX}{dead.pid}.1").write_bytes(b"left by the kill")
    rel = "knowledge/journal/2030-01-03.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("---\ntype: journal\ndate: 2030-01-03\n---\n\n# 2030-01-03\n\n"
                            "- after a kill\n")
    commit_paths(root, [rel], "remember: after a kill")
    assert rel in run_git(root, "ls-tree", "-r", "--name-only", "HEAD").stdout
    assert not (gdir / "index.lock").exists()
    assert not list(gdir.glob(person.COPY_PREFIX + "*"))
    # git's own lock (an index being written) is git's
    (gdir / "index.lock").write_bytes((gdir / "index").read_bytes())
    assert person.committing(root) is not None
    assert (gdir / "index.lock").exists()
    (gdir / "index.lock").unlink()


def test_the_index_lock_is_held_only_to_move_head(
    memrepo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index update and the commit object are made unlocked, on a copy: a person's
    `git add` while memrepo builds its commit succeeds, and memrepo builds again on the
    index it changed (the person's staged file stays staged, out of memrepo's commit)."""
    from memrepo.commit import trees

    root = memrepo_root
    (root / "mine.md").write_text("# Mine\n\nstaged by a person\n")
    rel = "knowledge/journal/2030-01-05.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("---\ntype: journal\ndate: 2030-01-05\n---\n\n# 2030-01-05\n\n"
                            "- built beside a person's add\n")
    real = trees.update_index
    adds: list[int] = []

    def person_adds_meanwhile(*args: object, **kwargs: object) -> None:
        real(*args, **kwargs)  # type: ignore[arg-type]
        if not adds:
            adds.append(subprocess.run(["git", "add", "mine.md"], cwd=root).returncode)

    monkeypatch.setattr(trees, "update_index", person_adds_meanwhile)
    commit_paths(root, [rel], "remember: beside an add")
    assert adds == [0]
    assert "mine.md" not in run_git(root, "ls-tree", "-r", "--name-only", "HEAD").stdout
    assert run_git(root, "diff", "--cached", "--name-only").stdout.split() == ["mine.md"]
    assert run_git(root, "status", "--porcelain", "--", rel).stdout == ""


def test_doctor_names_and_fixes_the_lock_a_killed_memrepo_left(memrepo_root: Path) -> None:
    """A person should not have to wait for memrepo's next commit to use git again."""
    root = memrepo_root
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = root / ".git/index.lock"
    lock.write_bytes(person.OWNER + f"{dead.pid}\n".encode())
    out = run_memory(root, "doctor")
    assert "git index lock" in out.stdout and "killed" in out.stdout, out.stdout
    fixed = run_memory(root, "doctor", "--fix")
    assert "left by a killed memrepo commit" in fixed.stdout, fixed.stdout
    assert not lock.exists()
    assert subprocess.run(["git", "add", "-A", "--", "knowledge"], cwd=root).returncode == 0
    # a lock git holds is not memrepo's to remove
    lock.write_bytes((root / ".git/index").read_bytes())
    run_memory(root, "doctor", "--fix")
    assert lock.exists()
    lock.unlink()


def test_head_moved_after_the_trees_were_built_is_said_and_leaves_no_lock(
    memrepo_root: Path,
) -> None:
    """The HEAD update is prepared in one update-ref transaction: a commit that landed
    after the trees were built is HeadMoved (the writers build again), the index is as it
    was, and neither index.lock nor the ref's lock is left."""
    from memrepo.commit import inline, trees

    root = memrepo_root
    rel = "knowledge/journal/2030-01-06.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("---\ntype: journal\ndate: 2030-01-06\n---\n\n# 2030-01-06\n\n"
                            "- built on a HEAD that moved\n")
    prepared = trees.prepare(root, [rel])
    assert prepared is not None
    run_git(root, "commit", "-q", "--allow-empty", "--no-verify", "-m", "someone else")
    index_before = (root / ".git/index").read_bytes()
    with pytest.raises(inline.HeadMoved):
        inline.commit_tree(root, "remember: too late", prepared)
    assert (root / ".git/index").read_bytes() == index_before
    gdir = root / ".git"
    assert not [*gdir.glob("*.lock"), *(gdir / "refs").rglob("*.lock")]
    assert run_git(root, "log", "-1", "--format=%s").stdout.strip() == "someone else"
