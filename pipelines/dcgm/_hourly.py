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

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult, latest_plausible

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

#: Upper bound for ``fb_used_max_mib``: 2^20 MiB = 1 TiB, above any GPU's framebuffer.
FB_MAX_MIB = 2**20

#: Key of one hourly row; a repeat within a file is rejected as "duplicate key".
_KEY = ("cluster", "hostname", "gpu", "hour", "hpc_job")

#: (field, condition that makes a row invalid, reason); the first failing check names the row.
_CHECKS: tuple[tuple[str, pl.Expr, str], ...] = (
    (
        "hostname",
        pl.col("hostname").is_null() | (pl.col("hostname").str.strip_chars() == ""),
        "missing hostname",
    ),
    (
        "uuid",
        pl.col("uuid").is_null() | (pl.col("uuid").str.strip_chars() == ""),
        "missing uuid",
    ),
    ("gpu", pl.col("gpu").is_null() | (pl.col("gpu") < 0), "missing or negative GPU index"),
    ("hour", pl.col("hour").is_null(), "missing hour"),
    (
        "samples",
        pl.col("samples").is_null() | (pl.col("samples") < 0) | (pl.col("samples") > 12),
        "samples outside 0-12",
    ),
    (
        "gr_engine_active_avg",
        pl.col("gr_engine_active_avg").is_not_null() & ~pl.col("gr_engine_active_avg").is_finite(),
        "non-finite value",
    ),
    (
        "gr_engine_active_avg",
        pl.col("gr_engine_active_avg").is_not_null()
        & ((pl.col("gr_engine_active_avg") < 0) | (pl.col("gr_engine_active_avg") > 1)),
        "activity outside 0-1",
    ),
    (
        "fb_used_max_mib",
        pl.col("fb_used_max_mib").is_not_null()
        & ((pl.col("fb_used_max_mib") < 0) | (pl.col("fb_used_max_mib") > FB_MAX_MIB)),
        f"fb_used_max_mib outside 0-{FB_MAX_MIB} MiB",
    ),
    ("xid_last", pl.col("xid_last").is_not_null() & (pl.col("xid_last") < 0), "negative xid_last"),
    (
        "hour",
        pl.col("hour").is_not_null() & (pl.col("hour").dt.truncate("1h") != pl.col("hour")),
        "hour not on the hour",
    ),
)


def parse_dcgm_hourly(path: Path, *, cluster: str, now: datetime | None = None) -> ParseResult:
    """Read one hourly-aggregate Parquet file.

    Every cell is cast to :data:`DCGM_HOURLY_SCHEMA` non-strictly; a row whose cell fails the cast
    (e.g. ``samples = "twelve"``) is rejected naming that field ("not a valid <type>"). Rows failing
    a check go to ``rejected`` with the row number (1-based) as ``line_no``, the field and the
    reason: missing/empty hostname or uuid, missing/negative GPU, missing hour, hour not on the
    hour, hour later than ``now`` + 1 day, samples outside 0–12, activity outside 0–1 or NaN,
    ``fb_used_max_mib`` outside 0–2^20 MiB, negative ``xid_last``, and a repeated
    (cluster, hostname, gpu, hour, hpc_job) key (the first row is kept, later ones rejected as
    "duplicate key"). A missing ``cluster`` value takes ``cluster``.

    Args:
        path: the Parquet file.
        cluster: cluster of rows without one.
        now: ingest time (UTC) for the future-hour check; defaults to the wall clock.

    Returns:
        Rows with :data:`DCGM_HOURLY_SCHEMA`, and the rejected rows.

    Raises:
        InputFormatError: not a Parquet file, an empty folder, or a required column is missing.
    """
    if path.is_dir() and not any(path.rglob("*.parquet")):
        raise InputFormatError(str(path), "folder holds no .parquet files")
    try:
        df = pl.read_parquet(path, hive_partitioning=False)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputFormatError(str(path), f"not a Parquet file: {first}") from exc
    missing = [c for c in DCGM_HOURLY_SCHEMA if c not in df.columns and c != "cluster"]
    if missing:
        raise InputFormatError(str(path), f"missing columns {', '.join(missing)}")
    if "cluster" not in df.columns:
        df = df.with_columns(pl.lit(None, pl.String).alias("cluster"))
    df = df.select(list(DCGM_HOURLY_SCHEMA)).with_row_index("_line", 1)
    original = df  # the cells as read: the raw text of a rejected row is built from these
    cast_bad: list[tuple[str, pl.Expr, str]] = []
    casts: list[pl.Expr] = []
    for c, t in DCGM_HOURLY_SCHEMA.items():
        if df.schema[c] == t:
            casts.append(pl.col(c))
            continue
        if isinstance(t, pl.Datetime) and df.schema[c] == pl.String:
            conv = pl.col(c).str.to_datetime(time_unit="us", time_zone="UTC", strict=False)
        else:
            conv = pl.col(c).cast(t, strict=False)
        casts.append(conv.alias(c))
        cast_bad.append((c, pl.col(c).is_not_null() & conv.is_null(), f"{c}: not a valid {t}"))
    bad_cast_cols = [
        pl.when(bad).then(pl.lit(f"{name}\x00{why}")).otherwise(None) for name, bad, why in cast_bad
    ]
    df = df.with_columns(pl.coalesce([*bad_cast_cols, pl.lit(None, pl.String)]).alias("_castbad"))
    df = df.with_columns(casts)
    df = df.with_columns(pl.col("cluster").fill_null(cluster))
    now = now or datetime.now(UTC)
    checks = (
        *_CHECKS,
        (
            "hour",
            pl.col("hour") > pl.lit(latest_plausible(now)),
            "hour later than ingest time + 1 day",
        ),
    )
    reason = pl.lit(None, pl.String)
    fld = pl.lit(None, pl.String)
    for name, bad, why in reversed(checks):
        reason = pl.when(bad).then(pl.lit(why)).otherwise(reason)
        fld = pl.when(bad).then(pl.lit(name)).otherwise(fld)
    cb = pl.col("_castbad").str.split_exact("\x00", 1)
    reason = (
        pl.when(pl.col("_castbad").is_not_null()).then(cb.struct.field("field_1")).otherwise(reason)
    )
    fld = pl.when(pl.col("_castbad").is_not_null()).then(cb.struct.field("field_0")).otherwise(fld)
    df = df.with_columns(reason.alias("_reason"), fld.alias("_field"))
    # duplicate key among otherwise-valid rows: keep the first, reject later ones
    dup = (
        pl.col("_reason").is_null()
        & ~pl.struct(*_KEY, pl.col("_reason").is_null()).is_first_distinct()
    )
    df = df.with_columns(
        pl.when(dup).then(pl.lit("duplicate key")).otherwise(pl.col("_reason")).alias("_reason"),
        pl.when(dup).then(pl.lit(",".join(_KEY))).otherwise(pl.col("_field")).alias("_field"),
    )
    bad_rows = df.filter(pl.col("_reason").is_not_null()).select("_line", "_field", "_reason")
    raw = pl.concat_str(
        [pl.col(c).cast(pl.String, strict=False).fill_null("") for c in DCGM_HOURLY_SCHEMA],
        separator="|",
    )
    # both frames keep the file's row order, so the rejected rows' cells line up one to one
    bad_rows = bad_rows.hstack(
        original.filter(pl.col("_line").is_in(bad_rows["_line"].implode())).select(
            raw.alias("_raw")
        )
    )
    rejected = bad_rows.select(
        pl.lit(str(path)).alias("file"),
        pl.col("_line").cast(pl.Int64).alias("line_no"),
        pl.col("_line").cast(pl.Int64).alias("line_end"),
        pl.col("_field").alias("field"),
        pl.col("_raw").alias("raw"),
        pl.col("_reason").alias("reason"),
    ).cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
    rows = df.filter(pl.col("_reason").is_null()).drop("_line", "_reason", "_field", "_castbad")
    return ParseResult(rows, rejected, {"format": "dcgm-hourly-parquet", "rows": rows.height})
