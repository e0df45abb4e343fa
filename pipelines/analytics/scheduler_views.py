"""The schedulers' own view (sshare, Kueue ClusterQueue usage) and registry drift tables.

Reads the latest ``raw.sshare`` snapshot and the latest ``raw.kueue_cluster_queues`` /
``raw.kueue_local_queues`` snapshots per cluster (a raw table that does not exist yet, or is
empty, gives no rows), maps accounts and ClusterQueues to registry teams, and computes
:func:`metrics.drift.scheduler_fairshare` and :func:`metrics.drift.registry_drift` against the
registry's current shares of each cluster's pool (:func:`pipelines.core.registry.cluster_shares`).
ClusterQueue GPU quota counts physical GPUs: ``nvidia.com/gpu`` of a cluster whose nodes
advertise MIG slices (single strategy) or time-slicing replicas takes their unit
(:func:`pipelines.core.k8s_gpu_units.cluster_queues_in_gpus`); where the nodes disagree it stays
in advertised units and :func:`quota_unit_findings` says so.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from metrics.drift import (
    DRIFT_TOLERANCE,
    REGISTRY_DRIFT_SCHEMA,
    account_shares,
    cluster_queue_teams,
    kueue_quota_shares,
    latest_snapshot,
    registry_drift,
    scheduler_fairshare,
    slurm_share_drift,
)
from pipelines.core import cluster_shares, share_in_effect
from pipelines.core.k8s_gpu_units import cluster_queues_in_gpus
from pipelines.warehouse import read_table, table_exists

__all__ = ["current_cluster_shares", "quota_unit_findings", "scheduler_tables"]

#: The columns of ``raw.kueue_cluster_queues`` the tables need.
_CQ_NEED = ("cluster", "name", "cohort", "resource", "nominal_gpus", "usage_gpus")


def _table(con: duckdb.DuckDBPyConnection, table: str) -> pl.DataFrame | None:
    """The table as polars (zoned timestamps in UTC), or None when it does not exist."""
    return read_table(con, table) if table_exists(con, table) else None


def _latest(frame: pl.DataFrame | None, need: tuple[str, ...]) -> pl.DataFrame | None:
    """The latest snapshot per cluster, or None when the table is missing, empty or lacks
    columns the views need."""
    if frame is None or frame.height == 0 or not set(need) <= set(frame.columns):
        return None
    return latest_snapshot(frame.lazy(), order=("snapshot_at", "ingest_id")).collect()


def _cluster_queues(
    con: duckdb.DuckDBPyConnection,
) -> tuple[pl.DataFrame | None, pl.DataFrame]:
    """The latest ClusterQueue snapshot per cluster with its GPU columns in physical GPUs
    (None without one), and its rows kept in advertised units
    (:func:`pipelines.core.k8s_gpu_units.cluster_queues_in_gpus` over ``raw.k8s_nodes``)."""
    cqs = _latest(_table(con, "raw.kueue_cluster_queues"), _CQ_NEED)
    if cqs is None:
        return None, pl.DataFrame(schema={"cluster": pl.String(), "name": pl.String()})
    return cluster_queues_in_gpus(cqs, _table(con, "raw.k8s_nodes"))


def _unit_text(unit: float) -> str:
    """``1``, ``1/7``, ``1/4``: a unit as the fraction of a GPU it is (denominators to 64)."""
    for d in range(1, 65):
        n = round(unit * d)
        if n and abs(n / d - unit) < 1e-9:
            return str(n) if d == 1 else f"{n}/{d}"
    return f"{unit:g}"


def quota_unit_findings(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Data-quality findings ``kueue_quota_in_advertised_units``: per cluster, the ClusterQueue
    × flavor rows of ``nvidia.com/gpu`` (``nvidia.com/gpu.shared``) quota left in advertised
    units because the cluster's nodes advertise units of different worth (MIG single strategy,
    time-slicing replicas, whole GPUs) and which nodes a flavor holds is not loaded.

    Returns:
        ``cluster, value, detail`` (value = such rows; detail names them and the units).
    """
    _, ambiguous = _cluster_queues(con)
    rows = []
    for (cluster,), part in ambiguous.group_by("cluster", maintain_order=True):
        units = " and ".join(_unit_text(u) for u in part["units"][0])
        names = ", ".join(f"{n}/{f}" for n, f in part.select("name", "flavor").rows())
        rows.append(
            {
                "cluster": cluster,
                "value": float(part.height),
                "detail": f"GPU quota of {names} kept in advertised units: the nodes advertise "
                f"{units} GPU per nvidia.com/gpu, and a flavor's nodes are not known",
            }
        )
    return pl.DataFrame(
        rows, schema={"cluster": pl.String(), "value": pl.Float64(), "detail": pl.String()}
    )


def current_cluster_shares(
    history: pl.DataFrame, nodes: pl.DataFrame, clusters: list[str], at: dt.datetime
) -> dict[str, pl.DataFrame]:
    """Per cluster, the registry ``team, share`` in effect at ``at`` in that cluster's pool.

    A cluster without nodes gets the fleet shares (:func:`pipelines.core.registry.share_in_effect`).
    """
    per_pool = cluster_shares(history, nodes)
    live = (
        per_pool.filter(pl.col("valid_from") <= at)
        .sort("valid_from")
        .group_by("team", "pool", maintain_order=True)
        .last()
    )
    fleet = share_in_effect(history, at)
    out = {}
    for c in clusters:
        mine = live.filter(pl.col("pool") == c).select("team", "share")
        out[c] = mine if c in set(per_pool["pool"].to_list()) else fleet
    return out


def scheduler_tables(
    con: duckdb.DuckDBPyConnection,
    history: pl.DataFrame,
    mapping: pl.DataFrame,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    *,
    tolerance: float = DRIFT_TOLERANCE,
    at: dt.datetime | None = None,
) -> dict[str, pl.DataFrame]:
    """``analytics.scheduler_fairshare`` and ``analytics.registry_drift`` with ``as_of``.

    Args:
        con: warehouse connection (raw tables are read).
        history: :func:`pipelines.core.registry.load_registry_history` output.
        mapping: registry ``kind, key, team``.
        nodes: ``core.nodes`` (``cluster, gpu_type, gpus``), for each cluster's pool.
        as_of: ``cluster, as_of``.
        tolerance: relative drift above which a row is flagged.
        at: the instant whose registry shares count as current (default now, UTC).

    Returns:
        Frames by table name (columns in sql/README.md).
    """
    now = at or dt.datetime.now(dt.UTC)
    sshare = _latest(_table(con, "raw.sshare"), ("cluster", "account", "raw_shares"))
    cqs, _ = _cluster_queues(con)
    lqs = _latest(
        _table(con, "raw.kueue_local_queues"),
        ("cluster", "namespace", "name", "cluster_queue"),
    )
    clusters = sorted(
        {*(sshare["cluster"].to_list() if sshare is not None else [])}
        | {*(cqs["cluster"].to_list() if cqs is not None else [])}
    )
    shares = current_cluster_shares(history, nodes, clusters, now)
    account_teams = mapping.filter(pl.col("kind") == "slurm_account").lazy()

    slurm_parts, kueue_parts, cq_team_parts = [], [], []
    for c in clusters:
        if sshare is not None and c in set(sshare["cluster"].to_list()):
            acct = account_shares(shares[c], mapping, "slurm_account")
            slurm_parts.append(
                slurm_share_drift(acct, sshare.filter(pl.col("cluster") == c).lazy()).collect()
            )
        if cqs is not None and c in set(cqs["cluster"].to_list()):
            mine = cqs.filter(pl.col("cluster") == c)
            lq = (
                lqs.filter(pl.col("cluster") == c)
                if lqs is not None
                else pl.DataFrame(
                    schema={"namespace": pl.String(), "name": pl.String(),
                            "cluster_queue": pl.String()}
                )
            )  # fmt: skip
            cq_teams = cluster_queue_teams(lq.select("namespace", "name", "cluster_queue"), mapping)
            cq_team_parts.append(cq_teams.collect().with_columns(pl.lit(c).alias("cluster")))
            quotas = mine.select(
                "cohort",
                pl.col("name").alias("cluster_queue"),
                "resource",
                pl.coalesce("nominal_gpus", "nominal_quota").alias("nominal_quota")
                if "nominal_quota" in mine.columns
                else pl.col("nominal_gpus").alias("nominal_quota"),
            )
            snap = mine["snapshot_at"].max() if "snapshot_at" in mine.columns else None
            kueue_parts.append(
                kueue_quota_shares(quotas.lazy(), cq_teams, shares[c])
                .collect()
                .with_columns(
                    pl.lit(c).alias("cluster"),
                    pl.lit(snap, dtype=pl.Datetime("us", "UTC")).alias("snapshot_at"),
                )
            )
    drift = registry_drift(
        pl.concat(slurm_parts).lazy() if slurm_parts else None,
        pl.concat(kueue_parts).lazy() if kueue_parts else None,
        tolerance=tolerance,
    ).collect()
    cq_teams_all = pl.concat(cq_team_parts).lazy() if cq_team_parts else None
    fairshare = scheduler_fairshare(
        sshare.lazy() if sshare is not None else None,
        account_teams,
        cqs.lazy() if cqs is not None else None,
        cq_teams_all,
    ).collect()
    if drift.height == 0:
        drift = pl.DataFrame(schema=REGISTRY_DRIFT_SCHEMA)
    return {
        "analytics.scheduler_fairshare": fairshare.join(as_of, on="cluster", how="left"),
        "analytics.registry_drift": drift.join(as_of, on="cluster", how="left"),
    }
