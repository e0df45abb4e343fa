"""``analytics.policy_changes``: the policy-change ledger, from the raw Slurm policy tables.

Reads ``raw.slurm_transactions`` and ``raw.slurm_tres`` (``sacctmgr list transactions`` and
``show tres``), ``raw.slurm_config`` (``scontrol show config`` snapshots), ``raw.sshare`` and
``raw.kueue_cluster_queues`` (ClusterQueue snapshots; a table not loaded yet gives no rows)
and computes the ledger with :mod:`pipelines.core.policy_changes`. An ``sshare`` snapshot
without ``snapshot_at`` is dated by its load (``raw.ingests.loaded_at``): sshare prints no
time.
"""

from __future__ import annotations

import duckdb
import polars as pl

from pipelines.core import (
    cluster_queue_changes,
    config_changes,
    policy_changes,
    share_changes,
    transaction_changes,
)
from pipelines.warehouse import read_table, table_exists

__all__ = ["policy_change_tables"]

_TRES_SCHEMA = {"cluster": pl.String(), "tres_id": pl.Int64(), "tres": pl.String()}


def _table(con: duckdb.DuckDBPyConnection, table: str) -> pl.DataFrame | None:
    """The table as polars, or None when it does not exist or is empty."""
    if not table_exists(con, table):
        return None
    frame = read_table(con, table)
    return frame if frame.height else None


def _dated_sshare(con: duckdb.DuckDBPyConnection, sshare: pl.DataFrame) -> pl.DataFrame:
    """``raw.sshare`` with ``snapshot_at`` filled from its ingest's load time where NULL."""
    ingests = read_table(con, "raw.ingests").select("ingest_id", "loaded_at")
    return sshare.join(ingests, on="ingest_id", how="left").with_columns(
        pl.coalesce("snapshot_at", "loaded_at").alias("snapshot_at")
    )


def policy_change_tables(con: duckdb.DuckDBPyConnection) -> dict[str, pl.DataFrame]:
    """``analytics.policy_changes`` (columns in sql/README.md), by table name.

    Args:
        con: warehouse connection (raw tables are read).
    """
    parts = []
    tx = _table(con, "raw.slurm_transactions")
    if tx is not None:
        tres = _table(con, "raw.slurm_tres")
        parts.append(
            transaction_changes(tx, tres if tres is not None else pl.DataFrame(schema=_TRES_SCHEMA))
        )
    config = _table(con, "raw.slurm_config")
    if config is not None:
        parts.append(config_changes(config))
    sshare = _table(con, "raw.sshare")
    if sshare is not None:
        parts.append(share_changes(_dated_sshare(con, sshare)))
    cqs = _table(con, "raw.kueue_cluster_queues")
    if cqs is not None:
        parts.append(cluster_queue_changes(cqs))
    return {"analytics.policy_changes": policy_changes(*parts)}
