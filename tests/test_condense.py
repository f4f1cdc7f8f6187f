"""memory condense: daily journal, weekly rollup, and the MEMORY.md cap guarantee."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.layout import MEMORY_ARCHIVE, MEMORY_FILE
from memrepo.lifecycle import cap
from memrepo.lifecycle import condense as C
from memrepo.lifecycle.plan import Plan
from memrepo.llm import for_repo


def fill_memory(root: Path, n: int) -> str:
    text = (root / MEMORY_FILE).read_text(encoding="utf-8")
    lines = [f"- 2026-01-{1 + i % 28:02d}: Fact number {i} about the ledger [src: 2026/01/01/0900-ses_{i}]"
             for i in range(n)]
    text = text.replace("## Lessons Learned\n", "## Lessons Learned\n" + "\n".join(lines) + "\n")
    (root / MEMORY_FILE).write_text(text, encoding="utf-8")
    return text


def test_daily_and_weekly_offline(lrepo: Path):
    proc = invoke_memory(lrepo, "condense", "daily", "--date", "2026-03-05", "--offline")
    assert proc.returncode == 0, proc.stderr
    journal = (lrepo / "knowledge/journal/2026-03-05.md").read_text()
    assert "### ledger" in journal and "Decided: We decided to use PostgreSQL" in journal
    dry = invoke_memory(lrepo, "condense", "weekly", "--date", "2026-03-05", "--offline",
                     "--dry-run")
    assert "+- 2026-03-05: We decided to use PostgreSQL" in dry.stdout
    assert run_git(lrepo, "status", "--porcelain", MEMORY_FILE).stdout == ""  # dry run wrote nothing
    proc = invoke_memory(lrepo, "condense", "weekly", "--date", "2026-03-05", "--offline")
    assert proc.returncode == 0 and "maintenance: weekly" in run_git(
        lrepo, "log", "-1", "--format=%s").stdout


def test_offline_cap_moves_oldest_to_archive(crepo: Path):
    fill_memory(crepo, 260)
    written = cap.enforce_cap(crepo, None)
    text = (crepo / MEMORY_FILE).read_text()
    assert cap.line_count(text) <= 200 and set(written) == {MEMORY_FILE, MEMORY_ARCHIVE}
    archive = (crepo / MEMORY_ARCHIVE).read_text()
    moved = archive.count("Fact number")
    assert moved + text.count("Fact number") == 260  # nothing lost
    assert invoke_memory(crepo, "hook", "pre-commit", MEMORY_FILE, MEMORY_ARCHIVE).returncode == 0


def test_model_rewrite_over_cap_or_silent_drop_is_rejected(crepo: Path, lrepo_client, capsys):
    text = fill_memory(crepo, 230)
    too_long = {"memory": "# Core Memory\n\n## Lessons Learned\n" + "- x\n" * 300, "moved": []}
    silent = {"memory": "# Core Memory\n\n## Lessons Learned\n- 2026-01-01: Fact number 1\n",
              "moved": []}
    for answer, why in ((too_long, "over the cap"), (silent, "without saying where")):
        client, seen = lrepo_client(lambda body, a=answer: json.dumps(a))
        llm = for_repo(crepo, client=client)
        llm.cache = None  # a rejected answer is cached too; each case asks afresh
        plan = cap.cap_plan(crepo, text, llm)
        assert why in capsys.readouterr().err
        assert cap.line_count(plan.texts[MEMORY_FILE]) <= 200  # offline path took over
        assert len(seen) == 1
    kept = [line for line in text.splitlines() if "Fact number" in line][:150]
    said = {"memory": "# Core Memory\n\n## Lessons Learned\n" + "\n".join(kept) + "\n",
            "moved": [{"entry": f"Fact number {i} about the ledger", "to": "archive"}
                      for i in range(150, 230)]}
    client, seen = lrepo_client(lambda body: json.dumps(said))
    llm = for_repo(crepo, client=client)
    llm.cache = None
    plan = cap.cap_plan(crepo, text, llm)
    assert cap.line_count(plan.texts[MEMORY_FILE]) <= 200
    assert "moved to: archive" in plan.texts[MEMORY_ARCHIVE]
    assert seen[0]["model"] == "claude-sonnet-4-6"


def test_weekly_never_leaves_memory_over_cap(lrepo: Path):
    fill_memory(lrepo, 199)
    invoke_memory(lrepo, "extract", "--offline")  # extraction itself enforces the cap
    text = (lrepo / MEMORY_FILE).read_text()
    assert cap.line_count(text) <= 200
    plan = C.weekly(lrepo, dt.date(2026, 3, 5), None)
    assert cap.line_count(plan.texts[MEMORY_FILE]) <= 200


def _rewrite(text: str, keep) -> dict:
    """A model answer keeping the body lines ``keep`` selects, nothing said moved."""
    body = text.split("---\n", 2)[2]
    return {"memory": "\n".join(line for line in body.splitlines() if keep(line)) + "\n",
            "moved": []}


def test_rewrite_that_strips_src_references_is_rejected(crepo: Path, lrepo_client, capsys):
    text = fill_memory(crepo, 230)
    body = text.split("---\n", 2)[2]
    kept = [line for line in body.splitlines() if "Fact number" not in line or
            int(line.split("Fact number ")[1].split()[0]) < 180]
    stripped = {"memory": re.sub(r" \[src: [^\]]+\]", "", "\n".join(kept)) + "\n",
                "moved": [{"entry": f"Fact number {i} about the ledger", "to": "archive"}
                          for i in range(180, 230)]}
    _, why = cap.guarded_rewrite(text, stripped, 200)
    assert why is not None and "lost their [src: …] reference" in why
    client, seen = lrepo_client(lambda body: json.dumps(stripped))
    llm = for_repo(crepo, client=client)
    llm.cache = None
    plan = cap.cap_plan(crepo, text, llm)
    assert "[src: …]" in capsys.readouterr().err and len(seen) == 1
    assert plan.texts[MEMORY_FILE].count("[src: 2026/01/01/0900-ses_") >= 150  # offline path
    keeps_src = {"memory": "\n".join(kept) + "\n", "moved": stripped["moved"]}
    assert cap.guarded_rewrite(text, keeps_src, 200)[1] is None


def test_superseded_entries_a_rewrite_drops_go_to_the_archive(crepo: Path):
    text = fill_memory(crepo, 10)
    old = [f"- ~~2026-01-0{i}: Use MySQL {i} for the ledger~~ [src: 2026/01/0{i}/0900-ses_o{i}]"
           f" (superseded 2026-02-01 by: Use PostgreSQL)" for i in range(1, 6)]
    text = text.replace("## Key Decisions\n", "## Key Decisions\n" + "\n".join(old) + "\n")
    answer = _rewrite(text, lambda line: "~~" not in line)
    new_text, why = cap.guarded_rewrite(text, answer, 200)
    assert why is None and "MySQL" not in new_text
    plan = Plan()
    cap.accept_rewrite(crepo, plan, text, new_text, answer)
    archive = plan.texts[MEMORY_ARCHIVE]
    assert all(line in archive for line in old)  # nothing lost: kept, still marked superseded
    assert "(5 superseded)" in plan.notes[-1]


def test_daily_drops_unsourced_and_excluded_model_bullets(lrepo: Path, lrepo_client):
    answer = {"topics": [{"topic": "ledger", "bullets": [
        {"text": "Decided: use PostgreSQL for the ledger database.", "source": 0},
        {"text": "Decided: adopt Kafka for the event bus.", "source": 3},
        {"text": "The staging admin password is letmein and it lives in the vault.",
         "source": 0},
        {"text": "Maybe we could move the analytics store later.", "source": 0}]}]}
    client, _ = lrepo_client(lambda body: json.dumps(answer))
    llm = for_repo(lrepo, client=client)
    plan = C.daily(lrepo, dt.date(2026, 3, 5), llm)
    journal = plan.texts["knowledge/journal/2026-03-05.md"]
    assert "use PostgreSQL for the ledger database" in journal
    assert "[src: 2026/03/05/1615-ses_w1d]" in journal
    assert "Kafka" not in journal and "letmein" not in journal and "analytics" not in journal
    notes = "\n".join(plan.notes)
    assert "dropped 1 model bullets whose source is not one of the 1 transcripts" in notes
    assert "dropped 2 model bullets the extraction exclusions reject" in notes


def test_daily_skips_a_bad_transcript_and_exits_non_zero(lrepo: Path):
    bad = lrepo / "raw/conversations/2026/03/05/1800-ses_bad-broken.md"
    bad.write_bytes(b"---\nsession_id: ses_bad\nstarted: 2026-03-05T18:00:00+00:00\n"
                    b"ended: 2026-03-05T18:10:00+00:00\n---\n\n# x\n\n## 18:00 \xe2\x80\x94 user\n"
                    b"We decided \xff to go.\n")
    proc = invoke_memory(lrepo, "condense", "daily", "--date", "2026-03-05", "--offline")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "1800-ses_bad-broken.md:10: not UTF-8 text (byte 0xff) (skipped)" in proc.stderr
    journal = (lrepo / "knowledge/journal/2026-03-05.md").read_text()
    assert "Decided: We decided to use PostgreSQL" in journal  # the good one was condensed


def test_bad_date_is_a_usage_error(lrepo: Path):
    for argv in (["condense", "daily", "--date", "2026-02-30"], ["tag", "daily", "--date", "x"],
                 ["prune", "--date", "yesterday"]):
        proc = invoke_memory(lrepo, *argv)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, argv
        assert "Invalid value for '--date'" in proc.stderr and "is not a date" in proc.stderr


def test_a_note_remembered_while_a_plan_is_made_is_kept(crepo: Path) -> None:
    """#14: condense / prune / cap write under the journal lock and keep the lines another
    writer added since the plan read the file (as extraction's Workspace does)."""
    from memrepo.layout import journal_path
    from memrepo.lifecycle import journal

    day = dt.date.today()
    journal.remember(crepo, "first note")
    rel = journal_path(day)
    read = (crepo / rel).read_text(encoding="utf-8")
    plan = Plan(texts={rel: read.replace("first note", "first note, condensed")},
                base={rel: read})
    journal.remember(crepo, "written while the plan was being made")  # exit 0: kept
    assert plan.apply(crepo, "maintenance: test plan") is not None
    text = (crepo / rel).read_text(encoding="utf-8")
    assert "first note, condensed" in text
    assert "written while the plan was being made" in text
    assert "written while the plan was being made" in run_git(
        crepo, "show", f"HEAD:{rel}").stdout
