"""Read-only, locked-down DuckDB connections for ad hoc SQL (``goodput sql`` and the SQL page).

What the ad hoc surface publishes is the documented views (``sql/README.md``) and nothing of the
machine: one ``SELECT`` may read the ``main`` views and tables of the file, its own CTEs and the
row generators (``range``, ``unnest`` …); it may not name another schema or catalog (``raw``,
``core``, ``information_schema``, ``duckdb_*``/``pragma_*`` views), call a table function that
reads files or the catalog (``read_csv``, ``duckdb_settings()``, ``query()``), a scalar catalog
or setting function (``current_setting``, ``getvariable``, ``duckdb_*``, ``pragma_*``, the
``pg_catalog`` macros such as ``pg_get_viewdef``, ``get_block_size``), or run any
other statement (``PRAGMA``, ``CALL``, ``SHOW``, ``EXPLAIN``, ``SET``, writes). The check walks
DuckDB's own parse tree (``json_serialize_sql``), so quoting and case do not get round it; the
connection's locks (read-only, no external access, settings locked) stay underneath it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import multiprocessing.context
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.warehouse._connection import default_threads, size_bytes, threads_within

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_ROW_LIMIT",
    "DEFAULT_TIME_LIMIT_S",
    "QueryResult",
    "SqlRefused",
    "flat_for_csv",
    "open_readonly",
    "run_query",
    "run_query_counted",
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


#: Table functions a query may call: row generators, nothing that reads a file or the catalog.
_TABLE_FUNCTIONS = frozenset(
    {"range", "generate_series", "unnest", "repeat", "json_each", "json_tree"}
)
#: Scalar functions that show settings or the catalog (besides every ``duckdb_*``/``pragma_*``).
_SCALAR_REFUSED = frozenset(
    {"current_setting", "getvariable", "getenv", "which_secret",
     # DuckDB's built-in macros that expand, after this check, into the catalog
     # (get_block_size: pragma_database_size(); the pg_catalog ones, refused by schema below)
     "get_block_size", "current_query", "current_catalog", "current_database", "current_schema",
     "current_schemas"}
)  # fmt: skip
_CATALOG_PREFIXES = ("duckdb_", "pragma_")
#: Statement types refused with the lock that would refuse them anyway, so the message says why.
_READ_ONLY_TYPES = frozenset(
    {"INSERT", "UPDATE", "DELETE", "CREATE", "CREATE_FUNC", "DROP", "ALTER", "MERGE_INTO",
     "VACUUM", "ANALYZE"}
)  # fmt: skip
_FILE_TYPES = frozenset(
    {"COPY", "COPY_DATABASE", "ATTACH", "DETACH", "LOAD", "EXPORT", "EXTENSION"}
)
_SETTING_TYPES = frozenset({"SET", "VARIABLE_SET"})


class SqlRefused(ValueError):
    """A query was refused: it writes, reads a file, attaches a database, changes settings, or
    names something other than the documented views (the catalog, settings, raw tables)."""


@dataclass(frozen=True)
class QueryResult:
    """The rows a query returned, at most the row limit, and how many it has in all.

    Attributes:
        rows: the first ``row_limit`` rows.
        total: every row the query has, counted within the same time limit; ``None`` when the
            rows were capped and counting them all was itself stopped by a limit.
    """

    rows: pl.DataFrame
    total: int | None

    @property
    def capped(self) -> bool:
        """Whether the query has more rows than are shown."""
        return self.total is None or self.total > self.rows.height

    def shown(self) -> str:
        """``showing 10,000 of 123,456 rows`` (``of more than 10,000`` when uncounted)."""
        of = f"{self.total:,}" if self.total is not None else f"more than {self.rows.height:,}"
        return f"showing {self.rows.height:,} of {of} rows"


def open_readonly(
    path: str | Path, *, memory_limit: str | None = None
) -> duckdb.DuckDBPyConnection:
    """A read-only connection with external access and extension loading off, settings locked.

    Args:
        path: the DuckDB file.
        memory_limit: DuckDB ``memory_limit`` (``2GB``); with it, no temporary directory, so a
            query neither spills to disk nor reaches a spill folder beside the file, and no more
            threads than the limit gives DuckDB's minimum memory each
            (:func:`pipelines.warehouse._connection.threads_within`; a size spelt otherwise
            than it reads, such as ``1G`` or ``50%``, leaves DuckDB's threads as they are).

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
        # a size DuckDB reads but threads_within does not ("1G", "50%") keeps DuckDB's threads
        with contextlib.suppress(ValueError):
            config["threads"] = threads_within(memory_limit, default_threads())
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
    # DuckDB's progress bar writes to the process's standard output: the CSV or JSON of
    # `goodput sql`, and a query's own process shares it
    con.execute("SET enable_progress_bar = false")
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
    """The first ``row_limit`` rows of :func:`run_query_counted` (same arguments and errors)."""
    return run_query_counted(
        path, query, row_limit=row_limit, time_limit_s=time_limit_s, memory_limit=memory_limit
    ).rows


def run_query_counted(
    path: str | Path,
    query: str,
    *,
    row_limit: int = DEFAULT_ROW_LIMIT,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
) -> QueryResult:
    """Run one query on a locked-down read-only connection, bounded in time and memory.

    Args:
        path: the DuckDB file.
        query: SQL text: one ``SELECT`` over the documented views (module docstring).
        row_limit: at most this many rows are returned; when the query has more, they are
            counted within the same time limit.
        time_limit_s: the statement (and the count) is interrupted after this many seconds.
        memory_limit: DuckDB memory limit (no spilling to disk).

    Returns:
        At most ``row_limit`` rows and the query's row count.

    Raises:
        SqlRefused: the query writes, reads files, attaches, changes settings, or names the
            catalog, a setting or a table outside the documented views (the message says which),
            is not valid SQL or fails, or was stopped by a limit ("query stopped: time limit of
            30 s", "query stopped: memory limit of 2GB").
        FileNotFoundError: no such database file.
    """
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such database (run `goodput materialize` first)")
    return _in_child(path, query, row_limit, time_limit_s, memory_limit)


#: How often the parent reads the child's resident memory (seconds).
_RSS_POLL_S = 0.02
#: Resident memory a query's process may hold beyond twice DuckDB's ``memory_limit`` (the
#: interpreter, DuckDB and polars themselves) before it is stopped.
_PROCESS_ALLOWANCE = 768 * 10**6
#: Seconds past the time limit after which the parent kills a child its own watchdog did not
#: stop (an interrupt that came while no statement ran is lost).
_KILL_GRACE_S = 10.0


def _rss_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid`` (``/proc``; None where there is none)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def _forkserver() -> multiprocessing.context.ForkServerContext:
    """The context the queries' processes are forked from: a server process started once per
    process that runs queries, with this module (DuckDB, polars) imported before any thread
    runs, so each query's process starts in milliseconds and holds no thread of its caller's."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


_START_LOCK = threading.Lock()


def _start_without_main(proc: multiprocessing.process.BaseProcess) -> None:
    """Start ``proc`` without its process importing the caller's ``__main__`` again.

    multiprocessing hands a new process the caller's main module to run again (as
    ``__mp_main__``) where it has a file or a module spec; a Streamlit page run as the main
    module (its AppTest, an embedding host) would run again in the query's process and start a
    process of its own there, which multiprocessing refuses. The query's process needs nothing
    of the main module, so it is hidden while the process starts."""
    main = sys.modules.get("__main__")
    with _START_LOCK:
        saved = {k: main.__dict__.pop(k) for k in ("__file__",) if main and k in main.__dict__}
        spec = getattr(main, "__spec__", None)
        try:
            if main is not None:
                main.__spec__ = None
            proc.start()
        finally:
            if main is not None:
                main.__spec__ = spec
                main.__dict__.update(saved)


def _child(request: dict[str, Any], answer: Connection, rows_path: str) -> None:
    """A query's process: :func:`_run_here`, its rows written to ``rows_path`` (Arrow IPC)
    and ``("ok", has_rows, total)``, ``("refused", message)`` or ``("failed", message)`` sent
    on ``answer``."""
    try:
        result = _run_here(request)
    except (SqlRefused, FileNotFoundError) as exc:
        answer.send(("refused", str(exc)))
    except Exception as exc:
        answer.send(("failed", f"query failed: {type(exc).__name__}: {exc}"))
    else:
        if result.rows.width:
            result.rows.write_ipc(rows_path)
        answer.send(("ok", bool(result.rows.width), result.total))
    finally:
        answer.close()


def _in_child(
    path: str | Path, query: str, row_limit: int, time_limit_s: float, memory_limit: str
) -> QueryResult:
    """:func:`_run_here` in a process of its own (forked from :func:`_forkserver`) whose
    resident memory the caller watches.

    DuckDB's ``memory_limit`` bounds its buffer manager, not every allocation: a scalar
    ``range(600000000)`` built a 4.8 GB list under a 2 GB limit, and a larger one would take
    the whole process down (the dashboard's, for the SQL page). The query's process is killed
    when its resident memory passes twice the limit plus :data:`_PROCESS_ALLOWANCE` (the
    result's rows are held in it too), or when it runs :data:`_KILL_GRACE_S` past the time
    limit; either way the query is refused naming the limit. The rows come back through a
    temporary Arrow IPC file, not a pipe of pickled bytes (a copy fewer).
    """
    try:
        cap: int | None = 2 * size_bytes(memory_limit) + _PROCESS_ALLOWANCE
    except ValueError:
        cap = None  # a size DuckDB reads that size_bytes does not ("50%"): DuckDB's bound only
    ctx = _forkserver()
    fd, rows_path = tempfile.mkstemp(prefix="goodput-sql-", suffix=".arrow")
    os.close(fd)
    request = {"path": str(path), "query": query, "row_limit": row_limit,
               "time_limit_s": time_limit_s, "memory_limit": memory_limit}  # fmt: skip
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(request, send, rows_path), daemon=True)
    try:
        _start_without_main(proc)
        send.close()
        deadline = time.monotonic() + time_limit_s + _KILL_GRACE_S
        message: tuple[Any, ...] | None = None
        while message is None:
            if receive.poll(_RSS_POLL_S):
                try:
                    message = receive.recv()
                except EOFError:  # the process ended without an answer
                    break
                continue
            rss = _rss_bytes(proc.pid) if proc.pid is not None else None
            if cap is not None and rss is not None and rss > cap:
                raise SqlRefused(f"query stopped: memory limit of {memory_limit}")
            if time.monotonic() > deadline:
                raise SqlRefused(f"query stopped: time limit of {time_limit_s:g} s")
        proc.join()
        if message is None:
            raise SqlRefused(f"query failed: its process ended with exit code {proc.exitcode}")
        kind, *payload = message
        if kind != "ok":
            raise SqlRefused(payload[0])
        has_rows, total = payload
        rows = pl.read_ipc(rows_path) if has_rows else pl.DataFrame()
        return QueryResult(rows, total)
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
        receive.close()
        Path(rows_path).unlink(missing_ok=True)


def _run_here(request: dict[str, Any]) -> QueryResult:
    """:func:`run_query_counted` of ``request`` (its arguments by name) in this process,
    bounded by DuckDB's own memory limit only: what a query's own process runs
    (:func:`_child`); the errors of :func:`run_query_counted`."""
    path, query, row_limit = request["path"], request["query"], request["row_limit"]
    time_limit_s, memory_limit = request["time_limit_s"], request["memory_limit"]
    con = open_readonly(path, memory_limit=memory_limit)
    watchdog = threading.Timer(time_limit_s, con.interrupt)
    watchdog.daemon = True
    watchdog.start()
    try:
        _check(con, query)
        return _run(con, query, row_limit)
    except duckdb.InterruptException as exc:
        raise SqlRefused(f"query stopped: time limit of {time_limit_s:g} s") from exc
    except duckdb.OutOfMemoryException as exc:
        raise SqlRefused(f"query stopped: memory limit of {memory_limit}") from exc
    finally:
        watchdog.cancel()
        con.close()


def _check(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Refuse ``query`` unless it is one ``SELECT`` that names only the documented views.

    Raises:
        SqlRefused: what is refused and why (a parse error is left to DuckDB's own message).
    """
    try:
        statements = con.extract_statements(query)
    except duckdb.Error:
        return  # not SQL: running it gives DuckDB's parser error
    if len(statements) > 1:
        raise SqlRefused(f"refused: one statement at a time ({len(statements)} given)")
    if not statements:
        return
    kind = statements[0].type.name
    if kind in _READ_ONLY_TYPES:
        raise SqlRefused(f"refused: the database is read-only ({kind} does not run here)")
    if kind in _FILE_TYPES:
        raise SqlRefused(
            f"refused: this connection cannot read files, write files, attach databases or "
            f"load extensions ({kind})"
        )
    if kind in _SETTING_TYPES:
        raise SqlRefused(f"refused: settings are locked ({kind})")
    if kind != "SELECT":
        raise SqlRefused(
            f"refused: only a SELECT over the documented views runs here, not {kind} "
            "(the catalog and settings are not published; the views are in sql/README.md)"
        )
    row = con.execute("SELECT json_serialize_sql($q::VARCHAR)", {"q": query}).fetchone()
    tree = json.loads(row[0]) if row else {"error": True}
    if tree.get("error"):  # parsed, yet not serializable: what it names cannot be checked
        raise SqlRefused(
            f"refused: this SELECT cannot be checked ({tree.get('error_message', 'unknown')})"
        )
    db = con.execute("SELECT current_database()").fetchone()
    _check_tree(tree["statements"], *_names(con, db[0] if db else ""), _pg_catalog_functions(con))


def _names(con: duckdb.DuckDBPyConnection, db: str) -> tuple[str, frozenset[str], frozenset[str]]:
    """The database's name, its ``main`` tables and views, and the other names a query reaches
    unqualified (the ``main`` and ``pg_catalog`` schemas of the ``system`` and ``temp``
    catalogs: ``duckdb_tables``, ``pg_class``, ``pragma_database_list`` …), which a CTE may not
    take: all lower case."""
    rows = con.execute(
        "SELECT database_name, schema_name, lower(view_name) FROM duckdb_views() "
        "UNION ALL SELECT database_name, schema_name, lower(table_name) FROM duckdb_tables()"
    ).fetchall()
    main = frozenset(n for d, s, n in rows if d == db and s == "main")
    catalog = frozenset(
        n for d, s, n in rows if d in ("system", "temp") and s in ("main", "pg_catalog")
    )
    return db.lower(), main, catalog - main


def _pg_catalog_functions(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The functions of DuckDB's ``pg_catalog`` schema (``pg_get_viewdef``, ``format_type``,
    ``col_description``, ``has_table_privilege`` …): built-in macros over the catalog, expanded
    after the check, so refused by name. Read from the running DuckDB, so a version that adds
    one refuses it too."""
    rows = con.execute(
        "SELECT DISTINCT lower(function_name) FROM duckdb_functions()"
        " WHERE schema_name = 'pg_catalog'"
    ).fetchall()
    return frozenset(name for (name,) in rows)


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every object in a ``json_serialize_sql`` tree, depth first."""
    if isinstance(tree, dict):
        yield tree
        for value in tree.values():
            yield from _nodes(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _nodes(value)


def _check_tree(
    tree: Any,
    db: str,
    main: frozenset[str],
    other: frozenset[str],
    pg_catalog: frozenset[str] = frozenset(),
) -> None:
    """Refuse a parse tree that names a table outside ``main`` (or the query's CTEs), a table
    function other than a row generator, a catalog or setting function (``pg_catalog``: the
    functions of that schema), or a ``SHOW``."""
    nodes = list(_nodes(tree))
    ctes = {
        str(entry["key"]).lower()
        for node in nodes
        if isinstance(node.get("cte_map"), dict)
        for entry in node["cte_map"].get("map", [])
    }
    for name in sorted(ctes & other):
        raise SqlRefused(f"refused: a CTE may not be named {name!r}, a catalog name")
    views = "the documented views (sql/README.md); the catalog and the raw, core and analytics "
    for node in nodes:
        kind = node.get("type")
        if kind == "BASE_TABLE":
            name = str(node.get("table_name", "")).lower()
            schema = str(node.get("schema_name", "")).lower()
            catalog = str(node.get("catalog_name", "")).lower()
            qualified = ".".join(p for p in (catalog, schema, name) if p)
            in_main = catalog in ("", db) and schema in ("", "main")
            if not in_main or (name not in main and not (name in ctes and not schema)):
                raise SqlRefused(
                    f"refused: {qualified} is not one of {views}tables are not published here"
                )
        elif kind == "SHOW_REF" and node.get("query") is None:
            raise SqlRefused("refused: SHOW lists the catalog; the views are in sql/README.md")
        elif kind == "TABLE_FUNCTION":
            fn = node.get("function") or {}
            name = str(fn.get("function_name", "")).lower()
            if name not in _TABLE_FUNCTIONS:
                raise SqlRefused(
                    f"refused: {name}() is not available here: this connection cannot read "
                    "files, and publishes no catalog or settings"
                )
        elif node.get("class") == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            schema = str(node.get("schema", "")).lower()
            if (
                name in _SCALAR_REFUSED
                or name in pg_catalog
                or schema == "pg_catalog"
                or name.startswith(_CATALOG_PREFIXES)
            ):
                raise SqlRefused(
                    f"refused: {name}() is not available here: the SQL surface publishes no "
                    "catalog, settings or paths"
                )


def _run(con: duckdb.DuckDBPyConnection, query: str, row_limit: int) -> QueryResult:
    """The query's first ``row_limit`` rows and its row count; DuckDB errors become
    :class:`SqlRefused`, except a limit's interrupt or out-of-memory error while the rows are
    read (the caller names the limit). A limit that stops the count leaves ``total`` ``None``."""
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
        return QueryResult(pl.DataFrame(), 0)
    try:
        out: pl.DataFrame = rel.limit(row_limit + 1).pl()
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise
    except duckdb.Error as exc:  # a runtime error: SELECT 'abc'::INTEGER
        raise SqlRefused(f"query failed: {exc}") from exc
    if out.height <= row_limit:
        return QueryResult(out, out.height)
    try:
        counted: int | None = rel.count("*").fetchall()[0][0]
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        counted = None
    return QueryResult(out.head(row_limit), counted)


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
