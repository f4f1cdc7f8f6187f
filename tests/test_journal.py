"""The journal writer: one form for a new day, and no note lost to writers side by side."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memrepo.layout import journal_path
from memrepo.lifecycle import journal
from memrepo.lifecycle.extract.apply import Workspace

NOW = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.timezone.utc)


def test_every_writer_starts_a_day_from_the_template(tmp_path: Path) -> None:
    day = NOW.date()
    new = journal.journal_text(day)
    assert new == f"---\ntype: journal\ndate: {day}\n---\n\n## {day}\n"
    # extraction, condense and flush: through the workspace
    lines = Workspace(tmp_path).lines(journal_path(day), {"type": "journal"}, day.isoformat())
    assert "\n".join(lines) == new
    # memory remember
    rel, line = journal.remember(tmp_path, "Payments use HMAC", ["#payments"], now=NOW)
    assert rel == journal_path(day) and line == 9
    assert (tmp_path / rel).read_text() == new.replace(
        "---\n\n", "tags:\n- payments\n---\n\n"
    ) + "- 10:00 Payments use HMAC  #payments\n"


def test_remember_side_by_side_loses_no_note(tmp_path: Path) -> None:
    """Issue #14: concurrent read-modify-writes of one day kept only the last one."""

    def writer(w: int) -> None:
        for i in range(25):
            journal.remember(tmp_path, f"note {w}-{i}", now=NOW)

    with ThreadPoolExecutor(max_workers=8) as pool:
        for f in [pool.submit(writer, w) for w in range(8)]:
            f.result()
    text = (tmp_path / journal_path(NOW.date())).read_text()
    missing = [(w, i) for w in range(8) for i in range(25) if f"- 10:00 note {w}-{i}\n" not in text]
    assert missing == []
    assert text.count("- 10:00 note ") == 200
