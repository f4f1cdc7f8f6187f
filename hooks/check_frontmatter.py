"""Check that memory files carry valid frontmatter (seed 000 §2.3).

Every ``.md`` under raw/, knowledge/, topics/ and archive/ must start with parseable YAML
frontmatter whose ``type`` fits its directory, with the fields its type requires and dates
that are dates. The verdict helpers below are shared with the transcript, topic and journal
checks; ``ctx.first`` makes sure a file's missing field or bad date is said once per run.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections.abc import Sequence
from typing import Any

from memrepo import compression, documents, layout

from .engine import Context, run_main

CHECK_ID = "check-frontmatter"

_FIELD_HINTS = {
    "triggers": " (a list of triggers; [] for a manual-only topic)",
    "started": " (an ISO 8601 datetime with a UTC offset)",
    "date": " (YYYY-MM-DD)",
}


def show(value: Any, limit: int = 40) -> str:
    """A frontmatter value as a person wrote it, kept short."""
    text = value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def line_of(text: str, key: str) -> int:
    """The line of a frontmatter key, else the opening ``---``."""
    return documents.meta_line(text, key) or 1


def require_frontmatter(ctx: Context, doc: documents.Document, check: str) -> bool:
    """Report (once) a memory file without frontmatter; True when it has some."""
    if doc.has_frontmatter:
        return True
    if ctx.first(doc.path, "no-frontmatter"):
        ctx.report.error(
            doc.path,
            1,
            "no YAML frontmatter: the file must start with a '---' line, 'key: value' lines "
            "and a closing '---'",
            check,
        )
    return False


def _one_of(values: frozenset[str]) -> str:
    names = sorted(values)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_type(ctx: Context, path: str, text: str, meta: dict[str, Any], check: str) -> str | None:
    """The file's valid ``type``, reporting (once) a missing or misplaced one.

    Transcripts (and other raw/ files) may leave ``type`` out: their path says it all.
    """
    allowed = layout.expected_types(path)
    kind = meta.get("type")
    if kind is None:
        if path.startswith("raw/"):
            return "conversation" if layout.category_of(path) == "conversation" else None
        if ctx.first(path, "type"):
            ctx.report.error(path, 1, f"frontmatter needs 'type' (here: {_one_of(allowed)})", check)
        return None
    if isinstance(kind, str) and kind in allowed:
        return kind
    if ctx.first(path, "type"):
        where = path if path in layout.SPECIAL_TYPES else posixpath.dirname(path) + "/"
        ctx.report.error(
            path,
            line_of(text, "type"),
            f"type {show(kind)} does not fit {where}: expected {_one_of(allowed)}",
            check,
        )
    return None


def require_fields(
    ctx: Context, path: str, text: str, meta: dict[str, Any], kind: str, check: str
) -> list[str]:
    """Report (once each) the fields ``kind`` requires that are missing or empty."""
    missing = [f for f in documents.REQUIRED_FIELDS.get(kind, ()) if meta.get(f) in (None, "")]
    for name in missing:
        if ctx.first(path, "missing", name):
            line = documents.meta_line(text, name) or line_of(text, "type")
            hint = _FIELD_HINTS.get(name, "")
            ctx.report.error(path, line, f"a {kind} file needs '{name}'{hint}", check)
    return missing


def date_value(
    ctx: Context, path: str, text: str, meta: dict[str, Any], key: str, check: str
) -> dt.date | None:
    """The parsed value of a date field, reporting (once) one that is not a date.

    DATETIME_FIELDS must be full datetimes with a UTC offset (a transcript's path and turn
    times are in the session's own zone, so the zone must be known). An absent or null
    optional field gives None without a message.
    """
    value = meta.get(key)
    if value is None:
        return None
    if key in documents.DATETIME_FIELDS:
        parsed: dt.date | None = documents.parse_datetime(value)
        ok = isinstance(parsed, dt.datetime) and parsed.utcoffset() is not None
        want = "an ISO 8601 datetime with a UTC offset, e.g. 2026-02-16T18:45:00+01:00"
    else:
        parsed = documents.parse_date(value)
        ok = parsed is not None
        want = "a date (YYYY-MM-DD) or an ISO 8601 datetime"
    why = documents.date_range_problem(parsed) if ok and parsed is not None else None
    if ok and why is None:
        return parsed
    if ctx.first(path, "bad", key):
        message = f"'{key}' {why}" if why else f"'{key}' must be {want}, got {show(value)}"
        ctx.report.error(path, line_of(text, key), message, check)
    return None


def check_file(path: str, ctx: Context) -> None:
    """All frontmatter rules for one memory file."""
    doc = ctx.document(path, CHECK_ID)
    text = ctx.text(path, CHECK_ID)
    if doc is None or text is None or not require_frontmatter(ctx, doc, CHECK_ID):
        return
    meta = doc.meta
    kind = check_type(ctx, path, text, meta, CHECK_ID)
    if kind is not None:
        require_fields(ctx, path, text, meta, kind, CHECK_ID)
    role = meta.get("role")
    if kind == "identity" and role is not None and role not in documents.IDENTITY_ROLES:
        ctx.report.error(
            path,
            line_of(text, "role"),
            f"role {show(role)} must be one of {', '.join(documents.IDENTITY_ROLES)}",
            CHECK_ID,
        )
    for key in (*documents.DATE_FIELDS, *documents.DATETIME_FIELDS):
        date_value(ctx, path, text, meta, key, CHECK_ID)
    check_value_types(ctx, path, text, meta, CHECK_ID)


def check_value_types(
    ctx: Context, path: str, text: str, meta: dict[str, Any], check: str
) -> None:
    """Counts are whole numbers >= 0 and tags a list of strings (seed 000 §2.3): the index
    and the compiler read them as such, and ``tags: notalist`` would be split into letters.
    """
    for key in documents.COUNT_FIELDS:
        value = meta.get(key)
        if value is None:
            continue
        whole = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        if not whole and ctx.first(path, "bad", key):
            ctx.report.error(
                path, line_of(text, key),
                f"'{key}' must be a whole number (0 or more), got {show(value)}", check,
            )
    for key in documents.STRING_LIST_FIELDS:
        value = meta.get(key)
        if value is None:
            continue
        bad = not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, (str, int)) or v == "" for v in value
        )
        if bad and ctx.first(path, "bad", key):
            hint = " (quote values YAML reads as true/false or null)" if isinstance(
                value, list) else ""
            ctx.report.error(
                path, line_of(text, key),
                f"'{key}' must be a list of strings, e.g. [coding, git], got {show(value)}{hint}",
                check,
            )


#: knowledge/ and topics/ names (seed 000 §2: kebab-case, ``_index.md``): a name with
#: spaces or capitals is hard to link (``[[bob-smith]]``) and to type; warned, not refused.
_KEBAB = re.compile(r"(?:_?[a-z0-9]+(?:[-.][a-z0-9]+)*)\.md")
#: Names the layout itself gives in capitals (identity files, MEMORY.md and its archive).
_UPPER_OK = re.compile(r"[A-Z][A-Z0-9_-]*\.md")


def check_name(path: str, ctx: Context) -> None:
    """Warn about a knowledge or topic file name that is not kebab-case."""
    if not path.startswith(("knowledge/", "topics/")):
        return
    name = posixpath.basename(path)
    if _KEBAB.fullmatch(name) or _UPPER_OK.fullmatch(name):
        return
    want = layout.slugify(name.removesuffix(".md")) + ".md"
    ctx.report.warning(path, None, f"file names here are kebab-case (e.g. {want}): "
                       "links and people's names are written that way", CHECK_ID)


def check(paths: Sequence[str], ctx: Context) -> None:
    """Check every memory markdown file among ``paths``."""
    for path in paths:
        # a compressed archive (archive/**.md.gz) is checked as the markdown it holds
        if layout.needs_frontmatter(compression.plain_name(path)):
            check_file(path, ctx)
            if ctx.data(path, CHECK_ID) is not None and path.endswith(".md"):
                check_name(path, ctx)  # deleted: nothing to rename; .gz: refused elsewhere


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Check memory files' YAML frontmatter.")


if __name__ == "__main__":
    raise SystemExit(main())
