"""Reading the repo through git objects: what the index holds is exactly a commit.

The indexer never reads the working tree: it lists a commit's tree, diffs two trees and
reads blobs by sha, so an index is a function of its commit (and the old text that a
contentless FTS delete needs is always one ``cat-file`` away). Blobs stream through one
``git cat-file --batch`` process whatever their number.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memrepo import gitcrypt
from memrepo.errors import GitError

NULL_SHA = "0" * 40


#: None of the commands here needs git's index; pointing GIT_INDEX_FILE at a file that
#: does not exist spares reading it, which in a large repo costs ``diff-tree`` time and
#: memory (``bench/perf/bench_commit.py``).
_ENV = {**os.environ, "GIT_INDEX_FILE": os.path.join(os.sep, "nonexistent-memrepo", "index")}


def _run(root: Path, args: list[str], check: bool = True) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, env=_ENV)
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {msg}")
    return proc


def locate(root: Path) -> tuple[Path, str | None]:
    """(absolute git dir, HEAD commit or None when unborn) in one git call."""
    proc = _run(root, ["rev-parse", "--absolute-git-dir", "--verify", "-q", "HEAD"], check=False)
    out = proc.stdout.decode().split()
    if proc.returncode == 0 and len(out) == 2:
        return Path(out[0]), out[1]
    gd = _run(root, ["rev-parse", "--absolute-git-dir"]).stdout.decode().strip()
    return Path(gd), None


def commits_between(root: Path, old: str, new: str) -> int | None:
    """How many commits ``new`` has that ``old`` lacks (None if either is unknown)."""
    proc = _run(root, ["rev-list", "--count", f"{old}..{new}"], check=False)
    if proc.returncode != 0:
        return None
    return int(proc.stdout.decode().strip() or 0)


@dataclass(frozen=True)
class Change:
    path: str
    old: str | None  # blob sha before, None when added
    new: str | None  # blob sha after, None when deleted


#: Tree entry modes that are not regular files: a symlink, a submodule (gitlink). The
#: index never reads through them (a link may point anywhere, outside the repo too).
NOT_REGULAR = {"120000": "symlink", "160000": "submodule"}


def diff_trees(root: Path, old: str, new: str,
               irregular: list[str] | None = None) -> list[Change]:
    """Blob-level changes between two commits (renames as delete + add: same blob, cheap);
    paths that became a symlink or a submodule are appended to ``irregular``."""
    out = _run(root, ["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new]).stdout
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes: list[Change] = []
    i = 0
    while i + 1 < len(fields):
        head, path = fields[i], fields[i + 1]
        i += 2
        if not head.startswith(":"):
            continue
        old_mode, new_mode, old_sha, new_sha, _status = head[1:].split(" ")
        o = old_sha if old_sha != NULL_SHA and old_mode.startswith("100") else None
        n = new_sha if new_sha != NULL_SHA and new_mode.startswith("100") else None
        if irregular is not None and new_mode in NOT_REGULAR:
            irregular.append(path)
        if o != n:
            changes.append(Change(path, o, n))
    return changes


def list_tree(root: Path, commit: str,
              irregular: list[str] | None = None) -> list[tuple[str, str]]:
    """(path, blob sha) of every regular file in a commit; the paths of symlinks and
    submodules, never read, are appended to ``irregular``."""
    out = _run(root, ["ls-tree", "-r", "-z", "--full-tree", commit]).stdout
    rows: list[tuple[str, str]] = []
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        info, path = entry.split("\t", 1)
        mode, kind, sha = info.split(" ")
        if kind == "blob" and mode.startswith("100"):
            rows.append((path, sha))
        elif irregular is not None and mode in NOT_REGULAR:
            irregular.append(path)
    return rows


def stream_blobs(root: Path, shas: Iterable[str]) -> Iterator[tuple[str, bytes | None]]:
    """Yield (sha, content or None when missing) in order, through one cat-file process;
    a git-crypt blob's plaintext when this clone has the key."""
    shas = list(shas)
    if not shas:
        return
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_ENV,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def feed() -> None:
        try:
            proc.stdin.write("".join(s + "\n" for s in shas).encode())
            proc.stdin.close()
        except OSError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    revealer = gitcrypt.Revealer(root)
    out = proc.stdout
    try:
        for sha in shas:
            header = out.readline().decode("utf-8", "replace").rstrip("\n")
            if not header:
                raise GitError("git cat-file --batch stopped early")
            if header.endswith(" missing") or header.endswith(" ambiguous"):
                yield sha, None
                continue
            size = int(header.rsplit(" ", 1)[1])
            data = out.read(size)
            out.read(1)
            # a git-crypt blob is read through this clone's key; without one it stays
            # ciphertext, which the index parses as a document without text (writer.parse)
            yield sha, revealer.reveal(data)
    finally:
        out.close()
        proc.wait()
        writer.join()


def read_blob(root: Path, sha: str) -> bytes | None:
    """One blob's bytes, None when git cannot give them (gone, or git failing)."""
    try:
        return next(iter(stream_blobs(root, [sha])))[1]
    except Exception:
        return None
