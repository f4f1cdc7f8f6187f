"""Untrusted JSON lines read as objects (memrepo.jsonsafe): one answer for every kind of bad."""

from __future__ import annotations

import pytest

from memrepo.jsonsafe import json_object


@pytest.mark.parametrize(
    ("data", "want"),
    [
        ('{"path": "a.md", "line": 3}', {"path": "a.md", "line": 3}),
        (b'{"ok": true}', {"ok": True}),
        ("not json", None),
        ("[1, 2]", None),
        ('"a string"', None),
        ("", None),
        ("[" * 100_000 + "]" * 100_000, None),  # a nesting bomb: RecursionError inside
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, None),
    ],
)
def test_json_object(data: str | bytes, want: dict | None) -> None:
    assert json_object(data) == want
