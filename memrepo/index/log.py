"""The hook's log, ``<git-dir>/memrepo/index.log``: hooks may not print, doctor reads it.

One line per event: ``ISO-time<TAB>LEVEL<TAB>event<TAB>message``. Kept short by
truncating to the newest half when it grows past :data:`MAX_BYTES`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 256 * 1024


def log_path(state: Path) -> Path:
    return state / "index.log"


def write(state: Path, level: str, event: str, message: str) -> None:
    """Append a line; never raises (a broken log must not break a hook)."""
    try:
        state.mkdir(parents=True, exist_ok=True)
        path = log_path(state)
        stamp = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        line = f"{stamp}\t{level}\t{event}\t{' '.join(message.split())}\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            size = fh.tell()
        if size > MAX_BYTES:
            data = path.read_bytes()[-MAX_BYTES // 2 :]
            path.write_bytes(data[data.find(b"\n") + 1 :])
    except Exception:
        pass


@dataclass
class Entry:
    time: str
    level: str
    event: str
    message: str


def read(state: Path) -> list[Entry]:
    try:
        text = log_path(state).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split("\t", 3)
        if len(parts) == 4:
            out.append(Entry(*parts))
    return out


def errors_since_last_success(state: Path) -> list[Entry]:
    """ERROR lines after the last OK line: the ones still unresolved."""
    entries = read(state)
    last_ok = max((i for i, e in enumerate(entries) if e.level == "OK"), default=-1)
    return [e for e in entries[last_ok + 1 :] if e.level == "ERROR"]
