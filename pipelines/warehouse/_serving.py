"""The published serving copy: an atomic, read-only, pseudonymised copy of the warehouse."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import time
from pathlib import Path

import duckdb

from pipelines.privacy import (
    Pseudonyms,
    known_user_names,
    load_salt,
    pseudonymise_database,
    show_user_names,
)
from pipelines.warehouse._connection import connect, pid_alive

#: The table of the serving copy that says how it treats user names: one row,
#: ``user_names`` = ``pseudonymised`` | ``shown``.
PRIVACY_TABLE = "meta.privacy"

#: A per-attempt row is kept when its attempt is (``core.jobs``' condition below).
_WITH_ITS_ATTEMPT = (
    "EXISTS (SELECT 1 FROM src.core.jobs j WHERE"
    " j.cluster = t.cluster AND j.job_id = t.job_id AND j.attempt = t.attempt"
    " AND (j.end_at IS NULL OR j.end_at >= $cutoff))"
)

#: Detail tables the serving copy cuts to recent rows: table → SQL condition on the row (the
#: row is kept when it holds for ``$cutoff``). Every other table (aggregates, state, the
#: per-attempt summaries' keys) is copied whole.
SERVING_DETAIL_FILTERS: dict[str, str] = {
    "raw.dcgm_samples": "ts >= $cutoff",
    "analytics.gpu_activity": "bucket >= $cutoff",
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
    "analytics.job_gpu_summary": _WITH_ITS_ATTEMPT,
    # (every week of nvlink_colocation_weekly, which read it, is stored apart and kept whole)
    "analytics.job_placement": _WITH_ITS_ATTEMPT,
    # an attempt's pieces of held GPUs (the ``job_holds`` view): kept with their attempt
    "core.job_holds": _WITH_ITS_ATTEMPT,
    # Rejected rows of files whose name carries a day before the cut-off are dropped.
    "raw.rejected_rows": "ingest_id NOT IN (SELECT ingest_id FROM src.raw.ingests WHERE"
    " try_strptime(regexp_extract(file, '(\\d{4}-\\d{2}-\\d{2})', 1), '%Y-%m-%d')"
    " < $cutoff - INTERVAL 1 DAY)",
}


#: Detail tables cut only where the warehouse stores what a view counted from all their rows:
#: a warehouse last built by older code has an ``nvlink_colocation_weekly`` view over every
#: placement (the copy takes each view's SQL from the warehouse), so its placements stay whole.
_CUT_ONLY_WITH = {"analytics.job_placement": "analytics.nvlink_colocation_weekly"}

#: Raw inputs the recent serving copy (``detail_days`` > 0) leaves out: no view, page, report
#: or recommendation reads them (``tests/pipelines/test_serving.py`` checks every published
#: reader's SQL and code), only the build, in the warehouse, whose resolved forms are published
#: (``core.slurm_jobs`` behind ``slurm_jobs``; the hourly per-GPU aggregates behind the
#: waterfall and the telemetry tables). Copied, their recent rows were the copy's largest
#: table (9.5 M of a year's hourly rows, 35 days) and the slowest part of a day's publish
#: (BENCHMARKS.md "The serving copy without the raw rows no reader reads").
SERVING_LEFT_OUT: frozenset[str] = frozenset({"raw.dcgm_hourly", "raw.slurm_rows"})


def _copy_recent(src: Path, tmp: str, detail_days: int) -> None:
    """Write ``tmp`` as a new DuckDB: every table of ``src`` but :data:`SERVING_LEFT_OUT`
    (detail tables cut to rows at most ``detail_days`` before the latest data cut-off), then
    every view."""
    with connect(tmp) as out:
        quoted = str(src).replace("'", "''")
        out.execute(f"ATTACH '{quoted}' AS src (READ_ONLY)")
        tables = out.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'src'"
            " ORDER BY ALL"
        ).fetchall()
        names = {f"{s}.{t}" for s, t in tables}
        # The latest cut-off of a cluster with jobs: core.build_cutoffs holds one per cluster
        # (a warehouse built before it existed stored as_of in every core.jobs row).
        cut = (
            out.execute(
                "SELECT max(as_of) FROM src.core.build_cutoffs"
                " WHERE cluster IN (SELECT cluster FROM src.core.jobs)"
                if "core.build_cutoffs" in names
                else "SELECT max(as_of) FROM src.core.jobs"
            ).fetchall()[0][0]
            if "core.jobs" in names
            else None
        )
        cutoff = cut - dt.timedelta(days=detail_days) if cut is not None else None
        for schema, table in tables:
            name = f"{schema}.{table}"
            out.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            if name in SERVING_LEFT_OUT:
                continue
            cond = SERVING_DETAIL_FILTERS.get(name)
            if _CUT_ONLY_WITH.get(name, name) not in names:
                cond = None
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


def _write_live_rows_only(copy: str, dst: Path) -> None:
    """Write ``copy`` again as a new file holding only its live rows, in its place.

    Pseudonymising updates the copy's rows in place: DuckDB frees the blocks that held the real
    user names without zeroing them, so the file's bytes still held every name beside its
    pseudonym (readable with ``strings``). ``COPY FROM DATABASE`` into a fresh file writes the
    tables, views and schemas anew, from the live rows only."""
    fd, fresh = tempfile.mkstemp(prefix=f"{dst.name}.{os.getpid()}.", suffix=".tmp", dir=dst.parent)
    os.close(fd)
    os.unlink(fresh)  # DuckDB creates the file itself
    try:
        with connect(fresh) as out:
            name = out.execute("SELECT current_database()").fetchall()[0][0]
            quoted = copy.replace("'", "''")
            out.execute(f"ATTACH '{quoted}' AS src (READ_ONLY)")
            out.execute(f'COPY FROM DATABASE src TO "{name}"')
            out.execute("DETACH src")
            out.execute("CHECKPOINT")
        os.replace(fresh, copy)
    finally:
        for leftover in (fresh, fresh + ".wal"):
            if os.path.exists(leftover):
                os.unlink(leftover)


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


def _protect(copy: str, pseudonyms: Pseudonyms | None) -> None:
    """Pseudonymise the copy being published (unless ``pseudonyms`` is None: names shown) and
    record which it is in :data:`PRIVACY_TABLE`."""
    with connect(copy) as con:
        if pseudonyms is not None:
            pseudonymise_database(con, pseudonyms)
        con.execute("CREATE SCHEMA IF NOT EXISTS meta")
        con.execute(
            f"CREATE OR REPLACE TABLE {PRIVACY_TABLE} AS SELECT $mode AS user_names",
            {"mode": "shown" if pseudonyms is None else "pseudonymised"},
        )
        con.execute("CHECKPOINT")


def publish_serving_copy(
    warehouse: str | Path,
    serving: str | Path,
    *,
    detail_days: int = 0,
    show_names: bool | None = None,
) -> Path:
    """Publish an atomic read-only, pseudonymised copy of the warehouse for readers.

    The writer's WAL is checkpointed and the copy written to a temporary name beside the
    target, then renamed over it (``os.replace``), so a reader sees either the old or the new
    copy, never a half-written one.

    With ``detail_days`` = 0 the copy is the whole file. Otherwise it holds aggregates plus
    recent detail: every table whole except those in :data:`SERVING_DETAIL_FILTERS` (jobs,
    samples, events, per-bucket activity, rejected rows), which keep the rows of the last
    ``detail_days`` days before the latest data cut-off (``core.build_cutoffs``' ``as_of`` of the
    clusters with jobs) —
    jobs still running or pending are always kept, and the raw inputs no reader reads
    (:data:`SERVING_LEFT_OUT`), which it leaves out. Every view is recreated over the copy.

    User names are pseudonymised in the copy (:func:`pipelines.privacy.pseudonymise_database`,
    with the salt of :func:`pipelines.privacy.load_salt` and the warehouse's user names), so
    every reader (pages, ``goodput sql``, reports, patch files) sees pseudonyms; the warehouse
    keeps the names. ``meta.privacy`` says which the copy holds.

    Args:
        warehouse: the writer's DuckDB file (no other writer may hold it).
        serving: the published copy's path.
        detail_days: days of detail rows to keep; 0 = all rows.
        show_names: keep the real user names; default ``$GOODPUT_SHOW_USER_NAMES`` (the one
            documented opt-in).

    Returns:
        The serving copy's path.

    Raises:
        pipelines.privacy.PseudonymCollision: two of the warehouse's user names have one
            pseudonym under the salt (the copy in place is left as it was).
    """
    src, dst = Path(warehouse), Path(serving)
    shown = show_user_names() if show_names is None else show_names
    with connect(src) as con:
        con.execute("CHECKPOINT")
        names = set() if shown else known_user_names(con)
    # The salt is read (or made) only when there are names to hide.
    pseudonyms = None if shown else Pseudonyms.of_names(load_salt(src) if names else "", names)
    if pseudonyms is not None:
        _ = pseudonyms.mapping  # two names with one pseudonym: refused before any copy is made
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
        _protect(tmp, pseudonyms)
        if pseudonyms is not None:
            _write_live_rows_only(tmp, dst)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if os.path.exists(tmp + ".wal"):
            os.unlink(tmp + ".wal")
    return dst
