"""What shows a memory file's text (search's snippets and scan, the context compiler) never
reads through a symlink: a link committed by whoever shares the repo, or made in the
working tree since, may point at any file of the machine (memrepo.worktree)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest
from conftest import IRepo, invoke_memory

from memrepo import worktree
from memrepo.atomic import atomic_write
from memrepo.errors import MemrepoError
from memrepo.index.paths import db_path
from memrepo.layout import journal_path

KUBE = "knowledge/reference/kubernetes.md"
SECRET = "AKIA-OUTSIDE-THE-REPO"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the repo whose lines 1-20 are all the secret and the words searched."""
    f = tmp_path / "credentials"
    f.write_text("".join(f"{SECRET} rolling updates maxSurge pods\n" for _ in range(20)))
    return f


def test_a_regular_file_is_read(irepo: IRepo) -> None:
    assert worktree.read_file(irepo.root, KUBE) == (irepo.root / KUBE).read_bytes()


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks and FIFOs")
def test_links_fifos_and_paths_out_of_the_repo_are_no_files(irepo: IRepo, outside: Path
                                                            ) -> None:
    root = irepo.root
    (root / "knowledge/reference/link.md").symlink_to(outside)
    (root / "knowledge/reference/inner.md").symlink_to(root / KUBE)  # even inside
    (root / "knowledge/linked").symlink_to(outside.parent, target_is_directory=True)
    os.mkfifo(root / "knowledge/reference/pipe.md")
    for rel, why in [
        ("knowledge/reference/link.md", "a symlink"),
        ("knowledge/reference/inner.md", "a symlink"),
        ("knowledge/linked/credentials", "'knowledge/linked' on its way is a symlink"),
        ("knowledge/reference/pipe.md", "not a regular file"),  # no writer: must not wait
        ("../credentials", "not a path inside the repo"),
        (str(outside), "not a path inside the repo"),
        ("knowledge/reference/missing.md", "No such file"),
    ]:
        done: list[BaseException] = []
        t = threading.Thread(target=_read_into, args=(root, rel, done), daemon=True)
        t.start()
        t.join(5)
        assert not t.is_alive(), f"{rel}: the read hung"
        assert isinstance(done[0], OSError) and why in str(done[0]), (rel, done)


def _read_into(root: Path, rel: str, done: list[BaseException]) -> None:
    try:
        worktree.read_file(root, rel)
    except BaseException as exc:  # the test inspects what was raised
        done.append(exc)
    else:
        done.append(AssertionError(f"{rel} was read"))


def _swap_for_link(root: Path, rel: str, target: Path) -> None:
    (root / rel).unlink()
    (root / rel).symlink_to(target)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_snippet_of_a_file_swapped_for_a_link_is_the_indexed_text(
    irepo_indexed: IRepo, outside: Path
) -> None:
    root = irepo_indexed.root
    _swap_for_link(root, KUBE, outside)
    out = invoke_memory(root, "search", "rolling updates maxSurge")
    assert out.returncode == 0, out.stderr
    assert KUBE in out.stdout and "maxUnavailable" in out.stdout  # the indexed blob's text
    assert SECRET not in out.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_the_scan_without_an_index_skips_a_linked_file(irepo: IRepo, outside: Path) -> None:
    root = irepo.root
    (root / "knowledge/reference/creds.md").symlink_to(outside)
    assert not db_path(root).exists()
    out = invoke_memory(root, "search", SECRET)
    assert "pure-Python scan" in out.stderr or "ripgrep" in out.stderr, out.stderr
    assert SECRET not in out.stdout and "creds.md" not in out.stdout, out.stdout
    out = invoke_memory(root, "search", "rolling updates maxSurge")
    assert KUBE in out.stdout and SECRET not in out.stdout, out.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_the_compiler_refuses_a_linked_memory_file(irepo_indexed: IRepo, outside: Path
                                                  ) -> None:
    root = irepo_indexed.root
    irepo_indexed.write("knowledge/memory/MEMORY.md", "# Memory\n\n- tea with lemon\n")
    irepo_indexed.commit("memory")
    irepo_indexed.event()
    _swap_for_link(root, "knowledge/memory/MEMORY.md", outside)
    _swap_for_link(root, KUBE, outside)
    out = invoke_memory(root, "compile", "--explain", "rolling updates maxSurge")
    assert out.returncode == 0, out.stderr
    assert SECRET not in out.stdout + out.stderr
    assert "knowledge/memory/MEMORY.md: cannot read: a symlink, never read through" in (
        out.stdout + out.stderr)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
@pytest.mark.parametrize("rel, command", [
    ("today's journal", ["remember", "tea with lemon"]),
    ("knowledge/memory/MEMORY.md", ["prune", "--offline"]),
])
def test_a_writer_refuses_a_linked_memory_file(irepo: IRepo, outside: Path, rel: str,
                                               command: list[str]) -> None:
    """A writer reads the file it rewrites: through a link it would copy the linked file's
    text into the repo, for the next commit. It stops, names the file, writes nothing."""
    root = irepo.root
    if rel == "today's journal":  # as the test runs, not as it was collected
        rel = journal_path(dt.date.today())
    if (root / rel).exists():
        (root / rel).unlink()
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).symlink_to(outside)
    before = outside.read_bytes()
    out = invoke_memory(root, *command)
    assert out.returncode != 0
    assert f"{rel}: cannot read: a symlink, never read through" in out.stderr, out.stderr
    assert (root / rel).is_symlink() and outside.read_bytes() == before
    assert SECRET not in irepo.git("log", "-p", "--all")
    assert not any(SECRET in p.read_text(errors="replace") for p in root.rglob("*.md")
                   if not p.is_symlink())


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_log_swapped_for_a_link_is_never_appended_to(irepo_indexed: IRepo, outside: Path
                                                      ) -> None:
    from memrepo.index import signals

    root = irepo_indexed.root
    log = signals.signal_file(root, dt.datetime.now().astimezone())
    log.parent.mkdir(parents=True, exist_ok=True)
    log.symlink_to(outside)
    before = outside.read_bytes()
    out = invoke_memory(root, "reinforce", f"{KUBE}:8")
    assert out.returncode != 0
    assert "a symlink, never written through" in out.stderr, out.stderr
    assert outside.read_bytes() == before and log.is_symlink()


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
@pytest.mark.parametrize("rel", ["topics/pipe.md", "knowledge/memory/MEMORY.md"])
def test_a_fifo_in_place_of_a_memory_file_is_never_waited_on(irepo_indexed: IRepo,
                                                             rel: str) -> None:
    """Opening a named pipe to read waits for a writer: the compiler (so the prompt hook,
    against its deadline) would wait for ever. It goes on without the file."""
    import subprocess

    root = irepo_indexed.root
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    if (root / rel).exists():
        (root / rel).unlink()
    os.mkfifo(root / rel)
    try:
        out = subprocess.run([sys.executable, "-m", "memrepo", "compile", "rolling updates"],
                             cwd=root, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"memory compile waited on the FIFO {rel}")
    assert out.returncode == 0, out.stderr
    assert KUBE in out.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_no_new_file_is_written_through_a_linked_folder(irepo: IRepo, tmp_path: Path) -> None:
    """A folder of the repo swapped for a link to one outside: a new transcript (or the
    prompt a hook keeps) would land there. The writer stops and names the folder."""
    root = irepo.root
    away = tmp_path / "away"
    away.mkdir()
    shutil.move(root / "raw", away / "raw")
    (root / "raw").symlink_to(away / "raw", target_is_directory=True)
    before = sorted(p.relative_to(away).as_posix() for p in away.rglob("*"))
    out = invoke_memory(root, "capture", "start", "--session", "s9")
    assert out.returncode != 0
    assert "raw/ is a symlink; memrepo never writes through one" in out.stderr, out.stderr
    assert sorted(p.relative_to(away).as_posix() for p in away.rglob("*")) == before
    # and the same rule in one place for every writer
    (root / "knowledge").rename(away / "knowledge")
    (root / "knowledge").symlink_to(away / "knowledge", target_is_directory=True)
    with pytest.raises(MemrepoError, match=r"knowledge/journal/x\.md: knowledge/ is a symlink"):
        atomic_write(root / "knowledge/journal/x.md", "x", root=root)
    assert not (away / "knowledge/journal/x.md").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks and FIFOs")
def test_the_doctor_names_the_links_and_pipes_in_the_memory_folders(irepo: IRepo,
                                                                    outside: Path) -> None:
    root = irepo.root
    out = invoke_memory(root, "doctor")
    assert "links in the work tree: none" in out.stdout, out.stdout
    (root / "knowledge/reference/creds.md").symlink_to(outside)
    os.mkfifo(root / "knowledge/pipe.md")
    (root / "scratch").mkdir(exist_ok=True)
    (root / "scratch/mine").symlink_to(outside)  # scratch/ is the user's: not reported
    out = invoke_memory(root, "doctor")
    assert out.returncode != 0
    line = next(x for x in out.stdout.splitlines() if "links in the work tree" in x)
    assert line.startswith("[FAIL]") and "2 symlink(s) or special file(s)" in line, line
    assert "knowledge/pipe.md" in line and "knowledge/reference/creds.md" in line
    assert "scratch" not in line


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_signal_never_keeps_a_line_read_through_a_linked_folder(irepo_indexed: IRepo,
                                                                 tmp_path: Path) -> None:
    """A signal keeps its line's text in ``raw/signals/``, which is committed: read through
    a folder swapped for a link, that text would be another file's."""
    root = irepo_indexed.root
    away = tmp_path / "away"
    shutil.move(root / "knowledge/reference", away)
    (away / "kubernetes.md").write_text("".join(f"{SECRET} line\n" for _ in range(20)))
    (root / "knowledge/reference").symlink_to(away, target_is_directory=True)
    invoke_memory(root, "reinforce", f"{KUBE}:8")
    logs = (root / "raw/signals").glob("*.jsonl")
    assert not any(SECRET in p.read_text() for p in logs)
