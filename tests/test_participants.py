"""A relayed chat's speakers become its transcript's ``participants`` at close, and so the
index's people (issue 35: a lived MiniLM memory had no names to mask from a query's
vector and ranked sessions 4 points of R@5 below a fresh import of the same chats)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_git, run_memory

from memrepo.documents import read_document
from memrepo.index.db import connect
from memrepo.index.paths import db_path
from memrepo.transcript.speakers import body_turns, speaker_names


def _session(repo: Path, sid: str, turns: list[tuple[str, str]]) -> dict:
    assert run_memory(repo, "capture", "start", "--session", sid, "--topic", sid).returncode == 0
    for role, text in turns:
        out = run_memory(repo, "capture", "append", "--session", sid, "--role", role, text)
        assert out.returncode == 0, out.stderr
    assert run_memory(repo, "capture", "end", "--session", sid).returncode == 0
    rel = next(p for p in run_git(repo, "ls-files", "raw/conversations").stdout.split()
               if f"-{sid}-" in p)
    return read_document(repo / rel, rel).meta


def test_a_relayed_chat_names_its_speakers_and_the_index_knows_them(crepo: Path) -> None:
    chat = [("user", f"Caroline: I went to the support group, day {i}.") for i in range(3)]
    chat += [("agent", f"Melanie: That's great, Caroline! Day {i}.") for i in range(3)]
    meta = _session(crepo, "relayed", chat)
    assert meta["participants"] == {"user": "Caroline", "agent": "Melanie"}
    con = connect(db_path(crepo))
    try:
        words = {r[0] for r in con.execute("SELECT word FROM names")}
    finally:
        con.close()
    assert {"caroline", "melanie"} <= words


def test_an_ordinary_session_gets_no_participants(crepo: Path) -> None:
    meta = _session(crepo, "plain", [("user", "Decision: we use Postgres for the ledger."),
                                     ("agent", "Noted."), ("user", "And the cache stays."),
                                     ("agent", "Sure: it stays.")])
    assert "participants" not in meta


def test_body_turns_leave_memory_and_system_lines_out() -> None:
    body = ("\n# t\n\n## 10:00 — user\nMel: hi\n\n## 10:01 — agent [memory]\nBo: noted\n\n"
            "## 10:02 — system\nDan: x\n\n## 10:03 — user\nMel: bye\n")
    assert body_turns(body) == [("user", "Mel: hi"), ("user", "Mel: bye")]
    assert speaker_names(body_turns(body)) == {"user": "Mel"}
