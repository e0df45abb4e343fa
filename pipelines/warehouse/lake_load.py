"""The warehouse's raw tables loaded from the lake's Delta tables, cluster-day by cluster-day.

With a lake URL set the lake is the system of record for raw rows: partition runs
(:func:`pipelines.lake_assets.commit_raw_partition`) commit each cluster-day's raw tables,
``raw.ingests`` and ``raw.rejected_rows`` to Delta tables (:mod:`pipelines.warehouse.delta`),
and before the aggregate build :func:`load_raw_from_lake` makes the warehouse's raw tables a
copy of them. The build itself (:func:`pipelines.analytics.build.rebuild`) then runs unchanged.

What is rewritten: a cluster-day is identified by the set of data files each Delta table holds
for it (the add actions of the table's current version, read from the log, no data scanned). A
cluster-day whose file sets differ from those recorded at the last load (``raw.lake_partitions``)
was re-committed: its old rows are deleted and its new ones inserted; a cluster-day no longer in
the lake is deleted; the others are not touched. A re-committed partition always writes new
files (a Delta overwrite never reuses a file name), so equal file sets mean equal rows.

Ingest ids: each partition numbers its files from 1. The load gives a (re)loaded cluster-day
the next free block of warehouse ids, blocks taken in (day, cluster) order, so within a cluster
the ids grow with the day and the file order, as when the files are ingested one day after
another, and a re-committed day gets ids above every earlier load, as a re-ingested file does
(the incremental build, :mod:`pipelines.analytics.incremental`, sees its loads as new and the
replaced ones as deleted, comparing every load with the last build's copy).

Loads of input files made straight into the warehouse (``raw.ingests`` rows of a raw source
outside every recorded block) are deleted with their rows by the next load: the lake owns
the raw layer. Loads that are not of input files (the recommendation history's rejects) stay.

Transactions: the lake is read at the table versions listed first (a later commit is seen by
the next load), and every delete, insert and state row is one DuckDB transaction, so a load
killed midway leaves the warehouse as it was. Memory: one table's rows of one cluster and at
most :data:`DAYS_PER_READ` days at a time (``pl.scan_delta`` prunes the other partitions' files).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl
from deltalake import DeltaTable

from pipelines.warehouse._loading import RAW_TABLES, init_warehouse
from pipelines.warehouse.delta import (
    PARTITION_DATE,
    delta_table_exists,
    delta_table_url,
    storage_options_for,
)
from pipelines.warehouse.sql import load_sql
from pipelines.warehouse.tables import table_exists

__all__ = [
    "DAYS_PER_READ",
    "LAKE_RAW_TABLES",
    "LAKE_STATE_TABLE",
    "LakeLoad",
    "load_raw_from_lake",
]

#: Every table a partition run commits: the registry's raw tables, then the loads and rejects.
LAKE_RAW_TABLES: tuple[str, ...] = (
    *sorted(set(RAW_TABLES.values())),
    "raw.ingests",
    "raw.rejected_rows",
)

#: The warehouse's record of the cluster-days loaded from the lake (sql/raw/create_lake_partitions).
LAKE_STATE_TABLE = "raw.lake_partitions"

#: Days of one cluster read from a Delta table at a time (the load's memory bound).
DAYS_PER_READ = 31

_Key = tuple[str, dt.date]


@dataclass(frozen=True)
class LakeLoad:
    """What one :func:`load_raw_from_lake` did.

    Attributes:
        skipped: why nothing was loaded (no raw Delta table under the root), else None.
        versions: Delta table → the version read.
        loaded: cluster-days (re)loaded, as ``(cluster, day)``, in load order.
        removed: cluster-days deleted because the lake no longer has them.
        unchanged: cluster-days left as they were.
        rows: table → rows inserted.
        foreign_ingests: ingests of input files made straight into the warehouse, deleted.
    """

    skipped: str | None = None
    versions: dict[str, int] = field(default_factory=dict)
    loaded: list[_Key] = field(default_factory=list)
    removed: list[_Key] = field(default_factory=list)
    unchanged: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    foreign_ingests: int = 0


@dataclass(frozen=True)
class _Snapshot:
    """The lake's raw tables at one version each: version, and the files per cluster-day."""

    versions: dict[str, int]
    files: dict[_Key, str]  # cluster-day → sha256 of its files over every table


def _snapshot(root_url: str, opts: dict[str, str] | None) -> _Snapshot:
    versions: dict[str, int] = {}
    lines: dict[_Key, list[str]] = {}
    for table in LAKE_RAW_TABLES:
        if not delta_table_exists(root_url, table, storage_options=opts):
            continue
        delta = DeltaTable(delta_table_url(root_url, table), storage_options=opts)
        versions[table] = int(delta.version())
        adds = pl.DataFrame(delta.get_add_actions(flatten=True))
        if adds.height == 0:
            continue
        for cluster, day, path in adds.select(
            "partition.cluster", f"partition.{PARTITION_DATE}", "path"
        ).iter_rows():
            lines.setdefault((cluster, day), []).append(f"{table}\t{path}")
    files = {
        key: hashlib.sha256("\n".join(sorted(paths)).encode()).hexdigest()
        for key, paths in lines.items()
    }
    return _Snapshot(versions, files)


def _state(con: duckdb.DuckDBPyConnection) -> dict[_Key, tuple[str, int, int]]:
    rows = con.execute(load_sql("raw/lake_partitions")).fetchall()
    return {(c, d): (sha, lo, hi) for c, d, sha, lo, hi in rows}


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    schema, _, name = table.partition(".")
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = $s AND table_name = $t ORDER BY ordinal_position",
        {"s": schema, "t": name},
    ).fetchall()
    return [r[0] for r in rows]


def _spans(ids: list[int]) -> list[tuple[int, int]]:
    """Sorted ids as runs of consecutive ones, ``(first, last)`` each."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _chunks(days: list[dt.date], size: int) -> list[list[dt.date]]:
    return [days[i : i + size] for i in range(0, len(days), size)]


def _scan(root_url: str, table: str, version: int, opts: dict[str, str] | None) -> pl.LazyFrame:
    return pl.scan_delta(delta_table_url(root_url, table), version=version, storage_options=opts)


def _file_counts(
    root_url: str, snap: _Snapshot, keys: list[_Key], opts: dict[str, str] | None
) -> dict[_Key, int]:
    """Per cluster-day, its highest partition-local ingest id over every table (its files)."""
    out: dict[_Key, int] = {}
    for table, version in snap.versions.items():
        for cluster in sorted({c for c, _ in keys}):
            days = sorted(d for c, d in keys if c == cluster)
            tops = (
                _scan(root_url, table, version, opts)
                .filter((pl.col("cluster") == cluster) & pl.col(PARTITION_DATE).is_in(days))
                .group_by("cluster", PARTITION_DATE)
                .agg(pl.col("ingest_id").max())
                .collect()
            )
            for c, d, top in tops.iter_rows():
                out[(c, d)] = max(out.get((c, d), 0), int(top or 0))
    return out


def load_raw_from_lake(
    con: duckdb.DuckDBPyConnection,
    root_url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    days_per_read: int = DAYS_PER_READ,
) -> LakeLoad:
    """Make the warehouse's raw tables a copy of the lake's, rewriting only changed cluster-days.

    Args:
        con: read-write warehouse connection, not inside a transaction.
        root_url: the lake root (a folder, ``file://`` or ``s3://bucket/prefix``).
        storage_options: object_store options, as for
            :func:`pipelines.warehouse.delta.commit_partition`.
        days_per_read: days of one cluster read from a Delta table at a time.

    Returns:
        What was loaded (see :class:`LakeLoad`); ``skipped`` set, and the warehouse untouched,
        when the root holds no raw Delta table (no partition run has committed yet).

    Raises:
        deltalake.exceptions.DeltaError: the lake cannot be read (nothing is changed).
    """
    opts = storage_options_for(storage_options)
    snap = _snapshot(root_url, opts)
    if not snap.versions:
        return LakeLoad(skipped=f"no raw Delta table under {root_url}")
    init_warehouse(con)
    con.execute(load_sql("raw/create_lake_partitions"))
    con.execute(load_sql("raw/create_lake_versions"))
    old = _state(con)
    changed = sorted(
        (k for k, sha in snap.files.items() if k not in old or old[k][0] != sha),
        key=lambda k: (k[1], k[0]),
    )
    removed = sorted(k for k in old if k not in snap.files)
    kept = {k: v for k, v in old.items() if k not in removed and k not in changed}
    counts = _file_counts(root_url, snap, changed, opts)
    rows: dict[str, int] = {}
    con.execute("BEGIN TRANSACTION")
    try:
        ingests = con.execute(load_sql("raw/lake_ingest_ids")).fetchall()
        top = max([0] + [int(i) for i, _src in ingests] + [hi for _s, _lo, hi in old.values()])
        owned = {i for _s, lo, hi in kept.values() for i in range(lo, hi + 1)}
        foreign = [int(i) for i, src in ingests if src in RAW_TABLES and int(i) not in owned]
        dropped = set(foreign)
        for k in (*changed, *removed):
            if k in old:
                dropped.update(range(old[k][1], old[k][2] + 1))
        spans = _spans(sorted(dropped))
        blocks: dict[_Key, tuple[int, int]] = {}
        for key in changed:
            n = counts.get(key, 0)
            blocks[key] = (top + 1, top + n)
            top += n
        _blocks = pl.DataFrame(
            [(c, d, lo) for (c, d), (lo, _hi) in blocks.items()],
            schema={"cluster": pl.String(), PARTITION_DATE: pl.Date(), "_base": pl.Int64()},
            orient="row",
        )
        for table in LAKE_RAW_TABLES:
            if not table_exists(con, table):
                continue
            for lo, hi in spans:
                # a range, not a list: DuckDB skips the row groups outside it (min/max)
                con.execute(
                    f"DELETE FROM {table} WHERE ingest_id BETWEEN $lo AND $hi", {"lo": lo, "hi": hi}
                )
            if table not in snap.versions or not changed:
                continue
            columns = _columns(con, table)
            inserted = 0
            for cluster in sorted({c for c, _ in changed}):
                days = sorted(d for c, d in changed if c == cluster)
                for part in _chunks(days, days_per_read):
                    lake_rows = (
                        _scan(root_url, table, snap.versions[table], opts)
                        .filter((pl.col("cluster") == cluster) & pl.col(PARTITION_DATE).is_in(part))
                        .join(_blocks.lazy(), on=["cluster", PARTITION_DATE])
                        .with_columns(pl.col("ingest_id") + pl.col("_base") - 1)
                    )
                    present = set(lake_rows.collect_schema().names())
                    _rows = lake_rows.select([c for c in columns if c in present]).collect()
                    if _rows.height:
                        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
                    inserted += _rows.height
                    del _rows
            rows[table] = inserted
        _state_rows = pl.DataFrame(
            [(c, d, snap.files[(c, d)], lo, hi) for (c, d), (lo, hi) in blocks.items()],
            schema={
                "cluster": pl.String(),
                PARTITION_DATE: pl.Date(),
                "files_sha256": pl.String(),
                "ingest_lo": pl.Int64(),
                "ingest_hi": pl.Int64(),
            },
            orient="row",
        )
        _gone = pl.DataFrame(
            [*changed, *removed],
            schema={"cluster": pl.String(), PARTITION_DATE: pl.Date()},
            orient="row",
        )
        con.execute(load_sql("raw/delete_lake_partitions"))
        con.execute(load_sql("raw/insert_lake_partitions"))
        _versions = pl.DataFrame(
            list(snap.versions.items()),
            schema={"table_name": pl.String(), "version": pl.Int64()},
            orient="row",
        )
        con.execute(load_sql("raw/delete_lake_versions"))
        con.execute(load_sql("raw/insert_lake_versions"))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return LakeLoad(
        versions=dict(snap.versions),
        loaded=list(changed),
        removed=removed,
        unchanged=len(kept),
        rows=rows,
        foreign_ingests=len(foreign),
    )
