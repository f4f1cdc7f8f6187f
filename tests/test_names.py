"""People's names kept out of the query vector (memrepo.index.names, issue #15).

Names come from the repo (transcript participants, ``people`` lists, person files), are
indexed word by word, and replaced by "they" / "their" in the text a query is embedded
from; BM25 still sees them."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import IRepo

from memrepo.index import names
from memrepo.index.docmeta import read_meta
from memrepo.index.embedders import HashEmbedder
from memrepo.index.indexer import sync
from memrepo.index.paths import db_path
from memrepo.index.ranking import Settings
from memrepo.index.search import Searcher


def meta(text: str, path: str):
    return read_meta(text, text.split("\n"), path)


@pytest.mark.parametrize(
    ("front", "path", "want"),
    [
        ("participants: {user: Caroline, agent: Melanie}", "raw/conversations/2023/01/01/a.md",
         ["Caroline", "Melanie"]),
        ("participants:\n  user: Ana\n  agent: Bo", "raw/conversations/2023/01/01/a.md",
         ["Ana", "Bo"]),
        ("people: [Jane Doe, 'Li Wei']", "knowledge/projects/p.md", ["Jane Doe", "Li Wei"]),
        ("type: person\naliases:\n  - Jo", "knowledge/people/jane-doe.md", ["Jo", "Jane Doe"]),
        ("type: person\nname: Dr. Ruth", "knowledge/people/ruth.md", ["Dr. Ruth", "Ruth"]),
        # a project's ``name`` is not a person
        ("type: project\nname: Apollo", "knowledge/projects/apollo.md", []),
        ("type: person", "knowledge/people/_index.md", []),
    ],
)
def test_frontmatter_names_people(front: str, path: str, want: list[str]) -> None:
    assert meta(f"---\n{front}\n---\nbody\n", path).names == want


def test_mask_replaces_written_names_only() -> None:
    known = set(names.words(["Caroline", "Melanie", "Jane Doe", "Will"])).__contains__
    assert names.mask("What did Caroline paint for Melanie?", known) == (
        "What did they paint for they?"
    )
    assert names.mask("What is Caroline's hobby?", known) == "What is their hobby?"
    assert names.mask("Did Jane Doe come?", known) == "Did they come?"
    assert names.mask("Jane Doe’s car", known) == "their car"
    # a name word written in lower case in a capitalised query is an ordinary word
    assert names.mask("What will Caroline do?", known) == "What will they do?"
    # a query typed all in lower case: its name words are names
    assert names.mask("what did caroline do", known) == "what did they do"
    assert names.mask("Nothing here", known) == "Nothing here"


class Recording(HashEmbedder):
    """The hash embedder, remembering the texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> list[bytes]:
        self.seen += texts
        return super().embed(texts)


def _searcher(root, settings: Settings) -> tuple[Searcher, Recording]:
    s = Searcher(root, settings, "hash", local_model=True)
    rec = Recording()
    s.embedder = rec
    return s, rec


def _embedded(root, query: str, settings: Settings | None = None) -> list[str]:
    """The texts one search of ``query`` embedded."""
    s, rec = _searcher(root, settings or Settings())
    try:
        s.search(query)
    finally:
        s.close()
    return rec.seen


def test_index_keeps_names_and_search_embeds_the_masked_query(irepo: IRepo) -> None:
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.write("knowledge/people/ana-lima.md", "---\ntype: person\n---\n# Ana\n\nLikes tea.\n")
    irepo.commit("people")
    sync(irepo.root, embedder_name="hash")
    con = sqlite3.connect(db_path(irepo.root))
    assert {w for (w,) in con.execute("SELECT word FROM names")} >= {"ana", "lima"}
    con.close()

    s, rec = _searcher(irepo.root, Settings())
    hits = s.search("What tea does Ana Lima like?")
    assert rec.seen == ["What tea does they like?"]
    assert hits and hits[0].path == "knowledge/people/ana-lima.md"  # BM25 still has "Ana"
    s.close()

    assert _embedded(irepo.root, "What tea does Ana Lima like?", Settings(mask_names=False)) \
        == ["What tea does Ana Lima like?"]


def test_a_removed_person_is_no_longer_masked(irepo: IRepo) -> None:
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.write("knowledge/people/bruno.md", "---\ntype: person\n---\n# Bruno\n")
    irepo.commit("bruno")
    sync(irepo.root, embedder_name="hash")
    assert _embedded(irepo.root, "Where is Bruno?") == ["Where is they?"]
    (irepo.root / "knowledge/people/bruno.md").unlink()
    irepo.commit("gone")
    sync(irepo.root, embedder_name="hash")
    assert _embedded(irepo.root, "Where is Bruno?") == ["Where is Bruno?"]


def test_named_finds_the_people_mask_replaces() -> None:
    known = set(names.words(["Caroline", "Melanie", "Jane Doe", "Will"])).__contains__
    assert names.named("What did Caroline paint for Melanie's mum, Caroline?", known) == [
        "caroline", "melanie"]
    assert names.named("What will Jane Doe do?", known) == ["jane", "doe"]
    assert names.named("what did caroline do", known) == ["caroline"]
    assert names.named("Nothing here", known) == []


def _camping(who: str, day: str, text: str) -> str:
    a, b = who.split()
    return (f"---\ntype: conversation\nsession_id: {day}\nstarted: 2023-06-{day}T10:00:00+00:00\n"
            f"participants: {{user: {a}, agent: {b}}}\n---\n# Trip\n\n## 10:00 — user\n\n{text}\n")


def test_a_file_naming_the_person_the_query_names_ranks_first(irepo: IRepo) -> None:
    """Among many people's conversations, "Melanie" picks Melanie's (issue #15: at 100K
    files the other conversations took the places); a person in more than
    PEOPLE_FRAC of the files (here Caroline, in 2 of 5) lifts nothing."""
    irepo.write("raw/conversations/2023/06/01/1000-s01-caroline-melanie.md",
                _camping("Caroline Melanie", "01", "We camped at the lake last summer."))
    irepo.write("raw/conversations/2023/06/02/1000-s02-caroline-john.md",
                _camping("Caroline John", "02", "We camped in the woods, then camped again "
                         "by the river: camped three times."))
    irepo.commit("two trips")
    sync(irepo.root)
    s = Searcher(irepo.root)
    try:
        plain = s.search("Where has Ana camped?")  # nobody known: BM25 alone
        melanie = s.search("Where has Melanie camped?")
        caroline = s.search("Where has Caroline camped?")
        s.settings.people_boost = 0.0
        off = s.search("Where has Melanie camped?")
    finally:
        s.close()
    assert plain[0].path.endswith("caroline-john.md")
    assert melanie[0].path.endswith("caroline-melanie.md")
    assert melanie[0].explain is not None and melanie[0].explain["people_factor"] == 2.0
    assert melanie[0].explain["people"] == "melanie"
    assert caroline[0].path.endswith("caroline-john.md")
    assert caroline[0].explain is not None and caroline[0].explain["people_factor"] == 1.0
    assert "people" not in caroline[0].explain
    assert off[0].path.endswith("caroline-john.md")


def test_a_long_lived_searcher_learns_a_person_added_since(irepo: IRepo) -> None:
    """The MCP server keeps one searcher: a person file committed after it opened is
    masked and lifted from the next query on (the index's data version moved)."""
    irepo.write("memory-config.yaml", "search:\n  embedder: hash\n")
    irepo.commit("hash")
    sync(irepo.root, embedder_name="hash")
    s, rec = _searcher(irepo.root, Settings())
    try:
        s.search("Where is Bruno?")
        irepo.write("knowledge/people/bruno.md", "---\ntype: person\n---\n# Bruno\n\nIn Lisbon.\n")
        irepo.commit("bruno")
        sync(irepo.root, embedder_name="hash")
        hits = s.search("Where is Bruno?")
    finally:
        s.close()
    assert rec.seen == ["Where is Bruno?", "Where is they?"]
    assert hits[0].path == "knowledge/people/bruno.md"
    assert hits[0].explain is not None and hits[0].explain["people"] == "bruno"
