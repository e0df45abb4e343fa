"""The replay counterfactual of a policy change: the post-change workload under the old settings.

METRICS.md "Policy change impact", method ``replay``. For a ledger bundle whose every change is
a setting the scheduler model (:mod:`metrics.scheduler_model`) honours, the jobs of the
post-change window (with their recorded eligible times, GPUs, run times, time limits and QOS)
are replayed twice on the cluster's nodes: under the settings in force before the change (the
*old* settings: the counterfactual) and after it (the *new* settings: the model checked against
what happened). Per KPI (Kaplan–Meier p50/p90 time to start per size bucket of the spells that
became eligible each UTC day, as :func:`metrics.policy_impact.daily_kpis` defines them):

- estimate = mean over the post days of (observed − replayed under the old settings);
- model check = mean over the same days of (observed − replayed under the new settings): the
  model's error on this very workload;
- interval = estimate ± max(floor, |model check|), the floor being the model's median absolute
  start error of the size bucket measured in docs/scheduler-model.md, at least 1 h
  (:data:`START_ERROR_FLOOR_H`).

Changes the model cannot represent (PriorityWeight*: the model orders by QOS only; fair-share
shares, QOS and association limits, reservations, Kueue objects) get no replay row, nor does a
bundle holding one of them (its effect could not be replayed whole).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

import polars as pl

from metrics.het_jobs import het_wait_units
from metrics.policy_impact import IMPACT_SCHEMA, KPI_DIRECTION, bundle_changes
from metrics.scheduler_model import (
    Node,
    SchedulerSettings,
    SimJob,
    jobs_from_frame,
    simulate,
)
from metrics.survival import wait_percentiles_km, wait_spells

__all__ = [
    "REPLAY_KEYS",
    "START_ERROR_FLOOR_H",
    "WARMUP_DAYS",
    "replay_impact",
    "replay_wait_kpis",
    "scheduler_settings",
]

UTC_US = pl.Datetime("us", "UTC")


def _seconds(v: str) -> float:
    return float(v)


def _minutes(v: str) -> float:
    return float(v) * 60.0


#: Ledger keys the model represents → (``SchedulerSettings`` field, value parser). Units are
#: slurm.conf(5)'s: ``bf_window`` in minutes, ``bf_resolution`` and ``bf_min_age_reserve`` in
#: seconds.
REPLAY_KEYS: Final[dict[str, tuple[str, Callable[[str], float]]]] = {
    "SchedulerParameters:bf_min_age_reserve": ("bf_min_age_reserve_s", _seconds),
    "SchedulerParameters:bf_window": ("bf_window_s", _minutes),
    "SchedulerParameters:bf_resolution": ("bf_resolution_s", _seconds),
    "SchedulerParameters:bf_max_job_test": ("bf_max_job_test", _seconds),
}

#: The model's median absolute start error per size bucket, in hours: docs/scheduler-model.md,
#: "Results (seed 7, 14 days)", settings ``generator`` (0.0, 12.4, 183.3 and 256.8 min), at
#: least the validation's own tolerance of 1 h (its "within 1 h" share: an error below it is
#: not resolved); a bucket above 64-255 takes 64-255's (the largest measured).
START_ERROR_FLOOR_H: Final[dict[str, float]] = {
    "<1": 1.0,
    "1": max(0.0 / 60, 1.0),
    "2-8": max(12.4 / 60, 1.0),
    "9-63": max(183.3 / 60, 1.0),
    "64-255": max(256.8 / 60, 1.0),
}
#: Days replayed before the post-change window so the replayed queue is full when it starts
#: (the validation's three days, docs/scheduler-model.md).
WARMUP_DAYS: Final = 3


def scheduler_settings(
    config: Mapping[str, str], overrides: Mapping[str, str | None] | None = None
) -> SchedulerSettings:
    """The model's settings from a cluster's ``scontrol show config`` and ledger values.

    Args:
        config: ``scontrol show config`` name → value (``SchedulerParameters`` is read item by
            item: ``bf_window=2880,bf_min_age_reserve=57600``, and the flag ``bf_continue``);
            empty: Slurm's defaults.
        overrides: ledger keys of :data:`REPLAY_KEYS` → value (None: the key unset, Slurm's
            default), applied after ``config``.

    Returns:
        :class:`metrics.scheduler_model.SchedulerSettings` (other fields at Slurm's defaults).

    Raises:
        ValueError: a value of a :data:`REPLAY_KEYS` key is not a number.
    """
    items: dict[str, str | None] = {}
    flags: set[str] = set()
    for item in (config.get("SchedulerParameters") or "").split(","):
        name, eq, text = item.strip().partition("=")
        key = f"SchedulerParameters:{name}"
        if key in REPLAY_KEYS and text:
            items[key] = text
        elif not eq:
            flags.add(name)
    items.update(overrides or {})
    default = SchedulerSettings()
    values: dict[str, float] = {}
    for key, value in items.items():
        if key not in REPLAY_KEYS:
            continue
        field, parse = REPLAY_KEYS[key]
        try:
            values[field] = getattr(default, field) if value is None else parse(value)
        except ValueError as exc:
            raise ValueError(f"{key}={value!r}: not a number") from exc
    return replace(
        default,
        bf_window_s=float(values.get("bf_window_s", default.bf_window_s)),
        bf_resolution_s=float(values.get("bf_resolution_s", default.bf_resolution_s)),
        bf_max_job_test=int(values.get("bf_max_job_test", default.bf_max_job_test)),
        bf_continue="bf_continue" in flags,
        bf_min_age_reserve_s=float(
            values.get("bf_min_age_reserve_s", default.bf_min_age_reserve_s)
        ),
    )


def replay_wait_kpis(spells_jobs: pl.DataFrame, as_of: dt.datetime) -> pl.DataFrame:
    """Daily Kaplan–Meier p50/p90 time to start per size bucket of ``jobs``-shaped rows.

    The KPI definition of :func:`metrics.policy_impact.daily_kpis` (METRICS.md "Policy change
    impact"): spells by :func:`metrics.survival.wait_spells` (censored at ``as_of``), grouped by
    the UTC day of their eligible time and size bucket, KM percentiles by
    :func:`metrics.survival.wait_percentiles_km`.

    Args:
        spells_jobs: ``cluster, eligible_at, start_at, end_at, gpus, req_gpus`` (a row without a
            start waits censored).
        as_of: the cut-off.

    Returns:
        ``cluster, day, kpi, value`` (``wait_p50_h[<bucket>]``, ``wait_p90_h[<bucket>]``, hours;
        NULL percentiles left out).
    """
    spells = wait_spells(spells_jobs.lazy(), as_of).with_columns(
        pl.col("eligible_at").dt.truncate("1d").cast(UTC_US).alias("day")
    )
    pct = wait_percentiles_km(spells, ("cluster", "day", "bucket"), (0.5, 0.9)).collect()
    out = [
        pct.filter(pl.col(f"km_{q}_s").is_not_null() & pl.col("bucket").is_not_null()).select(
            "cluster",
            "day",
            (pl.lit(f"wait_{q}_h[") + pl.col("bucket") + pl.lit("]")).alias("kpi"),
            (pl.col(f"km_{q}_s") / 3600).alias("value"),
        )
        for q in ("p50", "p90")
    ]
    return pl.concat(out).sort("cluster", "kpi", "day")


def _replayed(
    frame: pl.DataFrame, sim: list[SimJob], starts: dict[str, float | None]
) -> pl.DataFrame:
    """``frame`` (one row per ``sim`` job, same order) with replayed ``start_at, end_at, gpus``."""
    start = [starts[j.job_id] for j in sim]
    end = [
        None if s is None else s + min(j.runtime_s, j.limit_s)
        for s, j in zip(start, sim, strict=True)
    ]
    us = pl.Series([None if s is None else int(s * 1e6) for s in start], dtype=pl.Int64)
    ue = pl.Series([None if e is None else int(e * 1e6) for e in end], dtype=pl.Int64)
    return frame.with_columns(
        us.cast(UTC_US).alias("start_at"),
        ue.cast(UTC_US).alias("end_at"),
        pl.Series([float(j.gpus) for j in sim]).alias("gpus"),
        pl.Series([float(j.gpus) for j in sim]).alias("req_gpus"),
    )


def _floor(kpi: str) -> float:
    bucket = kpi.split("[", 1)[1].rstrip("]") if "[" in kpi else ""
    return START_ERROR_FLOOR_H.get(bucket, START_ERROR_FLOOR_H["64-255"])


def replay_impact(
    changes: pl.DataFrame,
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    *,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    pending: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``replay`` rows of ``policy_change_impact``: observed − replayed under the old settings.

    For each bundle (:func:`metrics.policy_impact.bundle_changes`) whose changes all have keys
    in :data:`REPLAY_KEYS`: the post window runs from the bundle's end (UTC midnight after its
    last change) to the next bundle of the cluster or the cluster's cut-off. The attempts (and
    never-started jobs) of that cluster eligible from :data:`WARMUP_DAYS` days before the window
    to its end (:func:`metrics.scheduler_model.jobs_from_frame`: recorded run time, time limit,
    QOS priority) are replayed on its nodes under the old and the new settings
    (:func:`scheduler_settings` of ``configs[cluster]`` with the bundle's ``old``/``new``
    values), up to the window end; a het job's components (``H+O``) are one job asking their
    GPUs together (:func:`metrics.het_jobs.het_wait_units`: Slurm allocates them at once).
    Per KPI with a value on a post day in the observed and both replays
    (:func:`replay_wait_kpis` over the spells eligible in the window), the estimate, model
    check and interval are as in the module docstring.

    Args:
        changes: ``policy_changes`` rows (``change_id, cluster, scope, key, old, new,
            changed_at, changed_after``).
        jobs: the ``jobs`` view's rows (``cluster, job_id, attempt, partition, qos, gpus,
            req_gpus, eligible_at, start_at, end_at, timelimit_s``).
        nodes: ``cluster, host, partition, gpus``.
        as_of: ``cluster, as_of`` (the cut-off).
        configs: cluster → its ``scontrol show config`` (the latest snapshot; settings not
            changed by the bundle are taken from it; absent: Slurm's defaults).
        pending: optional never-started jobs (``cluster, job_id, partition, req_gpus,
            eligible_at, end_at``: the cancel time), replayed with Slurm's default time limit
            of a day.

    Returns:
        :data:`metrics.policy_impact.IMPACT_SCHEMA` rows with ``method = 'replay'``, one per
        change × KPI: ``before`` the replayed-under-old mean, ``after`` the observed mean,
        ``n_post`` the days, ``estimate``, ``ci_low``/``ci_high``, ``verdict`` (``improved`` or
        ``regressed`` when the interval excludes 0, by the KPI's direction; else ``no detectable
        effect``); ``n_pre``, ``p_value``, ``placebo_p`` and ``mde`` NULL.
    """
    changes = changes.filter(pl.col("changed_at").is_not_null())
    if changes.height == 0 or jobs.height == 0:
        return pl.DataFrame(schema=IMPACT_SCHEMA)
    cuts = {r["cluster"]: r["as_of"] for r in as_of.iter_rows(named=True) if r["as_of"]}
    bundles = bundle_changes(changes).sort("cluster", "bundle_from", "changed_at")
    spans = (
        bundles.group_by("cluster", "bundle_id", maintain_order=True)
        .agg(
            pl.col("bundle_from").first(), pl.col("bundle_to").first(),
            pl.col("bundle_scope").first(), pl.col("change_id"), pl.col("key"),
            pl.col("old"), pl.col("new"),
        )
        .sort("cluster", "bundle_from")
    )  # fmt: skip
    rows: list[dict[str, object]] = []
    for b in spans.iter_rows(named=True):
        cluster = b["cluster"]
        if cluster not in cuts or not all(k in REPLAY_KEYS for k in b["key"]):
            continue
        nxt = spans.filter(
            (pl.col("cluster") == cluster) & (pl.col("bundle_from") > b["bundle_from"])
        )
        w0 = b["bundle_to"]
        w1 = min([cuts[cluster], *nxt["bundle_from"].to_list()])
        if w1 <= w0:
            continue
        base = (configs or {}).get(cluster, {})
        old = scheduler_settings(base, dict(zip(b["key"], b["old"], strict=True)))
        new = scheduler_settings(base, dict(zip(b["key"], b["new"], strict=True)))
        rows.extend(_bundle_rows(b, jobs, nodes, pending, w0, w1, old, new))
    if not rows:
        return pl.DataFrame(schema=IMPACT_SCHEMA)
    return pl.DataFrame(rows, schema=IMPACT_SCHEMA).sort(
        "cluster", "window_start", "change_id", "kpi", "method"
    )


def _bundle_rows(
    b: dict[str, object],
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    pending: pl.DataFrame | None,
    w0: dt.datetime,
    w1: dt.datetime,
    old: SchedulerSettings,
    new: SchedulerSettings,
) -> list[dict[str, object]]:
    cluster = str(b["cluster"])
    node_list = [
        Node(str(r["host"]), str(r["partition"]), int(r["gpus"]))
        for r in nodes.filter(
            (pl.col("cluster") == cluster)
            & pl.col("partition").is_not_null()
            & (pl.col("gpus") > 0)
        )
        .unique("host", keep="first")
        .sort("host")
        .iter_rows(named=True)
    ]
    parts = {n.partition for n in node_list}
    lo = w0 - dt.timedelta(days=WARMUP_DAYS)
    sel = (
        (pl.col("cluster") == cluster)
        & pl.col("partition").is_in(sorted(parts))
        & pl.col("eligible_at").is_between(lo, w1, closed="left")
    )
    cols = ["cluster", "job_id", "attempt", "partition", "qos", "gpus", "req_gpus",
            "eligible_at", "start_at", "end_at", "timelimit_s"]  # fmt: skip
    frame = jobs.filter(sel).select([c for c in cols if c in jobs.columns])
    if pending is not None and pending.height:
        never = pending.filter(sel).select(
            "cluster", pl.col("job_id").cast(pl.String), "partition",
            pl.lit(0.0).alias("gpus"), pl.col("req_gpus").cast(pl.Float64), "eligible_at",
            pl.col("end_at").alias("cancel_at"),
        )  # fmt: skip
        frame = pl.concat([frame, never], how="diagonal_relaxed")
    if frame.height == 0 or not node_list:
        return []
    # one replayed job per job id and attempt (the model refuses a duplicate id)
    frame = (
        frame.with_columns(pl.col("job_id").cast(pl.String), pl.col("attempt").fill_null(0))
        if "attempt" in frame.columns
        else frame.with_columns(pl.col("job_id").cast(pl.String), pl.lit(0).alias("attempt"))
    ).unique(["job_id", "attempt"], keep="first", maintain_order=True)
    # a het job's components are one job, allocated at once (metrics.het_jobs), in the replay
    # and in the observed KPIs alike
    if frame["job_id"].str.contains("+", literal=True).any():
        units, _ = het_wait_units(frame.lazy())
        frame = units.with_columns(pl.col("attempt").fill_null(0)).collect()
    sim = jobs_from_frame(frame, w1)
    # jobs_from_frame sorts by eligible time, job id, attempt: align the frame with it
    order = pl.DataFrame({"_key": [j.job_id for j in sim], "_pos": list(range(len(sim)))})
    keyed = frame.with_columns(
        pl.when(pl.col("attempt") > 0)
        .then(pl.format("{}#{}", "job_id", "attempt"))
        .otherwise(pl.col("job_id"))
        .alias("_key")
    )
    keyed = keyed.join(order, on="_key", how="inner").sort("_pos").drop("_key", "_pos")
    horizon = w1.timestamp()
    r_old = simulate(node_list, sim, old, horizon_s=horizon)
    r_new = simulate(node_list, sim, new, horizon_s=horizon)
    window = pl.col("day").is_between(w0, w1, closed="left")
    observed = replay_wait_kpis(keyed, w1).filter(window)
    k_old = replay_wait_kpis(
        _replayed(keyed, sim, {k: o.start_s for k, o in r_old.outcomes.items()}), w1
    ).filter(window)
    k_new = replay_wait_kpis(
        _replayed(keyed, sim, {k: o.start_s for k, o in r_new.outcomes.items()}), w1
    ).filter(window)
    both = observed.join(k_old, on=["cluster", "day", "kpi"], suffix="_old").join(
        k_new, on=["cluster", "day", "kpi"], suffix="_new"
    )
    out: list[dict[str, object]] = []
    for kpi in both["kpi"].unique().sort().to_list():
        s = both.filter(pl.col("kpi") == kpi)
        after = float(s["value"].mean())  # type: ignore[arg-type]
        before = float(s["value_old"].mean())  # type: ignore[arg-type]
        estimate = after - before
        check = after - float(s["value_new"].mean())  # type: ignore[arg-type]
        half = max(_floor(kpi), abs(check))
        lo_ci, hi_ci = estimate - half, estimate + half
        if lo_ci <= 0.0 <= hi_ci:
            verdict = "no detectable effect"
        else:
            sign = KPI_DIRECTION.get(kpi.split("[", 1)[0], 1)
            verdict = "improved" if estimate * sign > 0 else "regressed"
        for cid in b["change_id"]:  # type: ignore[attr-defined]
            out.append({
                "change_id": cid, "bundle_id": b["bundle_id"], "cluster": cluster,
                "scope": b["bundle_scope"], "kpi": kpi, "method": "replay",
                "window_start": w0, "window_end": w1, "n_pre": None, "n_post": s.height,
                "unit": "h", "before": before, "after": after, "estimate": estimate,
                "ci_low": lo_ci, "ci_high": hi_ci, "p_value": None, "placebo_p": None,
                "mde": None, "verdict": verdict,
            })  # fmt: skip
    return out
