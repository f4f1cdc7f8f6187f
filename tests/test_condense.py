"""memory condense: daily journal, weekly rollup, and the MEMORY.md cap guarantee."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from conftest import run_git, run_memory

from memrepo import condense as C
from memrepo.llm import for_repo

MEMORY = "knowledge/memory/MEMORY.md"


def fill_memory(root: Path, n: int) -> str:
    text = (root / MEMORY).read_text(encoding="utf-8")
    lines = [f"- 2026-01-{1 + i % 28:02d}: Fact number {i} about the ledger [src: 2026/01/01/0900-ses_{i}]"
             for i in range(n)]
    text = text.replace("## Lessons Learned\n", "## Lessons Learned\n" + "\n".join(lines) + "\n")
    (root / MEMORY).write_text(text, encoding="utf-8")
    return text


def test_daily_and_weekly_offline(lrepo: Path):
    proc = run_memory(lrepo, "condense", "daily", "--date", "2026-03-05", "--offline")
    assert proc.returncode == 0, proc.stderr
    journal = (lrepo / "knowledge/journal/2026-03-05.md").read_text()
    assert "### ledger" in journal and "Decided: We decided to use PostgreSQL" in journal
    dry = run_memory(lrepo, "condense", "weekly", "--date", "2026-03-05", "--offline",
                     "--dry-run")
    assert "+- 2026-03-05: We decided to use PostgreSQL" in dry.stdout
    assert run_git(lrepo, "status", "--porcelain", MEMORY).stdout == ""  # dry run wrote nothing
    proc = run_memory(lrepo, "condense", "weekly", "--date", "2026-03-05", "--offline")
    assert proc.returncode == 0 and "maintenance: weekly" in run_git(
        lrepo, "log", "-1", "--format=%s").stdout


def test_offline_cap_moves_oldest_to_archive(crepo: Path):
    fill_memory(crepo, 260)
    written = C.enforce_cap(crepo, None)
    text = (crepo / MEMORY).read_text()
    assert C.line_count(text) <= 200 and set(written) == {MEMORY, C.ARCHIVE_MEMORY}
    archive = (crepo / C.ARCHIVE_MEMORY).read_text()
    moved = archive.count("Fact number")
    assert moved + text.count("Fact number") == 260  # nothing lost
    assert run_memory(crepo, "hook", "pre-commit", MEMORY, C.ARCHIVE_MEMORY).returncode == 0


def test_model_rewrite_over_cap_or_silent_drop_is_rejected(crepo: Path, lrepo_client, capsys):
    text = fill_memory(crepo, 230)
    too_long = {"memory": "# Core Memory\n\n## Lessons Learned\n" + "- x\n" * 300, "moved": []}
    silent = {"memory": "# Core Memory\n\n## Lessons Learned\n- 2026-01-01: Fact number 1\n",
              "moved": []}
    for answer, why in ((too_long, "over the cap"), (silent, "without saying where")):
        client, seen = lrepo_client(lambda body, a=answer: json.dumps(a))
        llm = for_repo(crepo, client=client)
        llm.cache = None  # a rejected answer is cached too; each case asks afresh
        plan = C.cap_plan(crepo, text, llm)
        assert why in capsys.readouterr().err
        assert C.line_count(plan.texts[MEMORY]) <= 200  # offline path took over
        assert len(seen) == 1
    kept = [line for line in text.splitlines() if "Fact number" in line][:150]
    said = {"memory": "# Core Memory\n\n## Lessons Learned\n" + "\n".join(kept) + "\n",
            "moved": [{"entry": f"Fact number {i} about the ledger", "to": "archive"}
                      for i in range(150, 230)]}
    client, seen = lrepo_client(lambda body: json.dumps(said))
    llm = for_repo(crepo, client=client)
    llm.cache = None
    plan = C.cap_plan(crepo, text, llm)
    assert C.line_count(plan.texts[MEMORY]) <= 200
    assert "moved to: archive" in plan.texts[C.ARCHIVE_MEMORY]
    assert seen[0]["model"] == "claude-sonnet-4-6"


def test_weekly_never_leaves_memory_over_cap(lrepo: Path):
    fill_memory(lrepo, 199)
    run_memory(lrepo, "extract", "--offline")  # extraction itself enforces the cap
    text = (lrepo / MEMORY).read_text()
    assert C.line_count(text) <= 200
    plan = C.weekly(lrepo, dt.date(2026, 3, 5), None)
    assert C.line_count(plan.texts[MEMORY]) <= 200
