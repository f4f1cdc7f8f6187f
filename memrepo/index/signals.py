"""Usage signals (seed 001): reinforce (+3), demote (-1) and search hits.

They cannot be rebuilt from files, so they are files: append-only JSONL under
``raw/signals/YYYY-MM.jsonl`` (one event a line, so git merges concurrent appends
cleanly, with ``merge=union`` where .gitattributes sets it). The index aggregates them
into its ``signals`` table per (path, line) for ranking: ``× exp(score × 0.2)`` and a
reinforce resets the recency clock. A reinforce or demote also keeps its line's text, so
the fold counts it where that entry is now, after edits above it or a ``git mv``
(:mod:`memrepo.index.anchors`); a commit touching a file with signals re-folds them.
Aggregation reads the working tree, so an event counts from the moment it is written,
committed or not: the indexer re-folds them whenever the files' :func:`stamp` (names,
sizes, mtimes) differs from the one it stored, because folding thousands of events on
every commit would add to the hook's time (``bench/perf/bench_commit.py``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo import clock, worktree
from memrepo.atomic import append_lines
from memrepo.index.anchors import TEXT_CHARS, Relocator
from memrepo.index.paths import is_utf8, printable
from memrepo.jsonsafe import json_object
from memrepo.layout import HITS_DIR, HITS_PREFIX, SIGNALS_DIR

if TYPE_CHECKING:
    from memrepo.index.db import Connection

#: Seed 001's weights, the defaults of ``search.reinforce_weight`` / ``demote_weight``.
WEIGHTS = {"reinforce": 3.0, "demote": -1.0, "hit": 0.0}
_COLUMNS = "path, line, score, reinforced, hits, last_hit, reinforces, demotes"
#: The largest line (or chunk) number SQLite's INTEGER holds: beyond it, inserting the
#: aggregate raises OverflowError, so such numbers never reach a file or the table.
MAX_NUMBER = 2**63 - 1
_REF = re.compile(
    r"^(?P<path>.+?)(?::(?P<a>[0-9]+)(?:-(?P<b>[0-9]+))?|#(?P<ord>[0-9]+))?$", re.DOTALL
)


class BadRef(ValueError):
    """A REF that cannot name a place in a file."""


@dataclass
class Ref:
    path: str
    line: int | None = None
    ord: int | None = None

    def __str__(self) -> str:
        if self.line:
            return f"{self.path}:{self.line}"
        return self.path


def parse_ref(ref: str) -> Ref:
    """``path``, ``path:LINE``, ``path:A-B`` (the span search prints) or ``path#CHUNK``.

    Raises BadRef for a number past :data:`MAX_NUMBER`, before anything is written.
    """
    ref = ref.strip().removeprefix("./")
    m = _REF.match(ref)
    if not m:
        return Ref(ref)
    for group in ("a", "b", "ord"):
        digits = m.group(group)
        if digits is not None and (len(digits) > 19 or int(digits) > MAX_NUMBER):
            what = "chunk" if group == "ord" else "line"
            raise BadRef(f"{ref}: {what} number {digits} is too large")
    if m.group("ord") is not None:
        return Ref(m.group("path"), ord=int(m.group("ord")))
    if m.group("a") is not None:
        if m.group("b") is not None and int(m.group("b")) < int(m.group("a")):
            raise BadRef(f"{ref}: the range {m.group('a')}-{m.group('b')} ends before it starts")
        return Ref(m.group("path"), line=int(m.group("a")))
    return Ref(m.group("path"))


def signal_file(root: Path, when: dt.datetime, hits: bool = False) -> Path:
    """This month's file: ``raw/signals/YYYY-MM.jsonl`` (committed), or for hits
    ``.memrepo/signals/hits-YYYY-MM.jsonl`` (this clone's, never in the work tree's status)."""
    if hits:
        return Path(root) / HITS_DIR / f"{HITS_PREFIX}{when:%Y-%m}.jsonl"
    return Path(root) / SIGNALS_DIR / f"{when:%Y-%m}.jsonl"


def append(root: Path, events: list[dict]) -> Path:
    """Append events (each gets a timestamp) to this month's file (hits to this month's
    hits file); returns the last file written."""
    now = clock.now()
    stamp = now.isoformat(timespec="seconds")
    path = signal_file(root, now)
    for hits in (False, True):
        mine = [e for e in events if (e.get("event") == "hit") == hits]
        if not mine:
            continue
        path = signal_file(root, now, hits)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps({"ts": stamp, **e}, ensure_ascii=False) + "\n" for e in mine)
        append_lines(path, lines.encode("utf-8"), root)
    return path


Key = tuple[str, int]


@dataclass
class Aggregate:
    score: float = 0.0  # with the default WEIGHTS (prune's "cold"); ranking uses the counts
    reinforced: str | None = None
    hits: int = 0
    last_hit: str | None = None
    reinforces: int = 0
    demotes: int = 0

    def add(self, event: str, date: str) -> None:
        self.score += WEIGHTS.get(event, 0.0)
        self.reinforces += event == "reinforce"
        self.demotes += event == "demote"
        if event == "reinforce" and (self.reinforced is None or date > self.reinforced):
            self.reinforced = date
        if event == "hit":
            self.hits += 1
            if self.last_hit is None or date > self.last_hit:
                self.last_hit = date


def _event(line: str) -> tuple[Key, str, str, str | None] | None:
    """(key, event, date, anchor text) of one JSONL line, or None when it could not be
    stored.

    The files are edited by hand and merged by git, so anything may be there: a line
    number that is not an int in 0..MAX_NUMBER, or a string SQLite cannot encode
    (a lone ``\\udXXX`` escape), would break every index update that folds it.
    """
    ev = json_object(line)
    if ev is None:
        return None
    path, kind, ts = ev.get("path"), ev.get("event"), ev.get("ts", "")
    num = ev.get("line") or 0
    if not (isinstance(path, str) and isinstance(kind, str) and isinstance(ts, str)):
        return None
    if isinstance(num, bool) or not isinstance(num, int) or not 0 <= num <= MAX_NUMBER:
        return None
    if not (is_utf8(path) and is_utf8(kind) and is_utf8(ts[:10])):
        return None
    text = ev.get("text")
    text = text[:TEXT_CHARS] if isinstance(text, str) and is_utf8(text) else None
    return (path, num), kind, ts[:10], text


def _files(root: Path, hits: bool = True) -> list[os.DirEntry[str]]:
    """The signal files, without the hits files unless ``hits`` (those of this clone, and
    any an older memrepo committed under ``raw/signals/``)."""
    found: list[os.DirEntry[str]] = []
    for folder in (SIGNALS_DIR, HITS_DIR) if hits else (SIGNALS_DIR,):
        if worktree.link_on_the_way(root, folder + "x") is not None:
            continue  # the folder or one above it is a link: never read through one
        try:
            with os.scandir(Path(root) / folder) as it:
                found += [
                    e for e in it
                    if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
                    and (hits or not e.name.startswith(HITS_PREFIX))
                    and (folder == SIGNALS_DIR or e.name.startswith(HITS_PREFIX))
                ]
        except OSError:
            continue
    return sorted(found, key=lambda e: (e.name, e.path))


def aggregate(root: Path, hits: bool = True) -> dict[Key, Aggregate]:
    """Fold every event of ``raw/signals/*.jsonl`` (bad lines are skipped); without
    ``hits``, only what moves ranking (what the index keeps: hits cost every search a
    line and no ranking, so the index leaves them to ``memory prune``). Anchored events
    count where their entry is now (:mod:`memrepo.index.anchors`)."""
    events: list[tuple[Key, str, str, str | None]] = []
    for entry in _files(root, hits):
        try:
            text = Path(entry.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            ev = _event(line)
            if ev is not None and (hits or ev[1] != "hit"):
                events.append(ev)
    anchored = [date for _k, _e, date, text in events if text]
    finder = Relocator(root, since=min(anchored)) if anchored else None
    moved: dict[tuple[Key, str], Key | None] = {}
    out: dict[Key, Aggregate] = {}
    for key, kind, date, text in events:
        if text and finder is not None:
            if (key, text) not in moved:
                moved[key, text] = finder.locate(key[0], key[1], text)
            now = moved[key, text]
            if now is None:  # the entry was deleted: its signal goes with it
                continue
            key = now
        out.setdefault(key, Aggregate()).add(kind, date)
    return out


def stamp(root: Path) -> str:
    """Names, sizes and mtimes of the signal files: it changes with every append, and
    costs a directory listing (the hook compares it with the one the index stored)."""
    parts = []
    for entry in _files(root, hits=False):
        try:
            st = entry.stat()
        except OSError:
            continue
        parts.append(f"{printable(entry.name)}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def store(con: Connection, agg: dict[Key, Aggregate]) -> None:
    """Replace the index's signals table (inside the caller's transaction)."""
    con.execute("DELETE FROM signals")
    con.executemany(
        f"INSERT INTO signals({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
        [(p, ln, a.score, a.reinforced, a.hits, a.last_hit, a.reinforces, a.demotes)
         for (p, ln), a in agg.items()],
    )


def apply(con: Connection, events: list[dict]) -> None:
    """Fold new events into the table now, so they count before the next index update."""
    today = clock.today().isoformat()
    for ev in events:
        key = (ev["path"], int(ev.get("line") or 0))
        row = con.execute(
            "SELECT score, reinforced, hits, last_hit, reinforces, demotes FROM signals "
            "WHERE path=? AND line=?", key
        ).fetchone()
        agg = Aggregate(*row) if row else Aggregate()
        agg.add(ev["event"], today)
        con.execute(
            f"INSERT OR REPLACE INTO signals({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
            (*key, agg.score, agg.reinforced, agg.hits, agg.last_hit, agg.reinforces,
             agg.demotes),
        )


def weighted(reinforces: int, demotes: int, reinforce_weight: float,
             demote_weight: float) -> float:
    """A place's signal score with the configured weights (``search.reinforce_weight``,
    ``search.demote_weight``): applied when ranking, so changing them needs no re-fold."""
    return reinforces * reinforce_weight - demotes * demote_weight


def record_hits(root: Path, refs: Iterable[tuple[str, int]]) -> None:
    """Log what was shown (``memory search``) or included (compile) as ``hit`` signals
    (seed 001 ``last_hit_at``); a failure to log them is not an error."""
    batch = os.urandom(4).hex()  # what was shown together: co-recall (memory links)
    events = [{"event": "hit", "path": path, "line": line, "batch": batch}
              for path, line in refs]
    if events:
        with contextlib.suppress(OSError):
            append(root, events)
