"""memory extract: offline on a week of transcripts, LLM with canned answers, cache, trace."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_git, run_memory

from memrepo.extract import extract, select
from memrepo.extract.entries import SUPERSEDED_LINE
from memrepo.formats import parse_document
from memrepo.llm import for_repo

LEDGER = "knowledge/projects/ledger/context.md"
MEMORY = "knowledge/memory/MEMORY.md"


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def test_offline_week_makes_the_expected_edits(lrepo: Path):
    before = {p: read(lrepo, p) for p in select(lrepo)}
    proc = run_memory(lrepo, "extract", "--offline")
    assert proc.returncode == 0, proc.stderr
    assert "7 transcripts" in proc.stdout and "1 superseded" in proc.stdout
    ledger = read(lrepo, LEDGER)
    old, new = [line for line in ledger.splitlines() if "MySQL" in line]
    assert SUPERSEDED_LINE.match(old) and "(superseded 2026-03-05 by: " in old
    assert new.startswith("- 2026-03-05: ") and "[src: 2026/03/05/1615-ses_w1d]" in new
    memory = read(lrepo, MEMORY)
    assert "User prefers bullet lists" in memory
    assert "check the migration log" in memory and memory.count("run the migrations") == 1
    assert "[src: 2026/03/03/1400-ses_w1b; 2026/03/08/2000-ses_w1g]" in memory  # UPDATE
    assert "Always test webhook payloads with real data" in memory
    bob = read(lrepo, "knowledge/people/bob-chen.md")
    assert "name: Bob Chen" in bob and "risks section" in bob
    assert not (lrepo / "knowledge/people/bob.md").exists()
    assert "**Alice Martin** — database administrator" in read(lrepo, "knowledge/people/_index.md")
    proc_steps = read(lrepo, "knowledge/procedures/deploy-the-ledger-service-to-production.md")
    assert "type: procedure" in proc_steps and "make migrate" in proc_steps
    assert "port 5433" in read(lrepo, "knowledge/reference/ledger.md")
    journal = read(lrepo, "knowledge/journal/2026-03-04.md")
    assert "sessions:\n- ses_w1c" in journal and "### weekly-report-format" in journal
    assert "Open: Send the first weekly report to Bob on Friday." in journal
    everything = "\n".join(read(lrepo, str(p.relative_to(lrepo)))
                           for p in (lrepo / "knowledge").rglob("*.md"))
    # exclusions: small talk, speculation, secrets
    assert "Good morning" not in everything and "managed service" not in everything
    assert "CockroachDB" not in everything and "REDACTED" not in everything
    assert "database password" not in everything
    # every extracted line is traceable
    for p in (lrepo / "knowledge").rglob("*.md"):
        if "identity" in p.parts:
            continue
        rel = str(p.relative_to(lrepo))
        for line in parse_document(read(lrepo, rel), rel).body.splitlines():
            if line.startswith("- ") and "**" not in line:
                assert "[src: 2026/03/" in line, (p, line)
    # transcripts untouched, one extract commit with the trailers, clean tree
    assert {p: read(lrepo, p) for p in before} == before
    log = run_git(lrepo, "log", "-1", "--format=%B").stdout
    assert log.startswith("extract: ") and log.count("Session: raw/conversations/") == 7
    assert run_git(lrepo, "status", "--porcelain", "knowledge").stdout == ""
    # nothing pending: a second run has nothing to do; --all replays to zero edits
    assert "nothing to extract" in run_memory(lrepo, "extract", "--offline").stdout
    again = run_memory(lrepo, "extract", "--offline", "--all")
    assert "0 added, 0 updated, 0 superseded" in again.stdout


def canned(body: dict) -> str:
    """The model's answers: per extractor for `extract`, ADD/UPDATE/SUPERSEDE for reconcile."""
    user = body["messages"][0]["content"]
    if "Candidates:" in user:
        cands = user.split("Candidates:")[1]
        decisions = []
        for line in cands.strip().splitlines():
            i = int(line.split(".")[0])
            if "PostgreSQL" in line:
                decisions.append({"candidate": i, "action": "SUPERSEDE", "existing": 0,
                                  "text": None})
            elif "migration log" in line:
                decisions.append({"candidate": i, "action": "UPDATE", "existing": 0,
                                  "text": "Run migrations before deploying the ledger and "
                                          "check the migration log"})
            elif "Run migrations before deploying" in line:
                decisions.append({"candidate": i, "action": "NONE", "existing": 0})
            else:
                decisions.append({"candidate": i, "action": "ADD", "existing": None})
        return json.dumps({"decisions": decisions})
    ex = user.split("Extractor: ")[1].split(" ")[0]
    items = []
    if ex == "decisions" and "ses_w1a" in user:
        items = [{"text": "Use MySQL for the ledger database", "subject": "ledger"}]
    elif ex == "decisions" and "ses_w1d" in user:
        items = [{"text": "Use PostgreSQL for the ledger database (replaces MySQL)"}]
    elif ex == "lessons" and "ses_w1b" in user:
        items = [{"text": "Run migrations before deploying the ledger"}]
    elif ex == "lessons" and "ses_w1g" in user:
        items = [{"text": "Run migrations before deploying the ledger"},
                 {"text": "Check the migration log for errors after migrating"}]
    return json.dumps({"items": items})


def test_llm_path_add_update_supersede_none_and_cached_replay(lrepo: Path, lrepo_client):
    client, seen = lrepo_client(canned)
    llm = for_repo(lrepo, client=client)
    paths = select(lrepo)
    report = extract(lrepo, paths, llm, ["decisions", "lessons"])
    counts = report.counts()
    assert counts == {"ADD": 2, "UPDATE": 1, "SUPERSEDE": 1, "NONE": 1}, report.edits
    ledger = read(lrepo, LEDGER)
    assert "- ~~2026-03-02: Use MySQL for the ledger database~~ [src: 2026/03/02/0910-ses_w1a]" \
        " (superseded 2026-03-05 by: Use PostgreSQL" in ledger
    memory = read(lrepo, MEMORY)
    assert "- 2026-03-08: Run migrations before deploying the ledger and check the migration" \
           " log [src: 2026/03/03/1400-ses_w1b; 2026/03/08/2000-ses_w1g]" in memory
    calls = len(seen)
    assert calls == 14 + 2  # 7 transcripts x 2 extractors + 2 reconcile calls
    assert llm.usage.calls == calls and report.llm_pairs == 14 and report.offline_pairs == 0
    # replay with nothing changed: every answer comes from the cache
    llm2 = for_repo(lrepo, client=client)
    again = extract(lrepo, paths, llm2, ["decisions", "lessons"])
    assert len(seen) == calls and llm2.usage.calls == 0 and llm2.usage.cached >= 14
    assert {e.action for e in again.edits} == {"NONE"}, again.edits
    assert again.commit is None and again.written == []
    cache = lrepo / ".memrepo/cache/llm"
    assert any(cache.rglob("*.json"))
    assert run_git(lrepo, "check-ignore", "-q", ".memrepo/cache/llm").returncode == 0


def test_malformed_answers_fall_back_to_heuristics(lrepo: Path, lrepo_client, capsys):
    client, seen = lrepo_client(lambda body: "I cannot do JSON today")
    llm = for_repo(lrepo, client=client)
    path = "raw/conversations/2026/03/05/1615-ses_w1d-switch-to-postgres.md"
    report = extract(lrepo, [path], llm, ["decisions"], commit=False)
    assert len(seen) == 2 and report.offline_pairs == 1
    assert "PostgreSQL instead of MySQL" in read(lrepo, LEDGER)
    assert "offline path" in capsys.readouterr().err
