"""The Overview's four answers as pure functions: waste leaves, and KM time to start with its CI.

METRICS.md "Dashboard and report figures": **avoidable waste** is the part of the waterfall a
scheduler or team could have turned into goodput; the **large-job time to start** tile gives the
Kaplan–Meier p50/p90 with a confidence interval and a minimum number of jobs below which it says
"too few jobs" instead of a percentile.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

import polars as pl

from metrics.periods import DAY, covered_hours, is_complete, latest_complete_week
from metrics.schema import LOSS_LEAVES
from metrics.survival import DURATION_S, STARTED, kaplan_meier, wait_percentiles_km

__all__ = [
    "AVOIDABLE_LEAVES",
    "MIN_KM_JOBS",
    "Z_95",
    "WaitSummary",
    "Window",
    "km_quantile_ci",
    "overview_window",
    "wait_summary",
]

#: Waterfall leaves counted as avoidable waste (METRICS.md): lost work (leaves 3–6: failed
#: infrastructure and user work, preempted, timed out), allocated but idle (8), and held
#: capacity (10: idle while eligible GPU jobs were pending). Not waste: down and planned_down
#: (capacity out of service), cancelled work (neutral, METRICS.md), goodput, idle (no demand).
AVOIDABLE_LEAVES: tuple[str, ...] = (*LOSS_LEAVES, "allocated_idle", "held")

#: Fewest jobs (eligible waiting spells) for which the Overview shows a time-to-start percentile
#: or compares two periods' percentiles (METRICS.md "Dashboard and report figures").
MIN_KM_JOBS = 10

#: The normal quantile of a two-sided 95 % interval.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class WaitSummary:
    """Kaplan–Meier time to start of one group of waiting spells.

    Attributes:
        jobs: eligible spells (started + censored); excluded spells are not counted.
        events: spells that started by the cut-off.
        censored: spells still waiting at the cut-off or cancelled while waiting.
        excluded: never-eligible spells (counted, not used).
        p50_s: KM median wait (seconds), ``None`` when the curve never reaches 0.5.
        p90_s: KM p90 wait, ``None`` when the curve never reaches 0.1.
        p50_ci_s: 95 % CI of the median, ``(lower, upper)``; an end is ``None`` when unbounded.
        p90_ci_s: 95 % CI of the p90.
        p90_reason: why ``p90_s`` is ``None`` (``None`` when it exists).
        enough: ``jobs ≥ min_jobs``: the percentiles may be shown and compared.
        min_jobs: the threshold used.
    """

    jobs: int
    events: int
    censored: int
    excluded: int
    p50_s: float | None
    p90_s: float | None
    p50_ci_s: tuple[float | None, float | None]
    p90_ci_s: tuple[float | None, float | None]
    p90_reason: str | None
    enough: bool
    min_jobs: int


def km_quantile_ci(
    spells: pl.LazyFrame, q: float, z: float = Z_95
) -> tuple[float | None, float | None]:
    """Confidence interval of the Kaplan–Meier ``q``-quantile of one group of spells.

    Greenwood's variance of S(t), Var = S(t)² Σ_{tᵢ ≤ t} dᵢ / (nᵢ (nᵢ − dᵢ)) [Greenwood 1926],
    gives a pointwise interval on the log scale, S(t) · exp(± z √Σ dᵢ / (nᵢ (nᵢ − dᵢ))) clipped
    to [0, 1] (R ``survival::survfit``'s default ``conf.type = "log"``); once S(t) = 0 both
    ends are 0. The quantile's interval is the times where that band crosses 1 − q
    [Brookmeyer & Crowley 1982, as R's ``quantile.survfit``]: lower = the first duration whose
    lower band is ≤ 1 − q, upper = the first whose upper band is ≤ 1 − q (``None`` when it never
    is: the interval is open above).

    Args:
        spells: :func:`metrics.wait_spells` output of one group.
        q: the quantile, in (0, 1).
        z: the normal quantile of the interval (default 95 %).

    Returns:
        ``(lower_s, upper_s)``; ``(None, None)`` for no eligible spells.

    Raises:
        ValueError: ``q`` outside (0, 1).
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q} is not in (0, 1)")
    curve = kaplan_meier(spells).collect()
    if curve.height == 0:
        return None, None
    n, d = pl.col("at_risk"), pl.col("events")
    term = pl.when(d == 0).then(0.0).when(n == d).then(math.inf).otherwise(d / (n * (n - d)))
    spread = z * term.cum_sum().sqrt()
    s = pl.col("survival")
    band = curve.with_columns(
        pl.when(s <= 0).then(0.0).otherwise(s * (-spread).exp()).alias("lo"),
        pl.when(s <= 0).then(0.0).otherwise((s * spread.exp()).clip(None, 1.0)).alias("hi"),
    )
    target = 1.0 - q + 1e-9

    def first(col: str) -> float | None:
        hit = band.filter(pl.col(col) <= target)
        return float(hit[DURATION_S].min()) if hit.height else None  # type: ignore[arg-type]

    return first("lo"), first("hi")


def wait_summary(spells: pl.LazyFrame, min_jobs: int = MIN_KM_JOBS) -> WaitSummary:
    """KM p50/p90 of one group of waiting spells, with counts and 95 % CIs (:func:`km_quantile_ci`).

    Args:
        spells: :func:`metrics.wait_spells` output (``duration_s``, ``started``), one group.
        min_jobs: the fewest eligible spells for ``enough``.
    """
    pct = wait_percentiles_km(spells, quantiles=(0.5, 0.9)).collect()
    if pct.height == 0:
        return WaitSummary(0, 0, 0, 0, None, None, (None, None), (None, None),
                           "no eligible spells", False, min_jobs)  # fmt: skip
    r = pct.row(0, named=True)
    jobs = int(r["spells"])
    eligible = spells.filter(pl.col(STARTED).is_not_null())
    return WaitSummary(
        jobs=jobs,
        events=int(r["events"]),
        censored=int(r["censored"]),
        excluded=int(r["excluded"]),
        p50_s=r["km_p50_s"],
        p90_s=r["km_p90_s"],
        p50_ci_s=km_quantile_ci(eligible, 0.5),
        p90_ci_s=km_quantile_ci(eligible, 0.9),
        p90_reason=r["km_p90_reason"],
        enough=jobs >= min_jobs,
        min_jobs=min_jobs,
    )


@dataclass(frozen=True)
class Window:
    """The period the Overview's answers cover, ``[start, end)`` in UTC, and the one before it.

    Attributes:
        start: the first instant.
        end: the instant after the last.
        previous_start: ``start − (end − start)``: the previous period of equal length ends at
            ``start``.
        complete: the data cover the whole window (:func:`metrics.periods.is_complete`).
        covered_h: hours of the window the data cover.
        previous_complete: the data cover the whole previous period.
        latest_complete_week: the window is the latest complete ISO week, chosen by default.
    """

    start: dt.datetime
    end: dt.datetime
    previous_start: dt.datetime
    complete: bool
    covered_h: float
    previous_complete: bool
    latest_complete_week: bool

    @property
    def hours(self) -> float:
        """The window's length in hours."""
        return (self.end - self.start).total_seconds() / 3600.0

    @property
    def comparable(self) -> bool:
        """Both periods are complete: only then is a change shown (METRICS.md "Complete
        periods")."""
        return self.complete and self.previous_complete


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def overview_window(
    picked: tuple[dt.date | None, dt.date | None],
    days: tuple[dt.date, dt.date],
    *,
    as_of: dt.datetime | None,
    data_from: dt.datetime | None,
) -> Window:
    """The Overview's window: the latest complete ISO week while the date filter is at its
    default, else the picked UTC days (first day 00:00 to the day after the last).

    With the filter at its default and no complete week yet, the window is every day with data,
    marked partial (the page says so in a banner).

    Args:
        picked: the date filter's ``(start, end)`` days, ``None`` where at its default.
        days: the first and last UTC day with data (the filter's bounds).
        as_of: the scope's data cut-off (:func:`metrics.periods.scope_bounds`).
        data_from: the scope's first hour with capacity.
    """
    lo, hi = picked
    week = latest_complete_week(as_of, data_from) if lo is None and hi is None else None
    if week is not None:
        start, end = week, week + 7 * DAY
    else:
        start, end = _midnight(lo or days[0]), _midnight(hi or days[1]) + DAY
    before = start - (end - start)
    return Window(
        start=start,
        end=end,
        previous_start=before,
        complete=is_complete(start, end, as_of=as_of, data_from=data_from),
        covered_h=covered_hours(start, end, as_of=as_of, data_from=data_from),
        previous_complete=is_complete(before, start, as_of=as_of, data_from=data_from),
        latest_complete_week=week is not None,
    )
