"""``stranded_gpu_hourly`` (``sql/views/stranded_gpu_hourly.sql``) in the hour that holds the
cut-off, on literal tables in DuckDB: the hour's idle and held cover the seconds up to ``as_of``
only (METRICS.md "The hour that holds the cut-off"), so its stranded GPUs count those seconds."""

from __future__ import annotations

import duckdb

from pipelines.warehouse.sql import load_sql


def test_the_cut_off_hour_strands_gpus_for_its_known_seconds() -> None:
    """16 GPUs idle, 8 of them stranded; the cut-off at 06:10. Hour 05: stranded 8 × 3,600 =
    28,800 of 57,600 idle (share 0.5). Hour 06: idle 16 × 600 = 9,600, stranded 8 × 600 = 4,800
    (share 0.5; with the whole hour's 8 × 3,600 it was all of the idle, share 1.0)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'; CREATE SCHEMA analytics; CREATE SCHEMA core")
    con.execute("CREATE TABLE core.build_cutoffs (cluster VARCHAR, as_of TIMESTAMPTZ)")
    con.execute("INSERT INTO core.build_cutoffs VALUES ('c', '2026-01-01 06:10:00+00')")
    con.execute(
        "CREATE TABLE analytics.gpu_waterfall_hourly"
        " (cluster VARCHAR, hour TIMESTAMPTZ, bucket VARCHAR, gpu_s DOUBLE)"
    )
    con.execute(
        "INSERT INTO analytics.gpu_waterfall_hourly VALUES"
        " ('c', '2026-01-01 05:00:00+00', 'idle', 57600),"
        " ('c', '2026-01-01 06:00:00+00', 'idle', 9600)"
    )
    con.execute(
        "CREATE TABLE analytics.topology_stranded_hourly (cluster VARCHAR, hour TIMESTAMPTZ,"
        " level VARCHAR, free_gpus DOUBLE, pending_jobs BIGINT, min_pending_gpus DOUBLE,"
        " stranded_gpus DOUBLE, expected_stranded_gpus DOUBLE, gang_pending_gpu_s DOUBLE)"
    )
    con.execute(
        "INSERT INTO analytics.topology_stranded_hourly VALUES"
        " ('c', '2026-01-01 05:00:00+00', 'block', 16, 1, 12, 8, 8, 0),"
        " ('c', '2026-01-01 06:00:00+00', 'block', 16, 1, 12, 8, 8, 0)"
    )
    con.execute(load_sql("views/stranded_gpu_hourly"))
    got = con.execute(
        "SELECT stranded_gpu_s, expected_stranded_gpu_s, idle_stranded_gpu_s, idle_other_gpu_s,"
        " stranded_share FROM stranded_gpu_hourly ORDER BY hour"
    ).fetchall()
    assert got == [(28800.0, 28800.0, 28800.0, 28800.0, 0.5), (4800.0, 4800.0, 4800.0, 4800.0, 0.5)]
