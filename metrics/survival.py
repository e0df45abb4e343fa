"""Time to start with right-censoring: Kaplan–Meier wait curves and percentiles.

METRICS.md "Time to start": wait = start − eligible; a job still pending at the data cut-off
(``as_of``) is censored there, a job cancelled while pending is censored at its cancel time
(Kaplan–Meier, not dropped); a percentile the survival curve never reaches is NULL with the
reason; the naive (started-only) percentiles are shown beside, labelled.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import polars as pl

from metrics._helpers import seconds_between, size_bucket
from metrics.schema import BUCKET, ELIGIBLE_AT, END_AT, GPUS, REQ_GPUS, START_AT, WEEK

__all__ = [
    "DURATION_S",
    "STARTED",
    "kaplan_meier",
    "wait_percentiles_km",
    "wait_spells",
]

#: Seconds from eligible to start (an event) or to censoring.
DURATION_S = "duration_s"
#: True: the spell ended in a start (an event); False: censored; NULL: excluded (never eligible).
STARTED = "started"
#: GPUs that place a spell in its size bucket: allocated GPUs if started, else requested.
SIZE_GPUS = "size_gpus"

#: Slack when comparing S(t) with 1 − p: S is a product of fractions, so an exact 0.5 can come
#: out as 0.5000000000000001.
_EPS = 1e-9


def _utc_lit(ts: dt.datetime) -> pl.Expr:
    ts = ts.replace(tzinfo=dt.UTC) if ts.tzinfo is None else ts.astimezone(dt.UTC)
    return pl.lit(ts).dt.cast_time_unit("us")


def _spell(start: pl.Expr, end: pl.Expr, size: pl.Expr, cut: pl.Expr) -> list[pl.Expr]:
    """Event / censoring columns of rows with eligible, (maybe) start and (maybe) end.

    Started by ``cut`` → event at start. Otherwise censored at the earlier of the end (cancel
    time) and ``cut``. Excluded (both NULL) when eligible is unknown, after ``cut``, or after
    the row's start / end ("never became eligible").
    """
    elig = pl.col(ELIGIBLE_AT).dt.cast_time_unit("us")
    started = start.is_not_null() & (start <= cut)
    stop = pl.when(started).then(start).otherwise(pl.min_horizontal(end.fill_null(cut), cut))
    never_eligible = (
        elig.is_null()
        | (elig > cut)
        | (start.is_not_null() & (elig > start))
        | (start.is_null() & end.is_not_null() & (elig > end))
    )
    return [
        pl.when(never_eligible).then(None).otherwise(seconds_between(stop, elig)).alias(DURATION_S),
        pl.when(never_eligible).then(None).otherwise(started).alias(STARTED),
        size.cast(pl.Float64).alias(SIZE_GPUS),
        size_bucket(size.cast(pl.Float64)).alias(BUCKET),
        elig.dt.truncate("1w").alias(WEEK),
    ]


def wait_spells(
    attempts: pl.LazyFrame, as_of: dt.datetime, *, pending: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """One waiting spell per attempt and per never-started job, ready for Kaplan–Meier.

    Each requeued attempt waits from its own (re-)eligible time. CPU-only rows (0 / NULL GPUs by
    the size rule) are outside GPU time to start and dropped.

    Args:
        attempts: the ``jobs`` view (``eligible_at, start_at, end_at, gpus, req_gpus`` and any
            group columns such as ``cluster, partition, team``). A start after ``as_of`` is
            censored at ``as_of``; a row without a start is treated like a pending row.
        as_of: the data cut-off (UTC; naive is read as UTC).
        pending: optional never-started rows (``eligible_at, end_at`` — the cancel time of a job
            cancelled while pending, NULL while pending — ``req_gpus`` and group columns).

    Returns:
        The input columns (union of both frames, NULL where a frame lacks one) plus
        ``duration_s`` (seconds from eligible to start or censoring), ``started`` (event flag;
        NULL with ``duration_s`` for spells excluded as never eligible: eligible unknown, after
        ``as_of``, or after their start / end), ``size_gpus`` (allocated GPUs if started, else
        requested), ``bucket`` (size bucket) and ``week`` (Monday 00:00 UTC of eligible time).
    """
    cut = _utc_lit(as_of)
    start = pl.col(START_AT).dt.cast_time_unit("us")
    frames = [
        attempts.with_columns(
            _spell(
                start,
                pl.col(END_AT).dt.cast_time_unit("us"),
                pl.when(start.is_not_null())
                .then(pl.col(GPUS))
                .otherwise(pl.col(REQ_GPUS).fill_null(pl.col(GPUS))),
                cut,
            )
        )
    ]
    if pending is not None:
        no_start = pl.lit(None, dtype=pl.Datetime("us", "UTC"))
        frames.append(
            pending.with_columns(
                _spell(no_start, pl.col(END_AT).dt.cast_time_unit("us"), pl.col(REQ_GPUS), cut)
            )
        )
    return pl.concat(frames, how="diagonal_relaxed").filter(pl.col(SIZE_GPUS) > 0)


def _keys(spells: pl.LazyFrame, by: Sequence[str]) -> tuple[pl.LazyFrame, list[str]]:
    if by:
        return spells, list(by)
    return spells.with_columns(pl.lit(0).alias("_all")), ["_all"]


def kaplan_meier(spells: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """The Kaplan–Meier (product-limit) survival curve of waits, per group.

    S(t) = Π_{tᵢ ≤ t} (1 − dᵢ / nᵢ), where dᵢ starts happen at tᵢ and nᵢ spells are still waiting
    just before tᵢ. Ties: events come before censorings at the same time, so a spell censored
    at tᵢ is still at risk at tᵢ (the usual convention) [Kaplan & Meier 1958].

    Args:
        spells: :func:`wait_spells` output (``duration_s``, ``started``); excluded spells
            (``started`` NULL) are ignored.
        by: group columns (e.g. ``cluster, bucket``); ``()`` for one curve.

    Returns:
        ``by…, duration_s, at_risk, events, censored, survival``: one row per group and distinct
        duration, ascending; ``survival`` = S(t) just after that duration.
    """
    lf, keys = _keys(spells, by)
    per_t = (
        lf.filter(pl.col(STARTED).is_not_null())
        .group_by(*keys, DURATION_S)
        .agg(
            pl.col(STARTED).sum().cast(pl.Int64).alias("events"),
            (~pl.col(STARTED)).sum().cast(pl.Int64).alias("censored"),
        )
    )
    left = pl.col("events") + pl.col("censored")
    # Sorted once by group and duration, so the running sums follow the frame order (a window
    # with ``order_by`` would sort again for each of them).
    curve = (
        per_t.sort(*keys, DURATION_S)
        .with_columns((left.sum().over(keys) - left.cum_sum().over(keys) + left).alias("at_risk"))
        .with_columns(
            (1.0 - pl.col("events") / pl.col("at_risk")).cum_prod().over(keys).alias("survival")
        )
    )
    cols = [*keys, DURATION_S, "at_risk", "events", "censored", "survival"]
    return curve.select(cols if by else cols[1:])


def _label(q: float) -> str:
    return f"p{q * 100:g}".replace(".", "_")


def wait_percentiles_km(
    spells: pl.LazyFrame,
    by: Sequence[str] = (),
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
) -> pl.LazyFrame:
    """Kaplan–Meier wait percentiles per group, with the naive percentiles beside them.

    The KM p-percentile is the smallest duration t with S(t) ≤ 1 − p (within 1e-9); NULL when
    the curve never gets there (the remaining waits are censored), with the reason. The naive
    percentile is the nearest-rank percentile of started spells only (its empirical
    counterpart: equal to KM when nothing is censored).

    Args:
        spells: :func:`wait_spells` output.
        by: group columns, e.g. ``("cluster", "bucket")``, ``("partition",)``, ``("team",
            "week")``; ``()`` for one row.
        quantiles: the p values, each in (0, 1).

    Returns:
        ``by…, spells, events, censored, excluded`` (never-eligible spells, counted not used),
        and for each p (label ``p50``, ``p90``, ``p99``; ``p99_9`` for 0.999):
        ``km_<p>_s``, ``km_<p>_reason`` (NULL when the value exists), ``naive_<p>_s`` (seconds).

    Raises:
        ValueError: a quantile outside (0, 1).
    """
    for q in quantiles:
        if not 0.0 < q < 1.0:
            raise ValueError(f"quantile {q} is not in (0, 1)")
    lf, keys = _keys(spells, by)
    curve = kaplan_meier(lf, keys)
    km_aggs: list[pl.Expr] = [pl.col("survival").min().alias("_smin")]
    for q in quantiles:
        km_aggs.append(
            pl.col(DURATION_S)
            .filter(pl.col("survival") <= 1.0 - q + _EPS)
            .min()
            .alias(f"km_{_label(q)}_s")
        )
    km = curve.group_by(keys).agg(km_aggs)
    started = pl.col(STARTED)
    # Naive: the nearest-rank percentiles (``nearest_rank``) of the started waits, taken from
    # one sorted list per group instead of one sort per percentile.
    waits = pl.col("_naive")
    counts = (
        lf.group_by(keys)
        .agg(
            started.is_not_null().sum().cast(pl.Int64).alias("spells"),
            started.fill_null(False).sum().cast(pl.Int64).alias("events"),
            (~started).fill_null(False).sum().cast(pl.Int64).alias("censored"),
            started.is_null().sum().cast(pl.Int64).alias("excluded"),
            pl.col(DURATION_S).filter(started.fill_null(False)).drop_nulls().sort().alias("_naive"),
        )
        .with_columns(
            waits.list.get(
                ((pl.lit(q) * waits.list.len()).ceil().cast(pl.Int64) - 1).clip(0, None),
                null_on_oob=True,
            ).alias(f"naive_{_label(q)}_s")
            for q in quantiles
        )
        .drop("_naive")
    )
    out = counts.join(km, on=keys, how="left", nulls_equal=True)
    reasons = []
    cols: list[str] = [*keys, "spells", "events", "censored", "excluded"]
    for q in quantiles:
        lab = _label(q)
        reasons.append(
            pl.when(pl.col(f"km_{lab}_s").is_not_null())
            .then(None)
            .when(pl.col("spells") == 0)
            .then(pl.lit("no eligible spells"))
            .otherwise(
                pl.format(
                    "S(t) never reaches {}: lowest S(t) = {}; the remaining waits are censored",
                    pl.lit(f"{1.0 - q:g}"),
                    pl.col("_smin").round(4),
                )
            )
            .alias(f"km_{lab}_reason")
        )
        cols += [f"km_{lab}_s", f"km_{lab}_reason", f"naive_{lab}_s"]
    result = out.with_columns(reasons).select(cols if by else cols[1:])
    return result.sort(list(by), nulls_last=True) if by else result
