"""Complete and partial periods: the one rule every page, report, KPI and recommendation uses.

A period ``[start, end)`` (a UTC day, an ISO week: Monday 00:00 UTC to the next Monday) is
**complete** when the loaded data cover all of it: the data cut-off ``as_of`` (the latest time
the loaded data know, the ``as_of`` column every view carries) is at or after ``end``, and the
data begin (the first hour with capacity) is at or before ``start``. A scope of several clusters
is complete only when each of them is: its cut-off is the earliest of theirs, its begin the
latest (METRICS.md, "Complete periods").

Every surface shows the latest complete period by default; a partial one is shown only when
picked, marked with how many of its hours the data cover, and never compared as if whole.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import polars as pl

__all__ = [
    "DAY",
    "WEEK",
    "covered_hours",
    "is_complete",
    "latest_complete_week",
    "mark_complete",
    "scope_bounds",
    "week_start",
]

DAY = dt.timedelta(days=1)
WEEK = dt.timedelta(days=7)
_UTC = dt.UTC


def _utc(t: dt.datetime) -> dt.datetime:
    return t.replace(tzinfo=_UTC) if t.tzinfo is None else t.astimezone(_UTC)


def week_start(t: dt.datetime) -> dt.datetime:
    """The Monday 00:00 UTC at or before ``t`` (the start of its ISO week); naive = UTC."""
    u = _utc(t)
    day = u.date() - dt.timedelta(days=u.weekday())
    return dt.datetime(day.year, day.month, day.day, tzinfo=_UTC)


def is_complete(
    start: dt.datetime,
    end: dt.datetime,
    *,
    as_of: dt.datetime | None,
    data_from: dt.datetime | None = None,
) -> bool:
    """Whether the data cover ``[start, end)`` whole: ``data_from ≤ start`` and ``as_of ≥ end``.

    Args:
        start: the period's first instant (naive = UTC).
        end: the instant after its last (exclusive).
        as_of: the scope's data cut-off; ``None`` (no data) is never complete.
        data_from: the scope's first data time; ``None`` = not checked.
    """
    if as_of is None:
        return False
    if data_from is not None and _utc(data_from) > _utc(start):
        return False
    return _utc(as_of) >= _utc(end)


def covered_hours(
    start: dt.datetime,
    end: dt.datetime,
    *,
    as_of: dt.datetime | None,
    data_from: dt.datetime | None = None,
) -> float:
    """Hours of ``[start, end)`` inside ``[data_from, as_of]`` (0 when disjoint or no data)."""
    if as_of is None:
        return 0.0
    lo = max(_utc(start), _utc(data_from)) if data_from is not None else _utc(start)
    hi = min(_utc(end), _utc(as_of))
    return max(0.0, (hi - lo).total_seconds() / 3600.0)


def latest_complete_week(
    as_of: dt.datetime | None, data_from: dt.datetime | None = None
) -> dt.datetime | None:
    """Monday 00:00 UTC of the latest ISO week the data cover whole, or ``None`` if none.

    It is the week before the one holding ``as_of`` (or the week ending at ``as_of`` when
    ``as_of`` is itself a Monday 00:00), provided the data began by its Monday.

    Example: ``as_of`` = Mon 2026-11-16 04:48 → the week of 2026-11-09; ``as_of`` = Mon
    2026-11-16 00:00 → also 2026-11-09; ``as_of`` = Sun 2026-11-15 23:00 → 2026-11-02.
    """
    if as_of is None:
        return None
    start = week_start(as_of) - WEEK
    return start if is_complete(start, start + WEEK, as_of=as_of, data_from=data_from) else None


def scope_bounds(
    as_of: Iterable[dt.datetime | None], data_from: Iterable[dt.datetime | None] = ()
) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``(as_of, data_from)`` of a scope of clusters: the earliest cut-off, the latest begin.

    A cluster with no cut-off (``None``) makes the scope's cut-off ``None``: nothing in it is
    complete until every cluster has data.
    """
    cuts = list(as_of)
    known = [_utc(c) for c in cuts if c is not None]
    froms = [_utc(d) for d in data_from if d is not None]
    cut = min(known) if known and len(known) == len(cuts) else None
    return cut, (max(froms) if froms else None)


def mark_complete(
    frame: pl.DataFrame,
    *,
    as_of: dt.datetime | None,
    data_from: dt.datetime | None = None,
    start: str = "week",
    length: dt.timedelta = WEEK,
) -> pl.DataFrame:
    """``frame`` with ``complete`` (Boolean) and ``covered_h`` (Float64) per period row.

    Args:
        frame: rows keyed by a period start column (a naive-UTC or aware Datetime).
        as_of: the scope's data cut-off (:func:`scope_bounds`).
        data_from: the scope's first data time.
        start: the period start column.
        length: the period's length (:data:`WEEK`, :data:`DAY`).

    Raises:
        polars.exceptions.ColumnNotFoundError: no column ``start``.
    """
    starts: list[dt.datetime | None] = frame[start].to_list()
    complete = [
        s is not None and is_complete(s, s + length, as_of=as_of, data_from=data_from)
        for s in starts
    ]
    hours = [
        covered_hours(s, s + length, as_of=as_of, data_from=data_from) if s is not None else 0.0
        for s in starts
    ]
    return frame.with_columns(
        pl.Series("complete", complete, dtype=pl.Boolean),
        pl.Series("covered_h", hours, dtype=pl.Float64),
    )
