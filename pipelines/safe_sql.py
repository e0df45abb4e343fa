"""Read-only, locked-down DuckDB connections for ad hoc SQL (``goodput sql`` and the SQL page)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl

__all__ = ["DEFAULT_ROW_LIMIT", "SqlRefused", "flat_for_csv", "open_readonly", "run_query"]

DEFAULT_ROW_LIMIT = 100_000

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


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with external access and extension loading off, settings locked.

    Raises:
        FileNotFoundError: no such database file.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such database (run `goodput materialize` first)")
    con = duckdb.connect(str(p), read_only=True, config=dict(_LOCKED))
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET lock_configuration = true")
    return con


def run_query(path: str | Path, query: str, *, row_limit: int = DEFAULT_ROW_LIMIT) -> pl.DataFrame:
    """Run one query on a locked-down read-only connection.

    Args:
        path: the DuckDB file.
        query: SQL text.
        row_limit: at most this many rows are returned.

    Returns:
        The result as a polars frame (at most ``row_limit`` rows).

    Raises:
        SqlRefused: the query writes, reads files, attaches or changes settings (the message says
            which), or is not valid SQL.
        FileNotFoundError: no such database file.
    """
    con = open_readonly(path)
    try:
        try:
            rel = con.sql(query)
        except duckdb.PermissionException as exc:
            raise SqlRefused(
                f"refused: this connection cannot read files or change settings ({exc})"
            ) from exc
        except duckdb.InvalidInputException as exc:
            what = "settings are locked" if "locked" in str(exc) else "the database is read-only"
            raise SqlRefused(f"refused: {what} ({exc})") from exc
        except duckdb.Error as exc:
            raise SqlRefused(f"query failed: {exc}") from exc
        if rel is None:
            return pl.DataFrame()
        out: pl.DataFrame = rel.limit(row_limit).pl()
        return out
    finally:
        con.close()


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
