"""memory extract: offline on a week of transcripts, LLM with canned answers, cache, trace."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.documents import parse_document
from memrepo.entries import SUPERSEDED_LINE
from memrepo.lifecycle.extract.runner import extract, select
from memrepo.llm import for_repo

LEDGER = "knowledge/projects/ledger/context.md"
MEMORY = "knowledge/memory/MEMORY.md"


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def test_offline_week_makes_the_expected_edits(lrepo: Path):
    before = {p: read(lrepo, p) for p in select(lrepo)}
    proc = invoke_memory(lrepo, "extract", "--offline")
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
    assert "nothing to extract" in invoke_memory(lrepo, "extract", "--offline").stdout
    again = invoke_memory(lrepo, "extract", "--offline", "--all")
    assert "0 added, 0 updated, 0 superseded" in again.stdout


def user_text(body: dict) -> str:
    """The first user message as text (a string, or text blocks: shared part, then per call)."""
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "\n".join(b["text"] for b in content)


def canned(body: dict) -> str:
    """The model's answers: per extractor for `extract`, ADD/UPDATE/SUPERSEDE for reconcile."""
    user = user_text(body)
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


def transcript(session: str, body: str, *, extra: str = "", started: str = "2026-03-09T10:00:00+00:00",
               ended: str | None = "2026-03-09T10:30:00+00:00") -> str:
    end = f"ended: {ended}\n" if ended else ""
    return (f"---\nsession_id: {session}\nstarted: {started}\n{end}{extra}---\n\n# Notes\n\n"
            f"## 10:00 — user\n{body}\n")


def add_transcript(root: Path, name: str, text: str | bytes) -> str:
    rel = f"raw/conversations/2026/03/09/{name}"
    full = root / rel
    full.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        full.write_bytes(text)
    else:
        full.write_text(text, encoding="utf-8")
    return rel


def knowledge_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (root / "knowledge").rglob("*.md"))


def test_a_sentence_stating_a_password_is_never_extracted(crepo: Path, lrepo_client):
    secret = "hunter" + "2"
    line = f"The staging admin password is {secret} and it is stored in the team vault."
    path = add_transcript(crepo, "1000-ses_pw-staging.md", transcript(
        "ses_pw", line + "\nThe staging API is hosted on fly.io in the ams region."))
    proc = invoke_memory(crepo, "extract", "--offline", path)
    assert proc.returncode == 0, proc.stderr
    everything = knowledge_text(crepo)
    assert "fly.io" in everything  # the harmless fact next to it is extracted
    assert secret not in everything and "admin password" not in everything
    # a model answer that repeats it is filtered the same way
    client, _ = lrepo_client(lambda body: json.dumps({"items": [
        {"text": "The staging admin password is letmein.", "subject": "staging"},
        {"text": "Staging runs in the ams region.", "subject": "staging"}]}))
    report = extract(crepo, [path], for_repo(crepo, client=client), ["facts"], commit=False)
    texts = [e.text for e in report.edits]
    assert "Staging runs in the ams region." in texts and not any("letmein" in t for t in texts)


def test_facts_without_project_or_tags_go_to_general_not_session(crepo: Path, lrepo_client):
    path = add_transcript(crepo, "1100-ses_np-notes.md", transcript(
        "ses_np", "The backup bucket is hosted on s3 in eu-west-1."))
    extract(crepo, [path], for_repo(crepo, offline=True), ["facts"], commit=False)
    assert "backup bucket" in (crepo / "knowledge/reference/general.md").read_text()
    assert not (crepo / "knowledge/reference/session.md").exists()
    client, _ = lrepo_client(lambda body: json.dumps({"items": [
        {"text": "The metrics endpoint is https://metrics.example.com.", "subject": None},
        {"text": "The status page is hosted at status.example.com.", "subject": "  "}]}))
    report = extract(crepo, [path], for_repo(crepo, client=client), ["facts"], commit=False)
    assert {e.path for e in report.edits} == {"knowledge/reference/general.md"}
    assert not (crepo / "knowledge/reference/session.md").exists()


def test_bad_transcripts_are_reported_and_skipped_the_rest_extracted(lrepo: Path):
    bad_yaml = add_transcript(lrepo, "0900-ses_by-broken.md",
                              "---\nsession_id: ses_by\nstarted: [unclosed\n---\n\n# x\n")
    bad_utf8 = add_transcript(lrepo, "0930-ses_bu-latin1.md", transcript(
        "ses_bu", "We decided to use cafe names.").encode().replace(b"cafe", b"caf\xe9"))
    run_git(lrepo, "add", "-A", "raw")
    run_git(lrepo, "commit", "-q", "--no-verify", "-m", "conversation: bad ones")
    proc = invoke_memory(lrepo, "extract", "--offline")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "7 transcripts" in proc.stdout  # the good week was extracted
    assert f"{bad_yaml}:3: " in proc.stderr and "(skipped)" in proc.stderr
    assert f"{bad_utf8}:10: not UTF-8 text (byte 0xe9)" in proc.stderr
    assert "1 superseded" in proc.stdout and (lrepo / LEDGER).exists()
    # bad ones are not marked done: fixed, they are extracted next time
    (lrepo / bad_utf8).write_text(transcript("ses_bu", "We decided to use cafe names."))
    again = invoke_memory(lrepo, "extract", "--offline")
    assert again.returncode == 1 and "1 transcripts" in again.stdout
    assert bad_utf8 not in again.stderr and bad_yaml in again.stderr


def test_open_transcript_named_is_reported_as_skipped(crepo: Path):
    path = add_transcript(crepo, "1200-ses_op-open.md",
                          transcript("ses_op", "We decided to use Rust.", ended=None))
    proc = invoke_memory(crepo, "extract", "--offline", path)
    assert proc.returncode == 0, proc.stderr
    assert "0 transcripts" in proc.stdout
    assert f"skipped (open): {path}" in proc.stderr


def test_bad_since_date_is_a_usage_error(crepo: Path):
    proc = invoke_memory(crepo, "extract", "--since", "last tuesday")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "'last tuesday' is not a date" in proc.stderr


def test_reconcile_calls_of_one_transcript_run_in_parallel(crepo: Path):
    """Sections are independent: their decider calls overlap (a barrier that two
    sequential calls could never pass)."""
    import threading

    from memrepo.lifecycle.extract.apply import Workspace
    from memrepo.lifecycle.extract.extractors import Item

    ws = Workspace(crepo)
    seed = [Item("x", "Old fact one about billing", MEMORY, "Key Decisions", "s0", "2026-03-01"),
            Item("x", "Old lesson about deploys", MEMORY, "Lessons Learned", "s0", "2026-03-01")]
    ws.apply(seed)
    barrier = threading.Barrier(2, timeout=5)
    asked = []

    def decider(path, section, existing, pending):
        barrier.wait()  # raises BrokenBarrierError unless both sections are asked at once
        asked.append(section)
        return {0: ("ADD", None, "")}

    new = [Item("x", "New decision about invoices", MEMORY, "Key Decisions", "s1", "2026-03-02"),
           Item("x", "New lesson about rollbacks", MEMORY, "Lessons Learned", "s1", "2026-03-02")]
    edits = ws.apply(new, decider, parallel=2)
    assert sorted(asked) == ["Key Decisions", "Lessons Learned"]
    assert [e.action for e in edits] == ["ADD", "ADD"]


def test_prefetch_lets_one_call_per_transcript_write_the_prompt_cache_first(lrepo: Path):
    """The other extractors of a transcript start only once its first call answered."""
    import time

    from conftest import fake_anthropic

    from memrepo.lifecycle.extract import extractors as X
    from memrepo.lifecycle.extract.runner import Extraction, context
    from memrepo.transcript.read import read_transcript

    spans: list[tuple[str, float, float]] = []

    def slow(body: dict) -> str:
        start = time.monotonic()
        time.sleep(0.05)
        spans.append((user_text(body).split("Transcript ")[1].split(" ")[0], start,
                      time.monotonic()))
        return json.dumps({"items": []})

    seen: list[dict] = []
    llm = for_repo(lrepo, client=fake_anthropic(slow, seen))
    llm.concurrency = 4
    ex = Extraction(lrepo, llm, context(lrepo), cache_root=lrepo / "cache")
    paths = select(lrepo)[:3]
    pairs = [(e, read_transcript(lrepo, p)) for p in paths for e in X.get(None)]
    out = ex.prefetch(pairs)
    assert len(out) == len(pairs) == 18 and len(seen) == 18
    for p in paths:
        mine = sorted((s, e) for t, s, e in spans if t == p)
        lead_end = mine[0][1]
        assert all(start >= lead_end for start, _ in mine[1:]), p


# --- issue #14: a workspace never writes over a note remembered meanwhile ---------------


def test_workspace_write_keeps_a_note_remembered_after_it_read_the_journal(crepo: Path):
    import datetime as dt

    from memrepo.layout import journal_path
    from memrepo.lifecycle import journal
    from memrepo.lifecycle.extract.apply import Workspace
    from memrepo.lifecycle.extract.extractors import Item

    now = dt.datetime.now().astimezone()
    rel = journal_path(now.date())
    journal.remember(crepo, "first note, before the workspace read")
    ws = Workspace(crepo)
    ws.lines(rel)
    journal.remember(crepo, "a note remembered while the flush ran", tags=["race"])  # exit 0
    ws.apply([Item("t", "the flush's own bullet", rel, "Notes", "s1", now.date().isoformat())])
    assert ws.write() == [rel]
    text = read(crepo, rel)
    for said in ("first note, before the workspace read",
                 "a note remembered while the flush ran", "the flush's own bullet"):
        assert text.count(said) == 1, text
    doc = parse_document(text, rel)
    assert "race" in doc.meta["tags"]


def test_workspace_write_merges_into_a_journal_started_meanwhile(crepo: Path):
    import datetime as dt

    from memrepo.layout import journal_path
    from memrepo.lifecycle import journal
    from memrepo.lifecycle.extract.apply import Workspace
    from memrepo.lifecycle.extract.extractors import Item

    day = dt.date.today()
    rel = journal_path(day)
    ws = Workspace(crepo)
    ws.lines(rel, {"type": "journal"}, day.isoformat())  # missing: started from the template
    journal.remember(crepo, "the day's first note, written by another process")
    ws.apply([Item("t", "extracted later", rel, "Notes", "s1", day.isoformat())])
    ws.write()
    text = read(crepo, rel)
    assert text.count("the day's first note, written by another process") == 1
    assert text.count("extracted later") == 1
    assert text.count(f"## {day.isoformat()}") <= 1


def test_merge_written_inserts_disk_lines_where_they_sat():
    from memrepo.lifecycle.extract.apply import merge_written

    base = "# T\n\n## A\n- a1\n\n## B\n- b1\n"
    disk = "# T\n\n## A\n- a1\n- a2 (disk)\n\n## B\n- b1\n- b2 (disk)\n"
    new = "# T\n\n## A\n- a1\n- a3 (ours)\n\n## B\n- b1\n"
    out = merge_written(base, disk, new, "x.md")
    assert out == "# T\n\n## A\n- a1\n- a2 (disk)\n- a3 (ours)\n\n## B\n- b1\n- b2 (disk)\n"
