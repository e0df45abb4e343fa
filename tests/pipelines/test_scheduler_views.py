"""Scheduler tables from the warehouse: latest snapshots, missing Kueue tables, registry pools."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest

from metrics.drift import REGISTRY_DRIFT_SCHEMA, SCHEDULER_FAIRSHARE_SCHEMA
from pipelines.analytics.scheduler_views import scheduler_tables
from pipelines.warehouse import init_warehouse

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")


def _con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    init_warehouse(con)
    return con


def _history(rows: list[tuple[str, str, float, dt.datetime | None]]) -> pl.DataFrame:
    frame = pl.DataFrame(
        [(*r, None) for r in rows],
        schema={"team": pl.String(), "pool": pl.String(), "share": pl.Float64(),
                "valid_from": TS, "valid_to": TS},
        orient="row",
    )  # fmt: skip
    return frame.with_columns(pl.col("valid_from").shift(-1).over("team", "pool").alias("valid_to"))


MAPPING = pl.DataFrame({"kind": ["slurm_account"] * 2, "key": ["a", "b"], "team": ["a", "b"]})
NODES = pl.DataFrame({"cluster": ["s"], "gpu_type": ["h100"], "gpus": [8.0]})
AS_OF = pl.DataFrame(
    {"cluster": ["s"], "as_of": [dt.datetime(2026, 11, 2, tzinfo=UTC)]},
    schema_overrides={"as_of": TS},
)


def _load_sshare(con: duckdb.DuckDBPyConnection, ingest: int, raw: dict[str, int]) -> None:
    for i, (account, shares) in enumerate(raw.items()):
        con.execute(
            "INSERT INTO raw.sshare (cluster, account, user_name, depth, raw_shares, line_no,"
            " ingest_id) VALUES ('s', ?, NULL, 1, ?, ?, ?)",
            [account, shares, i + 2, ingest],
        )


def test_without_kueue_tables_and_snapshots_the_tables_are_empty_with_columns() -> None:
    """No raw.kueue_* tables at all (dropped) and no sshare rows: both frames are empty, with
    every column of the view plus ``as_of``."""
    con = _con()
    for t in ("raw.kueue_cluster_queues", "raw.kueue_local_queues"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
    out = scheduler_tables(con, _history([]), MAPPING, NODES, AS_OF)
    drift = out["analytics.registry_drift"]
    fair = out["analytics.scheduler_fairshare"]
    assert drift.height == fair.height == 0
    assert drift.columns == [*REGISTRY_DRIFT_SCHEMA, "as_of"]
    assert fair.columns == [*SCHEDULER_FAIRSHARE_SCHEMA, "as_of"]


def test_latest_sshare_load_and_the_cluster_pool_share_count() -> None:
    """Two sshare loads of cluster s: ingest 1 (a 50, b 50) then ingest 2 (a 30, b 10): the
    latest counts. Registry: a 0.5, b 0.5 in pool all, but b has 0.25 in pool h100 (cluster s's
    GPU type) from 1 Nov, so in s b's share is 0.25. Normalised: registry a 0.5/0.75 = 2/3,
    b 1/3; configured a 30/40 = 0.75, b 0.25 → drift a +0.0833 (relative +0.125, not flagged),
    b −0.0833 (relative −0.25, flagged at 0.2)."""
    con = _con()
    _load_sshare(con, 1, {"a": 50, "b": 50})
    _load_sshare(con, 2, {"a": 30, "b": 10})
    hist = _history(
        [("a", "all", 0.5, None), ("b", "all", 0.5, None),
         ("b", "h100", 0.25, dt.datetime(2026, 11, 1, tzinfo=UTC))]
    )  # fmt: skip
    out = scheduler_tables(
        con, hist, MAPPING, NODES, AS_OF, tolerance=0.2, at=dt.datetime(2026, 11, 2, tzinfo=UTC)
    )
    drift = out["analytics.registry_drift"]
    assert drift.select("team", "configured_value").rows() == [("a", 30.0), ("b", 10.0)]
    assert drift["registry_share"].to_list() == pytest.approx([2 / 3, 1 / 3])
    assert drift["configured_share"].to_list() == pytest.approx([0.75, 0.25])
    assert drift["relative_drift"].to_list() == pytest.approx([0.125, -0.25])
    assert drift["drifted"].to_list() == [False, True]
    assert drift["as_of"].to_list() == [dt.datetime(2026, 11, 2, tzinfo=UTC)] * 2
    fair = out["analytics.scheduler_fairshare"]
    assert fair.select("object", "team", "raw_shares").rows() == [("a", "a", 30), ("b", "b", 10)]
