"""Table helpers: the one place that formats table names into SQL.

Every function takes a table name ``schema.name`` (or a bare ``name``) that comes from the
code's own constants, never from user text, and checks it against :data:`_IDENTIFIER` before
formatting it into a statement; every value is a bound parameter. Writers run inside the
caller's transaction. :func:`run_named` runs a statement file of ``sql/`` by name with bound
parameters: the dashboard, the report and the recommendations read through it alike.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import duckdb
import polars as pl
import pyarrow as pa

from metrics.schema import UTC_DATETIME
from pipelines.warehouse.sql import load_sql

__all__ = [
    "UTC_DATETIME",
    "RowDiff",
    "apply_row_diff",
    "as_utc",
    "columns_match",
    "count_rows",
    "diff_replace",
    "ingest_time_spans",
    "read_rows_since",
    "read_table",
    "refresh_as_of",
    "replace_days",
    "replace_job_rows",
    "replace_table",
    "row_diff",
    "row_hashes",
    "run_named",
    "statement_params",
    "table_exists",
]


#: A table name the helpers accept: ``name`` or ``schema.name``, plain identifiers only.
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?")
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")
_COMMENT = re.compile(r"--[^\n]*")


def _checked(table: str) -> str:
    """``table`` when it is a plain (schema-qualified) identifier.

    Raises:
        ValueError: anything else (quotes, spaces, several dots, an empty name).
    """
    if not _IDENTIFIER.fullmatch(table):
        raise ValueError(f"not a table name: {table!r}")
    return table


def as_utc(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every time-zoned datetime column converted to ``UTC`` (DuckDB names the
    session zone, e.g. ``Etc/UTC``); naive columns and other types are left as they are."""
    zoned = [n for n, t in frame.schema.items() if isinstance(t, pl.Datetime) and t.time_zone]
    return frame.with_columns(pl.col(zoned).dt.convert_time_zone("UTC")) if zoned else frame


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether a table or view ``schema.name`` (or ``name`` in any schema) exists.

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    schema, _, name = _checked(table).rpartition(".")
    rows = con.execute(
        "SELECT count(*) FROM information_schema.tables"
        " WHERE table_name = $t AND ($s = '' OR table_schema = $s)",
        {"s": schema, "t": name},
    ).fetchall()
    return bool(rows[0][0])


def read_table(
    con: duckdb.DuckDBPyConnection, table: str, *, with_rowid: bool = False
) -> pl.DataFrame:
    """Every row of ``table`` as polars, zoned timestamps in ``UTC`` (:func:`as_utc`).

    Args:
        con: a connection holding the table.
        table: ``schema.name``.
        with_rowid: prepend DuckDB's ``rowid`` as column ``_rowid`` (Int64).

    Raises:
        ValueError: ``table`` is not a plain identifier.
        duckdb.CatalogException: no such table.
    """
    rowid = "rowid AS _rowid, " if with_rowid else ""
    return as_utc(con.sql(f"SELECT {rowid}* FROM {_checked(table)}").pl())


def read_rows_since(
    con: duckdb.DuckDBPyConnection, table: str, since: pl.DataFrame, *, time_col: str
) -> pl.DataFrame:
    """The rows of ``table`` of the clusters in ``since`` whose ``time_col`` is at or after
    that cluster's ``since``, in no particular order; a cluster not in ``since`` gives no row.
    DuckDB skips the row groups that end before the earliest ``since`` (the range test is also
    pushed into the scan).

    Args:
        con: a connection holding the table.
        table: ``schema.name`` with ``cluster`` and ``time_col``.
        since: ``cluster, since``: a cluster named twice is read from its earliest ``since``;
            a NULL ``since`` gives no row of its cluster. Zoned times are compared as instants;
            naive ones are read as UTC (never in the session's zone).
        time_col: a timestamp column of ``table``.

    Returns:
        ``table``'s columns, zoned timestamps in ``UTC`` (:func:`as_utc`); each stored row at
        most once.

    Raises:
        ValueError: ``table`` or ``time_col`` is not a plain identifier.
        duckdb.CatalogException: no such table.
    """
    if "." in time_col:
        raise ValueError(f"not a column name: {time_col!r}")
    col = _checked(time_col)
    start = pl.col("since")
    zoned = isinstance(since.schema["since"], pl.Datetime) and since.schema["since"].time_zone
    bounds = (
        since.select(
            "cluster",
            (start.dt.convert_time_zone("UTC") if zoned else start.dt.replace_time_zone("UTC"))
            .dt.cast_time_unit("us")
            .alias("since"),
        )
        .filter(pl.col("since").is_not_null())
        .group_by("cluster")
        .agg(pl.col("since").min())
    )
    lo = bounds["since"].min() if bounds.height else None
    sql = (
        f"SELECT t.* FROM {_checked(table)} AS t"
        " JOIN (SELECT unnest($clusters) AS _cluster, unnest($since) AS _since) AS w"
        f" ON t.cluster = w._cluster AND t.{col} >= w._since"
        f" WHERE $lo IS NOT NULL AND t.{col} >= $lo"
    )
    params = {
        "clusters": bounds["cluster"].to_list(),
        "since": bounds["since"].to_list(),
        "lo": lo,
    }
    return as_utc(con.sql(sql, params=params).pl())


def count_rows(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """The number of rows of ``table``.

    Raises:
        ValueError: ``table`` is not a plain identifier.
        duckdb.CatalogException: no such table.
    """
    return int(con.execute(f"SELECT count(*) FROM {_checked(table)}").fetchall()[0][0])


def replace_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Create or replace ``table`` with ``frame``'s rows and columns (types as DuckDB maps them).

    Raises:
        ValueError: ``frame`` has no columns, or ``table`` is not a plain identifier.
    """
    if frame.width == 0:
        raise ValueError(f"{table}: no columns to write")
    _f = frame
    con.execute(f"CREATE OR REPLACE TABLE {_checked(table)} AS SELECT * FROM _f")


def replace_table_from(con: duckdb.DuckDBPyConnection, table: str, source: str) -> None:
    """Create or replace ``table`` with every row and column of the table ``source``.

    Raises:
        ValueError: ``table`` or ``source`` is not a plain identifier.
    """
    con.execute(f"CREATE OR REPLACE TABLE {_checked(table)} AS SELECT * FROM {_checked(source)}")


def drop_table(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Drop ``table`` if it exists.

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    con.execute(f"DROP TABLE IF EXISTS {_checked(table)}")


def append_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Insert ``frame``'s rows into the existing ``table``, columns matched by name.

    Raises:
        ValueError: ``table`` is not a plain identifier.
        duckdb.Error: no such table, or a column the table lacks.
    """
    _insert(con, table, frame)


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height:
        _f = frame
        con.execute(f"INSERT INTO {_checked(table)} BY NAME SELECT * FROM _f")


def replace_days(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame,
    days: Mapping[str, set[dt.date]],
    *,
    time_col: str,
) -> tuple[int, int]:
    """Delete ``table``'s rows of the given cluster-days and insert ``frame``.

    A row belongs to cluster-day ``(c, d)`` when ``cluster = c`` and its ``time_col`` falls on
    UTC day ``d``. ``frame`` must hold exactly the new rows of those cluster-days (it is
    inserted by column name). Runs inside the caller's transaction.

    Args:
        con: read-write connection.
        table: ``schema.name`` with a ``cluster`` column.
        frame: the new rows.
        days: cluster → UTC days to replace.
        time_col: the table's time column (a timestamp with time zone).

    Returns:
        (rows deleted, rows inserted).

    Raises:
        ValueError: ``table`` or ``time_col`` is not a plain identifier.
    """
    _checked(table)
    if not _IDENTIFIER.fullmatch(time_col) or "." in time_col:
        raise ValueError(f"not a column name: {time_col!r}")
    deleted = 0
    for c, ds in sorted(days.items()):
        n = con.execute(
            f"DELETE FROM {table} WHERE cluster = $c"
            f" AND CAST(timezone('UTC', {time_col}) AS DATE) IN (SELECT unnest($d))",
            {"c": c, "d": sorted(ds)},
        ).fetchall()
        deleted += int(n[0][0]) if n else 0
    _insert(con, table, frame)
    return deleted, frame.height


def replace_job_rows(
    con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, keys: pl.DataFrame
) -> tuple[int, int]:
    """Delete ``table``'s rows whose ``(cluster, job_id)`` is in ``keys`` and insert ``frame``
    (by column name). Runs inside the caller's transaction.

    Returns:
        (rows deleted, rows inserted).

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    _k = keys.select("cluster", "job_id").unique()
    n = con.execute(
        f"DELETE FROM {_checked(table)} t WHERE EXISTS (SELECT 1 FROM _k"
        " WHERE _k.cluster = t.cluster AND _k.job_id = t.job_id)"
    ).fetchall()
    _insert(con, table, frame)
    return (int(n[0][0]) if n else 0), frame.height


def diff_job_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame,
    keys: pl.DataFrame,
    *,
    exact: bool = False,
) -> tuple[int, int] | None:
    """Make the rows of ``table`` whose ``(cluster, job_id)`` is in ``keys`` hold exactly
    ``frame``'s rows, writing only the rows that differ (floats bit for bit with ``exact``):
    :func:`diff_replace` under ``sql/analytics/rows_of_job_keys.sql`` (the keys in a temporary
    table for the statement's length). ``frame`` must hold every new row of those jobs and no
    other; a stored row of another job is neither compared nor touched. Runs inside the
    caller's transaction.

    Returns:
        (rows deleted, rows inserted), or None when ``frame`` has no columns, the table is
        missing, or its columns differ from ``frame``'s (nothing is written; the caller then
        replaces the jobs' rows or the table).

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    with job_keys_table(con, keys):
        where = load_sql("analytics/rows_of_job_keys")
        return diff_replace(con, table, frame, where=where, exact=exact)


@contextlib.contextmanager
def job_keys_table(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame) -> Iterator[None]:
    """The distinct ``cluster, job_id`` of ``keys`` (as strings) in the temporary table
    ``temp._diff_job_keys`` while the block runs, dropped after it: the statements that select
    some jobs' stored rows read it (``sql/analytics/rows_of_job_keys.sql``,
    ``jobs_in_diff_scope.sql``)."""
    _k = keys.select(pl.col("cluster", "job_id").cast(pl.String())).unique()
    con.execute("CREATE OR REPLACE TEMP TABLE _diff_job_keys AS SELECT * FROM _k")
    try:
        yield
    finally:
        con.execute("DROP TABLE IF EXISTS temp._diff_job_keys")


def refresh_as_of(con: duckdb.DuckDBPyConnection, table: str, as_of: pl.DataFrame) -> int:
    """Set ``as_of`` on the rows of ``table`` whose cluster's cut-off moved.

    Args:
        con: read-write connection.
        table: ``schema.name`` with ``cluster`` and ``as_of`` columns.
        as_of: ``cluster, as_of`` (the new cut-offs).

    Returns:
        The number of rows set.

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    _checked(table)
    total = 0
    for c, cut in as_of.iter_rows():
        n = con.execute(
            f"UPDATE {table} SET as_of = $a WHERE cluster = $c AND as_of IS DISTINCT FROM $a",
            {"a": cut, "c": c},
        ).fetchall()
        total += int(n[0][0]) if n else 0
    return total


def ingest_time_spans(
    con: duckdb.DuckDBPyConnection, table: str, time_col: str, ids: Sequence[int] | None = None
) -> pl.DataFrame:
    """Per ingest and cluster, the first and last ``time_col`` of the rows the ingest loaded
    into ``table``.

    Args:
        ids: the ingests to read (None: every ingest in ``table``).

    Returns:
        ``ingest_id`` (Int64), ``cluster`` (String), ``lo``, ``hi`` (UTC datetimes, µs), sorted
        by ingest and cluster.

    Raises:
        ValueError: ``table`` or ``time_col`` is not a plain identifier.
    """
    _checked(table)
    if not _IDENTIFIER.fullmatch(time_col) or "." in time_col:
        raise ValueError(f"not a column name: {time_col!r}")
    where = "" if ids is None else " WHERE ingest_id IN (SELECT unnest($ids))"
    rel = con.sql(
        f"SELECT ingest_id, cluster, min({time_col}) AS lo, max({time_col}) AS hi FROM {table}"
        f"{where} GROUP BY ingest_id, cluster ORDER BY ingest_id, cluster",
        params=None if ids is None else {"ids": [int(i) for i in ids]},
    ).pl()
    return as_utc(rel).with_columns(
        pl.col("ingest_id").cast(pl.Int64()), pl.col("cluster").cast(pl.String())
    )


def row_hashes(df: pl.DataFrame) -> pl.Series:
    """One UInt64 hash per row of ``df``, in order (``_h``). Floats are hashed at 12 significant
    digits: a sum recomputed in another order differs in its last bits, and such a row is not a
    change."""
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    return df.with_columns(pl.col(floats).round_sig_figs(12)).hash_rows().alias("_h")


def _quoted(column: str) -> str:
    """``column`` as a quoted SQL identifier (a table's own column name, from ``DESCRIBE``)."""
    return '"' + column.replace('"', '""') + '"'


#: DuckDB types hashed at 12 significant digits by :func:`_row_hash_sql`.
_FLOAT_TYPES = ("DOUBLE", "FLOAT")


def _nested(typ: str) -> bool:
    """Whether a DuckDB type is a list, array, struct, map or union."""
    return typ.endswith("]") or typ.startswith(("STRUCT", "MAP", "UNION"))


def _row_hash_sql(columns: list[tuple[str, str]], *, exact: bool = False) -> str:
    """A DuckDB expression hashing a row of ``columns`` (name, DuckDB type), floats rounded to
    12 significant digits (as :func:`row_hashes` does in polars): ``round(x, 11 -
    floor(log10(|x|)))``; zero, NaN and infinities are hashed as they are; with ``exact``,
    every float is hashed as it is (:func:`diff_replace`). A nested column is
    hashed with whether it is NULL, since DuckDB's ``hash`` gives an empty list and NULL (or a
    struct of NULL fields and a NULL struct) the same value, and polars tells them apart (an
    attempt with no nodes, ``[]``, against one whose node list is unknown)."""
    parts = []
    for name, typ in columns:
        c = _quoted(name)
        if typ in _FLOAT_TYPES and not exact:
            c = (
                f"CASE WHEN {c} = 0 OR NOT isfinite({c}) THEN {c}"
                f" ELSE round({c}, 11 - CAST(floor(log10(abs({c}))) AS INTEGER)) END"
            )
        elif _nested(typ):
            c = f"{c}, {c} IS NULL"
        parts.append(c)
    return f"hash({', '.join(parts)})"


def columns_match(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> bool:
    """Whether ``table`` exists with ``frame``'s column names and DuckDB types, in order: the
    condition under which :func:`diff_replace` and :func:`row_diff` compare the two (they
    give None otherwise).

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    if not table_exists(con, table):
        return False
    _new_rows = frame.clear().to_arrow(compat_level=pl.CompatLevel.newest())  # as diffed
    stored = _described(con.execute(f"DESCRIBE {_checked(table)}").fetchall())
    return stored == _described(con.execute(f"DESCRIBE SELECT * FROM {_NEW_ROWS}").fetchall())


def _described(rows: list[tuple[object, ...]]) -> list[tuple[str, str]]:
    """``(name, DuckDB type)`` of each column from a ``DESCRIBE``'s rows, in order."""
    return [(str(r[0]), str(r[1])) for r in rows]


def _with_positions(frame: pl.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table for DuckDB to scan, with ``_pos`` (UInt32) the row
    positions, without copying ``frame``: string columns stay Arrow string views (DuckDB reads
    them; the default export copies them into large strings) and the positions are a column of
    their own chunking (a row index added in polars realigns every column of a frame read in
    many chunks into one, a copy of the whole frame: 635 MB for a year's ``core.jobs``)."""
    table = frame.to_arrow(compat_level=pl.CompatLevel.newest())
    positions = pl.int_range(0, frame.height, dtype=pl.UInt32(), eager=True).to_arrow()
    return table.append_column("_pos", positions)


def diff_replace(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame,
    *,
    where: str = "",
    params: Mapping[str, object] | None = None,
    exact: bool = False,
) -> tuple[int, int] | None:
    """Make ``table`` hold exactly ``frame``'s rows by deleting the rows ``frame`` lacks and
    inserting the rows the table lacks (rows compared whole, floats at 12 significant digits,
    duplicates counted), so rows that did not change are not rewritten. Runs inside the
    caller's transaction.

    With ``exact``, floats are compared bit for bit instead: for a table whose floats are
    computed the same way by every build (no sum in another order) and that another table
    counts by value (``analytics.time_to_start_jobs``, whose durations
    ``analytics.time_to_start_counts`` counts), a row kept at 12 digits while its count took
    the new value would leave the two disagreeing.

    With ``where`` (a ``WHERE`` clause over ``table``'s columns, from ``sql/``, its ``$``
    parameters bound from ``params``), only the stored rows it selects are compared and may be
    deleted: ``frame`` then holds exactly the new rows of that slice of the table (a table
    rewritten one range of keys at a time).

    The comparison runs in DuckDB, which scans the stored table where it lies: a hash per row
    on both sides (:func:`_row_hash_sql`), each hash's occurrences numbered (a multiset key: two
    equal rows are two keys), and two anti-joins on (hash, occurrence). Only the row ids to delete
    and the positions of ``frame``'s rows to insert come back to Python; the stored table is
    never read into memory (reading and hashing it whole in polars was most of an incremental
    build's writing time, growing with the history).

    Returns:
        (rows deleted, rows inserted), or None when ``frame`` has no columns, the table is
        missing, or its column names or DuckDB types differ from ``frame``'s (the caller then
        replaces the table).

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    done = diff_replace_keys(con, table, frame, (), where=where, params=params, exact=exact)
    return None if done is None else done[:2]


def diff_replace_keys(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame,
    keys: Sequence[str],
    *,
    where: str = "",
    params: Mapping[str, object] | None = None,
    exact: bool = False,
) -> tuple[int, int, pl.DataFrame] | None:
    """:func:`diff_replace`, also returning which keys the rows written hold: the distinct
    values of the ``keys`` columns of the rows deleted and of the rows inserted (e.g. ``cluster,
    job_id``: the jobs whose rows changed), ``frame``'s types (no columns when ``keys`` is
    empty). The deleted rows' keys are read by row id before they are deleted.

    Returns:
        (rows deleted, rows inserted, keys), or None as :func:`diff_replace` says.

    Raises:
        ValueError: ``table`` is not a plain identifier.
    """
    if frame.width == 0 or not table_exists(con, table):
        return None
    # Scanned as Arrow: DuckDB hashes an Arrow table faster than it scans the polars frame.
    diff = _diff(con, table, _NEW_ROWS, "_pos", where=where, params=params,
                 rows=_with_positions(frame), keys=keys, exact=exact)  # fmt: skip
    if diff is None:
        return None
    gone, new_ids, gone_keys = diff
    added = frame[new_ids]
    _insert(con, table, added)
    found = pl.DataFrame()
    if keys:
        cols = list(keys)
        parts = [added.select(cols)]
        if gone_keys.width:
            parts.append(gone_keys.cast(frame.select(cols).schema, strict=False))  # type: ignore[arg-type]
        found = pl.concat(parts).unique(maintain_order=True)
    return gone, new_ids.len(), found


@dataclass(frozen=True)
class RowDiff:
    """What makes a table hold exactly a frame's rows (:func:`row_diff`), compared once and
    applied later (:func:`apply_row_diff`) in the same transaction.

    Attributes:
        table: the stored table.
        height: the frame's row count when compared.
        gone: ``rowid``s of the stored rows the frame lacks (Int64, ascending).
        added: positions of the frame's rows the table lacks (Int64, ascending).
        rows: those rows, the frame's first (its columns and types), then the stored ones.
    """

    table: str
    height: int
    gone: pl.Series
    added: pl.Series
    rows: pl.DataFrame


def row_diff(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pl.DataFrame,
    *,
    where: str = "",
    params: Mapping[str, object] | None = None,
    scope: pl.Series | None = None,
) -> RowDiff | None:
    """The rows of ``frame`` that ``table`` lacks and the rows of ``table`` that ``frame``
    lacks, compared as :func:`diff_replace` compares them (whole rows by their hash, floats at
    12 significant digits, duplicates counted: two equal rows are two); nothing is written.

    With ``where`` (a ``WHERE`` clause over ``table``'s columns, from ``sql/``, its ``$``
    parameters bound from ``params``) and ``scope`` (a Boolean mask over ``frame``'s rows),
    only the stored rows ``where`` selects are compared with the rows of ``frame`` that
    ``scope`` selects: the caller knows every other row to be the same on both sides (e.g. the
    rows of jobs that did not change), and the two must select the same slice of the table.
    The difference is still one of the whole ``frame``: :func:`apply_row_diff` writes it.

    The comparison runs in DuckDB, which scans the stored table where it lies (under the
    connection's memory limit, spilling past it): only the positions of the rows that differ
    come back, then the stored rows among them, so the table is never read into memory whole.
    :func:`apply_row_diff` then writes the difference without comparing again, as long as
    nothing else writes ``table`` in between.

    Returns:
        The difference, or None when ``frame`` has no columns, the table is missing, or its
        column names or DuckDB types differ from ``frame``'s (the caller then compares
        otherwise).

    Raises:
        ValueError: ``table`` is not a plain identifier, or ``scope`` is not one value per row
            of ``frame``.
    """
    if scope is not None and scope.len() != frame.height:
        raise ValueError(f"{table}: a scope of {scope.len()} rows for {frame.height} rows")
    if frame.width == 0 or not table_exists(con, table):
        return None
    table = _checked(table)
    if scope is None:
        _new_rows = _with_positions(frame)  # scanned by name (see _NEW_ROWS)
    else:  # the rows in scope only (a gather), each with its position in the whole frame
        at = scope.fill_null(False).arg_true().cast(pl.UInt32())
        _new_rows = frame[at].to_arrow(compat_level=pl.CompatLevel.newest())
        _new_rows = _new_rows.append_column("_pos", at.to_arrow())
    hashes = _row_hashes_sql(con, table, _NEW_ROWS, "_pos", where, rows=_new_rows)
    if hashes is None:
        return None
    ids = con.sql(
        _MULTISET_DIFF.format(hashes=hashes), params=dict(params) if params else None
    ).pl()
    del _new_rows
    added = ids.filter(pl.col("_new"))["_id"].cast(pl.Int64).sort()
    _gone = ids.filter(~pl.col("_new")).select(pl.col("_id").cast(pl.Int64).alias("_rowid"))
    gone = as_utc(
        con.sql(
            f"SELECT * FROM {table} WHERE rowid IN (SELECT _rowid FROM _gone) ORDER BY rowid"
        ).pl()
    )
    rows: pl.DataFrame = pl.concat([frame[added], gone.cast(frame.schema, strict=False)])
    return RowDiff(table, frame.height, _gone["_rowid"].sort(), added, rows)


def apply_row_diff(
    con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, diff: RowDiff
) -> tuple[int, int]:
    """Make ``diff.table`` hold exactly ``frame``'s rows by the difference :func:`row_diff`
    found for this same frame: its stored rows deleted by ``rowid``, ``frame``'s rows at its
    positions inserted. Runs inside the caller's transaction.

    Returns:
        (rows deleted, rows inserted).

    Raises:
        ValueError: ``frame`` has another row count than the one compared.
    """
    if frame.height != diff.height:
        raise ValueError(
            f"{diff.table}: the frame has {frame.height} rows, the difference was found for"
            f" {diff.height}"
        )
    if diff.gone.len():
        _g = diff.gone.to_frame("_rowid")
        con.execute(f"DELETE FROM {_checked(diff.table)} WHERE rowid IN (SELECT _rowid FROM _g)")
    _insert(con, diff.table, frame[diff.added])
    return diff.gone.len(), diff.added.len()


def diff_replace_from(
    con: duckdb.DuckDBPyConnection, table: str, source: str
) -> tuple[int, int] | None:
    """:func:`diff_replace` with the new rows in the table ``source`` (e.g. rows staged part by
    part, never in memory together) instead of a frame. Runs inside the caller's transaction;
    ``source`` is left as it is.

    Returns:
        (rows deleted, rows inserted), or None when ``table`` is missing or its column names
        or DuckDB types differ from ``source``'s.

    Raises:
        ValueError: ``table`` or ``source`` is not a plain identifier.
    """
    src = _checked(source)
    if not table_exists(con, table):
        return None
    diff = _diff(con, table, src, "rowid")
    if diff is None:
        return None
    gone, new_ids, _keys = diff
    if new_ids.len():
        _ids = pl.DataFrame({"_id": new_ids})
        con.execute(
            f"INSERT INTO {_checked(table)} BY NAME SELECT * FROM {src}"
            " WHERE rowid IN (SELECT _id FROM _ids)"
        )
    return gone, new_ids.len()


#: The name a frame's Arrow table is scanned by in the row comparisons: a local variable of the
#: function running the statement (DuckDB's replacement scan), not ``con.register``: a view
#: registered and unregistered inside the build's transaction keeps its Arrow table alive until
#: the transaction ends (a catalog entry dropped in a transaction lives as long as it), so each
#: table diffed kept a copy of its frame: 300 MB a part of the year's resolved Slurm rows.
_NEW_ROWS = "_new_rows"


#: The rows of ``o`` that ``n`` lacks (``_new`` false) and of ``n`` that ``o`` lacks (true), by
#: their ``_id``: each hash's occurrences numbered, so two equal rows are two keys.
_MULTISET_DIFF = """
{hashes}, ok AS (
    SELECT _id, _h, row_number() OVER (PARTITION BY _h ORDER BY _id) AS _k FROM o
), nk AS (
    SELECT _id, _h, row_number() OVER (PARTITION BY _h ORDER BY _id) AS _k FROM n
)
SELECT false AS _new, _id FROM ok ANTI JOIN nk USING (_h, _k)
UNION ALL
SELECT true AS _new, _id FROM nk ANTI JOIN ok USING (_h, _k)
"""


def _row_hashes_sql(
    con: duckdb.DuckDBPyConnection,
    table: str,
    new: str,
    new_id: str,
    where: str = "",
    *,
    rows: object = None,
    exact: bool = False,
) -> str | None:
    """``WITH o AS (…), n AS (…)``: each row's id (``table``'s ``rowid``, ``new``'s ``new_id``)
    as ``_id`` and its :func:`_row_hash_sql` as ``_h``, both materialized, for the statements
    that compare the two (``o``: the rows of ``table`` that ``where`` selects, every row without
    one); None when the relation ``new`` (less ``new_id``, unless that is ``rowid``) has other
    column names or DuckDB types than ``table``, in order. ``rows``: the Arrow table scanned as
    :data:`_NEW_ROWS` (``new``), when ``new`` is not a table; ``exact``: floats hashed as they
    are (:func:`_row_hash_sql`)."""
    _new_rows = rows  # scanned by name by the DESCRIBE below when new is _NEW_ROWS
    table = _checked(table)
    cols = _described(con.execute(f"DESCRIBE {table}").fetchall())
    shape = f"SELECT * EXCLUDE ({new_id}) FROM {new}" if new_id != "rowid" else new
    if cols != _described(con.execute(f"DESCRIBE {shape}").fetchall()):
        return None
    h = _row_hash_sql(cols, exact=exact)
    return (
        f"WITH o AS MATERIALIZED (SELECT rowid AS _id, {h} AS _h FROM {table} {where}),"
        f" n AS MATERIALIZED (SELECT {new_id} AS _id, {h} AS _h FROM {new})"
    )


def _diff(
    con: duckdb.DuckDBPyConnection,
    table: str,
    new: str,
    new_id: str,
    *,
    where: str = "",
    params: Mapping[str, object] | None = None,
    rows: object = None,
    keys: Sequence[str] = (),
    exact: bool = False,
) -> tuple[int, pl.Series, pl.DataFrame] | None:
    """Delete the rows of ``table`` (those ``where`` selects, with ``params``) that the relation
    ``new`` lacks (rows compared as :func:`diff_replace` says) and return how many, with the
    ``new_id`` values of ``new``'s rows that ``table`` lacks (ascending; the caller inserts
    them) and the distinct ``keys`` columns of the deleted rows (no columns without ``keys``).
    None, with nothing deleted, when the column names or DuckDB types differ (``new_id`` is not
    a compared column). ``rows``: the Arrow table scanned as :data:`_NEW_ROWS`; ``exact``:
    floats compared bit for bit (:func:`diff_replace`)."""
    _new_rows = rows  # scanned by name by the statement below when new is _NEW_ROWS
    hashes = _row_hashes_sql(con, table, new, new_id, where, rows=rows, exact=exact)
    if hashes is None:
        return None
    found = con.sql(
        _MULTISET_DIFF.format(hashes=hashes), params=dict(params) if params else None
    ).pl()
    del _new_rows
    gone = found.filter(~pl.col("_new")).select(pl.col("_id").cast(pl.Int64).alias("_rowid"))
    gone_keys = pl.DataFrame()
    if gone.height:
        _g = gone
        if keys:
            cols = ", ".join(_checked(k) for k in keys)
            gone_keys = as_utc(
                con.sql(
                    f"SELECT DISTINCT {cols} FROM {table} WHERE rowid IN (SELECT _rowid FROM _g)"
                ).pl()
            )
        con.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT _rowid FROM _g)")
    return gone.height, found.filter(pl.col("_new"))["_id"].cast(pl.Int64).sort(), gone_keys


def statement_params(sql: str) -> set[str]:
    """The ``$name`` parameters a statement names (``--`` comments ignored)."""
    return set(_PARAM.findall(_COMMENT.sub("", sql)))


def run_named(
    con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, object] | None = None
) -> pl.DataFrame:
    """Run ``sql/<name>.sql`` with the parameters it names bound from ``params`` (others are
    left out), and return the result as polars, zoned timestamps in ``UTC``.

    Args:
        con: a connection (read-only is enough for queries).
        name: the statement file below ``sql/`` without suffix, e.g. ``"dashboard/headline"``.
        params: values of the statement's ``$`` parameters; extra keys are ignored.

    Raises:
        FileNotFoundError: no such statement file.
        KeyError: the statement names a parameter that ``params`` lacks.
    """
    sql = load_sql(name)
    wanted = statement_params(sql)
    given = params or {}
    missing = wanted - given.keys()
    if missing:
        raise KeyError(f"sql/{name}.sql needs parameters {sorted(missing)}")
    return as_utc(con.sql(sql, params={k: given[k] for k in wanted}).pl())
