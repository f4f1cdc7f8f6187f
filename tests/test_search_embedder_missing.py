"""Issue #37: a configured embedder that is not installed degrades search to FTS5, and the
search says so where the user looks (``--explain``, one stderr line), not only doctor."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import invoke_memory

from memrepo.index import embedders


def _configure(root: Path, name: str) -> None:
    cfg = root / "memory-config.yaml"
    text = cfg.read_text(encoding="utf-8")
    cfg.write_text(re.sub(r"(?m)^(\s*embedder:) *none\b", rf"\1 {name}", text, count=1),
                   encoding="utf-8")
    assert f"embedder: {name}" in cfg.read_text(encoding="utf-8")


@pytest.fixture
def missing_wordllama(crepo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # whatever this machine has installed, the extra's module is missing here
    monkeypatch.setitem(embedders._NEEDS, "wordllama", ("memrepo_test_no_such_module",))
    _configure(crepo, "wordllama")
    return crepo


def test_search_warns_once_on_stderr(missing_wordllama: Path) -> None:
    res = invoke_memory(missing_wordllama, "search", "memory")
    assert res.returncode == 0 and res.stdout.strip()
    warned = [line for line in res.stderr.splitlines() if "not installed" in line]
    assert len(warned) == 1
    assert "wordllama" in warned[0] and "pip install 'memrepo[wordllama]'" in warned[0]
    assert "FTS5" in warned[0]


def test_explain_names_why_vectors_are_off(missing_wordllama: Path) -> None:
    res = invoke_memory(missing_wordllama, "search", "--json", "--explain", "memory")
    hits = json.loads(res.stdout)
    assert hits and hits[0]["explain"]["vectors"] == "off"
    assert "wordllama is not installed" in hits[0]["explain"]["vectors_why"]
    text = invoke_memory(missing_wordllama, "search", "--explain", "memory").stdout
    assert "vectors_why=search.embedder wordllama is not installed" in text


def test_an_installed_or_absent_embedder_says_nothing(crepo: Path) -> None:
    res = invoke_memory(crepo, "search", "--explain", "memory")  # embedder: none
    assert res.returncode == 0 and "not installed" not in res.stderr + res.stdout
    assert embedders.not_installed("none") is None and embedders.not_installed("hash") is None
