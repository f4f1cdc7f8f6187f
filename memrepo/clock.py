"""What time it is for the memory: the wall clock, or ``$MEMREPO_NOW`` when a replay sets it.

Every date memrepo writes or weighs (turn stamps, journal days, recency, signal ages, the
scheduler's "due", commit dates) reads :func:`now` / :func:`today`, so one variable moves
the whole toolkit to another time: the lived-memory harness replays months of sessions,
each command at its session's date (bench/quality/lived.py). Durations that guard the
machine (lock ages, deadlines, idle timeouts) keep reading the real clock.
"""

from __future__ import annotations

import datetime as dt
import os

from memrepo.errors import MemrepoError

#: An ISO 8601 date or date-time (``2023-05-08`` or ``2023-05-08T13:56``; without an
#: offset it is local time): every command run with it takes that instant as now.
NOW_ENV = "MEMREPO_NOW"


def _fixed() -> dt.datetime | None:
    raw = os.environ.get(NOW_ENV, "").strip()
    if not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise MemrepoError(f"${NOW_ENV} {raw!r} is not an ISO 8601 date or date-time "
                           "(e.g. 2023-05-08T13:56)") from None
    return when if when.tzinfo else when.astimezone()


def now() -> dt.datetime:
    """Now, aware, in local time (or ``$MEMREPO_NOW``)."""
    fixed = _fixed()
    return fixed.astimezone() if fixed else dt.datetime.now().astimezone()


def today() -> dt.date:
    """Today's local date (or the date of ``$MEMREPO_NOW``)."""
    return now().date()


def git_dates() -> dict[str, str]:
    """Author and committer dates for git when ``$MEMREPO_NOW`` is set (else nothing):
    the memory's history says when, in its own time, each thing was written."""
    fixed = _fixed()
    if fixed is None:
        return {}
    stamp = fixed.isoformat(timespec="seconds")
    return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
