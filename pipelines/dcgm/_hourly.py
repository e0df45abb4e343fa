"""Hourly per-GPU DCGM aggregates in Parquet (the ``dcgm-hourly`` input kind).

At fleet scale 5-minute samples for a year do not fit one machine's budget (10,000 GPUs × 105,120
samples × metrics); a Prometheus recording rule (or Thanos/Mimir downsampling) keeps one row per
GPU, hour and job label instead: ``avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1h])``,
``max_over_time(DCGM_FI_DEV_FB_USED[1h])``, ``last_over_time(DCGM_FI_DEV_XID_ERRORS[1h])`` and
``count_over_time(...[1h])`` grouped by ``Hostname, gpu, UUID, hpc_job``. Files are laid out in a
hive layout, ``<inputs>/<cluster>/dcgm_hourly/date=YYYY-MM-DD/dcgm_hourly_YYYY-MM-DD.parquet``,
which DuckDB, Trino or Spark read as they are.

Columns (:data:`DCGM_HOURLY_SCHEMA`): ``cluster``, ``hostname``, ``gpu`` (index on the host),
``uuid``, ``hour`` (start of the UTC hour), ``hpc_job`` (the job label; NULL when no job held the
GPU), ``samples`` (5-minute samples aggregated, 0–12), ``gr_engine_active_avg`` (mean ratio 0–1),
``fb_used_max_mib`` (MiB), ``xid_last`` (last XID in the hour, 0 = none).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult

__all__ = ["DCGM_HOURLY_SCHEMA", "parse_dcgm_hourly"]

DCGM_HOURLY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int32(),
    "uuid": pl.String(),
    "hour": pl.Datetime("us", "UTC"),
    "hpc_job": pl.String(),
    "samples": pl.Int32(),
    "gr_engine_active_avg": pl.Float64(),
    "fb_used_max_mib": pl.Int64(),
    "xid_last": pl.Int64(),
}

#: (field, condition that makes a row invalid, reason)
_CHECKS: tuple[tuple[str, pl.Expr, str], ...] = (
    ("hostname", pl.col("hostname").is_null(), "missing hostname"),
    ("gpu", pl.col("gpu").is_null() | (pl.col("gpu") < 0), "missing or negative GPU index"),
    ("hour", pl.col("hour").is_null(), "missing hour"),
    ("samples", pl.col("samples").is_null() | (pl.col("samples") < 0)
     | (pl.col("samples") > 12), "samples outside 0-12"),
    ("gr_engine_active_avg", pl.col("gr_engine_active_avg").is_not_null()
     & ((pl.col("gr_engine_active_avg") < 0) | (pl.col("gr_engine_active_avg") > 1)),
     "activity outside 0-1"),
)


def parse_dcgm_hourly(path: Path, *, cluster: str) -> ParseResult:
    """Read one hourly-aggregate Parquet file.

    Rows failing a check (missing host, GPU, hour; samples outside 0–12; activity outside 0–1)
    go to ``rejected`` with the row number (1-based) as ``line_no``, the field and the reason.
    A missing ``cluster`` value takes ``cluster``.

    Args:
        path: the Parquet file.
        cluster: cluster of rows without one.

    Returns:
        Rows with :data:`DCGM_HOURLY_SCHEMA`, and the rejected rows.

    Raises:
        InputFormatError: not a Parquet file, or a required column is missing.
    """
    try:
        df = pl.read_parquet(path, hive_partitioning=False)
    except Exception as exc:
        raise InputFormatError(str(path), f"not a Parquet file: {exc}") from exc
    missing = [c for c in DCGM_HOURLY_SCHEMA if c not in df.columns and c != "cluster"]
    if missing:
        raise InputFormatError(str(path), f"missing columns {', '.join(missing)}")
    if "cluster" not in df.columns:
        df = df.with_columns(pl.lit(None, pl.String).alias("cluster"))
    try:
        df = df.select([pl.col(c).cast(t) for c, t in DCGM_HOURLY_SCHEMA.items()])
    except pl.exceptions.PolarsError as exc:
        raise InputFormatError(str(path), f"columns of the wrong type: {exc}") from exc
    df = df.with_columns(pl.col("cluster").fill_null(cluster)).with_row_index("_line", 1)
    reason = pl.lit(None, pl.String)
    fld = pl.lit(None, pl.String)
    for name, bad, why in reversed(_CHECKS):
        reason = pl.when(bad).then(pl.lit(why)).otherwise(reason)
        fld = pl.when(bad).then(pl.lit(name)).otherwise(fld)
    df = df.with_columns(reason.alias("_reason"), fld.alias("_field"))
    bad_rows = df.filter(pl.col("_reason").is_not_null())
    rejected = bad_rows.select(
        pl.lit(str(path)).alias("file"),
        pl.col("_line").cast(pl.Int64).alias("line_no"),
        pl.col("_line").cast(pl.Int64).alias("line_end"),
        pl.col("_field").alias("field"),
        pl.concat_str([pl.col("hostname").fill_null(""), pl.col("gpu").cast(pl.String)
                       .fill_null(""), pl.col("hour").cast(pl.String).fill_null("")],
                      separator="|").alias("raw"),
        pl.col("_reason").alias("reason"),
    ).cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
    rows = df.filter(pl.col("_reason").is_null()).drop("_line", "_reason", "_field")
    return ParseResult(rows, rejected, {"format": "dcgm-hourly-parquet", "rows": rows.height})
