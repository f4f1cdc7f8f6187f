"""Dates named in a query, so search can favour what the memory recorded on that day.

"What did we decide on 3 June 2023?" is answered by the journal and the transcripts of
that day; BM25 alone sees only the words "june" and "2023", which every file of that
month shares. Only explicit calendar dates count (with a year): relative phrases
("last week") depend on when the question was asked, which search does not know.

Measured on LoCoMo dev (bench/eval_locomo.py): session R@5 +0.5, turn R@10 +0.3.
"""

from __future__ import annotations

import datetime as dt
import re

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MON = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_ISO_DAY = re.compile(r"\b" + _YEAR + r"[-/](\d{1,2})[-/](\d{1,2})\b")
_ISO_MONTH = re.compile(r"\b" + _YEAR + r"-(\d{1,2})\b(?![-/]\d)")
_DAY_MONTH = re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MON + r",?\s+" + _YEAR + r"\b")
_MONTH_DAY = re.compile(r"\b" + _MON + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b")
_MONTH_YEAR = re.compile(r"\b" + _MON + r",?\s+" + _YEAR + r"\b")

DateRange = tuple[dt.date, dt.date]


def _day(y: str, m: int, d: str) -> DateRange | None:
    try:
        day = dt.date(int(y), m, int(d))
    except ValueError:
        return None
    return day, day


def _month(y: str, m: int) -> DateRange | None:
    if not 1 <= m <= 12:
        return None
    first = dt.date(int(y), m, 1)
    nxt = dt.date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return first, nxt - dt.timedelta(days=1)


def date_ranges(query: str) -> list[DateRange]:
    """The calendar days or months ``query`` names explicitly (empty for most queries)."""
    text = query.lower()
    out: list[DateRange | None] = []
    out += [_day(y, int(m), d) for y, m, d in _ISO_DAY.findall(text)]
    out += [_day(y, _MONTHS[m], d) for d, m, y in _DAY_MONTH.findall(text)]
    out += [_day(y, _MONTHS[m], d) for m, d, y in _MONTH_DAY.findall(text)]
    if not any(out):  # "June 2023" inside "3 June 2023" is not a second, wider range
        out += [_month(y, _MONTHS[m]) for m, y in _MONTH_YEAR.findall(text)]
        out += [_month(y, int(m)) for y, m in _ISO_MONTH.findall(text)]
    return [r for r in out if r is not None]


def in_ranges(date: str | None, ranges: list[DateRange]) -> bool:
    """Whether an ISO date (``YYYY-MM-DD…``) falls inside one of ``ranges``."""
    if not date or not ranges:
        return False
    try:
        day = dt.date.fromisoformat(date[:10])
    except ValueError:
        return False
    return any(a <= day <= b for a, b in ranges)


#: ``7d``, ``2w``, ``3m``, ``1y``: that long ago.
_AGO = re.compile(r"^(\d+)([dwmy])$")


class BadBound(ValueError):
    """A ``--since`` / ``--until`` value that is not a date; the message says what is."""


def parse_bound(value: str) -> str:
    """A ``since`` / ``until`` filter as ``YYYY-MM-DD``: a date, an ISO datetime, or N days,
    weeks, months or years ago. The whole string is checked (a typo in the time must not
    pass because only the date part is used)."""
    text = value.strip()
    m = _AGO.match(text)
    try:
        if m:
            days = int(m.group(1)) * {"d": 1, "w": 7, "m": 30, "y": 365}[m.group(2)]
            return (dt.date.today() - dt.timedelta(days=days)).isoformat()
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
        return dt.datetime.fromisoformat(text).date().isoformat()
    except OverflowError:  # N ago before year 1, or past what a timedelta holds
        raise BadBound(f"{value!r} reaches back before year 1") from None
    except ValueError:
        raise BadBound(
            f"wants a date like 2026-01-31, 2026-01-31T14:00 or 7d, 2w, 3m, 1y; got {value!r}"
        ) from None
