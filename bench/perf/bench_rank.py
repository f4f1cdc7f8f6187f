#!/usr/bin/env python3
"""``ranking.rank`` alone on a synthetic candidate set: 1,000 files of 3 chunks each
(a realistic prompt's candidates at 100K files), some superseded, some reinforced.

    python bench/perf/bench_rank.py          # p50 of 300 calls, in ms

Run it on two checkouts side by side to compare the ranking loop; search's other costs
(FTS5, vectors, documents rows) are in bench/perf/bench_resident.py --search-only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from results import add_record_option, record

from memrepo.index.ranking import ChunkHit, FileInfo, Settings, rank


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_record_option(ap)
    args = ap.parse_args()
    rng = random.Random(1)
    files: dict[str, FileInfo] = {}
    hits: list[ChunkHit] = []
    signals: dict[str, list[tuple[int, float, str | None]]] = {}
    for i in range(1000):
        day = f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}"
        path = f"raw/conversations/{day.replace('-', '/')}/f{i}.md"
        files[path] = FileInfo(path, "conversation", day, "superseded" if i % 50 == 0 else "")
        for k in range(3):
            h = ChunkHit(i * 10 + k, path, k, k * 5 + 1, k * 5 + 4, bm25=rng.random())
            h.fused = rng.random()
            hits.append(h)
        if i % 40 == 0:
            signals[path] = [(0, 3.0, "2024-05-01")]
    settings, today, times = Settings(), dt.date(2026, 11, 25), []
    for _ in range(300):
        t0 = time.perf_counter()
        rank(hits, files, signals, settings, 10, today=today)
        times.append((time.perf_counter() - t0) * 1000)
    print(f"rank p50 {statistics.median(times):.2f} ms (1,000 files, 3,000 chunks)")
    record(__file__, {"files": 1000, "chunks": 3000, "calls": len(times),
                      "rank_p50_ms": statistics.median(times)}, args)


if __name__ == "__main__":
    main()
