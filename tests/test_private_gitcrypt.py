"""Private knowledge with the real git-crypt (docs/private.md; issue 38's "Done when":
ciphertext in the remote, plaintext in keyed clones, validators and index on the
plaintext, a clone without the key working and saying why). Skipped where git-crypt is
not installed; test_private.py covers the rest with a stand-in filter everywhere."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import gitcrypt, private
from memrepo.repo import MemoryRepo

pytestmark = pytest.mark.skipif(
    shutil.which("git-crypt") is None,
    reason="git-crypt is not installed (Debian/Ubuntu: apt-get install git-crypt)")

PEOPLE = "knowledge/people/**"
BOB = "knowledge/people/bob-stone.md"
BOB_TEXT = ("---\ntype: person\nname: Bob Stone\n---\n# Bob Stone\n\n"
            "- 2026-01-02: Bob Stone lives in Lisbon and keeps zebrafish.\n")


def memory(cwd: Path, *args: str) -> str:
    out = invoke_memory(cwd, *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def stored(git_dir: Path, rev: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", rev], cwd=git_dir, check=True,
                          capture_output=True).stdout


@pytest.fixture
def shared(crepo: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the memory with private people and Bob committed, its bare remote, the key)."""
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", str(bare))
    run_git(crepo, "remote", "add", "origin", str(bare))
    run_git(crepo, "push", "-q", "-u", "origin", "main")
    memory(crepo, "remote", "protect", "origin")  # the server-side hook checks each push
    out = memory(crepo, "private", "init", PEOPLE)
    assert "made a git-crypt key" in out and "git-crypt unlock" in out
    (crepo / BOB).write_text(BOB_TEXT)
    memory(crepo, "commit", "--no-push")
    run_git(crepo, "push", "-q", "origin", "main")
    keyfile = tmp_path / "memrepo.key"
    memory(crepo, "private", "export-key", str(keyfile))
    return crepo, bare, keyfile


def test_ciphertext_in_the_remote_plaintext_in_keyed_clones(
        shared: tuple[Path, Path, Path], tmp_path: Path) -> None:
    mem, bare, keyfile = shared
    remote_blob = stored(bare, f"main:{BOB}")
    assert remote_blob.startswith(gitcrypt.HEADER) and b"zebrafish" not in remote_blob
    assert stored(bare, "main:.gitattributes").startswith(b"#")  # git must read these
    assert b"knowledge/people/**" in stored(bare, "main:memory-config.yaml")
    assert (mem / BOB).read_text() == BOB_TEXT
    again = memory(mem, "private", "init")
    assert "kept this clone's git-crypt key" in again and "committed" not in again
    clone = tmp_path / "keyed"
    run_git(tmp_path, "clone", "-q", str(bare), str(clone))
    assert (clone / BOB).read_bytes().startswith(gitcrypt.HEADER)
    assert "index rebuilt" in memory(clone, "private", "unlock", str(keyfile))
    assert (clone / BOB).read_text() == BOB_TEXT
    assert BOB in memory(clone, "search", "zebrafish")
    checks = private.health_checks(MemoryRepo(clone))
    assert [(c.name, c.ok) for c in checks] == [("private paths", True)]


def test_a_clone_without_the_key_skips_and_says_why(
        shared: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _mem, bare, _key = shared
    clone = tmp_path / "locked"
    run_git(tmp_path, "clone", "-q", str(bare), str(clone))
    out = invoke_memory(clone, "index")
    assert out.returncode == 0, out.stderr
    assert f"{BOB}: {gitcrypt.LOCKED}; indexed without its text" in out.stdout + out.stderr
    assert "no results" in memory(clone, "search", "zebrafish")
    found = {c.name: c for c in private.health_checks(MemoryRepo(clone))}
    assert BOB in found["private files locked"].detail
    assert found["private files locked"].fix == "memory private unlock KEYFILE"
    refused = invoke_memory(clone, "private", "init")
    assert refused.returncode == 1 and "this clone is locked" in refused.stderr
    alice = "knowledge/people/alice.md"  # past the local hook: the server refuses it
    (clone / alice).write_text("---\ntype: person\nname: Alice\n---\n# Alice\n")
    run_git(clone, "add", alice)
    run_git(clone, "commit", "-q", "--no-verify", "-m", "alice in the clear")
    pushed = run_git(clone, "push", "origin", "main", check=False)
    assert pushed.returncode != 0 and f"{alice}: error: a private path" in pushed.stderr
    run_git(clone, "tag", "before")
    shown = invoke_memory(clone, "log", "--at", "before", BOB)
    assert shown.returncode == 1 and "no key" in shown.stderr


def test_hooks_validate_the_plaintext_and_merges_stay_encrypted(
        shared: tuple[Path, Path, Path], tmp_path: Path) -> None:
    mem, bare, keyfile = shared
    (mem / BOB).write_text(BOB_TEXT.replace("name: Bob Stone\n", ""))
    run_git(mem, "add", BOB)
    refused = run_git(mem, "commit", "-q", "-m", "broken person", check=False)
    assert refused.returncode != 0
    assert "a person file needs 'name'" in refused.stdout + refused.stderr
    run_git(mem, "checkout", "-q", "HEAD", "--", BOB)
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "-q", str(bare), str(other))
    memory(other, "private", "unlock", str(keyfile))
    with (other / BOB).open("a") as fh:
        fh.write("- 2026-01-03: Bob Stone moved to Porto.\n")
    run_git(other, "commit", "-q", "--no-verify", "-am", "porto")
    run_git(other, "push", "-q", "origin", "main")
    with (mem / BOB).open("a") as fh:
        fh.write("- 2026-01-04: Bob Stone plays cello.\n")
    memory(mem, "commit", "--no-push")
    memory(mem, "sync")  # a rebase through memrepo's merge driver
    text = (mem / BOB).read_text()
    assert "Porto" in text and "cello" in text and "<<<<" not in text
    merged = stored(bare, f"main:{BOB}")
    assert merged.startswith(gitcrypt.HEADER) and b"cello" not in merged
    assert [c.name for c in private.health_checks(MemoryRepo(mem))] == ["private paths"]
