"""A hook payload's ``transcript_path`` may name anything (issue #37): the detached worker
must neither hang on a FIFO nor read a device or a huge file without end, never read
through a symlink, read a growing log only from where it stopped (a half-written last
line once it ends), and keep no secret from the log in its progress files.

Bytes read are measured with the process's own counter (``rchar`` of /proc/self/io) or
the count a follow reports, never with timings.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo.agents import harness as H
from memrepo.agents import state
from memrepo.documents import parse_document
from memrepo.errors import MemrepoError
from memrepo.transcript import follow, sweep
from memrepo.transcript.importers import claude_code
from memrepo.transcript.importers.run import ImportContext
from memrepo.transcript.render import render_import, resolve_timezone

FIXTURE = Path(__file__).parent / "fixtures" / "agents" / "claude-code"
STAGES = [p.read_bytes() for p in sorted(FIXTURE.glob("*.jsonl"))]
SID = "7f3c2a1e-5b4d-4e8f-9a6b-0c1d2e3f4a5b"
#: A record the importer leaves out (a file-history snapshot): bulk that is no turn.
PAD = (json.dumps({"type": "file-history-snapshot", "snapshot": {"note": "x" * 8000}})
       + "\n").encode()
TOKEN = "ghp_" + "aB3" * 12
AWS = "AKIAIOSFODNN7EXAMPLE"


def rchar() -> int:
    """Bytes this process has read so far (every read syscall, whatever the file)."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        pytest.skip("no /proc/self/io here")
    return int(next(ln.split()[1] for ln in text.splitlines() if ln.startswith("rchar:")))


def imported_body(log: Path, tzname: str) -> str:
    """The body an import of the whole log renders: what following it must produce."""
    conv = claude_code.parse(log.read_bytes(), ImportContext(log, dt.datetime.now(dt.timezone.utc)))[0]
    tz, name = resolve_timezone(tzname)
    rel, text, _ = render_import(conv, tz, name, ())
    return parse_document(text, rel).body


def closed_body(root: Path, rel: str) -> tuple[str, str]:
    doc = parse_document((root / rel).read_text(encoding="utf-8"), rel)
    assert doc.meta["ended"] is not None
    return doc.body, doc.meta["timezone"]


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run_worker(root: Path, event: str, log: str) -> dict:
    """The detached worker of a Claude Code hook, as the hook starts it, on a payload
    naming ``log``; it must exit (0) within the time bound. Its agents-log entry."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", H.GUARD_ENV, "MEMORY_REPO")}
    payload = {"hook_event_name": event, "session_id": SID, "transcript_path": log}
    proc = subprocess.run([sys.executable, "-m", "memrepo.agents.worker", "claude-code", event,
                           str(root)], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=30, preexec_fn=_limit_memory)
    assert proc.returncode == 0, proc.stderr
    done = [e for e in state.read_log(root / state.LOG) if e.get("detached")]
    assert done, proc.stderr
    return done[-1]


@pytest.mark.parametrize("event", ["Stop", "PreCompact", "SessionEnd"])
def test_a_fifo_as_transcript_path_never_hangs_the_worker(crepo: Path, tmp_path: Path,
                                                          event: str) -> None:
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    entry = run_worker(crepo, event, str(fifo))
    assert entry["status"] == "failed"
    assert "FIFO" in entry["detail"] and "never read" in entry["detail"], entry
    assert not list((crepo / "raw").rglob("*.md"))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("event", ["Stop", "PreCompact"])
def test_a_device_as_transcript_path_is_refused_unread(crepo: Path, device: str,
                                                       event: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    entry = run_worker(crepo, event, device)
    assert entry["status"] == "failed"
    assert "character device, not a regular file" in entry["detail"], entry


def test_a_symlink_to_a_log_elsewhere_is_never_read_through(crepo: Path,
                                                            tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "private.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(STAGES[0].replace(b"Let's set up", b"PRIVATE-7f3a Let's set up"))
    link = tmp_path / "projects" / "p" / f"{SID}.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    with pytest.raises(MemrepoError, match="symlink, never read through"):
        follow.follow(crepo, link)
    assert not list((crepo / "raw").rglob("*.md"))
    assert not any(b"PRIVATE-7f3a" in p.read_bytes() for p in crepo.rglob("*")
                   if p.is_file() and ".git" not in p.parts)
    assert sweep.session_logs(tmp_path / "projects") == []  # the sweep passes it by


def test_a_grown_log_is_read_only_from_where_the_last_call_stopped(crepo: Path,
                                                                   tmp_path: Path) -> None:
    """A long log (bulk records) that grows: the second call reads the new bytes alone,
    and the transcript is still byte for byte what an import of the whole log renders
    (the growth continues a reply cut between the two calls)."""
    log = tmp_path / "p" / f"{SID}.jsonl"
    log.parent.mkdir()
    log.write_bytes(STAGES[0] + PAD * 600 + STAGES[1])
    assert follow.follow(crepo, log).appended
    offset = follow.load_progress(crepo, log).size
    with log.open("ab") as fh:
        fh.write(STAGES[2])
    before = rchar()
    done = follow.follow(crepo, log)
    spent = rchar() - before
    assert spent < len(PAD) * 100  # the log holds 600 of them: none was read again
    assert follow.load_progress(crepo, log).size == log.stat().st_size
    assert done.read == log.stat().st_size - offset <= len(STAGES[2]) + len(STAGES[1])
    end = follow.follow(crepo, log, final=True)
    body, tzname = closed_body(crepo, end.path)
    assert body == imported_body(log, tzname)


def test_a_half_written_last_line_is_read_once_it_ends(crepo: Path, tmp_path: Path) -> None:
    log = tmp_path / "p" / f"{SID}.jsonl"
    log.parent.mkdir()
    whole = STAGES[0] + PAD * 400 + STAGES[1] + STAGES[2]
    cut = len(whole) - len(STAGES[2]) + 300  # inside the record that goes on with the reply
    log.write_bytes(whole[:cut])
    follow.follow(crepo, log)
    offset = follow.load_progress(crepo, log).size
    assert offset == len(whole) - len(STAGES[2])  # up to the half line, not into it
    with log.open("ab") as fh:
        fh.write(whole[cut:])
    before = rchar()
    done = follow.follow(crepo, log, final=True)
    spent = rchar() - before
    assert spent < len(PAD) * 100  # the bulk before the half line is not read again
    body, tzname = closed_body(crepo, done.path)
    assert body == imported_body(log, tzname)
    assert done.read == len(whole) - offset


def test_a_log_is_read_in_bounded_chunks_and_calls(crepo: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A call reads CHUNK_BYTES at a time and starts no chunk past RUN_BYTES or its time
    budget; seams fall anywhere (inside a streamed reply, between a tool call and its
    result) and the transcript is still the whole import's."""
    monkeypatch.setattr(follow, "CHUNK_BYTES", 1024)
    monkeypatch.setattr(follow, "RUN_BYTES", 3000)
    log = tmp_path / "p" / f"{SID}.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"".join(STAGES))
    longest = max(len(ln) for s in STAGES for ln in s.splitlines(keepends=True))
    calls = [follow.follow(crepo, log, budget=0)]  # out of time: one chunk, then stop
    assert calls[0].read <= 4 * 1024 and "left for the next call" in calls[0].note
    while True:
        calls.append(follow.follow(crepo, log, final=True))
        assert calls[-1].read <= 3000 + 3 * 1024 + longest  # a chunk reads on for a result
        if calls[-1].closed:
            break
        assert len(calls) < 20
    assert len(calls) >= sum(map(len, STAGES)) // 3000
    body, tzname = closed_body(crepo, calls[-1].path)
    assert body == imported_body(log, tzname)


def test_a_huge_sparse_log_is_read_within_the_bounds(crepo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """200 MB of zeros, no line end (a file named as a log by mistake): a call reads its
    bound and passes the rest over, in reads no larger than a record may be; a log with
    more unread than MAX_UNREAD is refused unread."""
    log = tmp_path / "p" / f"{SID}.jsonl"
    log.parent.mkdir()
    with log.open("wb") as fh:
        fh.truncate(200 << 20)
    before = rchar()
    done = follow.follow(crepo, log)
    assert rchar() - before < 100 << 20
    assert done.read <= follow.RUN_BYTES + follow.LINE_BYTES
    assert "passed over" in done.note and "left for the next call" in done.note
    assert not list((crepo / "raw").rglob("*.md"))
    monkeypatch.setattr(follow, "MAX_UNREAD", 100 << 20)
    with pytest.raises(MemrepoError, match="not read"):
        follow.follow(crepo, log)


def test_a_secret_in_the_session_title_never_reaches_the_follow_state(crepo: Path,
                                                                      tmp_path: Path) -> None:
    log = tmp_path / "p" / "abc.jsonl"
    log.parent.mkdir()
    recs = [
        {"type": "summary", "summary": f"Rotate {TOKEN} and {AWS}"},
        {"type": "user", "sessionId": "abc", "timestamp": "2026-03-02T10:00:00Z",
         "message": {"role": "user", "content": "Rotate the deploy token"}},
        {"type": "assistant", "sessionId": "abc", "timestamp": "2026-03-02T10:01:00Z",
         "message": {"role": "assistant", "model": f"m-{TOKEN}",
                     "content": [{"type": "text", "text": "Done."}]}},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    follow.follow(crepo, log)
    states = list((crepo / follow.PROGRESS_DIR).glob("*.json"))
    assert states
    for f in states:
        text = f.read_text(encoding="utf-8")
        assert TOKEN not in text and AWS not in text, text
    assert "[REDACTED:" in (follow.load_progress(crepo, log).title or "")
    done = follow.follow(crepo, log, final=True)
    assert TOKEN not in (crepo / done.path).read_text(encoding="utf-8")


def test_a_session_end_without_a_log_is_nothing_to_do_not_a_failure(crepo: Path,
                                                                    tmp_path: Path) -> None:
    """Every `claude mcp list` fires SessionEnd for a session that never wrote a log:
    it was logged as failed ("agent log not found") and `memory doctor` warned."""
    from memrepo.repo import MemoryRepo

    entry = run_worker(crepo, "SessionEnd", str(tmp_path / "never-written.jsonl"))
    assert entry["status"] == "ok", entry
    [check] = [c for c in state.health_checks(MemoryRepo(crepo)) if c.name == "agent hooks"]
    assert check.ok, check.detail
    stop = run_worker(crepo, "Stop", str(tmp_path / "never-written.jsonl"))
    assert stop["status"] == "failed" and "not found" in stop["detail"]  # a turn is lost
