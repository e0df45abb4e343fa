"""The policy-impact KPIs and the large-job wait causes read every day's rows (waterfall, stranded
GPUs, domain capacity), in an incremental build as in a full one."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from pipelines.analytics.incremental import with_stored_days
from pipelines.analytics.policy_impact import whole_waterfall
from pipelines.warehouse import replace_table

D0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _wf(rows: list[tuple[str, dt.datetime, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema=["cluster", "hour", "bucket", "gpu_s"], orient="row"
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"), pl.lit(0.0).alias("gang_gpu_s"))


def test_incremental_build_takes_stored_days_and_the_fresh_rewritten_days() -> None:
    """Stored: c day 0 and day 1 (goodput 100 and 200 GPU-s), k day 1 (50). The build rewrites
    c day 1 (fresh goodput 999): the result is c day 0 = 100 (stored), c day 1 = 999 (fresh,
    the stored 200 dropped) and k day 1 = 50 (another cluster's day, stored)."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA analytics")
    d1 = D0 + dt.timedelta(days=1)
    replace_table(
        con,
        "analytics.gpu_waterfall_hourly",
        _wf([("c", D0, "goodput", 100.0), ("c", d1, "goodput", 200.0), ("k", d1, "goodput", 50.0)]),
    )
    fresh = _wf([("c", d1, "goodput", 999.0)])
    out = whole_waterfall(con, fresh, {"c": {d1.date()}}).sort("cluster", "hour")
    assert out.select("cluster", "gpu_s").rows() == [("c", 100.0), ("c", 999.0), ("k", 50.0)]
    # A full build (days None) uses only the fresh rows.
    assert whole_waterfall(con, fresh, None)["gpu_s"].to_list() == [999.0]


def test_stored_days_are_read_with_the_fresh_types_and_sorted() -> None:
    """:func:`with_stored_days` on an hour-keyed table (the domain capacity the large-job wait
    causes read): stored c day 0 23:00 UTC with 4 free nodes and c day 1 00:00 with 5; the
    build rewrote c day 1 (fresh: 7, as Int32 here). The result keeps day 0's stored row,
    takes day 1's fresh row, in ``order``, with the fresh frame's types."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA analytics")
    late = D0 + dt.timedelta(hours=23)
    d1 = D0 + dt.timedelta(days=1)
    stored = pl.DataFrame(
        {"cluster": ["c", "c"], "hour": [d1, late], "free_nodes": [5, 4]},
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    replace_table(con, "analytics.domain_capacity_hourly", stored)
    fresh = pl.DataFrame(
        {"cluster": ["c"], "hour": [d1], "free_nodes": [7]},
        schema_overrides={"free_nodes": pl.Int32()},
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    out = with_stored_days(
        con, "analytics.domain_capacity_hourly", fresh, {"c": {d1.date()}}, order=("hour",)
    )
    assert out.rows() == [("c", late, 4), ("c", d1, 7)]
    assert out.schema == fresh.schema
    assert with_stored_days(con, "analytics.domain_capacity_hourly", fresh, None) is fresh
