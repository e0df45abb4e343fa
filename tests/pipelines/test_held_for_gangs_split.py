"""The ``held`` leaf's split into held for gangs and held other (``stranded_gpu_hourly``,
METRICS.md "The split of the waterfall's leaves") on a hand-built cluster: the waterfall and
the stranded GPUs as the metric engine computes them, stored as a build stores them, read
through the view and the conservation check."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest

from metrics import gpu_waterfall_hourly
from metrics.domains import stranded_hourly
from metrics.schema import UTC_DATETIME as T
from pipelines.warehouse import replace_table
from pipelines.warehouse.sql import load_sql


def _t(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, 5, h, m, tzinfo=dt.UTC)


def _frames() -> dict[str, pl.LazyFrame]:
    """Cluster c: one rack r1 of nodes n0, n1, 8 GPUs each (16 GPUs); hour 10:00, cut-off
    11:00. Job A (8 GPUs) runs on n0 10:00–11:00; G asks 16 GPUs (2 nodes: a gang) from 10:00
    and is cancelled at 10:30; S asks 4 GPUs from 10:30 to 11:00 (cancelled then)."""
    jobs = pl.LazyFrame(
        {
            "cluster": ["c"], "job_id": ["A"], "attempt": [1], "partition": ["gpu"],
            "team": ["t"], "state": ["COMPLETED"], "gpus": [8.0], "req_gpus": [8.0],
            "eligible_at": [_t(10)], "start_at": [_t(10)], "end_at": [_t(11)],
            "node_list": [["n0"]],
        },
        schema_overrides={"eligible_at": T, "start_at": T, "end_at": T},
    )  # fmt: skip
    pending = pl.LazyFrame(
        {
            "cluster": ["c", "c"], "job_id": ["G", "S"], "partition": ["gpu", "gpu"],
            "team": ["t", "t"], "req_gpus": [16.0, 4.0], "eligible_at": [_t(10), _t(10, 30)],
            "end_at": [_t(10, 30), _t(11)], "state": ["CANCELLED", "CANCELLED"],
        },
        schema_overrides={"eligible_at": T, "end_at": T},
    )  # fmt: skip
    topology = pl.LazyFrame(
        {
            "cluster": ["c", "c"], "level": ["rack", "rack"], "domain": ["r1", "r1"],
            "node": ["n0", "n1"], "valid_from": [None, None], "valid_to": [None, None],
        },
        schema_overrides={"valid_from": T, "valid_to": T},
    )  # fmt: skip
    nodes = pl.LazyFrame({"cluster": ["c", "c"], "host": ["n0", "n1"], "gpus": [8.0, 8.0]})
    capacity = pl.LazyFrame(
        {"cluster": ["c"], "hour": [_t(10)], "capacity_gpu_s": [16 * 3600.0],
         "down_gpu_s": [0.0], "planned_down_gpu_s": [0.0]},
        schema_overrides={"hour": T},
    )  # fmt: skip
    as_of = pl.LazyFrame({"cluster": ["c"], "as_of": [_t(11)]}, schema_overrides={"as_of": T})
    return {
        "jobs": jobs, "pending": pending, "topology": topology, "nodes": nodes,
        "capacity": capacity, "as_of": as_of,
    }  # fmt: skip


def test_held_for_gangs_is_measured_on_the_time_axis_as_held() -> None:
    """Hand-computed (GPU-seconds): 8 GPUs free all hour (A holds 8 of 16).

    held = min(8 free, 16 asked) × 1,800 (10:00–10:30, G waits) + min(8, 4) × 1,800
    (10:30–11:00, S waits) = 14,400 + 7,200 = 21,600; idle = 57,600 − 28,800 − 21,600 = 7,200.
    held_for_gangs = min(8 free, 16 asked by gangs) × 1,800 + min(8, 0) × 1,800 = 14,400 (G is
    wider than one node of 8; S is not); held_other = 21,600 − 14,400 = 7,200.
    The hour-level bound, min(held 21,600, G's 16 × 1,800 = 28,800), credited all 21,600 to
    gangs, S's 7,200 after G had gone included."""
    f = _frames()
    wf = gpu_waterfall_hourly(
        f["jobs"], f["capacity"], _t(11), pending=f["pending"], nodes=f["nodes"]
    ).collect()
    stranded = stranded_hourly(
        f["topology"], f["jobs"], f["capacity"].select("cluster", "hour"), f["nodes"],
        f["as_of"], pending=f["pending"],
    ).collect()  # fmt: skip
    con = duckdb.connect()
    con.execute("CREATE SCHEMA analytics; CREATE SCHEMA core")
    stored = wf.with_columns(pl.col("leaf").cast(pl.String).alias("bucket")).drop("leaf")
    replace_table(con, "analytics.gpu_waterfall_hourly", stored)
    replace_table(con, "analytics.topology_stranded_hourly", stranded)
    replace_table(con, "core.build_cutoffs", f["as_of"].collect())
    con.execute(load_sql("views/stranded_gpu_hourly"))
    row = con.execute(
        "SELECT held_gpu_s, held_for_gangs_gpu_s, held_other_gpu_s, idle_gpu_s"
        " FROM stranded_gpu_hourly"
    ).fetchall()
    assert row == [
        (pytest.approx(21600.0), pytest.approx(14400.0), pytest.approx(7200.0),
         pytest.approx(7200.0)),
    ]  # fmt: skip
    check = con.execute(load_sql("checks/stranded_splits_conserve_leaves")).fetchone()
    assert check == (0,)
