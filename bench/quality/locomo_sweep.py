"""In-process LoCoMo retriever for sweeping ranking settings fast (no process per corpus).

    PYTHONPATH=bench/quality MEMREPO_SWEEP='{"embedder": "hash", "per_file": 2}' \\
      python ../shared/eval/locomo_retrieval.py --split dev --retriever py:locomo_sweep:make

Builds each corpus into a git repo and a real memory.db with the same code as
``memory index``; searches with :class:`memrepo.index.search.Searcher`. Used to choose
defaults; the figures to report come from ``bench/quality/eval_locomo.py`` (the real commands).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memrepo.index.indexer import rebuild
from memrepo.index.ranking import Settings
from memrepo.index.search import Searcher

GIT = ["git", "-c", "user.name=eval", "-c", "user.email=eval@example.com"]


def make(corpus_dir: str):
    cfg = json.loads(os.environ.get("MEMREPO_SWEEP", "{}"))
    root = Path(corpus_dir)
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run([*GIT, "commit", "-q", "--no-verify", "-m", "c"], cwd=root, check=True)
    rebuild(root, cfg.pop("embedder", "none"))
    settings = Settings(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items()})
    searcher = Searcher(root, settings)

    def search(query: str, k: int | None):
        return [
            {"path": h.path, "start_line": h.start_line, "end_line": h.end_line}
            for h in searcher.search(query, k or 50)
        ]

    return search


def make_filelevel(corpus_dir: str):
    """Experiment: file order = a·(chunk roll-up) + (1-a)·(BM25 over whole files)."""
    import sqlite3

    from memrepo.index import query as qmod

    cfg = json.loads(os.environ.get("MEMREPO_SWEEP", "{}"))
    alpha = float(cfg.pop("file_alpha", 0.5))
    os.environ["MEMREPO_SWEEP"] = json.dumps(cfg)
    inner = make(corpus_dir)
    root = Path(corpus_dir)
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(body, path UNINDEXED, tokenize='porter unicode61')"
    )
    for p in root.rglob("*.md"):
        db.execute("INSERT INTO f VALUES (?, ?)", (p.read_text(), p.relative_to(root).as_posix()))

    def search(query: str, k: int | None):
        hits = inner(query, 400)
        match = qmod.fts_match(qmod.terms(query))
        fs = (
            dict(db.execute("SELECT path, -bm25(f) FROM f WHERE f MATCH ?", (match,)).fetchall())
            if match
            else {}
        )
        order: list[str] = []
        for h in hits:
            if h["path"] not in order:
                order.append(h["path"])
        n = len(order)
        chunk_score = {p: 1 - i / max(n, 1) for i, p in enumerate(order)}
        top = max(fs.values(), default=1.0) or 1.0
        ranked = sorted(
            order, key=lambda p: -(alpha * chunk_score[p] + (1 - alpha) * fs.get(p, 0) / top)
        )
        pos = {p: i for i, p in enumerate(ranked)}
        return sorted(hits, key=lambda h: pos[h["path"]])[: k or 50]

    return search
