"""Idempotent file loads into the raw layer: one transaction per file, earlier loads replaced."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipelines._parse_result import ParseResult
from pipelines.kinds import raw_sources
from pipelines.warehouse.sql import load_sql

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


def raw_table_schemas() -> dict[str, dict[str, pl.DataType]]:
    """The parsed-row schema of each raw table (from the kinds registry), plus ``ingest_id``."""
    return {src.table: {**src.schema, "ingest_id": pl.Int64()} for src in raw_sources().values()}


def ensure_raw_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create each raw table (empty) from its parser's schema when it does not exist, and add
    to an existing one the schema's columns it lacks (NULL in the rows loaded before them:
    e.g. ``raw.dcgm_samples.xid``)."""
    for table, schema in raw_table_schemas().items():
        _empty = pl.DataFrame(schema=schema)
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} AS SELECT * FROM _empty")
        schema_name, name = table.split(".")
        have = {
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE schema_name = $s"
                " AND table_name = $t",
                {"s": schema_name, "t": name},
            ).fetchall()
        }
        rel = con.sql("SELECT * FROM _empty")
        for col, typ in zip(rel.columns, rel.types, strict=True):
            if col not in have:
                con.execute(f'ALTER TABLE {table} ADD COLUMN "{col}" {typ}')


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
    prefetch: bool = False,
) -> IngestStats:
    """Load one file parsed in pieces into its raw table, replacing any earlier load of it.

    The earlier loads of the file are deleted first; then each result is inserted as it comes,
    all under one ingest id, in one transaction: re-running an ingest is idempotent, and a
    failure (also one raised by ``results``) leaves the previous load in place. Only one piece
    is in memory at a time when ``results`` is a generator, such as
    :func:`pipelines.slurm._sacct_parse.iter_parse_sacct`. With ``prefetch``, the next piece
    is parsed in a worker thread while DuckDB stores the current one (polars and DuckDB both
    release the GIL), two pieces in memory. Off by default here;
    :func:`pipelines.ingest.ingest_file` turns it on for a file of :data:`LARGE_FILE_BYTES` or
    more: DuckDB stores such a file on one thread (see :func:`_one_store_thread`), which leaves
    a core to the parse (BENCHMARKS.md, "sacct parse and load against polars' string read").

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
        prefetch: parse the next piece while the current one is stored.

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
    pieces: Iterator[ParseResult] | None = None
    # the file's sha256 (the idempotency record) is read in a thread of its own while the
    # pieces are parsed and stored: hashlib releases the GIL, and DuckDB stores a large file
    # on one thread
    path = Path(file_key)
    large = path.is_file() and path.stat().st_size >= LARGE_FILE_BYTES
    with contextlib.ExitStack() as stack:
        sha256: Future[str | None] | None = None
        if large:
            stack.enter_context(_one_store_thread(con))
            hasher = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="sha256"))
            sha256 = hasher.submit(_sha256, path)
        con.execute("BEGIN TRANSACTION")
        try:
            previous = [
                r[0]
                for r in con.execute(
                    load_sql("raw/previous_ingests_of_file"), {"source": source, "file": file_key}
                ).fetchall()
            ]
            # The id is taken before the earlier loads are deleted, so a file loaded again gets
            # an id above every earlier one (ids then grow with load order; the incremental
            # build compares loads whole, so it does not rely on it).
            # fetchall, not fetchone: DuckDB 2 keeps a half-read result open on the connection.
            rows_next = con.execute(load_sql("raw/next_ingest_id")).fetchall()
            ingest_id = int(rows_next[0][0]) if rows_next else 1
            for old in previous:
                con.execute(
                    load_sql("raw/delete_rows_of_ingest").format(table=table), {"ingest_id": old}
                )
                con.execute(load_sql("raw/delete_ingest_rejected"), {"ingest_id": old})
                con.execute(load_sql("raw/delete_ingest"), {"ingest_id": old})
            time_columns = raw_sources()[source].data_time_columns
            newest: dt.datetime | None = None
            pieces = _prefetched(results) if prefetch else iter(results)
            for result in pieces:
                newest = _later(newest, newest_data_time(result.rows, time_columns, loaded_at))
                _rows = result.rows.with_columns(
                    pl.lit(ingest_id, dtype=pl.Int64()).alias("ingest_id")
                )
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
            if newest is not None:
                info["newest_data_at"] = newest.isoformat()
            con.execute(
                load_sql("raw/insert_ingest"),
                {
                    "ingest_id": ingest_id,
                    "source": source,
                    "cluster": cluster,
                    "file": file_key,
                    "sha256": _sha256(path) if sha256 is None else sha256.result(),
                    "loaded_at": loaded_at,
                    "rows_loaded": rows_loaded,
                    "rows_rejected": rows_rejected,
                    "info": json.dumps(info, default=str, sort_keys=True),
                },
            )
            con.execute("COMMIT")
        except BaseException:
            if pieces is not None and isinstance(pieces, Generator):
                pieces.close()  # waits for a piece being parsed ahead: no thread outlives the call
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


#: Files of at least this many bytes are stored on one DuckDB thread (:func:`_one_store_thread`)
#: and parsed ahead by :func:`pipelines.ingest.ingest_file`. Smaller files fit one block and one
#: row group per thread, where neither pays: the settings' round trip and the threads cost more
#: than they save (96 hourly DCGM files measured 5–10 % slower with them).
LARGE_FILE_BYTES = 8 << 20

#: DuckDB settings while a large file's pieces are stored (see :func:`_one_store_thread`).
_STORE_SETTINGS = {"threads": 1, "write_buffer_row_group_count": 1}


@contextlib.contextmanager
def _one_store_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run DuckDB on one thread for the block, writing each row group as it fills, then restore
    both settings.

    Why one thread: with more, each insert of a piece is split between them, and each thread
    leaves a partly filled row group (122,880 rows) behind; the checkpoint at the close then
    rewrites those row groups to merge them (DuckDB's vacuum), which measured a quarter of the
    storing time. On one thread the pieces fill the row groups in turn and the checkpoint has
    nothing to merge; rows keep their file order. Why each row group written as it fills
    (``write_buffer_row_group_count`` 1, default 5): one thread otherwise holds five row groups
    of the file in memory before writing them, about 150 MB more at the peak for no gain in
    time (BENCHMARKS.md, "sacct parse and load against polars' string read"). Polars' parse of
    the next piece has the other cores (``prefetch``).
    """
    before = {
        name: con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]
        for name in _STORE_SETTINGS
    }
    for name, value in _STORE_SETTINGS.items():
        con.execute(f"SET {name} = {int(value)}")
    try:
        yield
    finally:
        for name, value in before.items():
            con.execute(f"SET {name} = {int(value)}")


def _prefetched(results: Iterable[ParseResult]) -> Iterator[ParseResult]:
    """``results`` in order, the next one computed in a worker thread while the caller works on
    the current one. One ``next`` at a time is asked of the underlying iterator (never two at
    once). An exception it raises is raised here, in order; when the caller stops early (an
    insert fails), the piece in flight is waited for and dropped, and a generator is closed, so
    no thread outlives the call."""
    it = iter(results)
    done = object()

    def step() -> object:
        return next(it, done)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parse-ahead") as pool:
        ahead: Future[object] = pool.submit(step)
        try:
            while True:
                item = ahead.result()
                if item is done:
                    return
                ahead = pool.submit(step)
                yield item  # type: ignore[misc]
        finally:
            ahead.cancel()
            # the piece in flight is dropped: the first error, or the caller's, is raised
            with contextlib.suppress(BaseException):
                ahead.result()
            close = getattr(it, "close", None)
            if close is not None:
                close()


def _later(a: dt.datetime | None, b: dt.datetime | None) -> dt.datetime | None:
    return b if a is None else a if b is None else max(a, b)


def newest_data_time(
    rows: pl.DataFrame, columns: tuple[str, ...], loaded_at: dt.datetime
) -> dt.datetime | None:
    """The newest value of ``columns`` in ``rows`` that is not after ``loaded_at`` (UTC).

    A later value (a reservation's end, a begin time) is a plan, not data, and is left out.
    Naive columns are read as UTC.

    Returns:
        An aware UTC datetime, or None when the rows hold no such value (no rows, no column).
    """
    present = [c for c in columns if c in rows.columns]
    if rows.height == 0 or not present:
        return None
    cap = loaded_at.astimezone(dt.UTC)

    def utc(c: str) -> pl.Expr:
        tz = getattr(rows.schema[c], "time_zone", None)
        col = pl.col(c).cast(pl.Datetime("us", tz)) if tz else pl.col(c).cast(pl.Datetime("us"))
        return col.dt.convert_time_zone("UTC") if tz else col.dt.replace_time_zone("UTC")

    found = rows.select(
        pl.max_horizontal([utc(c).filter(utc(c) <= cap).max() for c in present])
    ).item()
    return found.astimezone(dt.UTC) if found is not None else None


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


def record_rejected(
    con: duckdb.DuckDBPyConnection,
    *,
    source: str,
    cluster: str | None,
    file: str | Path,
    rows_loaded: int,
    rejected: pl.DataFrame,
    loaded_at: dt.datetime | None = None,
) -> int | None:
    """Record a file read outside the raw tables (its rows live elsewhere): one ``raw.ingests``
    row with its counts and its rejected rows in ``raw.rejected_rows``, replacing earlier
    records of the same file and source, in one transaction.

    Idempotent: a file whose content (sha256) was recorded already is left as it is (no new
    ingest id, so an incremental build does not see it as new). ``source`` need not be a raw
    table's kind.

    Args:
        con: a read-write connection to an initialised warehouse.
        source: the reader's name (``raw.ingests.source``, ``raw.rejected_rows.source``).
        cluster: the cluster the file belongs to.
        file: the file's path (its absolute form identifies it).
        rows_loaded: records read from it.
        rejected: its rejected records, :data:`pipelines._parse_result.REJECTED_SCHEMA`.
        loaded_at: record time (UTC); default now.

    Returns:
        The new ingest id, or None when the same content was recorded already.
    """
    file_key = str(Path(file).resolve())
    sha = _sha256(Path(file_key))
    params = {"source": source, "file": file_key}
    seen = [r[0] for r in con.execute(load_sql("raw/ingest_sha_of_file"), params).fetchall()]
    if seen and sha is not None and all(s == sha for s in seen):
        return None
    con.execute("BEGIN TRANSACTION")
    try:
        rows_next = con.execute(load_sql("raw/next_ingest_id")).fetchall()  # before the deletes
        ingest_id = int(rows_next[0][0]) if rows_next else 1
        for old in [
            r[0] for r in con.execute(load_sql("raw/previous_ingests_of_file"), params).fetchall()
        ]:
            con.execute(load_sql("raw/delete_ingest_rejected"), {"ingest_id": old})
            con.execute(load_sql("raw/delete_ingest"), {"ingest_id": old})
        _rej = rejected.with_columns(
            pl.lit(source).alias("source"), pl.lit(ingest_id, dtype=pl.Int64()).alias("ingest_id")
        )
        if _rej.height:
            con.execute("INSERT INTO raw.rejected_rows BY NAME SELECT * FROM _rej")
        con.execute(
            load_sql("raw/insert_ingest"),
            {
                **params,
                "ingest_id": ingest_id,
                "cluster": cluster,
                "sha256": sha,
                "loaded_at": loaded_at or dt.datetime.now(dt.UTC),
                "rows_loaded": rows_loaded,
                "rows_rejected": _rej.height,
                "info": json.dumps({"recorded_only": True}),
            },
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return ingest_id
