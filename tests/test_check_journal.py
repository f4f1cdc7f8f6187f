"""hooks/check_journal.py: journal/YYYY-MM-DD.md with a matching ``date``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from memrepo.hooks.check_journal import main

if TYPE_CHECKING:
    from conftest import VRepo


def journal(date: str) -> str:
    return f"---\ntype: journal\ndate: {date}\nsessions: [ses_a1]\n---\n\n## {date}\n"


@pytest.mark.parametrize(
    "path",
    [
        "knowledge/journal/2026-02-16.md",
        "archive/journal/2025-02-28.md",
        "archive/knowledge/journal/2024-02-29.md",
    ],
)
def test_a_journal_named_after_its_date_passes(vrepo: VRepo, path: str) -> None:
    vrepo.write(path, journal(path[-13:-3]))
    assert vrepo.run(main, path) == (0, "")


def test_a_quoted_or_datetime_date_is_accepted(vrepo: VRepo) -> None:
    vrepo.write("knowledge/journal/2026-02-16.md", journal("'2026-02-16'"))
    vrepo.write("knowledge/journal/2026-02-17.md", journal("2026-02-17T08:00:00+01:00"))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


@pytest.mark.parametrize(
    "name",
    [
        "2026-2-16.md",
        "notes.md",
        "2026-02-16.txt",
        "2026-02-30.md",
        "2026-13-01.md",
        "2026/02-16.md",
        "2026-02-16-extra.md",
    ],
)
def test_badly_named_journal_files_are_refused(vrepo: VRepo, name: str) -> None:
    path = f"knowledge/journal/{name}"
    vrepo.write(path, journal("2026-02-16"))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out == (
        f"{path}: error: journal files must be named YYYY-MM-DD.md after a real date, directly "
        "in journal/ [check-journal]\n"
    )


def test_date_must_match_the_name(vrepo: VRepo) -> None:
    path = "knowledge/journal/2026-02-16.md"
    vrepo.write(path, journal("2026-02-15"))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out == (
        f"{path}:3: error: date 2026-02-15 does not match the file name (2026-02-16) "
        "[check-journal]\n"
    )


def test_missing_date_is_one_error(vrepo: VRepo) -> None:
    path = "knowledge/journal/2026-02-16.md"
    vrepo.write(path, "---\ntype: journal\n---\n")
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out == f"{path}:2: error: a journal file needs 'date' (YYYY-MM-DD) [check-journal]\n"


def test_a_date_that_is_not_a_date_is_one_error(vrepo: VRepo) -> None:
    path = "knowledge/journal/2026-02-16.md"
    vrepo.write(path, journal("today"))
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(f"{path}:3: error: 'date' must be a date (YYYY-MM-DD)")
    assert out.count("\n") == 1


def test_no_frontmatter(vrepo: VRepo) -> None:
    path = "knowledge/journal/2026-02-16.md"
    vrepo.write(path, "## 2026-02-16\n")
    code, out = vrepo.run(main, path)
    assert code == 1
    assert out.startswith(f"{path}:1: error: no YAML frontmatter")


def test_hidden_files_and_other_directories_are_ignored(vrepo: VRepo) -> None:
    vrepo.write("knowledge/journal/.gitkeep", "")
    vrepo.write("knowledge/reference/notes.md", "no date here\n")
    vrepo.write("scratch/journal/whatever.md", "")
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")
