"""`memory hook claude-code EVENT` as Claude Code runs it: a process, the payload on stdin.

The replay drives one recorded session (tests/fixtures/agents/claude-code/, a Claude Code
JSONL log written in six stages: a reply streamed over records sharing message.id and cut
between two Stop hooks, tool calls and results, a compaction boundary and its summary, a
sub-agent record, an AWS key) through SessionStart → UserPromptSubmit ×5 → PreCompact →
SessionStart(compact) → Stop → SessionEnd, the log growing between events, and checks the
end state: one closed, committed, redacted transcript holding every turn once (byte for
byte what an import of the finished log renders), the flush's journal entry, and no
passage injected twice. The fail-open tests break the repo in each way a hook meets.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo.agents import harness as H
from memrepo.agents import state
from memrepo.context.compiler import CompileRequest, compile_context
from memrepo.documents import parse_document
from memrepo.index.indexer import sync
from memrepo.repo import MemoryRepo
from memrepo.transcript.importers import claude_code
from memrepo.transcript.importers.run import ImportContext
from memrepo.transcript.render import render_import, resolve_timezone

FIXTURE = Path(__file__).parent / "fixtures" / "agents" / "claude-code"
STAGES = sorted(FIXTURE.glob("*.jsonl"))
SID = "7f3c2a1e-5b4d-4e8f-9a6b-0c1d2e3f4a5b"
PROMPTS = [
    "Let's set up the ledger service database. We decided to use PostgreSQL for the ledger "
    "database because we need strict transactions.",
    "Here are the staging credentials for the migration job: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7"
    "EXAMPLE. Use them only in CI.",
    "Remember that Marta is my colleague who owns the billing service. Next step is the "
    "migration for the accounts table.",
    "Now add an index on accounts.created_at for the monthly report query.",
    "Thanks, that's all for today.",
]
KNOWLEDGE = {
    "knowledge/memory/MEMORY.md": (
        "---\ntype: memory\n---\n\n# Core Memory\n\n## Key Decisions\n"
        "- 2026-03-01: The ledger service stores money as integer cents, never floats.\n"),
    "knowledge/reference/ledger-database.md": (
        "---\ntype: reference\n---\n\n# Ledger database\n\n"
        "The ledger database runs PostgreSQL 16 on db-ledger-1; the accounts table holds one "
        "row per customer account and is partitioned by created_at month.\n\n"
        "The monthly report query scans accounts by created_at: keep an index on it.\n"),
    "knowledge/procedures/ci-secrets.md": (
        "---\ntype: procedure\n---\n\n# CI secrets\n\n"
        "Staging credentials for the migration job live in the CI secret store; rotate the "
        "AWS key every 90 days and never commit credentials.\n"),
    "knowledge/reference/espresso.md": (
        "---\ntype: reference\n---\n\n# Espresso\n\n"
        "Grind 18 g of beans fine, pull 36 g in 28 seconds at 93 degrees.\n"),
}
#: ``<!-- P3 knowledge: PATH:A-B -->``, ``<!-- P3 2026/03/05/1410-cc-0123456789ab:A-B agent -->`` (a
#: transcript, by its short reference) and ``<!-- :A-B -->`` (the same file again).
MARKER = re.compile(r"<!-- (?:P[0-3] (?:\w+: )?(\S+))?:(\d+)-(\d+)")
TRANSCRIPT_REF = re.compile(r"^\d{4}/\d\d/\d\d/\d{4}-")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The hook's environment: offline (no model), its own user state directory."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("ANTHROPIC_API_KEY", H.GUARD_ENV, "MEMORY_REPO")}
    e["XDG_STATE_HOME"] = str(tmp_path / "state")
    return e


def hook(root: Path, event: str, payload: dict | str, env: dict[str, str],
         harness: str = "claude-code") -> str:
    """Run the hook as the agent does; it must exit 0 quickly. Its stdout."""
    data = payload if isinstance(payload, str) else json.dumps(
        {"hook_event_name": event, **payload})
    proc = subprocess.run(["memory", "--repo", str(root), "hook", harness, event], input=data,
                          capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def entries(root: Path) -> list[dict]:
    return state.read_log(root / state.LOG)


def wait_detached(root: Path, count: int, timeout: float = 60.0) -> list[dict]:
    """Poll the agents log until ``count`` detached jobs have logged their outcome."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done = [e for e in entries(root) if e.get("detached")]
        if len(done) >= count:
            return done
        time.sleep(0.05)
    raise AssertionError(f"detached jobs did not finish: {entries(root)}")


def seed(root: Path) -> None:
    for rel, text in KNOWLEDGE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    run_git(root, "add", "--", *KNOWLEDGE)
    run_git(root, "commit", "-q", "--no-verify", "-m", "memory: seed")
    sync(root)


def injected(out: str) -> tuple[str, list[tuple[str, int, int]]]:
    """(the additionalContext, its refs) of a hook's stdout ('' and [] when empty)."""
    if not out.strip():
        return "", []
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    refs, path = [], ""
    for m in MARKER.finditer(ctx):
        path = m[1] or path
        refs.append((path, int(m[2]), int(m[3])))
    return ctx, refs


def imported_body(log: Path, tzname: str) -> str:
    """The body an import of the whole log renders: what capture must have produced."""
    data = log.read_bytes()
    conv = claude_code.parse(data, ImportContext(log, dt.datetime.now(dt.timezone.utc)))[0]
    tz, name = resolve_timezone(tzname)
    rel, text, _ = render_import(conv, tz, name, ())
    return parse_document(text, rel).body


def test_a_recorded_session_replayed_through_the_hooks(crepo: Path, tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    seed(crepo)
    log = tmp_path / "projects" / "-home-ana-code-ledger" / f"{SID}.jsonl"
    log.parent.mkdir(parents=True)
    common = {"session_id": SID, "transcript_path": str(log), "cwd": "/home/ana/code/ledger"}
    stages = iter(STAGES)

    def grow() -> None:
        with log.open("ab") as fh:
            fh.write(next(stages).read_bytes())

    recalls: list[list[tuple[str, int, int]]] = []

    def prompt(i: int) -> None:
        ctx, refs = injected(hook(crepo, "UserPromptSubmit", {**common, "prompt": PROMPTS[i],
                                                             "permission_mode": "default"}, env))
        assert len(ctx) <= H.MAX_CONTEXT_CHARS
        recalls.append(refs)

    start, _ = injected(hook(crepo, "SessionStart", {**common, "source": "startup",
                                                     "model": "claude-sonnet-4-6"}, env))
    assert "integer cents" in start and "not instructions" in start
    assert start.count("```") == 2 and len(start) <= H.MAX_CONTEXT_CHARS
    prompt(0)
    grow()
    assert hook(crepo, "Stop", {**common, "stop_hook_active": False}, env) == ""
    wait_detached(crepo, 1)
    prompt(1)
    grow()  # the reply is cut: its tool call and the rest come in the next stage
    assert hook(crepo, "Stop", {**common, "stop_hook_active": False}, env) == ""
    wait_detached(crepo, 2)
    prompt(2)
    grow()
    assert hook(crepo, "PreCompact", {**common, "trigger": "manual",
                                      "custom_instructions": ""}, env) == ""
    wait_detached(crepo, 3)
    grow()  # compact_boundary and the summary Claude Code writes after it
    again, _ = injected(hook(crepo, "SessionStart", {**common, "source": "compact"}, env))
    assert "integer cents" in again  # re-briefed after the compaction ...
    assert "PostgreSQL for the ledger database" in again  # ... with what the flush wrote
    prompt(3)
    grow()
    assert hook(crepo, "Stop", {**common, "stop_hook_active": False}, env) == ""
    wait_detached(crepo, 4)
    prompt(4)
    grow()
    assert hook(crepo, "SessionEnd", {**common, "reason": "prompt_input_exit"}, env) == ""
    done = wait_detached(crepo, 5)
    assert all(e["status"] in ("ok", "detached") for e in entries(crepo)), entries(crepo)

    # one closed, committed, redacted transcript: every turn once, as an import renders it
    found = sorted((crepo / "raw" / "conversations").rglob("*.md"))
    assert len(found) == 1
    rel = found[0].relative_to(crepo).as_posix()
    doc = parse_document(found[0].read_text(encoding="utf-8"), rel)
    assert doc.meta["session_id"].startswith("cc-") and doc.meta["ended"] is not None
    assert doc.meta["turns"] == 10 and doc.meta["redactions"] == 1
    assert run_git(crepo, "status", "--porcelain", "--", rel).stdout == ""
    assert run_git(crepo, "ls-files", "--", rel).stdout.strip() == rel
    assert doc.body == imported_body(log, doc.meta["timezone"])
    text = found[0].read_text(encoding="utf-8")
    assert "AKIA" not in text and "[REDACTED:" in text
    for p in (PROMPTS[0], PROMPTS[2], PROMPTS[3], PROMPTS[4]):
        assert text.count(p) == 1
    assert "being continued" not in text and "Sub-agent" not in text  # summary, sidechain
    assert "Check config first" not in text  # thinking
    assert text.count("> [tool:Bash]") == 1 and text.count("Let me check how CI") == 1

    # the flush's journal entry, committed before the compaction
    journal = crepo / "knowledge" / "journal" / f"{dt.date.today()}.md"
    jtext = journal.read_text(encoding="utf-8")
    assert "### Flush:" in jtext and "Decided: We decided to use PostgreSQL" in jtext
    subjects = run_git(crepo, "log", "--format=%s").stdout.splitlines()
    assert any(s.startswith("flush: ") for s in subjects)
    assert any(s.startswith("conversation: ") for s in subjects)
    # extraction ran at the end (lifecycle.extraction_trigger: on_session_end)
    assert "extract" in done[-1] and any(s.startswith("extract: ") for s in subjects)

    # recall: something was injected, nothing twice, the unrelated note never
    refs = [r for batch in recalls for r in batch]
    assert len(recalls[0]) >= 1 and sum(1 for b in recalls if b) >= 2
    assert len(refs) == len(set(refs))
    assert "knowledge/reference/espresso.md" not in {p for p, _, _ in refs}
    assert recalls[4] == []  # "Thanks, that's all for today." clears no bar
    db = "knowledge/reference/ledger-database.md"
    assert sum(1 for p, _, _ in refs if p == db) == 1
    # ... though the prompt of the fourth recall finds it again: it was held back
    shown_before = {p for b in recalls[:3] for p, _, _ in b}
    assert db in shown_before
    again = compile_context(MemoryRepo(crepo), CompileRequest(
        PROMPTS[3], slots=frozenset({2, 3}), record_hits=False))
    assert db in {s.path for s in again.sections}
    assert db not in {p for p, _, _ in recalls[3]}


def test_a_resumed_session_continues_in_a_new_part(crepo: Path, tmp_path: Path,
                                                   env: dict[str, str]) -> None:
    """A session closed at SessionEnd and resumed: its new turns go to part 2, none twice."""
    log = tmp_path / f"{SID}.jsonl"
    log.write_bytes(b"".join(p.read_bytes() for p in STAGES[:3]))
    common = {"session_id": SID, "transcript_path": str(log)}
    assert hook(crepo, "SessionEnd", {**common, "reason": "other"}, env) == ""
    wait_detached(crepo, 1)
    # its closed, committed first part is searchable, but never recalled to itself
    ask = {"prompt": "which database does the ledger use, PostgreSQL or SQLite?"}
    mine = injected(hook(crepo, "UserPromptSubmit", {**common, **ask}, env))[1]
    theirs = injected(hook(crepo, "UserPromptSubmit", {"session_id": "other", **ask}, env))[1]
    assert any(TRANSCRIPT_REF.match(p) for p, _, _ in theirs)
    assert mine and not any(TRANSCRIPT_REF.match(p) for p, _, _ in mine)
    with log.open("ab") as fh:
        fh.write(b"".join(p.read_bytes() for p in STAGES[3:]))
    hook(crepo, "SessionStart", {**common, "source": "resume"}, env)
    assert hook(crepo, "Stop", common, env) == ""
    wait_detached(crepo, 2)
    found = sorted((crepo / "raw" / "conversations").rglob("*.md"))
    assert len(found) == 2
    first, second = (f.read_text(encoding="utf-8") for f in found)
    assert "ended:" in first and "ended:" not in second
    assert "session_id: cc-" in second and ".2\n" in second.split("---")[1]
    assert PROMPTS[2] in first and PROMPTS[2] not in second
    assert PROMPTS[3] in second and PROMPTS[3] not in first


def test_sweep_imports_what_no_hook_captured(crepo: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    log = projects / "-home-ana-code-ledger" / f"{SID}.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"".join(p.read_bytes() for p in STAGES[:2]))
    (log.parent / SID / "subagents").mkdir(parents=True)
    (log.parent / SID / "subagents" / "agent-1.jsonl").write_bytes(STAGES[0].read_bytes())
    old = time.time() - 5 * 3600
    os.utime(log, (old, old))
    out = run_memory(crepo, "capture", "sweep", "--dir", str(projects))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("closed") and "sweep" not in out.stderr
    # grown since (a resumed session): only the new turns, in a part of their own
    with log.open("ab") as fh:
        fh.write(STAGES[2].read_bytes())
    out = run_memory(crepo, "capture", "sweep", "--dir", str(projects), "--idle-hours", "1")
    assert out.returncode == 0 and out.stdout.startswith("appended"), out.stdout
    assert run_memory(crepo, "capture", "sweep", "--dir", str(projects)).stdout == ""
    found = sorted((crepo / "raw" / "conversations").rglob("*.md"))
    assert len(found) == 2
    both = "".join(f.read_text(encoding="utf-8") for f in found)
    assert both.count(PROMPTS[0]) == 1 and both.count(PROMPTS[2]) == 1
    # a log deleted (Claude Code's 30 days) while its session is open: closed
    other = projects / "p2" / "other.jsonl"
    other.parent.mkdir()
    other.write_bytes(STAGES[0].read_bytes().replace(SID.encode(), b"0" * len(SID)))
    out = run_memory(crepo, "capture", "sweep", "--dir", str(projects))
    assert out.stdout.startswith("appended"), out.stdout
    other.unlink()
    out = run_memory(crepo, "capture", "sweep", "--dir", str(projects))
    assert out.stdout.startswith("closed"), out.stdout
    assert len(list((crepo / "raw" / "conversations").rglob("*.md"))) == 3
    # the scheduled form does nothing in a repo no agent hook has used
    quiet = run_memory(crepo, "capture", "sweep", "--scheduled", "--dir", str(projects))
    assert quiet.returncode == 0 and quiet.stdout == ""
    from memrepo.lifecycle.schedule import jobs

    assert ("capture", "sweep", "--scheduled") in {s for j in jobs(crepo) for s in j.steps}


def test_an_imported_log_that_grew_gets_only_its_new_turns(crepo: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    log = projects / "p" / f"{SID}.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"".join(p.read_bytes() for p in STAGES[:3]))
    imported = run_memory(crepo, "capture", "import", "--format", "claude-code", str(log))
    assert imported.returncode == 0, imported.stderr
    with log.open("ab") as fh:
        fh.write(b"".join(p.read_bytes() for p in STAGES[3:]))
    out = run_memory(crepo, "capture", "sweep", "--dir", str(projects), "--idle-hours", "0")
    assert out.returncode == 0, out.stderr
    found = sorted((crepo / "raw" / "conversations").rglob("*.md"))
    assert len(found) == 2
    both = "".join(f.read_text(encoding="utf-8") for f in found)
    for p in PROMPTS[2:]:
        assert both.count(p) == 1


def test_gemini_and_codex_turns_come_from_the_payloads(crepo: Path, env: dict[str, str]
                                                       ) -> None:
    hook(crepo, "BeforeAgent", {"session_id": "g1", "prompt": "hello gemini"}, env,
         harness="gemini")
    hook(crepo, "AfterAgent", {"session_id": "g1", "prompt": "hello gemini",
                               "prompt_response": "hello back"}, env, harness="gemini")
    hook(crepo, "UserPromptSubmit", {"session_id": "c1", "prompt": "hi codex, the key is "
                                     "AKIAIOSFODNN7EXAMPLE", "model": "gpt-5", "turn_id": "t1"},
         env, harness="codex")
    pending = state.prompt_queue(crepo, "codex", "c1")
    assert "AKIA" not in pending.read_text(encoding="utf-8")  # redacted before it is kept
    hook(crepo, "Stop", {"session_id": "c1", "last_assistant_message": "hi there",
                         "model": "gpt-5", "turn_id": "t1"}, env, harness="codex")
    wait_detached(crepo, 2)
    hook(crepo, "SessionEnd", {"session_id": "g1", "reason": "exit"}, env, harness="gemini")
    wait_detached(crepo, 3)
    texts = {f.name: f.read_text(encoding="utf-8")
             for f in (crepo / "raw" / "conversations").rglob("*.md")}
    gem = next(t for n, t in texts.items() if "-gemini-" in n)
    cod = next(t for n, t in texts.items() if "-codex-" in n)
    assert "hello gemini" in gem and "hello back" in gem and "ended:" in gem
    assert "hi codex" in cod and "hi there" in cod and "ended:" not in cod
    assert "AKIA" not in cod and "[REDACTED:" in cod and not pending.exists()
    assert all(e["status"] in ("ok", "detached") for e in entries(crepo)), entries(crepo)


# --- fail open -------------------------------------------------------------------------


def doctor(root: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(["memory", "--repo", str(root), "doctor"], capture_output=True,
                          text=True, env=env)
    return proc.stdout + proc.stderr


def test_a_missing_repo_fails_open_and_shows_in_doctor(crepo: Path, tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    gone = tmp_path / "nowhere"
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert hook(gone, event, {"session_id": "s", "prompt": "what about the ledger?"},
                    env) == ""
    assert not gone.exists()
    lost = state.read_log(Path(env["XDG_STATE_HOME"]) / "memrepo" / "agents.log")
    assert [e["status"] for e in lost] == ["failed"] * 3 and str(gone) in lost[0]["repo"]
    report = doctor(crepo, env)
    assert "[FAIL] agent hooks without a repo: 3 hook call(s)" in report, report


def test_a_broken_config_fails_open_and_shows_in_doctor(crepo: Path, env: dict[str, str]
                                                        ) -> None:
    (crepo / "memory-config.yaml").write_text("context_compiler: [\n", encoding="utf-8")
    assert hook(crepo, "SessionStart", {"session_id": "s", "source": "startup"}, env) == ""
    assert hook(crepo, "UserPromptSubmit", {"session_id": "s", "prompt": "the ledger db"},
                env) == ""
    failed = [e for e in entries(crepo) if e["status"] == "failed"]
    assert len(failed) == 2 and "memory-config.yaml" in failed[0]["detail"]
    report = doctor(crepo, env)
    assert "[FAIL] agent hooks: 2 failed hook call(s)" in report, report


@pytest.mark.parametrize("stdin", ["not json {", "[1, 2]", "", '{"session_id": 5}'])
def test_garbage_on_stdin_fails_open(crepo: Path, env: dict[str, str], stdin: str) -> None:
    for event in ("UserPromptSubmit", "SessionEnd"):
        assert hook(crepo, event, stdin, env) == ""
    assert [e["status"] for e in entries(crepo)] == ["failed", "failed"]
    assert "agent hooks" in doctor(crepo, env)


def test_a_stdin_that_never_closes_does_not_hang_the_hook(crepo: Path, env: dict[str, str]
                                                          ) -> None:
    cmd = ["memory", "--repo", str(crepo), "hook", "claude-code", "UserPromptSubmit"]
    # a whole payload without EOF: answered at once
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert p.stdin is not None
    p.stdin.write(b'{"session_id": "s", "prompt": "ok"}')
    p.stdin.flush()
    t0 = time.monotonic()
    assert p.wait(timeout=10) == 0 and time.monotonic() - t0 < 1.5
    p.stdin.close()
    # nothing at all: given up after the stdin timeout
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert p.wait(timeout=10) == 0
    assert p.stdout is not None and p.stdout.read() == b""
    assert p.stdin is not None
    p.stdin.close()
    assert [e["status"] for e in entries(crepo)] == ["ok", "failed"]


def test_a_held_session_lock_fails_open_and_shows_in_doctor(crepo: Path, tmp_path: Path,
                                                            env: dict[str, str]) -> None:
    log = tmp_path / f"{SID}.jsonl"
    log.write_bytes(STAGES[0].read_bytes())
    common = {"session_id": SID, "transcript_path": str(log)}
    hook(crepo, "Stop", common, env)
    first = wait_detached(crepo, 1)[0]
    sid = Path(first["transcript"]).name.split("-session")[0][5:]
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\n"
         "from memrepo.transcript.session import session_lock\n"
         f"with session_lock(Path({str(crepo)!r}), {sid!r}):\n"
         "    print('held', flush=True)\n    sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with log.open("ab") as fh:
            fh.write(STAGES[1].read_bytes())
        quick = {**env, "MEMREPO_HOOK_LOCK_WAIT": "0.3"}
        t0 = time.monotonic()
        assert hook(crepo, "Stop", common, quick) == ""
        assert time.monotonic() - t0 < 1.0
        failed = wait_detached(crepo, 2)[-1]
        assert failed["status"] == "failed" and "locked" in failed["detail"]
        assert "[FAIL] agent hooks: 1 failed hook call(s)" in doctor(crepo, env)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    hook(crepo, "Stop", common, env)  # the next Stop catches up: nothing was lost
    assert wait_detached(crepo, 3)[-1]["status"] == "ok"
    text = next((crepo / "raw" / "conversations").rglob("*.md")).read_text(encoding="utf-8")
    assert PROMPTS[1][:40] in text
    assert re.search(r"\[warn\] agent hooks: 1 failed .*later calls succeeded",
                     doctor(crepo, env))


def test_the_guard_keeps_memrepo_own_processes_from_firing_hooks(crepo: Path,
                                                                 env: dict[str, str]) -> None:
    out = hook(crepo, "SessionStart", {"session_id": "s"}, {**env, H.GUARD_ENV: "1"})
    assert out == "" and entries(crepo) == []


def test_click_form_and_events_without_work(crepo: Path, env: dict[str, str]) -> None:
    """An event memrepo does nothing at (and so never installs) is logged, not an error;
    ``--repo`` may come after the event too; ``memory hook --help`` names the agents."""
    proc = subprocess.run([sys.executable, "-m", "memrepo", "hook", "claude-code",
                           "PostToolUse", "--repo", str(crepo)], input='{"session_id": "s"}',
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout == ""
    assert entries(crepo)[-1]["status"] == "failed"
    assert "nothing to do" in entries(crepo)[-1]["detail"]
    helptext = run_memory(crepo, "hook", "--help").stdout
    assert "claude-code" in helptext


def test_deadline_raises_in_time() -> None:
    from memrepo.agents.events import HookTimeout, deadline

    t0 = time.monotonic()
    with pytest.raises(HookTimeout), deadline(0.05):
        time.sleep(2)
    assert time.monotonic() - t0 < 1


def test_recall_is_once_per_session_where_it_stays_in_the_conversation(
        crepo: Path, env: dict[str, str]) -> None:
    """Claude Code keeps every injection: the same prompt twice gets its passages once.
    Gemini's BeforeAgent context lasts one turn: it gets them each time."""
    seed(crepo)
    ask = {"prompt": PROMPTS[3]}
    cc = [injected(hook(crepo, "UserPromptSubmit", {"session_id": "a", **ask}, env))[1]
          for _ in range(2)]
    other = injected(hook(crepo, "UserPromptSubmit", {"session_id": "b", **ask}, env))[1]
    gem = [injected(hook(crepo, "BeforeAgent", {"session_id": "a", **ask}, env,
                         harness="gemini"))[1] for _ in range(2)]
    assert cc[0] and cc[1] == [] and other == cc[0]
    assert gem[0] and gem[1] == gem[0]


def test_the_prompt_hook_takes_its_recall_from_the_resident_server(
        crepo: Path, env: dict[str, str]) -> None:
    """With a resident server running, the hook asks it for the recall (its modules are
    loaded, its model at hand): the same passages as the hook's own, once per session."""
    from memrepo.agents.resident import SERVICES
    from memrepo.index.embedders import HashEmbedder
    from memrepo.resident.server import Server

    seed(crepo)
    ask = {"prompt": PROMPTS[3]}
    here = injected(hook(crepo, "UserPromptSubmit", {"session_id": "a", **ask}, env))
    srv = Server(crepo, HashEmbedder(), services=SERVICES)
    srv.start()
    try:
        served = injected(hook(crepo, "UserPromptSubmit", {"session_id": "b", **ask}, env))
        again = injected(hook(crepo, "UserPromptSubmit", {"session_id": "b", **ask}, env))
    finally:
        srv.stop()
    assert here[1] and served == here
    assert again == ("", []) and srv.answered == {"recall": 2}
    vias = [e.get("via") for e in entries(crepo) if e["event"] == "UserPromptSubmit"]
    assert vias == ["here", "server", "server"]


@pytest.mark.parametrize("reply", [
    b'{"ok": false, "error": "unknown op \'recall\' (ping, embed, nearest)"}\n',  # older
    b"not json\n",
    b"",  # hangs up
])
def test_a_server_that_does_not_recall_leaves_it_to_the_hook(
        crepo: Path, env: dict[str, str], reply: bytes) -> None:
    import socket
    import threading

    from memrepo.index import remote

    seed(crepo)
    ask = {"session_id": "a", "prompt": PROMPTS[3]}
    expected = injected(hook(crepo, "UserPromptSubmit", {**ask, "session_id": "x"}, env))
    path = remote.socket_path(remote.serve_dir(crepo))
    remote.private_dir(path.parent)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def answer() -> None:
        conn, _ = listener.accept()
        conn.recv(1 << 20)
        conn.sendall(reply)
        conn.close()

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        got = injected(hook(crepo, "UserPromptSubmit", ask, env))
    finally:
        t.join(5)
        listener.close()
        path.unlink(missing_ok=True)
    assert expected[1] and got == expected
    assert entries(crepo)[-1]["via"] == "here"


def test_recall_keeps_the_best_ranked_passages_in_the_compiles_order() -> None:
    """Recall keeps what fits its characters by rank (the order the compile placed
    them), not the leading sections: a file's passages read in the file's order, so its
    early turns would push out the next file's best passage."""
    from memrepo.agents import recall
    from memrepo.context.sections import Section

    a = "raw/conversations/2026/03/01/1000-ses_a-a.md"
    turn = "## 10:00 — user\n" + "the kayak trip " * 8
    laid_out = [  # the compile's order: file a (best rank 1) in its own order, then b
        Section(3, "knowledge", a, 10, 11, turn, "", placed=2),
        Section(3, "knowledge", a, 20, 21, turn, "", placed=0),
        Section(3, "knowledge", a, 30, 31, turn, "", placed=3),
        Section(3, "knowledge", "knowledge/reference/b.md", 5, 6, "# Kayak\nblue", "", placed=1),
    ]
    room = sum(len(s.render()) + 2 for s in laid_out[1::2]) + 40
    kept = recall._take(laid_out, room)
    assert [(s.path, s.start_line) for s in kept] == [(a, 20), ("knowledge/reference/b.md", 5)]


def test_recall_asks_for_the_passages_it_can_show_not_compiles_150(
        crepo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall shows at most RECALL_MAX_CHARS: its compile asks P3 for RECALL_PASSAGES
    ranked passages, so the hook's search takes a short search's nearest vectors, not the
    300 that compile's 150 passages take (search.nearest_k)."""
    from memrepo.agents import recall
    from memrepo.context import retrieve as retr
    from memrepo.index.search import nearest_k

    seed(crepo)
    asked: list[int] = []
    real = retr.retrieve

    def spy(root: Path, query: str, cfg: dict, limit: int = retr.LIMIT, now: object = None,
            engine: object = None):
        asked.append(limit)
        return real(root, query, cfg, limit, now, engine)  # type: ignore[arg-type]

    monkeypatch.setattr(retr, "retrieve", spy)
    text = recall.recall(crepo, "claude-code", {"session_id": "x", "prompt": PROMPTS[3]})
    assert text and asked == [recall.RECALL_PASSAGES]
    assert nearest_k(recall.RECALL_PASSAGES) == nearest_k(10) < nearest_k(retr.LIMIT)


def test_the_hooks_deadline_counts_from_the_process_start() -> None:
    """The agent's timeout counts the interpreter's start and the imports (a second or
    more on a busy machine): the hook's own deadline must too."""
    import subprocess
    import sys

    code = ("import time; time.sleep(0.6); from memrepo.agents.events import started_ago; "
            "print(started_ago())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert 0.55 <= float(out.stdout) < 30, out


def test_the_resident_server_briefs_the_session_as_the_hook_would(
        crepo: Path, env: dict[str, str]) -> None:
    """SessionStart asks the clone's resident server for the briefing: it has the
    compiler imported, the hook need not (bench/clients/run.py: SessionStart was most of
    a `claude -p` start's cost). Without a server the hook briefs itself, the same text."""
    from memrepo.agents.resident import SERVICES
    from memrepo.index.embedders import HashEmbedder
    from memrepo.resident.server import Server

    seed(crepo)
    here = injected(hook(crepo, "SessionStart", {"session_id": "a", "source": "startup"}, env))
    srv = Server(crepo, HashEmbedder(), services=SERVICES)
    srv.start()
    try:
        served = injected(hook(crepo, "SessionStart", {"session_id": "b", "source": "startup"},
                               env))
    finally:
        srv.stop()
    assert here[1] and served == here
    assert srv.answered.get("brief") == 1
    vias = [e.get("via") for e in entries(crepo) if e["event"] == "SessionStart"]
    assert vias == ["here", "server"]


def test_sweep_takes_only_this_repos_logs_in_their_hooks_namespace(
        crepo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log no hook read is this repo's only if the memrepo hooks Claude Code runs in its
    folder name this repo (or none runs there), and its turns go in their namespace."""
    from memrepo.agents import install as agents

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    memory = str(Path(sys.executable).with_name("memory"))
    projects = tmp_path / "projects"
    logs = {}
    for name, repo, ns in (("alice", str(crepo), "alice"), ("theirs", "/elsewhere/mem", None),
                           ("nohooks", None, None)):
        folder = tmp_path / name
        folder.mkdir()
        if repo:
            agents.apply(agents.plan("claude-code", "local", memory=memory, repo=repo,
                                     home=home, project=folder, namespace=ns), home)
        sid = f"{name:0<8}-0000-4000-8000-000000000000"
        log = projects / name / f"{sid}.jsonl"
        log.parent.mkdir(parents=True)
        log.write_bytes(b"".join(p.read_bytes() for p in STAGES[:2])
                        .replace(SID.encode(), sid.encode())
                        .replace(b'"/home/ana/code/ledger"', json.dumps(str(folder)).encode()))
        old = time.time() - 5 * 3600
        os.utime(log, (old, old))
        logs[name] = sid
    out = run_memory(crepo, "capture", "sweep", "--dir", str(projects))
    assert out.returncode == 0, out.stderr
    found = {}
    for f in (crepo / "raw" / "conversations").rglob("*.md"):
        meta = parse_document(f.read_text(encoding="utf-8"), f).meta
        found[str(meta.get("source_session") or meta.get("session_id"))] = meta.get("namespace")
    assert len(found) == 2, found
    by_name = {name: [ns for key, ns in found.items()
                      if key == H.payload_session("claude-code", sid)]
               for name, sid in logs.items()}
    assert by_name == {"alice": ["alice"], "theirs": [], "nohooks": [None]}, (found, logs)
