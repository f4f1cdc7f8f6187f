"""What the server's requests have cost, per op (``memory serve --status``), and its
resident memory."""

from __future__ import annotations

import threading


class OpStats:
    """op -> requests, the seconds answering them and the answering threads' CPU seconds
    (thread-safe; only the ops the server knows are counted, so made-up op names cannot
    grow the table)."""

    def __init__(self) -> None:
        self._rows: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def count(self, op: str, seconds: float, cpu: float) -> None:
        with self._lock:
            row = self._rows.setdefault(op, [0, 0.0, 0.0])
            row[0] += 1
            row[1] += seconds
            row[2] += cpu

    def table(self) -> dict[str, dict[str, float]]:
        """Per op answered through the socket: requests, and the seconds and the answering
        threads' CPU seconds spent on them in all. A model's own threads count in the
        process's ``cpu_s``, not an op's, and so do the searches of a process hosting the
        server (``memory mcp`` asks it in-process)."""
        with self._lock:
            return {op: {"requests": int(n), "seconds": round(wall, 6), "cpu_s": round(cpu, 6)}
                    for op, (n, wall, cpu) in sorted(self._rows.items())}


def rss_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for row in fh:
                if row.startswith("VmRSS:"):
                    return round(int(row.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None
