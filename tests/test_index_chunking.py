"""Chunking: headings, transcript turns and bullet groups, each with the right line span."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from memrepo.index.chunking import MAX_CHARS, chunk_lines
from memrepo.index.docmeta import read_meta
from memrepo.index.writer import parse


def _chunks(text: str, path: str = "knowledge/reference/x.md"):
    return parse(path, text.encode()).chunks


def _span_text(text: str, chunk) -> str:
    return "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])


def test_transcript_turns_are_chunks_with_their_lines() -> None:
    text = (
        "---\ntype: conversation\nsession_id: s\nstarted: 2024-01-01T10:00:00Z\n---\n"
        "# Title\n\n## 10:00 — user\n\nfirst question\n\n"
        "## 10:01 — agent\n\nan answer\nover two lines\n"
    )
    chunks = _chunks(text, "raw/conversations/2024/01/01/1000-s-x.md")
    assert [(c.start_line, c.end_line) for c in chunks] == [(8, 10), (12, 15)]
    assert _span_text(text, chunks[0]).startswith("## 10:00 — user")
    assert _span_text(text, chunks[1]).endswith("over two lines")
    assert "Title" not in chunks[0].text  # transcripts carry no heading trail


def test_headings_nest_and_carry_their_trail() -> None:
    text = (
        "---\ntype: reference\n---\n# Guide\n\nintro line\n\n"
        "## Part A\n\nalpha\n\n### Detail\n\nbeta\n"
    )
    chunks = _chunks(text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(4, 6), (8, 10), (12, 14)]
    assert chunks[2].text.startswith("Guide › Part A\n### Detail")


def test_long_bullet_list_is_cut_at_bullets_with_overlap() -> None:
    bullets = [f"- item {i} " + "word " * 40 for i in range(40)]
    text = (
        "---\ntype: journal\ndate: 2024-01-01\n---\n## 2024-01-01\n\n" + "\n".join(bullets) + "\n"
    )
    chunks = _chunks(text, "knowledge/journal/2024-01-01.md")
    assert len(chunks) > 3
    lines = text.split("\n")
    for a, b in itertools.pairwise(chunks):
        assert b.start_line == a.end_line  # one line of overlap
        assert lines[b.start_line - 1].startswith("- item")
    assert all(len(c.text) <= MAX_CHARS + 300 for c in chunks)
    assert chunks[-1].end_line == len(lines) - 1


def test_headings_inside_code_fences_do_not_split() -> None:
    text = "# Doc\n\nintro\n\n```bash\n# not a heading\necho hi\n```\n\nafter\n"
    chunks = _chunks(text, "notes.md")
    assert len(chunks) == 1
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 10)


def test_body_line_after_frontmatter_and_metadata() -> None:
    text = (
        "---\ntype: journal\ndate: 2024-05-06\ntags:\n  - a\n  - b\n"
        "superseded_by: x.md\n---\nbody\n"
    )
    lines = text.split("\n")
    meta = read_meta(text, lines, "knowledge/journal/2024-05-06.md")
    assert meta.body_line == 9
    assert meta.tags == ["a", "b"]
    assert meta.modified == "2024-05-06"
    assert meta.status == "superseded"
    assert meta.category == "journal"


def test_archive_status_and_path_dates() -> None:
    meta = read_meta("no frontmatter", ["no frontmatter"], "archive/journal/2020-01-02.md")
    assert meta.status == "archived" and meta.modified == "2020-01-02"


def test_unusual_yaml_falls_back_to_the_full_parser() -> None:
    text = "---\ntype: reference\ntags: &t [x, y]\n---\nbody\n"
    meta = read_meta(text, text.split("\n"), "knowledge/reference/a.md")
    assert meta.tags == ["x", "y"]


def test_chunker_is_deterministic_and_empty_sections_skipped() -> None:
    lines = ["# A", "", "## B", "", "text", "", "## C", ""]
    one = chunk_lines(lines, 1)
    assert one == chunk_lines(lines, 1)
    assert [(c.start_line, c.end_line) for c in one] == [(3, 5)]


def test_a_turn_is_indexed_with_the_start_of_the_turn_before() -> None:
    text = (
        "---\ntype: conversation\nsession_id: s\nstarted: 2024-01-01T10:00:00Z\n---\n"
        "## 10:00 — user\n\nDid you visit Lisbon?\n\n## 10:01 — agent\n\nYes, last Friday.\n"
    )
    first, second = _chunks(text, "raw/conversations/2024/01/01/1000-s-x.md")
    assert (second.start_line, second.end_line) == (10, 12)  # the span stays the turn's own
    assert second.text.endswith("Did you visit Lisbon?")
    assert "Lisbon" not in _span_text(text, second)
    assert "Friday" not in first.text
    # vectors embed the turn alone: the lead is for BM25
    assert second.own_text == "## 10:01 — agent\n\nYes, last Friday."
    assert first.own_text == first.text


def test_vectors_are_made_from_the_turn_alone(irepo) -> None:
    import sqlite3

    from memrepo.index.embedders import HashEmbedder
    from memrepo.index.indexer import rebuild
    from memrepo.index.paths import db_path

    rebuild(irepo.root, "hash")
    path = "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    chunks = _chunks((irepo.root / path).read_text(), path)
    led = [c for c in chunks if c.lead]
    assert led, "the fixture transcript has a turn after the first"
    con = sqlite3.connect(db_path(irepo.root))
    stored = dict(con.execute("SELECT hash, vec FROM vectors").fetchall())
    con.close()
    emb = HashEmbedder()
    for c in led:
        assert stored[c.hash] == emb.embed_one(c.own_text) != emb.embed_one(c.text)
    # ... and each turn but the last a second one, with its reply; nothing else is stored
    replied = [c for c in chunks if c.reply]
    assert replied and not chunks[-1].reply
    for c in replied:
        assert stored[c.reply_hash] == emb.embed_one(c.reply_text)
    keys = {k for p in irepo.root.rglob("*.md") if ".git" not in p.parts
            for c in _chunks(p.read_text(), p.relative_to(irepo.root).as_posix())
            for k in c.vector_texts()}
    assert set(stored) == keys


def test_a_turn_has_a_second_vector_text_with_its_reply() -> None:
    text = (
        "---\ntype: conversation\nsession_id: s\nstarted: 2024-01-01T10:00:00Z\n---\n"
        "## 10:00 — user\n\nDid you go?\n\n## 10:01 — agent\n\nYes, to Paris.\n\n"
        "## 10:02 — user\n\nNice.\n"
    )
    first, second, last = _chunks(text, "raw/conversations/2024/01/01/1000-s-x.md")
    assert first.reply == second.own_text and second.reply == last.own_text
    assert first.reply_text == "## 10:00 — user\n\nDid you go?\n## 10:01 — agent\n\nYes, to Paris."
    assert last.reply == "" and last.reply_text is None and last.reply_hash is None
    assert first.vector_texts() == {first.hash: first.own_text,
                                    first.reply_hash: first.reply_text}
    assert last.vector_texts() == {last.hash: last.own_text}
    # a key is never shared between a turn's text and a reply text that reads the same
    twin = replace(first, text=first.reply_text, lead=0, reply="")
    assert twin.hash != first.reply_hash
    # notes are sections, not a dialogue: one vector each
    note = _chunks("# A\n\none\n\n# B\n\ntwo\n")
    assert len(note) == 2 and not any(c.reply for c in note)


def test_hash_embedder_batch_path_equals_the_one_by_one_path() -> None:
    """A rebuild embeds in numpy batches, the hook one text at a time: same vectors."""
    import array

    pytest.importorskip("numpy")
    from memrepo.index.embedders import HashEmbedder

    texts = [f"Deploy #{i}: the payment-API (v{i}) & HMAC keys; {'word ' * (i % 7)}" for i in range(300)]
    texts += ["", "the and of", "a \x01 b", "ünïcode 東京 text"]
    emb = HashEmbedder()
    assert len(texts) >= emb.NUMPY_BATCH
    batch = emb.embed(texts)
    one = [emb.embed_one(t) for t in texts]
    assert len(batch) == len(texts)
    for b, o in zip(batch, one, strict=True):
        vb, vo = array.array("f", b), array.array("f", o)
        assert max(abs(x - y) for x, y in zip(vb, vo, strict=True)) < 1e-6
