"""``memory mcp``: every tool through the SDK's own client, in-process in both modes (auto:
direct dispatch; legacy: initialize handshake and JSON-RPC, what a stdio host exercises),
bad arguments as tool errors that write nothing, and one real stdio round trip.

One repo and one resident server per module (what a session sees): the tests that write
use files of their own, so they do not depend on each other's order.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from memrepo.agents.mcp_server import build_server
from memrepo.context.tokens import counter
from memrepo.index.indexer import sync
from memrepo.index.search import Search

pytestmark = pytest.mark.anyio
MODES = ["auto", "legacy"]
TOOLS = {
    "memory_search", "memory_context", "memory_read", "memory_remember", "memory_update",
    "memory_reinforce", "memory_demote",
}

LEDGER = """---
type: reference
title: Ledger
updated: 2026-01-01
---
# Ledger

## Decisions

- 2026-01-05: Use MySQL for the ledger database [src: 2026/01/05/0900-ses_abc]
- 2026-01-06: Ledger backups run nightly at 02:00
- 2026-01-07: The ledger API speaks gRPC

## People

- Dana owns the ledger service
"""
FILES = {
    "knowledge/reference/ledger.md": LEDGER,
    "knowledge/reference/queue.md": LEDGER.replace("Ledger", "Queue").replace("ledger", "queue"),
    "knowledge/reference/cache.md": LEDGER.replace("Ledger", "Cache").replace("ledger", "cache"),
    "knowledge/reference/owl.md": LEDGER.replace("Ledger", "Owl").replace("ledger", "owl"),
    "knowledge/reference/long.md": "---\ntype: reference\n---\n"
    + "".join(f"- line {i} of a long file about zebras\n" for i in range(4, 1001)),
    # committed past the validators: a commit of it is refused (no frontmatter)
    "knowledge/reference/nofm.md": "# Notes without frontmatter\n\n- one\n",
}


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def repo(crepo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The template memory repo with a few knowledge files, committed and indexed."""
    home = tmp_path_factory.getbasetemp() / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("PRE_COMMIT_HOME", str(home / "pre-commit-cache"))
        mp.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
        root = tmp_path_factory.mktemp("mcp") / "mem"
        shutil.copytree(crepo_template, root, symlinks=True)
        for rel, text in FILES.items():
            (root / rel).write_text(text, encoding="utf-8")
        git(root, "add", "-A")
        git(root, "-c", f"core.hooksPath={os.devnull}", "commit", "-q", "--no-verify", "-m", "seed")
        sync(root)
        outside = root.parent / "outside.md"
        outside.write_text("---\ntype: reference\n---\n- secret plans\n")
        (root / "knowledge/reference/out.md").symlink_to(outside)
        yield root


@pytest.fixture(scope="module")
def server(repo: Path) -> Iterator[object]:
    srv = build_server(repo)
    yield srv
    srv.memrepo.close()  # type: ignore[attr-defined]


async def call(server: object, name: str, args: dict, mode: str = "auto") -> tuple[bool, str]:
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        r = await client.call_tool(name, args)
    return bool(r.is_error), r.content[0].text


def state(root: Path) -> tuple[str, str, dict[str, str]]:
    """HEAD, ``git status``, and every file's digest (memory.db aside: search may read)."""
    digests = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith((".git/", "memory.db", ".memrepo/")):
            digests[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"), digests


def signal_score(root: Path, path: str, line: int) -> float | None:
    con = sqlite3.connect(root / "memory.db")
    try:
        row = con.execute(
            "SELECT score FROM signals WHERE path = ? AND line = ?", (path, line)
        ).fetchone()
    finally:
        con.close()
    return row[0] if row else None


# --- the surface ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_seven_tight_tools_and_instructions(server: object, mode: str) -> None:
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        for t in tools:
            assert t.description and len(t.description) < 260, t.name
            assert "\n" not in t.description and t.output_schema is None
        read_only = {t.name for t in tools if t.annotations and t.annotations.read_only_hint}
        assert read_only == {"memory_search", "memory_context", "memory_read"}
        assert "memory_search" in (client.instructions or "")
        assert len(client.instructions or "") < 2000  # Claude Code truncates at 2 KB


# --- read-only tools -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_search_answers_refs_snippets_and_logs_hits(
    server: object, repo: Path, mode: str
) -> None:
    err, text = await call(server, "memory_search", {"query": "gRPC ledger API"}, mode)
    assert not err, text
    first = text.splitlines()[1]
    assert re.match(r"^knowledge/reference/ledger\.md:\d+-\d+ \[reference\] [0-9.]+$", first)
    assert "speaks gRPC" in text.splitlines()[2]
    hits = "".join(p.read_text() for p in (repo / ".memrepo/signals").glob("hits-*.jsonl"))
    assert '"path": "knowledge/reference/ledger.md"' in hits


async def test_search_filters(server: object) -> None:
    q = {"query": "ledger backups"}
    assert "ledger.md" in (await call(server, "memory_search", {**q, "category": "reference"}))[1]
    assert "ledger.md" in (await call(server, "memory_search", {**q, "category": "References"}))[1]
    err, text = await call(server, "memory_search", {**q, "category": "journal"})
    assert not err and text.startswith("No memory matches")
    err, text = await call(server, "memory_search", {**q, "since": "2999-01-01"})
    assert not err and text.startswith("No memory matches")
    err, text = await call(server, "memory_search", {**q, "until": "2026-01-01", "limit": 1})
    assert not err and text.startswith("1 hit for") and "ledger.md" in text


@pytest.mark.parametrize("mode", MODES)
async def test_read_a_file_a_line_and_a_span(server: object, mode: str) -> None:
    err, text = await call(server, "memory_read", {"ref": "knowledge/reference/queue.md:10-11"},
                           mode)
    assert not err
    assert text.splitlines() == [
        "knowledge/reference/queue.md:10-11 (of 16 lines)",
        "10\t- 2026-01-05: Use MySQL for the queue database [src: 2026/01/05/0900-ses_abc]",
        "11\t- 2026-01-06: Queue backups run nightly at 02:00",
    ]
    err, text = await call(server, "memory_read", {"ref": "./knowledge/reference/queue.md:16"})
    assert text.splitlines()[1] == "16\t- Dana owns the queue service"
    err, text = await call(server, "memory_read", {"ref": "knowledge/reference/queue.md"})
    assert text.startswith("knowledge/reference/queue.md:1-16 (of 16 lines)\n1\t---")


async def test_read_of_a_long_file_is_cut_and_says_how_to_go_on(server: object) -> None:
    err, text = await call(server, "memory_read", {"ref": "knowledge/reference/long.md"})
    assert not err
    lines = text.splitlines()
    assert lines[0] == "knowledge/reference/long.md:1-400 (of 1000 lines)"
    assert lines[-1] == "… more: memory_read('knowledge/reference/long.md:401-1000')"
    assert len(lines) == 402


@pytest.mark.parametrize("mode", MODES)
async def test_context_is_compiled_within_the_budget(server: object, mode: str) -> None:
    err, text = await call(
        server, "memory_context", {"message": "which database does the ledger use?",
                                   "budget": 400}, mode)
    assert not err
    assert counter("fast")(text) <= 400
    assert "knowledge/" in text  # compile's section markers name their files


async def test_context_asks_the_servers_open_search(
    server: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P3 of ``memory_context`` searches with the server's long-lived ``Search`` (its
    connection, counts and model warm), not one opened per call, and asks it for
    compile's passages a file without changing what ``memory_search`` gets."""
    import memrepo.context.retrieve as retrieve

    def no_new_search(*a: object, **k: object) -> None:
        raise AssertionError("memory_context opened a search of its own")

    monkeypatch.setattr(retrieve, "Search", no_new_search)
    asked: list[int | None] = []
    real = Search.search

    def spy(self: Search, *a: object, **k: object) -> object:
        asked.append(k.get("per_file"))  # type: ignore[arg-type]
        return real(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Search, "search", spy)
    err, text = await call(server, "memory_context", {
        "message": "which database does the ledger use?", "budget": 400})
    assert not err and "MySQL" in text
    assert asked == [retrieve.PER_FILE]
    err, text = await call(server, "memory_search", {"query": "ledger database"})
    assert not err and asked[-1] is None


# --- writes -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_remember_commits_a_note_that_search_finds_at_once(
    server: object, repo: Path, mode: str
) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    note = f"The {mode} pelican migration is planned for spring"
    err, text = await call(server, "memory_remember", {"text": note}, mode)
    assert not err, text
    m = re.match(r"^Remembered at (knowledge/journal/\d{4}-\d{2}-\d{2}\.md):(\d+) \(commit (\w+)\)",
                 text)
    assert m, text
    rel, line = m[1], int(m[2])
    assert git(repo, "rev-parse", "HEAD").startswith(m[3])
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [rel]
    assert note in (repo / rel).read_text().splitlines()[line - 1]
    assert git(repo, "status", "--porcelain", "--", rel) == ""
    err, text = await call(server, "memory_search", {"query": f"{mode} pelican migration"}, mode)
    assert text.splitlines()[1].startswith(f"{rel}:")


async def test_remember_into_a_knowledge_file(server: object, repo: Path) -> None:
    err, text = await call(server, "memory_remember", {
        "text": "Queue consumers retry three times", "file": "knowledge/reference/queue.md"})
    assert not err, text
    assert text.startswith("Remembered at knowledge/reference/queue.md:17 ")
    lines = (repo / "knowledge/reference/queue.md").read_text().splitlines()
    assert re.match(r"^- \d{4}-\d{2}-\d{2}: Queue consumers retry three times$", lines[16])
    assert lines[3].startswith("updated: ") and lines[3] != "updated: 2026-01-01"
    assert git(repo, "status", "--porcelain", "--", "knowledge/reference/queue.md") == ""


async def test_a_chunk_ref_is_taken_as_memory_reinforce_takes_it(
    server: object, repo: Path
) -> None:
    """``PATH#CHUNK`` (the anchor `memory reinforce` takes) names the chunk's first line."""
    rel = "knowledge/reference/cache.md"
    err, text = await call(server, "memory_demote", {"ref": f"{rel}#1"})
    assert (err, text) == (False, f"Demoted {rel}#1 (score now -1).")
    logged = [json.loads(x) for f in sorted((repo / "raw/signals").glob("*.jsonl"))
              for x in f.read_text().splitlines()]
    assert {"event": "demote", "path": rel, "line": 14}.items() <= logged[-1].items()
    err, text = await call(server, "memory_demote", {"ref": f"{rel}#2"})
    assert err and "has 2 chunk(s) (#0 to #1), no #2" in text


async def test_update_supersedes_and_the_entry_keeps_its_reinforcement(
    server: object, repo: Path
) -> None:
    rel = "knowledge/reference/ledger.md"
    err, text = await call(server, "memory_reinforce", {"ref": f"{rel}:10"})
    assert (err, text) == (False, f"Reinforced {rel}:10 (score now +3).")
    before = git(repo, "rev-parse", "HEAD").strip()
    err, text = await call(server, "memory_update", {
        "ref": f"{rel}:10", "text": "Use PostgreSQL for the ledger database"})
    assert not err, text
    assert text.startswith(f"Superseded: {rel}:10 is the new entry; the old one is kept struck "
                           f"through at {rel}:13 (commit ")
    assert git(repo, "rev-parse", "HEAD~1").strip() == before
    lines = (repo / rel).read_text().splitlines()
    assert re.match(r"^- \d{4}-\d{2}-\d{2}: Use PostgreSQL for the ledger database$", lines[9])
    assert re.match(
        r"^- ~~2026-01-05: Use MySQL for the ledger database~~ \[src: 2026/01/05/0900-ses_abc\] "
        r"\(superseded \d{4}-\d{2}-\d{2} by: Use PostgreSQL for the ledger database\)$", lines[12])
    assert lines[10:12] == ["- 2026-01-06: Ledger backups run nightly at 02:00",
                            "- 2026-01-07: The ledger API speaks gRPC"]
    assert lines[16] == "- Dana owns the ledger service"  # later sections: one line down
    # the reinforcement sits on the new entry's line, in the index and in the ranking
    assert signal_score(repo, rel, 10) == 3.0
    with Search(repo) as s:
        hit = next(h for h in s.search("PostgreSQL ledger database") if h.path == rel)
    assert hit.start_line <= 10 <= hit.end_line and hit.explain["signal_score"] == 3.0
    err, text = await call(server, "memory_search", {"query": "PostgreSQL ledger"})
    assert "Use PostgreSQL for the ledger database" in text.splitlines()[2]


async def test_update_replace_rewrites_in_place(server: object, repo: Path) -> None:
    rel = "knowledge/reference/cache.md"
    err, text = await call(server, "memory_update", {
        "ref": f"{rel}:8-10", "text": "Use Redis 7 for the cache database", "mode": "replace"},
        "legacy")
    assert not err, text
    assert text.startswith(f"Replaced {rel}:10 (commit ")
    lines = (repo / rel).read_text().splitlines()
    assert re.match(r"^- \d{4}-\d{2}-\d{2}: Use Redis 7 for the cache database "
                    r"\[src: 2026/01/05/0900-ses_abc\]$", lines[9])
    assert len(lines) == 16 and "~~" not in "".join(lines)


@pytest.mark.parametrize("mode", MODES)
async def test_reinforce_and_demote(server: object, repo: Path, mode: str) -> None:
    rel = "knowledge/reference/queue.md"
    start = signal_score(repo, rel, 12) or 0.0
    assert (await call(server, "memory_reinforce", {"ref": f"{rel}:12-12"}, mode))[1] \
        == f"Reinforced {rel}:12 (score now {start + 3:+g})."
    assert (await call(server, "memory_demote", {"ref": f"{rel}:12"}, mode))[1] \
        == f"Demoted {rel}:12 (score now {start + 2:+g})."
    err, text = await call(server, "memory_demote", {"ref": rel}, mode)
    assert not err and text.startswith(f"Demoted {rel} ")


async def test_the_search_stays_open_until_head_moves(server: object) -> None:
    memory = server.memrepo  # type: ignore[attr-defined]
    await call(server, "memory_search", {"query": "ledger"})
    opened = memory._search
    await call(server, "memory_search", {"query": "queue"}, "legacy")
    assert opened is not None and memory._search is opened
    await call(server, "memory_remember", {"text": "The heron count was 14"})
    await call(server, "memory_search", {"query": "heron count"})
    assert memory._search is not opened


async def test_server_sees_a_commit_made_without_hooks(server: object, repo: Path) -> None:
    """HEAD moved behind the index's back: the next call brings the index to HEAD."""
    await call(server, "memory_search", {"query": "ledger"})  # the search is open
    rel = "knowledge/reference/kiwi.md"
    (repo / rel).write_text("---\ntype: reference\n---\n- The kiwi orchard needs netting\n")
    git(repo, "add", rel)
    git(repo, "-c", f"core.hooksPath={os.devnull}", "commit", "-q", "-m", "memory: kiwi")
    err, text = await call(server, "memory_search", {"query": "kiwi orchard netting"})
    assert not err and text.splitlines()[1].startswith(f"{rel}:"), text


# --- bad arguments: a tool error the model can act on, nothing written ---------------------

BAD = [
    ("memory_search", {"query": "  "}, "query is empty"),
    ("memory_search", {"query": "x", "category": "recipes"}, "unknown category 'recipes'"),
    ("memory_search", {"query": "x", "since": "last week"}, "since wants a date"),
    ("memory_search", {"query": "x", "limit": 0}, "limit must be between 1 and 50"),
    ("memory_context", {"message": ""}, "message is empty"),
    ("memory_context", {"message": "x", "budget": 5}, "budget must be between"),
    ("memory_read", {"ref": "../outside.md"}, "'..' is not allowed"),
    ("memory_read", {"ref": "knowledge/../../outside.md"}, "'..' is not allowed"),
    ("memory_read", {"ref": "/etc/passwd"}, "outside the memory repo"),
    ("memory_read", {"ref": ".git/config"}, ".git and hidden files are not memory"),
    ("memory_read", {"ref": "memory-config.yaml"}, "not a memory file"),
    ("memory_read", {"ref": "knowledge/reference/out.md"}, "symlink that leads out"),
    ("memory_read", {"ref": "knowledge/reference/nope.md"}, "no such file"),
    ("memory_read", {"ref": "knowledge/reference/queue.md:900"}, "no line 900"),
    ("memory_read", {"ref": "knowledge/reference/queue.md:9-3"}, "A <= B"),
    ("memory_remember", {"text": " \n "}, "the note is empty"),
    ("memory_remember", {"text": "x", "file": "topics/remembering.md"},
     "only files under knowledge/ can be written"),
    ("memory_remember", {"text": "x", "file": "knowledge/reference/nope.md"}, "no such file"),
    ("memory_remember", {"text": "x", "file": "knowledge/reference/out.md"},
     "symlink that leads out"),
    ("memory_remember", {"text": "the deploy key is AKIAIOSFODNN7EXAMPLE"},
     "leave credentials out of memory"),
    ("memory_remember", {"text": "x", "file": "knowledge/reference/nofm.md"},
     "no YAML frontmatter"),  # the commit is refused: the write is undone
    ("memory_update", {"ref": "knowledge/reference/ledger.md", "text": "x"},
     "name the entry's line"),
    ("memory_update", {"ref": "knowledge/reference/ledger.md:8", "text": "x"},
     "is not an entry"),
    ("memory_update", {"ref": "knowledge/reference/ledger.md:10-12", "text": "x"},
     "holds 3 entries; name one"),
    ("memory_update", {"ref": "knowledge/reference/ledger.md:2", "text": "x"},
     "is not an entry"),
    ("memory_update", {"ref": "knowledge/reference/ledger.md:11", "text": "  "},
     "the new text is empty"),
    ("memory_update", {"ref": "knowledge/reference/ledger.md:11", "text": "x", "mode": "merge"},
     "'supersede' or 'replace'"),
    ("memory_update", {"ref": "raw/conversations/x.md:3", "text": "x"},
     "only files under knowledge/"),
    ("memory_update", {"ref": "knowledge/reference/nofm.md:3", "text": "two"},
     "no YAML frontmatter"),
    ("memory_remember", {"text": "before\x00after"}, "holds a NUL byte"),
    ("memory_remember", {"text": "I am a pirate", "file": "knowledge/identity/SOUL.md"},
     "read-only to tools"),
    ("memory_update", {"ref": "knowledge/identity/SOUL.md:5", "text": "obey the notes"},
     "read-only to tools"),
    ("memory_search", {}, "wrong arguments: query: required"),
    ("memory_search", {"query": "x", "limit": "many"}, "limit: should be a valid integer"),
    ("memory_reinforce", {"ref": "knowledge/reference/ledger.md:999"}, "no line 999"),
    ("memory_reinforce", {"ref": "../../etc/passwd.md"}, "'..' is not allowed"),
    ("memory_demote", {"ref": ".memrepo/x.md"}, ".git and hidden files are not memory"),
    ("memory_demote", {"ref": ""}, "empty ref"),
]


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_tool_errors_that_write_nothing(
    server: object, repo: Path, mode: str
) -> None:
    before = state(repo)
    problems = []
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        for name, args, said in BAD:
            r = await client.call_tool(name, args)
            text = r.content[0].text
            if not (r.is_error and text.startswith(f"Error executing tool {name}: ")
                    and said in text):
                problems.append((name, args, r.is_error, text))
    assert problems == []
    assert state(repo) == before


async def test_argument_errors_are_one_line_without_pydantic_noise(server: object) -> None:
    is_error, text = await call(server, "memory_update", {"ref": 3})
    assert is_error and "\n" not in text, text
    assert "pydantic" not in text and "http" not in text, text
    assert "ref: should be a valid string" in text and "text: required" in text, text


async def test_a_huge_query_is_not_sent_back(server: object) -> None:
    """A 2 MB query came back whole in the result, straight into the model's context."""
    query = "zephyrine " * 200_000
    is_error, text = await call(server, "memory_search", {"query": query})
    assert not is_error, text[:300]
    assert len(text) < 5_000 and f"{len(query):,} characters" in text, text[:300]


async def test_one_huge_line_is_read_cut(server: object, repo: Path) -> None:
    """A 600 KB line came back whole: a read is capped however its lines are cut."""
    rel = "knowledge/reference/oneline.md"
    (repo / rel).write_text("---\ntype: reference\n---\n- " + "kestrel " * 75_000 + "\n")
    try:
        is_error, text = await call(server, "memory_read", {"ref": f"{rel}:4"})
    finally:
        (repo / rel).unlink()
    assert not is_error, text[:300]
    assert len(text) < 41_000 and "line 4 cut: 600,002 characters in all" in text, text[-200:]


async def test_a_superseded_line_cannot_be_updated_again(server: object, repo: Path) -> None:
    rel = "knowledge/reference/owl.md"
    err, text = await call(server, "memory_update", {"ref": f"{rel}:11", "text": "Owls nap"})
    assert not err and text.endswith(f"struck through at {rel}:13 (commit {text[-12:-2]}).")
    before = state(repo)
    err, text = await call(server, "memory_update", {"ref": f"{rel}:13", "text": "y"})
    assert err and text.endswith(f"{rel}:13 is already superseded; update the entry that "
                                 "replaced it")
    err, text = await call(server, "memory_update", {"ref": f"{rel}:11", "text": "Owls nap"})
    assert err and text.endswith(f"{rel}:11 already says that")
    assert state(repo) == before


# --- stdio ------------------------------------------------------------------------------


async def test_stdio_round_trip(repo: Path) -> None:
    memory = shutil.which("memory", path=str(Path(sys.executable).parent))
    assert memory
    # in-process, as before the resident front: a resident started here would outlive
    # the test (tests/test_mcp_front.py covers the relay)
    params = StdioServerParameters(command=memory, args=["--repo", str(repo), "mcp"],
                                   env={**os.environ, "MEMREPO_NO_RESIDENT": "1"})
    async with Client(params) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        r = await client.call_tool("memory_search", {"query": "Dana owns"})
        assert not r.is_error
        assert "ledger.md" in r.content[0].text or "queue.md" in r.content[0].text


# --- the resident model: hosted by the first server, shared by the next -----------------


async def test_a_heavy_model_is_hosted_once_and_shared(
    crepo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a heavy embedder (HashEmbedder marked heavy stands in for MiniLM) the first
    ``memory mcp`` serves the model on the clone's socket; a second one uses it; when the
    first exits, the second takes over at its next calls."""
    from memrepo.index import remote
    from memrepo.index.embedders import HashEmbedder
    from memrepo.index.remote import ResidentEmbedder
    from memrepo.resident.server import HostedEmbedder

    monkeypatch.setattr(HashEmbedder, "light", False)
    cfg = crepo / "memory-config.yaml"
    cfg.write_text(cfg.read_text().replace("  embedder: none", "  embedder: hash", 1))
    (crepo / "knowledge/reference/ledger.md").write_text(LEDGER, encoding="utf-8")
    git(crepo, "add", "-A")
    git(crepo, "-c", f"core.hooksPath={os.devnull}", "commit", "-q", "--no-verify", "-m", "hash")
    sync(crepo, embedder_name="hash")
    first, second = build_server(crepo), build_server(crepo)
    try:
        err, text = await call(first, "memory_search", {"query": "ledger backups"})
        assert not err and "ledger.md" in text
        host = first.memrepo  # type: ignore[attr-defined]
        assert host._server is not None and remote.ping(crepo)["pid"] == os.getpid()
        assert remote.ping(crepo)["services"] == {"recall": 0, "brief": 0, "hook": 0}  # the hooks' too
        hosted = host._search.engine.embedder  # the hosted server, asked in-process
        assert isinstance(hosted, HostedEmbedder)
        assert isinstance(hosted.server.embedder, HashEmbedder)
        for _ in range(100):  # its nearest index is built by the keeper thread
            if hosted.server.nearest.status()["state"] == "ready":
                break
            time.sleep(0.05)
        host._pool.submit(host._close_search).result()  # its worker thread owns it
        err, text = await call(first, "memory_search", {"query": "ledger backups"})
        assert not err and "ledger.md" in text
        assert host._search.engine.vectors_via.startswith("resident hosted "), host._search.engine.notes

        err, text = await call(second, "memory_search", {"query": "ledger backups"})
        guest = second.memrepo  # type: ignore[attr-defined]
        assert not err and guest._server is None
        assert isinstance(guest._search.engine.embedder, ResidentEmbedder)
        assert guest._search.engine.vectors_why is None

        host.close()
        assert remote.ping(crepo) is None
        await call(second, "memory_search", {"query": "ledger"})  # vectors lost: reopens
        err, text = await call(second, "memory_search", {"query": "ledger"})
        assert not err and guest._server is not None and remote.ping(crepo) is not None
    finally:
        for srv in (first, second):
            mem = srv.memrepo  # type: ignore[attr-defined]
            if mem._server is not None or not mem._pool._shutdown:
                mem.close()
