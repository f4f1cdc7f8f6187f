"""Capture after a crash (issue #14): torn turns cut off, an interrupted ``end`` finished,
appends to closed transcripts refused, limits checked at append time, bad input refused.

A kill is simulated by leaving on disk what a killed process leaves: part of a turn after
its tail record, a state file in the ``closing`` phase. The real SIGKILL runs are
bench/torture/kill.py's.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import documents
from memrepo.errors import MemrepoError
from memrepo.transcript import capture
from memrepo.transcript.read import read_transcript
from memrepo.transcript.session import OpenSession, _state_file, _tail_file, save_session
from memrepo.transcript.tail import TranscriptFull, _note_tail, torn_tail

LONG = "😀€é naïve " * 400


def _open(root: Path, sid: str = "ses_r", **kw: object) -> OpenSession:
    s = capture.start(root, session_id=sid, topic="recovery drill", **kw)  # type: ignore[arg-type]
    capture.append(root, sid, "user", "first turn, acknowledged")
    capture.append(root, sid, "agent", "second turn, acknowledged")
    return s


def _tear(root: Path, s: OpenSession, text: str, keep: int) -> int:
    """What a kill mid-write leaves: the tail record of a turn, and its first ``keep`` bytes."""
    chunk = f"\n## 10:00 — user\n{text}\n".encode()
    full = root / s.path
    st = full.stat()
    _note_tail(root, s.session_id, st.st_ino, st.st_size, len(chunk))
    with full.open("ab") as fh:
        fh.write(chunk[:keep])
    return st.st_size


def test_torn_turn_is_cut_off_by_the_next_append(crepo: Path) -> None:
    s = _open(crepo)
    cut = f"\n## 10:00 — user\n{LONG}".encode().index("😀".encode(), 50) + 2
    before = _tear(crepo, s, LONG, cut)  # inside a 4-byte character
    with pytest.raises(MemrepoError, match="not UTF-8"):
        read_transcript(crepo, s.path)
    capture.append(crepo, "ses_r", "user", "third turn")
    text = (crepo / s.path).read_text(encoding="utf-8")
    assert "second turn, acknowledged\n\n## " in text and text.endswith("third turn\n")
    assert (crepo / s.path).stat().st_size > before
    assert [t.text for t in read_transcript(crepo, s.path).turns][-1] == "third turn"


def test_torn_turn_cut_at_a_line_boundary_is_still_found(crepo: Path) -> None:
    """Valid UTF-8, whole lines: only the tail record tells this turn is incomplete."""
    s = _open(crepo)
    chunk_head = len("\n## 10:00 — user\nline one\n".encode())
    _tear(crepo, s, "line one\nline two", chunk_head)
    assert torn_tail(crepo, s) is not None
    done = capture.end(crepo, "ses_r")
    body = documents.read_document(crepo / done.path, done.path).body
    assert "line one" not in body and done.turns == 2


def test_complete_unacknowledged_turn_is_kept(crepo: Path) -> None:
    s = _open(crepo)
    chunk = "\n## 10:00 — user\nwritten whole, killed before exit\n"
    _tear(crepo, s, "written whole, killed before exit", len(chunk.encode()))
    assert torn_tail(crepo, s) is None
    capture.append(crepo, "ses_r", "agent", "next")
    assert "written whole" in (crepo / s.path).read_text(encoding="utf-8")


def test_cut_character_without_a_tail_record_is_repaired(crepo: Path) -> None:
    """A transcript an older memrepo wrote (no record): a cut UTF-8 character at the end."""
    s = _open(crepo)
    _tail_file(crepo, "ses_r").unlink()
    with (crepo / s.path).open("ab") as fh:
        fh.write("\n## 10:01 — agent\nhalf 😀".encode()[:-2])
    assert "UTF-8" in torn_tail(crepo, s)[1]  # type: ignore[index]
    capture.append(crepo, "ses_r", "user", "after")
    turns = read_transcript(crepo, s.path).turns
    assert [t.text for t in turns] == ["first turn, acknowledged", "second turn, acknowledged",
                                       "after"]


def test_end_killed_after_its_commit_is_finished_by_the_next_end(crepo: Path) -> None:
    """The state file still says ``closing`` (killed before it was removed): the next
    append is refused, and ``end`` finishes without a second commit."""
    _open(crepo, "ses_k")
    state = json.loads(_state_file(crepo, "ses_k").read_text())
    done = capture.end(crepo, "ses_k")
    save_session(crepo, OpenSession(
        **{**state, "phase": "closing", "closing_path": done.path}))
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    with pytest.raises(MemrepoError, match=r"is closed .*memory capture end --session ses_k"):
        capture.append(crepo, "ses_k", "user", "one more")
    assert run_git(crepo, "status", "--porcelain").stdout == ""
    again = capture.end(crepo, "ses_k")
    assert again.path == done.path and again.turns == 2
    assert run_git(crepo, "rev-parse", "HEAD").stdout == head
    assert not _state_file(crepo, "ses_k").exists()
    assert invoke_memory(crepo, "commit").returncode == 0


def test_end_killed_before_its_commit_commits_on_restart(crepo: Path) -> None:
    """Killed after the closed file was written and the open one removed: the next end
    commits the closed file (it used to say the transcript is missing, for good)."""
    s = capture.start(crepo, session_id="ses_c")
    capture.append(crepo, "ses_c", "user", "rename me from this turn")
    state = json.loads(_state_file(crepo, "ses_c").read_text())
    done = capture.end(crepo, "ses_c", commit=False)
    assert done.path != s.path  # renamed from the first messages
    save_session(crepo, OpenSession(
        **{**state, "phase": "closing", "closing_path": done.path}))
    again = capture.end(crepo, "ses_c")
    assert again.commit and again.path == done.path and again.turns == 1
    assert run_git(crepo, "status", "--porcelain").stdout == ""
    assert done.path in run_git(crepo, "ls-files").stdout


def test_end_killed_before_the_closed_file_starts_over(crepo: Path) -> None:
    s = _open(crepo, "ses_b")
    state = json.loads(_state_file(crepo, "ses_b").read_text())
    save_session(crepo, OpenSession(
        **{**state, "phase": "closing", "closing_path": s.path.replace("-session", "-x")}))
    done = capture.end(crepo, "ses_b")
    assert done.commit and done.turns == 2


def test_append_to_a_closed_transcript_with_an_old_state_file_is_refused(crepo: Path) -> None:
    """A state file without a phase (an older memrepo) next to a closed transcript."""
    s = _open(crepo, "ses_o")
    state = json.loads(_state_file(crepo, "ses_o").read_text())
    done = capture.end(crepo, "ses_o")
    state.pop("phase")
    state["path"] = done.path
    _state_file(crepo, "ses_o").write_text(json.dumps(state))
    proc = invoke_memory(crepo, "capture", "append", "--session", "ses_o", "--role", "user",
                         "late")
    assert proc.returncode == 1 and done.path in proc.stderr and "is closed" in proc.stderr
    assert capture.end(crepo, "ses_o").path == done.path
    assert not _state_file(crepo, "ses_o").exists()
    del s


def test_size_limit_is_checked_at_append_time(crepo: Path) -> None:
    cfg = crepo / "memory-config.yaml"
    cfg.write_text(cfg.read_text().replace("max_file_kb: 1024", "max_file_kb: 8"))
    s = _open(crepo, "ses_big")
    assert s.max_bytes == 8 * 1024 - 2048
    # a turn no transcript could hold is kept as its head and tail (a pasted 2 MB log
    # once made every later turn of the session fail)
    capture.append(crepo, "ses_big", "user", "x" * 6000)
    text = (crepo / s.path).read_text()
    assert "characters cut by memrepo]" in text and len(text.encode()) < 3 * 1024
    for _ in range(2):
        capture.append(crepo, "ses_big", "user", "y" * 2000)
    size = (crepo / s.path).stat().st_size
    with pytest.raises(TranscriptFull, match=r"validation\.max_file_kb.*end it"):
        capture.append(crepo, "ses_big", "user", "z" * 2000)
    assert (crepo / s.path).stat().st_size == size
    done = capture.end(crepo, "ses_big")
    assert done.commit and (crepo / done.path).stat().st_size <= 8 * 1024


def test_non_utf8_stdin_is_refused_naming_stdin(crepo: Path) -> None:
    _open(crepo, "ses_u")
    from memrepo.transcript.capture import text_from_bytes

    with pytest.raises(MemrepoError, match=r"stdin is not UTF-8 text \(byte 0xff at offset 2\)"):
        text_from_bytes(b"ok\xffno")
    surrogate = b"ok\xffno".decode("utf-8", "surrogateescape")
    with pytest.raises(MemrepoError, match=r"stdin is not UTF-8 text.*byte 0xff"):
        capture.append(crepo, "ses_u", "user", surrogate, source="stdin")


@pytest.mark.parametrize(("sid", "why"), [
    ("", "is empty"), ("a/b", "path separator"), ("a\\b", "path separator"),
    ("a..b", "'..'"), ("a\nb", "control character"), ("x" * 101, "at most 100"),
])
def test_bad_session_ids_are_refused(crepo: Path, sid: str, why: str) -> None:
    with pytest.raises(MemrepoError, match=why):
        capture.start(crepo, session_id=sid)
    assert not list((crepo / "raw/conversations").rglob("*.md"))


def test_bad_time_zones_and_start_times_are_clear_errors(crepo: Path) -> None:
    for tz in ("../../etc/passwd", "/etc/passwd", "Europe/../../etc"):
        with pytest.raises(MemrepoError, match="unknown time zone"):
            capture.start(crepo, session_id="ses_t", timezone=tz)
    for when in (dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=14))),
                 dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc),
                 dt.datetime(9999, 12, 31, tzinfo=dt.timezone.utc)):
        with pytest.raises(MemrepoError, match="out of range"):
            capture.start(crepo, session_id="ses_t", started=when)
    assert not list((crepo / "raw/conversations").rglob("*.md"))


def test_cli_start_extremes_and_empty_session(crepo: Path) -> None:
    for args in (["--started", "0001-01-01"], ["--started", "9999-12-31"],
                 ["--session", ""], ["--session", "a/b"], ["--timezone", "../../etc/passwd"]):
        base = [] if "--session" in args else ["--session", "ses_cli"]
        proc = invoke_memory(crepo, "capture", "start", *base, *args)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert "memory:" in proc.stderr or "Error" in proc.stderr
    assert not list((crepo / "raw/conversations").rglob("*.md"))


def test_cli_non_utf8_stdin_writes_nothing(crepo: Path) -> None:
    """The Click path (``--at`` keeps it off the fast path) decodes stdin strictly."""
    s = _open(crepo, "ses_in")
    size = (crepo / s.path).stat().st_size
    proc = subprocess.run(
        ["memory", "capture", "append", "--session", "ses_in", "--role", "user", "--at",
         "2026-01-01T10:00:00Z"], cwd=crepo, input=b"bad \xc3( bytes", capture_output=True)
    assert proc.returncode == 1
    assert b"stdin is not UTF-8 text (byte 0xc3 at offset 4); nothing was written" in proc.stderr
    assert (crepo / s.path).stat().st_size == size


def test_follow_goes_on_in_a_new_part_when_a_transcript_is_full(crepo: Path,
                                                                tmp_path: Path) -> None:
    """An agent session's log outgrows validation.max_file_kb: the part is closed and
    committed, the turns go on in the next part, none is lost or written twice."""
    from memrepo.transcript import follow

    stages = sorted((Path(__file__).parent / "fixtures/agents/claude-code").glob("*.jsonl"))
    cfg = crepo / "memory-config.yaml"
    cfg.write_text(cfg.read_text().replace("max_file_kb: 1024", "max_file_kb: 1.5"))
    log = tmp_path / "p" / "log.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"".join(p.read_bytes() for p in stages))
    done = follow.follow(crepo, log, final=True)
    assert done.closed
    parts = sorted((crepo / "raw/conversations").rglob("*.md"))
    assert len(parts) >= 2
    turns = [t for p in parts
             for t in read_transcript(crepo, p.relative_to(crepo).as_posix()).turns]
    whole = follow.parse_log(crepo, log, log.read_bytes())
    assert whole is not None and len(turns) == len(whole.turns)
    assert all(p.stat().st_size <= 1536 for p in parts)
    status = run_git(crepo, "status", "--porcelain", "--", "raw/").stdout
    assert status == ""  # every part closed and committed


def test_end_whose_transcript_another_commit_took_first_is_not_reopened(
    crepo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `memory commit` beside `end` commits the closed transcript first; end's own
    commit then finds nothing: reopening would delete a committed transcript."""
    _open(crepo, "ses_race")

    def taken_first(root: Path, sid: str, rel: str, paths: list[str]) -> str:
        run_git(root, "add", "--", *paths)
        run_git(root, "commit", "-q", "--no-verify", "-m", "memory: batch", "--", *paths)
        raise MemrepoError("nothing to commit: the index is the same as HEAD")

    monkeypatch.setattr(capture, "_commit_closed", taken_first)
    done = capture.end(crepo, "ses_race")
    assert done.commit == run_git(crepo, "rev-parse", "HEAD").stdout.strip()
    assert (crepo / done.path).is_file() and not _state_file(crepo, "ses_race").exists()
    assert run_git(crepo, "status", "--porcelain", "--", "raw/").stdout == ""
