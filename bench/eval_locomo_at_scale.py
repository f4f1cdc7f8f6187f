#!/usr/bin/env python3
"""LoCoMo dev with its vectors among 2.09M others: the resident server's nearest index at the
size of the 100K-file bench, not of one conversation.

    python bench/eval_locomo_at_scale.py            # needs bench_resident.py's 100K repo
    python bench/eval_locomo_at_scale.py --modes hnsw,hnsw+similarity

``eval_locomo.py`` searches one conversation's own index (~800-1,300 vectors, scanned
exactly). At 100K files a search asks the resident server, whose HNSW index holds 2.09M
vectors and is approximate. Here each conversation's repo is built and indexed with MiniLM
as the eval builds it, its vectors are added to the 100K bench repo's nearest index (the
server's saved one, loaded as the server loads it), and its questions are searched by the
conversation's own ``Searcher`` whose vectors come from that index, in-process, as
``memory mcp`` asks the server it hosts (:class:`~memrepo.index.server.HostedEmbedder`):

- ``alone``: the conversation's own vectors, exact (the figures of ``eval_locomo.py``);
- ``exact``: all 2.09M + the conversation's, exact (numpy; what any ANN could reach);
- ``hnsw``: the HNSW index, the nearest keys alone (the search before ``similarity``);
- ``hnsw+similarity``: the same, with the keyword candidates' own vectors scored by
  ``similarity`` (what a search through the server does now).

Each prints session R@5, turn R@10, multi-hop session R@5 and the evidence turns among the
query's 200 nearest vectors (a question's mean over its evidence), overall and per
conversation. The conversations' vectors are added on one thread, so runs give one graph.

The keyword side is the conversation's own index: the bench's text is not in its FTS5
(that would take a copy of the 5 GB index a run). The 2.09M vectors are
``bench_resident.py``'s MiniLM-shaped ones (a real chunk's vector plus isotropic noise),
which make a hard case for HNSW: real text at this size may be easier, none is embedded here.
Needs ``memrepo[minilm]`` and usearch; ~10 min and ~9 GB of memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "shared" / "eval"))

import numpy as np  # noqa: E402

from memrepo.index.resident import Nearest, unpack_similarity  # noqa: E402

DATA = HERE.parent.parent / "shared" / "eval" / "data" / "locomo10_dev.json"
MODES = ("alone", "exact", "hnsw", "hnsw+similarity")


class _Hosted:
    """The query side of a server whose nearest index is ``ann`` (``vectors._Usearch`` or
    ``_Exact``): ``nearest`` as :class:`~memrepo.index.server.HostedEmbedder` answers."""

    light = False

    def __init__(self, model: object, ann: object, exact: bool):
        self.model, self.ann, self.exact = model, ann, exact
        self.id, self.dim = model.id, model.dim  # type: ignore[attr-defined]
        self._vecs: dict[str, np.ndarray] = {}

    def vec(self, text: str) -> np.ndarray:
        if text not in self._vecs:
            (v,) = self.model.embed([text])  # type: ignore[attr-defined]
            self._vecs[text] = np.frombuffer(v, dtype="<f4")
        return self._vecs[text]

    def embed(self, texts: list[str]) -> list[bytes]:
        return [self.vec(t).tobytes() for t in texts]

    def nearest(self, text: str, k: int) -> Nearest:
        keys, sims = self.ann.search(self.vec(text), k)  # type: ignore[attr-defined]
        return Nearest(list(zip(keys.tolist(), sims.tolist(), strict=True)), "bench",
                       self.exact)


class _HostedSimilarity(_Hosted):
    def similarity(self, text: str, keys: list[int]) -> dict[int, float]:
        sims = self.ann.similarity(self.vec(text), np.array(keys, dtype=np.int64))  # type: ignore[attr-defined]
        return unpack_similarity(keys, sims.astype("<f4").tobytes())


def _vectors(db: Path) -> tuple[np.ndarray, np.ndarray]:
    import sqlite3

    con = sqlite3.connect(db)
    keys, blobs = [], []
    for h, v in con.execute("SELECT hash, vec FROM vectors"):
        keys.append(h)
        blobs.append(v)
    con.close()
    return (np.array(keys, dtype=np.int64),
            np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(keys), -1))


def conversation_repo(conv: object, root: Path) -> Path:
    """The conversation's corpus as ``eval_locomo.py`` makes it, indexed with MiniLM."""
    import locomo_retrieval as lr

    if not (root / "memory.db").exists():
        lr.build_corpus(conv, root)
        subprocess.run([sys.executable, str(HERE / "eval_locomo.py"), "--prepare", "--set",
                        "embedder=minilm"], cwd=root, check=True, stdout=subprocess.DEVNULL)
    return root


def score(root: Path, conv: object, emb: object) -> list[tuple[int, float, float, float]]:
    """(category, session R@5, turn R@10, reach) of each answerable question, the first
    three as the eval scores them; reach: the share of its evidence turns one of whose
    vectors is among the query's 200 nearest (what the vector side can bring in at all)."""
    import locomo_retrieval as lr

    from memrepo.config import load_config
    from memrepo.index.ranking import settings_from_config
    from memrepo.index.search import Searcher

    corpus = lr.build_corpus(conv, root.parent / "corpus" / root.name)  # turn locations
    cfg = load_config(root)["search"]
    s = Searcher(root, settings_from_config(cfg), cfg["embedder"])
    s.embedder = emb
    chunks = s.con.execute("SELECT d.path, c.start_line, c.end_line, c.hash, c.reply_hash "
                           "FROM chunks c JOIN documents d ON d.id = c.doc_id").fetchall()
    rows = []
    try:
        for q in conv.qas:  # type: ignore[attr-defined]
            if not q.evidence or q.category not in (1, 2, 3, 4):
                continue
            hits = [lr.Hit(h.path, lr._turns_in_lines(corpus, h.path, h.start_line, h.end_line))
                    for h in s.search(q.question, limit=50, snippets=False)]
            files, turns = lr.ranked_sessions_and_turns(hits, corpus)
            gold = {corpus.session_of(d) for d in q.evidence}
            near = {k for k, _ in emb.nearest(s._vector_text(q.question), 200).hits}  # type: ignore[attr-defined]
            reach = []
            for d in q.evidence:
                t = corpus.by_dia[d]
                keys = {k for p, a, b, h, r in chunks if p == t.file and a <= t.end_line
                        and b >= t.start_line for k in (h, r) if k is not None}
                reach.append(bool(keys & near))
            rows.append((q.category, lr.score(files, gold, [5])["R@5"],
                         lr.score(turns or [], set(q.evidence), [10])["R@10"],
                         sum(reach) / len(reach)))
    finally:
        s.close()
    return rows


def figures(rows: list[tuple[int, float, float, float]]) -> dict[str, float]:
    return {"session_R@5": round(100 * float(np.mean([r[1] for r in rows])), 1),
            "turn_R@10": round(100 * float(np.mean([r[2] for r in rows])), 1),
            "multi-hop_R@5": round(100 * float(np.mean([r[1] for r in rows if r[0] == 1])), 1),
            "evidence_in_200_nearest": round(100 * float(np.mean([r[3] for r in rows])), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--work", default=None, help="where the conversations' repos are kept")
    ap.add_argument("--ef", type=int, default=None,
                    help="the HNSW's ef_search (default: vectors.ANN_EXPANSION_SEARCH)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    modes = args.modes.split(",")
    import locomo_retrieval as lr
    import onnxruntime  # noqa: F401  (before usearch: vectors.ann_library says why)
    from bench_resident import MODEL_ID, minilm_copy
    from corpus import ensure_memory_repo

    from memrepo.index import vectors
    from memrepo.index.embedders import MiniLMEmbedder
    from memrepo.index.paths import db_path
    from memrepo.index.resident import serve_dir

    if args.ef:
        vectors.ANN_EXPANSION_SEARCH = args.ef  # read by each search
    big = minilm_copy(ensure_memory_repo(args.size), args.size)
    work = Path(args.work or big.parent / "locomo-at-scale")
    convs = lr.load_locomo(DATA)
    roots = [conversation_repo(c, work / c.sample_id) for c in convs]
    planted = [_vectors(db_path(r)) for r in roots]
    model = MiniLMEmbedder()
    t0 = time.perf_counter()
    near = vectors.NearestIndex(db_path(big), MODEL_ID, model.dim, store=serve_dir(big))
    near.refresh()  # the server's saved index, or a build (minutes)
    ann = near._ann  # the bench adds the conversations to it; nothing is saved
    have = ann.contains(np.concatenate([k for k, _ in planted]))
    at = 0
    for keys, mat in planted:
        new = ~have[at : at + len(keys)]
        at += len(keys)
        ann.add(keys[new], mat[new], threads=1)  # one thread: the same graph each run
    print(f"nearest index: {len(ann):,} vectors ({ann.kind}), "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    exact = None
    if "exact" in modes:
        exact = vectors._Exact(model.dim)
        exact.add(*_vectors(db_path(big)))
        for keys, mat in planted:
            exact.add(keys, mat)
    out: dict[str, dict[str, object]] = {}
    for mode in modes:
        per: dict[str, list] = {}
        for conv, root, (keys, mat) in zip(convs, roots, planted, strict=True):
            if mode == "alone":
                own = vectors._Exact(model.dim)
                own.add(keys, mat)
                emb: _Hosted = _Hosted(model, own, True)
            elif mode == "exact":
                emb = _Hosted(model, exact, True)
            else:
                cls = _HostedSimilarity if mode == "hnsw+similarity" else _Hosted
                emb = cls(model, ann, False)
            per[conv.sample_id] = score(root, conv, emb)
        out[mode] = {"all": figures([r for rows in per.values() for r in rows]),
                     **{sid: figures(rows) for sid, rows in per.items()}}
        print(mode, json.dumps(out[mode]), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
