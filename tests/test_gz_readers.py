"""A compressed archive (``archive/**.md.gz``, ``memory prune``'s gzip) reads everywhere a
plain archive file does: export, search without an index, the MCP read, reinforce, the
journal's date from its name, wikilinks and markdown links (#16)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from conftest import invoke_memory, run_git

from memrepo import compression
from memrepo.index import links as L
from memrepo.index.docmeta import read_meta
from memrepo.index.fallback import Scanner
from memrepo.index.ranking import Filters
from memrepo.layout import JOURNAL_PATH

DAY = "2025-01-01"
PACKED = f"archive/journal/{DAY}.md.gz"
# no `date:`: the compressed journal is dated by its name (item 5)
JOURNAL = ("---\ntype: journal\n---\n\n## Notes\n\n"
           "- The zanzibar migration finished on the ledger cluster.\n"
           "- Backups of the quokka shard moved to the cold tier.\n")
K8S = "archive/reference/k8s.md"
REFERENCE = ("---\ntype: reference\ntitle: K8s\nupdated: 2024-02-02\n---\n# K8s\n\n"
             "- Rolling updates of the wombat pods use maxSurge 2.\n")
LINKER = "knowledge/reference/links.md"
LINKS = (f"---\ntype: reference\ntitle: Links\nupdated: 2025-06-01\n---\n# Links\n\n"
         f"- See [[{DAY}]] for the migration day.\n"
         f"- The [old k8s notes](../../{K8S}) are archived.\n")


def _write(root: Path, rel: str, data: bytes) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


def _commit(root: Path, message: str = "memory: case") -> None:
    """Commit past the validators (their gzip rules are tested in test_retention); the
    post-commit hook still indexes."""
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", message)


@pytest.fixture
def packed(memrepo_root: Path) -> Path:
    """A repo holding a compressed journal, a compressed reference and a knowledge file
    linking to both (to the reference by its old ``.md`` name)."""
    root = memrepo_root
    _write(root, PACKED, compression.compress(JOURNAL.encode()))
    _write(root, K8S + ".gz", compression.compress(REFERENCE.encode()))
    _write(root, LINKER, LINKS.encode())
    _commit(root)
    return root


# --- 1. export ---------------------------------------------------------------------------


def test_export_include_archive_reads_compressed_archives_as_text(packed: Path):
    _write(packed, "archive/broken.md.gz", b"\x1f\x8b not really gzip")
    proc = invoke_memory(packed, "export", "--include-archive")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    mine = [(r["path"], r["line"], r["text"]) for r in rows if r["path"].endswith(".gz")]
    assert mine == [
        (PACKED, 7, "The zanzibar migration finished on the ledger cluster."),
        (PACKED, 8, "Backups of the quokka shard moved to the cold tier."),
        (K8S + ".gz", 8, "Rolling updates of the wombat pods use maxSurge 2."),
    ]  # the corrupt one is skipped, as any broken file is
    first = next(r for r in rows if r["path"] == PACKED)
    assert (first["category"], first["section"]) == ("archive", "Notes")
    plain = invoke_memory(packed, "export")
    assert "zanzibar" not in plain.stdout  # the archive only when asked


# --- 2. search without an index ----------------------------------------------------------


def test_search_without_an_index_finds_words_inside_compressed_archives(packed: Path):
    (packed / "memory.db").unlink()
    proc = invoke_memory(packed, "search", "--json", "quokka", "--include-archive")
    assert proc.returncode == 0, proc.stderr
    assert "index unavailable" in proc.stderr
    hits = json.loads(proc.stdout)
    assert [h["path"] for h in hits] == [PACKED]
    assert "quokka shard" in hits[0]["snippet"]  # the text, not gzip bytes
    assert hits[0]["start_line"] <= 8 <= hits[0]["end_line"]
    without = invoke_memory(packed, "search", "--json", "quokka")
    assert json.loads(without.stdout) == []  # archived: only with --include-archive


def test_ripgrep_scanner_adds_compressed_archives_itself(packed: Path, tmp_path: Path):
    """rg finds the plain files; the compressed ones are inflated by the scanner (a stand-in
    rg that finds nothing, so whatever is found came from the archive's text)."""
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    s = Scanner(packed)
    s.rg = str(fake)
    hits = s.search("wombat", filters=Filters(include_archive=True))
    assert [h.path for h in hits] == [K8S + ".gz"] and "maxSurge 2" in hits[0].snippet
    assert s.search("wombat") == []


# --- 3. the MCP read, and no edit in place -----------------------------------------------


def test_mcp_read_and_reinforce_a_compressed_archive(packed: Path):
    mcp_server = pytest.importorskip("memrepo.agents.mcp_server")
    memory = mcp_server.Memory(packed)
    try:
        text = memory.read_text(f"{PACKED}:7-8")
        assert text.split("\n") == [
            f"{PACKED}:7-8 (of 8 lines)",
            "7\t- The zanzibar migration finished on the ledger cluster.",
            "8\t- Backups of the quokka shard moved to the cold tier.",
        ]
        assert memory.signal_text(f"{PACKED}:8", "reinforce").startswith(
            f"Reinforced {PACKED}:8")
        with pytest.raises(mcp_server.ToolError, match="has 8 line"):
            memory.signal_text(f"{PACKED}:9", "reinforce")
    finally:
        memory.close()


def test_a_compressed_archive_is_never_edited_in_place(packed: Path):
    head = run_git(packed, "rev-parse", "HEAD").stdout
    proc = invoke_memory(packed, "update", f"{PACKED}:7", "The migration was rolled back.")
    assert proc.returncode != 0
    assert f"{PACKED}: a compressed archive" in proc.stderr
    assert "archives are not edited in place" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert run_git(packed, "rev-parse", "HEAD").stdout == head
    assert (packed / PACKED).read_bytes() == compression.compress(JOURNAL.encode())


# --- 4. reinforce ------------------------------------------------------------------------


def test_reinforce_a_line_of_a_compressed_journal(packed: Path):
    proc = invoke_memory(packed, "reinforce", f"{PACKED}:8")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(x) for f in (packed / "raw" / "signals").rglob("*.jsonl")
              for x in f.read_text().splitlines()]
    assert {"path": PACKED, "line": 8,
            "text": "- Backups of the quokka shard moved to the cold tier."}.items() <= \
        events[-1].items()  # the anchor is the line's text, never gzip bytes
    bad = invoke_memory(packed, "reinforce", f"{PACKED}:9")
    assert bad.returncode != 0 and f"{PACKED} has 8 line(s), no line 9" in bad.stderr


# --- 5. a compressed journal is dated by its name -----------------------------------------


@pytest.mark.parametrize("path, day", [
    ("knowledge/journal/2025-01-01.md", DAY),
    ("archive/journal/2025-01-01.md", DAY),
    ("archive/journal/2025-01-01.md.gz", DAY),
    ("archive/knowledge/journal/2025-01-01.md.gz", DAY),
    ("knowledge/journal/2025-01-01.md.gz", None),  # never a live journal
    ("journal/2025-01-01.md.gz", None),
    ("archive/journal/2025-01-01.gz", None),
])
def test_journal_path_takes_gz_under_archive_only(path: str, day: str | None):
    m = JOURNAL_PATH.match(path)
    assert (m["date"] if m else None) == day


def test_compressed_journal_is_dated_by_its_name_in_search(packed: Path):
    assert read_meta(JOURNAL, JOURNAL.split("\n"), PACKED).modified == DAY
    proc = invoke_memory(packed, "search", "--json", "zanzibar", "--include-archive",
                         "--since", DAY, "--until", DAY)
    assert [h["path"] for h in json.loads(proc.stdout)] == [PACKED]


# --- 6. links ----------------------------------------------------------------------------


def test_stem_and_links_resolve_to_compressed_archives(packed: Path):
    assert L.stem(PACKED) == DAY and L.stem("knowledge/people/Bob.md") == "bob"
    proc = invoke_memory(packed, "links", "--json", LINKER)
    assert proc.returncode == 0, proc.stderr
    out = {lk["target"]: lk["path"] for lk in json.loads(proc.stdout)["links"]}
    assert out == {DAY: PACKED, K8S: K8S + ".gz"}  # the old .md name still resolves
    back = json.loads(invoke_memory(packed, "links", "--json", K8S + ".gz").stdout)
    assert [(b["path"], b["kind"]) for b in back["backlinks"]] == [(LINKER, "md")]
    back = json.loads(invoke_memory(packed, "links", "--json", PACKED).stdout)
    assert [(b["path"], b["kind"]) for b in back["backlinks"]] == [(LINKER, "wiki")]


def test_check_links_accepts_a_link_to_a_compressed_archive(packed: Path):
    note = "knowledge/reference/more.md"
    _write(packed, note, (LINKS.replace("Links", "More")
                          + "- A [lost page](../../archive/reference/gone.md).\n").encode())
    run_git(packed, "add", "-A")
    proc = run_git(packed, "commit", "-q", "-m", "memory: more links", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "link to archive/reference/gone.md: no such file" in out  # still warned
    assert "k8s.md: no such file" not in out and f"[[{DAY}]]" not in out


def test_a_signal_follows_its_archive_into_the_compressed_file(memrepo_root: Path):
    """Reinforced on ``archive/x.md``, then prune's gzip (no rename to git): the fold finds
    the entry in ``archive/x.md.gz``."""
    from memrepo.index.anchors import Relocator

    root = memrepo_root
    _write(root, K8S, REFERENCE.encode())
    _commit(root)
    assert invoke_memory(root, "reinforce", f"{K8S}:8").returncode == 0
    (root / K8S).unlink()
    _write(root, K8S + ".gz", compression.compress(REFERENCE.replace("# K8s\n", "# K8s\n\n").encode()))
    _commit(root, "maintenance: prune")
    text = "- Rolling updates of the wombat pods use maxSurge 2."
    assert Relocator(root).locate(K8S, 8, text) == (K8S + ".gz", 9)
