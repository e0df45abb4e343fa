"""The measured effect of a policy change: KPIs per day, interrupted time series, placebo, DiD.

METRICS.md "Policy change impact". Pure polars for the data, statsmodels for the regressions:

- :func:`daily_kpis`: per cluster and UTC day, the KPIs a scheduler change can move —
  Kaplan–Meier p50/p90 time to start per size bucket of the spells that became eligible that
  day (:mod:`metrics.survival`), occupancy, and Jain's index of the teams' usage ÷ share —
  with the covariates: offered load (GPU-hours of work that became eligible ÷ available
  GPU-hours) and available capacity.
- :func:`its_estimate`: segmented OLS with a level shift at the change, a linear trend and the
  covariates, Newey–West (HAC) standard errors; the minimum detectable effect 2.8 × SE.
- :func:`placebo_p_value`: the same estimate at every fake change date of the pre-period.
- :func:`did_estimate`: difference-in-differences against untouched clusters (the treated
  minus the controls' mean, same regression without trend), with event-study leads; the
  controls are those the ledger does not touch and whose own series shows no shift at the
  change (:func:`clean_controls`).
- :func:`bundle_changes` and :func:`change_impact`: ledger changes that overlap in scope
  (one cluster) and time are one bundle, estimated once, with a verdict per KPI: p < 0.05
  after Holm's adjustment over the bundle's KPIs of the method (:func:`holm_adjust`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

from metrics.het_jobs import het_wait_units
from metrics.schema import ALLOCATED_LEAVES, WATERFALL_LEAVES
from metrics.survival import wait_percentiles_km, wait_spells

__all__ = [
    "ALPHA",
    "FAIR_SHARE_KEYS",
    "IMPACT_SCHEMA",
    "KPI_DIRECTION",
    "MDE_FACTOR",
    "MIN_DAYS",
    "ItsEstimate",
    "bundle_changes",
    "change_impact",
    "clean_controls",
    "daily_kpis",
    "did_estimate",
    "holm_adjust",
    "its_estimate",
    "newey_west_lags",
    "placebo_p_value",
    "slurm_duration_days",
]

UTC_US = pl.Datetime("us", "UTC")

#: One row per change × KPI × method (the ``policy_change_impact`` view, sql/README.md).
IMPACT_SCHEMA: dict[str, pl.DataType] = {
    "change_id": pl.String(),
    "bundle_id": pl.String(),
    "cluster": pl.String(),
    "scope": pl.String(),
    "kpi": pl.String(),
    "method": pl.String(),
    "window_start": UTC_US,
    "window_end": UTC_US,
    "n_pre": pl.Int32(),
    "n_post": pl.Int32(),
    "unit": pl.String(),
    "before": pl.Float64(),
    "after": pl.Float64(),
    "estimate": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "p_value": pl.Float64(),
    "placebo_p": pl.Float64(),
    "mde": pl.Float64(),
    "verdict": pl.String(),
}

#: z(1 − 0.05/2) + z(0.80) = 1.96 + 0.84: the minimum detectable effect at 80 % power in a
#: 5 % two-sided test is 2.8 standard errors [Bloom 1995, "Minimum detectable effects",
#: Evaluation Review 19(5)].
MDE_FACTOR: Final = 2.8
#: Fewest days with a value on each side of a change for an estimate: a week, so that both
#: sides see every weekday (fleets are quieter at weekends).
MIN_DAYS: Final = 7
#: The level of every test: a verdict needs p < ALPHA after the Holm adjustment over the
#: bundle's KPIs (:func:`holm_adjust`).
ALPHA: Final = 0.05
#: Changes on one cluster less than this many days apart are one bundle.
BUNDLE_DAYS: Final = 7
#: +1: higher is better; −1: lower is better (by KPI name prefix).
KPI_DIRECTION: dict[str, int] = {
    "wait_p50_h": -1, "wait_p90_h": -1, "occupancy": 1, "jain": 1,
    "held_for_gangs_gpu_h": -1, "entitlement_ratio_min": 1, "preemption_loss_gpu_h": -1,
    "goodput_ratio": 1,
}  # fmt: skip
#: Ledger keys whose effect goes through fair-share usage (a washout of one half-life).
FAIR_SHARE_KEYS: Final = re.compile(
    r"(?i)(rawshares|fairshare|priorityweightfairshare|prioritydecayhalflife|fairSharing)"
)
_COVARIATES: Final = ("offered_load", "capacity_gpu_h")


# ----------------------------------------------------------------------------------------------
# KPIs per day
# ----------------------------------------------------------------------------------------------


def daily_kpis(
    jobs: pl.DataFrame,
    occupancy: pl.DataFrame,
    as_of: pl.DataFrame,
    shares: pl.DataFrame | None = None,
    *,
    pending: pl.DataFrame | None = None,
    waterfall: pl.DataFrame | None = None,
    stranded: pl.DataFrame | None = None,
    fair_hourly: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The KPIs a policy change can move, per cluster and UTC day, with the covariates.

    Args:
        jobs: the ``jobs`` view's rows (``cluster, team, gpus, req_gpus, eligible_at, start_at,
            end_at, run_s, timelimit_s``).
        occupancy: ``occupancy_hourly`` rows (``cluster, hour, capacity_gpu_s, down_gpu_s,
            planned_down_gpu_s, allocated_gpu_s``).
        as_of: ``cluster, as_of`` (the data cut-off: waits are censored there).
        shares: optional ``team, pool, share, valid_from`` (pool = cluster): Jain's index needs
            them; without, no ``jain`` rows.
        pending: optional never-started jobs (``cluster, eligible_at, end_at, req_gpus``), the
            censored spells of the wait percentiles (:func:`metrics.survival.wait_spells`).
        waterfall: optional ``gpu_waterfall_hourly`` rows (``cluster, hour, bucket, gpu_s``):
            ``preemption_loss_gpu_h`` and ``goodput_ratio`` need it, and with ``stranded``
            ``held_for_gangs_gpu_h`` (which also reads its ``gang_gpu_s``).
        stranded: optional ``topology_stranded_hourly`` rows (``cluster, hour``; clusters with
            a gang level only): the hours ``held_for_gangs_gpu_h`` counts.
        fair_hourly: optional :func:`metrics.fairness.fair_share_hourly` rows (``pool, hour,
            team, usage_gpu_s, demand_gpu_s, fair_gpu_s``; pool = cluster):
            ``entitlement_ratio_min`` needs them.

    Returns:
        ``cluster, day, kpi, unit, value, offered_load, capacity_gpu_h``, one row per cluster,
        day and KPI with a value: ``wait_p50_h[<bucket>]``/``wait_p90_h[<bucket>]`` (hours,
        Kaplan–Meier over the spells eligible that day, censored at ``as_of``; NULL
        percentiles left out; with ``job_id`` in ``jobs`` and ``pending``, a het job's
        components are one spell of their summed GPUs, :func:`metrics.het_jobs.
        het_wait_units`), ``occupancy`` (allocated ÷ available GPU-seconds), ``jain``
        (Jain's index of usage ÷ share over the teams that ran that day),
        ``held_for_gangs_gpu_h`` (GPU-hours, :func:`_held_for_gangs_kpi`),
        ``entitlement_ratio_min`` (ratio, :func:`_entitlement_kpi`), ``preemption_loss_gpu_h``
        (GPU-hours, :func:`_preemption_loss_kpi`), ``goodput_ratio`` (ratio,
        :func:`_goodput_ratio_kpi`). A KPI with the same value on every day of a cluster (of
        two days or more) is left out: it can show no effect. ``offered_load`` is
        the GPU-hours of the attempts that became eligible that day (GPUs × run time, the time
        limit while unfinished) ÷ available GPU-hours; ``capacity_gpu_h`` the available
        GPU-hours (capacity − down − planned down).
    """
    day = pl.col("hour").dt.truncate("1d").alias("day")
    avail = pl.col("capacity_gpu_s") - pl.col("down_gpu_s") - pl.col("planned_down_gpu_s")
    cap = (
        occupancy.group_by("cluster", day)
        .agg(
            (avail.sum() / 3600).alias("capacity_gpu_h"),
            pl.col("allocated_gpu_s").sum().alias("_alloc"),
            avail.sum().alias("_avail"),
        )
        .with_columns(pl.col("day").cast(UTC_US))
    )
    work = (
        jobs.filter(
            pl.col("eligible_at").is_not_null() & (pl.coalesce("req_gpus", "gpus").fill_null(0) > 0)
        )
        .group_by("cluster", pl.col("eligible_at").dt.truncate("1d").cast(UTC_US).alias("day"))
        .agg(
            (pl.coalesce("req_gpus", "gpus") * pl.coalesce("run_s", "timelimit_s").fill_null(0.0))
            .sum()
            .alias("_w")
            / 3600
        )
    )
    cov = cap.join(work, on=["cluster", "day"], how="left").select(
        "cluster", "day", "capacity_gpu_h",
        pl.when(pl.col("capacity_gpu_h") > 0)
        .then(pl.col("_w").fill_null(0.0) / pl.col("capacity_gpu_h"))
        .alias("offered_load"),
    )  # fmt: skip
    parts = [_wait_kpis(jobs, as_of, pending), _occupancy_kpi(cap)]
    if shares is not None and shares.height:
        parts.append(_jain_kpi(jobs, shares))
    if waterfall is not None and waterfall.height:
        parts += [_preemption_loss_kpi(waterfall), _goodput_ratio_kpi(waterfall)]
        if stranded is not None and stranded.height:
            parts.append(_held_for_gangs_kpi(waterfall, stranded))
    if fair_hourly is not None and fair_hourly.height:
        parts.append(_entitlement_kpi(fair_hourly))
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema=_KPI_SCHEMA)
    long = pl.concat(parts, how="vertical_relaxed")
    # A KPI that never varies on a cluster (no preemption ever, goodput ratio 1 without
    # telemetry or failures) can show no effect: it is left out rather than reported as
    # "no detectable effect" with a zero interval.
    varies = (pl.col("value").max() > pl.col("value").min()).over("cluster", "kpi")
    return (
        long.filter(varies | (pl.len().over("cluster", "kpi") == 1))
        .join(cov, on=["cluster", "day"], how="inner")
        .select(list(_KPI_SCHEMA))
        .cast(_KPI_SCHEMA)  # type: ignore[arg-type]
        .sort("cluster", "kpi", "day")
    )


_KPI_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(), "day": UTC_US, "kpi": pl.String(), "unit": pl.String(),
    "value": pl.Float64(), "offered_load": pl.Float64(), "capacity_gpu_h": pl.Float64(),
}  # fmt: skip


def _wait_kpis(
    jobs: pl.DataFrame, as_of: pl.DataFrame, pending: pl.DataFrame | None
) -> pl.DataFrame:
    """``wait_p50_h[b]``, ``wait_p90_h[b]`` per cluster and eligible day (Kaplan–Meier).

    With ``job_id`` in ``jobs``, a het job's components are one spell
    (:func:`metrics.het_jobs.het_wait_units`), as in time to start."""
    out = []
    units = "job_id" in jobs.columns
    for row in as_of.filter(pl.col("as_of").is_not_null()).iter_rows(named=True):
        c = jobs.filter(pl.col("cluster") == row["cluster"])
        if c.height == 0:
            continue
        p = None
        if pending is not None:
            ids = ["job_id"] if units and "job_id" in pending.columns else []
            p = pending.filter(pl.col("cluster") == row["cluster"]).select(
                "cluster", *ids, "eligible_at", "end_at", "req_gpus"
            )
        att, never = c.lazy(), p.lazy() if p is not None and p.height else None
        if units and (never is None or "job_id" in never.collect_schema().names()):
            att, never = het_wait_units(att, never)
        spells = wait_spells(att, row["as_of"], pending=never).with_columns(
            pl.col("eligible_at").dt.truncate("1d").cast(UTC_US).alias("day")
        )
        pct = wait_percentiles_km(spells, ("cluster", "day", "bucket"), (0.5, 0.9)).collect()
        for q in ("p50", "p90"):
            out.append(
                pct.filter(pl.col(f"km_{q}_s").is_not_null() & pl.col("bucket").is_not_null())
                .select(
                    "cluster", "day",
                    (pl.lit(f"wait_{q}_h[") + pl.col("bucket") + pl.lit("]")).alias("kpi"),
                    pl.lit("h").alias("unit"),
                    (pl.col(f"km_{q}_s") / 3600).alias("value"),
                )
            )  # fmt: skip
    return pl.concat(out) if out else pl.DataFrame()


def _occupancy_kpi(cap: pl.DataFrame) -> pl.DataFrame:
    return cap.filter(pl.col("_avail") > 0).select(
        "cluster", "day", pl.lit("occupancy").alias("kpi"), pl.lit("ratio").alias("unit"),
        (pl.col("_alloc") / pl.col("_avail")).alias("value"),
    )  # fmt: skip


def _jain_kpi(jobs: pl.DataFrame, shares: pl.DataFrame) -> pl.DataFrame:
    """Jain's index of ``usage ÷ share`` over the teams with a share that ran that day."""
    used = (
        jobs.filter(pl.col("start_at").is_not_null() & (pl.col("gpus").fill_null(0) > 0))
        .with_columns(
            pl.col("start_at").dt.truncate("1d").cast(UTC_US).alias("day"),
            (pl.col("gpus") * pl.col("run_s").fill_null(0.0)).alias("_gpu_s"),
        )
        .group_by("cluster", "team", "day")
        .agg(pl.col("_gpu_s").sum())
        .filter(pl.col("_gpu_s") > 0)
        .sort("day")
    )
    sh = (
        shares.select(
            pl.col("pool").alias("cluster"), "team", "share",
            pl.col("valid_from").cast(UTC_US).alias("day"),
        )
        .filter(pl.col("share") > 0)
        .sort("day")
    )  # fmt: skip
    x = used.join_asof(
        sh, on="day", by=["cluster", "team"], strategy="backward", check_sortedness=False
    ).filter(pl.col("share").is_not_null())
    v = pl.col("_gpu_s") / pl.col("share")
    return (
        x.group_by("cluster", "day")
        .agg(((v.sum() ** 2) / (v.len() * (v * v).sum())).alias("value"))
        .select(
            "cluster", "day", pl.lit("jain").alias("kpi"), pl.lit("index").alias("unit"), "value"
        )
    )  # fmt: skip


def _leaves_daily(waterfall: pl.DataFrame) -> pl.DataFrame:
    """``cluster, day, <leaf>…``: the waterfall's GPU-seconds per UTC day, one column per leaf
    (0 where a leaf has no row)."""
    return (
        waterfall.with_columns(
            pl.col("hour").cast(UTC_US).dt.truncate("1d").alias("day"),
            pl.col("bucket").cast(pl.String),
        )
        .group_by("cluster", "day")
        .agg(
            pl.col("gpu_s").filter(pl.col("bucket") == leaf).sum().alias(leaf)
            for leaf in WATERFALL_LEAVES
        )
    )


def _preemption_loss_kpi(waterfall: pl.DataFrame) -> pl.DataFrame:
    """``preemption_loss_gpu_h``: the ``preempted_work`` leaf of the day in GPU-hours (the
    allocated time of attempts ended by preemption; under the ``checkpoint`` loss policy only
    their lost part), METRICS.md waterfall rule 5."""
    return _leaves_daily(waterfall).select(
        "cluster", "day", pl.lit("preemption_loss_gpu_h").alias("kpi"),
        pl.lit("GPU-h").alias("unit"), (pl.col("preempted_work") / 3600).alias("value"),
    )  # fmt: skip


def _goodput_ratio_kpi(waterfall: pl.DataFrame) -> pl.DataFrame:
    """``goodput_ratio``: the day's ``goodput`` leaf ÷ its allocated leaves (3–9), days with
    allocated time only."""
    alloc = pl.sum_horizontal(ALLOCATED_LEAVES)
    return (
        _leaves_daily(waterfall)
        .filter(alloc > 0)
        .select(
            "cluster", "day", pl.lit("goodput_ratio").alias("kpi"),
            pl.lit("ratio").alias("unit"), (pl.col("goodput") / alloc).alias("value"),
        )
    )  # fmt: skip


def _held_for_gangs_kpi(waterfall: pl.DataFrame, stranded: pl.DataFrame) -> pl.DataFrame:
    """``held_for_gangs_gpu_h``: Σ over the day's hours of held for gangs in GPU-hours, the
    ``held_for_gangs`` split of ``stranded_gpu_hourly`` (METRICS.md "Domain capacity"): the
    ``held`` row's ``gang_gpu_s`` of :func:`metrics.waterfall.gpu_waterfall_hourly`, min(held,
    ∫ min(free GPUs, pending GPUs of jobs wider than one node) dt) per cluster-hour, on the
    time axis as held itself (at most held); clusters with a gang level only (the hours of
    ``stranded``)."""
    held = (
        waterfall.filter(pl.col("bucket").cast(pl.String) == "held")
        .group_by("cluster", pl.col("hour").cast(UTC_US))
        .agg(pl.col("gpu_s").sum().alias("_held"), pl.col("gang_gpu_s").sum().alias("_gang"))
    )
    return (
        stranded.select("cluster", pl.col("hour").cast(UTC_US))
        .unique()
        .join(held, on=["cluster", "hour"], how="left")
        .group_by("cluster", pl.col("hour").dt.truncate("1d").alias("day"))
        .agg((
            pl.min_horizontal(pl.col("_held").fill_null(0.0), pl.col("_gang").fill_null(0.0)).sum()
            / 3600
        ).alias("value"))
        .select(
            "cluster", "day", pl.lit("held_for_gangs_gpu_h").alias("kpi"),
            pl.lit("GPU-h").alias("unit"), "value",
        )
    )  # fmt: skip


def _entitlement_kpi(fair_hourly: pl.DataFrame) -> pl.DataFrame:
    """``entitlement_ratio_min``: the lowest entitlement ratio U_t ÷ F_t of the day over the
    teams with demand and a fair allocation that day (the worst-served team; usage, demand and
    fair GPU-seconds summed over the day's hours of the cluster, METRICS.md "Fairness")."""
    return (
        fair_hourly.group_by(
            pl.col("pool").alias("cluster"),
            pl.col("hour").cast(UTC_US).dt.truncate("1d").alias("day"),
            "team",
        )
        .agg(pl.col("usage_gpu_s", "demand_gpu_s", "fair_gpu_s").sum())
        .filter((pl.col("demand_gpu_s") > 0) & (pl.col("fair_gpu_s") > 0))
        .group_by("cluster", "day")
        .agg((pl.col("usage_gpu_s") / pl.col("fair_gpu_s")).min().alias("value"))
        .select(
            "cluster", "day", pl.lit("entitlement_ratio_min").alias("kpi"),
            pl.lit("ratio").alias("unit"), "value",
        )
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Estimators
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItsEstimate:
    """One estimate of a change's effect on one KPI series.

    Attributes:
        estimate: after − counterfactual, in the KPI's unit (the level-shift coefficient).
        se: its standard error: the larger of Newey–West and the conventional one.
        ci_low: lower end of the 95 % interval (Student t, residual degrees of freedom).
        ci_high: upper end.
        p_value: two-sided p-value of estimate = 0.
        n_pre: days with a value before the change (washout and transition left out).
        n_post: days with a value after.
        before: mean of the KPI before.
        after: mean of the KPI after.
        mde: minimum detectable effect, :data:`MDE_FACTOR` × ``se``.
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p_value: float
    n_pre: int
    n_post: int
    before: float
    after: float
    mde: float


def newey_west_lags(n: int) -> int:
    """The Newey–West lag length ⌊4 (n/100)^(2/9)⌋ [Newey & West 1994, Rev. Econ. Stud. 61(4)]."""
    return math.floor(4.0 * math.pow(n / 100, 2 / 9))


def _design(
    frame: pl.DataFrame, covariates: Sequence[str], *, trend: bool
) -> tuple[np.ndarray, list[str]]:
    """Columns ``const, [t,] post, covariates…``, leaving out a covariate that is constant or
    collinear with those before it (its coefficient is not identified)."""
    cols = [np.ones(frame.height)]
    names = ["const"]
    if trend:
        cols.append(frame["t"].to_numpy().astype(float))
        names.append("t")
    cols.append(frame["post"].cast(pl.Float64).to_numpy())
    names.append("post")
    for c in covariates:
        if c not in frame.columns:
            continue
        v = frame[c].cast(pl.Float64).to_numpy()
        if np.isnan(v).any():
            continue
        cand = np.column_stack([*cols, v])
        if np.linalg.matrix_rank(cand) == cand.shape[1]:
            cols.append(v)
            names.append(c)
    return np.column_stack(cols), names


def its_estimate(
    series: pl.DataFrame,
    change_day: dt.datetime,
    *,
    transition_end: dt.datetime | None = None,
    washout_days: float = 0.0,
    covariates: Sequence[str] = _COVARIATES,
    trend: bool = True,
) -> ItsEstimate | None:
    """Interrupted time series: the level shift of a daily KPI at a change.

    ``y_d = α + β·d + δ·post_d + Σ γ_k·x_k,d + ε_d`` by OLS, with Newey–West (HAC) errors
    (:func:`newey_west_lags` lags, small-sample correction) or the conventional OLS error where
    that is larger, and Student t on the residual degrees of freedom [Wagner et al. 2002,
    "Segmented regression analysis of interrupted time series studies in medication use
    research"; statsmodels ``cov_type='HAC'``]. ``δ`` is the estimate: the KPI after minus
    what it would have been without the change, in the KPI's unit.

    Args:
        series: ``day`` (UTC datetime), ``value`` and the covariate columns; NULL values are
            left out.
        change_day: first day of the transition (the day of the change).
        transition_end: first day after the transition (default ``change_day`` + 1 day): days
            in ``[change_day, transition_end)`` are left out (the change happened within them).
        washout_days: further days after ``transition_end`` left out (a fair-share change
            acts through decayed usage: one ``PriorityDecayHalfLife``).
        covariates: covariate columns (constant or collinear ones are dropped).
        trend: include the linear trend ``β·d``.

    Returns:
        The estimate, or None with fewer than :data:`MIN_DAYS` days on a side or no residual
        degrees of freedom.
    """
    t_end = transition_end or change_day + dt.timedelta(days=1)
    post_from = t_end + dt.timedelta(days=washout_days)
    s = series.filter(
        pl.col("value").is_not_null()
        & pl.col("value").is_not_nan()
        & ((pl.col("day") < change_day) | (pl.col("day") >= post_from))
    ).sort("day")
    if s.height == 0:
        return None
    first = s["day"].min()
    assert isinstance(first, dt.datetime)
    s = s.with_columns(
        ((pl.col("day") - pl.lit(first).cast(UTC_US)).dt.total_days()).alias("t"),
        (pl.col("day") >= post_from).alias("post"),
    )
    n_post = int(s["post"].sum())
    n_pre = s.height - n_post
    if n_pre < MIN_DAYS or n_post < MIN_DAYS:
        return None
    x, names = _design(s, covariates, trend=trend)
    y = s["value"].to_numpy().astype(float)
    if len(y) - x.shape[1] < 1:
        return None
    model = sm.OLS(y, x)
    fit = model.fit(
        cov_type="HAC",
        cov_kwds={"maxlags": newey_west_lags(len(y)), "use_correction": True},
        use_t=True,
    )
    k = names.index("post")
    est = float(fit.params[k])
    with np.errstate(invalid="ignore", divide="ignore"):  # an exact fit: variance 0 or −0
        # The larger of the Newey–West and the conventional SE: HAC errors are biased down in
        # samples of a few dozen days [Angrist & Pischke 2009, Mostly Harmless Econometrics
        # §8.2.1, "take the larger of robust and conventional standard errors"].
        se = max(float(fit.bse[k]), float(model.fit().bse[k]))
    if not math.isfinite(se) or se <= 1e-12 * max(1.0, abs(est)):
        se = 0.0
        p = 1.0 if abs(est) <= 1e-12 else 0.0
        lo = hi = est
    else:
        df = float(fit.df_resid)
        p = float(2 * stats.t.sf(abs(est) / se, df))
        half = float(stats.t.ppf(0.975, df)) * se
        lo, hi = est - half, est + half
    pre, post = s.filter(~pl.col("post")), s.filter(pl.col("post"))
    return ItsEstimate(
        estimate=est, se=se, ci_low=lo, ci_high=hi, p_value=p, n_pre=n_pre, n_post=n_post,
        before=float(pre["value"].mean()),  # type: ignore[arg-type]
        after=float(post["value"].mean()),  # type: ignore[arg-type]
        mde=MDE_FACTOR * se,
    )  # fmt: skip


def placebo_p_value(
    series: pl.DataFrame,
    change_day: dt.datetime,
    estimate: float,
    *,
    covariates: Sequence[str] = _COVARIATES,
    trend: bool = True,
) -> float | None:
    """The share of fake change dates in the pre-period whose estimate is as large.

    Every day of the pre-period that leaves :data:`MIN_DAYS` days on each side (within the
    pre-period) is a fake change date; the same regression is fitted there on the pre-period
    alone. Returns ``#{|placebo| ≥ |estimate|} ÷ #placebos`` [Abadie, Diamond & Hainmueller
    2010, placebo studies], None when no fake date fits.
    """
    pre = series.filter((pl.col("day") < change_day) & pl.col("value").is_not_null()).sort("day")
    days = pre["day"].to_list()
    placebos = []
    for d in days[MIN_DAYS : len(days) - MIN_DAYS + 1]:
        e = its_estimate(pre, d, transition_end=d, covariates=covariates, trend=trend)
        if e is not None:
            placebos.append(abs(e.estimate))
    if not placebos:
        return None
    return sum(1 for v in placebos if v >= abs(estimate) - 1e-12) / len(placebos)


def clean_controls(
    controls: pl.DataFrame,
    change_day: dt.datetime,
    *,
    transition_end: dt.datetime | None = None,
    washout_days: float = 0.0,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """The control clusters of a difference-in-differences that show no shift of their own at
    the change.

    A control untouched by the ledger may still have changed at that date (an unrecorded
    setting, an outage, a new workload); the DiD would then report that shift, sign flipped,
    as the treated cluster's effect. Each control's own series is estimated at the treated
    change (:func:`its_estimate`, the same transition, washout and covariates): a control is
    kept only when that estimate exists and is not significant (p ≥ ``alpha``): the placebo
    test on untreated units [Abadie, Diamond & Hainmueller 2010, §3 "placebo studies";
    Athey & Imbens 2017, "The state of applied econometrics", §4.2, placebo tests with a
    pseudo-treated control]. Unadjusted for multiplicity on purpose: a looser screen would
    keep more shifted controls.

    Args:
        controls: ``cluster, day, value`` (and the covariates) rows of one KPI on the
            candidate control clusters.
        change_day, transition_end, washout_days: as for :func:`its_estimate`.
        alpha: the level of the control's own test.

    Returns:
        The rows of the controls kept (empty when none is).
    """
    keep = []
    for cluster in controls["cluster"].unique().sort().to_list():
        own = controls.filter(pl.col("cluster") == cluster)
        e = its_estimate(own, change_day, transition_end=transition_end, washout_days=washout_days)
        if e is not None and e.p_value >= alpha:
            keep.append(cluster)
    return controls.filter(pl.col("cluster").is_in(keep))


def did_estimate(
    treated: pl.DataFrame,
    controls: pl.DataFrame,
    change_day: dt.datetime,
    *,
    transition_end: dt.datetime | None = None,
    washout_days: float = 0.0,
    leads: int = 3,
) -> tuple[ItsEstimate, float | None] | None:
    """Difference-in-differences against untouched clusters, with event-study leads.

    The treated series minus the controls' daily mean, regressed on a level shift at the
    change (no trend: the controls carry the common time effects; two-group DiD on the daily
    difference, Newey–West errors). The parallel-trends check: in the pre-period alone, the
    difference regressed on one indicator per each of the ``leads`` weeks before the change;
    the p-value of their joint F-test (large: no pre-trend).

    Args:
        treated: ``day, value`` of the changed cluster.
        controls: ``day, value`` rows of the untouched clusters (several per day).
        change_day: as for :func:`its_estimate`.
        transition_end: as for :func:`its_estimate`.
        washout_days: as for :func:`its_estimate`.
        leads: weeks before the change tested for a pre-trend.

    Returns:
        ``(estimate, leads_p_value)`` (the p-value None when the pre-period is too short for
        the leads), or None when the days in common are too few.
    """
    ctrl = controls.group_by("day").agg(pl.col("value").mean().alias("_c"))
    diff = (
        treated.join(ctrl, on="day", how="inner")
        .select("day", (pl.col("value") - pl.col("_c")).alias("value"))
        .drop_nulls()
    )
    est = its_estimate(
        diff, change_day, transition_end=transition_end, washout_days=washout_days,
        covariates=(), trend=False,
    )  # fmt: skip
    if est is None:
        return None
    pre = diff.filter(pl.col("day") < change_day).sort("day")
    weeks_before = ((pl.lit(change_day).cast(UTC_US) - pl.col("day")).dt.total_days() - 1) // 7
    pre = pre.with_columns(weeks_before.alias("w"))
    if pre.height < MIN_DAYS + leads or pre["w"].max() is None or int(pre["w"].max()) < leads:  # type: ignore[arg-type]
        return est, None
    x = np.column_stack(
        [np.ones(pre.height)] + [(pre["w"] == k).cast(pl.Float64).to_numpy() for k in range(leads)]
    )
    y = pre["value"].to_numpy().astype(float)
    fit = sm.OLS(y, x).fit(
        cov_type="HAC", cov_kwds={"maxlags": newey_west_lags(len(y)), "use_correction": True},
        use_t=True,
    )  # fmt: skip
    r = np.zeros((leads, x.shape[1]))
    for k in range(leads):
        r[k, k + 1] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = float(fit.f_test(r).pvalue)
    return est, p if math.isfinite(p) else None


# ----------------------------------------------------------------------------------------------
# Bundles and the impact table
# ----------------------------------------------------------------------------------------------


def slurm_duration_days(text: str | None) -> float | None:
    """A Slurm duration (``7-00:00:00``, ``14:00:00``, ``30:00``, ``60``: minutes) in days."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?\s*", text)
    if m is None:
        return None
    d, a, b, c = m.groups()
    days = int(d) if d else 0
    if b is None:  # "MM" or "D-HH"
        secs = int(a) * (3600 if d else 60)
    elif c is None:  # "MM:SS" or "D-HH:MM"
        secs = int(a) * 3600 + int(b) * 60 if d else int(a) * 60 + int(b)
    else:
        secs = int(a) * 3600 + int(b) * 60 + int(c)
    return days + secs / 86400


def bundle_changes(changes: pl.DataFrame, gap_days: float = BUNDLE_DAYS) -> pl.DataFrame:
    """Ledger changes grouped into bundles: one cluster, each less than ``gap_days`` after the
    previous one of the bundle.

    Args:
        changes: ``policy_changes`` rows (``change_id, cluster, scope, key, changed_at,
            changed_after``).
        gap_days: the largest gap within a bundle.

    Returns:
        The rows with ``bundle_id`` (hash of the bundle's sorted change ids),
        ``bundle_from`` (UTC midnight of the earliest possible change time: ``changed_after``
        where the time is an interval), ``bundle_to`` (UTC midnight after the latest
        ``changed_at``), ``bundle_scope`` (its distinct scopes, comma-joined) and
        ``fair_share`` (whether any change of the bundle acts through fair-share usage).
    """
    if changes.height == 0:
        return changes.with_columns(
            pl.lit(None, dtype=pl.String()).alias("bundle_id"),
            pl.lit(None, dtype=UTC_US).alias("bundle_from"),
            pl.lit(None, dtype=UTC_US).alias("bundle_to"),
            pl.lit(None, dtype=pl.String()).alias("bundle_scope"),
            pl.lit(None, dtype=pl.Boolean()).alias("fair_share"),
        )
    gap = dt.timedelta(days=gap_days)
    c = changes.with_columns(
        pl.coalesce("changed_after", "changed_at").alias("_from"),
        pl.col("key").str.contains(FAIR_SHARE_KEYS.pattern).fill_null(False).alias("_fs"),
    ).sort("cluster", "_from", "changed_at")
    seq = (
        (pl.col("_from") - pl.col("changed_at").cum_max().shift(1).over("cluster")) >= gap
    ).fill_null(True)
    c = c.with_columns(seq.cum_sum().over("cluster").alias("_b"))
    per = c.group_by("cluster", "_b").agg(
        pl.col("change_id").sort().str.join(",").alias("_ids"),
        pl.col("_from").min().dt.truncate("1d").alias("bundle_from"),
        (pl.col("changed_at").max().dt.truncate("1d") + pl.duration(days=1)).alias("bundle_to"),
        pl.col("scope").unique().sort().str.join(",").alias("bundle_scope"),
        pl.col("_fs").any().alias("fair_share"),
    )
    per = per.with_columns(
        pl.col("_ids")
        .map_elements(lambda s: hashlib.sha256(s.encode()).hexdigest()[:16], return_dtype=pl.String)
        .alias("bundle_id")
    )
    return c.join(per, on=["cluster", "_b"]).drop("_from", "_fs", "_b", "_ids")


def _verdict(kpi: str, est: ItsEstimate | None, p_adjusted: float | None = None) -> str:
    """``improved`` / ``regressed`` where the p-value (``p_adjusted``, the Holm-adjusted one,
    where given) is below :data:`ALPHA`, by the KPI's direction; ``no detectable effect``;
    ``too little data`` without an estimate."""
    if est is None:
        return "too little data"
    p = est.p_value if p_adjusted is None else p_adjusted
    if p >= ALPHA or est.estimate == 0:
        return "no detectable effect"
    sign = KPI_DIRECTION.get(kpi.split("[", 1)[0], 1)
    return "improved" if est.estimate * sign > 0 else "regressed"


def change_impact(
    changes: pl.DataFrame,
    kpis: pl.DataFrame,
    *,
    half_life_days: dict[str, float] | None = None,
) -> pl.DataFrame:
    """The measured effect of every ledger change (bundle) on every KPI of its cluster.

    Each bundle (:func:`bundle_changes`) is estimated on its cluster's daily KPIs
    (:func:`daily_kpis`) between the neighbouring bundles of that cluster (or the data's ends):
    pre-period from the previous bundle's end to ``bundle_from``, post-period from ``bundle_to``
    (after a washout of one ``PriorityDecayHalfLife`` for fair-share changes) to the next
    bundle's start. Methods: ``its`` (:func:`its_estimate`, with :func:`placebo_p_value`) for
    every KPI; ``did`` (:func:`did_estimate`) where another cluster has the KPI, no ledger
    change in the window and no shift of its own at the change (:func:`clean_controls`),
    published only when its event-study leads show no pre-trend (p ≥ 0.05).

    Args:
        changes: ``policy_changes`` rows (a row without ``changed_at`` is left out).
        kpis: :func:`daily_kpis` output.
        half_life_days: ``PriorityDecayHalfLife`` per cluster in days (Slurm's default 7 where
            absent).

    Returns:
        :data:`IMPACT_SCHEMA` rows, one per change × KPI × method (a bundle's changes carry
        the bundle's estimate); ``p_value`` unadjusted, the verdict from the Holm-adjusted p
        over the bundle's KPIs of that method; a KPI with too few days on a side has verdict
        ``too little data`` and NULL numbers.
    """
    changes = changes.filter(pl.col("changed_at").is_not_null())
    if changes.height == 0 or kpis.height == 0:
        return pl.DataFrame(schema=IMPACT_SCHEMA)
    half = half_life_days or {}
    bundles = bundle_changes(changes)
    spans = (
        bundles.group_by("cluster", "bundle_id")
        .agg(
            pl.col("bundle_from").first(), pl.col("bundle_to").first(),
            pl.col("bundle_scope").first(), pl.col("fair_share").first(),
            pl.col("change_id").sort(),
        )
        .sort("cluster", "bundle_from")
    )  # fmt: skip
    rows: list[dict[str, object]] = []
    for cluster in spans["cluster"].unique(maintain_order=True).to_list():
        cl = spans.filter(pl.col("cluster") == cluster)
        cl_kpis = kpis.filter(pl.col("cluster") == cluster)
        for i, b in enumerate(cl.iter_rows(named=True)):
            lo = cl["bundle_to"][i - 1] if i > 0 else None
            hi = cl["bundle_from"][i + 1] if i + 1 < cl.height else None
            washout = half.get(cluster, 7.0) if b["fair_share"] else 0.0
            rows.extend(_bundle_rows(b, cl_kpis, kpis, spans, cluster, lo, hi, washout))
    if not rows:
        return pl.DataFrame(schema=IMPACT_SCHEMA)
    return pl.DataFrame(rows, schema=IMPACT_SCHEMA).sort(
        "cluster", "window_start", "change_id", "kpi", "method"
    )


def _bundle_rows(
    b: dict[str, object],
    cl_kpis: pl.DataFrame,
    kpis: pl.DataFrame,
    spans: pl.DataFrame,
    cluster: str,
    lo: dt.datetime | None,
    hi: dt.datetime | None,
    washout: float,
) -> list[dict[str, object]]:
    start, end = b["bundle_from"], b["bundle_to"]
    assert isinstance(start, dt.datetime) and isinstance(end, dt.datetime)
    window = cl_kpis.filter(
        (pl.col("day") >= (lo or dt.datetime.min.replace(tzinfo=dt.UTC)))
        & (pl.col("day") < (hi or dt.datetime.max.replace(tzinfo=dt.UTC)))
    )
    if window.height == 0:
        return []
    w0, w1 = window["day"].min(), window["day"].max()
    assert isinstance(w0, dt.datetime) and isinstance(w1, dt.datetime)
    # Untouched clusters: no bundle of theirs starts or ends inside this window.
    touched = spans.filter(
        (pl.col("cluster") != cluster) & (pl.col("bundle_from") <= w1) & (pl.col("bundle_to") >= w0)
    )["cluster"].unique()
    ctrl_all = kpis.filter(
        (pl.col("cluster") != cluster) & ~pl.col("cluster").is_in(touched.implode())
        & pl.col("day").is_between(w0, w1)
    )  # fmt: skip
    found: list[tuple[dict[str, object], str, ItsEstimate | None, float | None, str]] = []
    for kpi in window["kpi"].unique().sort().to_list():
        s = window.filter(pl.col("kpi") == kpi)
        unit = s["unit"][0]
        est = its_estimate(s, start, transition_end=end, washout_days=washout)
        placebo = placebo_p_value(s, start, est.estimate) if est is not None else None
        base = {
            "bundle_id": b["bundle_id"], "cluster": cluster, "scope": b["bundle_scope"],
            "kpi": kpi, "window_start": w0, "window_end": w1 + dt.timedelta(days=1),
            "unit": unit,
        }  # fmt: skip
        found.append((base, "its", est, placebo, kpi))
        ctrl = clean_controls(
            ctrl_all.filter(pl.col("kpi") == kpi), start, transition_end=end, washout_days=washout
        )
        if ctrl.height == 0 or est is None:
            continue
        did = did_estimate(
            s.select("day", "value"), ctrl.select("day", "value"), start,
            transition_end=end, washout_days=washout,
        )  # fmt: skip
        if did is None or did[1] is None or did[1] < 0.05:
            continue
        found.append((base, "did", did[0], None, kpi))
    # One family per bundle and method: the bundle's KPIs (Holm, :func:`holm_adjust`).
    adjusted: dict[tuple[str, str], float] = {}
    for method in ("its", "did"):
        tested = [(f[4], f[2].p_value) for f in found if f[1] == method and f[2] is not None]
        adj = holm_adjust([p for _, p in tested])
        adjusted.update({(method, k): a for (k, _), a in zip(tested, adj, strict=True)})
    return [
        _row(base, cid, method, est, placebo, kpi, adjusted.get((method, kpi)))
        for base, method, est, placebo, kpi in found
        for cid in b["change_id"]  # type: ignore[attr-defined]
    ]


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values [Holm 1979, "A simple sequentially rejective
    multiple test procedure", Scand. J. Statist. 6(2)]; statsmodels ``multipletests(…,
    method='holm')``: sorted ascending, p₍ᵢ₎ × (m − i + 1), made monotone, capped at 1.

    Rejecting where the adjusted p < α keeps the chance of *any* false verdict among the m
    tests at most α, whatever their dependence (a bundle's KPIs are correlated: p50 and p90 of
    one bucket, occupancy and waits)."""
    if not p_values:
        return []
    return [float(v) for v in multipletests(list(p_values), method="holm")[1]]


def _row(
    base: dict[str, object],
    change_id: str,
    method: str,
    est: ItsEstimate | None,
    placebo: float | None,
    kpi: str,
    p_adjusted: float | None = None,
) -> dict[str, object]:
    nums: dict[str, object] = {
        "n_pre": None, "n_post": None, "before": None, "after": None, "estimate": None,
        "ci_low": None, "ci_high": None, "p_value": None, "mde": None,
    }  # fmt: skip
    if est is not None:
        nums = {
            "n_pre": est.n_pre, "n_post": est.n_post, "before": est.before, "after": est.after,
            "estimate": est.estimate, "ci_low": est.ci_low, "ci_high": est.ci_high,
            "p_value": est.p_value, "mde": est.mde,
        }  # fmt: skip
    return {
        **base, **nums, "change_id": change_id, "method": method, "placebo_p": placebo,
        "verdict": _verdict(kpi, est, p_adjusted),
    }  # fmt: skip
