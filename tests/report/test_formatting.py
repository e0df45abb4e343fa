"""Number, duration and date formatting shared by the dashboard, the reports and the CLI."""

from __future__ import annotations

import datetime as dt

from pipelines.report import _common
from pipelines.report.formatting import (
    fmt_date,
    fmt_duration,
    fmt_gpu_h,
    fmt_hours,
    fmt_number,
    fmt_pct,
)


def test_gpu_hours_have_thousands_separators_and_no_decimals() -> None:
    """21728.4 GPU-hours read ``21,728``; a negative value keeps its sign."""
    assert fmt_gpu_h(21728.4) == "21,728"
    assert fmt_gpu_h(-1234.6) == "-1,235"


def test_small_gpu_hours_keep_one_decimal() -> None:
    """Below 10 GPU-hours one decimal stays, so 0.4 does not read as 0."""
    assert fmt_gpu_h(0.44) == "0.4"
    assert fmt_gpu_h(9.96) == "10.0"


def test_missing_values_read_n_a() -> None:
    """``None`` and NaN are ``n/a`` in every helper."""
    nan = float("nan")
    assert {fmt_gpu_h(None), fmt_gpu_h(nan), fmt_pct(None), fmt_number(nan)} == {"n/a"}
    assert {fmt_hours(None), fmt_duration(None), fmt_date(None)} == {"n/a"}


def test_percentages_from_fractions() -> None:
    """A share is a fraction in the engine and a percentage for a reader."""
    assert fmt_pct(0.4969) == "49.7 %"
    assert fmt_pct(1.0, digits=0) == "100 %"


def test_durations_for_a_reader_in_minutes_hours_or_days() -> None:
    """45 min under an hour, hours under three days, days from three days up."""
    assert fmt_hours(2700) == "45 min"
    assert fmt_hours(90_000) == "25.0 h"
    assert fmt_hours(302_400) == "3.5 d"


def test_durations_as_slurm_prints_them() -> None:
    """90000 s is one day and one hour: ``1-01:00:00``."""
    assert fmt_duration(90_000) == "1-01:00:00"
    assert fmt_duration(59) == "00:00:59"


def test_weeks_and_days_are_dates_not_timestamps() -> None:
    """A week (its Monday, an aware UTC instant) reads ``2026-11-09``; a date reads the same."""
    monday = dt.datetime(2026, 11, 9, tzinfo=dt.UTC)
    assert fmt_date(monday) == "2026-11-09"
    assert fmt_date(dt.date(2026, 11, 9)) == "2026-11-09"
    east = dt.datetime(2026, 11, 9, 1, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert fmt_date(east) == "2026-11-08"


def test_the_reports_use_the_same_helpers() -> None:
    """``pipelines.report._common`` re-exports the one implementation, not a copy."""
    assert _common.fmt_pct is fmt_pct
    assert _common.fmt_hours is fmt_hours
    assert _common.fmt_number is fmt_number
    assert _common.fmt_duration is fmt_duration
