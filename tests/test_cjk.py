"""Words of scripts written without spaces are found inside a sentence (audit gap 10, row
126): `memory search 迁移` finds 我们决定使用数据库迁移方案。 through the index, the hook's
incremental updates and the index-free scan alike, while a repo without such text keeps
an empty bigram table."""

from __future__ import annotations

import json
import sqlite3

from conftest import IRepo, invoke_memory, run_git

from memrepo.index import cjk
from memrepo.index.query import terms

ZH = """---
type: reference
---

# 数据库

我们决定使用数据库迁移方案。

缓存用Redis做，部署在东京。
"""
JA = """---
type: reference
---

# 旅行

昨日は東京タワーへ行きました。
"""
MIXED = """---
type: reference
---

# Notes

The migration plan for the database is in review.

한국어 문장입니다. กินข้าวแล้ว
"""


def _search(root, *query: str) -> list[dict]:
    proc = invoke_memory(root, "search", "--json", *query)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _cjk_vocab(db) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_cjk, 'row')")
        vocab = con.execute("SELECT term, doc, cnt FROM v ORDER BY term").fetchall()
        con.execute("INSERT INTO chunks_cjk(chunks_cjk) VALUES ('integrity-check')")
        return vocab
    finally:
        con.close()


def test_memory_search_finds_a_word_inside_a_sentence(memrepo_root) -> None:
    root = memrepo_root
    (root / "knowledge" / "reference" / "db-zh.md").write_text(ZH, encoding="utf-8")
    (root / "knowledge" / "reference" / "travel-ja.md").write_text(JA, encoding="utf-8")
    (root / "knowledge" / "reference" / "notes.md").write_text(MIXED, encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", "memory: notes in three scripts")
    assert invoke_memory(root, "index").returncode == 0  # the post-commit hook did it

    hits = _search(root, "迁移")  # two characters, in the middle of a run
    assert [h["path"] for h in hits] == ["knowledge/reference/db-zh.md"]
    assert hits[0]["snippet"] == "我们决定使用数据库迁移方案。"
    assert _search(root, "数据库迁移")[0]["path"] == "knowledge/reference/db-zh.md"
    assert _search(root, "タワー")[0]["path"] == "knowledge/reference/travel-ja.md"
    assert _search(root, "京")[0]["path"] in {  # one character: a prefix of a bigram
        "knowledge/reference/db-zh.md",
        "knowledge/reference/travel-ja.md",
    }
    assert len(_search(root, "京")) == 2
    assert _search(root, "문장")[0]["path"] == "knowledge/reference/notes.md"
    assert _search(root, "ข้าว")[0]["path"] == "knowledge/reference/notes.md"
    # a Latin word written against a run, no space: found, with its line as the snippet
    redis = _search(root, "redis")
    assert redis[0]["path"] == "knowledge/reference/db-zh.md"
    assert "Redis" in redis[0]["snippet"]
    # the Latin case is unchanged
    assert _search(root, "migration", "plan")[0]["path"] == "knowledge/reference/notes.md"
    assert _search(root, "迁徙") == []  # shares one character only: no bigram in common

    # without the index, the scan finds the same
    (root / "memory.db").unlink()
    proc = invoke_memory(root, "search", "--json", "迁移")
    assert "using a" in proc.stderr and "scan" in proc.stderr
    scanned = json.loads(proc.stdout)
    assert [h["path"] for h in scanned] == ["knowledge/reference/db-zh.md"]
    assert scanned[0]["snippet"] == "我们决定使用数据库迁移方案。"
    assert _search(root, "redis")[0]["path"] == "knowledge/reference/db-zh.md"


def test_incremental_updates_keep_the_bigram_table_equal_to_a_rebuild(
    irepo_indexed: IRepo, tmp_path
) -> None:
    repo = irepo_indexed
    repo.write("knowledge/reference/db-zh.md", ZH)
    repo.commit("add")
    repo.event()
    repo.write("knowledge/reference/db-zh.md", ZH.replace("迁移方案", "迁移计划"))
    repo.write("knowledge/reference/travel-ja.md", JA)
    repo.commit("edit")
    repo.event()
    run_git(repo.root, "rm", "-q", "knowledge/reference/travel-ja.md")
    repo.commit("delete")
    repo.event()
    vocab = _cjk_vocab(repo.root / "memory.db")
    assert ("计划", 1, 1) in vocab and not any(t == "方案" for t, _, _ in vocab)
    assert not any(t == "タワ" for t, _, _ in vocab)
    assert repo.snapshot() == repo.rebuilt_snapshot(tmp_path)
    copy = sorted(p for p in tmp_path.iterdir() if p.name.startswith("rebuilt-"))[-1]
    assert vocab == _cjk_vocab(copy / "memory.db")


def test_a_repo_without_such_text_keeps_the_bigram_table_empty(irepo_indexed: IRepo) -> None:
    con = sqlite3.connect(irepo_indexed.root / "memory.db")
    try:
        assert con.execute("SELECT count(*) FROM chunks_cjk_docsize").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    finally:
        con.close()


def test_what_the_bigram_table_holds_and_asks() -> None:
    assert cjk.index_text("plain ascii text") == ""
    assert cjk.index_text("naïve café — “quoted”") == ""  # non-ASCII, no such script
    assert cjk.index_text("数据库迁移") == "数据 据库 库迁 迁移 移"
    assert cjk.index_text("用Redis做缓存") == "用\n做缓 缓存 存\nredis"
    assert cjk.index_text("v2版本") == "版本 本\nv2"
    assert cjk.index_text("กินข้าว").split() == ["กิ", "ิน", "นข", "ข้", "้า", "าว", "ว"]
    # the query: a word of such a script is kept whole (with Thai's vowel marks), even alone
    assert terms("memory search 迁移") == ["memory", "search", "迁移"]
    assert terms("猫") == ["猫"] and terms("a") == []
    assert terms("กินข้าว") == ["กินข้าว"]
    assert cjk.match(["迁移"]) == '"迁移"'
    assert cjk.match(["数据库"]) == '"数据" OR "据库" OR "数据 据库"'
    assert cjk.match(["猫"]) == '"猫" *'
    assert cjk.match(["用redis做缓存"]) == '"做缓" OR "缓存" OR "做缓 缓存" OR "redis"'
    assert cjk.match(["deploy"]) == "" and cjk.match(["deploy"], glued=True) == '"deploy"'
