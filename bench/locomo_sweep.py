"""In-process LoCoMo retriever for sweeping ranking settings fast (no process per corpus).

    PYTHONPATH=bench MEMREPO_SWEEP='{"embedder": "hash", "per_file": 2}' \\
      python ../shared/eval/locomo_retrieval.py --split dev --retriever py:locomo_sweep:make

Builds each corpus into a git repo and a real memory.db with the same code as
``memory index``; searches with :class:`memrepo.index.search.Searcher`. Used to choose
defaults; the figures to report come from ``bench/eval_locomo.py`` (the real commands).
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
