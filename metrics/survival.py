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
    "SPELLS_N",
    "STARTED",
    "kaplan_meier",
    "wait_percentiles_km",
    "wait_spell_counts",
    "wait_spells",
]

#: Seconds from eligible to start (an event) or to censoring.
DURATION_S = "duration_s"
#: True: the spell ended in a start (an event); False: censored; NULL: excluded (never eligible).
STARTED = "started"
#: GPUs that place a spell in its size bucket: allocated GPUs if started, else requested.
SIZE_GPUS = "size_gpus"
#: How many spells a row of :func:`wait_spell_counts` stands for.
SPELLS_N = "n"

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


def _weight(weight: str | None) -> pl.Expr:
    """How many spells each row counts for: the ``weight`` column, else 1."""
    return pl.col(weight).cast(pl.Int64) if weight else pl.lit(1, dtype=pl.Int64)


def _sum_where(cond: pl.Expr, w: pl.Expr) -> pl.Expr:
    return pl.when(cond).then(w).otherwise(0).sum().cast(pl.Int64)


def wait_spell_counts(spells: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    """Spells collapsed to one row per group, duration and outcome: the compact input of
    :func:`kaplan_meier` and :func:`wait_percentiles_km` (``weight=SPELLS_N``), which give
    from it exactly what they give from the spells themselves (both count spells per group and
    distinct duration, nothing else).

    The counts add up: counts of the parts of a set of spells, concatenated and passed here
    again, are the counts of the whole (rows that already carry :data:`SPELLS_N` are summed,
    others count 1), so a window's percentiles can be computed from parts of its spells
    taken in turn, never all of them at once.

    Args:
        spells: :func:`wait_spells` output (``duration_s``, ``started``), or counts from this
            function (with :data:`SPELLS_N`).
        by: the group columns to keep (every grouping later asked of the counts must be a
            subset of them).

    Returns:
        ``by…, duration_s, started, n`` (``n`` Int64; excluded spells have ``duration_s`` and
        ``started`` NULL), in no particular order.
    """
    cols = spells.collect_schema().names()
    n = pl.col(SPELLS_N).sum() if SPELLS_N in cols else pl.len()
    return spells.group_by(*by, DURATION_S, STARTED).agg(n.cast(pl.Int64).alias(SPELLS_N))


def kaplan_meier(
    spells: pl.LazyFrame, by: Sequence[str] = (), *, weight: str | None = None
) -> pl.LazyFrame:
    """The Kaplan–Meier (product-limit) survival curve of waits, per group.

    S(t) = Π_{tᵢ ≤ t} (1 − dᵢ / nᵢ), where dᵢ starts happen at tᵢ and nᵢ spells are still waiting
    just before tᵢ. Ties: events come before censorings at the same time, so a spell censored
    at tᵢ is still at risk at tᵢ (the usual convention) [Kaplan & Meier 1958].

    Args:
        spells: :func:`wait_spells` output (``duration_s``, ``started``); excluded spells
            (``started`` NULL) are ignored.
        by: group columns (e.g. ``cluster, bucket``); ``()`` for one curve.
        weight: a column giving how many spells each row stands for (:func:`wait_spell_counts`'
            :data:`SPELLS_N`); None: each row is one spell.

    Returns:
        ``by…, duration_s, at_risk, events, censored, survival``: one row per group and distinct
        duration, ascending; ``survival`` = S(t) just after that duration.
    """
    lf, keys = _keys(spells, by)
    started, w = pl.col(STARTED), _weight(weight)
    per_t = (
        lf.filter(started.is_not_null())
        .group_by(*keys, DURATION_S)
        .agg(_sum_where(started, w).alias("events"), _sum_where(~started, w).alias("censored"))
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
    *,
    weight: str | None = None,
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
        weight: a column giving how many spells each row stands for (the compact counts of
            :func:`wait_spell_counts`: ``weight=SPELLS_N``); None: each row is one spell.

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
    # The curve has one row per group and distinct duration, sorted: the running count of
    # starts along it gives the naive (started-only) nearest-rank percentile as well: the
    # smallest duration whose running count reaches ⌈p·starts⌉ (at least the first).
    curve = kaplan_meier(lf, keys, weight=weight).with_columns(
        pl.col("events").cum_sum().over(keys).alias("_cum"),
        pl.col("events").sum().over(keys).alias("_tot"),
    )
    aggs: list[pl.Expr] = [pl.col("survival").min().alias("_smin")]
    for q in quantiles:
        aggs.append(
            pl.col(DURATION_S)
            .filter(pl.col("survival") <= 1.0 - q + _EPS)
            .min()
            .alias(f"km_{_label(q)}_s")
        )
        rank = (pl.lit(q) * pl.col("_tot")).ceil().clip(1, None)
        aggs.append(
            pl.col(DURATION_S).filter(pl.col("_cum") >= rank).min().alias(f"naive_{_label(q)}_s")
        )
    km = curve.group_by(keys).agg(aggs)
    started, w = pl.col(STARTED), _weight(weight)
    counts = lf.group_by(keys).agg(
        _sum_where(started.is_not_null(), w).alias("spells"),
        _sum_where(started.fill_null(False), w).alias("events"),
        _sum_where((~started).fill_null(False), w).alias("censored"),
        _sum_where(started.is_null(), w).alias("excluded"),
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
