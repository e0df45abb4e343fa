"""Incremental recompute: a new day rewrites that day's rows of the time-keyed tables.

The rebuild (:func:`pipelines.analytics.build.rebuild`) resolves the core layer (jobs, pending
jobs, nodes, hourly capacity) in memory every time; what this module keeps from growing with
history is the telemetry work (billions of DCGM samples) and the writes of the large
time-keyed tables:

* ``analytics.occupancy_hourly``, ``analytics.gpu_waterfall_hourly`` (one row per cluster-hour
  or cluster-hour-leaf) and ``analytics.gpu_activity`` (one row per GPU and 5-minute bucket) are
  deleted and re-inserted only for the *affected* cluster-days;
* ``analytics.job_gpu_summary`` only for the attempts of jobs that overlap an affected day.

A cluster-day is affected when (see :func:`plan_build`): an input file of that day was loaded
since the last build (``raw.ingests``; DCGM loads count the days their samples cover); a job or
never-started job overlapping it changed (its span from submit to end, or to ``as_of`` while
open); its hourly capacity, down or allocated GPU-seconds changed; or it lies between the
previous and the new data cut-off ``as_of`` (running jobs and pending demand extend to it).

A full rebuild runs instead when nothing was built before, when asked (``full=True``,
``goodput materialize --full``), when the registry, the inventory or its derived nodes, the
thresholds or the code computing the tables (:data:`BUILD_CODE_DIRS`: ``metrics/``,
``pipelines/core/``, ``pipelines/analytics/`` and the SQL they read; not the CLI, pages, report
or parsers) changed, or when a loaded file names no day. Hourly DCGM aggregates
(``raw.dcgm_hourly``) take the incremental path like 5-minute samples: a loaded file affects the
days its hours cover, and the waterfall of a cluster whose attributed 5-minute activity is empty
over all time uses the hourly buckets, the full build's rule
(:func:`attributed_activity_elsewhere`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from pipelines.config import Config
from pipelines.ingest import file_day
from pipelines.kinds import raw_sources
from pipelines.warehouse import (
    ingest_time_ranges,
    read_table,
    refresh_as_of,
    replace_days,
    replace_job_rows,
    replace_table,
    row_keys,
    run_named,
    table_exists,
)
from pipelines.warehouse.sql import load_sql

__all__ = [
    "INCREMENTAL_TABLES",
    "BuildPlan",
    "affected_window",
    "plan_build",
    "record_build",
    "telemetry_window",
]

#: Time-keyed tables rewritten per affected cluster-day: table → its time column.
INCREMENTAL_TABLES: dict[str, str] = {
    "analytics.occupancy_hourly": "hour",
    "analytics.gpu_waterfall_hourly": "hour",
    "analytics.gpu_activity": "bucket",
}

_DAY = dt.timedelta(days=1)

#: Telemetry ingest kinds → (raw table, time column): a load affects the days its rows cover.
_TELEMETRY_SPANS: dict[str, tuple[str, str]] = {
    name: (src.table, src.telemetry_time)
    for name, src in raw_sources().items()
    if src.telemetry_time is not None
}


@dataclass
class BuildPlan:
    """What one rebuild does.

    ``full``: rewrite every table (``reason`` says why). Else ``days`` maps each cluster to the
    UTC days to rewrite in :data:`INCREMENTAL_TABLES` (an empty map: nothing time-keyed changed).
    """

    full: bool
    reason: str
    days: dict[str, set[dt.date]] = field(default_factory=dict)
    build_id: int = 1
    max_ingest_id: int = 0
    fingerprint: str = ""
    changed_keys: pl.DataFrame | None = None


def _ensure_state(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(load_sql("analytics/create_build_state"))
    con.execute(load_sql("analytics/create_build_log"))


#: Source folders (and single files) whose code and SQL compute the stored tables: the metric
#: engine, the core layer, the analytics build, the warehouse's table writers, and the SQL
#: folders the build reads. The CLI, the dashboard, the report, the recommendations' texts and
#: the parsers are not here: editing them changes no stored row (a parser change reaches the
#: tables through a re-ingest, which the build sees).
BUILD_CODE_DIRS = (
    "metrics",
    "pipelines/core",
    "pipelines/analytics",
    "pipelines/warehouse/tables.py",
    "sql/analytics",
    "sql/checks",
    "sql/views",
)


def build_code_files(root: Path | None = None) -> list[Path]:
    """The ``.py`` and ``.sql`` files of :data:`BUILD_CODE_DIRS` under the repository ``root``
    (default: this checkout), sorted: what the rebuild fingerprint hashes."""
    root = root or Path(__file__).resolve().parents[2]
    paths = [root / d for d in BUILD_CODE_DIRS]
    return sorted(
        f
        for p in paths
        for f in ([p] if p.is_file() else p.rglob("*"))
        if f.suffix in (".py", ".sql") and f.is_file()
    )


def _fingerprint(cfg: Config, registry_path: Path, nodes: pl.DataFrame) -> str:
    """A hash of everything whose change invalidates every row: the registry file, the inventory
    files, the nodes derived from them (or observed), the thresholds, and the code and SQL that
    compute the tables (:func:`build_code_files`: a changed definition or column must not leave
    stale rows behind)."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for f in build_code_files(root):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    files = [registry_path]
    if cfg.inventory_dir.is_dir():
        files += sorted(cfg.inventory_dir.glob("*.csv"))
    for f in files:
        h.update(str(f).encode())
        h.update(f.read_bytes() if f.is_file() else b"-")
    h.update(repr((cfg.idle_activity, cfg.large_job_gpus)).encode())
    h.update(nodes.sort(nodes.columns).write_csv().encode())
    return h.hexdigest()


def _days(lo: dt.datetime, hi: dt.datetime) -> set[dt.date]:
    """UTC days touched by the closed interval [lo, hi]."""
    d, last = lo.astimezone(dt.UTC).date(), hi.astimezone(dt.UTC).date()
    out = set()
    while d <= last:
        out.add(d)
        d += _DAY
    return out


_WAIT_KEY = ["cluster", "job_id", "submit_at", "eligible_at"]


def _span_days(
    rows: pl.DataFrame, as_of: pl.DataFrame, stable: pl.DataFrame | None = None
) -> dict[str, set[dt.date]]:
    """Per cluster, the days spanned by rows from min(submit, eligible, start) to end (or the
    cluster's ``as_of`` while open). A row whose wait is ``stable`` (the same job, submit and
    eligible times before and after) changed only from its start — or, never started, from its
    end or ``as_of`` — on: its waiting demand before then is the same in both builds."""
    out: dict[str, set[dt.date]] = {}
    if rows.height == 0:
        return out
    starts = [c for c in ("submit_at", "eligible_at", "start_at") if c in rows.columns]
    rows = rows.drop("as_of", strict=False).join(as_of, on="cluster", how="left")
    if "start_at" not in rows.columns:  # never-started rows
        rows = rows.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("start_at"))
    if stable is not None and stable.height:
        rows = rows.join(
            stable.with_columns(pl.lit(True).alias("_stable")), on=_WAIT_KEY, how="left",
            nulls_equal=True,
        )  # fmt: skip
    else:
        rows = rows.with_columns(pl.lit(None, dtype=pl.Boolean()).alias("_stable"))
    lo = (
        pl.when(pl.col("_stable"))
        .then(pl.coalesce("start_at", pl.min_horizontal("end_at", "as_of")))
        .otherwise(pl.min_horizontal(*starts))
    )
    spans = (
        rows.select(
            "cluster",
            lo.alias("_lo"),
            pl.coalesce("end_at", "as_of").alias("_hi"),
        )
        .with_columns(pl.coalesce("_lo", "_hi").alias("_lo"), pl.coalesce("_hi", "_lo"))
        .drop_nulls()
        .with_columns(
            pl.col("_lo").dt.convert_time_zone("UTC").dt.date(),
            pl.col("_hi").dt.convert_time_zone("UTC").dt.date(),
        )
        .filter(pl.col("_hi") >= pl.col("_lo"))
        .select("cluster", pl.date_ranges("_lo", "_hi", interval="1d").alias("day"))
        .explode("day")
        .unique()
    )
    for c, d in spans.iter_rows():
        out.setdefault(c, set()).add(d)
    return out


def _changed_rows(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``old`` or ``new`` (``as_of`` ignored) that the other lacks, as ``new``'s columns."""
    cols = [c for c in new.columns if c != "as_of"]
    if old.width == 0 or not set(cols) <= set(old.columns):
        return new
    o = old.select(cols).cast(new.select(cols).schema, strict=False)  # type: ignore[arg-type]
    n = new.select(cols)
    ho, hn = row_keys(o)["_h"], row_keys(n)["_h"]
    return pl.concat([n.filter(~hn.is_in(ho.implode())), o.filter(~ho.is_in(hn.implode()))])


def plan_build(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    *,
    registry_path: Path,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    occupancy: pl.DataFrame,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    full: bool = False,
) -> BuildPlan:
    """Decide between a full and an incremental rebuild, and the affected cluster-days.

    Args:
        con: the warehouse (read: ``raw.ingests``, ``raw.dcgm_samples``, the previous
            ``core.jobs``, ``analytics.build_pending``, ``analytics.occupancy_hourly`` and
            ``analytics.build_state``).
        cfg: configuration (registry, inventory, thresholds).
        registry_path: the allocation registry in use.
        jobs: the new ``core.jobs`` frame (attempts); pending: the new never-started rows;
        occupancy: the new ``occupancy_hourly`` frame; nodes: the new ``core.nodes``;
        as_of: ``cluster, as_of`` (new cut-offs).
        full: force a full rebuild.

    Returns:
        The plan; ``days`` holds every cluster-day whose time-keyed rows may differ from the
        stored ones.
    """
    _ensure_state(con)
    fp = _fingerprint(cfg, registry_path, nodes)
    top = con.execute(load_sql("analytics/max_ingest_id")).fetchall()[0][0]
    state = con.execute(load_sql("analytics/latest_build_state")).fetchall()
    build_id = state[0][0] + 1 if state else 1

    def _full(reason: str) -> BuildPlan:
        return BuildPlan(True, reason, {}, build_id, int(top), fp)

    if full:
        return _full("requested")
    if not state:
        return _full("nothing built before")
    needed = ("core.jobs", "analytics.build_pending", *INCREMENTAL_TABLES,
              "analytics.job_gpu_summary")  # fmt: skip
    if not all(table_exists(con, t) for t in needed):
        return _full("a table is missing")
    _bid, mark, old_fp, old_as_of_json = state[0]
    if old_fp != fp:
        return _full("registry, inventory, nodes, thresholds or code changed")
    days: dict[str, set[dt.date]] = {}

    def add(found: dict[str, set[dt.date]]) -> None:
        for c, ds in found.items():
            days.setdefault(c, set()).update(ds)

    # 1. Files loaded since the last build: the day each names; DCGM: the days its samples cover;
    # hourly DCGM aggregates: the days its hours cover.
    new = con.execute(load_sql("analytics/ingests_since"), {"mark": mark}).fetchall()
    for ingest_id, source, cluster, file in new:
        if source in _TELEMETRY_SPANS:
            table, time_col = _TELEMETRY_SPANS[source]
            for c, lo, hi in ingest_time_ranges(con, table, time_col, ingest_id):
                add({c: _days(lo, hi)})
            continue
        day = file_day(Path(file))
        if day is None or cluster is None:
            return _full(f"{file}: loaded file names no day or cluster")
        add({cluster: {dt.date.fromisoformat(day)}})

    # 2. Jobs and never-started jobs that changed: every day of their span (old and new rows).
    old_jobs = read_table(con, "core.jobs")
    old_as_of = pl.DataFrame(
        [(c, dt.datetime.fromisoformat(a)) for c, a in json.loads(old_as_of_json).items()],
        schema={"cluster": pl.String(), "as_of": pl.Datetime("us", "UTC")},
        orient="row",
    )
    old_pending = read_table(con, "analytics.build_pending")
    changed_jobs = _changed_rows(old_jobs, jobs)
    changed_pending = _changed_rows(old_pending, pending)
    waits = {
        side: pl.concat(
            [f.select(_WAIT_KEY).cast(jobs.select(_WAIT_KEY).schema)  # type: ignore[arg-type]
             for f in frames if set(_WAIT_KEY) <= set(f.columns)]
        ).unique()
        for side, frames in (("old", (old_jobs, old_pending)), ("new", (jobs, pending)))
    }  # fmt: skip
    stable = waits["old"].join(waits["new"], on=_WAIT_KEY, how="semi", nulls_equal=True)
    for changed in (changed_jobs, changed_pending):
        add(_span_days(changed, as_of, stable))
        add(_span_days(changed, old_as_of, stable))

    # 3. Hours whose capacity, down time or allocation changed (node events, inventory).
    occ_cols = ["cluster", "hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s",
                "allocated_gpu_s", "capacity_source"]  # fmt: skip
    old_occ = read_table(con, "analytics.occupancy_hourly")
    diff = _changed_rows(old_occ.select(occ_cols), occupancy.select(occ_cols))
    for c, h in diff.select("cluster", "hour").iter_rows():
        add({c: {h.astimezone(dt.UTC).date()}})

    # 4. Between the previous and the new cut-off (open jobs and pending demand reach as_of).
    before = dict(old_as_of.iter_rows())
    for c, cut in as_of.iter_rows():
        if cut is None:
            continue
        prev = before.get(c)
        if prev != cut:
            add({c: _days(min(prev, cut) if prev else cut, max(prev, cut) if prev else cut)})
    keys = changed_jobs.select("cluster", "job_id").unique()
    return BuildPlan(False, "incremental", days, build_id, int(top), fp, keys)


def affected_window(days: set[dt.date]) -> tuple[dt.datetime, dt.datetime]:
    """[first affected day 00:00 UTC, last affected day + 1 day) as UTC datetimes."""
    lo, hi = min(days), max(days)
    return (
        dt.datetime(lo.year, lo.month, lo.day, tzinfo=dt.UTC),
        dt.datetime(hi.year, hi.month, hi.day, tzinfo=dt.UTC) + _DAY,
    )


def attributed_activity_elsewhere(
    con: duckdb.DuckDBPyConnection, cluster: str, days: set[dt.date]
) -> bool:
    """Whether the stored ``analytics.gpu_activity`` has 5-minute activity attributed to one
    attempt of ``cluster`` on a UTC day outside ``days`` (False when the table is absent).

    With the window's own activity this decides the one hourly-DCGM fallback rule of
    :func:`pipelines.analytics.metrics_build.build_metric_tables`: a cluster whose attributed
    5-minute activity is empty over all time takes its hourly aggregates (3600 s buckets).
    """
    from pipelines.analytics.metrics_build import _ONE_JOB

    if not table_exists(con, "analytics.gpu_activity"):
        return False
    found = run_named(
        con,
        "analytics/attributed_activity_outside_days",
        {"cluster": cluster, "one_job": list(_ONE_JOB), "days": sorted(days)},
    )
    return bool(found["n"][0])


def in_days(col: str, days: set[dt.date]) -> pl.Expr:
    """``col`` (a UTC datetime) falls on one of ``days``."""
    return pl.col(col).dt.convert_time_zone("UTC").dt.date().is_in(sorted(days))


def telemetry_window(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    lo: dt.datetime,
    hi: dt.datetime,
    *,
    margin: dt.timedelta = _DAY,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose ``raw.dcgm_samples`` holds one cluster's samples in
    [lo − margin, hi), and whose ``raw.dcgm_hourly`` (when the warehouse has it) holds the
    cluster's hourly aggregates whose ``hour`` lies in the same window — the input the telemetry
    functions of :mod:`pipelines.analytics.metrics_build` and
    :func:`pipelines.analytics.dcgm_hourly_metrics.hourly_activity` read, cut to a window. The
    margin gives the XID change detection (``lag`` over each GPU's samples) the sample before
    the window."""
    frame: pl.DataFrame = con.sql(
        "SELECT * FROM raw.dcgm_samples WHERE cluster = $c AND ts >= $lo AND ts < $hi",
        params={"c": cluster, "lo": lo - margin, "hi": hi},
    ).arrow()
    mem = duckdb.connect()
    mem.execute("SET TimeZone = 'UTC'")
    mem.execute("CREATE SCHEMA raw")
    mem.register("_samples", frame)
    mem.execute("CREATE TABLE raw.dcgm_samples AS SELECT * FROM _samples")
    mem.unregister("_samples")
    if table_exists(con, "raw.dcgm_hourly"):  # hourly aggregates (the scale fleet's telemetry)
        hourly = con.sql(
            "SELECT * FROM raw.dcgm_hourly WHERE cluster = $c AND hour >= $lo AND hour < $hi",
            params={"c": cluster, "lo": lo - margin, "hi": hi},
        ).arrow()
        mem.register("_hourly", hourly)
        mem.execute("CREATE TABLE raw.dcgm_hourly AS SELECT * FROM _hourly")
        mem.unregister("_hourly")
    if table_exists(con, "raw.slurm_job_gres"):  # the per-job GPU index map (small)
        gres = con.sql(
            "SELECT * FROM raw.slurm_job_gres WHERE cluster = $c", params={"c": cluster}
        ).arrow()
        mem.register("_gres", gres)
        mem.execute("CREATE TABLE raw.slurm_job_gres AS SELECT * FROM _gres")
        mem.unregister("_gres")
    return mem


def record_build(
    con: duckdb.DuckDBPyConnection,
    plan: BuildPlan,
    as_of: pl.DataFrame,
    pending: pl.DataFrame,
    log: list[tuple[str, str, int | None, int]],
) -> None:
    """Store the build's watermark, fingerprint, cut-offs and never-started rows, and one
    ``analytics.build_log`` row per table written: (table, mode, deleted, inserted)."""
    _ensure_state(con)
    cuts = {c: a.isoformat() for c, a in as_of.iter_rows() if a is not None}
    con.execute(
        load_sql("analytics/insert_build_state"),
        {"build_id": plan.build_id, "mode": "full" if plan.full else "incremental",
         "max_ingest_id": plan.max_ingest_id, "fingerprint": plan.fingerprint,
         "as_of_json": json.dumps(cuts)},
    )  # fmt: skip
    days = json.dumps({c: sorted(d.isoformat() for d in ds) for c, ds in plan.days.items()})
    for table, mode, deleted, inserted in log:
        con.execute(
            load_sql("analytics/insert_build_log"),
            {"build_id": plan.build_id, "table_name": table, "mode": mode,
             "rows_deleted": deleted, "rows_inserted": inserted,
             "days": days if mode == "days" else None},
        )  # fmt: skip
    replace_table(con, "analytics.build_pending", pending)


def _overlapping(
    jobs: pl.DataFrame, days: set[dt.date], cut: dt.datetime, *, from_col: str
) -> pl.DataFrame:
    """Rows whose span [from_col (or earlier waits), end or ``cut``] touches one of ``days``."""
    starts = [c for c in ("submit_at", "eligible_at", "start_at") if c in jobs.columns]
    lo = pl.min_horizontal(*starts) if from_col == "wait" else pl.col(from_col)
    hi = pl.coalesce(pl.col("end_at"), pl.lit(cut))
    tagged = jobs.with_columns(lo.alias("_lo"), hi.alias("_hi")).drop_nulls(["_lo", "_hi"])
    spans = (
        tagged.select(
            pl.int_range(pl.len()).alias("_row"),
            pl.date_ranges(
                pl.col("_lo").dt.convert_time_zone("UTC").dt.date(),
                pl.col("_hi").dt.convert_time_zone("UTC").dt.date(),
                interval="1d",
            ).alias("_day"),
        )
        .explode("_day")
        .filter(pl.col("_day").is_in(sorted(days)))
        .select("_row")
        .unique()
    )
    return (
        tagged.with_row_index("_row")
        .join(spans.with_columns(pl.col("_row").cast(pl.UInt32)), on="_row", how="semi")
        .drop("_row", "_lo", "_hi")
    )


def apply_incremental(
    con: duckdb.DuckDBPyConnection,
    plan: BuildPlan,
    *,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    occupancy: pl.DataFrame,
    as_of: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    idle_threshold: float,
    changed_keys: pl.DataFrame | None = None,
) -> list[tuple[str, str, int | None, int]]:
    """Recompute and rewrite the affected cluster-days of the time-keyed tables and the
    telemetry summaries of the attempts overlapping them (caller holds the transaction).

    ``occupancy_hourly`` rows are the affected hours of the full ``occupancy`` frame; the
    waterfall is :func:`metrics.gpu_waterfall_hourly` over those hours only (its capacity rows
    define the output hours), with activity and XID events from the cluster's samples cut to
    the window the affected days and the overlapping attempts cover (a cluster without
    5-minute samples uses the hourly aggregates' activity,
    :func:`~pipelines.analytics.dcgm_hourly_metrics.hourly_activity`, in 3600 s buckets, as
    :func:`~pipelines.analytics.metrics_build.build_metric_tables` does); ``gpu_activity`` is
    :func:`~pipelines.analytics.metrics_build.gpu_activity` on that window, kept for the
    affected days; ``job_gpu_summary`` is recomputed for every attempt of a job (cluster,
    job_id) with an attempt running on an affected day.

    Returns:
        ``(table, mode, rows deleted, rows inserted)`` per table; mode ``days`` or ``jobs``.
    """
    from metrics import gpu_waterfall_hourly
    from pipelines.analytics.dcgm_hourly_metrics import hourly_activity
    from pipelines.analytics.metrics_build import (
        _activity,
        _xid_events,
        attributed_gpu_buckets,
        gpu_activity,
        job_gpu_summary,
    )

    cuts = {c: a for c, a in as_of.iter_rows() if a is not None}
    occ_parts, wf_parts, act_parts, sum_parts, key_parts = [], [], [], [], []
    for c, days in sorted(plan.days.items()):
        cut = cuts.get(c)
        if cut is None or not days:
            continue
        w0, w1 = affected_window(days)
        occ_c = occupancy.filter((pl.col("cluster") == c) & in_days("hour", days))
        occ_parts.append(occ_c)
        j = _overlapping(jobs.filter(pl.col("cluster") == c), days, cut, from_col="wait")
        p = pending.filter(pl.col("cluster") == c)
        run = _overlapping(
            jobs.filter((pl.col("cluster") == c) & pl.col("start_at").is_not_null()),
            days, cut, from_col="start_at",
        )  # fmt: skip
        keys = run.select("cluster", "job_id")
        if changed_keys is not None:
            keys = pl.concat([keys, changed_keys.filter(pl.col("cluster") == c)])
        keys = keys.unique()
        key_parts.append(keys)
        summ_jobs = jobs.join(keys, on=["cluster", "job_id"], how="semi")
        ends = pl.concat([j, summ_jobs]).select(
            pl.col("start_at").min().alias("lo"),
            pl.coalesce("end_at", pl.lit(cut)).max().alias("hi"),
        )
        lo, hi = ends.row(0)
        t_lo = min(w0, lo.replace(minute=0, second=0, microsecond=0)) if lo else w0
        t_hi = max(w1, hi + dt.timedelta(minutes=5)) if hi else w1
        mem = telemetry_window(con, c, t_lo, t_hi)
        try:
            # Attribution sees every job of the cluster (a sample's owner is decided among all
            # jobs on its node); only the outputs are cut to the affected days / attempts.
            jobs_c = jobs.filter(pl.col("cluster") == c)
            nodes_c = nodes.filter(pl.col("cluster") == c)
            buckets = attributed_gpu_buckets(mem, jobs_c, pod_jobs, nodes_c)
            activity = _activity(mem, jobs_c, pod_jobs, buckets=buckets)
            xid = _xid_events(mem)
            wf_activity, bucket_s = activity, 300.0
            # The full build's rule: hourly aggregates for a cluster whose attributed 5-minute
            # activity is empty over all time (the window's and the stored other days').
            if activity.height == 0 and not attributed_activity_elsewhere(con, c, days):
                hourly = hourly_activity(mem, jobs_c).filter(pl.col("cluster") == c)
                if hourly.height:
                    wf_activity, bucket_s = hourly, 3600.0
            if occ_c.height:
                wf_parts.append(
                    gpu_waterfall_hourly(
                        j.lazy(),
                        occ_c.select("cluster", "hour", "capacity_gpu_s", "down_gpu_s",
                                     "planned_down_gpu_s").lazy(),
                        cut, pending=p.lazy(), activity=wf_activity.lazy(),
                        activity_bucket_s=bucket_s, xid_events=xid.lazy(),
                        idle_threshold=idle_threshold,
                    ).collect()
                )  # fmt: skip
            ga = gpu_activity(mem, jobs_c, pod_jobs, buckets=buckets)
            act_parts.append(ga.filter(in_days("bucket", days)))
            sum_parts.append(
                job_gpu_summary(mem, summ_jobs, activity, pod_jobs,
                                idle_threshold=idle_threshold, buckets=buckets)
            )  # fmt: skip
        finally:
            mem.close()

    def _with_as_of(parts: list[pl.DataFrame]) -> pl.DataFrame:
        if not parts:
            return pl.DataFrame()
        f = pl.concat(parts, how="diagonal_relaxed")
        return f.drop("as_of", strict=False).join(as_of, on="cluster", how="left")

    wf = _with_as_of(wf_parts)
    if wf.width:
        wf = wf.with_columns(pl.col("leaf").cast(pl.String).alias("bucket")).drop("leaf")
    log: list[tuple[str, str, int | None, int]] = []
    for table, frame in (
        ("analytics.occupancy_hourly", _with_as_of(occ_parts)),
        ("analytics.gpu_waterfall_hourly", wf),
        ("analytics.gpu_activity", _with_as_of(act_parts)),
    ):
        d, i = replace_days(con, table, frame, plan.days, time_col=INCREMENTAL_TABLES[table])
        log.append((table, "days", d, i))
    keys = pl.concat(key_parts) if key_parts else pl.DataFrame(
        schema={"cluster": pl.String(), "job_id": pl.String()}
    )  # fmt: skip
    d, i = replace_job_rows(con, "analytics.job_gpu_summary", _with_as_of(sum_parts), keys)
    log.append(("analytics.job_gpu_summary", "jobs", d, i))
    for table in (*INCREMENTAL_TABLES, "analytics.job_gpu_summary"):
        refresh_as_of(con, table, as_of)
    return log
