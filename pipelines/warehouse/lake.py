"""The lake's exported tables: core (and, without Delta, raw) warehouse tables, locally or on S3.

Two layouts. With Delta (:func:`export_delta`, what the ``lake_export`` asset writes): each
table is a Delta table at ``<root>/<schema>.<table>``, partitioned by ``cluster`` and ``date``
(below), written in one commit per table that replaces the partitions it covers; the raw
tables' Delta tables there are the partition runs' (:mod:`pipelines.warehouse.delta`), so
:func:`export_delta` writes core and analytics tables only. :func:`read_lake` reads either
layout.

Hive-layout Parquet (:func:`export_lake`, kept for readers that want plain files):
``<root>/<schema>.<table>/cluster=<cluster>/date=<YYYY-MM-DD>/part-0.parquet``, one file per
partition. ``date`` is the UTC day of the table's natural time column (the first non-null of
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
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped]  # fsspec ships no type stubs
import polars as pl
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from pipelines.warehouse import connect, table_exists
from pipelines.warehouse.delta import (
    COMMIT_ATTEMPTS,
    checked_cluster,
    delta_table_url,
    storage_options_for,
)

__all__ = [
    "DEFAULT_DELTA_TABLES",
    "DEFAULT_LAKE_TABLES",
    "HIVE_NULL",
    "LAKE_TIME_COLUMNS",
    "PART_FILE",
    "export_delta",
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

#: What :func:`export_delta` writes by default: every core table (the raw tables' Delta tables
#: are committed by the partition runs, :func:`pipelines.warehouse.delta.commit_partition`).
DEFAULT_DELTA_TABLES: tuple[str, ...] = tuple(t for t in LAKE_TIME_COLUMNS if t.startswith("core."))

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
    """One lake table as a lazy frame, partition columns included.

    A Delta table (a ``_delta_log`` under ``<root>/<table>``) is read at its latest version,
    with its own partition columns: ``cluster`` and ``date`` for :func:`export_delta`'s tables,
    ``cluster`` and ``partition_date`` for the partition runs' raw tables. Otherwise the hive
    layout of :func:`export_lake` is read.

    Args:
        root_url: the lake root.
        table: ``schema.table``.
        partition_cols: the hive columns a hive-layout table was written with; ``date`` reads
            as ``pl.Date``, the others as strings (ignored for a Delta table).
        storage_options: object_store options, as for :func:`export_lake`.
    """
    lake = _open_lake(root_url, storage_options)
    # A Delta log is looked for through fsspec, not deltalake: its calls hold the GIL while
    # they wait on the store, which an in-process S3 stand-in cannot answer.
    lake.fs.invalidate_cache()
    if lake.fs.exists(f"{lake.root}/{table}/_delta_log"):
        return pl.scan_delta(
            delta_table_url(root_url, table), storage_options=storage_options_for(storage_options)
        )
    hive_schema = {c: (pl.Date() if c == _DATE else pl.String()) for c in partition_cols}
    return pl.scan_parquet(
        lake.url(f"{lake.root}/{table}/"),
        hive_partitioning=True,
        hive_schema=hive_schema,
        storage_options=lake.storage_options,
    )


def _delta_predicate(frame: pl.DataFrame, partition: tuple[str, dt.date] | None) -> str:
    """The partitions a commit of ``frame`` replaces: the one cluster-day, or every partition
    of the clusters ``frame`` holds (cluster names validated before they reach the text)."""
    if partition is not None:
        return f"cluster = '{checked_cluster(partition[0])}' AND {_DATE} = '{partition[1]}'"
    names = sorted(set(frame["cluster"].drop_nulls().to_list()))
    quoted = ", ".join(f"'{checked_cluster(c)}'" for c in names)
    return f"cluster IN ({quoted})"


def export_delta(
    warehouse_db: str | Path,
    root_url: str,
    *,
    tables: Iterable[str] = DEFAULT_DELTA_TABLES,
    partition: tuple[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Write warehouse tables to the lake as Delta tables, one commit per table.

    Each table lives at ``<root>/<schema>.<table>``, partitioned by ``cluster`` and ``date``
    (the UTC day of its first non-null time column, :data:`LAKE_TIME_COLUMNS`; NULL for a
    table without one). A commit is ``mode="overwrite"`` with a predicate, so the partitions it
    replaces are swapped in one transaction (readers see the old table or the new one) and a
    concurrent export of other clusters does not conflict: without ``partition`` it replaces
    every partition of the clusters the warehouse table holds (a cluster the table no longer
    holds keeps its rows in the lake); with ``partition`` only that cluster-day, removed when
    it has no rows. Re-exports are idempotent (same rows, a new version).

    Args:
        warehouse_db: the DuckDB file (opened read-only; the serving copy works too).
        root_url: a folder, ``file://`` URL or ``s3://bucket/prefix``.
        tables: ``schema.table`` names, keys of :data:`LAKE_TIME_COLUMNS` outside ``raw.``;
            tables missing from the warehouse, or empty there (without ``partition``), are
            skipped.
        partition: ``(cluster, YYYY-MM-DD)`` to export one cluster-day only.
        storage_options: object_store options (``aws_endpoint_url``, ``aws_region``,
            ``aws_allow_http``...); credentials otherwise from ``AWS_*`` variables.

    Returns:
        Table → the Delta version its commit created.

    Raises:
        ValueError: an unknown or raw table (raw tables are the partition runs' to commit), or
            a cluster name that cannot be a partition value.
        deltalake.exceptions.CommitFailedError: a commit still conflicted after
            :data:`~pipelines.warehouse.delta.COMMIT_ATTEMPTS` tries.
    """
    tables = tuple(tables)
    bad = [t for t in tables if t not in LAKE_TIME_COLUMNS or t.startswith("raw.")]
    if bad:
        raise ValueError(
            f"not Delta export tables: {bad}; raw tables are committed by the partition runs"
            " (lake_raw_job), the others must be keys of LAKE_TIME_COLUMNS"
        )
    part = None if partition is None else (partition[0], dt.date.fromisoformat(partition[1]))
    opts = storage_options_for(storage_options)
    versions: dict[str, int] = {}
    for table in tables:
        frame = _read_table(warehouse_db, table, part[0] if part else None)
        if frame is None or (frame.height == 0 and part is None):
            continue
        frame = _with_partition_cols(frame, table, ("cluster", _DATE))
        if part is not None:
            frame = frame.filter(pl.col(_DATE) == part[1])
        url = delta_table_url(root_url, table)
        predicate = _delta_predicate(frame, part)
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                if frame.height == 0:
                    if not DeltaTable.is_deltatable(url, storage_options=opts):
                        break
                    target = DeltaTable(url, storage_options=opts)
                    target.delete(predicate)
                    versions[table] = int(target.version())
                    break
                write_deltalake(
                    url,
                    frame.to_arrow(),
                    mode="overwrite",
                    predicate=predicate,
                    partition_by=["cluster", _DATE],
                    storage_options=opts,
                    # a column the table gained since the lake's last export (a new core
                    # column) is added to the Delta table, NULL in its older rows
                    schema_mode="merge",
                )
                versions[table] = int(DeltaTable(url, storage_options=opts).version())
                break
            except CommitFailedError:
                if attempt == COMMIT_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * 2**attempt)
    return versions
