"""Capture: transcripts written turn by turn, redacted, locked, valid at every step."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import re
import time
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import documents
from memrepo.errors import MemrepoError
from memrepo.layout import SESSIONS_DIR
from memrepo.transcript import capture, render
from memrepo.transcript.session import find_open_transcript, load_session, save_session

AWS = "AKIAIOSFODNN7EXAMPLE"
GH = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
ANTHROPIC = "sk-ant-api03-" + "x7Yq2LmN9pQ4rS8tU1vW3xZ5aB6cD0eF"


def validate(root: Path, *paths: str) -> None:
    proc = run_memory(root, "hook", "pre-commit", *paths)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_session_lifecycle_via_cli(crepo: Path, tmp_path: Path) -> None:
    proc = run_memory(crepo, "capture", "start", "--session", "ses_a1", "--model", "claude-x",
                      "--channel", "cli", "--tag", "coding,git", "--timezone", "+05:30")
    assert proc.returncode == 0, proc.stderr
    path = proc.stdout.strip()
    assert re.match(r"raw/conversations/\d{4}/\d\d/\d\d/\d{4}-ses_a1-session\.md$", path)
    validate(crepo, path)  # an open transcript is valid from the first byte
    assert run_memory(crepo, "capture", "append", "--session", "ses_a1", "--role", "user",
                      input="Read all open issues of autopoiesis and summarise them").returncode == 0
    assert run_memory(crepo, "capture", "tool", "--session", "ses_a1", "exec",
                      "gh issue list --state open", "12 results").returncode == 0
    assert run_memory(crepo, "capture", "append", "--session", "ses_a1", "--role", "agent",
                      "Here are all 12 open issues.").returncode == 0
    img = tmp_path / "shot.png"
    img.write_bytes(b"\x89PNG\r\n\x1a\n\x00binary")
    att = run_memory(crepo, "capture", "attach", "--session", "ses_a1", str(img), "--role", "user")
    assert att.returncode == 0, att.stderr
    assert run_memory(crepo, "capture", "append", "--session", "ses_a1", "--role", "agent",
                      "--memory", "> [knowledge:updated] knowledge/memory/MEMORY.md — noted"
                      ).returncode == 0
    validate(crepo, path)
    end = run_memory(crepo, "capture", "end", "--session", "ses_a1", "--tokens-in", "120",
                     "--tokens-out", "45")
    assert end.returncode == 0, end.stderr + end.stdout
    final = end.stdout.strip()
    assert final.endswith("-ses_a1-read-all-open-issues-autopoiesis-summarise.md")
    assert not (crepo / path).exists()
    doc = documents.read_document(crepo / final, final)
    assert doc.meta["timezone"] == "+05:30"
    assert doc.meta["turns"] == 5 and doc.meta["tokens_in"] == 120
    assert doc.meta["redactions"] == 0
    assert doc.meta["knowledge_changes"] == [
        {"path": "knowledge/memory/MEMORY.md", "action": "updated", "summary": "noted"}
    ]
    assert doc.meta["ended"] >= doc.meta["started"]
    assert "> [tool:exec] gh issue list --state open → 12 results" in doc.body
    assert f"> [attachment:{att.stdout.strip()}]" in doc.body
    started = doc.meta["started"]
    assert started.utcoffset() == dt.timedelta(hours=5, minutes=30)
    assert f"## {started:%H:%M} — user" in doc.body  # turn times in the session's own zone
    log = run_git(crepo, "log", "-1", "--format=%B").stdout
    assert log.startswith("conversation: read-all-open-issues-autopoiesis-summarise\n")
    assert f"Session: {final}" in log
    assert run_git(crepo, "status", "--porcelain").stdout.strip() == ""  # attachment committed
    # the session is over (no state file); its lock file stays, see test_lock_file_is_never_unlinked
    assert [f.name for f in (crepo / SESSIONS_DIR).glob("ses_a1.*")] == ["ses_a1.lock"]


def test_secrets_never_touch_disk_or_commit(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_sec", topic=f"deploy with {AWS}")
    assert AWS not in s.path
    assert capture.append(crepo, "ses_sec", "user", f"my key is {GH} and {ANTHROPIC}") == 2
    capture.tool(crepo, "ses_sec", "curl", f"https://bob:{'hunter2-very-secret'}@example.com/x",
                 f"token={ANTHROPIC}")
    for f in crepo.rglob("*"):
        if f.is_file() and ".git" not in f.parts:
            data = f.read_bytes()
            for secret in (AWS, GH, ANTHROPIC, "hunter2-very-secret"):
                assert secret.encode() not in data, f
    done = capture.end(crepo, "ses_sec")
    assert done.commit and done.redactions == 5
    doc = documents.read_document(crepo / done.path, done.path)
    assert doc.meta["redactions"] == 5
    assert "[REDACTED:github-token]" in doc.body and "[REDACTED:aws-access-key]" in doc.meta["topic"]
    history = run_git(crepo, "log", "-p", "--all").stdout
    for secret in (AWS, GH, ANTHROPIC, "hunter2-very-secret"):
        assert secret not in history


def _appender(root: str, worker: int, n: int) -> None:
    for i in range(n):
        capture.append(Path(root), "ses_conc", "agent" if worker % 2 else "user",
                       f"worker {worker} line {i} " + "x" * 200 + f"\nsecond line {worker}-{i}")


def test_concurrent_appends_keep_every_line(crepo: Path) -> None:
    capture.start(crepo, session_id="ses_conc", topic="concurrency")
    ctx = multiprocessing.get_context("fork")
    workers, n = 6, 40
    procs = [ctx.Process(target=_appender, args=(str(crepo), w, n)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    done = capture.end(crepo, "ses_conc", commit=False)
    body = documents.read_document(crepo / done.path, done.path).body
    turns = re.split(r"^## \d\d:\d\d — (?:user|agent)\n", body, flags=re.M)[1:]
    assert len(turns) == workers * n == done.turns
    seen = set()
    for t in turns:  # every turn whole: its two lines together, nothing interleaved
        m = re.fullmatch(r"worker (\d+) line (\d+) x{200}\nsecond line \1-\2\n\n?", t)
        assert m, t[:120]
        seen.add((m[1], m[2]))
    assert len(seen) == workers * n
    validate(crepo, done.path)


def test_cli_appends_from_several_processes(crepo: Path) -> None:
    import subprocess

    capture.start(crepo, session_id="ses_cli", topic="cli concurrency")
    procs = [
        subprocess.Popen(["memory", "capture", "append", "--session", "ses_cli", "--role", "user",
                          f"message {i}"], cwd=crepo)
        for i in range(8)
    ]
    assert all(p.wait(30) == 0 for p in procs)
    body = (crepo / load_session(crepo, "ses_cli").path).read_text()
    assert sorted(re.findall(r"^message (\d)$", body, re.M)) == [str(i) for i in range(8)]


def test_crash_leaves_valid_open_transcript_that_end_closes(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_crash")
    capture.append(crepo, "ses_crash", "user", "plan the database migration")
    # A crash mid-write: the process died after part of a turn reached the file.
    with open(crepo / s.path, "a", encoding="utf-8") as fh:
        fh.write("\n## 10:15 — agent\nI will start by")
    (crepo / SESSIONS_DIR / "ses_crash.json").unlink()  # state lost too
    validate(crepo, s.path)
    assert find_open_transcript(crepo, "ses_crash") == s.path
    proc = run_memory(crepo, "capture", "end", "--session", "ses_crash")
    assert proc.returncode == 0, proc.stderr
    closed = proc.stdout.strip()
    assert documents.read_document(crepo / closed, closed).meta["ended"]
    assert run_git(crepo, "log", "-1", "--format=%s").stdout.startswith("conversation: ")


def test_turn_headers_use_the_session_zone_and_escape_lookalikes(crepo: Path) -> None:
    started = dt.datetime(2026, 2, 16, 17, 45, tzinfo=dt.timezone.utc)
    s = capture.start(crepo, session_id="ses_tz", timezone="Europe/Paris", started=started,
                      topic="tz")
    assert s.path == "raw/conversations/2026/02/16/1845-ses_tz-tz.md"
    capture.append(crepo, "ses_tz", "user", "## 09:00 — agent\nnot a header",
                   when=dt.datetime(2026, 2, 16, 18, 0, tzinfo=dt.timezone.utc))
    text = (crepo / s.path).read_text()
    assert "## 19:00 — user\n\\## 09:00 — agent\nnot a header\n" in text
    assert "timezone: Europe/Paris" in text
    validate(crepo, s.path)


def test_errors_are_clean(crepo: Path) -> None:
    with pytest.raises(MemrepoError, match="no open session"):
        capture.append(crepo, "ses_none", "user", "hi")
    capture.start(crepo, session_id="ses_dup")
    with pytest.raises(MemrepoError, match="already open"):
        capture.start(crepo, session_id="ses_dup")
    proc = run_memory(crepo, "capture", "append", "--session", "bad id", "--role", "user", "x")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    with pytest.raises(MemrepoError, match="time zone"):
        render.resolve_timezone("Mars/Olympus")


def test_doctor_reports_sessions_left_open(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_old")
    old = time.time() - 3 * 86400
    os.utime(crepo / s.path, (old, old))
    proc = run_memory(crepo, "doctor")
    assert "memory capture end --session ses_old" in proc.stdout


# --- audit fixes ------------------------------------------------------------------------


def test_a_secret_straddling_the_tool_line_cut_is_redacted_whole(crepo: Path) -> None:
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    capture.start(crepo, session_id="ses_cut", topic="cut")
    proc = run_memory(crepo, "capture", "tool", "--session", "ses_cut", "bash",
                      "a" * 175 + " " + token, "ok")
    assert proc.returncode == 0, proc.stderr
    assert capture.tool(crepo, "ses_cut", "read", "x", "b" * 190 + " " + token) == 1
    text = (crepo / load_session(crepo, "ses_cut").path).read_text()
    assert "ghp_" not in text and "abcdefghijklmnop" not in text
    assert "a" * 175 + " [REDACTED:github-token]" in text
    assert "…" in text and "[REDACTED:git…" not in text  # a placeholder is never cut


def test_attachments_are_redacted_in_name_reference_and_text(crepo: Path, tmp_path: Path) -> None:
    capture.start(crepo, session_id="ses_att", topic="attachments")
    note = tmp_path / f"creds-{GH}.txt"
    note.write_text(f"aws {AWS}\nkeep this line\n")
    blob = tmp_path / "photo.bin"
    blob.write_bytes(b"\x00\x01binary photo")
    leaky = tmp_path / "leaky.bin"
    leaky.write_bytes(b"\x00\x01binary " + AWS.encode())
    rel = capture.attach(crepo, "ses_att", note, role="user")
    rel_bin = capture.attach(crepo, "ses_att", blob)
    # a binary cannot be redacted: refused now, not at `end` (which it would block)
    with pytest.raises(MemrepoError, match=r"leaky\.bin.*aws-access-key.*nothing was attached"):
        capture.attach(crepo, "ses_att", leaky)
    assert GH not in rel and "REDACTED-github-token" in rel
    stored = (crepo / rel).read_text()
    assert AWS not in stored and "[REDACTED:aws-access-key]" in stored
    assert "keep this line" in stored
    assert (crepo / rel_bin).read_bytes() == blob.read_bytes()  # binaries are kept as they are
    session = load_session(crepo, "ses_att")
    text = (crepo / session.path).read_text()
    assert GH not in text and f"> [attachment:{rel}]" in text
    done = capture.end(crepo, "ses_att")
    assert done.commit
    history = run_git(crepo, "log", "-p", "--all").stdout
    assert GH not in history and AWS not in history


def test_a_refused_end_commit_leaves_the_session_open_and_nothing_staged(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_ref")  # provisional name: end would rename it
    capture.append(crepo, "ses_ref", "user", "plan the garden beds")
    with open(crepo / s.path, "a", encoding="utf-8") as fh:  # a damaged write of a crash
        fh.write("\n## 10:61 — agent\nhalf a turn\n")
    before = (crepo / s.path).read_bytes()
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = run_memory(crepo, "capture", "end", "--session", "ses_ref")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1
    assert "session ses_ref: the commit closing it was refused" in err
    assert "turn header must be" in err and f"open again at {s.path}" in err
    assert run_git(crepo, "rev-parse", "HEAD").stdout == head
    assert run_git(crepo, "diff", "--cached", "--name-only").stdout == ""  # nothing staged
    assert (crepo / s.path).read_bytes() == before  # reopened byte for byte
    assert list((crepo / "raw/conversations").rglob("*.md")) == [crepo / s.path]
    assert load_session(crepo, "ses_ref").path == s.path
    # Fix the cause (the file is not committed yet, so it may be edited) and end again.
    (crepo / s.path).write_bytes(before.replace(b"## 10:61", b"## 10:59"))
    done = capture.end(crepo, "ses_ref")
    assert done.commit and done.path.endswith("-ses_ref-plan-garden-beds.md")


def test_a_deleted_transcript_is_a_clear_error(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_gone", topic="gone")
    (crepo / s.path).unlink()
    with pytest.raises(MemrepoError, match=f"session ses_gone: transcript {s.path} is missing"):
        capture.append(crepo, "ses_gone", "user", "hello?")
    for args in (["append", "--role", "user", "hi"], ["tool", "x"], ["end"]):
        proc = run_memory(crepo, "capture", args[0], "--session", "ses_gone", *args[1:])
        assert proc.returncode == 1, args
        assert proc.stderr.startswith("memory: session ses_gone: transcript ") and \
            "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_memory_turns_are_agent_turns_only(crepo: Path) -> None:
    capture.start(crepo, session_id="ses_mem", topic="memory turns")
    proc = run_memory(crepo, "capture", "append", "--session", "ses_mem", "--role", "user",
                      "--memory", "x")
    assert proc.returncode == 1 and "only agent turns can be memory operations" in proc.stderr
    assert capture.append(crepo, "ses_mem", "agent", "> [knowledge:updated] a.md", memory=True) == 0


def test_start_says_the_path_is_provisional_and_end_prints_the_final_one(crepo: Path) -> None:
    help_text = run_memory(crepo, "capture", "start", "--help").stdout
    assert "renames it" in help_text and "printing the final path" in help_text
    proc = run_memory(crepo, "capture", "start", "--session", "ses_p", "--json")
    assert json.loads(proc.stdout)["provisional"] is True
    proc = run_memory(crepo, "capture", "start", "--session", "ses_q", "--topic", "t", "--json")
    assert json.loads(proc.stdout)["provisional"] is False


def test_lock_file_is_never_unlinked(crepo: Path) -> None:
    """A waiter that opened the lock file before `end` must lock the same file as anyone
    after it: unlinking it would let two processes hold "the" lock at once."""
    capture.start(crepo, session_id="ses_lock", topic="lock")
    capture.append(crepo, "ses_lock", "user", "takes the lock")
    lock = crepo / SESSIONS_DIR / "ses_lock.lock"
    inode = lock.stat().st_ino
    capture.end(crepo, "ses_lock", commit=False)
    assert lock.stat().st_ino == inode


def test_doctor_fix_closes_abandoned_sessions(crepo: Path) -> None:
    began = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3, hours=1)
    old = capture.start(crepo, session_id="ses_old", topic="abandoned work", started=began)
    capture.append(crepo, "ses_old", "user", "the agent crashed after this")
    last = time.time() - 3 * 86400
    os.utime(crepo / old.path, (last, last))
    fresh = capture.start(crepo, session_id="ses_live", topic="still going")
    gone = capture.start(crepo, session_id="ses_lost", topic="lost")
    (crepo / gone.path).unlink()
    proc = run_memory(crepo, "doctor")
    assert "memory capture end --session ses_old" in proc.stdout
    assert (crepo / SESSIONS_DIR / "ses_old.json").exists()  # without --fix: listed only
    proc = run_memory(crepo, "doctor", "--fix")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"fixed: closed session ses_old (idle 3.0 days): {old.path}, commit " in proc.stdout
    assert "not fixed: session ses_lost left open: transcript" in proc.stdout
    doc = documents.read_document(crepo / old.path, old.path)
    assert doc.meta["ended"].timestamp() == pytest.approx(last, abs=1)
    assert run_git(crepo, "log", "-1", "--format=%s").stdout.strip() == "conversation: abandoned-work"
    assert not (crepo / SESSIONS_DIR / "ses_old.json").exists()
    assert load_session(crepo, "ses_live").path == fresh.path  # a live session stays


def test_an_end_that_died_before_its_commit_is_explained(crepo: Path) -> None:
    """The transcript was renamed and closed, the state file survived the crash."""
    s = capture.start(crepo, session_id="ses_half")
    capture.append(crepo, "ses_half", "user", "water the tomatoes")
    state = load_session(crepo, "ses_half")
    done = capture.end(crepo, "ses_half", commit=False)
    save_session(crepo, state)  # what a crash before the commit leaves behind
    assert done.path != s.path
    with pytest.raises(MemrepoError, match=f"the session was closed as {done.path}"):
        capture.end(crepo, "ses_half")
