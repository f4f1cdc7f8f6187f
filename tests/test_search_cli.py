"""`memory search`: JSON shape, filters, batch, explain, odd queries, and the fallback."""

from __future__ import annotations

import json

import pytest
from conftest import IRepo, invoke_memory

from memrepo.index.query import fts_match, terms
from memrepo.index.search import Searcher

FTS_SYNTAX = [
    '"',
    '""',
    "'",
    "*",
    "^",
    "-",
    "+",
    ":",
    "(",
    ")",
    "()",
    "NEAR",
    "NEAR(a b)",
    "AND",
    "OR NOT",
    'a"b',
    "col:val",
    "x*",
    "^start",
    "a - b",
    "{a b}",
    "[x]",
    "payment-API",
    "https://x.io/a?b=c",
    "",
    "   ",
    "\x00",
    "ü ß 東京",
    "NOT payment",
    "payment AND",
    "hmac OR",
    "\\",
    "%",
    "a.b.c",
]


def test_sanitising_rules() -> None:
    assert terms("What did Alice say about the payment-API? see https://x.io/a-b") == [
        "alice",
        "say",
        "payment",
        "api",
        "see",
    ]
    assert terms("the and of") == ["the", "and", "of"]  # only stop words: keep them
    assert fts_match(['a"b', "c"]) == '"ab" OR "c"'


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_any_text_is_a_valid_query(irepo_indexed: IRepo, query: str) -> None:
    s = Searcher(irepo_indexed.root)
    try:
        assert isinstance(s.search(query), list)
    finally:
        s.close()


def test_json_shape_and_line_spans(irepo_indexed: IRepo) -> None:
    proc = invoke_memory(irepo_indexed.root, "search", "--json", "rotate HMAC key")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    top = hits[0]
    assert set(top) == {"path", "category", "score", "start_line", "end_line", "snippet"}
    assert top["path"] == "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    assert (top["start_line"], top["end_line"]) == (8, 10)
    assert "rotate" in top["snippet"]


def test_unquoted_words_are_one_query(irepo_indexed: IRepo) -> None:
    quoted = invoke_memory(irepo_indexed.root, "search", "--json", "rotate HMAC key")
    words = invoke_memory(irepo_indexed.root, "search", "--json", "rotate", "HMAC", "key")
    assert words.returncode == 0, words.stderr
    assert json.loads(words.stdout) == json.loads(quoted.stdout) != []
    dashed = invoke_memory(irepo_indexed.root, "search", "--json", "--", "-HMAC", "rotate")
    assert dashed.returncode == 0, dashed.stderr
    assert json.loads(dashed.stdout)[0]["path"] == json.loads(quoted.stdout)[0]["path"]


def test_categories_are_read_as_people_write_them() -> None:
    from memrepo.layout import category_names

    assert category_names(["Projects,people", "transcripts", "journal"]) == [
        "project", "person", "conversation", "journal"
    ]


def test_filters(irepo_indexed: IRepo) -> None:
    def paths(*args: str) -> list[str]:
        proc = invoke_memory(irepo_indexed.root, "search", "--json", *args)
        assert proc.returncode == 0, proc.stderr
        return list(dict.fromkeys(h["path"] for h in json.loads(proc.stdout)))

    both = paths("HMAC payment")
    assert len(both) == 2
    assert paths("HMAC payment", "--category", "journal") == ["knowledge/journal/2024-03-01.md"]
    assert paths("HMAC payment", "--path", "raw/*") == [
        "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    ]
    assert paths("HMAC payment", "--since", "2024-03-02") == [
        "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    ]
    assert paths("HMAC payment", "--until", "2024-03-01") == ["knowledge/journal/2024-03-01.md"]
    bad = invoke_memory(irepo_indexed.root, "search", "x", "--since", "yesterday-ish")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_archive_is_filtered_unless_asked(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    r.write(
        "archive/journal/2020-01-01.md",
        "---\ntype: journal\ndate: 2020-01-01\n---\n- zebra facts\n",
    )
    r.commit("archive")
    r.event()
    proc = invoke_memory(r.root, "search", "--json", "zebra")
    assert json.loads(proc.stdout) == []
    proc = invoke_memory(r.root, "search", "--json", "zebra", "--include-archive")
    assert [h["path"] for h in json.loads(proc.stdout)] == ["archive/journal/2020-01-01.md"]


def test_superseded_is_down_ranked(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    body = "\nThe deploy window is Friday evening.\n"
    r.write("knowledge/reference/old.md", "---\ntype: reference\nstatus: superseded\n---" + body)
    r.write("knowledge/reference/new.md", "---\ntype: reference\n---" + body)
    r.commit("two versions")
    r.event()
    proc = invoke_memory(r.root, "search", "--json", "deploy window", "--explain")
    hits = json.loads(proc.stdout)
    assert [h["path"] for h in hits][:2] == [
        "knowledge/reference/new.md",
        "knowledge/reference/old.md",
    ]
    assert hits[1]["explain"]["status"] == "superseded"


def test_batch_and_explain(irepo_indexed: IRepo) -> None:
    stdin = "\n".join(
        json.dumps(q)
        for q in [
            {"id": "a", "query": "kubernetes secrets", "k": 2},
            {"id": "b", "query": 'NEAR("', "k": 5},
            {"id": 3, "query": "tea"},
        ]
    )
    proc = invoke_memory(irepo_indexed.root, "search", "--batch", input=stdin + "\nnot json\n")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["a", "b", 3, None]
    assert lines[0]["results"][0]["path"] == "knowledge/reference/kubernetes.md"
    proc = invoke_memory(irepo_indexed.root, "search", "tea", "--explain")
    assert "recency_factor=" in proc.stdout and "bm25=" in proc.stdout


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_without_a_usable_index_search_still_answers(irepo_indexed: IRepo, damage: str) -> None:
    root = irepo_indexed.root
    before = json.loads(invoke_memory(root, "search", "--json", "rotate HMAC key").stdout)
    db = root / "memory.db"
    if damage == "delete":
        db.unlink()
    else:
        db.write_bytes(b"garbage" * 1000)
    proc = invoke_memory(root, "search", "--json", "rotate HMAC key")
    assert proc.returncode == 0, proc.stderr
    assert "index unavailable" in proc.stderr or "index failed" in proc.stderr
    after = json.loads(proc.stdout)
    assert [h["path"] for h in after] == [h["path"] for h in before]
    assert (after[0]["start_line"], after[0]["end_line"]) == (
        before[0]["start_line"],
        before[0]["end_line"],
    )
    assert set(after[0]) == set(before[0])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "99999999999999999d"], "before year 1"),
        (["--since", "1000000d"], "before year 1"),
        (["--until", "5000y"], "before year 1"),
        (["--since", "2024-03-02T99:00"], "2024-03-02T99:00"),
        (["--since", "2024-03-02junk"], "2024-03-02junk"),
        (["--limit", "0"], "--limit"),
        (["--limit", "-1"], "--limit"),
        (["-c", "journals,bogus"], "unknown category 'bogus'; use one of archive, conversation"),
    ],
)
def test_bad_options_are_clean_errors(irepo_indexed: IRepo, args: list[str], message: str) -> None:
    proc = invoke_memory(irepo_indexed.root, "search", "HMAC", *args)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_since_takes_a_full_iso_datetime(irepo_indexed: IRepo) -> None:
    def paths(*args: str) -> list[str]:
        proc = invoke_memory(irepo_indexed.root, "search", "--json", "HMAC payment", *args)
        assert proc.returncode == 0, proc.stderr
        return [h["path"] for h in json.loads(proc.stdout)]

    assert paths("--since", "2024-03-02T10:00") == paths("--since", "2024-03-02")
    assert paths("--since", "2024-03-02T10:00:00+02:00") == paths("--since", "2024-03-02")


def test_a_bad_batch_line_answers_with_its_id_and_the_batch_goes_on(irepo_indexed: IRepo) -> None:
    stdin = "\n".join(
        [
            '{"id": 5, "query": "HMAC", "k": 1e400}',
            '{"id": 2, "query": "x", "k": "x"}',
            '{"id": 6, "query": "HMAC", "k": 0}',
            '{"id": 7, "query": "HMAC", "k": true}',
            '{"id": 3, "query": null}',
            '{"id": 4, "query": {"text": "HMAC"}}',
            '{"id": 8, "query": ["HMAC"]}',
            "[1, 2]",
            "[" * 100_000,
            '{"id": "last", "query": "kubernetes secrets", "k": 1.0}',
        ]
    )
    proc = invoke_memory(irepo_indexed.root, "search", "--batch", input=stdin + "\n")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["id"] for x in lines] == [5, 2, 6, 7, 3, 4, 8, None, None, "last"]
    assert all("error" in x and "results" not in x for x in lines[:-1])
    assert "k must be a positive integer" in lines[0]["error"]
    assert "query must be a string" in lines[4]["error"]
    assert len(lines[-1]["results"]) == 1
    assert lines[-1]["results"][0]["path"] == "knowledge/reference/kubernetes.md"


def test_searching_never_dirties_the_work_tree(crepo) -> None:
    """Hits are logged per clone under .memrepo/ (ignored): a search or a compile leaves
    `git status` clean, so `memory commit`, merges and stash pops never meet them, and
    prune still counts them as uses."""
    from conftest import run_git

    from memrepo.lifecycle.prune import usage_counts

    note = crepo / "knowledge/reference/ledger.md"
    note.write_text("---\ntype: reference\n---\n# Ledger\n\n- the ledger speaks gRPC\n")
    run_git(crepo, "add", "-A")
    run_git(crepo, "commit", "-q", "-m", "memory: ledger")
    assert invoke_memory(crepo, "index").returncode == 0
    found = invoke_memory(crepo, "search", "ledger", "grpc")
    assert "knowledge/reference/ledger.md" in found.stdout
    assert invoke_memory(crepo, "compile", "ledger", "grpc").returncode == 0
    assert run_git(crepo, "status", "--porcelain", "--untracked-files=all").stdout == ""
    assert list((crepo / ".memrepo/signals").glob("hits-*.jsonl"))
    assert usage_counts(crepo).get("knowledge/reference/ledger.md", 0) >= 1


def test_min_score_and_snippet_max_chars(irepo_indexed: IRepo) -> None:
    """`search.min_score` drops the files scoring below it; `search.snippet_max_chars`
    bounds each snippet (seed 003's search settings)."""
    root = irepo_indexed.root
    query = ("--json", "rotate HMAC key")
    every = json.loads(invoke_memory(root, "search", *query).stdout)
    files = {}  # each file's score: its first line's
    for h in every:
        files.setdefault(h["path"], h["score"])
    first, second = list(files.values())[:2]
    assert max(len(h["snippet"]) for h in every) > 40
    cut = (first + second) / 2
    config = root / "memory-config.yaml"
    assert config.read_text().strip() == "{}"  # the fixture's: every default
    config.write_text(f"search:\n  min_score: {cut:.6f}\n  snippet_max_chars: 40\n")
    proc = invoke_memory(root, "search", *query)
    assert proc.returncode == 0, proc.stderr
    kept = json.loads(proc.stdout)
    assert {h["path"] for h in kept} == {every[0]["path"]}
    assert all(0 < len(h["snippet"]) <= 42 for h in kept)  # an ellipsis at a cut end
