"""Ranking details: dates named in the query, superseded entries, the best chunk per file."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from conftest import IRepo, invoke_memory

from memrepo.index.dates import date_ranges, holding, in_ranges
from memrepo.index.indexer import sync
from memrepo.index.ranking import Settings
from memrepo.index.search import Searcher
from memrepo.layout import superseded_share


def test_date_ranges_reads_calendar_dates_and_relative_phrases() -> None:
    day = (dt.date(2023, 6, 3), dt.date(2023, 6, 3))
    today = dt.date(2026, 11, 25)  # a Wednesday
    assert date_ranges("What did Maria do on 3 June, 2023?", today) == [day]
    assert date_ranges("as of June 3rd 2023", today) == [day]
    assert date_ranges("the 3rd of June 2023", today) == [day]
    assert date_ranges("see 2023-06-03", today) == [day]
    assert date_ranges("in Sept. 2023", today) == [(dt.date(2023, 9, 1), dt.date(2023, 9, 30))]
    assert date_ranges("in December 2023") == [(dt.date(2023, 12, 1), dt.date(2023, 12, 31))]
    assert date_ranges("in February 2024") == [(dt.date(2024, 2, 1), dt.date(2024, 2, 29))]
    for text in ["May I ask", "last week", "on 3 June", "31 February 2023", "2023-13-01", "",
                 "9999 years ago", "1000 months ago"]:
        assert all(a <= b for a, b in date_ranges(text, today))
    assert date_ranges("on 3 June", today) == []  # a day with no year: no guess
    assert date_ranges("May I ask? this may be it", today) == []  # "may" is not a month here
    # relative phrases are read against the day asked (today, or --now)
    last_week = (dt.date(2026, 11, 16), dt.date(2026, 11, 22))
    assert date_ranges("May I ask what happened last week?", today) == [last_week]
    assert date_ranges("yesterday's deploy", today) == [(dt.date(2026, 11, 24),) * 2]
    assert date_ranges("two days ago", today) == [(dt.date(2026, 11, 23),) * 2]
    assert date_ranges("3 weeks ago", today) == [(dt.date(2026, 11, 2), dt.date(2026, 11, 8))]
    assert date_ranges("this week", today) == [(dt.date(2026, 11, 23), today)]
    assert date_ranges("last month", today) == [(dt.date(2026, 10, 1), dt.date(2026, 10, 31))]
    assert date_ranges("in March", today) == [(dt.date(2026, 3, 1), dt.date(2026, 3, 31))]
    assert date_ranges("in may", dt.date(2026, 2, 1)) == [(dt.date(2025, 5, 1),
                                                          dt.date(2025, 5, 31))]
    assert date_ranges("the past week", today) == [(dt.date(2026, 11, 19), today)]
    assert in_ranges("2023-06-03T10:00:00+00:00", [day])
    assert not in_ranges("2023-06-04", [day]) and not in_ranges(None, [day])


def test_a_month_without_its_year_is_the_latest_one_the_memory_holds() -> None:
    today = dt.date(2026, 11, 25)
    june = {y: (dt.date(y, 6, 1), dt.date(y, 6, 30)) for y in (2023, 2024, 2026)}
    found = holding(["2023-06-27T10:37:00+00:00", "2024-06-03", "2024-07-01", None, ""])
    assert date_ranges("camping in June", today, found) == [june[2024]]  # not the empty 2026
    assert date_ranges("camping in June", today, holding(["2023-06-27"])) == [june[2023]]
    both = holding(["2023-06-27", "2026-06-02"])
    assert date_ranges("camping in June", today, both) == [june[2026]]  # the latest wins
    for none_held in (holding([]), holding(["2025-07-01", "2019-01-09"]), holding(["2027-06-01"])):
        assert date_ranges("camping in June", today, none_held) == [june[2026]]  # as before
    # a year written, or a phrase that names its own span, is never moved
    assert date_ranges("in June 2025", today, found) == [(dt.date(2025, 6, 1), dt.date(2025, 6, 30))]
    assert date_ranges("last month", today, found) == [(dt.date(2026, 10, 1), dt.date(2026, 10, 31))]
    assert date_ranges("in June", today, holding(["0001-06-01"])) == [(dt.date(1, 6, 1),
                                                                         dt.date(1, 6, 30))]


def _journal(day: str, text: str) -> str:
    return f"---\ntype: journal\ndate: {day}\n---\n\n## {day}\n\n- {text}\n"


def _two_journals(irepo: IRepo) -> None:
    """May 2 mentions the billing worker more; May 9 is the one a date may pick."""
    irepo.write(
        "knowledge/journal/2024-05-02.md",
        _journal("2024-05-02", "Deployed the billing worker twice, billing worker restarted."),
    )
    irepo.write(
        "knowledge/journal/2024-05-09.md", _journal("2024-05-09", "Deployed the billing worker.")
    )
    irepo.commit("journals")
    sync(irepo.root)


def test_a_file_dated_on_the_day_the_query_names_ranks_first(irepo: IRepo) -> None:
    _two_journals(irepo)
    s = Searcher(irepo.root)
    try:
        plain = [h.path for h in s.search("billing worker deployed", 5)]
        dated = s.search(
            "billing worker deployed on 9 May 2024",
            5,
        )
    finally:
        s.close()
    assert plain[0].endswith("2024-05-02.md")  # more matches wins without a date
    assert dated[0].path.endswith("2024-05-09.md")
    assert dated[0].explain is not None and dated[0].explain["date_factor"] == 2.0


def test_last_week_means_the_week_before_now(irepo: IRepo) -> None:
    """A relative phrase becomes a date window against --now (or today), which up-ranks
    what the memory recorded then; --explain shows the window."""
    _two_journals(irepo)
    query = ["search", "--json", "--explain", "--now", "2024-05-15", "billing worker deployed"]
    out = json.loads(invoke_memory(irepo.root, *query, "last", "week").stdout)
    assert out[0]["path"].endswith("2024-05-09.md")  # the week of May 6-12
    assert out[0]["explain"]["date_window"] == "2024-05-06..2024-05-12"
    plain = json.loads(invoke_memory(irepo.root, *query).stdout)
    assert plain[0]["path"].endswith("2024-05-02.md") and "date_window" not in plain[0]["explain"]
    earlier = json.loads(invoke_memory(irepo.root, *query[:4], "2024-05-08", *query[5:],
                                       "last", "week").stdout)
    assert earlier[0]["path"].endswith("2024-05-02.md")  # now the week of Apr 29 - May 5


def test_in_may_finds_the_may_the_memory_recorded_with_or_without_the_index(irepo: IRepo) -> None:
    """Asked in 2026 about "May", a memory whose Mays are in 2024 reads May 2024 (May 2026
    holds nothing): the May journal outranks a June one with more matching words, and the
    scanner that answers without memory.db reads the same window."""
    _two_journals(irepo)
    irepo.write("knowledge/journal/2024-06-20.md", _journal(
        "2024-06-20", "Deployed the billing worker again, billing worker billing worker."))
    irepo.commit("june")
    sync(irepo.root)
    query = ["search", "--json", "--explain", "--now", "2026-11-25", "billing worker deployed"]
    plain = json.loads(invoke_memory(irepo.root, *query).stdout)
    assert plain[0]["path"].endswith("2024-06-20.md")
    for engine in ("index", "scan"):
        if engine == "scan":
            (irepo.root / "memory.db").unlink()
        out = json.loads(invoke_memory(irepo.root, *query, "in", "May").stdout)
        assert out[0]["path"].endswith(("2024-05-02.md", "2024-05-09.md")), engine
        assert out[0]["explain"]["date_window"] == "2024-05-01..2024-05-31", engine
        assert out[0]["explain"].get("engine", "index") in (engine, "ripgrep")


SUPERSEDED = (
    "- ~~2024-03-02: Use MySQL for the ledger database, MySQL replicas~~ "
    "[src: 2024/03/02/0910-s1] (superseded 2024-03-05 by: Use PostgreSQL for the ledger database)"
)


def test_superseded_entries_are_down_ranked_and_not_the_snippet(irepo: IRepo) -> None:
    assert superseded_share([SUPERSEDED, "- Use PostgreSQL", "prose"]) == 0.5
    irepo.write(
        "knowledge/projects/ledger/context.md",
        "---\ntype: project_context\n---\n# Ledger\n\n## Key Decisions\n\n" + SUPERSEDED + "\n",
    )
    irepo.write(
        "knowledge/reference/db.md",
        "---\ntype: reference\n---\n# Databases\n\nThe reporting service reads a MySQL ledger copy.\n",
    )
    irepo.write(
        "knowledge/projects/billing/context.md",
        "---\ntype: project_context\n---\n# Billing\n\n## Key Decisions\n\n"
        + SUPERSEDED.replace("ledger", "billing")
        + "\n- 2024-03-05: Use PostgreSQL for the billing database (MySQL retired)\n",
    )
    irepo.commit("decisions")
    sync(irepo.root)

    def top(settings: Settings, query: str) -> list:
        s = Searcher(irepo.root, settings)
        try:
            return s.search(query, 5)
        finally:
            s.close()

    neutral = top(Settings(superseded_factor=1.0), "MySQL ledger database")
    assert neutral[0].path == "knowledge/projects/ledger/context.md"  # more matching words
    ranked = top(Settings(), "MySQL ledger database")
    assert ranked[0].path == "knowledge/reference/db.md"
    assert ranked[0].score > next(h.score for h in ranked if "ledger/context" in h.path)
    billing = next(h for h in top(Settings(), "MySQL billing") if "billing" in h.path)
    assert billing.snippet.startswith("- 2024-03-05: Use PostgreSQL")  # the current entry


def test_hybrid_fusion_keeps_every_keyword_match_above_unrelated_vectors() -> None:
    """Seed 000's merge: scores divided by the best of their kind; sim <= 0 counts nothing."""
    from memrepo.index.ranking import ChunkHit, FileInfo, fuse, rank

    hits = [
        ChunkHit(1, "a.md", 0, 1, 2, bm25=9.0, vector=0.9),
        ChunkHit(2, "weak-keyword.md", 0, 1, 2, bm25=1.0, vector=-0.2),
        ChunkHit(3, "vector-only.md", 0, 1, 2, bm25=0.0, vector=0.3),
        ChunkHit(4, "unrelated.md", 0, 1, 2, bm25=0.0, vector=-0.5),
        ChunkHit(5, "orthogonal.md", 0, 1, 2, bm25=0.0, vector=0.0),
    ]
    for fusion in ("weighted", "rrf"):
        fuse(hits, Settings(fusion=fusion), have_vectors=True)
        files = {p: FileInfo(p, None, None, "") for p in {h.path for h in hits}}
        order = [r.path for r in rank(hits, files, {}, Settings(fusion=fusion), 10)]
        assert order[0] == "a.md" and "weak-keyword.md" in order and "vector-only.md" in order
        assert "unrelated.md" not in order and "orthogonal.md" not in order
    fuse(hits, Settings(), have_vectors=True)
    assert hits[1].fused > 0  # the weakest keyword match keeps its BM25 share


def test_a_similarity_counts_from_the_last_of_the_nearest_vectors_taken(
    irepo: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk the nearest search did not take is just below its last one, not unrelated:
    the last one taken scores 0 for its vector, as they do, and the best scores the whole
    vector weight; BM25 is still divided by its best (the weakest match keeps its share)."""
    from memrepo.index import search
    from memrepo.index.indexer import rebuild
    from memrepo.index.ranking import ChunkHit, fuse

    hits = [
        ChunkHit(1, "a.md", 0, 1, 2, bm25=2.0, vector=0.6),
        ChunkHit(2, "last-taken.md", 0, 1, 2, bm25=0.0, vector=0.3),
        ChunkHit(3, "keyword-only.md", 0, 1, 2, bm25=1.0, vector=None),
        ChunkHit(4, "halfway.md", 0, 1, 2, bm25=0.0, vector=0.45),
    ]
    fuse(hits, Settings(), have_vectors=True, vector_floor=0.3)
    assert [round(h.fused, 6) for h in hits] == [1.0, 0.0, 0.25, 0.25]
    fuse(hits, Settings(), have_vectors=True)  # no floor: each similarity / the best
    assert [round(h.fused, 6) for h in hits] == [1.0, 0.25, 0.25, 0.375]
    fuse(hits, Settings(), have_vectors=True, vector_floor=0.7)  # none above it
    assert [round(h.fused, 6) for h in hits] == [0.5, 0.0, 0.25, 0.0]

    # the searcher's floor is the similarity of the last nearest vector it took
    rebuild(irepo.root, "hash")
    monkeypatch.setattr(search, "VECTOR_CANDIDATES", 3)
    seen: dict[str, object] = {}
    real_fuse = search.fuse

    def spy(chunks: list, settings: Settings, have: bool, floor: float = 0.0) -> None:
        seen["floor"] = floor
        real_fuse(chunks, settings, have, floor)

    monkeypatch.setattr(search, "fuse", spy)
    s = Searcher(irepo.root, embedder_name="hash", local_model=True)
    try:
        (n,) = s.con.execute("SELECT count(*) FROM vectors").fetchone()
        assert n == 6
        s.search("how do I rotate the signing key", 1)
        top = s._vsearch.top(s.embedder.embed([s._vector_text("how do I rotate the signing "
                                                               "key")])[0], 3)
        assert seen["floor"] == min(sim for _, sim in top) > 0
        # 4 results take 2 nearest vectors each, 8 > the 6 there are: a search that took
        # every vector cut nowhere, no floor (a small repo's weakest vector is not "just
        # below" anything, and min-max would magnify its noise)
        s.search("how do I rotate the signing key", 4)
        assert seen["floor"] == 0.0
    finally:
        s.close()


def test_query_expansion_finds_a_neighbour_word_when_turned_on(irepo: IRepo) -> None:
    """search.expansion_weight: "pottery" also searches its table neighbours ("ceramics")."""
    from memrepo.index import expand

    assert "ceramics" in expand.neighbours("pottery")
    irepo.write("knowledge/reference/studio.md",
                "---\ntype: reference\n---\n\n- We bought new ceramics for the studio.\n")
    irepo.commit("studio")
    sync(irepo.root)

    def found(weight: str) -> list[str]:
        irepo.write("memory-config.yaml", f"search:\n  expansion_weight: {weight}\n")
        res = invoke_memory(irepo.root, "search", "--json", "pottery")
        assert res.returncode == 0, res.stderr
        return [h["path"] for h in json.loads(res.stdout)]

    assert "knowledge/reference/studio.md" not in found("0")
    assert found("0.2")[0] == "knowledge/reference/studio.md"
    assert expand.expansion(["pottery", "zzzz"], used=lambda w: w != "porcelain") == [
        "ceramics", "ceramic", "pots"]


@pytest.mark.parametrize("candidates", [200, 1])
def test_a_turn_scores_the_mean_of_its_own_and_its_reply_vector(
    irepo: IRepo, candidates: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript turn has two vectors (the turn, and the turn with the reply it got):
    search gives it their mean. With every vector taken (200) both are exact; when the
    nearest search stopped at its first vector, the other of that turn's two counts as
    the first's cosine (it is at most that), not fetched and scored."""
    import array
    import sqlite3

    from memrepo.index import search
    from memrepo.index.embedders import HashEmbedder
    from memrepo.index.indexer import rebuild
    from memrepo.index.writer import parse

    monkeypatch.setattr(search, "nearest_k", lambda limit, replies: candidates)
    rebuild(irepo.root, "hash")
    emb = HashEmbedder()
    query = "how do I rotate the signing key"
    qv = array.array("f", emb.embed_one(query))
    con = sqlite3.connect(irepo.root / "memory.db")
    cos = {h: sum(x * y for x, y in zip(qv, array.array("f", v), strict=True))
           for h, v in con.execute("SELECT hash, vec FROM vectors")}
    keys = {(p, a): (h, r) for p, a, h, r in con.execute(
        "SELECT d.path, c.start_line, c.hash, c.reply_hash FROM chunks c "
        "JOIN documents d ON d.id = c.doc_id")}
    con.close()
    ranked = sorted(cos, key=lambda k: -cos[k])
    taken = set(ranked[:candidates])
    cut = cos[ranked[candidates - 1]] if len(ranked) > candidates else None
    assert (cut is None) == (candidates == 200)

    s = Searcher(irepo.root, embedder_name="hash", local_model=True)
    try:
        hits = s.search(query, 10)
    finally:
        s.close()
    halves = 0
    for h in hits:
        if "vector" not in (h.explain or {}):
            continue  # a file's further chunk: the file's first line explains its best
        own, reply = keys[(h.path, h.start_line)]
        mine = [k for k in (own, reply) if k is not None]
        if not taken & set(mine):
            assert not h.explain["vector"], h  # found by its words alone
            continue
        want = [cos[k] if k in taken else cut for k in mine]
        halves += len(mine) == 2 and len(taken & set(mine)) == 1
        assert h.explain["vector"] == pytest.approx(sum(want) / len(want), abs=1e-4), h
    path = "raw/conversations/2024/03/02/1000-s1-rotating-keys.md"
    first = parse(path, (irepo.root / path).read_bytes()).chunks[0]
    assert first.reply and any(h.path == path for h in hits)
    assert halves > 0 if candidates == 1 else halves == 0


def test_a_hit_found_by_its_vector_alone_keeps_its_file_facts(
    irepo: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk no query word matches, brought in by its vector, is ranked with its file's
    date and category (read in the same join that names the file)."""
    from memrepo.index.indexer import rebuild

    rebuild(irepo.root, "hash")
    s = Searcher(irepo.root, embedder_name="hash", local_model=True)
    try:
        with_words = {h.path: h for h in s.search("rotating signing keys", 10)
                      if h.explain and "days" in h.explain}  # a file's first line
        monkeypatch.setattr(Searcher, "_fts", lambda *a: [])  # no word matches anything
        by_vector = s.search("rotating signing keys", 10)
    finally:
        s.close()
    assert by_vector and all(h.explain["bm25"] == 0 for h in by_vector)
    for h in by_vector:
        assert h.category is not None and h.explain["days"] is not None, h
        if h.path in with_words:
            assert h.category == with_words[h.path].category
            assert h.explain["days"] == with_words[h.path].explain["days"]


def test_words_too_common_are_left_out_and_counted_again_after_an_index_change(
    irepo: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word in more than ``cap`` chunks ranks nothing (it is skipped, and said so); a
    long-lived searcher remembers each count until another connection changes the index."""
    from memrepo.index import wordcounts
    from memrepo.index.indexer import rebuild

    monkeypatch.setattr(wordcounts, "COMMON_MIN", 2)
    monkeypatch.setattr(wordcounts, "COMMON_FRAC", 0.0)
    rebuild(irepo.root, "none")
    s = Searcher(irepo.root)
    try:
        first = s.search("otters vault")
        assert "common_words_skipped" not in first[0].explain
        for name in ("a", "b"):
            irepo.write(f"knowledge/reference/otters-{name}.md", f"# Otters {name}\n\notters\n")
        irepo.commit("otters")
        sync(irepo.root)  # another connection commits: the counts are stale
        again = s.search("otters vault")
        assert again[0].explain["common_words_skipped"] == "otters"
        assert [h.path for h in again] == [first[0].path]  # the otters files rank nothing
    finally:
        s.close()


def _long_prompt_repo(irepo: IRepo) -> list[str]:
    """Six notes sharing 30 short words; one of them also names a quokka (the rarest
    word, and longer than the shared ones)."""
    shared = [f"w{chr(97 + i)}{chr(97 + j)}x" for i in range(5) for j in range(6)]
    for n in range(6):
        extra = " The quokka ate the cable." if n == 4 else ""
        irepo.write(f"knowledge/reference/note-{n}.md",
                    f"---\ntype: reference\n---\n# Note {n}\n\n{' '.join(shared)}.{extra}\n")
    irepo.commit("notes")
    return shared


@pytest.mark.parametrize("engine", ["index", "scan"])
def test_a_long_prompt_is_searched_by_its_rarest_words(irepo: IRepo, engine: str) -> None:
    """More than QUERY_TERMS search words (a pasted log): the index searches the rarest of
    them, the scanner (no counts) the longest; the rare word at the prompt's end still
    finds its note, and --explain says what was searched."""
    from memrepo.index import query

    shared = _long_prompt_repo(irepo)
    if engine == "index":
        sync(irepo.root)
    prompt = " ".join(shared) + " nowhereword quokka"
    assert len(query.terms(prompt)) == 32 > query.QUERY_TERMS
    out = json.loads(invoke_memory(irepo.root, "search", "--json", "--explain", prompt).stdout)
    assert out[0]["path"] == "knowledge/reference/note-4.md"
    which = "the rarest" if engine == "index" else "the longest"
    assert out[0]["explain"]["long_prompt"] == f"searched by 24 of its 32 words, {which}"
    short = json.loads(invoke_memory(irepo.root, "search", "--json", "--explain",
                                     " ".join(shared[:20]) + " quokka").stdout)
    assert "long_prompt" not in short[0]["explain"]


def test_the_commonest_words_are_left_out_past_the_match_budget(
    irepo: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ranked query costs its matches (bm25 for each): past MATCH_BUDGET the commonest
    words go first, and the rarest always stays."""
    from memrepo.index import wordcounts

    _long_prompt_repo(irepo)
    sync(irepo.root)
    monkeypatch.setattr(wordcounts, "COMMON_MIN", 100)  # a cap no word reaches
    monkeypatch.setattr(wordcounts, "MATCH_BUDGET", 7)
    s = Searcher(irepo.root)
    try:
        s.meta["chunks"] = "1000"  # counted as a large index
        hits = s.search("quokka waax cable", 5)  # 1 + 6 + 1 matches
        explain = hits[0].explain
        assert hits[0].path == "knowledge/reference/note-4.md"
        assert explain is not None and explain["common_words_skipped"] == "waax"
        monkeypatch.setattr(wordcounts, "MATCH_BUDGET", 0)  # the rarest word stays, alone
        explain = s.search("quokka waax cable", 5)[0].explain
        assert explain is not None and explain["common_words_skipped"] == "waax cable"
    finally:
        s.close()


def test_the_scanners_stem_counter_counts_as_comparing_every_token_and_word() -> None:
    """One lookup per token and prefix length gives the counts of the plain rule (a token
    equals the word, or starts with the first max(4, len - 2) letters of a 4+ letter
    word), on random words and tokens that share prefixes often."""
    import random
    from collections import Counter

    from memrepo.index.fallback import _StemCounter

    def plain(tokens: list[str], words: list[str]) -> Counter[str]:
        out: Counter[str] = Counter()
        for t in tokens:
            for w in words:
                if t == w or (len(w) > 3 and t.startswith(w[: max(4, len(w) - 2)])):
                    out[w] += 1
        return out

    rng = random.Random(7)
    for _ in range(300):
        words = list(dict.fromkeys("".join(rng.choice("abc") for _ in range(rng.randint(2, 8)))
                                   for _ in range(rng.randint(1, 12))))
        tokens = ["".join(rng.choice("abc") for _ in range(rng.randint(1, 10)))
                  for _ in range(rng.randint(0, 40))]
        got: Counter[str] = Counter()
        _StemCounter(words).count(tokens, got)
        assert got == plain(tokens, words), (words, tokens)


def test_the_scanner_takes_a_long_prompts_longest_words_before_its_ids() -> None:
    """Without counts, the scanner keeps a long prompt's 24 longest words, words with
    digits (ids, hashes: long, and in no note) last, in the prompt's order."""
    from memrepo.index.fallback import _scanned_words

    ids = [f"{n:08x}deadbeef" for n in range(10)]
    words = ids + [f"w{chr(97 + i)}x" for i in range(20)] + ["rollback", "postgres", "ledger"]
    chosen = _scanned_words(words)
    assert chosen[-3:] == ["rollback", "postgres", "ledger"] and len(chosen) == 24
    assert sum(w in ids for w in chosen) == 1  # 3 long words, 20 short, then one id
    assert _scanned_words(words[:24]) == words[:24]


def test_a_month_the_query_names_outranks_the_recent_files() -> None:
    """"billing … in March" ranked the March journal 4th of 4: a ×2 date boost could not
    beat 261 days of recency decay. A query naming a time weighs closeness to that time."""
    from memrepo.index.ranking import ChunkHit, FileInfo, fuse, rank

    today = dt.date(2026, 11, 25)
    march = date_ranges("what did we decide about billing in March", today)
    paths = {"knowledge/journal/2026-03-09.md": "2026-03-09",
             "knowledge/journal/2026-11-20.md": "2026-11-20",
             "knowledge/journal/2026-11-23.md": "2026-11-23",
             "knowledge/reference/billing.md": "2026-11-24"}
    files = {p: FileInfo(p, "journal", d, "") for p, d in paths.items()}

    def ranked(dates: list | None) -> list[str]:
        hits = [ChunkHit(i, p, 0, 1, 5, bm25=10.0) for i, p in enumerate(paths)]
        fuse(hits, Settings(), False)
        return [r.path for r in rank(hits, files, {}, Settings(), 4, today=today,
                                     dates=dates)]

    assert ranked(march)[0] == "knowledge/journal/2026-03-09.md", ranked(march)
    assert ranked(None)[-1] == "knowledge/journal/2026-03-09.md"  # no date named: recency
