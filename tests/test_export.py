"""memory export: every entry with its sources, as JSON Lines or markdown."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_memory, run_git


def test_export_lists_entries_with_sources_and_filters_by_date(lrepo: Path) -> None:
    assert invoke_memory(lrepo, "extract", "--offline").returncode == 0
    mem = lrepo / "knowledge/memory/MEMORY.md"
    mem.write_text(mem.read_text() + "\n## Key Decisions\n\n"
                   "- ~~2026-03-02: Use MySQL for the ledger~~ [src: 2026/03/02/0900-s1]"
                   " (superseded 2026-03-05 by: Use PostgreSQL for the ledger)\n"
                   "- 2026-03-05: Use PostgreSQL for the ledger [src: 2026/03/05/0900-s2]\n")
    run_git(lrepo, "commit", "-qam", "memory: ledger decision", "--no-verify")
    proc = invoke_memory(lrepo, "export")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows and all(set(r) == {"path", "line", "category", "section", "date", "text",
                                   "sources", "superseded"} for r in rows)
    journal = [r for r in rows if r["path"].startswith("knowledge/journal/")]
    assert any(r["sources"] for r in journal)
    # a journal's `- HH:MM` bullets carry its day (they were `date: null`)
    assert journal and all(r["date"] == r["path"][-13:-3] for r in journal), journal
    pg = next(r for r in rows if r["text"] == "Use PostgreSQL for the ledger")
    assert pg["sources"] == ["2026/03/05/0900-s2"] and pg["section"] == "Key Decisions"
    assert mem.read_text().split("\n")[pg["line"] - 1].startswith("- 2026-03-05: Use Postgre")
    mysql = next(r for r in rows if r["text"] == "Use MySQL for the ledger")
    assert mysql["superseded"] and mysql["date"] == "2026-03-02"
    later = [json.loads(x) for x in invoke_memory(lrepo, "export", "--since", "2026-03-05")
             .stdout.splitlines()]
    assert pg in later and mysql not in later and len(later) < len(rows)
    md = invoke_memory(lrepo, "export", "--format", "markdown").stdout
    assert "## knowledge/memory/MEMORY.md" in md
    assert "- 2026-03-02: ~~Use MySQL for the ledger~~ (superseded) [Key Decisions]" in md
    assert run_git(lrepo, "status", "--porcelain").stdout == ""  # nothing written
