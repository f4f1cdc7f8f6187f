"""From scored chunks to a ranked list of files (shared by the index and the fallback).

1. Fusion, per chunk: BM25 and vector similarity, each min-max normalised over its
   candidates, summed with weights (seed 000), or reciprocal rank fusion (seed 003).
2. Roll-up: a file scores its best chunk (``rollup`` can add a decaying share of its next
   ones). Since a transcript turn is indexed with the start of the turn it answers, the
   best chunk alone ranks files best, better than a decaying share of the next ones
   (``bench/quality/eval_locomo.py``).
3. Seed 001: ``× exp(signal score × 0.2) / (1 + days × recency_per_day)``, days since
   the file's date or its last reinforce; superseded and (when included) archived files
   are down-ranked; a file dated on a day (or in a month) the query names explicitly is
   up-ranked (``× (1 + date_boost)``, :mod:`~memrepo.index.dates`), and so is a file
   that names a person the query names (``× (1 + people_boost)``, the search finds them).
4. One entry per file (or ``per_file``), with its best chunk's span: no file floods the list.
5. :func:`to_hits`: the ranked files as result lines (:class:`Hit`), each with a snippet;
   a derived line never above the transcript it cites (:func:`sources_first`).

The query's :class:`Filters` and the :class:`Hit` live here too, so the index searcher
and the fallback scanner share them without importing each other.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from memrepo import clock, namespaces
from memrepo.index import cjk
from memrepo.index.dates import DateRange, in_ranges
from memrepo.index.snippets import WIDTH, best_snippet
from memrepo.layout import SRC, is_transcript, source_ref


@dataclass
class Filters:
    category: list[str] | None = None
    path_glob: str | None = None
    since: str | None = None  # ISO date, inclusive
    until: str | None = None
    include_archive: bool = False
    #: The day relative phrases ("last week") are read against; None: today.
    now: dt.date | None = None
    #: Only what this namespace sees (memrepo.namespaces); by default the caller's, None: all.
    namespace: str | None = field(default_factory=namespaces.current)


@dataclass
class Hit:
    """One search result as printed and as JSON."""

    path: str
    category: str | None
    score: float
    start_line: int
    end_line: int
    snippet: str
    chunk: int
    explain: dict[str, Any] | None = field(default=None)

    @property
    def ref(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def as_json(self, explain: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "category": self.category,
            "score": round(self.score, 6),
            "start_line": self.start_line,
            "end_line": self.end_line,
            "snippet": self.snippet,
        }
        if explain and self.explain is not None:
            d["explain"] = self.explain
        return d


@dataclass
class Settings:
    fusion: str = "weighted"  # "weighted" | "rrf"
    #: equal shares: with MiniLM (names masked) they matched or beat a larger BM25 share in
    #: each conversation (``bench/quality/eval_locomo.py``; docs/search.md)
    bm25_weight: float = 0.5
    vector_weight: float = 0.5
    rrf_k: int = 60
    rollup: tuple[float, ...] = (1.0,)
    recency_per_day: float = 0.002
    reinforce_factor: float = 0.2
    #: seed 001: +3 per reinforce, -1 per demote (search.reinforce_weight / demote_weight)
    reinforce_weight: float = 3.0
    demote_weight: float = 1.0
    superseded_factor: float = 0.5
    archived_factor: float = 0.5
    #: 10, not 3: a session holding 4+ evidence turns could not show them all (turn recall
    #: up in each conversation, session recall unchanged: ``bench/quality/eval_locomo.py``)
    per_file: int = 10
    date_boost: float = 1.0
    #: a file naming a person the query names (participants, people, a person file's
    #: own name) x (1 + this): a person's own files among everyone's (docs/search.md)
    people_boost: float = 1.0
    #: BM25 of the query words' neighbours (memrepo.index.expand) counts this much. The
    #: config's ``auto`` (:func:`settings_from_config`) is :data:`AUTO_EXPANSION` with an
    #: embedder and 0 with FTS5 alone (docs/search.md)
    expansion_weight: float = 0.0
    #: the query's vector is made with the people it names replaced by "they"
    #: (memrepo.index.names; docs/search.md)
    mask_names: bool = True
    #: a file scoring below this is no result (seed 003's ``search.min_score``; 0: none)
    min_score: float = 0.0
    #: the longest snippet a hit shows (seed 003's ``search.snippet_max_chars``)
    snippet_max_chars: int = WIDTH


@dataclass(slots=True)  # ~1,000 made a query: slots make them cheaper to make
class ChunkHit:
    chunk_id: int
    path: str
    ord: int
    start_line: int
    end_line: int
    bm25: float = 0.0  # raw -bm25(), higher is better
    vector: float | None = None  # cosine similarity
    fused: float = 0.0
    stale: float = 0.0  # share of superseded entries in the chunk
    keys: tuple[int, ...] = ()  # its vectors' keys: its hash, and a turn's reply_hash


@dataclass(slots=True)
class FileInfo:
    path: str
    category: str | None
    modified: str | None
    status: str
    blob: str = ""


@dataclass
class Ranked:
    """One result line: a file and its best chunk(s)."""

    path: str
    category: str | None
    score: float
    chunks: list[ChunkHit]
    explain: dict[str, float | str | None] = field(default_factory=dict)


def fuse(hits: list[ChunkHit], s: Settings, have_vectors: bool,
         vector_floor: float = 0.0) -> None:
    """Set ``fused`` on every candidate chunk; superseded entries weigh ``superseded_factor``.

    ``vector_floor``: the similarity of the last of the nearest vectors the search took
    (every chunk it did not take is at or below it, and scores 0 for its vector)."""
    _fuse(hits, s, have_vectors, vector_floor)
    for h in hits:
        if h.stale:
            h.fused *= 1.0 - h.stale * (1.0 - s.superseded_factor)


def _fuse(hits: list[ChunkHit], s: Settings, have_vectors: bool, vector_floor: float
          ) -> None:
    if not hits:
        return
    if not have_vectors:
        top = max(h.bm25 for h in hits) or 1.0
        for h in hits:
            h.fused = h.bm25 / top
        return
    if s.fusion == "rrf":
        by_b = sorted((h for h in hits if h.bm25 > 0), key=lambda h: -h.bm25)
        by_v = sorted((h for h in hits if (h.vector or 0) > 0), key=lambda h: -(h.vector or 0))
        for h in hits:
            h.fused = 0.0
        for rank, h in enumerate(by_b):
            h.fused += s.bm25_weight / (s.rrf_k + rank + 1)
        for rank, h in enumerate(by_v):
            h.fused += s.vector_weight / (s.rrf_k + rank + 1)
        return
    # BM25 (seed 000): divided by the best, so the weakest keyword match keeps its share
    # (min-max would give it 0, like the chunks that match no word at all, which have no
    # relevance). A vector's similarity is measured from the floor, the similarity of the
    # last of the nearest vectors taken: a chunk not taken is just below it, not unrelated,
    # and scores 0; divided by the best alone, the weakest taken vector kept ~half the
    # share of the best (MiniLM gives unrelated text a positive cosine), while a keyword
    # match just past the cut got none. The floor lifts session and multi-hop recall for a
    # little turn recall (``bench/quality/eval_locomo.py``; docs/search.md). A similarity
    # of 0 or less counts nothing.
    bm = [h.bm25 for h in hits]
    vs = [h.vector or 0.0 for h in hits]
    bhi = max(bm, default=0.0) or 1.0
    vlo = max(vector_floor, 0.0)
    vspan = max(vs, default=0.0) - vlo
    if vspan <= 0:  # no vector above the floor: none counts
        vspan = 1.0
    bw, vw = s.bm25_weight, s.vector_weight
    for h, b, v in zip(hits, bm, vs, strict=True):
        h.fused = bw * (max(b, 0.0) / bhi) + vw * (max(v - vlo, 0.0) / vspan)


def _days_since(date: str | None, today: dt.date,
                dates: list[DateRange] | None = None) -> int | None:
    """Days from ``date`` to ``today``; when the query names ``dates`` (in March), days
    from ``date`` to the nearest of them instead (0 inside one): the user asks about that
    time, so closeness to it, not to today, is what recency weighs."""
    if not date:
        return None
    day = _ORDINALS.get(date[:10], False)
    if day is False:
        if len(_ORDINALS) >= 100_000:  # a process that searched years of distinct days
            _ORDINALS.clear()
        try:
            day = dt.date.fromisoformat(date[:10]).toordinal()
        except ValueError:
            day = None
        _ORDINALS[date[:10]] = day
    if day is None:
        return None
    if dates:
        return min(max(a.toordinal() - day, day - b.toordinal(), 0) for a, b in dates)
    return max(today.toordinal() - day, 0)


#: day number of each date string seen (a query weighs ~1,000 files' dates, mostly the same
#: few thousand days from one query to the next): parsing them was a tenth of the ranking
_ORDINALS: dict[str, int | None] = {}


def rank(
    hits: list[ChunkHit],
    files: dict[str, FileInfo],
    signals: dict[str, list[tuple[int, float, str | None]]],
    s: Settings,
    limit: int,
    today: dt.date | None = None,
    dates: list[DateRange] | None = None,
    people: set[str] | None = None,
) -> list[Ranked]:
    """Roll chunks up to files, apply signals/recency/status/dates, keep the best ``limit``.

    ``dates``: the calendar ranges the query names (:func:`~memrepo.index.dates.date_ranges`).
    ``people``: the files that name a person the query names.
    A query weighs ~1,000 files: each gets its score (:func:`_score`); only the ``limit``
    shown become :class:`Ranked`, explained.
    """
    today = today or clock.today()
    by_file: dict[str, list[ChunkHit]] = {}
    # neither a keyword match nor a related vector: not a result
    for h in sorted([h for h in hits if h.fused > 0], key=_neg_fused):
        chunks = by_file.get(h.path)
        if chunks is None:
            by_file[h.path] = [h]
        else:
            chunks.append(h)
    statuses = {"superseded": s.superseded_factor, "archived": s.archived_factor}
    scored: list[tuple[float, str, tuple[Any, ...]]] = []
    for path, chunks in by_file.items():
        final, why = _score(chunks, files.get(path), signals.get(path), s, today, dates,
                            statuses, people)
        scored.append((-final, path, why))
    scored.sort(key=_score_then_path)  # ties broken by path
    out: list[Ranked] = []
    for neg, path, why in scored[:limit]:  # Ranked and explain only for what is shown
        if -neg < s.min_score:
            break  # best first: the rest score lower still
        info = files.get(path)
        r = Ranked(path, info.category if info else None, -neg,
                   by_file[path][: max(s.per_file, 1)])
        r.explain = _explain(*why)
        out.append(r)
    return out


def _neg_fused(h: ChunkHit) -> float:
    return -h.fused


def _score_then_path(item: tuple[float, str, Any]) -> tuple[float, str]:
    return item[0], item[1]


def _rollup(s: Settings, chunks: list[ChunkHit]) -> float:
    if len(s.rollup) == 1:  # the default: what sum() computes for one term, 0.0 + w * f
        return 0.0 + s.rollup[0] * chunks[0].fused
    return sum(w * c.fused for w, c in zip(s.rollup, chunks, strict=False))


def _signal(sig: list[tuple[int, float, str | None]] | None, best: ChunkHit,
            s: Settings) -> tuple[float, str | None, float]:
    """(signal score, last reinforce, factor) of the signals on the file or in ``best``."""
    score, reinforced = 0.0, None
    for line, sc, when in sig or ():
        if line == 0 or best.start_line <= line <= best.end_line:
            score += sc
            if when and (reinforced is None or when > reinforced):
                reinforced = when
    return score, reinforced, math.exp(score * s.reinforce_factor)


def _score(chunks: list[ChunkHit], info: FileInfo | None,
           sig: list[tuple[int, float, str | None]] | None, s: Settings, today: dt.date,
           dates: list[DateRange] | None, statuses: dict[str, float],
           people: set[str] | None = None) -> tuple[float, tuple[Any, ...]]:
    """One file's score (the rolled-up chunks x signals x recency x status x dates x
    people) and what :func:`_explain` says of it."""
    modified, status = (info.modified, info.status) if info is not None else (None, "")
    rel = _rollup(s, chunks)
    best = chunks[0]
    if sig:  # most files have none
        score, reinforced, signal_f = _signal(sig, best, s)
        ref_date = max(filter(None, (modified, reinforced)), default=None)
    else:
        score, signal_f, ref_date = 0.0, 1.0, modified or None  # exp(0 x factor)
    days = _days_since(ref_date, today, dates)
    recency_f = 1.0 / (1.0 + days * s.recency_per_day) if days is not None else 1.0
    status_f = statuses.get(status, 1.0)
    date_f = 1.0 + s.date_boost if dates and in_ranges(modified, dates) else 1.0
    people_f = 1.0 + s.people_boost if people and best.path in people else 1.0
    final = rel * signal_f * recency_f * status_f * date_f * people_f
    return final, (best, rel, len(chunks), score, signal_f, days, recency_f, status,
                   status_f, date_f, people_f, final)


def _explain(best: ChunkHit, rel: float, matching: int, score: float, signal_f: float,
             days: int | None, recency_f: float, status: str, status_f: float,
             date_f: float, people_f: float, final: float) -> dict[str, float | str | None]:
    return {
        "bm25": round(best.bm25, 4),
        "vector": None if best.vector is None else round(best.vector, 4),
        "fused": round(best.fused, 4),
        "rollup": round(rel, 4),
        "superseded_share": round(best.stale, 4),
        "matching_chunks": matching,
        "signal_score": score,
        "signal_factor": round(signal_f, 4),
        "days": days,
        "recency_factor": round(recency_f, 4),
        "status": status or None,
        "status_factor": status_f,
        "date_factor": date_f,
        "people_factor": people_f,
        "score": round(final, 6),
    }


#: ``search.expansion_weight: auto`` with an embedder, where it lifts recall (up or equal
#: in each conversation); with FTS5 alone it lost, so there auto is 0
#: (``bench/quality/eval_locomo.py``)
AUTO_EXPANSION = 0.2


def expansion_weight(search_cfg: dict) -> float:
    """``search.expansion_weight``, ``auto`` resolved by ``search.embedder``."""
    value = search_cfg.get("expansion_weight", "auto")
    if value == "auto":
        return AUTO_EXPANSION if search_cfg.get("embedder", "none") != "none" else 0.0
    return float(value)


def with_per_file(s: Settings, per_file: int | None) -> Settings:
    """``s`` with another ``per_file`` for one query (None: ``s`` itself): an engine's
    settings are shared by all its queries."""
    return s if per_file is None or per_file == s.per_file else replace(s, per_file=per_file)


def settings_from_config(search_cfg: dict) -> Settings:
    """Ranking settings from the ``search`` section of memory-config.yaml (a key it lacks
    keeps the config schema's default)."""
    d = Settings()
    sf = float(search_cfg.get("superseded_factor", d.superseded_factor))
    return Settings(
        fusion=str(search_cfg.get("fusion", d.fusion)),
        bm25_weight=float(search_cfg.get("bm25_weight", d.bm25_weight)),
        vector_weight=float(search_cfg.get("vector_weight", d.vector_weight)),
        rrf_k=int(search_cfg.get("rrf_k", d.rrf_k)),
        recency_per_day=float(search_cfg.get("recency_per_day", d.recency_per_day)),
        superseded_factor=sf,
        archived_factor=sf,
        per_file=int(search_cfg.get("per_file", d.per_file)),
        date_boost=float(search_cfg.get("date_boost", d.date_boost)),
        people_boost=float(search_cfg.get("people_boost", d.people_boost)),
        expansion_weight=expansion_weight(search_cfg),
        reinforce_weight=float(search_cfg.get("reinforce_weight", d.reinforce_weight)),
        demote_weight=float(search_cfg.get("demote_weight", d.demote_weight)),
        mask_names=bool(search_cfg.get("mask_names", d.mask_names)),
        min_score=float(search_cfg.get("min_score", d.min_score)),
        snippet_max_chars=int(search_cfg.get("snippet_max_chars", d.snippet_max_chars)),
    )


def flatten(ranked: list[Ranked], limit: int) -> list[tuple[Ranked, ChunkHit, float]]:
    """Result lines: files in rank order, each file's extra chunks (``per_file`` > 1)
    placed where their own score puts them, never before their file's first line.

    So the order in which files first appear is the file ranking, and the passages read
    top-down are in score order.
    """
    out: list[tuple[Ranked, ChunkHit, float]] = []
    heap: list[tuple[float, int, int, Ranked, ChunkHit]] = []
    seq = 0
    for r in ranked:
        while heap and -heap[0][0] > r.score:
            key, _, _, rr, c = heapq.heappop(heap)
            out.append((rr, c, -key))
        out.append((r, r.chunks[0], r.score))
        rollup = float(r.explain.get("rollup") or 0.0)
        factor = r.score / rollup if rollup else 0.0
        for c in r.chunks[1:]:
            seq += 1
            heapq.heappush(heap, (-(c.fused * factor), seq, id(r), r, c))
    while heap:
        key, _, _, rr, c = heapq.heappop(heap)
        out.append((rr, c, -key))
    return out[:limit]


def cited(lines: list[str]) -> set[str]:
    """The source references of ``lines``' ``[src: …]`` tags (a turn anchor cut off)."""
    return {r.strip().split("#")[0] for ln in lines for m in SRC.finditer(ln)
            for r in m["src"].split(";") if r.strip()}


def sources_first(hits: list[Hit], refs: list[set[str]]) -> list[Hit]:
    """``hits`` with each derived hit (``refs[i]``: the sources its lines cite) moved just
    below the best-ranked transcript hit of each source it cites, when that is lower.

    A journal or knowledge line written from a turn says less than the turn (its words,
    its speaker, its time): it must not take the place above it (issue 35, "the memory
    feeds on itself"; recall drops such lines outright, :mod:`memrepo.context.restate`).
    A derived hit whose sources are not in the list keeps its place: it is the way to them.
    """
    first: dict[str, int] = {}
    for i, h in enumerate(hits):
        if is_transcript(h.path):
            first.setdefault(source_ref(h.path), i)
    if not first:
        return hits
    keys: list[float] = []
    for i, mine in enumerate(refs):
        below = [j for r in mine for ref, j in first.items() if ref.startswith(r)]
        keys.append(max(below) + 0.5 if below and max(below) > i else float(i))
    order = sorted(range(len(hits)), key=lambda i: (keys[i], i))
    if order == list(range(len(hits))):
        return hits
    for i in order:
        if keys[i] != i and hits[i].explain is not None:
            hits[i].explain["below_source"] = True
    return [hits[i] for i in order]


def to_hits(
    ranked: list[Ranked],
    limit: int,
    words: list[str],
    span: Callable[[str, int, int], list[str]] | None,
    tag: dict[str, Any],
    chunk_explain: bool = True,
    snippets: bool = True,
    width: int = WIDTH,
) -> list[Hit]:
    """The result lines (:func:`flatten`) as hits, each with the best snippet of its span,
    derived lines below their sources (:func:`sources_first`).

    ``span(path, start, end)`` reads the lines (the engine knows where the text is);
    without ``snippets`` (a caller that reads the spans itself) the snippets are left
    empty, and with no ``span`` the order of derived lines too. A file's first line
    explains the whole ranking plus ``tag`` (which engine, vectors on or off); its extra
    lines give their own fused score when ``chunk_explain``, else nothing. ``width``: the
    longest snippet (``search.snippet_max_chars``).
    """
    out: list[Hit] = []
    refs: list[set[str]] = []
    unsegmented = any(cjk.has_run(w) for w in words)
    for r, c, score in flatten(ranked, limit):
        explain: dict[str, Any] | None
        if c is r.chunks[0]:
            explain = dict(r.explain, **tag)
        elif chunk_explain:
            explain = {"chunk_fused": round(c.fused, 4), "file_score": round(r.score, 6)}
        else:
            explain = None
        snippet = ""
        derived = not is_transcript(r.path)
        lines = span(r.path, c.start_line, c.end_line) if span and (snippets or derived) else []
        refs.append(cited(lines) if derived else set())
        if span and snippets:
            snippet = "" if unsegmented else best_snippet(lines, words, width)
            low = snippet.lower()
            if unsegmented or (not any(w in low for w in words) and cjk.has_run("".join(lines))):
                # a word inside a run (or written against one) has no word boundary for
                # the ordinary snippet to find
                snippet = cjk.best_snippet(lines, words, width) or snippet or best_snippet(
                    lines, words, width
                )
        out.append(
            Hit(r.path, r.category, score, c.start_line, c.end_line, snippet, c.ord, explain)
        )
    return sources_first(out, refs)
