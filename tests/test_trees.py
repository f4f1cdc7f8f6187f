"""memrepo.commit.trees: the trees of a batch commit, written without rewriting the whole index.

Each case is checked against real git: the tree must be the one ``git add -A`` and
``git write-tree`` would have made from the same work tree.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import run_git

from memrepo.commit import inline, trees, write
from memrepo.errors import MemrepoError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    files = {
        "a/b/x.md": "1\n",
        "a/y.md": "2\n",
        "c/z.md": "3\n",
        "top.md": "top\n",
        "run.sh": "#!/bin/sh\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    os.chmod(root / "run.sh", 0o755)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "init")
    return root


def _git_add_tree(root: Path, paths: list[str]) -> str:
    """What git itself makes of the same paths (then the index is put back)."""
    run_git(root, "add", "-A", "--", *paths)
    tree = run_git(root, "write-tree").stdout.strip()
    run_git(root, "reset", "-q")
    return tree


def test_the_tree_is_the_one_git_add_makes(repo: Path) -> None:
    (repo / "a/b/x.md").write_text("1\nmore\n")  # changed, two levels down
    (repo / "c/z.md").unlink()  # the last file of c/: c/ goes away
    (repo / "n/m").mkdir(parents=True)
    (repo / "n/m/q.md").write_text("new\n")  # new nested directories
    (repo / "a/b.md").write_text("sorts before the tree a/b/ in git's order\n")
    (repo / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(repo / "tool.sh", 0o755)
    (repo / "a/b/é-note.md").write_text("a name that is not ASCII\n")
    (repo / "new dir/one space/two  spaces").mkdir(parents=True)  # cat-file says "… missing"
    (repo / "new dir/one space/two  spaces/s.md").write_text("spaced\n")
    spaced = "new dir/one space/two  spaces/s.md"
    paths = ["a/b/x.md", "c/z.md", "n/m/q.md", "a/b.md", "tool.sh", "a/b/é-note.md", spaced]
    prepared = trees.prepare(repo, paths)
    assert prepared is not None and prepared.moving == []
    assert prepared.tree == _git_add_tree(repo, paths)
    assert sorted((st, p) for st, p, _new, _sha in prepared.rows) == [
        ("A", "a/b.md"), ("A", "a/b/é-note.md"), ("A", "n/m/q.md"), ("A", spaced),
        ("A", "tool.sh"), ("D", "c/z.md"), ("M", "a/b/x.md"),
    ]
    # nothing is touched until it commits: the index still matches HEAD
    assert run_git(repo, "diff", "--cached", "--name-only").stdout == ""
    trees.update_index(repo, prepared)
    assert run_git(repo, "write-tree").stdout.strip() == prepared.tree
    assert "100755" in run_git(repo, "ls-files", "-s", "tool.sh").stdout


def test_an_unchanged_file_is_no_change(repo: Path) -> None:
    os.utime(repo / "top.md", (1, 1))
    prepared = trees.prepare(repo, ["top.md"])
    assert prepared is not None
    assert prepared.rows == [] and prepared.tree == prepared.base_tree


def test_other_staged_work_is_left_alone(repo: Path) -> None:
    """What `git commit -- PATHS` promises: only these paths; the rest stays staged."""
    assert write.route(repo) == "plumbing"  # no hooks installed in this repo
    (repo / "a/y.md").write_text("staged by someone else\n")
    run_git(repo, "add", "a/y.md")
    (repo / "top.md").write_text("top, edited\n")
    write.commit_paths(repo, ["top.md"], "memory: top\n")
    shown = run_git(repo, "show", "--name-only", "--format=", "HEAD").stdout.split()
    assert shown == ["top.md"]
    assert run_git(repo, "diff", "--cached", "--name-only").stdout.split() == ["a/y.md"]
    assert run_git(repo, "status", "--porcelain").stdout.splitlines() == ["M  a/y.md"]


def test_cases_git_add_knows_better_are_left_to_it(repo: Path) -> None:
    (repo / "link.md").symlink_to("top.md")
    assert trees.prepare(repo, ["link.md"]) is None
    (repo / "c/z.md").unlink()
    (repo / "c/z.md").mkdir()  # a directory where HEAD has a file
    (repo / "c/z.md/inner.md").write_text("x\n")
    assert trees.prepare(repo, ["c/z.md/inner.md"]) is None
    # they go through `git add`, where the validators refuse the symlink (#14: a memory
    # repo holds regular files only), and nothing is committed
    with pytest.raises(MemrepoError, match=r"link\.md: error: is a symlink"):
        write.commit_paths(repo, ["link.md"], "memory: link\n")
    assert run_git(repo, "ls-tree", "HEAD", "link.md").stdout == ""


def test_a_file_written_while_it_is_hashed_waits_for_the_next_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = trees._hash

    def racing(root: Path, paths: list[str]) -> dict[str, str]:
        out = real(root, paths)
        with (root / "a/y.md").open("a") as fh:  # a writer appends meanwhile
            fh.write("half a line")
        return out

    monkeypatch.setattr(trees, "_hash", racing)
    (repo / "a/y.md").write_text("2\nedited\n")
    (repo / "top.md").write_text("top, edited\n")
    prepared = trees.prepare(repo, ["a/y.md", "top.md"])
    assert prepared is not None and prepared.moving == ["a/y.md"]
    assert [p for _st, p, _n, _s in prepared.rows] == ["top.md"]


def test_a_refused_commit_leaves_the_index_as_it_was(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "top.md").write_text("top, edited\n")

    def refuse(root: Path, rows: list | None = None) -> None:
        raise MemrepoError("the pre-commit checks refused the commit")

    monkeypatch.setattr(inline, "validate_staged", refuse)
    head = run_git(repo, "rev-parse", "HEAD").stdout
    with pytest.raises(MemrepoError, match="refused"):
        write.commit_paths(repo, ["top.md"], "memory: top\n")
    assert run_git(repo, "rev-parse", "HEAD").stdout == head
    assert run_git(repo, "diff", "--cached", "--name-only").stdout == ""


def test_paths_already_committed_as_on_disk_are_head(repo: Path) -> None:
    """Nothing to commit for ``paths`` means another writer committed them first: HEAD,
    not a failure (a writer that then undid its work would delete them from disk)."""
    head = run_git(repo, "rev-parse", "HEAD").stdout.strip()
    assert write.commit_paths(repo, ["top.md"], "memory: nothing\n") == head
    assert run_git(repo, "rev-parse", "HEAD").stdout.strip() == head


def test_random_batches_make_the_trees_git_makes(repo: Path) -> None:
    """Adds, edits and deletes over names that sort around each other ("x", "x.md",
    "x-y", "x/…"), batch after batch, each checked against `git add` + `write-tree`."""
    import random

    rng = random.Random(7)
    names = ["x", "x.md", "x-y.md", "x0.md", "é.md", "z.md"]
    dirs = ["", "x", "x/y", "x-y", "k/m/n"]
    for _batch in range(12):
        paths: list[str] = []
        for _ in range(rng.randint(1, 6)):
            d, n = rng.choice(dirs), rng.choice(names)
            p = f"{d}/{n}" if d else n
            target = repo / p
            if target.is_dir() or any((repo / a).is_file() for a in _prefixes(p)):
                continue  # a file where a directory is, or the reverse: git add's job
            if target.exists() and rng.random() < 0.4:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"{p} {rng.random()}\n")
            paths.append(p)
        if not paths:
            continue
        prepared = trees.prepare(repo, paths)
        assert prepared is not None
        assert prepared.tree == _git_add_tree(repo, paths), paths
        trees.update_index(repo, prepared)
        run_git(repo, "commit", "-q", "--allow-empty", "-m", "batch")
        assert run_git(repo, "rev-parse", "HEAD^{tree}").stdout.strip() == prepared.tree
        assert run_git(repo, "status", "--porcelain", "--", *paths).stdout == ""


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


@pytest.mark.parametrize(
    ("path", "plain"),
    [
        ("knowledge/a.md", True),
        ("a b/c\td.md", True),
        ("k/é.md", True),
        ("j/../k/a.md", False),
        ("./a.md", False),
        ("k//a.md", False),
        ("attachments/../.git/config", False),
        ("k/.GIT/x", False),
        ('"q"', False),
        ("k/a\r", False),
        (os.fsdecode(b"k/caf\xe9.md"), False),
    ],
)
def test_only_plain_paths_take_the_tree_route(path: str, plain: bool) -> None:
    from memrepo.git import plain_path

    assert plain_path(path) is plain


def test_what_git_add_would_refuse_or_keep_off_disk_goes_to_git(repo: Path) -> None:
    (repo / "k").mkdir()
    (repo / ".gitignore").write_text("*.key\n")
    run_git(repo, "add", ".gitignore")
    run_git(repo, "commit", "-q", "-m", "ignore")
    (repo / "k/s.key").write_text("secret\n")
    assert trees.prepare(repo, ["k/s.key"]) is None  # ignored: git add refuses it
    (repo / "lnk").symlink_to("c")
    assert trees.prepare(repo, ["lnk/z.md"]) is None  # beyond a symbolic link
    run_git(repo, "update-index", "--skip-worktree", "c/z.md")
    (repo / "c/z.md").unlink()
    assert trees.prepare(repo, ["c/z.md"]) is None  # kept off disk on purpose, not deleted
    run_git(repo, "update-index", "--no-skip-worktree", "c/z.md")
    run_git(repo, "config", "core.autocrlf", "true")
    (repo / "top.md").write_text("top\r\n")
    assert trees.prepare(repo, ["top.md"]) is None  # git add knows the CRLF rules


def test_modes_follow_git(repo: Path) -> None:
    os.chmod(repo / "top.md", 0o654)  # group and other may run it, the owner may not
    prepared = trees.prepare(repo, ["top.md"])
    assert prepared is not None and prepared.rows == []  # git: nothing to commit
    run_git(repo, "config", "core.filemode", "false")
    run_git(repo, "update-index", "--chmod=+x", "a/y.md")
    (repo / "a/y.md").write_text("2\nedited\n")
    write.commit_paths(repo, ["a/y.md"], "memory: y\n")
    assert run_git(repo, "ls-tree", "HEAD", "a/y.md").stdout.startswith("100755")


def test_the_index_records_stat_data_as_git_add_does(repo: Path) -> None:
    (repo / "top.md").write_text("top, edited\n")
    write.commit_paths(repo, ["top.md"], "memory: top\n")
    assert run_git(repo, "diff-files", "--name-only").stdout == ""  # no re-hash pending
    assert run_git(repo, "diff-index", "--quiet", "HEAD", "--", check=False).returncode == 0


def test_a_racily_clean_rewrite_reaches_the_index(repo: Path) -> None:
    """An index entry whose file is not older than the index file is "racily clean": git
    re-reads it, since a same-size rewrite in that clock tick keeps its stat data.
    memrepo's private copy of the index must keep the index's mtime, or git trusts the
    stat data there, the commit lands and the index keeps the old blob (a person's next
    `git commit` would revert it). Seen as a flaky test_two_commits_at_once_both_land on
    a busy machine; here the tick is set by hand (ctime cannot be: not trusted)."""
    run_git(repo, "config", "core.trustctime", "false")
    y, index = repo / "a/y.md", repo / ".git/index"
    tick = time.time_ns() - 10_000_000_000
    os.utime(y, ns=(tick, tick))
    run_git(repo, "add", "a/y.md")  # the entry records that tick, the index is newer
    y.write_text("A\n")  # "2\n" before: the same size, and the same tick below
    os.utime(y, ns=(tick, tick))
    os.utime(index, ns=(tick, tick))  # the entry is racily clean now
    write.commit_paths(repo, ["a/y.md"], "memory: y\n")
    assert run_git(repo, "show", "HEAD:a/y.md").stdout == "A\n"
    assert run_git(repo, "ls-files", "-s", "a/y.md").stdout.split()[1] == \
        run_git(repo, "rev-parse", "HEAD:a/y.md").stdout.strip()


def test_two_commits_at_once_both_land(repo: Path) -> None:
    import threading

    (repo / "a/y.md").write_text("A\n")
    (repo / "top.md").write_text("T\n")
    errors: list[BaseException] = []

    def go(path: str) -> None:
        try:
            write.commit_paths(repo, [path], f"memory: {path}\n")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(p,)) for p in ("a/y.md", "top.md")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert run_git(repo, "status", "--porcelain").stdout == ""
    log = run_git(repo, "log", "--format=%s", "-2").stdout.split("\n")
    assert sorted(log[:2]) == ["memory: a/y.md", "memory: top.md"]


def test_an_exact_move_is_a_rename(repo: Path) -> None:
    (repo / "archive").mkdir()
    (repo / "a/y.md").rename(repo / "archive/y.md")
    prepared = trees.prepare(repo, ["a/y.md", "archive/y.md"])
    assert prepared is not None
    assert [(st, p, new) for st, p, new, _sha in prepared.rows] == [
        ("R", "a/y.md", "archive/y.md")
    ]
