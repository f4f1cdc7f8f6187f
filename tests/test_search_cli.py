"""`memory search`: JSON shape, filters, batch, explain, odd queries, and the fallback."""

from __future__ import annotations

import json

import pytest
from conftest import IRepo, run_memory

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
    proc = run_memory(irepo_indexed.root, "search", "--json", "rotate HMAC key")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    top = hits[0]
    assert set(top) == {"path", "category", "score", "start_line", "end_line", "snippet"}
    assert top["path"] == "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    assert (top["start_line"], top["end_line"]) == (8, 10)
    assert "rotate" in top["snippet"]


def test_filters(irepo_indexed: IRepo) -> None:
    def paths(*args: str) -> list[str]:
        proc = run_memory(irepo_indexed.root, "search", "--json", *args)
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
    bad = run_memory(irepo_indexed.root, "search", "x", "--since", "yesterday-ish")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_archive_is_filtered_unless_asked(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    r.write(
        "archive/journal/2020-01-01.md",
        "---\ntype: journal\ndate: 2020-01-01\n---\n- zebra facts\n",
    )
    r.commit("archive")
    r.event()
    proc = run_memory(r.root, "search", "--json", "zebra")
    assert json.loads(proc.stdout) == []
    proc = run_memory(r.root, "search", "--json", "zebra", "--include-archive")
    assert [h["path"] for h in json.loads(proc.stdout)] == ["archive/journal/2020-01-01.md"]


def test_superseded_is_down_ranked(irepo_indexed: IRepo) -> None:
    r = irepo_indexed
    body = "\nThe deploy window is Friday evening.\n"
    r.write("knowledge/reference/old.md", "---\ntype: reference\nstatus: superseded\n---" + body)
    r.write("knowledge/reference/new.md", "---\ntype: reference\n---" + body)
    r.commit("two versions")
    r.event()
    proc = run_memory(r.root, "search", "--json", "deploy window", "--explain")
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
    proc = run_memory(irepo_indexed.root, "search", "--batch", input=stdin + "\nnot json\n")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["a", "b", 3, None]
    assert lines[0]["results"][0]["path"] == "knowledge/reference/kubernetes.md"
    proc = run_memory(irepo_indexed.root, "search", "tea", "--explain")
    assert "recency_factor=" in proc.stdout and "bm25=" in proc.stdout


@pytest.mark.parametrize("damage", ["delete", "corrupt"])
def test_without_a_usable_index_search_still_answers(irepo_indexed: IRepo, damage: str) -> None:
    root = irepo_indexed.root
    before = json.loads(run_memory(root, "search", "--json", "rotate HMAC key").stdout)
    db = root / "memory.db"
    if damage == "delete":
        db.unlink()
    else:
        db.write_bytes(b"garbage" * 1000)
    proc = run_memory(root, "search", "--json", "rotate HMAC key")
    assert proc.returncode == 0, proc.stderr
    assert "index unavailable" in proc.stderr or "index failed" in proc.stderr
    after = json.loads(proc.stdout)
    assert [h["path"] for h in after] == [h["path"] for h in before]
    assert (after[0]["start_line"], after[0]["end_line"]) == (
        before[0]["start_line"],
        before[0]["end_line"],
    )
    assert set(after[0]) == set(before[0])
