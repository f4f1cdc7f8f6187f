"""Usage signals (seed 001): reinforce (+3), demote (-1) and search hits.

They cannot be rebuilt from files, so they are files: append-only JSONL under
``raw/signals/YYYY-MM.jsonl`` (one event a line, so git merges concurrent appends
cleanly, with ``merge=union`` where .gitattributes sets it). The index aggregates them
into its ``signals`` table per (path, line) for ranking: ``× exp(score × 0.2)`` and a
reinforce resets the recency clock. Aggregation reads the working tree, so an event
counts from the moment it is written, committed or not.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memrepo.index.paths import SIGNALS_DIR

WEIGHTS = {"reinforce": 3.0, "demote": -1.0, "hit": 0.0}
_REF = re.compile(r"^(?P<path>.+?)(?::(?P<a>\d+)(?:-(?P<b>\d+))?|#(?P<ord>\d+))?$")


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
    """``path``, ``path:LINE``, ``path:A-B`` (the span search prints) or ``path#CHUNK``."""
    ref = ref.strip().removeprefix("./")
    m = _REF.match(ref)
    if not m:
        return Ref(ref)
    if m.group("ord") is not None:
        return Ref(m.group("path"), ord=int(m.group("ord")))
    if m.group("a") is not None:
        return Ref(m.group("path"), line=int(m.group("a")))
    return Ref(m.group("path"))


def signal_file(root: Path, when: dt.datetime) -> Path:
    return Path(root) / SIGNALS_DIR / f"{when:%Y-%m}.jsonl"


def append(root: Path, events: list[dict]) -> Path:
    """Append events (each gets a timestamp) to this month's file; returns the file."""
    now = dt.datetime.now().astimezone()
    path = signal_file(root, now)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = now.isoformat(timespec="seconds")
    lines = "".join(json.dumps({"ts": stamp, **e}, ensure_ascii=False) + "\n" for e in events)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(lines)
    return path


Key = tuple[str, int]


@dataclass
class Aggregate:
    score: float = 0.0
    reinforced: str | None = None
    hits: int = 0
    last_hit: str | None = None

    def add(self, event: str, date: str) -> None:
        self.score += WEIGHTS.get(event, 0.0)
        if event == "reinforce" and (self.reinforced is None or date > self.reinforced):
            self.reinforced = date
        if event == "hit":
            self.hits += 1
            if self.last_hit is None or date > self.last_hit:
                self.last_hit = date


def aggregate(root: Path) -> dict[Key, Aggregate]:
    """Fold every event of ``raw/signals/*.jsonl`` (bad lines are skipped)."""
    out: dict[Key, Aggregate] = {}
    folder = Path(root) / SIGNALS_DIR
    if not folder.is_dir():
        return out
    for file in sorted(folder.glob("*.jsonl")):
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            try:
                ev = json.loads(line)
                key = (str(ev["path"]), int(ev.get("line") or 0))
                kind = str(ev["event"])
            except (ValueError, KeyError, TypeError):
                continue
            out.setdefault(key, Aggregate()).add(kind, str(ev.get("ts", ""))[:10])
    return out


def store(con: sqlite3.Connection, agg: dict[Key, Aggregate]) -> None:
    """Replace the index's signals table (inside the caller's transaction)."""
    con.execute("DELETE FROM signals")
    con.executemany(
        "INSERT INTO signals(path, line, score, reinforced, hits, last_hit) VALUES (?,?,?,?,?,?)",
        [(p, ln, a.score, a.reinforced, a.hits, a.last_hit) for (p, ln), a in agg.items()],
    )


def apply(con: sqlite3.Connection, events: list[dict]) -> None:
    """Fold new events into the table now, so they count before the next index update."""
    today = dt.date.today().isoformat()
    for ev in events:
        key = (ev["path"], int(ev.get("line") or 0))
        row = con.execute(
            "SELECT score, reinforced, hits, last_hit FROM signals WHERE path=? AND line=?", key
        ).fetchone()
        agg = Aggregate(*row) if row else Aggregate()
        agg.add(ev["event"], today)
        con.execute(
            "INSERT OR REPLACE INTO signals(path, line, score, reinforced, hits, last_hit) "
            "VALUES (?,?,?,?,?,?)",
            (*key, agg.score, agg.reinforced, agg.hits, agg.last_hit),
        )
