"""Dates named in a query, so search can favour what the memory recorded on that day.

"What did we decide on 3 June 2023?" is answered by the journal and the transcripts of
that day; BM25 alone sees only the words "june" and "2023", which every file of that
month shares. Relative phrases ("yesterday", "last week", "two days ago", "in March")
are read against the day the question is asked: today, or what the caller passes as
``now`` (``memory search --now``), so the same words mean the same window in any repo.
A month named without its year ("in June") is the latest such month up to that day in
which what the search found was recorded: an empty window cannot be the one meant, and a
memory imported from earlier years (or asked about a past year's June) holds its June
further back.

``bench/quality/eval_locomo.py`` measures what the dates add to session and turn recall.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Callable, Iterable

from memrepo import clock

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
#: whether the memory holds anything recorded inside a range (see :func:`holding`)
Holds = Callable[[DateRange], bool]


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


_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_NUM = r"(\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_AGO_PHRASE = re.compile(r"\b" + _NUM + r"\s+(day|week|month|year)s?\s+ago\b")
_LAST_UNIT = re.compile(r"\b(last|this|past|previous)\s+(week|weekend|month|year)\b")
_DAY_WORD = re.compile(r"\b(today|yesterday|tonight|this morning|last night)\b")
#: "in March" (no year): the last March up to today. "may" counts only after in/during,
#: since "this may be" is not a month.
_IN_MONTH = re.compile(
    r"\b(in|during|last|this|early|late)\s+" + _MON + r"(?![a-z.]|\s*,?\s*(?:19|20)\d\d)"
)


def _week(day: dt.date) -> DateRange:
    monday = day - dt.timedelta(days=day.weekday())
    return monday, monday + dt.timedelta(days=6)


def _months_back(today: dt.date, n: int) -> DateRange | None:
    y, m = divmod(today.year * 12 + today.month - 1 - n, 12)
    return _month(str(y), m + 1) if y >= 1 else None


def holding(dates: Iterable[str | None]) -> Holds:
    """Whether one of ``dates`` (ISO ``YYYY-MM-DD…``: the files a search found) falls
    inside a range: sorted on the first question (most queries name no month and never
    ask), then a binary search a range."""
    days: list[str] = []
    pending: list[Iterable[str | None]] = [dates]

    def holds(rng: DateRange) -> bool:
        if pending:
            days.extend(sorted({d[:10] for d in pending.pop() if d}))
        i = bisect.bisect_left(days, rng[0].isoformat())
        return i < len(days) and days[i] <= rng[1].isoformat()

    return holds


def _latest_held(month: DateRange, holds: Holds) -> DateRange:
    """``month``, or the same month of the latest earlier year that holds something:
    stepping back a year at a time while anything is recorded before it; ``month``
    itself when no year's does."""
    cur = month
    while not holds(cur):
        first = cur[0]
        if first.year <= 1 or not holds((dt.date.min, first - dt.timedelta(days=1))):
            return month
        cur = _month(str(first.year - 1), first.month) or month
    return cur


def relative_ranges(query: str, today: dt.date, holds: Holds | None = None
                    ) -> list[DateRange]:
    """The windows relative phrases of ``query`` name, read against ``today``; a month
    without its year moved back to the latest year ``holds`` says holds it."""
    text = query.lower()
    out: list[DateRange | None] = []
    for word in _DAY_WORD.findall(text):
        day = today if word in ("today", "tonight", "this morning") else today - dt.timedelta(1)
        out.append((day, day))
    for num, unit in _AGO_PHRASE.findall(text):
        n = int(num) if num.isdigit() else _NUMBERS[num]
        try:
            if unit == "day":
                day = today - dt.timedelta(days=n)
                out.append((day, day))
            elif unit == "week":
                out.append(_week(today - dt.timedelta(weeks=n)))
            elif unit == "month":
                out.append(_months_back(today, n))
            else:
                out.append((dt.date(today.year - n, 1, 1), dt.date(today.year - n, 12, 31)))
        except (ValueError, OverflowError):
            continue
    for which, unit in _LAST_UNIT.findall(text):
        back = 0 if which == "this" else 1
        if which == "past" and unit in ("week", "month"):  # the last 7 / 30 days
            out.append((today - dt.timedelta(days=6 if unit == "week" else 29), today))
        elif unit == "week":
            monday, sunday = _week(today - dt.timedelta(weeks=back))
            out.append((monday, min(sunday, today)))
        elif unit == "weekend":
            monday, _ = _week(today - dt.timedelta(weeks=back))
            out.append((monday + dt.timedelta(5), monday + dt.timedelta(6)))
        elif unit == "month":
            out.append(_months_back(today, back))
        elif today.year - back >= 1:
            out.append((dt.date(today.year - back, 1, 1), dt.date(today.year - back, 12, 31)))
    for lead, name in _IN_MONTH.findall(text):
        if name == "may" and lead not in ("in", "during"):
            continue
        month = _MONTHS[name]
        back = (today.month - month) % 12 or (12 if lead == "last" else 0)
        rng = _months_back(today, back)
        out.append(_latest_held(rng, holds) if rng and holds else rng)
    return [r for r in out if r is not None]


def date_ranges(query: str, today: dt.date | None = None, holds: Holds | None = None
                ) -> list[DateRange]:
    """The calendar days or months ``query`` names: explicitly (with a year), or relative
    to ``today`` (default: the real today; a month without its year, the latest that
    ``holds``). Empty for most queries."""
    text = query.lower()
    out: list[DateRange | None] = []
    out += [_day(y, int(m), d) for y, m, d in _ISO_DAY.findall(text)]
    out += [_day(y, _MONTHS[m], d) for d, m, y in _DAY_MONTH.findall(text)]
    out += [_day(y, _MONTHS[m], d) for m, d, y in _MONTH_DAY.findall(text)]
    if not any(out):  # "June 2023" inside "3 June 2023" is not a second, wider range
        out += [_month(y, _MONTHS[m]) for m, y in _MONTH_YEAR.findall(text)]
        out += [_month(y, int(m)) for y, m in _ISO_MONTH.findall(text)]
    found = [r for r in out if r is not None]
    return found + relative_ranges(query, today or clock.today(), holds)


def window(ranges: list[DateRange]) -> dict[str, str]:
    """What ``--explain`` says about the dates a query named (nothing when none)."""
    if not ranges:
        return {}
    return {"date_window": ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in ranges)}


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
            return (clock.today() - dt.timedelta(days=days)).isoformat()
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
        return dt.datetime.fromisoformat(text).date().isoformat()
    except OverflowError:  # N ago before year 1, or past what a timedelta holds
        raise BadBound(f"{value!r} reaches back before year 1") from None
    except ValueError:
        raise BadBound(
            f"wants a date like 2026-01-31, 2026-01-31T14:00 or 7d, 2w, 3m, 1y; got {value!r}"
        ) from None
