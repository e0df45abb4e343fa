"""Connections to the DuckDB files: one writer process at a time, a bounded wait for its lock."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

#: The catalog name under which :func:`attach_read_only` attaches a file.
ATTACHED_AS = "served"


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


def attach_read_only(path: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the file ``path`` attached read-only, for one process's readers
    to share: each query takes its own :func:`reader_cursor` (DuckDB connections are not shared
    between threads; cursors of one connection may run at once).

    Why not ``duckdb.connect(path, read_only=True)`` held open: DuckDB's Python client hands every
    connect of one path in a process the same cached database instance, so a held connection
    would (a) keep answering for the old file after a publish renames a new copy over the path,
    and (b) make any connect of that path with other settings fail ("different configuration
    than existing connections"): the SQL page's locked-down connections, say. An in-memory
    database is never cached, and it opens the attached file itself.

    Locked down like :func:`pipelines.warehouse.safe_sql.open_readonly`: attached ``READ_ONLY``,
    external access (files, ``ATTACH``, extensions) off once attached, session zone UTC for
    every cursor, configuration locked (DuckDB still lets a query read the attached file itself
    and its spill folder as files, and attach it again read-only: nothing beyond the copy). A
    spill folder beside the file (``<path>.tmp``), as a read-only connect of the file would use.

    Raises:
        FileNotFoundError: no such file.
        duckdb.IOException: the file cannot be opened (a writer holds it, say).
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such database")
    con = duckdb.connect(
        ":memory:",
        config={
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "temp_directory": f"{p}.tmp",
        },
    )
    try:
        quoted = str(p).replace("'", "''")
        con.execute(f"ATTACH '{quoted}' AS {ATTACHED_AS} (READ_ONLY)")
        con.execute("SET enable_external_access = false")
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def reader_cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A new cursor of an :func:`attach_read_only` connection, reading the attached file by
    default (``USE``; each cursor is a session of its own). Close it when done."""
    cur = con.cursor()
    try:
        cur.execute(f"USE {ATTACHED_AS}")
    except BaseException:
        cur.close()
        raise
    return cur


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (signal 0 checks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_MEMORY_RE = re.compile(r"^(?P<n>\d+(\.\d+)?)\s*(?P<unit>B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$")
#: Bytes per unit as DuckDB reads a size (``KB`` … ``TB`` decimal, ``KiB`` … ``TiB`` binary:
#: ``512MB`` is reported back as 488.2 MiB).
_UNIT_BYTES = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
               "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}  # fmt: skip
#: The memory DuckDB needs per thread at least ("a minimum of 125 MB of memory per thread",
#: DuckDB's performance guide, "Environment"). Under less, a sort's merge pins more blocks than
#: the limit holds: a year of 10,000 GPUs' stored resolution, when it was read sorted by DuckDB
#: under 512 MB, failed with "failed to pin block" on 16 threads and passed on 8 (BENCHMARKS.md).
DUCKDB_MEMORY_PER_THREAD = 125 * 10**6


def size_bytes(limit: str) -> int:
    """The bytes of a DuckDB size (``"512MB"`` → 512,000,000; ``"1GiB"`` → 1,073,741,824).

    Raises:
        ValueError: ``limit`` is not a size (digits and a unit: B, KB, MB, GB, TB, KiB … TiB).
    """
    m = _MEMORY_RE.match(limit)
    if m is None:
        raise ValueError(f"memory limit must be a size such as '1GB', got {limit!r}")
    return int(float(m["n"]) * _UNIT_BYTES[m["unit"]])


@functools.cache
def default_threads() -> int:
    """The threads DuckDB gives a new connection on this machine (its cores, as DuckDB counts
    them)."""
    with duckdb.connect() as con:
        return int(_setting(con, "threads"))


def threads_within(limit: str, threads: int) -> int:
    """How many of ``threads`` DuckDB may use under the memory ``limit``: at most one per
    :data:`DUCKDB_MEMORY_PER_THREAD`, and at least one (``"512MB"`` allows 4 of 16 threads).

    Raises:
        ValueError: ``limit`` is not a size, or ``threads`` is below 1.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return max(1, min(threads, size_bytes(limit) // DUCKDB_MEMORY_PER_THREAD))


@contextmanager
def memory_limit(con: duckdb.DuckDBPyConnection, limit: str) -> Iterator[None]:
    """DuckDB's ``memory_limit`` set to ``limit`` (e.g. ``"1GB"``) for the block, the
    connection's own limit restored after. Under it DuckDB evicts cached blocks of the file and
    spills its own operators to the temporary directory instead of growing: a build that reads
    and writes the whole warehouse would otherwise keep what it touched in DuckDB's buffer cache
    (2.3 GB of a year of 10,000 GPUs; BENCHMARKS.md).

    DuckDB's threads are cut for the block to those the limit gives DuckDB's minimum memory
    each (:func:`threads_within`: 4 under 512 MB), and restored after: under less per thread, a
    sort of a few million wide rows fails to pin its blocks where it would have spilled.

    The connection's default limit is restored exactly, and so is an enclosing block's; a limit
    its caller had set otherwise comes back as DuckDB reports it (rounded down to 0.1 of its
    unit: ``3GB`` is reported, and so restored, as 2.7 GiB).

    Raises:
        ValueError: ``limit`` is not a size (digits and a unit: B, KB, MB, GB, TB, KiB … TiB).
    """
    before = _memory_limit(con)
    threads = int(_setting(con, "threads"))
    # DuckDB's own minimum per thread: a limit below it is met with fewer threads, not with
    # out-of-memory errors on machines with more cores (never below the connection's external
    # threads, which DuckDB refuses). A limit that is not a size is refused here, before any
    # setting changes.
    fewer = max(threads_within(limit, threads), int(_setting(con, "external_threads")))
    in_force = _LIMITS_IN_FORCE.setdefault(_instance(con), [])
    # an enclosing block's limit comes back as it was set, not as DuckDB reads it back
    if in_force:
        before = in_force[-1][1]
    con.execute(f"SET memory_limit = '{limit}'")  # on failure nothing is changed yet
    entry = (object(), limit)
    in_force.append(entry)
    try:
        con.execute(f"SET threads = {fewer}")
        yield
    except BaseException:
        # The block's own error comes out. In a transaction it aborted, DuckDB refuses the
        # settings too ("Current transaction is aborted"), which must not hide it: they are
        # then left to the caller, whose rollback and own block (the build's) restore them.
        with contextlib.suppress(duckdb.Error):
            _restore(con, before, threads)
        raise
    finally:
        in_force.remove(entry)  # this block's own entry, whatever order blocks end in
    _restore(con, before, threads)


#: The limit :func:`release_memory` sets for an instant: DuckDB evicts its cached blocks until
#: it holds less than this.
RELEASE_TO = "16MB"
#: What DuckDB must hold for :func:`release_memory` to act. Evicting less gives little back and
#: costs the blocks read again: an incremental build of the year's new day took 9.97–11.15 s
#: with every release, 10.1–10.2 s with this floor, against 9.8–10.0 s without releases.
RELEASE_ABOVE = "64MB"
#: The limits :func:`memory_limit` blocks have set, innermost last, by database instance
#: (:func:`_instance`): DuckDB reports a limit rounded down (``512MB`` as 488.2 MiB), so
#: :func:`release_memory` restores the one in force from here, never as read back.
_LIMITS_IN_FORCE: dict[str | None, list[tuple[object, str]]] = {}


def _instance(con: duckdb.DuckDBPyConnection) -> str | None:
    """The DuckDB instance ``con`` belongs to, named by the file it was opened on (a new
    cursor's current database, whatever ``con`` has ``USE``d since; None: an in-memory
    instance). The memory limit is the instance's; DuckDB's Python client opens one instance
    per file in a process."""
    cur = con.cursor()
    try:
        return _opened_file(cur)
    finally:
        cur.close()


def _opened_file(cur: duckdb.DuckDBPyConnection) -> str | None:
    """The file of a fresh cursor's current database (:func:`_instance`)."""
    rows = cur.sql(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return str(rows[0][0]) if rows and rows[0][0] is not None else None


def release_memory(con: duckdb.DuckDBPyConnection) -> bool:
    """Give back the memory DuckDB holds for blocks it is done with, inside a
    :func:`memory_limit` block: the limit is set to :data:`RELEASE_TO` for an instant, then to
    the block's again.

    DuckDB keeps the blocks it has written or read cached up to its memory limit, and a lower
    limit evicts the unpinned ones (a block the open transaction wrote is first written out, to
    the file or the spill folder). In the build of a year of 10,000 GPUs, DuckDB held 300–450 MB
    of such blocks while polars computed, and the process's resident memory fell by about
    0.5 GB when they were evicted after the core layer (BENCHMARKS.md, "The build gives DuckDB's
    cache back").

    The settings are changed on a cursor of ``con``: a connection of its own to the same
    database, outside ``con``'s transaction. The memory limit is the database's, so the
    cursor's change is ``con``'s too, but a refusal does not abort ``con``'s transaction, as a
    failed statement inside it would. DuckDB refuses when running statements pin more than the
    instant's limit, having evicted what it could, and then keeps the limit it had. Nothing is
    done outside a :func:`memory_limit` block (a limit set otherwise is read back rounded down,
    and could not be restored exactly), nor on an in-memory database (its tables would be
    evicted to a spill folder in the working directory).

    Returns:
        Whether the cache was given back (False: outside a block, on an in-memory database, or
        with DuckDB holding less than :data:`RELEASE_ABOVE`, nothing was done; or DuckDB
        refused the instant's limit, after evicting what it could).

    Raises:
        duckdb.Error: the block's limit could not be set again.
    """
    cur = con.cursor()  # one cursor names the instance and changes its limit
    try:
        key = _opened_file(cur)
        in_force = _LIMITS_IN_FORCE.get(key)
        if key is None or not in_force:
            return False
        limit = in_force[-1][1]
        held = cur.sql("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0]
        if (held or 0) < size_bytes(RELEASE_ABOVE):
            return False
        try:
            cur.execute(f"SET memory_limit = '{RELEASE_TO}'")
        except duckdb.Error:
            # refused (pinned blocks), or failed while evicting: the block's limit, as it was
            cur.execute(f"SET memory_limit = '{limit}'")
            return False
        cur.execute(f"SET memory_limit = '{limit}'")
        return True
    finally:
        cur.close()


def _restore(con: duckdb.DuckDBPyConnection, limit: str, threads: int) -> None:
    """The memory limit and threads :func:`memory_limit` found, back: ``limit`` is an enclosing
    block's own (set exactly), or the limit as DuckDB reported it, rounded down to 0.1 of its
    unit (the default comes back exactly, by RESET; a limit the caller had set, as printed)."""
    con.execute("RESET memory_limit")
    if _memory_limit(con) != limit:
        con.execute(f"SET memory_limit = '{limit}'")
    con.execute(f"SET threads = {threads}")


def _memory_limit(con: duckdb.DuckDBPyConnection) -> str:
    return _setting(con, "memory_limit")


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    return str(con.sql("SELECT current_setting($name)", params={"name": name}).fetchall()[0][0])
