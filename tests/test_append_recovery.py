"""Append-only event logs after a killed writer (issue #14): an event written after a
torn line is still read."""

from __future__ import annotations

from pathlib import Path

from memrepo.index import signals


def test_an_event_after_a_torn_line_is_not_glued_to_it(tmp_path: Path) -> None:
    signals.append(tmp_path, [{"event": "reinforce", "path": "a.md"}])
    path = next((tmp_path / "raw" / "signals").glob("*.jsonl"))
    with path.open("ab") as fh:
        fh.write(b'{"ts": "2026-01-01T00:00:00+00:00", "event": "reinf')  # a killed writer
    signals.append(tmp_path, [{"event": "reinforce", "path": "b.md", "line": 3}])
    agg = signals.aggregate(tmp_path)
    assert agg[("a.md", 0)].score == 3.0 and agg[("b.md", 3)].score == 3.0
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == 3
