"""Data rules on the core and analytics tables, evaluated as Dagster asset checks."""

from __future__ import annotations

import dagster as dg
import duckdb

from pipelines.warehouse.sql import load_sql

__all__ = [
    "ALLOCATED_WITHIN_CAPACITY",
    "END_NOT_BEFORE_START",
    "SOK_K8S_LAYER_CONSERVES",
    "SOK_SLURM_LAYER_CONSERVES",
    "STRANDED_SPLITS_CONSERVE_LEAVES",
    "UNIQUE_ATTEMPT_KEYS",
    "WATERFALL_CONSERVES_CAPACITY",
    "allocated_within_capacity",
    "end_not_before_start",
    "slurm_on_k8s_k8s_layer_conserves",
    "slurm_on_k8s_slurm_layer_conserves",
    "stranded_splits_conserve_leaves",
    "unique_attempt_keys",
    "waterfall_conserves_capacity",
]

END_NOT_BEFORE_START = "end_not_before_start"
UNIQUE_ATTEMPT_KEYS = "unique_attempt_keys"
ALLOCATED_WITHIN_CAPACITY = "allocated_within_capacity"
WATERFALL_CONSERVES_CAPACITY = "waterfall_conserves_capacity"
STRANDED_SPLITS_CONSERVE_LEAVES = "stranded_splits_conserve_leaves"
SOK_K8S_LAYER_CONSERVES = "slurm_on_k8s_k8s_layer_conserves"
SOK_SLURM_LAYER_CONSERVES = "slurm_on_k8s_slurm_layer_conserves"

_KEYS = {
    END_NOT_BEFORE_START: ("core", "jobs"),
    UNIQUE_ATTEMPT_KEYS: ("core", "slurm_jobs"),
    ALLOCATED_WITHIN_CAPACITY: ("analytics", "occupancy_hourly"),
    WATERFALL_CONSERVES_CAPACITY: ("analytics", "gpu_waterfall_hourly"),
    STRANDED_SPLITS_CONSERVE_LEAVES: ("analytics", "topology_stranded_hourly"),
    SOK_K8S_LAYER_CONSERVES: ("analytics", "slurm_on_k8s_hourly"),
    SOK_SLURM_LAYER_CONSERVES: ("analytics", "slurm_on_k8s_hourly"),
}


def _count_check(
    con: duckdb.DuckDBPyConnection, name: str, severity: dg.AssetCheckSeverity
) -> dg.AssetCheckResult:
    rows = con.execute(load_sql(f"checks/{name}")).fetchall()
    bad = int(rows[0][0]) if rows else 0
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey(list(_KEYS[name])),
        check_name=name,
        passed=bad == 0,
        severity=severity,
        metadata={"violations": bad},
    )


def end_not_before_start(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Attempts whose end precedes their start (ERROR)."""
    return _count_check(con, END_NOT_BEFORE_START, dg.AssetCheckSeverity.ERROR)


def unique_attempt_keys(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Duplicate (cluster, job_key, attempt, step) keys among started rows (ERROR)."""
    return _count_check(con, UNIQUE_ATTEMPT_KEYS, dg.AssetCheckSeverity.ERROR)


def allocated_within_capacity(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Cluster-hours whose allocated GPU-seconds exceed capacity by more than 0.1 % (WARN:
    capacity from observed nodes can undercount)."""
    return _count_check(con, ALLOCATED_WITHIN_CAPACITY, dg.AssetCheckSeverity.WARN)


def waterfall_conserves_capacity(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Cluster-hours whose waterfall leaves do not sum to capacity within 0.1 % (ERROR)."""
    return _count_check(con, WATERFALL_CONSERVES_CAPACITY, dg.AssetCheckSeverity.ERROR)


def stranded_splits_conserve_leaves(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Cluster-hours where ``stranded_gpu_hourly``'s parts do not sum to the waterfall's
    ``idle`` and ``held`` leaves (0.1 % of capacity), a part is negative, or a waterfall
    cluster-hour has no row (ERROR)."""
    return _count_check(con, STRANDED_SPLITS_CONSERVE_LEAVES, dg.AssetCheckSeverity.ERROR)


def slurm_on_k8s_k8s_layer_conserves(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Slurm-on-Kubernetes node-hours whose pods (slurmd and native) hold more than the node has,
    or whose Kubernetes-side leaves do not sum to capacity (WARN: a finding of the data)."""
    return _count_check(con, SOK_K8S_LAYER_CONSERVES, dg.AssetCheckSeverity.WARN)


def slurm_on_k8s_slurm_layer_conserves(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    """Slurm-on-Kubernetes node-hours where Slurm allocated more than the slurmd pods held (a
    GRES mismatch), or whose Slurm-side leaves do not sum to the lent capacity (WARN)."""
    return _count_check(con, SOK_SLURM_LAYER_CONSERVES, dg.AssetCheckSeverity.WARN)
