"""Signals: reinforce moves a result up, demote moves it down, remember writes the journal."""

from __future__ import annotations

import json
import sqlite3

import pytest
from conftest import IRepo, invoke_memory

from memrepo import documents
from memrepo.index import refs
from memrepo.index.indexer import sync
from memrepo.index.lock import IndexLock
from memrepo.index.paths import state_dir


def _paths(root, query: str) -> list[str]:
    proc = invoke_memory(root, "search", "--json", query)
    assert proc.returncode == 0, proc.stderr
    return [h["path"] for h in json.loads(proc.stdout)]


def _two_equal_files(r: IRepo) -> tuple[str, str]:
    body = "---\ntype: reference\nupdated: 2024-01-01\n---\nThe backup runs at midnight.\n"
    r.write("knowledge/reference/a.md", body)
    r.write("knowledge/reference/b.md", body)
    r.commit("two")
    r.event()
    first, second = _paths(r.root, "backup midnight")
    return first, second


def test_reinforce_moves_a_result_up(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    _first, second = _two_equal_files(r)
    proc = invoke_memory(r.root, "reinforce", f"{second}:5-5")
    assert proc.returncode == 0, proc.stderr
    assert "score now +3" in proc.stdout
    assert _paths(r.root, "backup midnight")[0] == second
    # the event is a file under raw/signals/, and a rebuild keeps its effect
    files = list((r.root / "raw/signals").glob("*.jsonl"))
    events = [json.loads(x) for f in files for x in f.read_text().splitlines()]
    assert {"event": "reinforce", "path": second, "line": 5}.items() <= events[-1].items() or any(
        e["event"] == "reinforce" and e["path"] == second for e in events
    )
    sync(r.root, force_rebuild=True)
    assert _paths(r.root, "backup midnight")[0] == second


def test_a_reinforce_while_an_indexer_runs_leaves_the_fold_to_it(
    irepo_indexed: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memory.db is written under the index lock only: a rebuild swaps the file under it,
    and a write from outside could land in the file swapped out. Past the wait, the
    reinforce is logged, reports no score yet, and leaves the pass pending; the holder's
    next pass folds it."""
    r = irepo_indexed
    _first, second = _two_equal_files(r)
    monkeypatch.setattr(refs, "FOLD_WAIT_S", 0.05)
    lock = IndexLock(state_dir(r.root / ".git"))
    lock.acquire()
    try:
        proc = invoke_memory(r.root, "reinforce", second)
        assert proc.returncode == 0, proc.stderr
        assert "score now" not in proc.stdout and lock.pending.exists()
        con = sqlite3.connect(r.root / "memory.db")
        try:
            folded = con.execute("SELECT count(*) FROM signals WHERE path = ?", (second,))
            assert folded.fetchone()[0] == 0  # nothing written while another holds the lock
        finally:
            con.close()
    finally:
        lock.release()
    sync(r.root)  # the holder's next pass
    assert _paths(r.root, "backup midnight")[0] == second
    assert "score now +6" in invoke_memory(r.root, "reinforce", second).stdout  # lock free


def test_demote_moves_a_result_down(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    first, second = _two_equal_files(r)
    assert invoke_memory(r.root, "demote", first).returncode == 0
    assert _paths(r.root, "backup midnight") == [second, first]


def test_signals_committed_elsewhere_arrive_through_the_hook(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    _first, second = _two_equal_files(r)
    r.write(
        "raw/signals/2024-01.jsonl",
        json.dumps({"ts": "2024-01-02T00:00:00+00:00", "event": "reinforce", "path": second})
        + "\n",
    )
    r.commit("signals from another machine")
    r.event()
    assert _paths(r.root, "backup midnight")[0] == second


def test_unknown_ref_is_a_clean_error(irepo_indexed: IRepo) -> None:
    proc = invoke_memory(irepo_indexed.root, "reinforce", "knowledge/nope.md")
    assert proc.returncode == 1 and "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_chunk_anchor_resolves_to_its_line(irepo_indexed: IRepo) -> None:
    path = "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    proc = invoke_memory(irepo_indexed.root, "reinforce", f"{path}#1")
    assert proc.returncode == 0, proc.stderr
    assert f"{path}:12" in proc.stdout


def test_remember_appends_to_todays_journal(irepo: IRepo) -> None:
    proc = invoke_memory(irepo.root, "remember", "Payments use HMAC-SHA256", "--tags", "payments,hmac")
    assert proc.returncode == 0, proc.stderr
    rel, line = proc.stdout.strip().rsplit(":", 1)
    assert rel.startswith("knowledge/journal/") and rel.endswith(".md")
    doc = documents.read_document(irepo.root / rel, rel)
    assert doc.meta["type"] == "journal" and str(doc.meta["date"]) in rel
    assert doc.meta["tags"] == ["payments", "hmac"]
    text = (irepo.root / rel).read_text().split("\n")
    assert "Payments use HMAC-SHA256" in text[int(line) - 1]
    proc = invoke_memory(irepo.root, "remember", "Second fact")
    assert proc.returncode == 0
    again = (irepo.root / rel).read_text()
    assert "Payments use HMAC-SHA256" in again and "Second fact" in again


def test_remember_takes_unquoted_words(irepo: IRepo) -> None:
    proc = invoke_memory(irepo.root, "remember", "buy", "oat", "milk", "--tags", "home")
    assert proc.returncode == 0, proc.stderr
    rel, line = proc.stdout.strip().rsplit(":", 1)
    bullet = (irepo.root / rel).read_text().split("\n")[int(line) - 1]
    assert bullet.endswith(" buy oat milk  #home"), bullet
    assert "search finds it after `memory commit`" in proc.stderr
    empty = invoke_memory(irepo.root, "remember", "  ")
    assert empty.returncode != 0 and "nothing to remember" in empty.stderr


KUBE = "knowledge/reference/kubernetes.md"


def _chunks_and_lines(r: IRepo, path: str) -> tuple[int, int]:
    import sqlite3

    con = sqlite3.connect(r.root / "memory.db")
    try:
        (chunks,) = con.execute(
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path = ?",
            (path,),
        ).fetchone()
    finally:
        con.close()
    return chunks, len((r.root / path).read_text().splitlines())


def test_a_ref_past_the_file_is_an_error_that_writes_nothing(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    chunks, lines = _chunks_and_lines(r, KUBE)
    for ref, message in [
        (f"{KUBE}#{chunks}", f"{KUBE} has {chunks} chunk(s)"),
        (f"{KUBE}#99", f"{KUBE} has {chunks} chunk(s)"),
        (f"{KUBE}:{lines + 1}", f"{KUBE} has {lines} line(s), no line {lines + 1}"),
        (f"{KUBE}:99999", f"{KUBE} has {lines} line(s)"),
        (f"{KUBE}:0", "lines are numbered from 1"),
        (".git/config", "not a file search indexes"),
        ("memory-config.yaml", "not a file search indexes"),
        ("../outside.md", "outside the memory repo"),
    ]:
        proc = invoke_memory(r.root, "reinforce", ref)
        assert proc.returncode == 1, (ref, proc.stdout)
        assert message in proc.stderr and "Traceback" not in proc.stderr, (ref, proc.stderr)
        assert proc.stderr.count("\n") == 1
    assert not (r.root / "raw/signals").exists()
    proc = invoke_memory(r.root, "reinforce", f"{KUBE}#{chunks - 1}")
    assert proc.returncode == 0, proc.stderr
    assert invoke_memory(r.root, "demote", f"{KUBE}:{lines}").returncode == 0


def _logged(r: IRepo) -> list[dict]:
    files = sorted((r.root / "raw/signals").glob("*.jsonl"))
    return [json.loads(x) for f in files for x in f.read_text().splitlines()]


def test_a_ref_is_resolved_from_the_current_directory_then_the_root(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    here = r.root / "knowledge"
    assert invoke_memory(here, "reinforce", "reference/kubernetes.md:6").returncode == 0
    assert invoke_memory(here, "reinforce", f"{KUBE}:8").returncode == 0  # as search prints it
    up = f"../{r.root.name}/{KUBE}"
    proc = invoke_memory(r.root, "demote", up)
    assert proc.returncode == 0, proc.stderr
    assert f"demoted {KUBE} " in proc.stdout
    proc = invoke_memory(r.root, "reinforce", str(r.root / KUBE))
    assert proc.returncode == 0, proc.stderr
    assert [(e["path"], e.get("line")) for e in _logged(r)] == [
        (KUBE, 6),
        (KUBE, 8),
        (KUBE, None),
        (KUBE, None),
    ]


def test_a_chunk_anchor_works_without_an_index(irepo: IRepo) -> None:
    path = "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    proc = invoke_memory(irepo.root, "reinforce", f"{path}#1")
    assert proc.returncode == 0, proc.stderr
    assert f"{path}:12" in proc.stdout
    proc = invoke_memory(irepo.root, "reinforce", f"{path}#7")
    assert proc.returncode == 1 and "has 2 chunk(s) (#0 to #1), no #7" in proc.stderr, proc.stderr


def test_remember_into_a_journal_without_frontmatter_makes_it_valid(
    irepo: IRepo, monkeypatch
) -> None:
    import datetime as dt

    from memrepo.hooks.check_frontmatter import main as check_frontmatter

    rel = f"knowledge/journal/{dt.date.today():%Y-%m-%d}.md"
    irepo.write(rel, "## Notes\n\n- Written by hand.\n")
    proc = invoke_memory(irepo.root, "remember", "The staging DB moved to eu-west-1")
    assert proc.returncode == 0, proc.stderr
    doc = documents.read_document(irepo.root / rel, rel)
    assert doc.meta["type"] == "journal" and str(doc.meta["date"]) in rel
    text = (irepo.root / rel).read_text()
    assert "- Written by hand." in text and "staging DB moved" in text
    monkeypatch.chdir(irepo.root)
    assert check_frontmatter([rel]) == 0


def _signal_rows(root, path: str) -> list[tuple[int, float]]:
    import sqlite3

    con = sqlite3.connect(root / "memory.db")
    try:
        return con.execute("SELECT line, score FROM signals WHERE path = ? ORDER BY line",
                           (path,)).fetchall()
    finally:
        con.close()


ENTRIES = ("---\ntype: reference\nupdated: 2024-01-01\n---\n# Backups\n\n"
           "- The backup runs at midnight from the ops host.\n- Restores are tested monthly.\n")


def test_a_reinforce_follows_its_entry_through_edits_and_git_mv(irepo_indexed: IRepo) -> None:
    """Seed 001 reinforce, #16: lines inserted above, an edit in place and a rename."""
    r = irepo_indexed
    r.write("knowledge/reference/backups.md", ENTRIES)
    r.commit("backups")
    r.event()
    assert invoke_memory(r.root, "reinforce", "knowledge/reference/backups.md:7").returncode == 0
    assert _signal_rows(r.root, "knowledge/reference/backups.md") == [(7, 3.0)]
    # four lines inserted above it: the +3 stays with the backup line, not the heading
    r.write("knowledge/reference/backups.md",
            ENTRIES.replace("# Backups\n", "# Backups\n\nNotes on our backups.\n\n- Owner: ops.\n"))
    r.commit("three lines above")
    r.event()
    assert _signal_rows(r.root, "knowledge/reference/backups.md") == [(11, 3.0)]
    # edited in place (a fix of its wording): still the same entry
    text = (r.root / "knowledge/reference/backups.md").read_text()
    r.write("knowledge/reference/backups.md",
            text.replace("runs at midnight from", "runs at midnight UTC from"))
    r.commit("reworded")
    r.event()
    assert _signal_rows(r.root, "knowledge/reference/backups.md") == [(11, 3.0)]
    # git mv, then one more line above it: followed through git's rename detection
    r.git("mv", "knowledge/reference/backups.md", "knowledge/reference/backup-policy.md")
    text = (r.root / "knowledge/reference/backup-policy.md").read_text()
    r.write("knowledge/reference/backup-policy.md", text.replace("# Backups\n", "# Backups\n\n"))
    r.commit("renamed")
    r.event()
    assert _signal_rows(r.root, "knowledge/reference/backups.md") == []
    assert _signal_rows(r.root, "knowledge/reference/backup-policy.md") == [(12, 3.0)]
    # the event log itself is never rewritten: the anchor text is what it keeps
    events = [json.loads(x) for f in (r.root / "raw/signals").glob("*.jsonl")
              for x in f.read_text().splitlines()]
    assert events[-1]["line"] == 7 and events[-1]["text"].startswith("- The backup runs")


def test_an_entry_that_is_gone_takes_its_signal_with_it(irepo_indexed: IRepo) -> None:
    """Kept at its old number, a deleted entry's -1 (or +3) counted for whatever entry
    took that line."""
    r = irepo_indexed
    r.write("knowledge/reference/backups.md", ENTRIES)
    r.commit("backups")
    r.event()
    assert invoke_memory(r.root, "demote", "knowledge/reference/backups.md:8").returncode == 0
    r.write("knowledge/reference/backups.md", ENTRIES.replace("- Restores are tested monthly.\n",
                                                                "- Something else entirely.\n"))
    r.commit("rewritten")
    r.event()
    assert _signal_rows(r.root, "knowledge/reference/backups.md") == []


def test_a_symlinked_signal_file_is_never_read(irepo: IRepo, tmp_path) -> None:
    from memrepo.index import signals

    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({"ts": "2024-01-02", "event": "reinforce",
                                   "path": "knowledge/reference/kubernetes.md"}) + "\n")
    (irepo.root / "raw/signals").mkdir(parents=True, exist_ok=True)
    (irepo.root / "raw/signals/2024-01.jsonl").symlink_to(outside)
    assert signals.aggregate(irepo.root) == {}


def test_signal_weights_come_from_the_config_without_a_refold(irepo_indexed: IRepo) -> None:
    """search.reinforce_weight / demote_weight weigh the stored counts at ranking time."""
    r = irepo_indexed
    first, second = _two_equal_files(r)
    r.write("memory-config.yaml", "search:\n  recency_per_day: 0\n")  # weights alone decide
    assert invoke_memory(r.root, "reinforce", second).returncode == 0
    assert invoke_memory(r.root, "demote", second).returncode == 0
    # the seed's weights: +3 - 1 = +2 puts the second file first
    assert _paths(r.root, "backup midnight")[0] == second
    # a demote that weighs more than a reinforce: the same two events now push it down
    r.write("memory-config.yaml",
            "search:\n  recency_per_day: 0\n  reinforce_weight: 1\n  demote_weight: 4\n")
    assert _paths(r.root, "backup midnight") == [first, second]
    out = invoke_memory(r.root, "reinforce", second).stdout
    assert "score now -2" in out  # 2 x 1 - 1 x 4, with the configured weights


def test_a_rename_made_earlier_on_the_day_of_the_oldest_signal_is_followed(
    irepo: IRepo, monkeypatch
) -> None:
    """To git a bare date is that day at the current time of day: a rename made at 00:00:01
    on the oldest event's day was missed (and the signal stayed on the old path)."""
    from memrepo.index.anchors import _renames

    irepo.write("knowledge/reference/backups.md", ENTRIES)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2024-03-05T00:00:01+00:00")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2024-03-05T00:00:01+00:00")
    irepo.commit("backups")
    irepo.git("mv", "knowledge/reference/backups.md", "knowledge/reference/backup-policy.md")
    irepo.commit("renamed")
    moved = {"knowledge/reference/backups.md": "knowledge/reference/backup-policy.md"}
    assert _renames(irepo.root, "2024-03-05") == moved
    assert _renames(irepo.root, "2024-03-08") == {}  # renamed days before the oldest event
    assert _renames(irepo.root, None) == moved


def test_signals_below_an_updated_entry_stay_on_their_lines(irepo_indexed: IRepo) -> None:
    """`memory update` strikes the old entry through and moves it to the end of its
    section, which shifts every line below by one: each signal follows its own line."""
    r = irepo_indexed
    path = "knowledge/reference/backups.md"
    r.write(path, ENTRIES + "\n# Restores\n\n- Restore drills are quarterly.\n")
    r.commit("backups")
    r.event()
    before = (r.root / path).read_text().splitlines()
    drill = before.index("- Restore drills are quarterly.") + 1
    monthly = before.index("- Restores are tested monthly.") + 1
    for ref, verb in ((f"{path}:{drill}", "reinforce"), (f"{path}:{monthly}", "demote")):
        assert invoke_memory(r.root, verb, ref).returncode == 0
    proc = invoke_memory(r.root, "update", f"{path}:7", "The backup runs at 01:00 UTC.")
    assert proc.returncode == 0, proc.stderr
    r.event()
    after = (r.root / path).read_text().splitlines()
    assert after.index("- Restore drills are quarterly.") + 1 != drill  # the lines moved
    assert _signal_rows(r.root, path) == sorted([
        (after.index("- Restores are tested monthly.") + 1, -1.0),
        (after.index("- Restore drills are quarterly.") + 1, 3.0),
    ])


def test_remember_refuses_a_secret_before_anything_is_written(irepo: IRepo) -> None:
    """As the MCP tool does: a credential never reaches the journal file, where only the
    next commit would have refused it."""
    before = sorted(p.name for p in (irepo.root / "knowledge" / "journal").iterdir())
    proc = invoke_memory(irepo.root, "remember", "the deploy key is AKIAIOSFODNN7EXAMPLE")
    assert proc.returncode != 0 and "leave credentials out of memory" in proc.stderr
    assert sorted(p.name for p in (irepo.root / "knowledge" / "journal").iterdir()) == before
