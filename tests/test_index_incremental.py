"""The hook keeps memory.db equal to a rebuild through commit, amend, rebase, merge, checkout."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import IREPO_TRANSCRIPT, IRepo, invoke_memory, run_git

from memrepo.index import log as hooklog
from memrepo.index.indexer import rebuild, sync
from memrepo.index.lock import IndexLock
from memrepo.index.paths import state_dir


def _assert_like_rebuild(repo: IRepo, tmp_path: Path, embedder: str = "none") -> None:
    snap = repo.snapshot()
    assert snap["commit"] == repo.git("rev-parse", "HEAD").strip()
    assert snap == repo.rebuilt_snapshot(tmp_path / "copies", embedder)


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    (tmp_path / "copies").mkdir()
    return tmp_path


def test_commit_modify_delete_rename(irepo_indexed: IRepo, copies: Path) -> None:
    r = irepo_indexed
    r.write(
        "knowledge/journal/2024-03-01.md",
        r.root.joinpath("knowledge/journal/2024-03-01.md").read_text()
        + "- A new bullet about espresso.\n",
    )
    r.write(
        "knowledge/people/bob.md", "---\ntype: person\nname: Bob\n---\n# Bob\n\nLikes espresso.\n"
    )
    r.write("scratch/ignored.md", "espresso scratch\n")
    r.commit("two")
    r.event()
    _assert_like_rebuild(r, copies)
    r.git("mv", "knowledge/people/bob.md", "knowledge/people/robert.md")
    r.git("rm", "-q", "knowledge/reference/kubernetes.md")
    r.commit("three")
    r.event()
    _assert_like_rebuild(r, copies)
    paths = [row[0] for row in r.snapshot()["documents"]]
    assert "knowledge/people/robert.md" in paths and "scratch/ignored.md" not in paths


def test_amend(irepo_indexed: IRepo, copies: Path) -> None:
    r = irepo_indexed
    r.write("knowledge/people/ann.md", "---\ntype: person\nname: Ann\n---\nAnn plays chess.\n")
    r.commit("ann")
    r.event()
    r.write("knowledge/people/ann.md", "---\ntype: person\nname: Ann\n---\nAnn plays go.\n")
    r.commit("ann", "--amend")
    r.event("post-rewrite")
    _assert_like_rebuild(r, copies)


def test_rebase(irepo_indexed: IRepo, copies: Path) -> None:
    r = irepo_indexed
    r.git("checkout", "-q", "-b", "topic")
    r.write("knowledge/projects/p/notes.md", "---\ntype: project_notes\n---\n# P\n\nrebased work\n")
    r.commit("topic work")
    r.event()
    r.git("checkout", "-q", "main")
    r.event("post-checkout")
    r.write(
        "knowledge/journal/2024-03-05.md",
        "---\ntype: journal\ndate: 2024-03-05\n---\n- main work\n",
    )
    r.commit("main work")
    r.event()
    r.git("checkout", "-q", "topic")
    r.event("post-checkout")
    r.git("rebase", "-q", "main")
    r.event("post-rewrite")
    _assert_like_rebuild(r, copies)


def test_merge_from_second_clone(irepo_indexed: IRepo, copies: Path, tmp_path: Path) -> None:
    r = irepo_indexed
    other = IRepo(tmp_path / "clone")
    run_git(tmp_path, "clone", "-q", str(r.root), str(other.root))
    other.write("knowledge/people/cy.md", "---\ntype: person\nname: Cy\n---\nCy sails.\n")
    other.write(
        "raw/conversations/2024/03/02/1000-s1-rotating-keys.md",
        IREPO_TRANSCRIPT + "\n## 10:05 — user\n\nthanks\n",
    )
    other.commit("from the clone")
    r.write("knowledge/people/dee.md", "---\ntype: person\nname: Dee\n---\nDee runs.\n")
    r.commit("local")
    r.event()
    r.git("pull", "-q", "--no-rebase", "--no-edit", str(other.root), "main")
    r.event("post-merge")
    _assert_like_rebuild(r, copies)


def test_checkout_another_branch_and_back(irepo_indexed: IRepo, copies: Path) -> None:
    r = irepo_indexed
    r.git("checkout", "-q", "-b", "side")
    r.git("rm", "-q", "knowledge/journal/2024-03-01.md")
    r.write("knowledge/reference/side.md", "---\ntype: reference\n---\nonly on side\n")
    r.commit("side")
    r.event()
    r.git("checkout", "-q", "main")
    r.event("post-checkout")
    _assert_like_rebuild(r, copies)
    r.git("checkout", "-q", "side")
    r.event("post-checkout")
    _assert_like_rebuild(r, copies)


def test_hash_vectors_follow_the_same_updates(irepo: IRepo, copies: Path) -> None:
    rebuild(irepo.root, "hash")
    irepo.write("knowledge/people/eve.md", "---\ntype: person\nname: Eve\n---\nEve audits.\n")
    irepo.git("rm", "-q", "knowledge/reference/kubernetes.md")
    irepo.commit("eve")
    irepo.event()
    snap = irepo.snapshot()
    assert snap["vectors"]
    _assert_like_rebuild(irepo, copies, "hash")


def test_a_turn_appended_gives_the_one_before_its_reply_vector(irepo: IRepo, copies: Path
                                                               ) -> None:
    """Transcripts grow at the end: the turn that was last gains a reply (a second vector);
    a transcript removed takes its reply vectors along."""
    rebuild(irepo.root, "hash")
    path = "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    before = irepo.snapshot()["vectors"]
    with open(irepo.root / path, "a", encoding="utf-8") as fh:
        fh.write("\n## 10:02 — user\n\nThanks, the consumer is redeployed.\n")
    irepo.commit("turn")
    irepo.event()
    after = irepo.snapshot()["vectors"]
    assert len(after) == len(before) + 2  # the new turn's, and the old last turn's reply
    _assert_like_rebuild(irepo, copies, "hash")
    irepo.git("rm", "-q", path)
    irepo.commit("gone")
    irepo.event()
    _assert_like_rebuild(irepo, copies, "hash")


def test_hook_without_index_does_nothing_and_logs(irepo: IRepo) -> None:
    irepo.event()
    assert not (irepo.root / "memory.db").exists()
    entries = hooklog.read(state_dir(irepo.root / ".git"))
    assert entries and "memory index" in entries[-1].message


def test_hook_never_raises_on_a_corrupt_index(irepo_indexed: IRepo, capsys) -> None:
    (irepo_indexed.root / "memory.db").write_bytes(b"not a database" * 100)
    irepo_indexed.write("knowledge/people/x.md", "---\ntype: person\nname: X\n---\nx\n")
    irepo_indexed.commit("x")
    irepo_indexed.event()
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    errors = hooklog.errors_since_last_success(state_dir(irepo_indexed.root / ".git"))
    assert errors and "memory index" in errors[-1].message
    sync(irepo_indexed.root)  # `memory index` repairs it with a rebuild
    assert irepo_indexed.snapshot()["commit"] == irepo_indexed.git("rev-parse", "HEAD").strip()


def test_schema_mismatch_is_rebuilt_not_half_used(irepo_indexed: IRepo) -> None:
    con = sqlite3.connect(irepo_indexed.root / "memory.db")
    con.execute("UPDATE meta SET value='0' WHERE key='schema_version'")
    con.commit()
    con.close()
    res = sync(irepo_indexed.root)
    assert res is not None and res.mode == "rebuild"
    res = sync(irepo_indexed.root, embedder_name="hash")
    assert res is not None and res.mode == "rebuild"  # another embedder: rebuilt too


def test_busy_lock_defers_the_hook_to_the_holder(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    lock = IndexLock(state_dir(r.root / ".git"))
    lock.acquire()
    try:
        r.write("knowledge/people/z.md", "---\ntype: person\nname: Z\n---\nz\n")
        head = r.commit("z")
        assert sync(r.root, hook=True) is None  # does not wait
        assert lock.pending.exists()
    finally:
        lock.release()
    sync(r.root)  # the next indexer (or the holder's loop) catches up
    assert r.snapshot()["commit"] == head


def test_rebuild_swaps_atomically_and_leaves_no_temp(irepo_indexed: IRepo) -> None:
    res = sync(irepo_indexed.root, force_rebuild=True)
    assert res is not None and res.mode == "rebuild" and res.files == 3
    leftovers = [p.name for p in irepo_indexed.root.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_heavy_embedder_is_queued_off_the_commit_path(
    irepo: IRepo, copies: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrepo.index.embedders import HashEmbedder

    rebuild(irepo.root, "hash")
    monkeypatch.setattr(HashEmbedder, "light", False)  # stands in for wordllama
    irepo.write("knowledge/people/fay.md", "---\ntype: person\nname: Fay\n---\nFay knits.\n")
    irepo.commit("fay")
    res = sync(irepo.root, hook=True)  # what the hook sees: chunks waiting for vectors
    assert res is not None and res.pending_vectors > 0
    assert _vectors_check(irepo) == (False, f"{res.pending_vectors} chunk(s) wait")
    # a hook counts what its own commit left (no scan of every chunk per commit); doctor
    # and `memory index` count them all
    again = sync(irepo.root, hook=True)
    assert again is not None and again.mode == "noop" and again.pending_vectors == 0
    res = sync(irepo.root)  # `memory index` catches up
    assert res is not None and res.pending_vectors == 0 and res.embedded > 0
    assert _vectors_check(irepo) == (True, "every chunk has its vector")
    _assert_like_rebuild(irepo, copies, "hash")


def _index_checks(irepo: IRepo) -> list:
    """What `memory doctor` checks of the index."""
    from memrepo.index import health
    from memrepo.repo import discover

    return health.checks(discover(str(irepo.root)))


def _vectors_check(irepo: IRepo) -> tuple[bool, str]:
    """What `memory doctor` says of the vectors (ok, the first words of the detail)."""
    (check,) = [c for c in _index_checks(irepo) if c.name == "index vectors"]
    assert check.warning and check.fix == "memory index"
    words = " ".join(check.detail.split()[:3]) if not check.ok else check.detail
    return check.ok, words


def test_the_hook_path_stays_light(irepo_indexed: IRepo) -> None:
    """No numpy, YAML or click on the commit path (each costs tens of ms per commit)."""
    import subprocess
    import sys

    irepo_indexed.write("knowledge/people/g.md", "---\ntype: person\nname: G\n---\ng\n")
    irepo_indexed.commit("g")
    code = (
        "import sys\nfrom pathlib import Path\nfrom memrepo.hooks.post_commit import on_git_event\n"
        "on_git_event(Path.cwd(), 'post-commit')\n"
        "print(sorted(m for m in ('numpy', 'yaml', 'click', 'frontmatter') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=irepo_indexed.root, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[]", out.stderr
    assert irepo_indexed.snapshot()["commit"] == irepo_indexed.git("rev-parse", "HEAD").strip()


def test_reply_vectors_off_keeps_one_vector_a_chunk_until_the_setting_changes(
    irepo: IRepo, copies: Path
) -> None:
    """``search.reply_vectors: false`` (a big repo halving its embedding): no turn gets a
    second vector, updates keep to it, and `memory index` rebuilds when it changes."""
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n  reply_vectors: false\n")
    irepo.commit("one vector a chunk")
    out = invoke_memory(irepo.root, "index")
    assert out.returncode == 0, out.stderr
    snap = irepo.snapshot()
    assert snap["chunks"] and all(row[-1] is None for row in snap["chunks"])
    assert len(snap["vectors"]) == len({row[4] for row in snap["chunks"]})
    path = "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    with open(irepo.root / path, "a", encoding="utf-8") as fh:
        fh.write("\n## 10:02 — user\n\nThanks, the consumer is redeployed.\n")
    irepo.commit("turn")
    irepo.event()  # the hook keeps what the index recorded
    assert irepo.snapshot() == irepo.rebuilt_snapshot(copies, "hash", replies=False)
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.commit("two vectors a turn")
    irepo.event()
    (check,) = [c for c in _index_checks(irepo) if c.name == "index embedder"]
    assert not check.ok and "search.reply_vectors is true" in check.detail  # doctor says so
    out = invoke_memory(irepo.root, "index")
    assert out.returncode == 0, out.stderr
    assert "rebuilt" in out.stdout and "search.reply_vectors is now true" in out.stdout
    assert any(row[-1] is not None for row in irepo.snapshot()["chunks"])
    _assert_like_rebuild(irepo, copies, "hash")


@pytest.mark.parametrize("replies", [True, False])
def test_a_rebuild_in_worker_processes_equals_one_in_process(
    irepo: IRepo, copies: Path, monkeypatch: pytest.MonkeyPatch, replies: bool
) -> None:
    """Big rebuilds read, chunk and embed in a worker pool (PARALLEL_MIN_FILES): the same
    index, vectors and reply vectors (or none) included."""
    import os

    from memrepo.index import bulk

    if (os.cpu_count() or 1) < 2:
        pytest.skip("the pool is used only with two cores or more")
    monkeypatch.setattr(bulk, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(bulk, "PART_FILES", 1)
    rebuild(irepo.root, "hash", replies=replies)
    snap = irepo.snapshot()
    assert any(row[-1] is not None for row in snap["chunks"]) == replies
    monkeypatch.setattr(bulk, "PARALLEL_MIN_FILES", 10**9)
    assert snap == irepo.rebuilt_snapshot(copies, "hash", replies=replies)
