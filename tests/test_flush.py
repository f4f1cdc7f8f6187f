"""``memory flush``: the pre-compaction flush writes durable notes once, or says FLUSH_OK."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import fake_anthropic, invoke_memory, run_git

from memrepo.config import load_config
from memrepo.lifecycle.flush import FLUSH_OK, flush, summary
from memrepo.llm import LLM

SECRET = "sk-ant-api03-" + "A" * 86 + "-AAAAAAAA"
TODAY = dt.date.today().isoformat()


@pytest.fixture(autouse=True)
def _today() -> None:
    """Today as the test runs, not as it was collected (a run that crosses midnight)."""
    global TODAY
    TODAY = dt.date.today().isoformat()

SESSION = {
    "messages": [
        {"role": "system", "content": "You are a helpful coding agent."},
        {"role": "user", "content": "Hi! Let's look at the billing service today."},
        {"role": "assistant", "content": "Sure. The nightly job fails on the ledger migration."},
        {
            "role": "user",
            "content": "We decided to use PostgreSQL 16 for the ledger instead of MySQL. "
            "My colleague Ana Souza will review the migration.",
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Noted, checking the schema."},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "schema.sql"}],
        },
        {
            "role": "assistant",
            "content": "Turns out the root cause was a missing index on ledger_entries. "
            "Lesson learned: always run EXPLAIN before shipping a migration.",
        },
        {
            "role": "user",
            "content": f"I prefer short commit messages in the imperative mood. "
            f"The deploy key for the ledger is {SECRET} by the way.",
        },
        {"role": "assistant", "content": "TODO: follow up with Ana on the rollout date."},
        {"role": "user", "content": "Thanks, that's all for now!"},
    ]
}

SMALL_TALK = """---
session_id: ses_chat01
started: 2026-03-03T09:00:00+01:00
---

# Morning chat

## 09:00 — user
Hi there, how are you today?

## 09:01 — agent
Hello! I'm doing well, thanks for asking. How can I help?

## 09:02 — user
Nothing really, just saying good morning. Thanks!

## 09:02 — agent
Good morning to you too! Have a nice day.
"""

TRANSCRIPT = """---
session_id: ses_fl01
started: 2026-03-03T14:00:00+01:00
topic: cache layer
---

# Cache layer

## 14:00 — user
Let's use Redis for the session cache. We agreed to keep the TTL at 15 minutes.

## 14:05 — agent
Done. Note to self: flush the cache after every schema change.
"""


def _files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in root.rglob("*.md")
        if ".git" not in p.parts
    }


def _assert_valid(root: Path) -> None:
    """Whatever the flush wrote passes the pre-commit validators."""
    changed = [
        line[3:] for line in run_git(root, "status", "--porcelain", "-uall").stdout.splitlines()
    ]
    assert changed
    proc = invoke_memory(root, "hook", "pre-commit", *changed)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _session(tmp_path: Path, data: object = SESSION) -> Path:
    p = tmp_path / "session.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_offline_flush_of_a_realistic_session(memrepo_root: Path, tmp_path: Path) -> None:
    root = memrepo_root
    sess = _session(tmp_path)
    proc = invoke_memory(root, "flush", "--session", str(sess), "--offline")
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and FLUSH_OK not in proc.stdout

    journal = (root / f"knowledge/journal/{TODAY}.md").read_text(encoding="utf-8")
    memory = (root / "knowledge/memory/MEMORY.md").read_text(encoding="utf-8")
    person = (root / "knowledge/people/ana-souza.md").read_text(encoding="utf-8")
    src = "[src: session.json]"  # outside the repo: its file name, never an absolute path
    # the journal: created from the template, one heading, dated bullets with their source
    assert journal.startswith("---\ntype: journal\n")
    assert f"## {TODAY}\n\n### Flush: session\n" in journal
    for bullet in (
        "Decided: We decided to use PostgreSQL 16 for the ledger instead of MySQL.",
        "Learned: Turns out the root cause was a missing index on ledger_entries.",
        "Learned: Always run EXPLAIN before shipping a migration.",
        "Preference: User prefers short commit messages in the imperative mood.",
        "Open: Follow up with Ana on the rollout date.",
    ):
        assert f"- {TODAY}: {bullet} {src}" in journal
    # MEMORY.md: decisions and lessons in their sections
    decisions = memory.split("## Key Decisions")[1].split("##")[0]
    lessons = memory.split("## Lessons Learned")[1].split("##")[0]
    assert "PostgreSQL 16 for the ledger" in decisions
    assert "missing index on ledger_entries" in lessons
    assert "User prefers short commit messages" in lessons
    # a person only with a clear cue; the index names them
    assert "name: Ana Souza" in person and "relationship: colleague" in person
    assert "User's colleague Ana Souza will review the migration." in person
    assert "**Ana Souza**" in (root / "knowledge/people/_index.md").read_text(encoding="utf-8")
    # small talk, tool output and secrets are not memory
    everything = "\n".join(_files(root).values())
    assert SECRET not in everything and "sk-ant-" not in everything
    assert "schema.sql" not in everything and "that's all for now" not in everything
    for text in (journal, memory, person):
        for line in text.splitlines():
            if line.startswith(f"- {TODAY}:"):
                assert "[src: " in line
    _assert_valid(root)


def test_small_talk_gives_flush_ok_and_writes_nothing(memrepo_root: Path, tmp_path: Path) -> None:
    root = memrepo_root
    before = _files(root)
    proc = invoke_memory(root, "flush", "--offline", input=SMALL_TALK)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == FLUSH_OK
    assert _files(root) == before
    assert run_git(root, "status", "--porcelain").stdout == ""


def test_a_second_flush_writes_nothing_new(memrepo_root: Path, tmp_path: Path) -> None:
    root = memrepo_root
    sess = _session(tmp_path)
    assert invoke_memory(root, "flush", "--session", str(sess), "--offline").returncode == 0
    after_first = _files(root)
    proc = invoke_memory(root, "flush", "--session", str(sess), "--offline", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == FLUSH_OK and out["written"] == []
    assert out["edits"] and all(e["action"] == "NONE" for e in out["edits"])
    assert _files(root) == after_first


def test_transcript_in_the_repo_cites_its_session(memrepo_root: Path) -> None:
    root = memrepo_root
    rel = "raw/conversations/2026/03/03/1400-ses_fl01-cache-layer.md"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(TRANSCRIPT, encoding="utf-8")
    run_git(root, "add", rel)
    run_git(root, "commit", "-q", "--no-verify", "-m", "transcript")
    proc = invoke_memory(root, "flush", "--session", rel, "--offline", "--dry-run")
    assert proc.returncode == 0 and "would write" in proc.stdout
    assert run_git(root, "status", "--porcelain").stdout == ""  # a dry run writes nothing
    proc = invoke_memory(root, "flush", "--session", rel, "--offline")
    assert proc.returncode == 0, proc.stderr
    journal = (root / f"knowledge/journal/{TODAY}.md").read_text(encoding="utf-8")
    assert "### Flush: Cache layer" in journal
    assert "Decided: Let's use Redis for the session cache. [src: 2026/03/03/1400-ses_fl01]" in (
        journal
    )
    assert "sessions:\n- ses_fl01" in journal
    assert "Flush the cache after every schema change." in (
        root / "knowledge/memory/MEMORY.md"
    ).read_text(encoding="utf-8")
    _assert_valid(root)


# --- the LLM path: the real SDK against a fake transport --------------------------------


@pytest.fixture
def llm_for(memrepo_root: Path) -> Callable[[list[str], list[dict]], LLM]:
    def make(answers: list[str], calls: list[dict]) -> LLM:
        return LLM.from_config(load_config(memrepo_root), client=fake_anthropic(answers, calls))

    return make


CANNED = {
    "notes": [
        {"type": "decision", "text": "The team chose PostgreSQL 16 for the ledger database."},
        {"type": "lesson", "text": "Run EXPLAIN on every migration before it ships."},
        {
            "type": "person",
            "text": "Ana Souza reviews ledger migrations.",
            "person": "Ana Souza",
            "relationship": "colleague",
        },
        {"type": "task", "text": "Agree the rollout date with Ana Souza."},
    ]
}


def test_llm_path_writes_what_the_model_says(
    memrepo_root: Path, tmp_path: Path, llm_for: Callable[[list[str], list[dict]], LLM]
) -> None:
    root = memrepo_root
    calls: list[dict] = []
    llm = llm_for([json.dumps(CANNED)], calls)
    sess = _session(tmp_path)
    report = flush(root, sess.read_text(encoding="utf-8"), path=sess, llm=llm)
    assert report.mode == "llm" and report.status == "written" and report.fallback is None
    assert len(calls) == 1
    sent = json.dumps(calls[0])
    assert "PostgreSQL 16" in sent and SECRET not in sent  # redacted before it is sent
    assert "FLUSH_OK" in calls[0]["system"][0]["text"]
    journal = (root / f"knowledge/journal/{TODAY}.md").read_text(encoding="utf-8")
    memory = (root / "knowledge/memory/MEMORY.md").read_text(encoding="utf-8")
    assert "Decided: The team chose PostgreSQL 16 for the ledger database." in journal
    assert "Open: Agree the rollout date with Ana Souza." in journal
    assert "The team chose PostgreSQL 16" in memory.split("## Key Decisions")[1]
    assert "Run EXPLAIN on every migration" in memory.split("## Lessons Learned")[1]
    person = (root / "knowledge/people/ana-souza.md").read_text(encoding="utf-8")
    assert "Ana Souza reviews ledger migrations." in person
    # nothing from the heuristics: the model's answer is what was written
    assert "Turns out" not in journal + memory
    assert llm.usage.calls == 1
    _assert_valid(root)


def test_llm_empty_answer_is_flush_ok(
    memrepo_root: Path, tmp_path: Path, llm_for: Callable[[list[str], list[dict]], LLM]
) -> None:
    calls: list[dict] = []
    llm = llm_for(['{"notes": []}'], calls)
    report = flush(memrepo_root, SMALL_TALK, llm=llm)
    assert report.status == FLUSH_OK and report.mode == "llm" and summary(report) == FLUSH_OK
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""


def test_malformed_llm_answer_falls_back_offline_and_says_so(
    memrepo_root: Path,
    tmp_path: Path,
    llm_for: Callable[[list[str], list[dict]], LLM],
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = memrepo_root
    calls: list[dict] = []
    llm = llm_for(["Sure! Here are the notes: decisions...", '{"notes": "none"}'], calls)
    sess = _session(tmp_path)
    report = flush(root, sess.read_text(encoding="utf-8"), path=sess, llm=llm)
    assert len(calls) == 2  # one retry with the error quoted back, then the fallback
    assert report.mode == "offline" and report.fallback and "malformed" in report.fallback
    assert "offline heuristics" in summary(report)
    assert "offline path" in capsys.readouterr().err
    journal = (root / f"knowledge/journal/{TODAY}.md").read_text(encoding="utf-8")
    assert "Decided: We decided to use PostgreSQL 16 for the ledger instead of MySQL." in journal
    _assert_valid(root)


def test_a_changed_fact_supersedes_the_old_line_instead_of_replacing_it(
    memrepo_root: Path, tmp_path: Path
) -> None:
    from memrepo.entries import SUPERSEDED_LINE

    root = memrepo_root
    first = "We decided to keep the session cache TTL at 15 minutes in Redis."
    second = "We decided to keep the session cache TTL at 30 minutes in Redis for now."
    for name, text in (("sess1.json", first), ("sess2.json", second)):
        p = tmp_path / name
        p.write_text(json.dumps([{"role": "user", "content": text}]), encoding="utf-8")
        proc = invoke_memory(root, "flush", "--session", str(p), "--offline")
        assert proc.returncode == 0, proc.stderr
    memory = (root / "knowledge/memory/MEMORY.md").read_text(encoding="utf-8")
    decisions = memory.split("## Key Decisions")[1].split("\n## ")[0]
    old = [x for x in decisions.splitlines() if "15 minutes" in x]
    assert len(old) == 1 and SUPERSEDED_LINE.match(old[0]), decisions
    assert "[src: sess1.json]" in old[0] and f"(superseded {TODAY} by: " in old[0]
    assert f"- {TODAY}: {second} [src: sess2.json]" in decisions
    assert str(tmp_path) not in memory  # sources are never absolute paths outside the repo
    # an update that only adds detail keeps its in-place form, sources appended
    more = "We decided to keep the session cache TTL at 30 minutes in Redis for now, per Ana."
    p = tmp_path / "sess3.json"
    p.write_text(json.dumps([{"role": "user", "content": more}]), encoding="utf-8")
    assert invoke_memory(root, "flush", "--session", str(p), "--offline").returncode == 0
    decisions = (root / "knowledge/memory/MEMORY.md").read_text(encoding="utf-8")
    assert f"{more} [src: sess2.json; sess3.json]" in decisions
    _assert_valid(root)


def test_a_session_that_is_not_utf8_is_a_one_line_error(memrepo_root: Path, tmp_path: Path) -> None:
    bad = tmp_path / "y.md"
    bad.write_bytes(b"## 09:00 \xe2\x80\x94 user\nWe decided on caf\xe9 au lait.\n")
    proc = invoke_memory(memrepo_root, "flush", "--session", str(bad), "--offline")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr == f"memory: {bad}:2: not UTF-8 text (byte 0xe9)\n"
    piped = subprocess.run(
        ["memory", "flush", "--offline"], cwd=memrepo_root, input=bad.read_bytes(),
        capture_output=True,
    )  # fmt: skip
    assert piped.returncode == 1
    assert piped.stderr.decode() == "memory: stdin:2: not UTF-8 text (byte 0xe9)\n"
    assert run_git(memrepo_root, "status", "--porcelain").stdout == ""


def test_a_decision_the_flush_wrote_is_not_written_again_by_the_extraction(
        memrepo_root: Path) -> None:
    """After a flush and the session-end extraction, one decision was twice in the day's
    journal: the flush's `### Flush:` section and the extraction's own section."""
    root = memrepo_root
    day = dt.date.today()
    rel = f"raw/conversations/{day:%Y/%m/%d}/1400-ses_fl02-cache-layer.md"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(TRANSCRIPT.replace("ses_fl01", "ses_fl02").replace(
        "started: 2026-03-03T14:00:00+01:00",
        f"started: {day}T14:00:00+00:00\nended: {day}T14:10:00+00:00"), encoding="utf-8")
    run_git(root, "add", rel)
    run_git(root, "commit", "-q", "--no-verify", "-m", "transcript")
    assert invoke_memory(root, "flush", "--session", rel, "--offline").returncode == 0
    proc = invoke_memory(root, "extract", rel, "--offline")
    assert proc.returncode == 0, proc.stderr
    journal = (root / f"knowledge/journal/{day}.md").read_text(encoding="utf-8")
    assert journal.count("use Redis for the session cache") == 1, journal
