"""Connections to the DuckDB files: one writer process at a time, a bounded wait for its lock."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb


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


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (signal 0 checks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
