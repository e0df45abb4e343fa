"""Scheduler tables from the warehouse: latest snapshots, missing Kueue tables, registry pools."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest

from metrics.drift import REGISTRY_DRIFT_SCHEMA, SCHEDULER_FAIRSHARE_SCHEMA
from pipelines.analytics.scheduler_views import quota_unit_findings, scheduler_tables
from pipelines.core.k8s_gpu_units import cluster_gpu_units
from pipelines.recommendations import _query_where
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


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, object]]) -> None:
    frame = pl.DataFrame(rows)  # noqa: F841  (read by DuckDB by name)
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM frame")


def _k8s_quota_cluster(con: duckdb.DuckDBPyConnection) -> None:
    """Cluster k: n1, n2 time-sliced in 4 replicas (32 ``nvidia.com/gpu`` each), n3 of the MIG
    mixed strategy; ``cq-a`` (cohort c, ``nvidia.com/gpu`` 32 units, 12 used, LocalQueue
    ``lq-a``: team a), ``cq-b`` (cohort c, 14 ``nvidia.com/mig-1g.5gb`` = 2 GPUs, 1 used,
    ``lq-b``: team b). Cluster m: a MIG-single node (1g.5gb) and a plain one; ``cq-m`` 16
    ``nvidia.com/gpu``."""
    snap = dt.datetime(2026, 11, 2, tzinfo=UTC)
    reps = '{"nvidia.com/gpu.replicas": "4"}'
    _insert(con, "raw.k8s_nodes", [
        {"cluster": "k", "name": "n1", "uid": "u1", "labels": reps,
         "gpu_product": "NVIDIA-H100-SHARED", "gpu_resource": "nvidia.com/gpu",
         "gpu_allocatable": 32.0, "snapshot_at": snap, "ingest_id": 1},
        {"cluster": "k", "name": "n2", "uid": "u2", "labels": reps,
         "gpu_product": "NVIDIA-H100-SHARED", "gpu_resource": "nvidia.com/gpu",
         "gpu_allocatable": 32.0, "snapshot_at": snap, "ingest_id": 1},
        {"cluster": "k", "name": "n3", "uid": "u3", "gpu_product": "NVIDIA-A100",
         "labels": '{"nvidia.com/mig.strategy": "mixed"}', "gpu_resource": "nvidia.com/mig-1g.5gb",
         "gpu_allocatable": 2.0, "snapshot_at": snap, "ingest_id": 1},
        {"cluster": "m", "name": "m1", "uid": "u4",
         "labels": '{"nvidia.com/mig.strategy": "single"}',
         "gpu_product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "gpu_resource": "nvidia.com/gpu",
         "gpu_allocatable": 7.0, "snapshot_at": snap, "ingest_id": 1},
        {"cluster": "m", "name": "m2", "uid": "u5", "labels": "{}", "gpu_product": "NVIDIA-H100",
         "gpu_resource": "nvidia.com/gpu", "gpu_allocatable": 8.0, "snapshot_at": snap,
         "ingest_id": 1},
    ])  # fmt: skip
    _insert(con, "raw.kueue_cluster_queues", [
        {"cluster": c, "name": n, "uid": f"uid-{n}", "cohort": "c", "flavor": f, "resource": r,
         "nominal_quota": q, "nominal_gpus": g, "usage_gpus": u, "borrowed_gpus": 0.0,
         "snapshot_at": snap, "ingest_id": 2, "line_no": 1}
        for c, n, f, r, q, g, u in (
            ("k", "cq-a", "ts", "nvidia.com/gpu", 32.0, 32.0, 12.0),
            ("k", "cq-b", "mig", "nvidia.com/mig-1g.5gb", 14.0, 2.0, 1.0),
            ("m", "cq-m", "any", "nvidia.com/gpu", 16.0, 16.0, 0.0),
        )
    ])  # fmt: skip
    _insert(con, "raw.kueue_local_queues", [
        {"cluster": "k", "namespace": ns, "name": f"lq-{ns}", "uid": f"lq-{ns}",
         "cluster_queue": f"cq-{ns}", "snapshot_at": snap, "ingest_id": 3, "line_no": 1}
        for ns in ("a", "b")
    ])  # fmt: skip


def test_kueue_quota_of_shared_gpus_counts_physical_gpus() -> None:
    """See :func:`_k8s_quota_cluster`. cq-a's 32 units on nodes of 4 replicas are 8 GPUs (12
    used → 3), cq-b's 2 stay: nominal 8 and 2 GPUs (not 32 and 2), usage of nominal 3/8 =
    0.375; the drift's configured value of cq-a is 8 GPUs (its share, within its resource, stays
    1). m's nodes disagree (1/7 and 1 GPU a unit): cq-m keeps 16 and is the one finding
    ``kueue_quota_in_advertised_units``."""
    con = _con()
    _k8s_quota_cluster(con)
    mapping = pl.DataFrame(
        {"kind": ["k8s_local_queue"] * 2, "key": ["lq-a", "lq-b"], "team": ["a", "b"]}
    )
    hist = _history([("a", "all", 0.5, None), ("b", "all", 0.5, None)])
    out = scheduler_tables(
        con, hist, mapping, NODES, AS_OF, at=dt.datetime(2026, 11, 2, tzinfo=UTC)
    )
    fair = out["analytics.scheduler_fairshare"].sort("object")
    assert fair.select("object", "nominal_gpus", "usage_gpus").rows() == [
        ("cq-a", 8.0, 3.0),
        ("cq-b", 2.0, 1.0),
        ("cq-m", 16.0, 0.0),
    ]
    assert fair["usage_of_nominal"].to_list()[:2] == pytest.approx([0.375, 0.5])
    drift = out["analytics.registry_drift"].filter(pl.col("cluster") == "k").sort("team")
    assert drift.select("team", "configured_value", "configured_share").rows() == [
        ("a", 8.0, 1.0),
        ("b", 2.0, 1.0),
    ]
    found = quota_unit_findings(con)
    assert found["cluster"].to_list() == ["m"]
    assert found["value"].to_list() == [1.0]
    assert found["detail"].item() == (
        "GPU quota of cq-m/any kept in advertised units: the nodes advertise 1/7 and 1 GPU per "
        "nvidia.com/gpu, and a flavor's nodes are not known"
    )


def test_recommendations_read_each_clusters_quota_unit() -> None:
    """The recommendations read the Node rows (``sql/recommendations/k8s_node_units.sql``) and
    take k's agreed unit, 1/4 (time-slicing in 4 replicas), for its ``kueue_borrowing``; m's
    nodes disagree: no unit (its quota stays in advertised units)."""
    con = _con()
    _k8s_quota_cluster(con)
    nodes = _query_where(con, "raw.k8s_nodes", "k8s_node_units")
    units = cluster_gpu_units(nodes).select("cluster", "gpu_unit").rows()
    assert units == [("k", 0.25), ("m", None)]
