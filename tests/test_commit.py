"""memory commit: what is staged, the type, the messages (deterministic and LLM), cron safety."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import fake_anthropic, invoke_memory, run_git

from memrepo.commit import batch
from memrepo.config import defaults
from memrepo.transcript import capture


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


JOURNAL = "knowledge/journal/2026-02-16.md"


def edit_knowledge(root: Path) -> None:
    write(root, JOURNAL, "---\ntype: journal\ndate: 2026-02-16\n---\n\n## Decisions\n"
          "- Move memory from SQLite to files\n- Keep FTS5 as the index\n")
    mem = root / "knowledge/memory/MEMORY.md"
    mem.write_text(mem.read_text() + "\n## Preferences\n- Prefers short answers\n")


def test_nothing_to_commit_is_exit_0_and_no_commit(crepo: Path) -> None:
    before = run_git(crepo, "rev-parse", "HEAD").stdout
    (crepo / "scratch").mkdir(exist_ok=True)
    (crepo / "scratch/notes.md").write_text("scratch")
    proc = invoke_memory(crepo, "commit")
    assert proc.returncode == 0 and "nothing to commit" in proc.stdout
    assert run_git(crepo, "rev-parse", "HEAD").stdout == before


def test_batch_commit_stages_knowledge_not_open_transcripts(crepo: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    edit_knowledge(crepo)
    s = capture.start(crepo, session_id="ses_open", topic="still talking")
    capture.append(crepo, "ses_open", "user", "hello")
    proc = invoke_memory(crepo, "commit", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["committed"] and out["type"] == "memory" and not out["llm"]
    assert sorted(out["files"]) == [JOURNAL, "knowledge/memory/MEMORY.md"]
    assert any("open" in s for s in out["skipped"])
    msg = run_git(crepo, "log", "-1", "--format=%B").stdout
    first = msg.split("\n")[0]
    assert first.startswith("memory: update journal 2026-02-16, core memory") or \
        first.startswith("memory: ")
    assert len(first) <= 72 and "(+3/-0 bullets)" in first
    assert "sections: Decisions" in msg and "+ Move memory from SQLite to files" in msg
    assert run_git(crepo, "status", "--porcelain", "--", s.path).stdout.startswith("??")
    # Again: nothing left (the open transcript stays out).
    assert "nothing to commit" in invoke_memory(crepo, "commit").stdout


def test_types(crepo: Path) -> None:
    soul = crepo / "knowledge/identity/SOUL.md"
    soul.write_text(soul.read_text() + "\n- Be candid.\n")
    r = batch.run(crepo, use_llm=False)
    assert r.type == "identity" and r.message.startswith("identity: update SOUL")
    edit_knowledge(crepo)
    assert batch.run(crepo, use_llm=False).type == "memory"
    (crepo / "archive/journal").mkdir(parents=True, exist_ok=True)
    run_git(crepo, "mv", JOURNAL, "archive/journal/2026-02-16.md")
    r = batch.run(crepo, use_llm=False)
    assert r.committed and r.type == "maintenance"
    run_git(crepo, "checkout", "-q", "-b", "explore/what-if")
    write(crepo, "knowledge/reference/x.md", "---\ntype: reference\n---\n- idea\n")
    assert batch.run(crepo, use_llm=False).type == "explore"


def test_dry_run_changes_nothing(crepo: Path) -> None:
    edit_knowledge(crepo)
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = invoke_memory(crepo, "commit", "--dry-run", "--no-llm")
    assert proc.returncode == 0
    assert proc.stdout.startswith("memory: ") and JOURNAL in proc.stdout
    assert run_git(crepo, "rev-parse", "HEAD").stdout == head
    assert run_git(crepo, "diff", "--cached", "--name-only").stdout == ""


def test_waits_for_index_lock(crepo: Path) -> None:
    edit_knowledge(crepo)
    lock = crepo / ".git/index.lock"
    lock.write_text("")
    threading.Timer(0.4, lock.unlink).start()
    t0 = time.monotonic()
    r = batch.run(crepo, use_llm=False)
    assert r.committed and time.monotonic() - t0 >= 0.3


def test_llm_message_with_fake_transport(crepo: Path) -> None:
    edit_knowledge(crepo)
    seen: list[dict] = []
    client = fake_anthropic(
        "memory: record storage decision and answer style\n\nFiles replace SQLite; FTS5 stays.",
        seen,
    )
    r = batch.run(crepo, use_llm=True, client=client)
    assert r.llm and r.committed
    assert len(seen) == 1
    req = seen[0]
    assert req["model"] == "claude-haiku-4-5" and req["max_tokens"] == 200
    prompt = req["messages"][0]["content"]
    system = req["system"][0]
    assert "Summarize this git diff" in system["text"]
    assert "cache_control" not in system  # a one-off ~100-token prompt: no cache write
    assert "Move memory from SQLite to files" in prompt
    leaked = batch.prompt_vars("+key AKIAIOSFODNN7EXAMPLE", "memory", [], "memory: x")["diff"]
    assert "AKIAIOSFODNN7EXAMPLE" not in leaked  # a diff is redacted before it leaves
    log = run_git(crepo, "log", "-1", "--format=%B").stdout
    assert log.startswith("memory: record storage decision and answer style\n\nFiles replace")


def test_llm_failure_falls_back_and_says_so(crepo: Path, capsys) -> None:
    edit_knowledge(crepo)
    seen: list[dict] = []
    client = fake_anthropic([(500, {"type": "error", "error": {"type": "api_error",
                                                            "message": "boom"}})], seen)
    r = batch.run(crepo, use_llm=True, client=client)
    assert r.committed and not r.llm and r.llm_error
    assert len(seen) == 1 + defaults()["llm"]["max_retries"]  # the shared client retries 5xx
    assert "LLM commit message failed" in capsys.readouterr().err
    assert r.message.startswith("memory: update ")


@pytest.mark.parametrize("reply", ["", "   \n"])
def test_llm_empty_reply_falls_back(crepo: Path, reply: str) -> None:
    edit_knowledge(crepo)
    seen: list[dict] = []
    r = batch.run(crepo, use_llm=True, client=fake_anthropic(reply, seen))
    assert r.committed and not r.llm and len(seen) == 1


def test_closed_transcript_left_by_a_crash_is_committed(crepo: Path) -> None:
    capture.start(crepo, session_id="ses_late", topic="late")
    capture.append(crepo, "ses_late", "user", "hi")
    done = capture.end(crepo, "ses_late", commit=False)
    r = batch.run(crepo, use_llm=False)
    assert r.type == "conversation" and f"Session: {done.path}" in r.message


def test_llm_message_prints_the_token_and_cost_line(crepo: Path, monkeypatch, capsys) -> None:
    """Like every LLM command, `memory commit` ends with the usage line on stderr."""
    from memrepo.scripts.cli import main

    edit_knowledge(crepo)
    seen: list[dict] = []
    client = fake_anthropic("memory: record storage decision\n\nFiles replace SQLite.", seen)
    real = batch.run
    monkeypatch.setattr(batch, "run", lambda root, **kw: real(root, client=client, **kw))
    assert main(["--repo", str(crepo), "commit", "--llm", "--no-push"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("committed ") and len(seen) == 1
    assert "LLM: 1 calls, 0 cached, $0." in err and "claude-haiku-4-5: 1 calls" in err
    r = batch.run(crepo, use_llm=False)
    assert r.llm_usage is None  # no LLM asked, no line


def test_files_in_new_directories_are_found(crepo: Path) -> None:
    """git shows a new directory as ``dir/`` (so its untracked cache works): its files count."""
    ctx = crepo / "knowledge/projects/garden/context.md"
    ctx.parent.mkdir(parents=True)
    ctx.write_text("---\ntype: project_context\n---\n# Garden\n\n- raised beds in spring\n")
    (crepo / "scratch" / "tmp").mkdir(parents=True, exist_ok=True)
    (crepo / "scratch" / "tmp" / "x.md").write_text("scratch\n")
    take, skipped = batch.candidates(crepo)
    assert take == ["knowledge/projects/garden/context.md"] and skipped == []


# --- issue #14: memrepo's commits side by side ------------------------------------------


def test_a_batch_whose_changes_another_commit_took_first_is_nothing_to_commit(
    crepo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HEAD moves (a commit not made by memrepo) with the same content: the batch is
    built again on it, finds HEAD's tree, and says "nothing to commit", exit 0."""
    from memrepo.commit import inline

    edit_knowledge(crepo)
    real = inline.commit_tree
    calls = []

    def someone_commits_first(root: Path, message: str, prepared) -> None:
        if not calls:
            run_git(crepo, "add", "-A", "--", "knowledge")
            run_git(crepo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "by hand")
        calls.append(prepared.parent)
        real(root, message, prepared)

    monkeypatch.setattr(inline, "commit_tree", someone_commits_first)
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = invoke_memory(crepo, "commit")
    assert proc.returncode == 0 and "nothing to commit" in proc.stdout, proc.stderr
    assert len(calls) == 2 and calls[0] == head.strip() != calls[1]
    assert run_git(crepo, "log", "-1", "--format=%s").stdout.strip() == "by hand"
    assert run_git(crepo, "status", "--porcelain", "--", "knowledge").stdout == ""


def test_a_transcript_whose_end_is_closing_it_is_left_to_that_end(crepo: Path) -> None:
    capture.start(crepo, session_id="ses_cl", topic="closing race")
    capture.append(crepo, "ses_cl", "user", "hello")
    ended = capture.end(crepo, "ses_cl", commit=False)
    state = crepo / batch.SESSIONS_DIR / "ses_cl.json"
    state.write_text(json.dumps({"session_id": "ses_cl", "path": ended.path, "timezone": "UTC",
                                 "phase": "closing", "closing_path": ended.path}))
    take, skipped = batch.candidates(crepo)
    assert ended.path not in take
    assert skipped == [f"{ended.path} (closing: its 'capture end' commits it)"]
    state.write_text(state.read_text().replace('"closing"', '"open"', 1))
    assert batch.candidates(crepo)[0] == [ended.path]


def test_memrepo_commits_wait_for_the_commit_lock(
    crepo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One memrepo commit at a time per work tree: a commit waits for the lock, and says
    which file when it waited too long."""
    from memrepo.commit import write as cw
    from memrepo.errors import MemrepoError
    from memrepo.locks import file_lock

    lock = crepo / ".git" / cw.COMMIT_LOCK
    edit_knowledge(crepo)
    monkeypatch.setattr(cw, "COMMIT_LOCK_WAIT", 0.1)
    with file_lock(lock), pytest.raises(MemrepoError, match=r"memrepo-commit\.lock"), \
            cw.commit_lock(crepo):
        pass
    with file_lock(lock):
        proc = invoke_memory(crepo, "commit")
    assert proc.returncode == 1 and "memrepo-commit.lock" in proc.stderr
    monkeypatch.setattr(cw, "COMMIT_LOCK_WAIT", 10.0)
    released = threading.Event()

    def hold() -> None:
        with file_lock(lock):
            released.wait(5)
            time.sleep(0.2)

    t = threading.Thread(target=hold)
    t.start()
    time.sleep(0.05)
    released.set()
    t0 = time.monotonic()
    assert batch.run(crepo, use_llm=False, push=False).committed  # waited, then committed
    t.join()
    assert time.monotonic() - t0 >= 0.15


def test_commits_side_by_side_keep_the_index_equal_to_head(crepo: Path) -> None:
    """Threads committing different files at once (each its own lock file handle, as
    processes would be): every commit lands and the index loses no entry."""
    from memrepo.commit.write import commit_paths

    names = [f"knowledge/reference/side-{i}.md" for i in range(4)]
    for n in names:
        write(crepo, n, f"---\ntype: reference\n---\n# {n}\n")
    errors: list[BaseException] = []

    def one(rel: str) -> None:
        try:
            commit_paths(crepo, [rel], f"memory: add {rel}\n")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert run_git(crepo, "diff", "--cached", "--name-only").stdout == ""
    tracked = run_git(crepo, "ls-files", "knowledge/reference").stdout.split()
    assert set(names) <= set(tracked)
