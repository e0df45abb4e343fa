"""Fairness: usage against a water-filled fair allocation of each pool's GPU-hours, per team.

METRICS.md "Fairness": usage ``U_t`` = allocated GPU-seconds of a team; demand ``D_t`` = used +
pending GPU-seconds; the fair allocation water-fills each pool's available GPU-seconds per hour
with weights ``s_t`` (registry shares) and caps ``D_t,h`` (weighted max-min fairness: a team
asking for less than its share gets what it asked for, the rest goes to the others); ``F_t`` sums
it over hours and pools. Entitlement ratio ``e_t = U_t / F_t``, Jain's index over ``e_t``,
unmet entitlement, fair-share debt, and wait fairness within size buckets.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal

import polars as pl

from metrics._helpers import size_bucket
from metrics.holds import with_pieces
from metrics.schema import (
    BUCKET,
    CAPACITY_GPU_S,
    CLUSTER,
    DOWN_GPU_S,
    ELIGIBLE_AT,
    GPUS,
    HOUR,
    PLANNED_DOWN_GPU_S,
    POOL,
    SHARE,
    START_AT,
    TEAM,
    VALID_FROM,
    WAIT_S,
    WINDOW_END,
    WINDOW_START,
)
from metrics.waterfall import _hour_pieces, _utc_lit, pending_demand_hourly

__all__ = [
    "entitlement",
    "fair_share_hourly",
    "fairness_summary",
    "jain_index",
    "wait_fairness",
    "water_fill",
]

USAGE_GPU_S = "usage_gpu_s"
PENDING_GPU_S = "pending_gpu_s"
DEMAND_GPU_S = "demand_gpu_s"
FAIR_GPU_S = "fair_gpu_s"
AVAILABLE_GPU_S = "available_gpu_s"


def water_fill(
    frame: pl.LazyFrame,
    by: Sequence[str],
    *,
    capacity: str,
    weight: str,
    demand: str,
    out: str = FAIR_GPU_S,
) -> pl.LazyFrame:
    """Weighted max-min fair split of ``capacity`` among the rows of each ``by`` group.

    Each row (team) gets fᵢ = min(dᵢ, λ·wᵢ), with the water level λ chosen so that Σ fᵢ =
    capacity, or fᵢ = dᵢ for all when Σ dᵢ ≤ capacity. Closed form, no iteration: sort by
    dᵢ/wᵢ; team k is saturated iff Σ_{j<k} dⱼ + (dₖ/wₖ)·Σ_{j≥k} wⱼ ≤ C (monotone in k); λ is
    the largest (C − Σ_{j<k} dⱼ) / Σ_{j≥k} wⱼ over the unsaturated teams [Bertsekas & Gallager,
    *Data Networks*, max-min fair allocation].

    Args:
        frame: one row per group member; ``capacity`` repeated on every row of a group.
        by: the group columns (e.g. ``pool, hour``).
        capacity: column with the group's capacity (negative read as 0).
        weight: column with the member's weight (share); ≤ 0 or NULL gets nothing.
        demand: column with the member's cap (demand); ≤ 0 or NULL gets nothing.
        out: name of the added column.

    Returns:
        ``frame`` with ``out`` added (Float64, same rows).
    """
    w = pl.col(weight).cast(pl.Float64).fill_null(0.0)
    d = pl.col(demand).cast(pl.Float64).fill_null(0.0)
    cap = pl.col(capacity).cast(pl.Float64).fill_null(0.0).clip(lower_bound=0.0)
    keys = list(by)
    active = (w > 0) & (d > 0)
    w_in = pl.when(active).then(w).otherwise(0.0)
    d_in = pl.when(active).then(d).otherwise(0.0)
    ratio = pl.when(active).then(d / w).otherwise(None)
    lf = frame.with_columns(w_in.alias("_w"), d_in.alias("_d"), ratio.alias("_r"), cap.alias("_c"))
    # Ties of d/w broken by d, then w: rows tied on all three add the same values in either
    # order, so the running sums, and the fair shares, are the same bits whatever order the rows
    # come in (a total over the group in row order was not: fair_gpu_s differed in its last bits
    # between two builds of the same inputs).
    order = [pl.col("_r"), pl.col("_d"), pl.col("_w")]
    d_before = pl.col("_d").cum_sum().over(keys, order_by=order) - pl.col("_d")
    w_cum = pl.col("_w").cum_sum().over(keys, order_by=order)
    lf = lf.with_columns(w_cum.alias("_wc"))
    # Σ w of the group = the running sum's last (largest: w ≥ 0) value, in that order
    w_from = pl.col("_wc").max().over(keys) - pl.col("_wc") + pl.col("_w")
    lf = lf.with_columns(
        pl.when(pl.col("_r").is_not_null())
        .then((pl.col("_c") - d_before) / w_from)
        .otherwise(None)
        .alias("_lam")
    ).with_columns((pl.col("_r") <= pl.col("_lam")).alias("_sat"))
    level = pl.col("_lam").filter(pl.col("_sat").not_()).max().over(keys)
    fair = (
        pl.when(pl.col("_r").is_null())
        .then(0.0)
        .when(level.is_null())
        .then(pl.col("_d"))
        .otherwise(pl.min_horizontal(pl.col("_d"), level * pl.col("_w")))
    )
    return lf.with_columns(fair.alias(out)).drop("_w", "_d", "_r", "_c", "_wc", "_lam", "_sat")


def _shares_per_hour(rows: pl.LazyFrame, shares: pl.LazyFrame) -> pl.LazyFrame:
    """Attach the share in effect in each row's hour (latest ``valid_from`` ≤ hour)."""
    schema = shares.collect_schema()
    on = [TEAM, POOL] if POOL in schema else [TEAM]
    if VALID_FROM not in schema:
        return rows.join(shares.select(*on, SHARE), on=on, how="left")
    vf = schema[VALID_FROM]
    start = pl.col(VALID_FROM)
    if isinstance(vf, pl.Datetime) and vf.time_zone is not None:
        start = start.dt.convert_time_zone("UTC")
    else:  # a date, or a naive datetime: read as UTC
        start = start.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    start = start.dt.cast_time_unit("us")
    sh = (
        shares.select(*on, SHARE, start.alias("_from"))
        .filter(pl.col("_from").is_not_null())
        .sort("_from")
    )
    return (
        rows.sort(HOUR)
        .join_asof(
            sh,
            left_on=HOUR,
            right_on="_from",
            by=on,
            strategy="backward",
            check_sortedness=False,
        )
        .drop("_from")
    )


def fair_share_hourly(
    attempts: pl.LazyFrame,
    capacity: pl.LazyFrame,
    shares: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    pending: pl.LazyFrame | None = None,
    pool: str = CLUSTER,
    holds: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Usage, demand and water-filled fair allocation per pool, hour and team.

    Per hour and pool, the available GPU-seconds (capacity − down − planned_down) are
    water-filled (:func:`water_fill`) with weights = the team's share in effect that hour and
    caps = the team's demand that hour (used + eligible pending GPU-seconds). Idle capacity of
    one hour never meets demand of another. Teams without a share (e.g. ``unattributed``) get
    weight 0, so a fair allocation of 0.

    Args:
        attempts: the ``jobs`` view (``team, gpus, req_gpus, eligible_at, start_at, end_at`` and
            the ``pool`` column); usage = GPUs × allocated seconds clipped to each hour (per
            piece of held GPUs, ``holds``), running attempts up to ``as_of``.
        capacity: ``hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s`` and the ``pool``
            column (summed when a pool has several rows per hour). Only its hours are computed.
        shares: the registry: ``team, share`` (fraction; weights need not sum to 1), optionally
            ``valid_from`` (date or UTC datetime: the share applies from then until the team's
            next ``valid_from``; hours before the first get no share) and ``pool`` (the share
            applies to that pool only; without the column it applies in every pool).
        as_of: the data cut-off (UTC; naive is read as UTC).
        pending: never-started rows (see :func:`metrics.waterfall.pending_demand_hourly`) with
            the ``pool`` column.
        pool: the column naming the GPU pool in all inputs: ``cluster`` (default) or one the
            caller built, e.g. cluster × GPU model.
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:func:`metrics.holds.with_pieces`; ``attempts`` then needs ``job_id,
            attempt``): usage spreads each piece (METRICS.md "GPU holding"); None: none.

    Returns:
        ``pool, hour, team, share, usage_gpu_s, pending_gpu_s, demand_gpu_s, fair_gpu_s,
        available_gpu_s``: one row per team with demand in that pool-hour.
    """
    cut = _utc_lit(as_of)
    avail = capacity.group_by(pl.col(pool).alias(POOL), pl.col(HOUR).dt.cast_time_unit("us")).agg(
        (
            pl.col(CAPACITY_GPU_S).fill_null(0.0)
            - pl.col(DOWN_GPU_S).fill_null(0.0)
            - pl.col(PLANNED_DOWN_GPU_S).fill_null(0.0)
        )
        .sum()
        .clip(lower_bound=0.0)
        .alias(AVAILABLE_GPU_S)
    )
    used = (
        _hour_pieces(
            with_pieces(
                attempts.filter(pl.col(START_AT).is_not_null() & (pl.col(GPUS) > 0)), holds
            ).select(
                pl.col(pool).alias(POOL),
                TEAM,
                pl.col("_pg").alias(GPUS),
                pl.col("_ps").alias("_from"),
                pl.min_horizontal(pl.col("_pe").fill_null(cut), cut).alias("_to"),
            ),
            "_from",
            "_to",
        )
        .group_by(POOL, TEAM, HOUR)
        .agg((pl.col(GPUS) * pl.col("_sec")).sum().alias(USAGE_GPU_S))
    )
    att_p = attempts.with_columns(pl.col(pool).alias(POOL))
    pend_p = pending.with_columns(pl.col(pool).alias(POOL)) if pending is not None else None
    waiting = pending_demand_hourly(att_p, as_of, pending=pend_p, keys=(POOL, TEAM))
    rows = (
        used.join(waiting, on=[POOL, TEAM, HOUR], how="full", coalesce=True)
        .with_columns(pl.col(USAGE_GPU_S).fill_null(0.0), pl.col(PENDING_GPU_S).fill_null(0.0))
        .with_columns((pl.col(USAGE_GPU_S) + pl.col(PENDING_GPU_S)).alias(DEMAND_GPU_S))
        .join(avail, on=[POOL, HOUR], how="inner")
    )
    rows = _shares_per_hour(rows, shares).with_columns(
        pl.col(SHARE).cast(pl.Float64).fill_null(0.0)
    )
    return (
        water_fill(rows, (POOL, HOUR), capacity=AVAILABLE_GPU_S, weight=SHARE, demand=DEMAND_GPU_S)
        .select(
            POOL,
            HOUR,
            TEAM,
            SHARE,
            USAGE_GPU_S,
            PENDING_GPU_S,
            DEMAND_GPU_S,
            FAIR_GPU_S,
            AVAILABLE_GPU_S,
        )
        .sort(POOL, HOUR, TEAM)
    )


def entitlement(
    fair_hourly: pl.LazyFrame,
    *,
    window: Literal["week", "rolling_28d"] = "week",
    by_pool: bool = False,
) -> pl.LazyFrame:
    """Per window and team: U_t, D_t, F_t, entitlement ratio and fair-share debt.

    Args:
        fair_hourly: :func:`fair_share_hourly` output.
        window: ``week`` (Monday 00:00 UTC to the next Monday) or ``rolling_28d`` (one window
            per UTC day d: the 28 days ending with d; days before the data count as 0).
        by_pool: keep pools apart; False sums each team over pools (METRICS.md: ``F_t`` = the
            sum over hours and pools).

    Returns:
        ``window_start, window_end, [pool,] team, usage_gpu_s, demand_gpu_s, fair_gpu_s,
        entitlement_ratio, unmet_gpu_s, debt_gpu_h``: ratio = U/F (NULL where F = 0), unmet =
        max(0, F − U) GPU-seconds, debt = (F − U)/3600 GPU-hours (positive: the team is owed).

    Raises:
        ValueError: an unknown ``window``.
    """
    keys = [POOL, TEAM] if by_pool else [TEAM]
    sums = [pl.col(USAGE_GPU_S).sum(), pl.col(DEMAND_GPU_S).sum(), pl.col(FAIR_GPU_S).sum()]
    if window == "week":
        per = (
            fair_hourly.group_by(pl.col(HOUR).dt.truncate("1w").alias(WINDOW_START), *keys)
            .agg(sums)
            .with_columns((pl.col(WINDOW_START) + pl.duration(days=7)).alias(WINDOW_END))
        )
    elif window == "rolling_28d":
        daily = fair_hourly.group_by(pl.col(HOUR).dt.truncate("1d").alias("_day"), *keys).agg(sums)
        days = (
            daily.select(pl.col("_day").min().alias("_lo"), pl.col("_day").max().alias("_hi"))
            .filter(pl.col("_lo").is_not_null())  # no data: no windows (not an error)
            .select(pl.datetime_ranges("_lo", "_hi", interval="1d", time_zone="UTC").alias("_day"))
            .explode("_day")
        )
        grid = days.join(daily.select(keys).unique(), how="cross")
        roll = [
            pl.col(c).rolling_sum(28, min_samples=1).over(keys, order_by="_day")
            for c in (USAGE_GPU_S, DEMAND_GPU_S, FAIR_GPU_S)
        ]
        per = (
            grid.join(daily, on=["_day", *keys], how="left")
            .with_columns(pl.col(USAGE_GPU_S, DEMAND_GPU_S, FAIR_GPU_S).fill_null(0.0))
            .with_columns(roll)
            .with_columns(
                (pl.col("_day") + pl.duration(days=1)).alias(WINDOW_END),
                (pl.col("_day") - pl.duration(days=27)).alias(WINDOW_START),
            )
            .drop("_day")
        )
    else:
        raise ValueError(f"unknown window {window!r}")
    gap = pl.col(FAIR_GPU_S) - pl.col(USAGE_GPU_S)
    return (
        per.with_columns(
            pl.when(pl.col(FAIR_GPU_S) > 0)
            .then(pl.col(USAGE_GPU_S) / pl.col(FAIR_GPU_S))
            .otherwise(None)
            .alias("entitlement_ratio"),
            gap.clip(lower_bound=0.0).alias("unmet_gpu_s"),
            (gap / 3600.0).alias("debt_gpu_h"),
        )
        .select(
            WINDOW_START,
            WINDOW_END,
            *keys,
            USAGE_GPU_S,
            DEMAND_GPU_S,
            FAIR_GPU_S,
            "entitlement_ratio",
            "unmet_gpu_s",
            "debt_gpu_h",
        )
        .sort(WINDOW_START, *keys)
    )


def jain_index(values: pl.Expr) -> pl.Expr:
    """Jain's fairness index (Σx)² / (n·Σx²) of the non-NULL ``values`` (an aggregation).

    1 when all values are equal, 1/n when one member gets everything [Jain, Chiu & Hawe 1984].
    NULL when there are no values or all are 0.
    """
    v = values.drop_nulls()
    sq = (v * v).sum()
    return pl.when(sq > 0).then(v.sum() ** 2 / (v.len() * sq)).otherwise(None)


def fairness_summary(entitlements: pl.LazyFrame) -> pl.LazyFrame:
    """Fairness index and unmet entitlement per window (and pool, if kept).

    Args:
        entitlements: :func:`entitlement` output.

    Returns:
        ``window_start, window_end, [pool,] teams, usage_gpu_s, fair_gpu_s, fairness_index,
        unmet_entitlement``: ``teams`` = teams with demand and a defined ratio; fairness index =
        Jain's index over their entitlement ratios; unmet entitlement = Σ max(0, F − U) / Σ F
        (NULL where Σ F = 0).
    """
    keys = [WINDOW_START, WINDOW_END]
    if POOL in entitlements.collect_schema().names():
        keys.append(POOL)
    counted = (pl.col(DEMAND_GPU_S) > 0) & pl.col("entitlement_ratio").is_not_null()
    return (
        entitlements.group_by(keys)
        .agg(
            counted.sum().cast(pl.Int64).alias("teams"),
            pl.col(USAGE_GPU_S).sum(),
            pl.col(FAIR_GPU_S).sum(),
            jain_index(pl.col("entitlement_ratio").filter(counted)).alias("fairness_index"),
            pl.col("unmet_gpu_s").sum().alias("_unmet"),
        )
        .with_columns(
            pl.when(pl.col(FAIR_GPU_S) > 0)
            .then(pl.col("_unmet") / pl.col(FAIR_GPU_S))
            .otherwise(None)
            .alias("unmet_entitlement")
        )
        .drop("_unmet")
        .sort(keys)
    )


def wait_fairness(
    attempts: pl.LazyFrame, *, by: Sequence[str] = (CLUSTER,), every: str = "1w"
) -> pl.LazyFrame:
    """Team mean wait ÷ overall mean wait within a size bucket, per window.

    Args:
        attempts: started attempts with ``team, gpus, eligible_at, wait_s`` (start − eligible,
            seconds) and the ``by`` columns; CPU-only attempts, unknown or negative waits are
            left out. Waits of jobs still pending are not in a mean (see the Kaplan–Meier
            percentiles for those).
        by: extra group columns (default per cluster); ``()`` for the fleet.
        every: window length for ``dt.truncate`` of the eligible time (default ``1w``, weeks
            starting Monday 00:00 UTC).

    Returns:
        ``window_start, by…, bucket, team, attempts, mean_wait_s, overall_mean_wait_s,
        wait_ratio`` with ratio = team mean / overall mean of the same window, group and bucket
        (NULL when the overall mean is 0).
    """
    keys = [WINDOW_START, *by, BUCKET]
    base = attempts.filter(
        (pl.col(GPUS) > 0) & pl.col(WAIT_S).is_not_null() & (pl.col(WAIT_S) >= 0)
    ).with_columns(
        pl.col(ELIGIBLE_AT).dt.truncate(every).alias(WINDOW_START),
        size_bucket(pl.col(GPUS)).alias(BUCKET),
    )
    overall = base.group_by(keys).agg(pl.col(WAIT_S).mean().alias("overall_mean_wait_s"))
    per_team = base.group_by(*keys, TEAM).agg(
        pl.len().cast(pl.Int64).alias("attempts"), pl.col(WAIT_S).mean().alias("mean_wait_s")
    )
    return (
        per_team.join(overall, on=keys, how="left", nulls_equal=True)
        .with_columns(
            pl.when(pl.col("overall_mean_wait_s") > 0)
            .then(pl.col("mean_wait_s") / pl.col("overall_mean_wait_s"))
            .otherwise(None)
            .alias("wait_ratio")
        )
        .select(*keys, TEAM, "attempts", "mean_wait_s", "overall_mean_wait_s", "wait_ratio")
        .sort(*keys, TEAM, nulls_last=True)
    )
