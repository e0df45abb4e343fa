"""Rows on given UTC days (:func:`pipelines.analytics.chunks.in_days`), on hand-made rows."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import polars as pl

from pipelines.analytics.chunks import in_days

NY = ZoneInfo("America/New_York")


def test_a_zoned_time_falls_on_its_utc_day() -> None:
    """In New York (UTC-5 in January): row 0, 2026-01-01 19:30 local, is 2026-01-02 00:30 UTC,
    so on UTC day 2 though its local day is 1; row 1, 2026-01-01 18:59 local, is 23:59 UTC on
    day 1; row 2 has no time and is on no day. No day given: no row."""
    frame = pl.DataFrame(
        {
            "i": [0, 1, 2],
            "t": [
                dt.datetime(2026, 1, 1, 19, 30, tzinfo=NY),
                dt.datetime(2026, 1, 1, 18, 59, tzinfo=NY),
                None,
            ],
        },
        schema={"i": pl.Int64, "t": pl.Datetime("us", "America/New_York")},
    )
    day1, day2 = dt.date(2026, 1, 1), dt.date(2026, 1, 2)
    assert frame.filter(in_days("t", {day2}))["i"].to_list() == [0]
    assert frame.filter(in_days("t", {day1}))["i"].to_list() == [1]
    assert frame.filter(in_days("t", {day1, day2}))["i"].to_list() == [0, 1]
    assert frame.filter(in_days("t", set()))["i"].to_list() == []
