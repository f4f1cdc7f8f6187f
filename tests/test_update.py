"""``memory update`` / :mod:`memrepo.lifecycle.update`: one knowledge entry changed by REF,
committed, with the line format extraction writes; a refused commit leaves nothing behind."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest

from memrepo.entries import parse_entry
from memrepo.errors import MemrepoError
from memrepo.layout import SUPERSEDED_LINE
from memrepo.lifecycle import update
from tests.conftest import run_git, run_memory

TODAY = dt.date(2026, 7, 1)

PEOPLE = """---
type: person
name: Alice
updated: 2026-02-01
---
- 2026-02-01: Alice leads the payments team [src: 2026/02/01/0900-ses_a1]
- Alice prefers async reviews

# Alice

## Context

- 2026-02-02: Alice works from Lisbon
- 2026-02-03: Alice is on call in March
"""
JOURNAL = """---
type: journal
date: 2026-06-30
---

## 2026-06-30

- 09:15 Standup moved to 10:00  #team
- 11:00 Shipped the exporter
"""


def seed(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "-c", f"core.hooksPath={os.devnull}", "commit", "-q", "--no-verify", "-m", "seed")


@pytest.fixture
def mem(crepo: Path) -> Path:
    seed(crepo, {"knowledge/people/alice.md": PEOPLE, "knowledge/journal/2026-06-30.md": JOURNAL})
    return crepo


def lines(root: Path, rel: str) -> list[str]:
    return (root / rel).read_text(encoding="utf-8").split("\n")


def test_supersede_keeps_the_line_and_strikes_the_old_one_at_the_section_end(mem: Path) -> None:
    rel = "knowledge/people/alice.md"
    done = update.update_entry(mem, f"{rel}:13", "Alice works from Porto", today=TODAY)
    got = lines(mem, rel)
    assert (done.path, done.line, done.old_line) == (rel, 13, 15)
    assert got[12] == "- 2026-07-01: Alice works from Porto"
    assert got[13] == "- 2026-02-03: Alice is on call in March"
    assert got[14] == ("- ~~2026-02-02: Alice works from Lisbon~~ "
                       "(superseded 2026-07-01 by: Alice works from Porto)")
    assert SUPERSEDED_LINE.match(got[14]) and parse_entry(got[14]).superseded
    assert got[3] == "updated: 2026-07-01" and got[4] == "---"  # in place: no line moved
    assert run_git(mem, "rev-parse", "HEAD").stdout.strip() == done.commit
    assert run_git(mem, "show", "--name-only", "--format=%s", "HEAD").stdout.split("\n")[:3] == [
        "memory: supersede an entry of people/alice", "", rel]
    assert run_git(mem, "status", "--porcelain").stdout == ""


def test_entries_before_the_first_heading_and_undated_ones(mem: Path) -> None:
    rel = "knowledge/people/alice.md"
    done = update.update_entry(mem, f"{rel}:7", "Alice prefers pairing", today=TODAY)
    got = lines(mem, rel)
    assert got[6] == "- Alice prefers pairing"  # undated stays undated
    assert got[7] == "- ~~Alice prefers async reviews~~ (superseded 2026-07-01 by: Alice prefers pairing)"
    assert got[8] == "" and got[9] == "# Alice"
    assert done.old_line == 8


def test_replace_rewrites_in_place_and_keeps_the_source(mem: Path) -> None:
    rel = "knowledge/people/alice.md"
    before = lines(mem, rel)
    done = update.update_entry(mem, f"{rel}:6", "Alice leads the payments and billing teams",
                               "replace", today=TODAY)
    got = lines(mem, rel)
    assert done.old_line is None and len(got) == len(before)
    assert got[5] == ("- 2026-07-01: Alice leads the payments and billing teams "
                      "[src: 2026/02/01/0900-ses_a1]")
    assert run_git(mem, "log", "-1", "--format=%s").stdout.strip() == \
        "memory: reword an entry of people/alice"


def test_a_journal_bullet_keeps_its_time(mem: Path) -> None:
    rel = "knowledge/journal/2026-06-30.md"
    update.update_entry(mem, f"{rel}:8", "Standup moves to 10:30", today=TODAY)
    got = lines(mem, rel)
    assert got[7] == "- 09:15 Standup moves to 10:30"
    assert got[9] == ("- ~~09:15 Standup moved to 10:00  #team~~ "
                      "(superseded 2026-07-01 by: Standup moves to 10:30)")


def test_a_span_with_one_entry_names_it(mem: Path) -> None:
    rel = "knowledge/people/alice.md"
    done = update.update_entry(mem, f"{rel}:9-13", "Alice works from Faro", today=TODAY)
    assert done.line == 13


REFUSED = [
    ("knowledge/people/alice.md:9-14", "x", "holds 2 entries; name one"),
    ("knowledge/people/alice.md:3", "x", "is not an entry"),
    ("knowledge/people/alice.md:40", "x", "has 14 line(s), no line 40"),
    ("knowledge/people/alice.md:0", "x", "lines are numbered from 1"),
    ("knowledge/people/alice.md:13", "Alice works from Lisbon", "already says that"),
    ("knowledge/people/alice.md", "x", "name the entry's line"),
    ("knowledge/people/../people/alice.md:12", "x", "'..' is not allowed"),
    ("topics/remembering.md:8", "x", "only files under knowledge/"),
    ("knowledge/people/alice.md:13", "token ghp_1234567890abcdefghijklmnopqrstuvwxyz12",
     "looks like a"),
]


def test_refused_updates_write_nothing(mem: Path) -> None:
    before = (mem / "knowledge/people/alice.md").read_bytes()
    head = run_git(mem, "rev-parse", "HEAD").stdout
    for ref, text, said in REFUSED:
        with pytest.raises(MemrepoError) as exc:
            update.update_entry(mem, ref, text, today=TODAY)
        assert said in str(exc.value), (ref, str(exc.value))
    assert (mem / "knowledge/people/alice.md").read_bytes() == before
    assert run_git(mem, "rev-parse", "HEAD").stdout == head
    assert run_git(mem, "status", "--porcelain").stdout == ""


def test_a_refused_commit_restores_the_file_and_the_git_index(mem: Path) -> None:
    """On the route where ``git add`` stages before the validators run (signed commits),
    a refusal must put the index entry back too."""
    rel = "knowledge/reference/loose.md"
    seed(mem, {rel: "# no frontmatter\n\n- one fact\n"})
    run_git(mem, "config", "commit.gpgsign", "true")
    before = (mem / rel).read_bytes()
    with pytest.raises(MemrepoError, match="no YAML frontmatter"):
        update.update_entry(mem, f"{rel}:3", "two facts", today=TODAY)
    with pytest.raises(MemrepoError, match="no YAML frontmatter"):
        update.remember(mem, "three facts", rel)
    assert (mem / rel).read_bytes() == before
    assert run_git(mem, "status", "--porcelain").stdout == ""


def test_remember_refuses_past_journals_and_starts_today(mem: Path) -> None:
    with pytest.raises(MemrepoError, match="past journals are closed"):
        update.remember(mem, "late note", "knowledge/journal/2026-06-30.md")
    now = dt.datetime(2026, 7, 1, 8, 5).astimezone()
    done = update.remember(mem, "early note", "knowledge/journal/2026-07-01.md", now=now)
    assert done.ref == f"knowledge/journal/2026-07-01.md:{done.line}"
    assert lines(mem, done.path)[done.line - 1] == "- 08:05 early note"
    assert run_git(mem, "status", "--porcelain").stdout == ""


def test_memory_path_checks() -> None:
    root = Path(__file__).resolve().parent.parent  # any directory: only the names are checked
    for bad, said in [("", "empty path"), ("a/../b.md", "'..'"), (".git/HEAD", "hidden"),
                      ("scratch/x.md", "not a memory file"), ("knowledge/x.txt", "not a memory")]:
        with pytest.raises(MemrepoError, match=re.escape(said)):
            update.memory_path(root, bad)


def test_absolute_paths_inside_the_repo_and_safe_symlinks(mem: Path) -> None:
    rel = "knowledge/people/alice.md"
    assert update.memory_path(mem, str(mem / rel)) == rel
    (mem / "knowledge/people/al.md").symlink_to("alice.md")
    assert update.memory_path(mem, "knowledge/people/al.md") == "knowledge/people/al.md"
    with pytest.raises(MemrepoError, match="a symlink; write to the file it points to"):
        update.memory_path(mem, "knowledge/people/al.md", knowledge=True)


def test_cli(mem: Path) -> None:
    rel = "knowledge/people/alice.md"
    r = run_memory(mem, "update", f"{rel}:14", "Alice", "is", "on", "call", "in", "April")
    assert r.returncode == 0, r.stderr
    assert re.match(rf"^superseded {rel}:14; the old line is kept struck through at :15 "
                    r"\(\w{10}\)$", r.stdout.strip())
    r = run_memory(mem, "update", "--replace", f"{rel}:14", "Alice is on call in May")
    assert r.returncode == 0 and r.stdout.startswith(f"replaced {rel}:14 ")
    assert lines(mem, rel)[13].endswith(": Alice is on call in May")
    r = run_memory(mem, "update", f"{rel}:2", "x")
    assert r.returncode == 1 and "is not an entry" in r.stderr and r.stdout == ""


def test_a_journal_note_is_written_committed_and_undone_under_the_journal_lock(
    mem: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #14: ``before``, the write and the undo of a refused commit all hold the
    journal lock, so a note another writer adds in between is never undone with ours."""
    from memrepo.commit import write
    from memrepo.lifecycle import journal
    from memrepo.locks import LockBusy, file_lock

    now = dt.datetime(2026, 7, 1, 9, 0).astimezone()
    rel = "knowledge/journal/2026-07-01.md"
    update.remember(mem, "kept note", now=now)
    held = []

    def refuse(root: Path, paths: list[str], message: str) -> str:
        with pytest.raises(LockBusy), file_lock(mem / journal.LOCK_FILE):
            pass
        held.append(paths)
        raise MemrepoError("the pre-commit checks refused the commit")

    monkeypatch.setattr(write, "commit_paths", refuse)
    with pytest.raises(MemrepoError, match="refused"):
        update.remember(mem, "refused note", now=now)
    assert held == [[rel]]
    text = (mem / rel).read_text(encoding="utf-8")
    assert "kept note" in text and "refused note" not in text
    assert run_git(mem, "status", "--porcelain").stdout == ""


def test_one_huge_note_is_refused_and_cannot_blank_the_briefing(mem: Path) -> None:
    """A 12 KB note made the whole day's journal vanish from the SessionStart briefing;
    600 KB was accepted. A note is one line of at most 4,000 characters, and a long line
    already in a journal is shown cut, the day's other notes beside it."""
    from memrepo.agents import recall

    with pytest.raises(MemrepoError, match="a note is one line of at most 4,000"):
        update.remember(mem, "padding " * 1500)
    day = mem / update.remember(mem, "Zephyrine builds on kestrel-7.").path
    with day.open("a", encoding="utf-8") as fh:  # written by hand, past the cap
        fh.write("- 23:59 " + "padding " * 1500 + "\n")
    run_git(mem, "commit", "-qam", "by hand", "--no-verify")
    assert run_memory(mem, "index").returncode == 0
    text = recall.brief(mem, "claude-code", {"session_id": "s-big"})
    assert "kestrel-7" in text and "[cut: 12," in text, text[-600:]
