"""The days an incremental build plans for attempts ending between two cut-offs
(``pipelines.analytics.incremental._cutoff_crossed_days``), on literal frames."""

from __future__ import annotations

import datetime as dt

import polars as pl

from pipelines.analytics.incremental import _cutoff_crossed_days

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")


def _t(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, day, hour, tzinfo=UTC)


def _cuts(rows: list[tuple[str, dt.datetime]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"cluster": pl.String(), "as_of": TS}, orient="row")


def _jobs() -> pl.DataFrame:
    """k: A starts day 5 and ends day 6 11:00; B starts day 2 and ends day 5 09:00; C starts
    day 5 and ends day 7; D starts day 1 and ends exactly at the earlier cut-off (day 5
    10:00); E starts day 3 and ends exactly at the later one (day 6 12:00). s: F starts day 1
    and ends day 3 (its cluster's cut-off does not move)."""
    rows = [
        ("k", _t(5, 8), _t(6, 11)),
        ("k", _t(2), _t(5, 9)),
        ("k", _t(5), _t(7)),
        ("k", _t(1), _t(5, 10)),
        ("k", _t(3, 1), _t(6, 12)),
        ("s", _t(1), _t(3)),
    ]
    return pl.DataFrame(
        rows, schema={"cluster": pl.String(), "start_at": TS, "end_at": TS}, orient="row"
    )


def test_attempts_ending_between_the_cut_offs_plan_every_day_they_ran() -> None:
    """k's cut-off moves from day 5 10:00 to day 6 12:00. A (ends day 6 11:00, between) plans
    days 5-6; E ends exactly at the new cut-off (ended at it, running at the old one) and plans
    days 3-6. Not planned: B ended before both (it would add day 2), C after both (day 7), D
    exactly at the earlier one, ended at both (days 1-2). s's cut-off did not move: nothing.
    So {3, 4, 5, 6}: days 3-4 only through E, and any of B, C, D wrongly taken adds a day."""
    old = _cuts([("k", _t(5, 10)), ("s", _t(3))])
    new = _cuts([("k", _t(6, 12)), ("s", _t(3))])
    days = _cutoff_crossed_days(_jobs(), new, old)
    assert days == {"k": {dt.date(2026, 1, d) for d in (3, 4, 5, 6)}}


def test_a_cut_off_moved_back_plans_the_same_days() -> None:
    """A deleted load moves k's cut-off back from day 6 12:00 to day 5 10:00: the same
    attempts change (A and E), so the same days, {3, 4, 5, 6}."""
    old = _cuts([("k", _t(6, 12))])
    new = _cuts([("k", _t(5, 10))])
    days = _cutoff_crossed_days(_jobs(), new, old)
    assert days == {"k": {dt.date(2026, 1, d) for d in (3, 4, 5, 6)}}


def test_a_new_cluster_or_no_move_plans_nothing() -> None:
    """A cluster with no earlier cut-off (all its rows are new, planned as changed rows) and a
    cut-off that did not move add no day; nor does an empty set of attempts."""
    new = _cuts([("k", _t(6, 12)), ("s", _t(3))])
    assert _cutoff_crossed_days(_jobs(), new, _cuts([("s", _t(3))])) == {}
    assert _cutoff_crossed_days(_jobs().clear(), new, _cuts([("k", _t(1))])) == {}
