"""Read-only, locked-down DuckDB connections for ad hoc SQL (``goodput sql`` and the SQL page)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import duckdb
import polars as pl

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_ROW_LIMIT",
    "DEFAULT_TIME_LIMIT_S",
    "SqlRefused",
    "flat_for_csv",
    "open_readonly",
    "run_query",
]

DEFAULT_ROW_LIMIT = 100_000
#: A statement runs at most this long (``[sql] time_limit_s``); DuckDB has no statement timeout
#: of its own, so a watchdog thread calls the connection's ``interrupt()``.
DEFAULT_TIME_LIMIT_S = 30.0
#: DuckDB's memory limit for ad hoc SQL (``[sql] memory_limit``); nothing spills to disk.
DEFAULT_MEMORY_LIMIT = "2GB"

# External access off blocks reading and writing files, ATTACH of other files, COPY, and
# installing/loading extensions; after the session zone is set to UTC, the configuration is
# locked so a query cannot turn any of it back on.
_LOCKED = {
    "enable_external_access": "false",
    "autoinstall_known_extensions": "false",
    "autoload_known_extensions": "false",
}


class SqlRefused(ValueError):
    """A query was refused: it writes, reads a file, attaches a database or changes settings."""


def open_readonly(
    path: str | Path, *, memory_limit: str | None = None
) -> duckdb.DuckDBPyConnection:
    """A read-only connection with external access and extension loading off, settings locked.

    Args:
        path: the DuckDB file.
        memory_limit: DuckDB ``memory_limit`` (``2GB``); with it, no temporary directory, so a
            query neither spills to disk nor reaches a spill folder beside the file.

    Raises:
        FileNotFoundError: no such database file.
        SqlRefused: a writer holds the file (the message names it).
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such database (run `goodput materialize` first)")
    config: dict[str, str | bool | int | float | list[str]] = dict(_LOCKED)
    if memory_limit is not None:
        config.update(memory_limit=memory_limit, temp_directory="")
    try:
        con = duckdb.connect(str(p), read_only=True, config=config)
    except duckdb.IOException as exc:
        if "Conflicting lock" not in str(exc):
            raise
        holder = str(exc).split("Conflicting lock is held in ", 1)[-1].split(". See", 1)[0]
        raise SqlRefused(
            f"{p} is open for writing by {holder}: query the serving copy (the default), or "
            "wait for the writer to finish"
        ) from exc
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET lock_configuration = true")
    return con


def run_query(
    path: str | Path,
    query: str,
    *,
    row_limit: int = DEFAULT_ROW_LIMIT,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
) -> pl.DataFrame:
    """Run one query on a locked-down read-only connection, bounded in time and memory.

    Args:
        path: the DuckDB file.
        query: SQL text.
        row_limit: at most this many rows are returned.
        time_limit_s: the statement is interrupted after this many seconds.
        memory_limit: DuckDB memory limit (no spilling to disk).

    Returns:
        The result as a polars frame (at most ``row_limit`` rows).

    Raises:
        SqlRefused: the query writes, reads files, attaches or changes settings (the message says
            which), is not valid SQL or fails, or was stopped by a limit ("query stopped: time
            limit of 30 s", "query stopped: memory limit of 2GB").
        FileNotFoundError: no such database file.
    """
    con = open_readonly(path, memory_limit=memory_limit)
    watchdog = threading.Timer(time_limit_s, con.interrupt)
    watchdog.daemon = True
    watchdog.start()
    try:
        return _run(con, query, row_limit)
    except duckdb.InterruptException as exc:
        raise SqlRefused(f"query stopped: time limit of {time_limit_s:g} s") from exc
    except duckdb.OutOfMemoryException as exc:
        raise SqlRefused(f"query stopped: memory limit of {memory_limit}") from exc
    finally:
        watchdog.cancel()
        con.close()


def _run(con: duckdb.DuckDBPyConnection, query: str, row_limit: int) -> pl.DataFrame:
    """The query's first ``row_limit`` rows; DuckDB errors become :class:`SqlRefused`, except a
    limit's interrupt or out-of-memory error (the caller names the limit)."""
    try:
        rel = con.sql(query)
    except duckdb.PermissionException as exc:
        raise SqlRefused(
            f"refused: this connection cannot read files or change settings ({exc})"
        ) from exc
    except duckdb.InvalidInputException as exc:
        what = "settings are locked" if "locked" in str(exc) else "the database is read-only"
        raise SqlRefused(f"refused: {what} ({exc})") from exc
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise
    except duckdb.Error as exc:
        raise SqlRefused(f"query failed: {exc}") from exc
    if rel is None:
        return pl.DataFrame()
    try:
        out: pl.DataFrame = rel.limit(row_limit).pl()
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise
    except duckdb.Error as exc:  # a runtime error: SELECT 'abc'::INTEGER
        raise SqlRefused(f"query failed: {exc}") from exc
    return out


def flat_for_csv(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with its nested columns as text, since CSV has no nested values.

    A list of scalars (e.g. ``slurm_jobs.node_list``, ``VARCHAR[]``) is joined with ``,`` (the
    separator Slurm itself uses in node lists); structs, fixed-size arrays and lists of nested
    values become JSON text (``json.dumps``, non-JSON values such as times via ``str``). A NULL
    stays NULL. Other columns are unchanged.
    """
    out: list[pl.Expr | pl.Series] = []
    for name, dtype in df.schema.items():
        if isinstance(dtype, pl.List) and not dtype.inner.is_nested():
            out.append(pl.col(name).cast(pl.List(pl.String)).list.join(","))
        elif dtype.is_nested():
            texts = [None if v is None else json.dumps(v, default=str) for v in df[name].to_list()]
            out.append(pl.Series(name, texts, dtype=pl.String))
    return df.with_columns(out) if out else df
