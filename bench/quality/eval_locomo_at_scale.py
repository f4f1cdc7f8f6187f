#!/usr/bin/env python3
"""LoCoMo dev with its vectors among 2.09M others: the resident server's nearest index at the
size of the 100K-file bench, not of one conversation.

    python bench/quality/eval_locomo_at_scale.py            # needs bench_resident.py's 100K repo
    python bench/quality/eval_locomo_at_scale.py --modes hnsw,hnsw+similarity
    python bench/quality/eval_locomo_at_scale.py --fts-at-scale --modes hnsw+similarity,fts5
    python bench/quality/eval_locomo_at_scale.py --fts-at-scale --set people_boost=0

``eval_locomo.py`` searches one conversation's own index (~800-1,300 vectors, scanned
exactly). At 100K files a search asks the resident server, whose HNSW index holds 2.09M
vectors and is approximate. Here each conversation's repo is built and indexed with MiniLM
as the eval builds it, its vectors are added to the 100K bench repo's nearest index (the
server's saved one, loaded as the server loads it), and its questions are searched by the
conversation's own ``Searcher`` whose vectors come from that index, in-process, as
``memory mcp`` asks the server it hosts (:class:`~memrepo.resident.server.HostedEmbedder`):

- ``alone``: the conversation's own vectors, exact (the figures of ``eval_locomo.py``);
- ``exact``: all 2.09M + the conversation's, exact (numpy; what any ANN could reach);
- ``hnsw``: the HNSW index, the nearest keys alone (the search before ``similarity``);
- ``hnsw+similarity``: the same, with the keyword candidates' own vectors scored by
  ``similarity`` (what a search through the server does now);
- ``fts5``: no vectors, the default install (``search.embedder: none``); with
  ``--fts-at-scale`` the one mode besides ``alone`` whose figures are a default's at scale.

Each prints session R@5, turn R@10, multi-hop session R@5, the evidence turns among the
query's 200 nearest vectors (a question's mean over its evidence), and the share of the
top-5 places taken by the other conversations' files and by the bench's (none without
``--fts-at-scale``), overall and per conversation. The conversations' vectors are added
on one thread, so runs give one graph.

By default the keyword side is the conversation's own index. With ``--fts-at-scale`` it
is the bench's too: a copy of the 100K repo's memory.db (5 GB, made once in ``--work``)
into which the three conversations' files are indexed as a commit would index them (their
vectors copied from their own index), so FTS5, the common-word rules
(``search.COMMON_FRAC``, ``MATCH_BUDGET``) and ranking meet 100K files and 1.2M chunks.
The bench's documents are re-dated into the conversations' months (2022-12 to 2023-10,
spread evenly), so recency weighs old and new alike and a question naming a month lifts
the bench's files of that month too; the other two conversations are distractors as well.
A hit outside the conversation takes its place in the ranking (a result the agent would
read) where ``eval_locomo.py``, with nothing else in its index, never has one.
``--constant NAME=VALUE`` tries another value of one of ``memrepo.index.search``'s or
``memrepo.index.wordcounts``' constants (``COMMON_FRAC=1``), ``--set`` of a ``search.*``
setting (as ``eval_locomo.py``).

The 2.09M vectors are ``bench_resident.py``'s MiniLM-shaped ones (a real chunk's vector
plus isotropic noise), which make a hard case for HNSW: real text at this size may be
easier, none is embedded here; the bench's text is generated (``corpus.py``).
Needs ``memrepo[minilm]`` and usearch; ~10 min and ~9 GB of memory (``--fts-at-scale``:
5 GB more disk, and ~2 min more the first time).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "common"), str(HERE.parent / "perf"),
                str(HERE.parents[2] / "shared" / "eval")]

import numpy as np  # noqa: E402
from results import add_record_option, record  # noqa: E402

from memrepo.index.remote import Nearest, unpack_similarity  # noqa: E402

DATA = HERE.parents[2] / "shared" / "eval" / "data" / "locomo10_dev.json"
MODES = ("alone", "exact", "hnsw", "hnsw+similarity", "fts5")


class _Hosted:
    """The query side of a server whose nearest index is ``ann`` (``nearest._Usearch`` or
    ``_Exact``): ``nearest`` as :class:`~memrepo.resident.server.HostedEmbedder` answers."""

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
    from memrepo.index import db as dbmod

    con = dbmod.connect(db, readonly=True)
    keys, blobs = [], []
    for h, v in con.execute("SELECT hash, vec FROM vectors"):
        keys.append(h)
        blobs.append(v)
    con.close()
    return (np.array(keys, dtype=np.int64),
            np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(keys), -1))


def _documents(db: Path) -> frozenset[str]:
    from memrepo.index import db as dbmod

    con = dbmod.connect(db, readonly=True)
    try:
        return frozenset(p for (p,) in con.execute("SELECT path FROM documents"))
    finally:
        con.close()


def conversation_repo(conv: object, root: Path) -> Path:
    """The conversation's corpus as ``eval_locomo.py`` makes it, indexed with MiniLM."""
    import locomo_retrieval as lr

    if not (root / "memory.db").exists():
        lr.build_corpus(conv, root)
        subprocess.run([sys.executable, str(HERE / "eval_locomo.py"), "--prepare", "--set",
                        "embedder=minilm"], cwd=root, check=True, stdout=subprocess.DEVNULL)
    return root


def _ranked(hits: list, corpus: object) -> tuple[list[str], list[str]]:
    """Files and turns in rank order as ``locomo_retrieval`` ranks them, except that a hit
    outside the conversation keeps its place (a file; one slot among the turns), where
    ``ranked_sessions_and_turns`` drops it: in the conversation's own index there is none."""
    import locomo_retrieval as lr

    files, turns = [], []
    for h in hits:
        files.append(h.path)
        locs = corpus.file_turns.get(h.path)  # type: ignore[attr-defined]
        if locs is None:
            turns.append(f"{h.path}:{h.start_line}")
        else:
            turns += [locs[t].dia_id
                      for t in lr._turns_in_lines(corpus, h.path, h.start_line, h.end_line)]
    return lr.dedup(files), lr.dedup(turns)


#: the bench's documents are re-dated into these months, the span of the dev conversations
SPAN = ("2022-12-01", 335)  # first day, days


def scale_repo(big: Path, convs: list, roots: list[Path], work: Path) -> Path:
    """A repo whose index is the 100K bench's with the conversations' files added (made
    once: a 5 GB copy of memory.db). The files are indexed by the indexer's own
    ``Writer`` from the conversations' corpora, their vectors copied from their index."""
    import hashlib
    import shutil

    from memrepo.index import db as dbmod
    from memrepo.index import schema
    from memrepo.index.paths import db_path
    from memrepo.index.writer import Writer

    root = work / "at-scale"
    if not (root / ".git").exists():  # a search finds its resident server by the git dir
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    st = db_path(big).stat()  # a rebuilt bench index makes the copy again
    stamp = f"{','.join(c.sample_id for c in convs)} {st.st_size} {st.st_mtime_ns}"
    db = db_path(root)
    if db.exists():
        con = dbmod.connect(db, readonly=True)
        done = con.execute("SELECT value FROM meta WHERE key = 'locomo_at_scale'").fetchone()
        con.close()
        if done == (stamp,):
            return root
    root.mkdir(parents=True, exist_ok=True)
    tmp = db.with_name(db.name + ".building")
    print(f"copying {db_path(big)} ({db_path(big).stat().st_size / 1e9:.1f} GB) ...",
          file=sys.stderr)
    shutil.copyfile(db_path(big), tmp)
    con = dbmod.connect(tmp)
    con.execute("BEGIN")
    first, days = SPAN
    con.execute("UPDATE documents SET modified = date(?, '+' || (id % ?) || ' days')",
                (first, days))
    # the conversations' turns get their reply vectors, as in their own index
    schema.set_meta(con, reply_vectors=1)
    w = Writer(con, None, embed_now=False)
    for own in roots:  # each conversation's repo: its files as its own index read them
        con.execute("ATTACH DATABASE ? AS conv", (str(db_path(own)),))
        for (path,) in con.execute("SELECT path FROM conv.documents").fetchall():
            data = (own / path).read_bytes()
            sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id
            w.add(path, sha, data)
        con.execute("INSERT OR IGNORE INTO vectors(hash, vec) SELECT hash, vec FROM conv.vectors")
        con.execute("COMMIT")  # DETACH is refused inside a transaction
        con.execute("DETACH DATABASE conv")
        con.execute("BEGIN")
    (chunks,) = con.execute("SELECT count(*) FROM chunks").fetchone()
    schema.set_meta(con, chunks=chunks, locomo_at_scale=stamp)
    con.execute("COMMIT")
    con.close()
    tmp.replace(db)
    shutil.copyfile(roots[0] / "memory-config.yaml", root / "memory-config.yaml")
    return root


Row = tuple[int, float, float, float, int, int]


def score(root: Path, conv: object, emb: object, corpus_dir: Path,
          overrides: dict[str, object] | None = None, others: frozenset[str] = frozenset(),
          ) -> list[Row]:
    """(category, session R@5, turn R@10, reach, other, bench) of each answerable
    question, the first three as the eval scores them; reach: the share of its evidence
    turns one of whose vectors is among the query's 200 nearest (what the vector side can
    bring in at all); other / bench: how many of its top-5 files are the other
    conversations' (``others``) / neither theirs nor this one's (the bench's).
    ``root``: the repo searched (the conversation's, or the one at scale); no ``emb``:
    FTS5 alone, as a repo whose ``search.embedder`` is ``none`` searches (reach 0).
    ``overrides``: ``search.*`` settings to try (``--set``)."""
    import locomo_retrieval as lr

    from memrepo.config import load_config
    from memrepo.index.ranking import settings_from_config
    from memrepo.index.search import Searcher

    corpus = lr.build_corpus(conv, corpus_dir)  # turn locations
    cfg = {**load_config(root)["search"], **(overrides or {})}
    if emb is None:
        cfg = {**cfg, "embedder": "none"}  # and so expansion_weight auto = 0
    s = Searcher(root, settings_from_config(cfg), cfg["embedder"])
    s.embedder = emb
    mine = corpus.files
    chunks = s.con.execute(
        "SELECT d.path, c.start_line, c.end_line, c.hash, c.reply_hash "
        f"FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path IN "
        f"({','.join('?' * len(mine))})", mine).fetchall()
    rows = []
    try:
        for q in conv.qas:  # type: ignore[attr-defined]
            if not q.evidence or q.category not in (1, 2, 3, 4):
                continue
            files, turns = _ranked(s.search(q.question, limit=50, snippets=False), corpus)
            gold = {corpus.session_of(d) for d in q.evidence}
            near = set() if emb is None else {
                k for k, _ in emb.nearest(s._vector_text(q.question), 200).hits}  # type: ignore[attr-defined]
            reach = []
            for d in q.evidence:
                t = corpus.by_dia[d]
                keys = {k for p, a, b, h, r in chunks if p == t.file and a <= t.end_line
                        and b >= t.start_line for k in (h, r) if k is not None}
                reach.append(bool(keys & near))
            top = [f for f in files[:5] if f not in corpus.file_turns]
            other = sum(f in others for f in top)
            rows.append((q.category, lr.score(files, gold, [5])["R@5"],
                         lr.score(turns or [], set(q.evidence), [10])["R@10"],
                         sum(reach) / len(reach), other, len(top) - other))
    finally:
        s.close()
    return rows


def figures(rows: list[Row]) -> dict[str, float]:
    """The figures, and which files took the top-5 places not the conversation's (% of all
    places): the other conversations', the bench's."""
    places = 5 * len(rows)
    return {"session_R@5": round(100 * float(np.mean([r[1] for r in rows])), 1),
            "turn_R@10": round(100 * float(np.mean([r[2] for r in rows])), 1),
            "multi-hop_R@5": round(100 * float(np.mean([r[1] for r in rows if r[0] == 1])), 1),
            "evidence_in_200_nearest": round(100 * float(np.mean([r[3] for r in rows])), 1),
            "top5_other_conversations_%": round(100 * sum(r[4] for r in rows) / places, 1),
            "top5_bench_%": round(100 * sum(r[5] for r in rows) / places, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--work", default=None, help="where the conversations' repos are kept")
    ap.add_argument("--ef", type=int, default=None,
                    help="the HNSW's ef_search (default: nearest.ANN_EXPANSION_SEARCH)")
    ap.add_argument("--fts-at-scale", action="store_true",
                    help="the keyword side searches the 100K bench's index too (above)")
    ap.add_argument("--constant", action="append", default=[],
                    help="NAME=VALUE: a constant of memrepo.index.search or .wordcounts to try "
                         "(COMMON_FRAC, MATCH_BUDGET, CANDIDATES, VECTOR_CANDIDATES, ...)")
    ap.add_argument("--set", action="append", default=[],
                    help="search.KEY=VALUE for every mode's searches (as eval_locomo.py)")
    ap.add_argument("--json-out", default=None)
    add_record_option(ap)
    args = ap.parse_args()
    from eval_locomo import parse_set

    overrides = parse_set(args.set)
    modes = args.modes.split(",")
    from memrepo.index import search, wordcounts

    for name, value in parse_set(args.constant).items():
        owner = next((m for m in (search, wordcounts) if name.isupper() and hasattr(m, name)),
                     None)
        if owner is None:
            ap.error(f"--constant {name}: memrepo.index.search and .wordcounts have no such "
                     "constant")
        setattr(owner, name, value)  # read by each search
    import locomo_retrieval as lr
    import onnxruntime  # noqa: F401  (before usearch: nearest.ann_library says why)
    from bench_resident import MODEL_ID, minilm_copy
    from corpus import ensure_memory_repo

    from memrepo.index.embedders import MiniLMEmbedder
    from memrepo.index.paths import db_path
    from memrepo.index.remote import serve_dir
    from memrepo.resident import nearest

    if args.ef:
        nearest.ANN_EXPANSION_SEARCH = args.ef  # read by each search
    big = minilm_copy(ensure_memory_repo(args.size), args.size)
    work = Path(args.work or big.parent / "locomo-at-scale")
    convs = lr.load_locomo(DATA)
    roots = [conversation_repo(c, work / c.sample_id) for c in convs]
    planted = [_vectors(db_path(r)) for r in roots]
    own_files = [_documents(db_path(r)) for r in roots]
    scaled = scale_repo(big, convs, roots, work) if args.fts_at_scale else None
    model = MiniLMEmbedder()
    t0 = time.perf_counter()
    near = nearest.NearestIndex(db_path(big), MODEL_ID, model.dim, store=serve_dir(big))
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
        exact = nearest._Exact(model.dim)
        exact.add(*_vectors(db_path(big)))
        for keys, mat in planted:
            exact.add(keys, mat)
    out: dict[str, dict[str, object]] = {}
    for mode in modes:
        per: dict[str, list] = {}
        for conv, root, (keys, mat) in zip(convs, roots, planted, strict=True):
            emb: _Hosted | None
            if mode == "fts5":
                emb = None
            elif mode == "alone":
                own = nearest._Exact(model.dim)
                own.add(keys, mat)
                emb = _Hosted(model, own, True)
            elif mode == "exact":
                emb = _Hosted(model, exact, True)
            else:
                cls = _HostedSimilarity if mode == "hnsw+similarity" else _Hosted
                emb = cls(model, ann, False)
            where = root if mode == "alone" or scaled is None else scaled
            others = frozenset().union(*(f for f, r in zip(own_files, roots, strict=True)
                                         if r != root))
            per[conv.sample_id] = score(where, conv, emb, root.parent / "corpus" / root.name,
                                        overrides, others)
        out[mode] = {"all": figures([r for rows in per.values() for r in rows]),
                     **{sid: figures(rows) for sid, rows in per.items()}}
        print(mode, json.dumps(out[mode]), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n")
    record(__file__, {"files": args.size, "fts_at_scale": args.fts_at_scale, "ef": args.ef,
                      "search": overrides, "constants": args.constant, **out}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
