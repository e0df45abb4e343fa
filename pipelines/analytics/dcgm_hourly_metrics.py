"""Activity per attempt and hour from the hourly DCGM aggregates (``raw.dcgm_hourly``).

The hourly path of the telemetry metrics: where a cluster has hourly aggregates and no 5-minute
samples, the waterfall's ``allocated_idle`` and the telemetry coverage are computed from hour
buckets (``activity_bucket_s = 3600`` in :func:`metrics.waterfall.gpu_waterfall_hourly`) instead of
5-minute ones. Attribution is by the ``hpc_job`` label (Slurm), as for the samples.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from pipelines.warehouse import memory_limit, run_named, table_exists
from pipelines.warehouse.sql import load_sql

__all__ = ["HOURLY_QUERY_MEMORY", "hourly_activity", "labelled_hours"]

#: DuckDB memory limit while the hourly aggregates are scanned and grouped.
HOURLY_QUERY_MEMORY = "1GB"


#: The hours of all time (the window :func:`hourly_activity` reads without one).
_ALL_TIME = (dt.datetime(1, 1, 2, tzinfo=dt.UTC), dt.datetime(9999, 12, 30, tzinfo=dt.UTC))


def labelled_hours(con: duckdb.DuckDBPyConnection, cluster: str) -> bool:
    """Whether ``raw.dcgm_hourly`` (when ``con`` has it) holds a labelled row with samples for
    ``cluster``: the rows :func:`hourly_activity` reads."""
    if not table_exists(con, "raw.dcgm_hourly"):
        return False
    return bool(run_named(con, "analytics/dcgm_hourly_labelled", {"cluster": cluster})["found"][0])


def hourly_activity(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    *,
    cluster: str | None = None,
    window: tuple[dt.datetime, dt.datetime] | None = None,
) -> pl.DataFrame:
    """Mean activity per allocation attempt and UTC hour from ``raw.dcgm_hourly``.

    For each (cluster, ``hpc_job``, hour): ``activity`` = Σ samples × ``gr_engine_active_avg`` ÷
    Σ samples over the job's GPU rows (a sample-weighted mean, so a GPU seen for 6 of 12 samples
    weighs half); ``gpus`` = the number of GPUs seen with the label in the hour (rows, since the
    table holds one row per GPU, hour and label, as a recording rule writes them). The
    label is matched to ``core.jobs.job_id`` and to the attempt that was running in the hour (the
    latest attempt started before the hour's end). Rows without a label, or whose job is
    unknown, are left out (unattributed time stays unobserved).

    Args:
        con: warehouse connection holding ``raw.dcgm_hourly``.
        jobs: ``core.jobs`` rows (``cluster, job_id, attempt, start_at``): every attempt of the
            jobs, also outside ``window`` (the hour's attempt is the latest started before it).
        cluster: only this cluster's hours (None: every cluster's).
        window: only the hours in [lo, hi) (UTC; None: all), so that a build reading the
            history a unit of hours at a time holds one unit's rows.

    Returns:
        ``cluster, job_id, attempt (Int64), bucket (hour start, UTC), activity (0–1), gpus``;
        empty (same columns) when the table has no rows.
    """
    schema = {
        "cluster": pl.String(),
        "job_id": pl.String(),
        "attempt": pl.Int64(),
        "bucket": pl.Datetime("us", "UTC"),
        "activity": pl.Float64(),
        "gpus": pl.Float64(),
    }
    # The scan of a year of hourly rows (~100M) would stay in DuckDB's buffer cache for the rest
    # of the rebuild (1.4 GB at 10k GPUs): the query runs under a lower memory limit (DuckDB
    # evicts, or spills the aggregate), and the connection's own limit is restored after.
    if not table_exists(con, "raw.dcgm_hourly"):
        return pl.DataFrame(schema=schema)
    lo, hi = window or _ALL_TIME
    with memory_limit(con, HOURLY_QUERY_MEMORY):
        per = con.sql(
            load_sql("analytics/dcgm_hourly_activity"),
            params={"cluster": cluster, "lo": lo, "hi": hi},
        ).pl()
    if per.height == 0:
        return pl.DataFrame(schema=schema)
    per = per.with_columns(
        pl.col("bucket").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
    ).sort("bucket")
    # Only the attempts of the jobs the rows name can match (the join is by job): a window's
    # rows name a few of a year's jobs, and every attempt of the cluster was sorted for each
    # window (the new day's peak, at its waterfall, fell 7-10 % without it: BENCHMARKS.md "The
    # topology tables' node-hour states computed once, and hourly labels matched among their
    # own jobs").
    labelled = per.select("cluster", "job_id").unique()
    att = (
        jobs.lazy()
        .filter(pl.col("start_at").is_not_null())
        .select(
            "cluster",
            pl.col("job_id").cast(pl.String),
            pl.col("attempt").cast(pl.Int64),
            (
                pl.col("start_at")
                .dt.convert_time_zone("UTC")
                .dt.cast_time_unit("us")
                .dt.truncate("1h")
            ).alias("_start_hour"),
        )
        .join(labelled.lazy(), on=["cluster", "job_id"], how="semi")
        .sort("_start_hour", "attempt")  # two attempts started in one hour: the later counts
        .collect()
    )
    out = per.join_asof(
        att,
        left_on="bucket",
        right_on="_start_hour",
        by=["cluster", "job_id"],
        strategy="backward",
        check_sortedness=False,
    )
    result: pl.DataFrame = out.filter(pl.col("attempt").is_not_null()).select(
        [pl.col(c).cast(t) for c, t in schema.items()]
    )
    return result
