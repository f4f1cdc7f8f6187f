"""Capture: transcripts written turn by turn, redacted, locked, valid at every step."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import re
import time
from pathlib import Path

import pytest
from conftest import run_git, run_memory

from memrepo import capture, formats
from memrepo.errors import MemrepoError

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
    doc = formats.read_document(crepo / final, final)
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
    assert not list((crepo / capture.STATE_DIR).glob("ses_a1.*"))


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
    doc = formats.read_document(crepo / done.path, done.path)
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
    body = formats.read_document(crepo / done.path, done.path).body
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
    body = (crepo / capture.load_session(crepo, "ses_cli").path).read_text()
    assert sorted(re.findall(r"^message (\d)$", body, re.M)) == [str(i) for i in range(8)]


def test_crash_leaves_valid_open_transcript_that_end_closes(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_crash")
    capture.append(crepo, "ses_crash", "user", "plan the database migration")
    # A crash mid-write: the process died after part of a turn reached the file.
    with open(crepo / s.path, "a", encoding="utf-8") as fh:
        fh.write("\n## 10:15 — agent\nI will start by")
    (crepo / capture.STATE_DIR / "ses_crash.json").unlink()  # state lost too
    validate(crepo, s.path)
    assert capture.find_open_transcript(crepo, "ses_crash") == s.path
    proc = run_memory(crepo, "capture", "end", "--session", "ses_crash")
    assert proc.returncode == 0, proc.stderr
    closed = proc.stdout.strip()
    assert formats.read_document(crepo / closed, closed).meta["ended"]
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
        capture.resolve_timezone("Mars/Olympus")


def test_doctor_reports_sessions_left_open(crepo: Path) -> None:
    s = capture.start(crepo, session_id="ses_old")
    old = time.time() - 3 * 86400
    os.utime(crepo / s.path, (old, old))
    proc = run_memory(crepo, "doctor")
    assert "memory capture end --session ses_old" in proc.stdout
