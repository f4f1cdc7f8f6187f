#!/usr/bin/env python3
"""The resident server's nearest search on 2 MB pages against 4 KB pages, side by side.

    python bench/perf/bench_hugepages.py              # the 100K-file bench repo's saved index
    python bench/perf/bench_hugepages.py --size 10000 --queries 200

Loads the nearest index that ``memory serve`` saved for ``bench_resident.py``'s MiniLM
copy of the generated repo twice in one process: the first copy is then put on 2 MB pages
(``memrepo.resident.hugepages.collapse``, what the server does once it has loaded or built
it), the second is loaded after that and stays on 4 KB pages. Each query (a generated
message embedded by MiniLM here) is searched in both, in alternating order, as the server
searches (k = 200, ``ef_search`` as configured, one thread). Needs the server to have run
once on that repo (``python bench/perf/bench_resident.py --prepare``); about 2x the index's size
in memory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "common"))
from corpus import REPOS, label, messages  # noqa: E402
from results import add_record_option, record  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--passes", type=int, default=3)
    add_record_option(ap)
    args = ap.parse_args(argv)

    from memrepo.index import remote
    from memrepo.index.embedders import MiniLMEmbedder
    from memrepo.resident import hugepages, nearest

    repo = REPOS / f"resident-{label(args.size)}"
    saved = sorted(remote.serve_dir(repo).glob("nearest-minilm*.usearch"))
    if not saved:
        print(f"no saved nearest index under {remote.serve_dir(repo)}: run "
              "python bench/perf/bench_resident.py --prepare first", file=sys.stderr)
        return 2
    emb = MiniLMEmbedder()  # onnxruntime before usearch (nearest.ann_library)
    import numpy as np

    qs = [np.frombuffer(v, dtype="<f4").copy()
          for v in emb.embed(messages(args.queries, args.size, seed=83))]
    t0 = time.perf_counter()
    huge = nearest._Usearch.load(saved[0], emb.dim)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    collapsed = hugepages.collapse()
    collapse_s = time.perf_counter() - t0
    small = nearest._Usearch.load(saved[0], emb.dim)  # mapped after: not advised
    times: dict[str, list[float]] = {"4k": [], "2m": []}
    for q in qs[:20]:  # both copies' hot pages touched once before timing
        small.search(q, 200)
        huge.search(q, 200)
    for p in range(args.passes):
        for i, q in enumerate(qs):
            order = [("4k", small), ("2m", huge)]
            for name, ix in order if (i + p) % 2 else order[::-1]:
                t0 = time.perf_counter()
                ix.search(q, 200)
                times[name].append((time.perf_counter() - t0) * 1000)
    a, b = statistics.median(times["4k"]), statistics.median(times["2m"])
    figures = {
        "vectors": len(huge), "index": str(saved[0]), "load_s": round(load_s, 2),
        "collapsed_mb": collapsed >> 20, "collapse_s": round(collapse_s, 2),
        "searches": len(times["4k"]), "ef_search": nearest.ANN_EXPANSION_SEARCH,
        "p50_ms_4k_pages": round(a, 3), "p50_ms_2m_pages": round(b, 3),
        "ratio_2m_over_4k": round(b / a, 3),
    }
    print(json.dumps(figures, indent=1))
    record(__file__, figures, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
