"""docs/configuration.md documents every setting of memory-config.yaml, and only those.

The schema (``memrepo.config.SCHEMA``) is the source of truth. Each of its keys must have a
table row in the doc whose first cell is the dotted key in backticks, with the schema's
type and default. Every dotted key in a row's first cell must be known to the schema, or
be one of the keys it accepts and ignores (``IGNORED_KEYS``). Both directions are checked,
so a new setting without a row fails, and so does a row for a setting that was removed
or misspelt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memrepo.config import IGNORED_KEYS, SCHEMA, Setting, _type_name

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

#: A table row whose first cell is a dotted key in backticks: | `section.key` | type | default | …
_ROW = re.compile(r"^\|\s*`([A-Za-z_][\w-]*(?:\.[\w-]+)+)`\s*\|([^|]*)\|([^|]*)\|")


def _rows(text: str) -> dict[str, tuple[str, str]]:
    """Dotted key -> (type cell, default cell), for every table row that names one."""
    rows: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = _ROW.match(line.strip())
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} has two rows"
            rows[m.group(1)] = (m.group(2).strip(), m.group(3).strip())
    return rows


def _schema_keys() -> dict[str, Setting]:
    return {f"{section}.{key}": s for section, keys in SCHEMA.items() for key, s in keys.items()}


def _shown_default(value: Any) -> str:
    """A default as the doc shows it: the YAML scalar in backticks."""
    text = value if isinstance(value, str) and value else json.dumps(value)
    return f"`{text}`"


def _shown_type(s: Setting) -> str:
    """The start of the type cell: the choices, else cron, else the type's name."""
    if s.choices:
        return "one of " + ", ".join(f"`{c}`" for c in s.choices)
    if s.cron:
        return "cron expression"
    return _type_name(s.kind)


ROWS = _rows(DOC.read_text(encoding="utf-8"))
SCHEMA_KEYS = _schema_keys()


def test_every_setting_of_the_schema_has_a_row() -> None:
    missing = sorted(set(SCHEMA_KEYS) - set(ROWS))
    assert missing == [], f"settings without a row in {DOC.name}: {missing}"


def test_every_documented_key_is_known_to_the_schema() -> None:
    unknown = sorted(set(ROWS) - set(SCHEMA_KEYS) - set(IGNORED_KEYS))
    assert unknown == [], f"rows of {DOC.name} for keys the schema does not know: {unknown}"


def test_the_ignored_keys_are_documented_too() -> None:
    assert sorted(set(IGNORED_KEYS) - set(ROWS)) == []


def test_each_row_states_the_schema_default_and_type() -> None:
    wrong = []
    for key, s in SCHEMA_KEYS.items():
        if key not in ROWS:
            continue  # reported by test_every_setting_of_the_schema_has_a_row
        type_cell, default_cell = ROWS[key]
        if default_cell != _shown_default(s.default):
            wrong.append(f"{key}: default {default_cell} (schema: {_shown_default(s.default)})")
        if not type_cell.startswith(_shown_type(s)):
            wrong.append(f"{key}: type {type_cell!r} (schema: {_shown_type(s)!r})")
        if s.auto and "`auto`" not in type_cell:
            wrong.append(f"{key}: type {type_cell!r} does not say `auto` is accepted")
    assert wrong == []


def test_the_row_parser_sees_both_kinds_of_mistake() -> None:
    """The checks above are only as good as the parser: a doc with a missing and an extra
    row must be caught in both directions."""
    text = "| key | type | default | meaning |\n| --- | --- | --- | --- |\n"
    text += "".join(
        f"| `{k}` | {_shown_type(s)} | {_shown_default(s.default)} | x |\n"
        for k, s in list(SCHEMA_KEYS.items())[1:]
    )
    text += "| `search.no_such_setting` | number | `1` | x |\n"
    rows = _rows(text)
    assert set(SCHEMA_KEYS) - set(rows) == {next(iter(SCHEMA_KEYS))}
    assert set(rows) - set(SCHEMA_KEYS) == {"search.no_such_setting"}
