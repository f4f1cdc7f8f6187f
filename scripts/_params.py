"""Click parameter types and options that several commands declare the same way."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from memrepo.documents import date_range_problem, parse_date


class DateParam(click.ParamType):
    """A ``YYYY-MM-DD`` option value: a bad one is a usage error, never a traceback."""

    name = "date"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> dt.date:
        day = parse_date(value)
        if day is None:
            self.fail(f"{value!r} is not a date (expected YYYY-MM-DD)", param, ctx)
        why = date_range_problem(day)
        if why:
            self.fail(why, param, ctx)
        return day


#: The lifecycle commands' dates (condense, tag, prune, extract --since).
DATE = DateParam()

#: ``--offline`` of the commands whose offline path is the extraction heuristics.
offline_heuristics = click.option("--offline", is_flag=True,
                                  help="No LLM: the heuristics only.")
