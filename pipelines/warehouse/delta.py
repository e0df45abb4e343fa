"""Delta Lake tables: the lake's transactional system of record, one commit per cluster-day.

Each raw table lives at ``<root>/<schema>.<table>`` as a Delta table partitioned by ``cluster``
and ``partition_date``: the cluster-day partition run that committed the rows (the day of the
input files, as :func:`pipelines.partitions.split_partition_key` gives it), not the day of the
rows' own time columns, so every row has exactly one owner and a re-run replaces exactly what the
previous run of that partition wrote. A partition run commits its rows with
``write_deltalake(mode="overwrite", predicate="cluster = … AND partition_date = …")``: the
removal of the partition's old files and the addition of its new ones are one Delta commit, so
readers see the old partition or the new one, never neither.

Concurrency: Delta's optimistic concurrency control. Each commit writes log entry ``N + 1`` with
a put-if-absent (a local folder: an atomic create; S3: a conditional PUT, ``If-None-Match: *``,
which AWS S3 has honoured since August 2024 and which deltalake 1.x uses instead of the DynamoDB
lock of 0.x). A writer that loses the race re-reads the log and checks the winning commits
against its predicate: commits to other partitions do not conflict, so it retries at the next
version and succeeds (``CommitFailedError`` when the conflict is real, e.g. a concurrent change
of the table's protocol on creation, which :func:`commit_partition` retries a bounded number of
times). No lock of our own is involved.

Values are formatted into the predicate only after validation (a cluster name of letters,
digits, ``._-``; an ISO date), so no input text reaches the predicate parser.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Mapping
from typing import Any

import polars as pl
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError

__all__ = [
    "COMMIT_ATTEMPTS",
    "DELTA_PARTITION_COLS",
    "PARTITION_DATE",
    "checked_cluster",
    "commit_partition",
    "delta_table_exists",
    "delta_table_url",
    "read_delta",
    "storage_options_for",
]

#: The column holding the cluster-day partition that committed a row.
PARTITION_DATE = "partition_date"

#: Partition columns of every Delta table of the lake, outermost first.
DELTA_PARTITION_COLS: tuple[str, str] = ("cluster", PARTITION_DATE)

#: Commit attempts before a ``CommitFailedError`` is raised (each after a short backoff).
COMMIT_ATTEMPTS = 8

_CLUSTER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TABLE_RE = re.compile(r"^(raw|core|analytics)\.[a-z_][a-z0-9_]*$")


def delta_table_url(root_url: str, table: str) -> str:
    """Where ``table`` (``schema.table``) lives under the lake root.

    Raises:
        ValueError: ``table`` is not a ``raw.``/``core.``/``analytics.`` table name.
    """
    if not _TABLE_RE.match(table):
        raise ValueError(f"not a lake table name: {table!r}")
    return f"{root_url.rstrip('/')}/{table}"


def storage_options_for(storage_options: Mapping[str, Any] | None) -> dict[str, str] | None:
    """object_store options as deltalake takes them (string values; booleans as
    ``true``/``false``), or None for none."""
    if not storage_options:
        return None
    return {
        k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in storage_options.items()
    }


def checked_cluster(cluster: str) -> str:
    """``cluster``, when it can be a partition value inside a Delta predicate's quotes.

    Raises:
        ValueError: not letters, digits and ``._-`` (starting with a letter or digit).
    """
    if not _CLUSTER_RE.match(cluster):
        raise ValueError(f"cluster name {cluster!r} cannot be a Delta partition value")
    return cluster


def _predicate(cluster: str, day: dt.date) -> str:
    return f"cluster = '{checked_cluster(cluster)}' AND {PARTITION_DATE} = '{day.isoformat()}'"


def commit_partition(
    root_url: str,
    table: str,
    frame: pl.DataFrame,
    *,
    cluster: str,
    day: str | dt.date,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Replace one cluster-day of a Delta table with ``frame``, in one commit.

    The partition's previous rows are removed and ``frame``'s added in the same transaction
    (``mode="overwrite"`` with a partition predicate); an empty ``frame`` removes the partition.
    The table is created, partitioned by :data:`DELTA_PARTITION_COLS`, by the first commit. A
    column of ``frame`` the table lacks is added to its schema in the same commit (Delta's
    schema evolution, ``schema_mode="merge"``), read as NULL in the partitions written before.

    Args:
        root_url: the lake root (a folder, ``file://`` or ``s3://bucket/prefix``).
        table: ``schema.table``.
        frame: the partition's rows; its ``cluster`` column, if any, is overwritten with
            ``cluster`` and a ``partition_date`` column is added.
        cluster: the partition's cluster.
        day: the partition's UTC day.
        storage_options: object_store options (``aws_endpoint_url``, ``aws_region``,
            ``aws_allow_http``, ...); credentials otherwise from ``AWS_*`` variables.

    Returns:
        The table version the commit created (-1 when an empty frame met no table).

    Raises:
        ValueError: a bad table or cluster name.
        CommitFailedError: the commit still conflicted after :data:`COMMIT_ATTEMPTS` tries.
    """
    url = delta_table_url(root_url, table)
    day = dt.date.fromisoformat(day) if isinstance(day, str) else day
    predicate = _predicate(cluster, day)
    opts = storage_options_for(storage_options)
    rows = frame.with_columns(
        pl.lit(cluster, pl.String()).alias("cluster"),
        pl.lit(day, pl.Date()).alias(PARTITION_DATE),
    )
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            if rows.height == 0:
                try:
                    target = DeltaTable(url, storage_options=opts)
                except TableNotFoundError:
                    return -1
                target.delete(predicate)
                return int(target.version())
            write_deltalake(
                url,
                rows.to_arrow(),
                mode="overwrite",
                predicate=predicate,
                partition_by=list(DELTA_PARTITION_COLS),
                storage_options=opts,
                # a column the table lacks (a newer raw or core table written to an older
                # lake) is added to its schema; the partitions written before read it NULL
                schema_mode="merge",
            )
            return int(DeltaTable(url, storage_options=opts).version())
        except CommitFailedError:
            # A real conflict (two creations of the table at once, a protocol change): the
            # loser re-reads the log and tries again; other partitions' commits never get here.
            if attempt == COMMIT_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


def delta_table_exists(
    root_url: str, table: str, *, storage_options: Mapping[str, Any] | None = None
) -> bool:
    """Whether ``table`` has a Delta log under the lake root (a commit created it).

    Raises:
        ValueError: a bad table name.
    """
    url = delta_table_url(root_url, table)
    return bool(DeltaTable.is_deltatable(url, storage_options=storage_options_for(storage_options)))


def read_delta(
    root_url: str, table: str, *, storage_options: Mapping[str, Any] | None = None
) -> pl.LazyFrame:
    """A Delta table of the lake as a lazy frame (partition columns included).

    Args:
        root_url: the lake root.
        table: ``schema.table``.
        storage_options: object_store options, as for :func:`commit_partition`.

    Raises:
        ValueError: a bad table name.
    """
    return pl.scan_delta(
        delta_table_url(root_url, table), storage_options=storage_options_for(storage_options)
    )
