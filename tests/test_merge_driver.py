"""The merge driver for knowledge markdown: the merge itself, and git running it."""

from __future__ import annotations

import datetime as dt
import os
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo import doctor
from memrepo.commit import merge
from memrepo.commit.merge import merge_text
from memrepo.repo import MemoryRepo

DAY = dt.date(2026, 3, 9)
BASE = """---
type: reference
updated: 2026-03-01
tags: [a]
---

# Stack

Prose that says what this file is.

## Services
- 2026-03-01: ledger on MySQL
- 2026-03-01: queue is rabbit

## Hosts
- 2026-03-01: db1 in fra
"""


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


# --- the merge -----------------------------------------------------------------------


def test_bullets_added_on_both_sides_are_all_kept_once() -> None:
    ours = edit(BASE, ("queue is rabbit\n", "queue is rabbit\n- 2026-03-02: cache is redis\n"
                                             "- 2026-03-02: cdn is fastly\n"))
    theirs = edit(BASE, ("queue is rabbit\n", "queue is rabbit\n- 2026-03-03: dns is r53\n"
                                               "- 2026-03-02: cdn is fastly\n"))
    r = merge_text(BASE, ours, theirs, today=DAY)
    assert r.conflicts == 0
    assert ("- 2026-03-01: queue is rabbit\n- 2026-03-02: cache is redis\n"
            "- 2026-03-03: dns is r53\n- 2026-03-02: cdn is fastly\n\n## Hosts") in r.text


def test_a_bullet_changed_on_both_sides_is_kept_as_a_superseded_pair() -> None:
    ours = edit(BASE, ("2026-03-01: ledger on MySQL", "2026-03-05: ledger on PostgreSQL"))
    theirs = edit(BASE, ("2026-03-01: ledger on MySQL", "2026-03-04: ledger on SQLite"))
    r = merge_text(BASE, ours, theirs, today=DAY)
    assert r.conflicts == 0 and "MySQL" not in r.text
    assert ("- 2026-03-05: ledger on PostgreSQL\n- ~~2026-03-04: ledger on SQLite~~ "
            "(superseded 2026-03-05 by: ledger on PostgreSQL)\n") in r.text
    # the same date: theirs (the commit a rebase replays) is the current one
    theirs = edit(BASE, ("2026-03-01: ledger on MySQL", "2026-03-05: ledger on SQLite"))
    r = merge_text(BASE, ours, theirs, today=DAY)
    assert "- 2026-03-05: ledger on SQLite\n- ~~2026-03-05: ledger on PostgreSQL~~" in r.text


def test_an_undated_bullet_pair_is_superseded_today_and_keeps_its_source() -> None:
    base = "# N\n- uses MySQL [src: 2026/03/01/0900-ses_a]\n"
    r = merge_text(base, "# N\n- uses PostgreSQL [src: 2026/03/02/0900-ses_b]\n",
                   "# N\n- uses SQLite\n", today=DAY)
    assert r.text == ("# N\n- uses SQLite\n- ~~uses PostgreSQL~~ [src: 2026/03/02/0900-ses_b] "
                      "(superseded 2026-03-09 by: uses SQLite)\n")


def test_a_bullet_deleted_on_one_side_and_changed_on_the_other_is_kept_changed() -> None:
    ours = edit(BASE, ("- 2026-03-01: queue is rabbit\n", ""))
    theirs = edit(BASE, ("queue is rabbit", "queue is kafka"))
    r = merge_text(BASE, ours, theirs, today=DAY)
    assert r.conflicts == 0 and "queue is kafka" in r.text and "rabbit" not in r.text


def test_prose_changed_on_one_side_and_a_bullet_added_on_the_other_merge() -> None:
    ours = edit(BASE, ("Prose that says", "Prose that tells"))
    theirs = edit(BASE, ("Prose that says what this file is.\n",
                         "Prose that says what this file is.\n- 2026-03-02: a new bullet\n"))
    r = merge_text(BASE, ours, theirs, today=DAY)
    assert r.conflicts == 0
    assert "Prose that tells what this file is.\n- 2026-03-02: a new bullet\n" in r.text


def test_prose_changed_on_both_sides_is_a_conflict_like_git_merge_file() -> None:
    ours = edit(BASE, ("Prose that says", "Prose that tells"),
                ("queue is rabbit\n", "queue is rabbit\n- 2026-03-02: kept\n"))
    theirs = edit(BASE, ("Prose that says", "Prose that shows"))
    r = merge_text(BASE, ours, theirs, marker_size=9, labels=("HEAD", "topic"), today=DAY)
    assert r.conflicts == 1
    assert ("<<<<<<<<< HEAD\nProse that tells what this file is.\n=========\n"
            "Prose that shows what this file is.\n>>>>>>>>> topic\n") in r.text
    assert "- 2026-03-02: kept\n" in r.text  # the rest merged around the hunk


def test_frontmatter_merges_key_by_key() -> None:
    ours = edit(BASE, ("updated: 2026-03-01", "updated: 2026-03-04"), ("tags: [a]", "tags: [a, b]"))
    theirs = edit(BASE, ("updated: 2026-03-01", "updated: 2026-03-02"),
                  ("tags: [a]", "tags: [c]"), ("type: reference\n", "type: reference\nstatus: x\n"))
    r = merge_text(BASE, ours, theirs, today=DAY)
    assert r.conflicts == 0
    assert r.text.startswith("---\ntype: reference\nupdated: 2026-03-04\ntags:\n- b\n- c\n"
                             "status: x\n---\n")


def test_a_scalar_both_sides_set_differently_is_a_conflict() -> None:
    base = "---\ntype: person\nname: Ana\nrole: dev\n---\n- x\n"
    r = merge_text(base, base.replace("role: dev", "role: lead"),
                   base.replace("role: dev", "role: cto"), today=DAY)
    assert r.conflicts == 1
    assert r.text == ("---\ntype: person\nname: Ana\n<<<<<<< ours\nrole: lead\n=======\n"
                      "role: cto\n>>>>>>> theirs\n---\n- x\n")


def test_both_sides_creating_a_file_merge_from_an_empty_base() -> None:
    head = "---\ntype: journal\ndate: 2026-03-01\n{}---\n\n## 2026-03-01\n"
    r = merge_text("", head.format("updated: 2026-03-01\n") + "- 10:00 a\n",
                   head.format("updated: 2026-03-02\n") + "- 11:00 b\n", today=DAY)
    assert r.conflicts == 0
    assert r.text == head.format("updated: 2026-03-02\n") + "- 10:00 a\n- 11:00 b\n"


def test_a_file_that_is_not_utf8_goes_to_git_merge_file(tmp_path: Path) -> None:
    o, a, b = (tmp_path / n for n in "oab")
    o.write_bytes(b"x\xff\n1\n")
    a.write_bytes(b"x\xff\n1\n2\n")
    b.write_bytes(b"x\xff\n1\n3\n")
    assert merge.run_driver(o, a, b, "f.md") == 1
    assert b"<<<<<<< ours:f.md" in a.read_bytes()


# --- git running it -------------------------------------------------------------------


def _branches(root: Path, path: str, ours: str, theirs: str) -> None:
    (root / path).write_text(BASE)
    run_git(root, "add", path)
    run_git(root, "commit", "-q", "--no-verify", "-m", "base")
    run_git(root, "checkout", "-q", "-b", "topic")
    (root / path).write_text(theirs)
    run_git(root, "commit", "-q", "--no-verify", "-am", "theirs")
    run_git(root, "checkout", "-q", "main")
    (root / path).write_text(ours)
    run_git(root, "commit", "-q", "--no-verify", "-am", "ours")


def test_init_defines_the_driver_and_git_merge_runs_it_without_path(crepo: Path) -> None:
    """`memory init` set merge.memrepo.driver (this interpreter, absolute); a plain
    `git merge` with a PATH that has no memrepo on it merges two rewordings cleanly."""
    command = run_git(crepo, "config", "--get", "merge.memrepo.driver").stdout.strip()
    exe = Path(shlex.split(command)[0])
    assert exe.is_absolute() and exe.resolve() == Path(sys.executable).resolve()
    assert command.endswith(" -m memrepo merge-driver --marker-size %L %O %A %B %P")
    path = "knowledge/reference/stack.md"
    assert merge.attribute_of(crepo, path) == "memrepo"
    _branches(crepo, path, edit(BASE, ("ledger on MySQL", "ledger on PostgreSQL")),
              edit(BASE, ("ledger on MySQL", "ledger on SQLite")))
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(["git", "merge", "-q", "--no-verify", "--no-edit", "topic"],
                          cwd=crepo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (crepo / path).read_text()
    assert "- 2026-03-01: ledger on SQLite\n- ~~2026-03-01: ledger on PostgreSQL~~" in text


def test_what_the_driver_cannot_merge_stops_git_with_markers(crepo: Path) -> None:
    path = "knowledge/reference/stack.md"
    _branches(crepo, path, edit(BASE, ("Prose that says", "Prose that tells")),
              edit(BASE, ("Prose that says", "Prose that shows")))
    proc = run_git(crepo, "merge", "--no-edit", "topic", check=False)
    assert proc.returncode != 0 and "CONFLICT" in proc.stdout
    text = (crepo / path).read_text()
    assert "<<<<<<< ours:" in text and "Prose that shows" in text and "Prose that tells" in text
    assert run_git(crepo, "diff", "--name-only", "--diff-filter=U").stdout.split() == [path]


def test_doctor_reports_and_fixes_a_clone_without_the_driver(crepo: Path) -> None:
    repo = MemoryRepo(crepo)
    run_git(crepo, "config", "--unset", "merge.memrepo.driver")
    [check] = doctor.merge_driver_checks(repo)
    assert check.warning and "merge.memrepo.driver is not set" in check.detail
    proc = invoke_memory(crepo, "doctor", "--fix")
    assert "fixed: configured merge driver" in proc.stdout
    assert "[ok  ] merge driver" in proc.stdout
    assert merge.configured(crepo) == merge.driver_command()
    # an interpreter that is gone: every merge would stop, a failure; a fix replaces it
    run_git(crepo, "config", "merge.memrepo.driver", "/gone/python -m memrepo merge-driver")
    [check] = doctor.merge_driver_checks(repo)
    assert not check.ok and not check.warning and "/gone/python" in check.detail
    assert merge.install_driver(crepo) and merge.configured(crepo) == merge.driver_command()
    # .gitattributes that does not name the driver (a repo from before it)
    (crepo / ".git/info/attributes").write_text("knowledge/**/*.md merge=text\n")
    [check] = doctor.merge_driver_checks(repo)
    assert check.warning and "merge=text" in check.detail


def test_a_second_init_changes_nothing(crepo: Path) -> None:
    proc = invoke_memory(crepo, "init", str(crepo))
    assert proc.returncode == 0 and "merge driver" not in proc.stdout
    assert "nothing changed" in proc.stdout
