"""The Overview's answers as pure functions: KM time to start with its CI, the window rule."""

from __future__ import annotations

import datetime as dt
import math

import polars as pl
import pytest

from metrics.headlines import (
    AVOIDABLE_LEAVES,
    MIN_KM_JOBS,
    Z_95,
    km_quantile_ci,
    overview_window,
    wait_summary,
)

UTC = dt.UTC


def _spells(durations: list[float], started: list[bool | None]) -> pl.LazyFrame:
    return pl.LazyFrame(
        {"duration_s": durations, "started": started},
        schema={"duration_s": pl.Float64, "started": pl.Boolean},
    )


#: Five waits: starts at 1, 2, 3 and 5 h, one censored at 4 h; one never-eligible spell.
FIVE = _spells(
    [3600.0, 7200.0, 10800.0, 14400.0, 18000.0, None], [True, True, True, False, True, None]
)  # type: ignore[list-item]


def test_km_summary_counts_jobs_censored_and_excluded() -> None:
    """n = the eligible spells (5: four starts, one censored); the never-eligible one is
    excluded. S: 4/5 = 0.8 at 1 h, 0.6 at 2 h, 0.4 at 3 h (p50 = 3 h), 0 at 5 h (p90 = 5 h)."""
    got = wait_summary(FIVE, min_jobs=5)
    assert (got.jobs, got.events, got.censored, got.excluded) == (5, 4, 1, 1)
    assert got.p50_s == 10800.0 and got.p90_s == 18000.0
    assert got.enough is True and got.min_jobs == 5


def test_km_median_ci_by_greenwood_hand_computed() -> None:
    """Greenwood sums Σ d/(n(n−d)): 1/(5·4) = 0.05 at 1 h, + 1/(4·3) → 0.1333 at 2 h,
    + 1/(3·2) → 0.3 at 3 h. Lower band S·exp(−z√Σ): 0.8·exp(−1.96·0.2236) = 0.516 > 0.5 at
    1 h, 0.6·exp(−1.96·0.3651) = 0.293 ≤ 0.5 at 2 h → lower end 2 h. Upper band
    S·exp(+z√Σ) clipped to 1: 1, 1, min(1, 0.4·2.93) = 1 until S = 0 at 5 h → upper end 5 h."""
    assert 0.8 * math.exp(-Z_95 * math.sqrt(0.05)) > 0.5
    assert 0.6 * math.exp(-Z_95 * math.sqrt(1 / 20 + 1 / 12)) <= 0.5
    assert 0.4 * math.exp(Z_95 * math.sqrt(0.3)) > 1.0
    eligible = FIVE.filter(pl.col("started").is_not_null())
    assert km_quantile_ci(eligible, 0.5) == (7200.0, 18000.0)
    assert wait_summary(FIVE).p50_ci_s == (7200.0, 18000.0)


def test_km_p90_ci_and_a_curve_that_never_reaches_it() -> None:
    """Three starts at 1, 2, 3 h and two censored at 4 h: S ends at 0.4, so p90 is NULL with
    the reason, its CI open (lower band 0.4·exp(−1.96·√0.3) = 0.137 > 0.1 → no lower end)."""
    spells = _spells([3600.0, 7200.0, 10800.0, 14400.0, 14400.0], [True, True, True, False, False])
    got = wait_summary(spells)
    assert (
        got.p90_s is None and got.p90_reason is not None and "never reaches 0.1" in (got.p90_reason)
    )
    assert got.p90_ci_s == (None, None)
    assert got.censored == 2 and got.jobs == 5


def test_too_few_jobs_below_the_minimum() -> None:
    """Below MIN_KM_JOBS (10) eligible spells the summary is not ``enough``; at 10 it is."""
    assert MIN_KM_JOBS == 10
    assert wait_summary(FIVE).enough is False
    ten = _spells([60.0 * i for i in range(1, 11)], [True] * 10)
    got = wait_summary(ten)
    assert got.enough is True and got.jobs == 10 and got.p90_s == 540.0


def test_no_spells() -> None:
    """No eligible spell: zero counts, no percentiles, the reason says so."""
    got = wait_summary(_spells([], []))
    assert (got.jobs, got.censored, got.p90_s, got.p90_reason) == (0, 0, None, "no eligible spells")


def test_avoidable_leaves() -> None:
    """Lost work (3–6), allocated-idle (8) and held (10); not down, cancelled, goodput, idle."""
    assert AVOIDABLE_LEAVES == (
        "failed_work_infra", "failed_work_user", "preempted_work", "timeout_work",
        "allocated_idle", "held",
    )  # fmt: skip


def test_default_window_is_the_latest_complete_week() -> None:
    """Data from Mon 2 Nov to Wed 18 Nov 04:00: the filter at its default gives the week of
    9 Nov, complete, compared with the week of 2 Nov (also complete)."""
    as_of = dt.datetime(2026, 11, 18, 4, tzinfo=UTC)
    begin = dt.datetime(2026, 11, 2, tzinfo=UTC)
    w = overview_window(
        (None, None), (dt.date(2026, 11, 2), dt.date(2026, 11, 18)), as_of=as_of, data_from=begin
    )
    assert (w.start, w.end) == (
        dt.datetime(2026, 11, 9, tzinfo=UTC),
        dt.datetime(2026, 11, 16, tzinfo=UTC),
    )
    assert w.previous_start == begin
    assert w.latest_complete_week and w.complete and w.previous_complete and w.comparable
    assert w.hours == 168.0 and w.covered_h == 168.0


def test_picked_partial_window_is_not_comparable() -> None:
    """Picked days 16–18 Nov with data to 18 Nov 04:00: 52 of 72 h covered, partial; the
    previous 3 days (13–15 Nov) are complete but nothing is compared."""
    as_of = dt.datetime(2026, 11, 18, 4, tzinfo=UTC)
    w = overview_window(
        (dt.date(2026, 11, 16), None),
        (dt.date(2026, 11, 2), dt.date(2026, 11, 18)),
        as_of=as_of,
        data_from=dt.datetime(2026, 11, 2, tzinfo=UTC),
    )
    assert (w.start, w.end) == (
        dt.datetime(2026, 11, 16, tzinfo=UTC),
        dt.datetime(2026, 11, 19, tzinfo=UTC),
    )
    assert w.previous_start == dt.datetime(2026, 11, 13, tzinfo=UTC)
    assert not w.complete and w.previous_complete and not w.comparable
    assert w.covered_h == pytest.approx(52.0) and not w.latest_complete_week


def test_no_complete_week_falls_back_to_every_day() -> None:
    """Two days of data: no complete week, so the default window is every day with data."""
    w = overview_window(
        (None, None),
        (dt.date(2026, 11, 1), dt.date(2026, 11, 3)),
        as_of=dt.datetime(2026, 11, 3, 12, tzinfo=UTC),
        data_from=dt.datetime(2026, 11, 1, 6, tzinfo=UTC),
    )
    assert (w.start, w.end) == (
        dt.datetime(2026, 11, 1, tzinfo=UTC),
        dt.datetime(2026, 11, 4, tzinfo=UTC),
    )
    assert not w.latest_complete_week and not w.complete and w.covered_h == pytest.approx(54.0)
