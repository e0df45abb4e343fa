"""``analytics.policy_change_impact``: the measured effect of each ledger change on its KPIs.

Reads the ledger computed in the same build (``analytics.policy_changes``), the core jobs, the
hourly occupancy, the cut-offs and the registry's shares, and each cluster's
``PriorityDecayHalfLife`` and ``SchedulerParameters`` from its latest ``scontrol show config``
snapshot (``raw.slurm_config``; Slurm's defaults where none was loaded); the estimation is
:mod:`metrics.policy_impact` (``its``, ``did``) and :mod:`metrics.policy_replay` (``replay``,
on the cluster's nodes).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import duckdb
import polars as pl

from metrics.policy_impact import IMPACT_SCHEMA, change_impact, daily_kpis, slurm_duration_days
from metrics.policy_replay import replay_impact
from pipelines.analytics.incremental import with_stored_days
from pipelines.warehouse import read_table, table_exists

UTC_US = pl.Datetime("us", "UTC")

__all__ = ["half_lives", "latest_configs", "policy_impact_tables", "whole_waterfall"]

_WATERFALL = "analytics.gpu_waterfall_hourly"
_WATERFALL_SCHEMA = {"cluster": pl.String(), "hour": UTC_US, "bucket": pl.String(),
                     "gpu_s": pl.Float64(), "gang_gpu_s": pl.Float64()}  # fmt: skip


def whole_waterfall(
    con: duckdb.DuckDBPyConnection,
    fresh: pl.DataFrame,
    days: Mapping[str, set[dt.date]] | None,
) -> pl.DataFrame:
    """Every day's waterfall rows (``cluster, hour, bucket, gpu_s, gang_gpu_s``; bucket as
    text): ``fresh``
    where a full build computed every day (``days`` None, or nothing stored yet); in an
    incremental build the stored rows of the days outside ``days`` and ``fresh`` for those
    inside (the rows the build is about to write)."""
    cols = [pl.col("cluster"), pl.col("hour").cast(UTC_US), pl.col("bucket").cast(pl.String),
            pl.col("gpu_s").cast(pl.Float64), pl.col("gang_gpu_s").cast(pl.Float64)]  # fmt: skip
    if not fresh.width:  # an incremental build with no day to rewrite computes no frame
        fresh = pl.DataFrame(schema=_WATERFALL_SCHEMA)
    return with_stored_days(con, _WATERFALL, fresh.select(cols), days)


def latest_configs(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """Each cluster's latest ``scontrol show config`` snapshot: name → value."""
    if not table_exists(con, "raw.slurm_config"):
        return {}
    raw = read_table(con, "raw.slurm_config").filter(pl.col("snapshot_at").is_not_null())
    last = raw.group_by("cluster").agg(pl.col("snapshot_at").max().alias("_last"))
    rows = raw.join(last, on="cluster").filter(pl.col("snapshot_at") == pl.col("_last"))
    out: dict[str, dict[str, str]] = {}
    for r in rows.sort("cluster", "key").iter_rows(named=True):
        out.setdefault(r["cluster"], {})[r["key"]] = r["value"]
    return out


def half_lives(con: duckdb.DuckDBPyConnection) -> dict[str, float]:
    """``PriorityDecayHalfLife`` in days per cluster, from its latest config snapshot."""
    if not table_exists(con, "raw.slurm_config"):
        return {}
    rows = (
        read_table(con, "raw.slurm_config")
        .filter((pl.col("key") == "PriorityDecayHalfLife") & pl.col("snapshot_at").is_not_null())
        .sort("snapshot_at")
        .group_by("cluster")
        .agg(pl.col("value").last())
    )
    out = {}
    for cluster, value in rows.iter_rows():
        days = slurm_duration_days(value)
        if days is not None:
            out[cluster] = days
    return out


def policy_impact_tables(
    con: duckdb.DuckDBPyConnection,
    *,
    changes: pl.DataFrame,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    occupancy: pl.DataFrame,
    as_of: pl.DataFrame,
    shares: pl.DataFrame,
    waterfall: pl.DataFrame | None = None,
    days: Mapping[str, set[dt.date]] | None = None,
    stranded: pl.DataFrame | None = None,
    fair_hourly: pl.DataFrame | None = None,
    nodes: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """``analytics.policy_change_impact`` (columns in sql/README.md), by table name.

    Args:
        con: warehouse connection (``raw.slurm_config`` is read).
        changes: the ledger (``analytics.policy_changes`` rows).
        jobs: ``core.jobs``.
        pending: ``core.pending`` (never-started jobs: censored waits).
        occupancy: ``analytics.occupancy_hourly`` rows of this build.
        as_of: ``cluster, as_of``.
        shares: the registry's shares per cluster (``team, pool, share, valid_from``).
        waterfall: ``analytics.gpu_waterfall_hourly`` rows of this build (preemption loss,
            goodput ratio, held for gangs).
        days: the cluster-days ``waterfall`` and ``stranded`` cover in an incremental build
            (None: a full build, every day): the other days are read from the stored tables
            (:func:`pipelines.analytics.incremental.with_stored_days`).
        stranded: ``analytics.topology_stranded_hourly`` rows of this build.
        fair_hourly: :func:`metrics.fairness.fair_share_hourly` rows of this build.
        nodes: ``core.nodes`` (``cluster, host, partition, gpus``): the replay's nodes; None:
            no ``replay`` rows.
    """
    if changes.height == 0:
        return {"analytics.policy_change_impact": change_impact(changes, pl.DataFrame())}
    if waterfall is not None:
        waterfall = whole_waterfall(con, waterfall, days)
    if stranded is not None:
        stranded = with_stored_days(
            con, "analytics.topology_stranded_hourly", stranded, days,
            order=("cluster", "hour", "level"),
        )  # fmt: skip
    kpis = daily_kpis(
        jobs, occupancy, as_of, shares, pending=pending, waterfall=waterfall, stranded=stranded,
        fair_hourly=fair_hourly,
    )  # fmt: skip
    impact = change_impact(changes, kpis, half_life_days=half_lives(con))
    if nodes is not None and nodes.height:
        replay = replay_impact(
            changes, jobs, nodes, as_of, configs=latest_configs(con), pending=pending
        )
        if replay.height:
            impact = (
                pl.concat([impact, replay])
                .cast(IMPACT_SCHEMA)  # type: ignore[arg-type]
                .sort("cluster", "window_start", "change_id", "kpi", "method")
            )
    return {"analytics.policy_change_impact": impact}
