"""The ranking's fast paths give exactly what the straightforward ranking gave.

``fuse`` and ``rank`` score ~1,000 files a query in tight loops (issue #15: per-query
latency); the reference below is the plain version they replaced, kept here to compare
against on random inputs: every fused score, every shown file, its score and its
``--explain`` must be the same float, tie for tie.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import random
from typing import Any

from memrepo.index.dates import DateRange, in_ranges
from memrepo.index.ranking import (
    ChunkHit,
    FileInfo,
    Ranked,
    Settings,
    _explain,
    fuse,
    rank,
    to_hits,
)

TODAY = dt.date(2026, 11, 25)


# -- the reference: the ranking as it was written before it was made fast --------------
def ref_fuse(hits: list[ChunkHit], s: Settings, have_vectors: bool) -> None:
    if hits:
        if not have_vectors:
            top = max(h.bm25 for h in hits) or 1.0
            for h in hits:
                h.fused = h.bm25 / top
        elif s.fusion == "rrf":
            by_b = sorted((h for h in hits if h.bm25 > 0), key=lambda h: -h.bm25)
            by_v = sorted((h for h in hits if (h.vector or 0) > 0),
                          key=lambda h: -(h.vector or 0))
            for h in hits:
                h.fused = 0.0
            for r, h in enumerate(by_b):
                h.fused += s.bm25_weight / (s.rrf_k + r + 1)
            for r, h in enumerate(by_v):
                h.fused += s.vector_weight / (s.rrf_k + r + 1)
        else:
            bhi = max((h.bm25 for h in hits), default=0.0) or 1.0
            vhi = max((h.vector or 0.0 for h in hits), default=0.0) or 1.0
            for h in hits:
                b = max(h.bm25, 0.0) / bhi
                v = max(h.vector or 0.0, 0.0) / vhi
                h.fused = s.bm25_weight * b + s.vector_weight * v
    for h in hits:
        if h.stale:
            h.fused *= 1.0 - h.stale * (1.0 - s.superseded_factor)


def ref_days_since(date: str | None, today: dt.date,
                   dates: list[DateRange] | None = None) -> int | None:
    if not date:
        return None
    try:
        day = dt.date.fromisoformat(date[:10])
    except ValueError:
        return None
    if dates:  # a query naming a time: closeness to it
        return min(0 if a <= day <= b else min(abs((a - day).days), abs((day - b).days))
                   for a, b in dates)
    return max((today - day).days, 0)


def ref_rank(hits: list[ChunkHit], files: dict[str, FileInfo],
             signals: dict[str, list[tuple[int, float, str | None]]], s: Settings,
             limit: int, today: dt.date, dates: list[DateRange] | None,
             people: set[str] | None = None) -> list[Ranked]:
    by_file: dict[str, list[ChunkHit]] = {}
    for h in sorted(hits, key=lambda h: -h.fused):
        if h.fused > 0:
            by_file.setdefault(h.path, []).append(h)
    out: list[Ranked] = []
    pending: dict[str, tuple[Any, ...]] = {}
    for path, chunks in by_file.items():
        info = files.get(path) or FileInfo(path, None, None, "")
        rel = sum(w * c.fused for w, c in zip(s.rollup, chunks, strict=False))
        best = chunks[0]
        score, reinforced = 0.0, None
        for line, sc, when in signals.get(path, ()):
            if line == 0 or best.start_line <= line <= best.end_line:
                score += sc
                if when and (reinforced is None or when > reinforced):
                    reinforced = when
        signal_f = math.exp(score * s.reinforce_factor)
        ref_date = max(filter(None, (info.modified, reinforced)), default=None)
        days = ref_days_since(ref_date, today, dates)
        recency_f = 1.0 / (1.0 + days * s.recency_per_day) if days is not None else 1.0
        status_f = {"superseded": s.superseded_factor, "archived": s.archived_factor}.get(
            info.status, 1.0
        )
        date_f = 1.0 + s.date_boost if dates and in_ranges(info.modified, dates) else 1.0
        people_f = 1.0 + s.people_boost if people and path in people else 1.0
        final = rel * signal_f * recency_f * status_f * date_f * people_f
        pending[path] = (best, rel, len(chunks), score, signal_f, days, recency_f, info.status,
                         status_f, date_f, people_f, final)
        out.append(Ranked(path, info.category, final, chunks[: max(s.per_file, 1)]))
    out.sort(key=lambda r: (-r.score, r.path))
    out = out[:limit]
    for r in out:
        r.explain = _explain(*pending[r.path])
    return out


# -- random inputs -----------------------------------------------------------------------
def _date(rng: random.Random) -> str | None:
    pick = rng.random()
    if pick < 0.1:
        return rng.choice([None, "", "2024-13-45", "someday"])
    day = TODAY - dt.timedelta(days=rng.randrange(-30, 2000))  # a few in the future
    return day.isoformat() + ("T10:00:00+00:00" if pick < 0.2 else "")


def _settings(rng: random.Random) -> Settings:
    sf = rng.choice([0.5, 0.0, 0.3, 1.0, 1.5])
    return Settings(
        fusion=rng.choice(["weighted", "weighted", "rrf"]),
        bm25_weight=rng.choice([0.5, 0.7, 1.0, 0.0]),
        vector_weight=rng.choice([0.5, 0.3, 0.0]),
        rollup=rng.choice([(1.0,), (1.0,), (1.0, 0.5, 0.25), (0.0,)]),
        recency_per_day=rng.choice([0.01, 0.0, 0.1, 1e-4]),
        superseded_factor=sf,
        archived_factor=rng.choice([sf, 0.5, 2.0]),
        per_file=rng.choice([1, 3, 10, 0]),
        date_boost=rng.choice([1.0, 0.0, 0.5, -0.5, -1.0]),
        people_boost=rng.choice([1.0, 0.0, 0.5]),
        reinforce_factor=rng.choice([0.2, 0.0, 1.0]),
    )


def _case(rng: random.Random) -> tuple[Any, ...]:
    npaths = rng.randrange(1, 80)
    paths = [f"knowledge/f{i:03d}.md" for i in range(npaths)]
    pool = [0.0, -1.5, 3.25, 7.0, 7.0, 11.5]  # repeats: ties in fused, in scores
    hits = []
    for cid in range(rng.randrange(0, 300)):
        start = rng.randrange(1, 200)
        vec = rng.choice([None, None, rng.uniform(-0.2, 0.9), 0.5, 0.0])
        bm = rng.choice(pool) if rng.random() < 0.4 else rng.uniform(0, 20)
        stale = rng.choice([0.0, 0.0, 0.0, 0.5, 1.0])
        hits.append(ChunkHit(cid, rng.choice(paths), rng.randrange(10), start,
                             start + rng.randrange(0, 30), bm25=bm, vector=vec, stale=stale))
    files = {}
    for p in paths:
        if rng.random() < 0.9:  # the rest: not in the index (a file ranked with no row)
            status = rng.choice(["", "", "", "superseded", "archived"])
            files[p] = FileInfo(p, rng.choice([None, "decisions", "journal"]), _date(rng),
                                status, "0" * 40)
    signals: dict[str, list[tuple[int, float, str | None]]] = {}
    for p in rng.sample(paths, rng.randrange(0, npaths + 1) // 3):
        signals[p] = [(rng.choice([0, rng.randrange(1, 220)]), rng.choice([3.0, -1.0, 2.0, 0.0]),
                       rng.choice([None, _date(rng)])) for _ in range(rng.randrange(0, 4))]
    dates = rng.choice([None, [], [(TODAY - dt.timedelta(days=40), TODAY - dt.timedelta(days=10))],
                        [(dt.date(2023, 1, 1), dt.date(2024, 6, 30)), (TODAY, TODAY)]])
    limit = rng.choice([1, 3, 10, 10, 25, 1000, 0, -1])
    people = rng.choice([None, set(), set(rng.sample(paths, rng.randrange(0, npaths + 1)))])
    return hits, files, signals, _settings(rng), limit, dates, rng.random() < 0.7, people


def _ranked(rs: list[Ranked]) -> list[tuple[Any, ...]]:
    return [(r.path, r.category, r.score, [dataclasses.astuple(c) for c in r.chunks], r.explain)
            for r in rs]


def test_fuse_and_rank_equal_the_reference_on_random_inputs() -> None:
    rng = random.Random(15)
    shown = 0
    for _ in range(250):
        hits, files, signals, s, limit, dates, have_vectors, people = _case(rng)
        mine, ref = [dataclasses.replace(h) for h in hits], hits
        fuse(mine, s, have_vectors)
        ref_fuse(ref, s, have_vectors)
        assert [h.fused for h in mine] == [h.fused for h in ref]
        got = rank(mine, files, signals, s, limit, today=TODAY, dates=dates, people=people)
        want = ref_rank(ref, files, signals, s, limit, TODAY, dates, people)
        assert _ranked(got) == _ranked(want)
        tag = {"vectors": "on"}
        assert ([h.as_json(explain=True) for h in to_hits(got, limit, ["x"], None, tag)]
                == [h.as_json(explain=True) for h in to_hits(want, limit, ["x"], None, tag)])
        shown += len(got)
    assert shown > 700  # the cases rank something, not only empty lists


def test_rank_breaks_equal_scores_by_path_like_the_reference() -> None:
    s = Settings()
    hits = [ChunkHit(i, f"f{9 - i}.md", 0, 1, 5, bm25=2.0) for i in range(10)]
    files = {h.path: FileInfo(h.path, None, "2026-11-20", "") for h in hits}
    mine, ref = [dataclasses.replace(h) for h in hits], hits
    fuse(mine, s, False)
    ref_fuse(ref, s, False)
    got = rank(mine, files, {}, s, 4, today=TODAY)
    assert [r.path for r in got] == ["f0.md", "f1.md", "f2.md", "f3.md"]
    assert _ranked(got) == _ranked(ref_rank(ref, files, {}, s, 4, TODAY, None))
