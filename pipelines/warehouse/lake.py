"""The Parquet lake: raw and core warehouse tables as hive-partitioned files, locally or on S3.

Layout: ``<root>/<schema>.<table>/cluster=<cluster>/date=<YYYY-MM-DD>/part-0.parquet``, one file
per partition. ``date`` is the UTC day of the table's natural time column (the first non-null of
the columns in :data:`LAKE_TIME_COLUMNS`); rows without one, and tables without a time column
(node inventories), go to ``date=__HIVE_DEFAULT_PARTITION__``, which polars and DuckDB read back as
NULL. Partition columns live in the path only, not in the files.

Files are written and read with polars' native cloud I/O (``write_parquet`` / ``scan_parquet`` with
``storage_options`` in object_store's key names, e.g. ``aws_endpoint_url``, ``aws_region``,
``aws_access_key_id``, ``aws_allow_http``); listing and deleting stale files goes through fsspec
(``s3fs`` for ``s3://``), given the same options translated. Credentials left out of
``storage_options`` come from the usual ``AWS_*`` environment variables.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped]  # fsspec ships no type stubs
import polars as pl

from pipelines.warehouse import connect, table_exists

__all__ = [
    "DEFAULT_LAKE_TABLES",
    "HIVE_NULL",
    "LAKE_TIME_COLUMNS",
    "PART_FILE",
    "export_lake",
    "read_lake",
]

#: Per table, the time columns whose first non-null value (as a UTC day) gives ``date``.
#: An empty tuple: the table has no natural time (a snapshot), every row goes to the NULL day.
LAKE_TIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "raw.slurm_rows": ("start_at", "submit_at"),
    "raw.k8s_events": ("first_seen", "last_seen"),
    "raw.k8s_pods": ("created_at",),
    "raw.dcgm_samples": ("ts",),
    "raw.dcgm_hourly": ("hour",),
    "raw.slurm_events": ("start_at",),
    "raw.slurm_nodes": (),
    "raw.sshare": ("snapshot_at",),
    "raw.slurm_job_gres": ("start_at", "snapshot_at"),
    "raw.slurm_reservations": ("start_at", "snapshot_at"),
    "raw.k8s_workloads": ("snapshot_at",),
    "raw.kueue_cluster_queues": ("snapshot_at",),
    "raw.kueue_local_queues": ("snapshot_at",),
    "raw.k8s_nodes": ("snapshot_at",),
    "raw.slurm_sprio": ("snapshot_at",),
    "raw.slurm_sdiag": ("sdiag_at",),
    "raw.slurm_transactions": ("changed_at",),
    "raw.slurm_tres": (),
    "raw.slurm_config": ("snapshot_at",),
    "raw.slurm_node_comments": ("polled_at",),
    "raw.topology": ("valid_from",),
    "raw.slurm_squeue": ("poll_at",),
    "raw.kueue_topologies": ("snapshot_at",),
    "raw.kueue_workload_topology": ("snapshot_at",),
    "core.slurm_jobs": ("start_at", "submit_at"),
    "core.k8s_pods": ("created_at",),
    "core.k8s_events": ("first_seen", "last_seen"),
    "core.jobs": ("start_at", "submit_at"),
    "core.nodes": (),
    "core.build_cutoffs": (),
    "core.k8s_workloads": ("created_at",),
    "core.k8s_pending_reasons": ("first_seen", "last_seen"),
    "analytics.occupancy_hourly": ("hour",),
    "analytics.gpu_waterfall_hourly": ("hour",),
}

#: What :func:`export_lake` writes by default: every raw and core table.
DEFAULT_LAKE_TABLES: tuple[str, ...] = tuple(
    t for t in LAKE_TIME_COLUMNS if t.startswith(("raw.", "core."))
)

#: The one file name of each partition (re-exports overwrite it).
PART_FILE = "part-0.parquet"

#: Hive's name for a NULL partition value (read back as NULL by polars and DuckDB).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_DATE = "date"


@dataclass(frozen=True)
class _Lake:
    """A lake root: the fsspec filesystem, the root path without protocol, and polars' options."""

    fs: fsspec.AbstractFileSystem
    root: str
    is_local: bool
    storage_options: dict[str, Any] | None

    def url(self, path: str) -> str:
        """What polars is given for a path of this filesystem."""
        return path if self.is_local else str(self.fs.unstrip_protocol(path))


def _fsspec_options(storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """object_store option names (polars) → s3fs keyword arguments; unknown keys are dropped."""
    opts = {k.lower(): v for k, v in (storage_options or {}).items()}
    out: dict[str, Any] = {"skip_instance_cache": True}
    client: dict[str, Any] = {}
    for key, name in (
        ("aws_access_key_id", "key"),
        ("access_key_id", "key"),
        ("aws_secret_access_key", "secret"),
        ("secret_access_key", "secret"),
        ("aws_session_token", "token"),
        ("session_token", "token"),
    ):
        if key in opts:
            out[name] = opts[key]
    for key in ("aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint"):
        if key in opts:
            client["endpoint_url"] = opts[key]
    for key in ("aws_region", "region"):
        if key in opts:
            client["region_name"] = opts[key]
    if client:
        out["client_kwargs"] = client
    return out


def _open_lake(root_url: str, storage_options: Mapping[str, Any] | None) -> _Lake:
    protocol = fsspec.core.split_protocol(root_url)[0] or "file"
    if protocol in ("file", "local"):
        root = os.path.abspath(fsspec.core.strip_protocol(root_url))
        return _Lake(fsspec.filesystem("file"), root.rstrip("/"), True, None)
    fs = fsspec.filesystem(protocol, **_fsspec_options(storage_options))
    root = str(fs._strip_protocol(root_url)).rstrip("/")
    return _Lake(fs, root, False, dict(storage_options or {}))


def _with_partition_cols(
    frame: pl.DataFrame, table: str, partition_cols: tuple[str, ...]
) -> pl.DataFrame:
    """Add ``date`` (UTC day of the first non-null time column) when it is a partition column."""
    if _DATE not in partition_cols or _DATE in frame.columns:
        return frame
    days = []
    for col in LAKE_TIME_COLUMNS[table]:
        dtype = frame.schema[col]
        expr = pl.col(col)
        if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
            expr = expr.dt.convert_time_zone("UTC")
        days.append(expr.dt.date())
    day = pl.coalesce(days) if days else pl.lit(None, dtype=pl.Date())
    return frame.with_columns(day.alias(_DATE))


def _segment(col: str, value: object) -> str:
    if value is None:
        return f"{col}={HIVE_NULL}"
    text = value.isoformat() if isinstance(value, dt.date) else str(value)
    if not text or "/" in text or text in (".", ".."):
        raise ValueError(f"{col}={text!r} cannot be a partition folder name")
    return f"{col}={text}"


def _write(lake: _Lake, frame: pl.DataFrame, path: str) -> None:
    if lake.is_local:
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.tmp"
        frame.write_parquet(tmp)
        os.replace(tmp, path)  # a reader never sees a half-written file
    else:
        # One PUT per object: S3 replaces the object atomically.
        frame.write_parquet(lake.url(path), storage_options=lake.storage_options)


def _existing_files(lake: _Lake, folder: str) -> list[str]:
    lake.fs.invalidate_cache()
    if not lake.fs.exists(folder):
        return []
    return [str(p) for p in lake.fs.find(folder)]


def _read_table(warehouse_db: str | Path, table: str, cluster: str | None) -> pl.DataFrame | None:
    with connect(warehouse_db, read_only=True) as con:
        if not table_exists(con, table):
            return None
        # ``table`` is a key of LAKE_TIME_COLUMNS (checked by the caller), never user text.
        if cluster is None:
            frame: pl.DataFrame = con.sql(f"SELECT * FROM {table}").pl()
        else:
            frame = con.sql(f"SELECT * FROM {table} WHERE cluster = ?", params=[cluster]).pl()
        return frame


def export_lake(
    warehouse_db: str | Path,
    root_url: str,
    *,
    tables: Iterable[str] = DEFAULT_LAKE_TABLES,
    partition_cols: tuple[str, ...] = ("cluster", _DATE),
    partition: tuple[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write warehouse tables to the lake as hive-partitioned Parquet, replacing what was there.

    Without ``partition`` each table's folder is made to mirror the warehouse: every partition
    is rewritten and files of partitions no longer in the data are deleted. With ``partition``,
    only that cluster-day is rewritten (or deleted when it has no rows). Either way each
    partition ends with exactly one file, so re-exports are idempotent.

    Args:
        warehouse_db: the DuckDB file (opened read-only; the serving copy works too).
        root_url: a local folder, ``file://`` URL, or ``s3://bucket/prefix``.
        tables: ``schema.table`` names, keys of :data:`LAKE_TIME_COLUMNS`; missing ones are
            skipped.
        partition_cols: hive columns, outermost first; ``date`` is derived, others are table
            columns (moved from the files into the path).
        partition: ``(cluster, YYYY-MM-DD)`` to export one cluster-day only (needs the default
            ``partition_cols``).
        storage_options: object_store options for polars (``aws_endpoint_url``,
            ``aws_region``, ``aws_access_key_id``, ``aws_secret_access_key``,
            ``aws_allow_http``...).

    Returns:
        URLs (local paths for a folder) of the files written.

    Raises:
        ValueError: an unknown table, or ``partition`` with other ``partition_cols``.
    """
    tables = tuple(tables)
    unknown = [t for t in tables if t not in LAKE_TIME_COLUMNS]
    if unknown:
        raise ValueError(f"not lake tables: {unknown}; known: {sorted(LAKE_TIME_COLUMNS)}")
    if partition is not None and partition_cols != ("cluster", _DATE):
        raise ValueError("partition= needs partition_cols=('cluster', 'date')")
    lake = _open_lake(root_url, storage_options)
    written: list[str] = []
    for table in tables:
        frame = _read_table(warehouse_db, table, partition[0] if partition else None)
        if frame is None:
            continue
        frame = _with_partition_cols(frame, table, partition_cols)
        table_dir = f"{lake.root}/{table}"
        if partition is not None:
            day = dt.date.fromisoformat(partition[1])
            frame = frame.filter(pl.col(_DATE) == day)
            scope = f"{table_dir}/{_segment('cluster', partition[0])}/{_segment(_DATE, day)}"
        else:
            scope = table_dir
        keep: set[str] = set()
        if frame.height:
            for key, part in frame.group_by(list(partition_cols), maintain_order=True):
                folder = "/".join(_segment(c, v) for c, v in zip(partition_cols, key, strict=True))
                path = f"{table_dir}/{folder}/{PART_FILE}"
                _write(lake, part.drop(list(partition_cols)), path)
                keep.add(path)
                written.append(lake.url(path))
        stale = [p for p in _existing_files(lake, scope) if p not in keep]
        if stale:
            lake.fs.rm(stale)
    return written


def read_lake(
    root_url: str,
    table: str,
    *,
    partition_cols: tuple[str, ...] = ("cluster", _DATE),
    storage_options: Mapping[str, Any] | None = None,
) -> pl.LazyFrame:
    """One lake table as a lazy frame, partition columns (``cluster``, ``date``) included.

    Args:
        root_url: the root given to :func:`export_lake`.
        table: ``schema.table``.
        partition_cols: the hive columns it was written with; ``date`` reads as ``pl.Date``,
            the others as strings.
        storage_options: object_store options, as for :func:`export_lake`.
    """
    lake = _open_lake(root_url, storage_options)
    hive_schema = {c: (pl.Date() if c == _DATE else pl.String()) for c in partition_cols}
    return pl.scan_parquet(
        lake.url(f"{lake.root}/{table}/"),
        hive_partitioning=True,
        hive_schema=hive_schema,
        storage_options=lake.storage_options,
    )
