"""The complete-period rule (metrics.periods, METRICS.md "Complete periods"), hand-checked."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from metrics.periods import (
    covered_hours,
    is_complete,
    latest_complete_week,
    mark_complete,
    scope_bounds,
    week_start,
)

UTC = dt.UTC


def t(day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    """A time in November 2026 (2026-11-02, -09 and -16 are Mondays)."""
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def test_week_start_is_the_monday_at_or_before() -> None:
    assert week_start(t(16, 4, 48)) == t(16)
    assert week_start(t(15, 23)) == t(9)
    assert week_start(t(9)) == t(9)
    assert week_start(dt.datetime(2026, 11, 11, 12)) == t(9)  # naive = UTC


def test_the_bundled_fleets_partial_week() -> None:
    """Data from Mon 2 Nov to Mon 16 Nov 04:48: the week of 16 Nov is partial (4.8 h), the
    week of 9 Nov is the latest complete one."""
    as_of, start = t(16, 4, 48), t(2)
    assert latest_complete_week(as_of, start) == t(9)
    assert not is_complete(t(16), t(23), as_of=as_of, data_from=start)
    assert covered_hours(t(16), t(23), as_of=as_of, data_from=start) == pytest.approx(4.8)
    assert is_complete(t(9), t(16), as_of=as_of, data_from=start)
    assert is_complete(t(2), t(9), as_of=as_of, data_from=start)


def test_a_cut_off_on_monday_midnight_completes_the_week_before() -> None:
    assert latest_complete_week(t(16)) == t(9)
    assert is_complete(t(9), t(16), as_of=t(16))


def test_data_starting_mid_week_leave_that_week_partial() -> None:
    """Data from Wed 4 Nov 12:00: the week of 2 Nov covers 108 of 168 h and is partial."""
    assert not is_complete(t(2), t(9), as_of=t(20), data_from=t(4, 12))
    assert covered_hours(t(2), t(9), as_of=t(20), data_from=t(4, 12)) == pytest.approx(108.0)
    assert latest_complete_week(t(10), data_from=t(4, 12)) is None
    assert latest_complete_week(t(17), data_from=t(4, 12)) == t(9)


def test_no_data_is_never_complete() -> None:
    assert not is_complete(t(2), t(9), as_of=None)
    assert latest_complete_week(None) is None
    assert covered_hours(t(2), t(9), as_of=None) == 0.0


def test_a_scope_is_complete_only_where_every_cluster_is() -> None:
    """Two clusters: the earliest cut-off and the latest start bound the scope."""
    cut, begin = scope_bounds([t(16, 4, 48), t(15, 12)], [t(2), t(3)])
    assert (cut, begin) == (t(15, 12), t(3))
    # The week of 9 Nov ends after the scope's cut-off; the week of 2 Nov began before the
    # second cluster's data: no complete week yet.
    assert latest_complete_week(cut, begin) is None
    assert latest_complete_week(*scope_bounds([t(16, 4, 48), t(16, 1)], [t(2), t(2)])) == t(9)
    assert scope_bounds([t(16), None], [t(2)]) == (None, t(2))
    assert scope_bounds([], []) == (None, None)


def test_mark_complete_marks_each_week_with_its_covered_hours() -> None:
    frame = pl.DataFrame({"week": [t(2), t(9), t(16)], "jain": [0.96, 0.73, 0.18]})
    out = mark_complete(frame, as_of=t(16, 4, 48), data_from=t(2))
    assert out["complete"].to_list() == [True, True, False]
    assert out["covered_h"].to_list() == pytest.approx([168.0, 168.0, 4.8])
    days = mark_complete(
        pl.DataFrame({"day": [t(15), t(16)]}), as_of=t(16, 4, 48), start="day",
        length=dt.timedelta(days=1),
    )  # fmt: skip
    assert days["complete"].to_list() == [True, False]
