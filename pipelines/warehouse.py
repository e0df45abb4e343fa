"""The DuckDB warehouse: schemas by layer, idempotent file loads, and the published serving copy.

DuckDB allows one read-write process or many read-only ones on a file, so every function here
opens short-lived connections in ``with`` blocks, and readers (dashboard, ``goodput sql``) only
ever open the serving copy, which is replaced atomically by :func:`publish_serving_copy`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipelines._parse_result import ParseResult
from pipelines.kinds import raw_sources
from pipelines.sql import load_sql

__all__ = [
    "LOCK_WAIT_S",
    "RAW_TABLES",
    "SERVING_DETAIL_FILTERS",
    "IngestStats",
    "WarehouseLocked",
    "connect",
    "ensure_raw_tables",
    "init_warehouse",
    "load_parse_result",
    "load_parse_results",
    "lock_holder",
    "pid_alive",
    "publish_serving_copy",
    "raw_table_schemas",
    "remove_stale_copies",
]

#: Raw source (``ingests.source``) → the raw table its parser fills (from the kinds registry).
RAW_TABLES: dict[str, str] = {name: src.table for name, src in raw_sources().items()}


@dataclass(frozen=True)
class IngestStats:
    """What one file load did."""

    ingest_id: int
    source: str
    file: str
    rows_loaded: int
    rows_rejected: int
    replaced_ingests: int
    #: What the parser says the file leaves out (``info["warnings"]``: a sacct file without
    #: Start, Submit, End or AllocTRES), for the CLI and the asset log to print.
    warnings: tuple[str, ...] = ()


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


class WarehouseLocked(RuntimeError):
    """Another process holds the DuckDB file's write lock past the wait (the message names the
    file and the holder, as DuckDB reports it: program and PID)."""


#: Seconds a writer waits for another writer's lock (``GOODPUT_LOCK_WAIT_S``).
LOCK_WAIT_S = 30.0
_HOLDER_RE = re.compile(r"Conflicting lock is held in (?P<prog>.+?) \(PID (?P<pid>\d+)\)")


def lock_holder(message: str) -> str | None:
    """``"<program> (PID n)"`` from DuckDB's lock error text, else None."""
    m = _HOLDER_RE.search(message)
    return f"{m.group('prog')} (PID {m.group('pid')})" if m else None


def _open(p: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """Connect, retrying while another process holds the lock, for at most ``wait_s``."""
    deadline = time.monotonic() + wait_s
    delay = 0.1
    while True:
        try:
            return duckdb.connect(str(p), read_only=read_only)
        except duckdb.IOException as exc:
            holder = lock_holder(str(exc))
            if holder is None:
                raise
            if time.monotonic() >= deadline:
                raise WarehouseLocked(
                    f"{p} is locked by {holder}; waited {wait_s:g} s (one writer at a time: "
                    "try again when it finishes, or set GOODPUT_LOCK_WAIT_S)"
                ) from exc
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 2.0)


@contextmanager
def connect(
    path: str | Path, *, read_only: bool = False, lock_wait_s: float | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open a DuckDB file for the duration of a ``with`` block.

    A file another process holds locked (DuckDB allows one writer process) is retried for
    ``lock_wait_s`` seconds (default ``GOODPUT_LOCK_WAIT_S``, else :data:`LOCK_WAIT_S`).

    Args:
        path: the database file; its folder is created when writing.
        read_only: open without a write lock (many readers may share the file).
        lock_wait_s: how long to wait for another process's lock.

    Raises:
        WarehouseLocked: still locked after the wait (names the holder's program and PID).
        duckdb.IOException: the file cannot be opened for another reason.
    """
    p = Path(path)
    if not read_only:
        p.parent.mkdir(parents=True, exist_ok=True)
    wait = (
        lock_wait_s
        if lock_wait_s is not None
        else float(os.environ.get("GOODPUT_LOCK_WAIT_S") or LOCK_WAIT_S)
    )
    con = _open(p, read_only, wait)
    con.execute("SET TimeZone = 'UTC'")
    try:
        yield con
    finally:
        con.close()


def raw_table_schemas() -> dict[str, dict[str, pl.DataType]]:
    """The parsed-row schema of each raw table (from the kinds registry), plus ``ingest_id``."""
    return {src.table: {**src.schema, "ingest_id": pl.Int64()} for src in raw_sources().values()}


def ensure_raw_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create each raw table (empty) from its parser's schema when it does not exist."""
    for table, schema in raw_table_schemas().items():
        _empty = pl.DataFrame(schema=schema)
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} AS SELECT * FROM _empty")


def init_warehouse(con: duckdb.DuckDBPyConnection) -> None:
    """Create the schemas and bookkeeping tables; idempotent.

    One transaction (unless the caller already holds one), so a process killed midway leaves
    the file with every raw table or none of them, never some.
    """
    try:
        con.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException:
        own = False  # the caller's transaction
    else:
        own = True
    try:
        for name in ("raw/create_schemas", "raw/create_ingests", "raw/create_rejected_rows"):
            con.execute(load_sql(name))
        ensure_raw_tables(con)
    except BaseException:
        if own:
            con.execute("ROLLBACK")
        raise
    if own:
        con.execute("COMMIT")


def _sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_parse_result(
    con: duckdb.DuckDBPyConnection,
    *,
    source: str,
    cluster: str | None,
    file: str | Path,
    result: ParseResult,
    loaded_at: dt.datetime | None = None,
) -> IngestStats:
    """Load one parsed file into its raw table, replacing any earlier load of the same file.

    The delete of the earlier load and the insert run in one transaction, so re-running an ingest
    is idempotent and a failure leaves the previous load in place. A single-result
    :func:`load_parse_results`.

    Args:
        con: a read-write connection to an initialised warehouse.
        source: one of :data:`RAW_TABLES`.
        cluster: the cluster the rows belong to (bookkeeping only; rows carry their own).
        file: the input's path; its absolute form identifies the load.
        result: the parser's rows and rejected rows.
        loaded_at: load time (UTC); default now.

    Returns:
        The load's statistics.

    Raises:
        KeyError: unknown ``source``.
    """
    return load_parse_results(
        con, source=source, cluster=cluster, file=file, results=(result,), loaded_at=loaded_at
    )


def load_parse_results(
    con: duckdb.DuckDBPyConnection,
    *,
    source: str,
    cluster: str | None,
    file: str | Path,
    results: Iterable[ParseResult],
    loaded_at: dt.datetime | None = None,
) -> IngestStats:
    """Load one file parsed in pieces into its raw table, replacing any earlier load of it.

    The earlier loads of the file are deleted first; then each result is inserted as it comes
    (so only one piece is in memory at a time when ``results`` is a generator, such as
    :func:`pipelines.slurm._sacct_parse.iter_parse_sacct`), all under one ingest id, in one
    transaction: re-running an ingest is idempotent, and a failure (also one raised by
    ``results``) leaves the previous load in place.

    The ingest's ``rows_loaded`` and ``rows_rejected`` are the pieces' sums; its ``info`` merges
    the pieces' ``info``: ``int`` values (counts) are summed, any other value is the last
    piece's.

    Args:
        con: a read-write connection to an initialised warehouse.
        source: one of :data:`RAW_TABLES`.
        cluster: the cluster the rows belong to (bookkeeping only; rows carry their own).
        file: the input's path; its absolute form identifies the load.
        results: the parser's results for the file, in file order.
        loaded_at: load time (UTC); default now.

    Returns:
        The load's statistics.

    Raises:
        KeyError: unknown ``source``.
    """
    table = RAW_TABLES[source]
    file_key = (
        str(Path(file).resolve()) if not str(file).startswith(("http:", "https:")) else str(file)
    )
    loaded_at = loaded_at or dt.datetime.now(dt.UTC)
    rows_loaded = 0
    rows_rejected = 0
    info: dict[str, object] = {}
    con.execute("BEGIN TRANSACTION")
    try:
        previous = [
            r[0]
            for r in con.execute(
                load_sql("raw/previous_ingests_of_file"), {"source": source, "file": file_key}
            ).fetchall()
        ]
        for old in previous:
            con.execute(
                load_sql("raw/delete_rows_of_ingest").format(table=table), {"ingest_id": old}
            )
            con.execute(load_sql("raw/delete_ingest_rejected"), {"ingest_id": old})
            con.execute(load_sql("raw/delete_ingest"), {"ingest_id": old})
        # fetchall, not fetchone: DuckDB 2 keeps a half-read result open on the connection.
        rows_next = con.execute(load_sql("raw/next_ingest_id")).fetchall()
        ingest_id = int(rows_next[0][0]) if rows_next else 1
        for result in results:
            _rows = result.rows.with_columns(pl.lit(ingest_id, dtype=pl.Int64()).alias("ingest_id"))
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
            _rej = result.rejected.with_columns(
                pl.lit(source).alias("source"),
                pl.lit(ingest_id, dtype=pl.Int64()).alias("ingest_id"),
            )
            if _rej.height:
                con.execute("INSERT INTO raw.rejected_rows BY NAME SELECT * FROM _rej")
            rows_loaded += _rows.height
            rows_rejected += _rej.height
            _merge_info(info, result.info)
            # free this piece before the next is parsed
            del _rows, _rej, result
        con.execute(
            load_sql("raw/insert_ingest"),
            {
                "ingest_id": ingest_id,
                "source": source,
                "cluster": cluster,
                "file": file_key,
                "sha256": _sha256(Path(file_key)),
                "loaded_at": loaded_at,
                "rows_loaded": rows_loaded,
                "rows_rejected": rows_rejected,
                "info": json.dumps(info, default=str, sort_keys=True),
            },
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return IngestStats(
        ingest_id=ingest_id,
        source=source,
        file=file_key,
        rows_loaded=rows_loaded,
        rows_rejected=rows_rejected,
        replaced_ingests=len(previous),
        warnings=tuple(str(w) for w in _as_list(info.get("warnings"))),
    )


def _merge_info(merged: dict[str, object], info: dict[str, object]) -> None:
    """Fold one piece's ``info`` into ``merged``: ``int`` counts add up, other values replace."""
    for key, value in info.items():
        before = merged.get(key)
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and isinstance(before, int)
            and not isinstance(before, bool)
        ):
            merged[key] = before + value
        else:
            merged[key] = value


#: Detail tables the serving copy cuts to recent rows: table → SQL condition on the row (the
#: row is kept when it holds for ``$cutoff``). Every other table (aggregates, state, the
#: per-attempt summaries' keys) is copied whole.
SERVING_DETAIL_FILTERS: dict[str, str] = {
    "raw.dcgm_samples": "ts >= $cutoff",
    "analytics.gpu_activity": "bucket >= $cutoff",
    "raw.slurm_rows": "end_at IS NULL OR end_at >= $cutoff",
    "core.slurm_jobs": "end_at IS NULL OR end_at >= $cutoff",
    "core.jobs": "end_at IS NULL OR end_at >= $cutoff",
    "analytics.time_to_start_jobs": "end_at IS NULL OR end_at >= $cutoff",
    "core.k8s_workloads": "end_at IS NULL OR end_at >= $cutoff",
    "raw.k8s_pods": "coalesce(deleted_at, finished_at) IS NULL"
    " OR coalesce(deleted_at, finished_at) >= $cutoff",
    "core.k8s_pods": "coalesce(deleted_at, finished_at) IS NULL"
    " OR coalesce(deleted_at, finished_at) >= $cutoff",
    "raw.k8s_events": "last_seen IS NULL OR last_seen >= $cutoff",
    "core.k8s_events": "last_seen IS NULL OR last_seen >= $cutoff",
    # Per attempt: kept with its attempt.
    "analytics.job_gpu_summary": "EXISTS (SELECT 1 FROM src.core.jobs j WHERE"
    " j.cluster = t.cluster AND j.job_id = t.job_id AND j.attempt = t.attempt"
    " AND (j.end_at IS NULL OR j.end_at >= $cutoff))",
    # Rejected rows of files whose name carries a day before the cut-off are dropped.
    "raw.rejected_rows": "ingest_id NOT IN (SELECT ingest_id FROM src.raw.ingests WHERE"
    " try_strptime(regexp_extract(file, '(\\d{4}-\\d{2}-\\d{2})', 1), '%Y-%m-%d')"
    " < $cutoff - INTERVAL 1 DAY)",
}


def _copy_recent(src: Path, tmp: str, detail_days: int) -> None:
    """Write ``tmp`` as a new DuckDB: every table of ``src`` (detail tables cut to rows at most
    ``detail_days`` before the latest data cut-off), then every view."""
    with connect(tmp) as out:
        quoted = str(src).replace("'", "''")
        out.execute(f"ATTACH '{quoted}' AS src (READ_ONLY)")
        tables = out.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'src'"
            " ORDER BY ALL"
        ).fetchall()
        names = {f"{s}.{t}" for s, t in tables}
        cut = (
            out.execute("SELECT max(as_of) FROM src.core.jobs").fetchall()[0][0]
            if "core.jobs" in names
            else None
        )
        cutoff = cut - dt.timedelta(days=detail_days) if cut is not None else None
        for schema, table in tables:
            name = f"{schema}.{table}"
            out.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            cond = SERVING_DETAIL_FILTERS.get(name)
            if cond is None or cutoff is None:
                out.execute(f"CREATE TABLE {name} AS SELECT * FROM src.{name}")
            else:
                out.execute(
                    f"CREATE TABLE {name} AS SELECT * FROM src.{name} t WHERE {cond}",
                    {"cutoff": cutoff},
                )
        views = out.execute(
            "SELECT sql FROM duckdb_views() WHERE database_name = 'src' AND NOT internal"
            " ORDER BY view_name"
        ).fetchall()
        out.execute("DETACH src")
        pending = [v for (v,) in views]
        while pending:  # views over views: retry until every view binds
            failed = []
            for sql in pending:
                try:
                    out.execute(sql)
                except duckdb.CatalogException:
                    failed.append(sql)
            if len(failed) == len(pending):
                raise RuntimeError(f"serving copy: {len(failed)} views do not bind")
            pending = failed
        out.execute("CHECKPOINT")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (signal 0 checks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_copies(serving: str | Path) -> list[Path]:
    """Remove the half-written serving copies a killed publish left beside ``serving``.

    A publish writes ``<name>.<pid>.<random>.tmp`` (and DuckDB its ``.wal``); one whose process
    is gone is removed, as is an older ``<name>.<random>.tmp`` without a pid once an hour old.

    Returns:
        The files removed.
    """
    dst = Path(serving)
    removed: list[Path] = []
    for f in sorted(dst.parent.glob(f"{dst.name}.*.tmp*")):
        if not (f.name.endswith(".tmp") or f.name.endswith(".tmp.wal")):
            continue
        middle = f.name[len(dst.name) + 1 :].split(".", 1)[0]
        if middle.isdigit():
            stale = not pid_alive(int(middle))
        else:
            stale = time.time() - f.stat().st_mtime > 3600
        if stale:
            f.unlink(missing_ok=True)
            removed.append(f)
    return removed


def publish_serving_copy(
    warehouse: str | Path, serving: str | Path, *, detail_days: int = 0
) -> Path:
    """Publish an atomic read-only copy of the warehouse for readers.

    The writer's WAL is checkpointed and the copy written to a temporary name beside the
    target, then renamed over it (``os.replace``), so a reader sees either the old or the new
    copy, never a half-written one.

    With ``detail_days`` = 0 the copy is the whole file. Otherwise it holds aggregates plus
    recent detail: every table whole except those in :data:`SERVING_DETAIL_FILTERS` (jobs,
    samples, events, per-bucket activity, rejected rows), which keep the rows of the last
    ``detail_days`` days before the latest data cut-off (``max(as_of)`` of ``core.jobs``) —
    jobs still running or pending are always kept. Every view is recreated over the copy.

    Args:
        warehouse: the writer's DuckDB file (no other writer may hold it).
        serving: the published copy's path.
        detail_days: days of detail rows to keep; 0 = all rows.

    Returns:
        The serving copy's path.
    """
    src, dst = Path(warehouse), Path(serving)
    with connect(src) as con:
        con.execute("CHECKPOINT")
    dst.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_copies(dst)
    fd, tmp = tempfile.mkstemp(prefix=f"{dst.name}.{os.getpid()}.", suffix=".tmp", dir=dst.parent)
    os.close(fd)
    try:
        if detail_days > 0:
            os.unlink(tmp)  # DuckDB creates the file itself
            _copy_recent(src, tmp, detail_days)
        else:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if os.path.exists(tmp + ".wal"):
            os.unlink(tmp + ".wal")
    return dst
