"""Sub-agents on a sparse checkout of just what they need (issue 38, docs/sub-agents.md):
a sparse clone of a bare remote captures, commits and syncs; the full clone sees the new
files and nothing it had changes; whatever would rewrite the whole memory refuses, and no
writer ever writes over a file the sparse clone cannot see."""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import sparse
from memrepo.agents import state, worker
from memrepo.errors import MemrepoError
from memrepo.lifecycle import journal
from memrepo.repo import discover

ADA = "knowledge/people/ada.md"
OLD_JOURNAL = "knowledge/journal/2026-03-01.md"
MEMORY = "knowledge/memory/MEMORY.md"


def memory(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = invoke_memory(cwd, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def tree(root: Path) -> dict[str, str]:
    """path -> blob of every file at HEAD."""
    out = run_git(root, "ls-tree", "-r", "-z", "HEAD").stdout
    return {row.split("\t", 1)[1]: row.split()[2] for row in out.split("\0") if row}


def out_of_tree(root: Path) -> set[str]:
    """The tracked files git keeps out of the work tree (skip-worktree)."""
    rows = run_git(root, "ls-files", "-t").stdout.splitlines()
    return {r[2:] for r in rows if r.startswith("S ")}


@pytest.fixture
def remote(crepo: Path, tmp_path: Path) -> Path:
    """A bare remote holding a memory with a person, an old journal and a topic."""
    (crepo / ADA).write_text("---\ntype: person\nname: Ada\n---\n\n# Ada\n- zebrafish expert\n")
    (crepo / OLD_JOURNAL).write_text(
        "---\ntype: journal\ndate: 2026-03-01\n---\n\n## 2026-03-01\n- kept\n")
    memory(crepo, "commit", "--no-llm", "--no-push")
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(crepo), str(bare))
    return bare


@pytest.fixture
def full(remote: Path, tmp_path: Path) -> Path:
    memory(tmp_path, "clone", str(remote), str(tmp_path / "full"), "--no-index")
    return tmp_path / "full"


@pytest.fixture
def sub(remote: Path, tmp_path: Path) -> Path:
    """A sub-agent's clone: topics/ only (and the top-level files, cone mode)."""
    done = memory(tmp_path, "clone", str(remote), str(tmp_path / "sub"), "--sparse", "topics")
    assert "a sparse clone of topics/" in done.stdout
    root = tmp_path / "sub"
    assert (root / "topics").is_dir() and not (root / "knowledge").exists()
    assert {ADA, OLD_JOURNAL, MEMORY} <= out_of_tree(root)
    return root


def test_a_sparse_subagent_captures_commits_and_syncs_touching_nothing_it_cannot_see(
        full: Path, sub: Path) -> None:
    before = tree(full)
    memory(sub, "capture", "start", "--session", "ses_sub1", "--topic", "zebrafish survey")
    memory(sub, "capture", "append", "--session", "ses_sub1", "--role", "user",
           "survey the zebrafish tanks")
    memory(sub, "capture", "append", "--session", "ses_sub1", "--role", "agent",
           "the zebrafish tanks are fine")
    ended = memory(sub, "capture", "end", "--session", "ses_sub1").stdout
    transcript = ended.split()[0]
    assert transcript.startswith("raw/conversations/") and (sub / transcript).is_file()
    memory(sub, "remember", "zebrafish", "tanks", "checked", "by", "the", "sub-agent")
    memory(sub, "commit", "--no-llm", "--no-push")
    assert run_git(sub, "status", "--porcelain").stdout == ""
    found = memory(sub, "search", "zebrafish", "--json")
    paths = {h["path"] for h in json.loads(found.stdout)}
    assert transcript in paths and ADA not in paths  # what is checked out, and only that
    assert "a sparse checkout: only" in found.stderr
    # meanwhile the full clone changes a file the sub-agent cannot see: sync rebases over it
    with (full / ADA).open("a") as fh:
        fh.write("- 2026-03-02: moved to the Oslo lab\n")
    memory(full, "commit", "--no-llm")  # auto_push
    before = tree(full)
    synced = memory(sub, "sync").stdout
    assert "pulled 1 and pushed 2 commit(s)" in synced, synced
    # what it could not see is still out of its work tree, and was never written; the
    # journals were checked out for `remember` (the one it rewrote is today's)
    assert {ADA, MEMORY} <= out_of_tree(sub) and OLD_JOURNAL not in out_of_tree(sub)
    assert not (sub / ADA).exists() and not (sub / MEMORY).exists()

    assert "pulled 2" in memory(full, "sync").stdout
    after = tree(full)
    assert {p: after.get(p) for p in before} == before  # nothing changed, nothing deleted
    assert "Oslo lab" in (full / ADA).read_text()
    new = set(after) - set(before)
    assert transcript in new and any(p.startswith("knowledge/journal/") for p in new)
    assert "zebrafish tanks are fine" in (full / transcript).read_text()
    assert run_git(full, "status", "--porcelain").stdout == ""


@pytest.mark.parametrize("args", [("prune",), ("condense", "weekly"), ("extract", "--offline"),
                                  ("doctor", "--fix"), ("update", f"{ADA}:7", "new")])
def test_whole_memory_rewriters_refuse_in_a_sparse_clone(sub: Path, args: tuple[str, ...]
                                                         ) -> None:
    hidden, head = out_of_tree(sub), tree(sub)
    proc = invoke_memory(sub, *args)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "is a sparse checkout" in proc.stderr and "Nothing was changed" in proc.stderr
    assert "memory capture, commit, search" in proc.stderr  # what does work there
    assert out_of_tree(sub) == hidden and tree(sub) == head
    assert run_git(sub, "status", "--porcelain").stdout == ""


def test_no_writer_writes_over_a_file_the_clone_cannot_see(full: Path, remote: Path,
                                                           tmp_path: Path) -> None:
    """Today's journal exists, out of the sparse clone's cone: a writer that found it
    "missing" is refused; ``memory remember`` checks the journals out first and appends."""
    memory(full, "remember", "written", "in", "the", "full", "clone")
    memory(full, "commit", "--no-llm")  # auto_push: to the remote
    today = dt.date.today()
    rel = journal.journal_path(today)
    memory(tmp_path, "clone", str(remote), str(tmp_path / "sub2"), "--sparse", "topics",
           "--no-index")
    sub2 = tmp_path / "sub2"
    assert rel in out_of_tree(sub2)
    with pytest.raises(MemrepoError, match=r"not in this sparse checkout.*never writes over"):
        journal.add_bullets(sub2, today, ["- 10:00 would have replaced the day"])
    assert not (sub2 / rel).exists() and run_git(sub2, "status", "--porcelain").stdout == ""
    memory(sub2, "remember", "appended", "by", "the", "sub-agent")
    text = (sub2 / rel).read_text()
    assert "written in the full clone" in text and "appended by the sub-agent" in text
    assert "knowledge/journal" in run_git(sub2, "sparse-checkout", "list").stdout
    assert ADA in out_of_tree(sub2)


def test_the_validators_run_in_a_sparse_clone(sub: Path) -> None:
    (sub / "topics/broken.md").write_text("---\ntype: topic\n---\n\nno triggers\n")
    proc = invoke_memory(sub, "commit", "--no-llm", "--no-push")
    assert proc.returncode == 1 and "triggers" in proc.stdout + proc.stderr
    run_git(sub, "add", "topics/broken.md")
    refused = run_git(sub, "commit", "-q", "-m", "by hand", check=False)
    assert refused.returncode != 0 and "triggers" in refused.stdout + refused.stderr
    assert len(run_git(sub, "log", "--oneline").stdout.splitlines()) == len(
        run_git(sub, "log", "--oneline", "origin/main").stdout.splitlines())


def test_the_index_follows_the_cone(sub: Path) -> None:
    assert "a sparse checkout: only topics/" in memory(sub, "index").stdout

    def hits() -> set[str]:
        return {h["path"] for h in json.loads(memory(sub, "search", "zebrafish", "--json")
                                              .stdout)}

    assert ADA not in hits()
    run_git(sub, "sparse-checkout", "add", "knowledge/people")  # no git hook runs: search
    assert ADA in hits()  # brings the index to the new cone itself
    run_git(sub, "sparse-checkout", "set", "topics")
    memory(sub, "index")
    assert ADA not in hits()


def _hook(root: Path, harness: str, event: str, payload: dict,
          monkeypatch: pytest.MonkeyPatch) -> dict:
    """The detached worker of an agent's hook, run here; its agents-log entry."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert worker.run_worker([harness, event, str(root)]) == 0
    return [e for e in state.read_log(root / state.LOG) if e.get("detached")][-1]


def test_the_agent_hooks_capture_and_end_in_a_sparse_clone(
        sub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    said = {"session_id": "g1", "prompt": "count the zebrafish",
            "prompt_response": "there are twelve zebrafish"}
    assert _hook(sub, "gemini", "AfterAgent", said, monkeypatch)["status"] == "ok"
    flushed = _hook(sub, "gemini", "PreCompress", {"session_id": "g1"}, monkeypatch)
    assert flushed["status"] == "failed" and "is a sparse checkout" in flushed["detail"]
    ended = _hook(sub, "gemini", "SessionEnd", {"session_id": "g1"}, monkeypatch)
    assert ended["status"] == "ok" and ended.get("closed"), ended
    rel = ended["transcript"]
    assert run_git(sub, "log", "-1", "--format=%s").stdout.startswith("conversation:")
    assert "twelve zebrafish" in run_git(sub, "show", f"HEAD:{rel}").stdout
    assert {ADA, MEMORY} <= out_of_tree(sub)


def test_only_cone_mode_is_taken(sub: Path) -> None:
    assert discover(sub, op="search").root == sub.resolve()
    run_git(sub, "sparse-checkout", "set", "--no-cone", "/*", "!/knowledge/")
    assert sparse.view(sub) is None
    proc = invoke_memory(sub, "search", "zebrafish")
    assert proc.returncode == 1 and "cone-mode sparse checkout" in proc.stderr


def test_the_cone_file_is_read_as_git_writes_it() -> None:
    text = "/*\n!/*/\n/raw/\n!/raw/*/\n/raw/conversations/\n/topics/\n"
    v = sparse.View(sparse.parse_cone(text) or ())
    assert v.folders == ("raw/conversations", "topics")
    assert v.shows("memory-config.yaml") and v.shows("raw/conversations/2026/03/01/x.md")
    assert v.shows("raw/README.md") and not v.shows("raw/signals/2026-03.jsonl")
    assert not v.shows("knowledge/people/ada.md") and not v.shows("topicsx/a.md")
    assert sparse.parse_cone("/*\n!/*/\n/knowledge/people/*.md\n") is None


@pytest.mark.parametrize("bad", ["../up", "knowledge/*", "", "a/./b", "!topics"])
def test_clone_takes_folders_not_patterns(remote: Path, tmp_path: Path, bad: str) -> None:
    proc = invoke_memory(tmp_path, "clone", str(remote), str(tmp_path / "x"), "--sparse", bad)
    assert proc.returncode == 1 and "cone mode takes folders" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_reinforce_in_a_sparse_clone_logs_its_signal_beside_the_others(sub: Path) -> None:
    memory(sub, "index")
    memory(sub, "reinforce", "topics/remembering.md")
    assert "raw/signals" in run_git(sub, "sparse-checkout", "list").stdout
    memory(sub, "commit", "--no-llm", "--no-push")
    changed = run_git(sub, "diff", "--name-only", "HEAD~1", "HEAD").stdout.split()
    assert changed and all(p.startswith("raw/signals/") for p in changed)
    assert {ADA, MEMORY} <= out_of_tree(sub)


def test_a_file_written_by_hand_over_an_invisible_one_is_never_committed(sub: Path) -> None:
    """Not through memrepo (an agent's own file tool): git refuses to stage a path outside
    the cone, so `memory commit` stops, names it, and commits nothing."""
    head = tree(sub)
    (sub / "knowledge/people").mkdir(parents=True)
    (sub / ADA).write_text("---\ntype: person\nname: Ada\n---\n\nall gone\n")
    proc = invoke_memory(sub, "commit", "--no-llm", "--no-push")
    assert proc.returncode == 1 and "sparse-checkout definition" in proc.stderr, proc.stderr
    assert ADA in proc.stderr and tree(sub) == head
