"""Incremental recompute: a new day rewrites that day's rows of the time-keyed tables.

This module plans a build (:func:`plan_build`: full, or which cluster-days are affected) and
keeps its books (``analytics.build_state``, ``analytics.build_log``); the time-keyed rows
themselves are computed by the one function a full build uses too,
:func:`pipelines.analytics.windows.window_tables` (a full build asks for every day), and
written here by :func:`write_window_tables`.

The rebuild (:func:`pipelines.analytics.build.rebuild`) resolves the core layer (jobs, pending
jobs, nodes, hourly capacity) every time (the Slurm rows a part at a time); what this module
keeps from growing with
history is the telemetry work (billions of DCGM samples) and the writes of the large
time-keyed tables:

* ``analytics.occupancy_hourly``, ``analytics.gpu_waterfall_hourly`` (one row per cluster-hour
  or cluster-hour-leaf), ``analytics.gpu_activity`` (one row per GPU and 5-minute bucket), the
  hourly topology tables (fragmentation, domain and segment capacity, stranded GPUs), the
  hourly fair shares and the daily node signals (per node and day an attempt started) are
  computed, deleted and re-inserted only for the *affected* cluster-days;
* ``analytics.job_gpu_summary`` only for the attempts of jobs that overlap an affected day.

A cluster-day is affected when (see :func:`plan_build`): an input file of that day was loaded,
re-loaded or deleted since the last build (each ``raw.ingests`` row compared with the last build's
copy, :data:`INGESTS_TABLE`; DCGM loads count the days their samples cover, or covered:
:data:`TELEMETRY_SPANS_TABLE`, and the day after, whose XID events read them, with the days of the
FAILED attempts their XID events may decide; a per-job GPU index map load: every day the attempts
ran of the jobs whose indices it changes, or of every job a deleted one named, :func:`_gres_days`,
with :data:`GRES_JOBS_TABLE`); a job or never-started job overlapping it changed (its span from
submit to end, or to ``as_of`` while open; an open attempt to the latest sample loaded, if later:
:func:`_latest_times`); a topology map or a node's down/drain interval covering it changed; a
FAILED attempt ran on it that ends near an XID event a changed slurmd map places on another node
than before (:func:`_moved_map_spans`), or the map otherwise places the slurmd pods' samples on it,
or it holds a stored DCGM sample of a pod that entered or left the pods the map names (whose labels
are cleared on all its samples: :func:`_map_pod_spans`); its hourly capacity, down or allocated
GPU-seconds changed; or it lies between the previous and the new data cut-off ``as_of`` (running
jobs and pending demand extend to it), or an attempt ending between them ran on it
(:func:`_cutoff_crossed_days`). The build then adds every day of a cluster whose hourly-DCGM rule
may turn over (:func:`pipelines.analytics.windows.with_hourly_rule_days`).

A full rebuild runs instead when nothing was built before, when asked (``full=True``, ``goodput
materialize --full``), when the registry, the inventory or its derived nodes, the thresholds, the
segment sizes, a topology map or node interval with no start time, or the code computing the tables
(:data:`BUILD_CODE_DIRS`: ``metrics/``, ``pipelines/core/``, ``pipelines/analytics/``, the
warehouse's table writers and the SQL they read; not the CLI, pages, report or parsers) changed,
when a loaded file names no day, or when whether some cluster has a cut-off and occupancy hours
turns over (without one, a full build keeps no window row; with one, every sample's activity). The
reason is stored in ``analytics.build_state``. Hourly DCGM aggregates (``raw.dcgm_hourly``) take
the incremental path like 5-minute samples: a loaded file affects the days its hours cover, and the
waterfall of a cluster whose attributed 5-minute activity is empty over all time uses the hourly
buckets, one rule for both builds
(:func:`pipelines.analytics.windows.attributed_activity_elsewhere`)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from metrics.het_jobs import het_unit_id
from metrics.waterfall import XID_GRACE_MAX_S, XID_SCRAPE_GRACE_S, XID_WINDOW_S, base_state
from pipelines.analytics.chunks import cluster_days, of_keys
from pipelines.config import Config
from pipelines.ingest import file_day
from pipelines.kinds import raw_sources
from pipelines.warehouse import (
    RowDiff,
    append_rows,
    apply_row_diff,
    as_utc,
    diff_replace,
    ingest_time_spans,
    job_keys_table,
    read_rows_since,
    read_table,
    replace_days,
    replace_job_rows,
    replace_table,
    row_diff,
    row_hashes,
    run_named,
    table_exists,
)
from pipelines.warehouse.sql import load_sql

__all__ = [
    "DCGM_HOSTS_TABLE",
    "INCREMENTAL_TABLES",
    "INGESTS_TABLE",
    "NODE_DOWN_TABLE",
    "RESOLUTION_TABLE",
    "SLURM_INGESTS_TABLE",
    "TELEMETRY_SPANS_TABLE",
    "BuildPlan",
    "nul_in_cluster_names",
    "plan_build",
    "record_build",
    "record_dcgm_hosts",
    "resolution_key",
    "reusable_resolution",
    "unchanged_slurm_ingests",
    "with_spells",
    "with_stored_days",
    "write_window_tables",
]

#: Time-keyed tables rewritten per affected cluster-day: table → its time column. The four
#: topology tables and the hourly fair shares are hour-keyed and each hour depends only on the
#: attempts, waits, map, node states and capacity of that hour (and the cut-off, whose moves
#: the plan's days cover: :mod:`pipelines.analytics.chunks`), so an incremental build computes
#: them for the plan's days alone. The daily node signals are keyed by the day an attempt
#: started (:data:`pipelines.analytics.metrics_build.NODE_SIGNALS_TABLE`): an attempt's signals
#: change with its own row, an XID event near its end or the cut-off passing its end, each of
#: which plans every day it ran.
INCREMENTAL_TABLES: dict[str, str] = {
    "analytics.occupancy_hourly": "hour",
    "analytics.gpu_waterfall_hourly": "hour",
    "analytics.gpu_activity": "bucket",
    "analytics.topology_fragmentation_hourly": "hour",
    "analytics.domain_capacity_hourly": "hour",
    "analytics.segment_capacity_hourly": "hour",
    "analytics.topology_stranded_hourly": "hour",
    "analytics.fair_share_hourly": "hour",
    "analytics.node_signals_daily": "day",
}

#: Bookkeeping: the build whose resolved Slurm rows ``core.slurm_jobs`` holds, and the hash of the
#: code and registry that resolved them (:func:`resolution_key`).
RESOLUTION_TABLE = "analytics.build_resolution"

#: Bookkeeping: raw Slurm rows per ingest, with the ingest's file hash and load time, when
#: ``core.slurm_jobs`` was last resolved (an ingest new or changed since marks its identities
#: for resolution again: ``sql/analytics/slurm_dirty_keys.sql``).
SLURM_INGESTS_TABLE = "analytics.build_slurm_ingests"

#: Bookkeeping: every load (``raw.ingests``: id, source, cluster, file, hash, load time) as the
#: last build saw it. A load new or changed since, and one deleted since, affects its days
#: (:func:`plan_build`), whatever its id: the id of a deleted load can be given again.
INGESTS_TABLE = "analytics.build_ingests"

#: Bookkeeping: per telemetry load and cluster, the first and last sample time it loaded
#: (``ingest_id, cluster, lo, hi``), kept so that the days of a load deleted since (its rows gone
#: from the raw table) can still be planned.
TELEMETRY_SPANS_TABLE = "analytics.build_telemetry_spans"

#: Bookkeeping: per load of the per-job GPU index map (``slurm-jobs-gres``: ``scontrol show job
#: -d``), the jobs it names with GPU indices (``ingest_id, cluster, job_id``: scontrol's JobId,
#: sacct's JobIDRaw), kept so that the days of a load deleted since can still be planned
#: (:func:`_gres_days`). A build adds the new loads' jobs and drops the deleted loads'; a full
#: build writes it whole.
GRES_JOBS_TABLE = "analytics.build_gres_jobs"

#: Bookkeeping: the last build's pod lives (``cluster, namespace, pod, uid, job_id, pod_from``:
#: :attr:`pipelines.core.CoreFrames.pod_jobs`), which job each pod-labelled sample goes to. A
#: build compares them with its own (:func:`_pod_sample_spans`) and writes them.
POD_LIVES_TABLE = "analytics.build_pod_lives"

#: Bookkeeping: per load of ``raw.dcgm_samples``, cluster, pod and UTC day, the first and last
#: time of its samples labelled with that pod (``ingest_id, cluster, namespace, pod, lo, hi``):
#: the days of a pod's stored samples, read without a pass over the samples
#: (``sql/analytics/pod_sample_days.sql``). A build adds the new loads' rows and drops the
#: deleted loads'; a full build writes it whole.
POD_DAYS_TABLE = "analytics.build_pod_days"

#: Bookkeeping: per load of ``raw.dcgm_samples``, cluster and host (the exporter's own pod names
#: left out), the first and last time of its samples (``ingest_id, cluster, host, first_seen,
#: last_seen``): the hosts of every stored sample, read by the findings ``dcgm_hosts_without_node``
#: and ``dcgm_hosts_ambiguous`` (``sql/analytics/dcgm_hosts.sql``) without a pass over the
#: samples. A build drops the deleted loads' rows and adds the new loads' (their samples alone:
#: :func:`record_dcgm_hosts`); a full build writes it whole.
DCGM_HOSTS_TABLE = "analytics.build_dcgm_hosts"

#: The ingest source of the per-job GPU index map (``raw.slurm_job_gres``).
_GRES_SOURCE = "slurm-jobs-gres"

_GRES_JOBS_SCHEMA = {"ingest_id": pl.Int64(), "cluster": pl.String(), "job_id": pl.String()}

#: The columns that identify one load in ``raw.ingests`` (``sql/analytics/ingest_identities.sql``).
_LOAD_COLUMNS = ["ingest_id", "source", "cluster", "file", "sha256", "loaded_at"]

#: The raw table whose samples the XID events are found in (a change of a GPU's XID value from
#: one sample to the next, ``sql/analytics/xid_events.sql``).
_XID_TABLE = "raw.dcgm_samples"
#: The hourly DCGM aggregates, whose ``xid_last`` gives XID events too
#: (:func:`pipelines.analytics.metrics_build._hourly_xid_events`).
_HOURLY_XID_TABLE = "raw.dcgm_hourly"

_SPANS_SCHEMA = {"ingest_id": pl.Int64(), "cluster": pl.String(),
                 "lo": pl.Datetime("us", "UTC"), "hi": pl.Datetime("us", "UTC")}  # fmt: skip

#: The stored slurmd map of the last build (:func:`_moved_map_spans`).
SLURMD_MAP_TABLE = "analytics.slurm_node_map"

#: The slurmd map's columns that place an XID event
#: (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`: the event's pod, at its time, ran
#: as that Slurm node), and of those the ones that name an interval apart from its end: two
#: versions of an interval that differ in ``valid_to`` alone are one interval cut short or run
#: on (a slurmd pod seen ending).
_MAP_PLACES = ["cluster", "slurm_node", "valid_from", "valid_to", "namespace", "pod"]
_MAP_INTERVAL = ["cluster", "slurm_node", "valid_from", "namespace", "pod"]

#: Stand-ins for a map interval's missing ends: no start (from the beginning) and no end (still
#: so at the cut-off, and after it).
_EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)

#: Bookkeeping: the node down/drain intervals of the last build (``core`` does not store them),
#: compared with the new build's to find the days whose topology tables they change.
NODE_DOWN_TABLE = "analytics.build_node_down"

_DAY = dt.timedelta(days=1)
_HOUR = dt.timedelta(hours=1)

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
    ``ingests``: every load as the plan read it (:data:`INGESTS_TABLE`'s columns); ``spans``:
    the telemetry loads' spans among them (:data:`TELEMETRY_SPANS_TABLE`), None when the build
    reads them all (a full plan); both are kept by :func:`record_build`, as are the jobs of the
    per-job GPU index map loads (:data:`GRES_JOBS_TABLE`: ``gres_loads``, the ids of those new
    and deleted since; None: written whole) and the pod days of the DCGM sample loads
    (:data:`POD_DAYS_TABLE`: ``sample_loads``, likewise). ``diffs``: by table, how
    the stored rows differ from the frame the build writes, found by the plan (``core.jobs``,
    compared with the new attempts) and written by the build without comparing again; a table
    not in it is compared when written. ``changed_keys``: ``cluster, job_id`` of the attempts
    that changed (old rows and new); ``wait_keys``: those whose wait spells
    (``analytics.time_to_start_jobs``) may differ from the stored ones (:func:`wait_keys`),
    which an incremental build rewrites by key instead of comparing every spell.
    """

    full: bool
    reason: str
    days: dict[str, set[dt.date]] = field(default_factory=dict)
    build_id: int = 1
    max_ingest_id: int = 0
    fingerprint: str = ""
    changed_keys: pl.DataFrame | None = None
    wait_keys: pl.DataFrame | None = None
    ingests: pl.DataFrame | None = None
    spans: pl.DataFrame | None = None
    diffs: dict[str, RowDiff] = field(default_factory=dict)
    gres_loads: tuple[list[int], list[int]] | None = None
    sample_loads: tuple[list[int], list[int]] | None = None


def _ensure_state(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(load_sql("analytics/create_build_state"))
    con.execute(load_sql("analytics/add_build_state_reason"))
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
    files, the nodes derived from them (or observed), the thresholds and segment sizes, the
    waterfall's loss policies (``[waterfall]`` and each cluster's own: they decide the lost
    time of every attempt, on every day it ran), and the code and SQL that compute the tables
    (:func:`build_code_files`: a changed definition or column must not leave stale rows
    behind)."""
    h = _code_hash()
    files = [registry_path]
    if cfg.inventory_dir.is_dir():
        files += sorted(cfg.inventory_dir.glob("*.csv"))
    for f in files:
        h.update(str(f).encode())
        h.update(f.read_bytes() if f.is_file() else b"-")
    h.update(repr((cfg.idle_activity, cfg.large_job_gpus, cfg.segment_sizes)).encode())
    h.update(
        repr((cfg.loss_policy, sorted((c.name, c.loss_policy) for c in cfg.clusters))).encode()
    )
    h.update(nodes.sort(nodes.columns).write_csv().encode())
    return h.hexdigest()


def _code_hash() -> hashlib._Hash:
    """A sha256 fed with every :func:`build_code_files` file, path and bytes."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for f in build_code_files(root):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h


def resolution_key(registry_path: Path) -> str:
    """A hash of what the Slurm identity resolution reads besides the raw rows: the code and
    SQL of :data:`BUILD_CODE_DIRS`, the registry file (its account → team mapping) and the
    versions of polars and DuckDB, which compute and store it."""
    h = _code_hash()
    h.update(registry_path.read_bytes() if registry_path.is_file() else b"-")
    h.update(f"polars {pl.__version__} duckdb {duckdb.__version__}".encode())
    return h.hexdigest()


def reusable_resolution(con: duckdb.DuckDBPyConnection, key: str) -> bool:
    """Whether the stored ``core.slurm_jobs`` was resolved under ``key`` (:func:`resolution_key`:
    today's code, registry and libraries) by the last build, which recorded its raw Slurm rows
    per ingest (:data:`SLURM_INGESTS_TABLE`): then an identity none of whose raw rows changed
    since (``sql/analytics/slurm_dirty_keys.sql``) keeps its stored resolution. False: resolve
    every row (also where a raw Slurm row's cluster name holds a NUL byte).
    """
    if not (
        table_exists(con, "core.slurm_jobs")
        and table_exists(con, RESOLUTION_TABLE)
        and table_exists(con, SLURM_INGESTS_TABLE)
        and table_exists(con, "analytics.build_state")
    ):
        return False
    last = con.execute(load_sql("analytics/latest_build_state")).fetchall()
    recorded = read_table(con, RESOLUTION_TABLE)
    # recorded by the last build (one that did not record it, e.g. by older code, may have
    # rewritten core.slurm_jobs since)
    if not (
        bool(last)
        and recorded["build_id"].to_list() == [last[0][0]]
        and recorded["resolution_key"].to_list() == [key]
    ):
        return False
    return not nul_in_cluster_names(con)


def nul_in_cluster_names(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a raw Slurm row's cluster name holds a NUL byte. The ranges of identities are
    cut on "cluster NUL job key" (``sql/analytics/create_slurm_rows_keyed.sql``), which then
    no longer sorts as the (cluster, job key) pairs the stored parts are read by, nor splits
    at its first NUL into cluster and job key: no stored resolution is reused, and no range is
    pushed into the scan split (``pipelines.analytics.build._range_params``)."""
    clusters = run_named(con, "analytics/slurm_row_clusters")["cluster"]
    return bool(clusters.str.contains("\x00", literal=True).any())


def unchanged_slurm_ingests(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The ingest ids whose raw Slurm rows the last build resolved as they are now: the same
    row count, file hash and load time in ``sql/analytics/slurm_ingest_rows.sql`` as in
    :data:`SLURM_INGESTS_TABLE` (nulls equal). Their identities keep their stored resolution
    unless another ingest touches them (``sql/analytics/slurm_dirty_keys.sql``)."""
    now = run_named(con, "analytics/slurm_ingest_rows")
    before = read_table(con, SLURM_INGESTS_TABLE)
    same = now.join(before, on=now.columns, how="semi", nulls_equal=True)
    return [int(i) for i in same["ingest_id"]]


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
    rows: pl.DataFrame,
    as_of: pl.DataFrame,
    stable: pl.DataFrame | None = None,
    latest: pl.DataFrame | None = None,
) -> dict[str, set[dt.date]]:
    """Per cluster, the days spanned by rows from min(submit, eligible, start) to end (or the
    cluster's ``as_of`` while open; with ``latest``, ``cluster, latest``: :func:`_latest_times`,
    an attempt still open runs to the later of the two, since it owns its GPUs' samples loaded
    after the cut-off too). A row whose wait is ``stable`` (the same job, submit and
    eligible times before and after: ``stable`` holds its :data:`_WAIT_KEY` and ``_from``, the
    earliest instant any version of it stops waiting, :func:`_divergence`) changed only from
    ``_from`` on: until then every version of the job waits, the same demand in both builds."""
    if rows.height == 0:
        return {}
    starts = [c for c in ("submit_at", "eligible_at", "start_at") if c in rows.columns]
    rows = rows.drop("as_of", strict=False).join(as_of, on="cluster", how="left")
    if "start_at" not in rows.columns:  # never-started rows
        rows = rows.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("start_at"))
    if stable is not None and stable.height:
        rows = rows.join(
            stable.select(*_WAIT_KEY, "_from").with_columns(pl.lit(True).alias("_stable")),
            on=_WAIT_KEY, how="left", nulls_equal=True,
        )  # fmt: skip
    else:
        rows = rows.with_columns(
            pl.lit(None, dtype=pl.Boolean()).alias("_stable"),
            pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("_from"),
        )
    lo = (
        pl.when(pl.col("_stable"))
        .then(pl.coalesce("_from", "start_at", pl.min_horizontal("end_at", "as_of")))
        .otherwise(pl.min_horizontal(*starts))
    )
    open_end = pl.col("as_of")
    if latest is not None:
        rows = rows.join(latest, on="cluster", how="left")
        open_end = (
            pl.when(pl.col("start_at").is_not_null())
            .then(pl.max_horizontal("as_of", "latest"))
            .otherwise(pl.col("as_of"))
        )
    spans = rows.select(
        "cluster", lo.alias("_lo"), pl.coalesce(pl.col("end_at"), open_end).alias("_hi")
    ).with_columns(pl.coalesce("_lo", "_hi").alias("_lo"), pl.coalesce("_hi", "_lo"))
    return _days_of_spans(spans)


def _days_of_spans(spans: pl.DataFrame) -> dict[str, set[dt.date]]:
    """Per cluster, the UTC days of the spans ``cluster, _lo, _hi`` (UTC datetimes; a span
    with a NULL side, or ending before it starts, touches none)."""
    days = (
        spans.drop_nulls()
        .with_columns(
            pl.col("_lo").dt.convert_time_zone("UTC").dt.date(),
            pl.col("_hi").dt.convert_time_zone("UTC").dt.date(),
        )
        .filter(pl.col("_hi") >= pl.col("_lo"))
        .select("cluster", pl.date_ranges("_lo", "_hi", interval="1d").alias("day"))
        .explode("day")
        .unique()
    )
    out: dict[str, set[dt.date]] = {}
    for c, d in days.iter_rows():
        out.setdefault(c, set()).add(d)
    return out


def _cutoff_crossed_days(
    jobs: pl.DataFrame, as_of: pl.DataFrame, old_as_of: pl.DataFrame
) -> dict[str, set[dt.date]]:
    """Per cluster whose cut-off moved, the UTC days (start to end) of the attempts of ``jobs``
    ending in (earlier cut-off, later cut-off]: running at the earlier one (an end after the
    cut-off is not known yet, :func:`metrics.waterfall.attempt_outcomes`) and ended at the
    later, so their leaf and lost time differ between the two builds over every hour they ran,
    though their rows are the same. Either cut-off may be the new one (a deleted load moves it
    back). A Slurm attempt never ends after its cluster's cut-off (the latest time of its own
    rows); a Kubernetes attempt can, its end taken from a Job or eviction event and the
    cut-off from the pods.

    Args:
        jobs: attempts, ``cluster, start_at, end_at`` (UTC).
        as_of, old_as_of: ``cluster, as_of``: the new and the previous build's cut-offs.
    """
    moved = (
        as_of.select("cluster", "as_of")
        .join(old_as_of.select("cluster", pl.col("as_of").alias("_old")), on="cluster")
        .filter(pl.col("as_of") != pl.col("_old"))
        .select(
            "cluster",
            pl.min_horizontal("as_of", "_old").alias("_after"),
            pl.max_horizontal("as_of", "_old").alias("_until"),
        )
    )
    if moved.height == 0 or jobs.height == 0:
        return {}
    crossed = (
        jobs.lazy()
        .select("cluster", "start_at", "end_at")
        .join(moved.lazy(), on="cluster")
        .filter((pl.col("end_at") > pl.col("_after")) & (pl.col("end_at") <= pl.col("_until")))
        .select("cluster", pl.col("start_at").alias("_lo"), pl.col("end_at").alias("_hi"))
        .unique()
        .collect()
    )
    return _days_of_spans(crossed)


def _interval_days(
    rows: pl.DataFrame, start: str, end: str, as_of: pl.DataFrame
) -> dict[str, set[dt.date]] | None:
    """Per cluster, the UTC days of each row's interval [``start``, ``end``] (an open end
    reaches the cluster's ``as_of``; with none, the start's day alone). None when a row has no
    start: it holds since before any day, so every day may change."""
    if rows.height == 0:
        return {}
    if rows[start].null_count():
        return None
    return _days_of_spans(
        rows.select("cluster", start, end)
        .join(as_of.select("cluster", "as_of"), on="cluster", how="left")
        .select(
            "cluster",
            pl.col(start).alias("_lo"),
            pl.coalesce(end, "as_of", start).alias("_hi"),
        )
    )


def _held_days(
    old: pl.DataFrame,
    new: pl.DataFrame,
    changed_jobs: pl.DataFrame,
    cuts: tuple[pl.DataFrame, ...],
) -> dict[str, set[dt.date]] | None:
    """Per cluster, the UTC days of the pieces of held GPUs (``old``: the stored
    :data:`HOLDS_TABLE`, ``new``: the build's) that may change an hourly row: those either
    side lacks, and every piece, either side, of an attempt of ``changed_jobs`` (``cluster,
    job_id, attempt``); each piece ``[start_at, end_at]``, an open one to each of ``cuts``'
    ``as_of`` (:func:`_interval_days`). None: such a piece has no start."""
    keys = ["cluster", "job_id", "attempt"]
    cols = [*keys, "start_at", "end_at"]
    schema = {k: new.schema[k] for k in keys}
    spans = new.select(cols)
    both = pl.concat([spans, old.select(cols).cast(spans.schema)])  # type: ignore[arg-type]
    moved = _changed_rows(old, new).select(keys)
    touched = pl.concat(
        [moved.cast(schema), changed_jobs.select(keys).cast(schema)]  # type: ignore[arg-type]
    ).unique()
    pieces = both.join(touched, on=keys, how="semi", nulls_equal=True)
    out: dict[str, set[dt.date]] = {}
    for cut in cuts:
        found = _interval_days(pieces, "start_at", "end_at", cut)
        if found is None:
            return None
        for c, ds in found.items():
            out.setdefault(c, set()).update(ds)
    return out


def _changed_rows(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``old`` or ``new`` (``as_of`` ignored) that the other lacks, as ``new``'s columns."""
    cols = [c for c in new.columns if c != "as_of"]
    if old.width == 0 or not set(cols) <= set(old.columns):
        return new
    o = old.select(cols).cast(new.select(cols).schema, strict=False)  # type: ignore[arg-type]
    n = new.select(cols)
    ho, hn = row_hashes(o), row_hashes(n)
    return pl.concat([n.filter(~hn.is_in(ho.implode())), o.filter(~ho.is_in(hn.implode()))])


def _changed_jobs(
    con: duckdb.DuckDBPyConnection, jobs: pl.DataFrame, slurm_changed: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, RowDiff | None]:
    """The rows of the stored ``core.jobs`` and of ``jobs`` (``as_of`` left out) that the other
    lacks, compared in DuckDB (:func:`pipelines.warehouse.row_diff`: only the rows that differ
    come back), with that difference, which the build then writes without comparing again;
    where the stored columns or types differ from ``jobs``', the stored table is read and
    compared in polars (:func:`_changed_rows`, duplicates not counted: at most it plans days a
    counted comparison would not), and there is no difference to write.

    With ``slurm_changed`` (``cluster, job_id`` of the jobs whose resolved Slurm rows changed
    since the stored build: every other Slurm attempt is its stored row), only the rows of
    ``sql/analytics/jobs_in_diff_scope.sql`` are compared on both sides: a year's new day
    compared about 7,000 jobs' attempts, not 2.1 M (BENCHMARKS.md)."""
    new = jobs.drop("as_of", strict=False)
    if slurm_changed is None:
        found = row_diff(con, "core.jobs", new)
    else:
        _k = slurm_changed.select(pl.col("cluster", "job_id").cast(pl.String())).unique()
        # The positions of the rows in scope, from the narrow key columns only (a join of
        # the whole frame would copy it), the rows of the changed job ids taken first by a
        # lookup of one column: the join then reads those few, not every attempt's keys (a
        # year's 2.15M attempts against 7,000 keys, a script of its own: 0.09 s and 50 MB →
        # 0.04 s and 1 MB).
        marked = _k.with_columns(pl.lit(True).alias("_in")).lazy()
        other = (
            pl.col("cluster").is_null()
            | pl.col("job_id").is_null()
            | pl.col("source").ne_missing("slurm")
        )
        at = (
            new.lazy()
            .select("cluster", "job_id", "source")
            .with_row_index("_at")
            .filter(pl.col("job_id").is_in(_k["job_id"].drop_nulls().implode()) | other)
            .join(marked, on=["cluster", "job_id"], how="left")
            .filter(pl.col("_in").fill_null(False) | other)
            .select("_at")
            .collect()
            .to_series()
        )
        scope = pl.zeros(new.height, dtype=pl.Boolean(), eager=True).scatter(at, True)
        with job_keys_table(con, _k):
            found = row_diff(
                con, "core.jobs", new, where=load_sql("analytics/jobs_in_diff_scope"), scope=scope
            )
    if found is None:
        return _changed_rows(read_table(con, "core.jobs"), jobs), None
    return found.rows, found


def wait_keys(
    changed: tuple[pl.DataFrame, ...],
    frames: tuple[pl.DataFrame, ...],
    as_of: pl.DataFrame,
    old_as_of: pl.DataFrame,
) -> pl.DataFrame:
    """``cluster, job_id`` of every wait spell (:func:`metrics.wait_spells`, one per attempt
    and per never-started job) that may differ between the stored build and this one.

    A spell is a function of its own row and its cluster's cut-off alone: an attempt started by
    the cut-off waits from eligible to start; otherwise the spell is censored at the cut-off
    (or ends at its cancel time), and a row eligible after the cut-off has none. So a spell
    differs only where its row changed (``changed``: the rows either build lacks, old and new)
    or where it reads the cut-off: a row of ``frames`` (the new attempts and never-started
    rows; an unchanged row is the same in both builds) with no start, a start, end or eligible
    time after the earlier of the two cut-offs, or a cluster without a cut-off in either build.

    Args:
        changed: frames with ``cluster, job_id`` (the rows that changed, either side).
        frames: the new frames with ``cluster, job_id, eligible_at, end_at`` and, for attempts,
            ``start_at`` (a frame without it is never-started rows).
        as_of, old_as_of: ``cluster, as_of``, the new and the stored cut-offs.

    A het job's components wait as one spell (:func:`metrics.het_jobs.het_wait_units`): a
    component's key is its het job's, the leader ``H+0`` (:func:`metrics.het_jobs.het_unit_id`),
    so a change to any component recomputes the one spell.

    Returns:
        The distinct keys, ``cluster`` and ``job_id`` (String).
    """
    cut = (
        as_of.join(old_as_of, on="cluster", how="full", coalesce=True, suffix="_old")
        .select(
            "cluster",
            pl.when(pl.col("as_of").is_null() | pl.col("as_of_old").is_null())
            .then(None)
            .otherwise(pl.min_horizontal("as_of", "as_of_old"))
            .alias("_cut"),
        )
        .unique("cluster")
    )
    keys = [f.select(pl.col("cluster", "job_id").cast(pl.String())) for f in changed if f.height]
    after = pl.col("_cut").is_null()
    for f in frames:
        times = [c for c in ("eligible_at", "start_at", "end_at") if c in f.columns]
        open_ = pl.col("start_at" if "start_at" in f.columns else "end_at").is_null()
        reads = after | open_ | pl.any_horizontal(pl.col(c) > pl.col("_cut") for c in times)
        keys.append(  # lazy: only these columns of the attempts are read, none copied whole
            f.lazy()
            .select("cluster", "job_id", *times)
            .join(cut.lazy(), on="cluster", how="left")
            .filter(reads)
            .select(pl.col("cluster", "job_id").cast(pl.String()))
            .collect()
        )
    if not keys:
        return pl.DataFrame(schema={"cluster": pl.String(), "job_id": pl.String()})
    # a het component's spell is its het job's, one for all its components (keyed H+0)
    return pl.concat(keys).with_columns(het_unit_id(pl.col("job_id"))).unique()


def _divergence(
    stable: pl.DataFrame, frames: tuple[pl.DataFrame, ...], cuts: tuple[pl.DataFrame, ...]
) -> pl.DataFrame:
    """``stable`` (wait keys, :data:`_WAIT_KEY`) with ``_from``: the earliest instant any
    version of the wait (a row of ``frames``, the changed rows old and new, under either
    cut-off of ``cuts``) stops waiting: its start, else its end or the cut-off, whichever is
    first. Until then every version waits, so the two builds' demand is the same; from then on
    it may differ (a job pending to the old cut-off that a late file shows started earlier
    changed from that start, not from the old cut-off)."""
    if stable.height == 0:
        return stable.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("_from"))
    parts = []
    for f in frames:
        if not set(_WAIT_KEY) <= set(f.columns):
            continue
        start = (
            pl.col("start_at")
            if "start_at" in f.columns
            else pl.lit(None, pl.Datetime("us", "UTC"))
        )
        for cut in cuts:
            parts.append(
                f.drop("as_of", strict=False)
                .select(*_WAIT_KEY, "end_at", start.alias("_start"))
                .cast({k: t for k, t in stable.schema.items()}, strict=False)  # type: ignore[arg-type]
                .join(cut, on="cluster", how="left")
                .select(
                    *_WAIT_KEY,
                    pl.coalesce("_start", pl.min_horizontal("end_at", "as_of"))
                    .cast(pl.Datetime("us", "UTC"))
                    .alias("_from"),
                )
            )
    if not parts:
        return stable.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("_from"))
    first = (
        pl.concat(parts)
        .join(stable, on=_WAIT_KEY, how="semi", nulls_equal=True)
        .group_by(_WAIT_KEY)
        .agg(pl.col("_from").min())
    )
    return stable.join(first, on=_WAIT_KEY, how="left", nulls_equal=True)


def _stable_waits(
    con: duckdb.DuckDBPyConnection,
    changed: tuple[pl.DataFrame, ...],
    old_pending: pl.DataFrame,
    new: tuple[pl.DataFrame, ...],
) -> pl.DataFrame:
    """The wait keys (:data:`_WAIT_KEY`) of the ``changed`` rows that both builds hold: among
    the stored attempts (``core.jobs``, looked up in DuckDB, ``sql/analytics/
    stored_wait_keys.sql``) or ``old_pending``, and among the ``new`` frames (nulls equal). Only
    the changed rows' keys are looked up: :func:`_span_days` reads no other."""
    schema = new[0].select(_WAIT_KEY).schema
    frames = [f.select(_WAIT_KEY).cast(schema) for f in changed if set(_WAIT_KEY) <= set(f.columns)]
    keys = pl.concat(frames).unique() if frames else pl.DataFrame(schema=schema)
    if keys.height == 0:
        return keys

    def semi(frame: pl.DataFrame) -> pl.DataFrame:
        # The frame's rows kept against the few keys (by their job ids first: of_keys), then
        # made distinct; keeping the keys against the frame instead hashed every attempt.
        found = frame.lazy().select(_WAIT_KEY).cast(schema, strict=False)  # type: ignore[arg-type]
        return of_keys(found, keys, _WAIT_KEY, nulls_equal=True).unique().collect()

    # Scanned by name (DuckDB's replacement scan), not registered: a view dropped inside the
    # build's transaction keeps its Arrow table until the commit (pipelines.warehouse.tables).
    _wait_keys = keys.to_arrow()
    stored = as_utc(con.sql(load_sql("analytics/stored_wait_keys")).pl()).cast(schema)
    del _wait_keys
    if set(_WAIT_KEY) <= set(old_pending.columns):
        stored = pl.concat([stored, semi(old_pending)])
    in_new = pl.concat([semi(f) for f in new if set(_WAIT_KEY) <= set(f.columns)])
    return stored.unique().join(in_new.unique(), on=_WAIT_KEY, how="semi", nulls_equal=True)


#: The stored pending-reason spells (:func:`changed_spell_jobs`).
SPELLS_TABLE = "core.pending_reason_spells"

#: The pieces of held GPUs of the attempts that did not hold ``gpus`` over their span
#: (:attr:`pipelines.core.CoreFrames.holds`, METRICS.md "GPU holding"): ``cluster, job_id,
#: attempt, start_at, end_at (NULL: held at the cut-off), gpus, host`` (per node, the pods'
#: node); the ``job_holds`` view and every reader that spreads an attempt's GPUs over time take
#: them added up over the nodes, the node reliability signals per node.
HOLDS_TABLE = "core.job_holds"


def changed_spell_jobs(
    con: duckdb.DuckDBPyConnection,
    spells: pl.DataFrame,
    diffs: dict[str, RowDiff] | None = None,
) -> pl.DataFrame:
    """``cluster, job_id`` (strings, unique) of the jobs whose pending-reason spells (Slurm's
    from squeue polls, Kueue's topology not-fit statements) differ from the stored
    :data:`SPELLS_TABLE`: the spells ``spells`` has or the stored table has, not both, row for
    row (every new spell where nothing is stored).

    A spell moves without the job's row or its wait's days changing: a poll of the next day
    ends the last spell of the day before, a later events file states a not-fit over an earlier
    wait. A job's large-job wait causes read its spells over its whole wait, so an incremental
    build recomputes these jobs' causes (:func:`pipelines.analytics.build._large_waits_on_days`).
    The spells are compared in DuckDB (:func:`pipelines.warehouse.row_diff`: only the rows that
    differ come back), and the difference goes into ``diffs``, by table, for the build to write
    without comparing again; where the stored columns differ, the stored table is read and
    compared whole.

    Args:
        con: the warehouse (reads :data:`SPELLS_TABLE` when it exists).
        spells: this build's spells, :data:`pipelines.core.pending_spells.SPELL_SCHEMA` columns,
            as the build writes them.
        diffs: where the difference found is kept (:attr:`BuildPlan.diffs`); None: not kept.
    """
    keys = pl.col("cluster", "job_id").cast(pl.String())
    found = row_diff(con, SPELLS_TABLE, spells)
    if found is not None:
        if diffs is not None:
            diffs[SPELLS_TABLE] = found
        return found.rows.select(keys).unique()
    stored = read_table(con, SPELLS_TABLE) if table_exists(con, SPELLS_TABLE) else spells.clear()
    return _changed_rows(stored, spells).select(keys).unique()


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
    topology: pl.DataFrame,
    node_down: pl.DataFrame,
    full: bool = False,
    slurmd_pairs: pl.DataFrame | None = None,
    slurm_changed: pl.DataFrame | None = None,
    slurmd_map: pl.DataFrame | None = None,
    pod_jobs: pl.DataFrame | None = None,
    holds: pl.DataFrame | None = None,
) -> BuildPlan:
    """Decide between a full and an incremental rebuild, and the affected cluster-days.

    Args:
        con: the warehouse (read: ``raw.ingests``, the telemetry tables ``raw.dcgm_samples``
            and ``raw.dcgm_hourly`` (the spans of new loads; the samples' pod columns where the
            pods the slurmd map names changed), the previous ``core.jobs``,
            ``core.topology``, ``analytics.build_pending``, :data:`NODE_DOWN_TABLE`,
            :data:`INGESTS_TABLE`, :data:`TELEMETRY_SPANS_TABLE`, :data:`SLURMD_MAP_TABLE`,
            ``analytics.occupancy_hourly`` and ``analytics.build_state``).
        cfg: configuration (registry, inventory, thresholds).
        registry_path: the allocation registry in use.
        jobs: the new ``core.jobs`` frame (attempts); pending: the new never-started rows;
        occupancy: the new ``occupancy_hourly`` frame; nodes: the new ``core.nodes``;
        as_of: ``cluster, as_of`` (new cut-offs); topology: the new ``core.topology``;
        node_down: the new node down/drain intervals (``cluster, node, start_at, end_at``).
        full: force a full rebuild.
        slurmd_pairs: ``cluster, k8s_cluster`` of the Slurm clusters whose slurmd pods run on a
            Kubernetes cluster (their GPUs' XID events are the Slurm cluster's).
        slurm_changed: ``cluster, job_id`` of the jobs whose resolved Slurm rows the build
            changed in ``core.slurm_jobs`` (None: unknown, every attempt is compared).
        slurmd_map: the new slurmd map (``analytics.slurm_node_map`` rows), compared with the
            stored one (:func:`_moved_map_spans`): where it places the slurmd pods' samples
            otherwise, the days of those times that the pair's telemetry loads cover are
            planned (:func:`_map_telemetry_days`), and the FAILED attempts an XID event among
            them may decide (:func:`_xid_attempt_days`); where the pods it names changed, the
            days of those pods' stored samples (:func:`_map_pod_spans`). None: not compared.
        pod_jobs: the new pod lives (:data:`POD_LIVES_TABLE` rows), compared with the stored
            ones: every day of the stored samples of a pod whose lives changed, or whose job's
            rows did (:func:`_pod_sample_spans`). None: not compared.
        holds: the new pieces of held GPUs (:data:`HOLDS_TABLE` rows), compared with the
            stored ones: every day of the pieces that changed and of every piece of an attempt
            whose row changed, old and new (a piece can outlast its attempt's ``end_at``).
            None: not compared.

    Returns:
        The plan; ``days`` holds every cluster-day whose time-keyed rows may differ from the
        stored ones.
    """
    _ensure_state(con)
    fp = _fingerprint(cfg, registry_path, nodes)
    top = con.execute(load_sql("analytics/max_ingest_id")).fetchall()[0][0]
    state = con.execute(load_sql("analytics/latest_build_state")).fetchall()
    build_id = state[0][0] + 1 if state else 1

    loads = run_named(con, "analytics/ingest_identities")

    def _full(reason: str) -> BuildPlan:
        return BuildPlan(True, reason, {}, build_id, int(top), fp, ingests=loads)

    if full:
        return _full("requested")
    if not state:
        return _full("nothing built before")
    # The per-job tables too: an incremental build rewrites only some jobs' rows of each, and
    # keeps the others' stored rows as they are.
    needed = ("core.jobs", "core.topology", "analytics.build_pending", NODE_DOWN_TABLE,
              INGESTS_TABLE, TELEMETRY_SPANS_TABLE, GRES_JOBS_TABLE, POD_LIVES_TABLE,
              POD_DAYS_TABLE, DCGM_HOSTS_TABLE, HOLDS_TABLE, *INCREMENTAL_TABLES,
              "analytics.job_gpu_summary", "analytics.time_to_start_jobs",
              "analytics.time_to_start_counts",
              "analytics.job_placement", "analytics.large_job_wait_causes")  # fmt: skip
    if not all(table_exists(con, t) for t in needed):
        return _full("a table is missing")
    _bid, _mark, old_fp, old_as_of_json = state[0]
    if old_fp != fp:
        return _full("registry, inventory, nodes, thresholds, loss policy or code changed")
    old_as_of = pl.DataFrame(
        [(c, dt.datetime.fromisoformat(a)) for c, a in json.loads(old_as_of_json).items()],
        schema={"cluster": pl.String(), "as_of": pl.Datetime("us", "UTC")},
        orient="row",
    )
    old_occ = read_table(con, "analytics.occupancy_hourly")
    # A build with no cluster that has a cut-off and occupancy hours keeps no window row (a
    # full build's placeholder); with one, a full build writes every day of every cluster's
    # telemetry. When that turns over, either way, no plan of days matches it.
    had = bool(with_spells(old_as_of, old_occ).height)
    if bool(with_spells(as_of, occupancy).height) != had:
        return _full(
            "no cluster has a cut-off and occupancy hours any more"
            if had
            else "the first cluster with a cut-off and occupancy hours"
        )
    days: dict[str, set[dt.date]] = {}

    def add(found: dict[str, set[dt.date]]) -> None:
        for c, ds in found.items():
            days.setdefault(c, set()).update(ds)

    # 1. Loads new or changed since the last build, and loads deleted since (each compared
    # whole with the last build's copy, not by a watermark on ids: a deleted load's id can be
    # given again): the day each file names; DCGM: the days its samples cover, and the day after
    # (whose XID events compare its first samples with the last ones before it), and the day of
    # each last-XID series' first sample after them where that is more than a day later (a GPU
    # not scraped for days: :func:`_xid_samples_after_gaps`); hourly DCGM
    # aggregates: the days its hours and the hour after them cover (a deleted load's: as the
    # last build kept them).
    seen = read_table(con, INGESTS_TABLE)
    old_spans = read_table(con, TELEMETRY_SPANS_TABLE)
    new = loads.join(seen, on=_LOAD_COLUMNS, how="anti", nulls_equal=True)
    gone = seen.join(loads, on=_LOAD_COLUMNS, how="anti", nulls_equal=True)
    kept = loads.join(seen, on=_LOAD_COLUMNS, how="semi", nulls_equal=True)
    new_spans = _new_spans(con, new)
    telemetry = pl.col("source").is_in(list(_TELEMETRY_SPANS))
    xid_sources = [s for s, (table, _t) in _TELEMETRY_SPANS.items() if table == _XID_TABLE]
    hourly_sources = [
        s for s, (table, _t) in _TELEMETRY_SPANS.items() if table == _HOURLY_XID_TABLE
    ]
    xid_spans = [pl.DataFrame(schema=_SPANS_SCHEMA)]
    for loaded, spans in ((new, new_spans), (gone, old_spans)):
        # a load of a kind without raw rows (a file recorded for its rejects only) is left out
        loaded = loaded.filter(pl.col("source").is_in(list(raw_sources())))
        covered = spans.join(loaded.filter(telemetry).select("ingest_id", "source"), on="ingest_id")
        # a 5-minute load: its days and the next (whose XID events compare its first samples
        # with the last ones before it); an hourly load: its days and that of the hour after
        # its last (an hourly XID event is a value the GPU did not read the hour before, and
        # job_gpu_summary counts it for every attempt holding the GPU then)
        for c, lo, hi, source in covered.select("cluster", "lo", "hi", "source").iter_rows():
            after = _DAY if source in xid_sources else _HOUR if source in hourly_sources else None
            add({c: _days(lo, hi if after is None else hi + after)})
        changed = covered.filter(pl.col("source").is_in(xid_sources)).drop("source")
        xid_spans.append(changed)
        # an hourly aggregates' load: the XIDs of its hours and of the hour after them (each
        # hour's is compared with the GPU's hour before), within a day of its last hour
        xid_spans.append(covered.filter(pl.col("source").is_in(hourly_sources)).drop("source"))
        later = _xid_samples_after_gaps(con, changed)
        for c, ts in later.iter_rows():
            add({c: _days(ts, ts)})
        xid_spans.append(
            later.select(
                pl.lit(None, pl.Int64()).alias("ingest_id"),
                "cluster",
                pl.col("ts").alias("lo"),
                pl.col("ts").alias("hi"),
            )
        )
        for file, cluster in loaded.filter(~telemetry).select("file", "cluster").iter_rows():
            day = file_day(Path(file))
            if day is None or cluster is None:
                return _full(f"{file}: loaded file names no day or cluster")
            add({cluster: {dt.date.fromisoformat(day)}})
    # 1b. An XID event in those samples (new, or gone), or at the next sample after them, may
    # turn a FAILED attempt ending within the XID window after it into an infrastructure
    # failure, a leaf all its hours take. Likewise an hourly aggregate's XID in the hours of a
    # load or the hour after them (raised in (H − 90 s, H + 1h]: the attempts ending within
    # [lo − 90 s, hi + 2h + the window], inside the rule's span), or one a 5-minute load's
    # samples now stand for, or no longer do (an hour with 5-minute XID samples takes its
    # XIDs from them: inside their span).
    add(_xid_attempt_days(jobs, pl.concat(xid_spans), slurmd_pairs))
    # 1c. Even with no DCGM load changed, a changed slurmd map moves XID events: where it
    # changed, it may place an event on another node than before. The same rule, over those
    # times. The pairs come from the configuration too: a Slurm cluster whose new map is empty
    # has no row in ``slurmd_pairs``, yet its stored intervals' events go back to its
    # Kubernetes cluster.
    pairs = pl.DataFrame(
        [(c.name, c.kubernetes_cluster) for c in cfg.clusters if c.kubernetes_cluster],
        schema={"cluster": pl.String(), "k8s_cluster": pl.String()},
        orient="row",
    )
    if slurmd_pairs is not None:
        pairs = pl.concat([pairs, slurmd_pairs.select(pairs.columns).cast(pairs.schema)])
    pairs = pairs.unique()
    if slurmd_map is not None:
        stored_map = (
            read_table(con, SLURMD_MAP_TABLE)
            if table_exists(con, SLURMD_MAP_TABLE)
            else pl.DataFrame()
        )
        moved = _moved_map_spans(stored_map, slurmd_map, pairs)
        add(_xid_attempt_days(jobs, moved))
        # ... and the telemetry samples themselves: every hour where the map places a sample
        # otherwise (GPU activity, the waterfall's idle, the GPU summaries of both clusters)
        add(_map_telemetry_days(moved, pl.concat([old_spans, new_spans]), pairs))
        # ... and every sample of a pod that entered or left the map, whatever its time: its
        # labels are cleared on all of them, on its Kubernetes cluster's rows (the samples the
        # map places on a Slurm node are among the moved spans above). An XID event keeps its
        # cluster, host and time, all that reads it, so no attempt's leaf changes with them.
        pod_spans = _map_pod_spans(con, stored_map, slurmd_map, pairs)
        add(_days_of_spans(pod_spans.rename({"lo": "_lo", "hi": "_hi"})))
    spans_now = pl.concat(
        [old_spans.join(kept.select("ingest_id"), on="ingest_id", how="semi"), new_spans]
    ).sort("ingest_id", "cluster")
    # An attempt open at either cut-off owns its GPUs' samples up to the latest one loaded,
    # the deleted loads' included (steps 1d and 2).
    latest = _latest_times(
        pl.concat([as_of, old_as_of], how="vertical_relaxed"),
        pl.concat([old_spans, new_spans], how="vertical_relaxed"),
        pairs,
    )
    # 1d. A per-job GPU index map load new or deleted since: every day its jobs' attempts ran
    # (the map attributes their GPUs' samples over each attempt's whole run, not the file's
    # day alone).
    gres = [
        frame.filter(pl.col("source") == _GRES_SOURCE)["ingest_id"].to_list()
        for frame in (new, gone)
    ]
    add(_gres_days(con, gres[0], gres[1], jobs, latest))

    # 2. Jobs and never-started jobs that changed: every day of their span (old and new rows).
    # The stored attempts are compared in DuckDB, never read whole (:func:`_changed_jobs`).
    old_pending = read_table(con, "analytics.build_pending")
    changed_jobs, jobs_diff = _changed_jobs(con, jobs, slurm_changed)
    changed_pending = _changed_rows(old_pending, pending)
    stable = _stable_waits(con, (changed_jobs, changed_pending), old_pending, (jobs, pending))
    stable = _divergence(stable, (changed_jobs, changed_pending), (as_of, old_as_of))
    for changed in (changed_jobs, changed_pending):
        add(_span_days(changed, as_of, stable, latest))
        add(_span_days(changed, old_as_of, stable, latest))

    # 2a. A pod-labelled sample goes to the job of its pod's life at its time, with the
    # team of that job's latest attempt where no attempt holds it (its tail after
    # the pod ended, or samples loaded before the pod): where a pod's lives or its job's rows
    # changed, every day of its stored samples.
    diffs = {} if jobs_diff is None else {"core.jobs": jobs_diff}
    if pod_jobs is not None:
        spans, lives_diff = _pod_sample_spans(con, pod_jobs, changed_jobs)
        add(_days_of_spans(spans.rename({"lo": "_lo", "hi": "_hi"})))
        # ... and an XID event among those samples whose host is the exporter's own pod is
        # the node of its pod's life (metrics_build._xid_events): the FAILED attempts it may
        # decide, on the old node or the new one
        add(_xid_attempt_days(jobs, spans, slurmd_pairs))
        if lives_diff is not None:  # written by record_build without comparing again
            diffs[POD_LIVES_TABLE] = lives_diff
    # 2b'. An attempt's pieces of held GPUs reach past its end where its pods held theirs
    # through an eviction's grace period, so a changed attempt's days (its start to its end,
    # above) can miss a piece's: every day of each piece that changed, and of every piece, old
    # and new, of an attempt whose row changed (its leaf is its pieces' leaf), at either cut-off.
    if holds is not None:
        found = _held_days(read_table(con, HOLDS_TABLE), holds, changed_jobs, (as_of, old_as_of))
        if found is None:
            return _full("a piece of held GPUs without a start changed")
        add(found)
    # the DCGM sample loads new and deleted since, whose pod days record_build keeps
    samples = [frame.filter(pl.col("source").is_in(xid_sources))["ingest_id"].to_list()
               for frame in (new, gone)]  # fmt: skip

    # 2b. Topology maps and node down/drain intervals that changed (old and new rows): every
    # day of their intervals, whose topology tables read them node by node.
    for what, table, new_rows, (start, end) in (
        ("topology map", "core.topology", topology, ("valid_from", "valid_to")),
        ("node down interval", NODE_DOWN_TABLE, node_down, ("start_at", "end_at")),
    ):
        moved = _changed_rows(read_table(con, table), new_rows)
        for cut in (as_of, old_as_of):
            found = _interval_days(moved, start, end, cut)
            if found is None:
                return _full(f"a {what} without a start changed")
            add(found)

    # 3. Hours whose capacity, down time or allocation changed (node events, inventory).
    occ_cols = ["cluster", "hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s",
                "allocated_gpu_s", "capacity_source"]  # fmt: skip
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
    # An attempt ending between them was running at one cut-off and not at the other (a
    # Kubernetes attempt's end can come from an event after the pods' latest time): its leaf
    # and lost time change over every day it ran.
    add(_cutoff_crossed_days(jobs, as_of, old_as_of))
    keys = changed_jobs.select("cluster", "job_id").unique()
    waits = wait_keys(
        (changed_jobs, changed_pending),
        (jobs, pending),
        with_spells(as_of, occupancy),
        with_spells(old_as_of, old_occ),
    )
    return BuildPlan(
        False, "incremental", days, build_id, int(top), fp, keys, waits, ingests=loads,
        spans=spans_now, diffs=diffs, gres_loads=(gres[0], gres[1]),
        sample_loads=(samples[0], samples[1]),
    )  # fmt: skip


def with_spells(as_of: pl.DataFrame, occupancy: pl.DataFrame) -> pl.DataFrame:
    """The cut-offs (``cluster, as_of``, in ``as_of``'s order) of the clusters whose wait
    spells and other metric-engine tables a build computes: a cut-off and occupancy hours
    (``cluster`` rows of ``occupancy``). The one rule for
    :func:`pipelines.analytics.metrics_build.build_metric_tables`, which computes these
    clusters only, and for the plan: a cluster left out reads to :func:`wait_keys` as one
    without a cut-off, so every job of it is named (a cluster with a cut-off but no occupancy
    hour, such as one whose first file holds queued jobs only, has no spell stored; one that
    lost its hours keeps none)."""
    return as_of.filter(pl.col("as_of").is_not_null()).join(
        occupancy.select("cluster").unique(), on="cluster", how="semi", maintain_order="left"
    )


def _xid_samples_after_gaps(con: duckdb.DuckDBPyConnection, spans: pl.DataFrame) -> pl.DataFrame:
    """The samples (``cluster, ts``, UTC) of the last-XID series whose predecessor may lie in one
    of ``spans`` (``cluster, lo, hi``: the samples of DCGM loads new or deleted since the last
    build) and that lie more than a day after it: per span and series, the first sample after
    ``hi`` and the first valued one, where they are more than a day later
    (``sql/analytics/xid_next_samples_after_gap.sql``). dcgm-exporter's last-XID value does not
    reset (NVIDIA/dcgm-exporter#500): a GPU not scraped for days reads the XID it held, an event
    only where its predecessor was another value, so whether such a sample is an XID can change
    with the span's samples. Empty without spans."""
    spans = spans.filter(pl.col("hi").is_not_null() & pl.col("cluster").is_not_null())
    if spans.is_empty() or not table_exists(con, _XID_TABLE):
        return pl.DataFrame(schema={"cluster": pl.String(), "ts": pl.Datetime("us", "UTC")})
    found = run_named(
        con,
        "analytics/xid_next_samples_after_gap",
        {"cs": spans["cluster"].to_list(), "his": spans["hi"].to_list()},
    )
    return found.select(
        pl.col("cluster").cast(pl.String()), pl.col("ts").dt.cast_time_unit("us")
    ).sort("cluster", "ts")


def _xid_attempt_days(
    jobs: pl.DataFrame, spans: pl.DataFrame, slurmd_pairs: pl.DataFrame | None = None
) -> dict[str, set[dt.date]]:
    """Per cluster, the UTC days (start to end) of the FAILED attempts of ``jobs`` whose
    infrastructure-failure leaf an XID event of ``spans`` (``cluster, lo, hi``: the samples of
    5-minute DCGM loads new or deleted since the last build, or the times at which a changed
    slurmd map places events otherwise, :func:`_moved_map_spans`) may decide.

    An XID event is a change of a GPU's value from its previous sample
    (``sql/analytics/xid_events.sql``), so such a load changes the events among its own samples
    and the one at the next sample after them, taken as within a day (the day after a load is
    planned on the same grounds). An event at t decides the FAILED attempts on its node ending
    in (t − :data:`metrics.waterfall.XID_GRACE_MAX_S`, t + :data:`metrics.waterfall.XID_WINDOW_S`]
    (one first scraped after the end may have been raised before it), and their leaf
    (``failed_work_infra`` or ``failed_work_user``, :func:`metrics.waterfall.attempt_outcomes`)
    holds over every hour they ran: so the attempts of the span's cluster ending in
    [lo − the grace, hi + 1 day + the window]. The spans of hourly DCGM loads count alike (an
    XID of hour H, or of the hour after the load's last, decides the attempts ending in
    (H − :data:`metrics.waterfall.XID_SCRAPE_GRACE_S`, H + 1h + the window]), and an hour with
    5-minute XID samples takes its XIDs from them, not from its hourly row
    (:func:`pipelines.analytics.metrics_build._hourly_xid_events`), so a span reaches back to
    the start of the hour holding lo less that grace too. A span
    of a Kubernetes cluster counts for the Slurm clusters its slurmd pods run (``slurmd_pairs``:
    ``cluster, k8s_cluster``), to which their GPUs' XIDs are moved
    (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`)."""
    if spans.is_empty() or jobs.is_empty():
        return {}
    spans = spans.select("cluster", "lo", "hi")  # a load's spans carry its ingest_id too
    if slurmd_pairs is not None and slurmd_pairs.height:
        lent = spans.join(
            slurmd_pairs.select(
                pl.col("k8s_cluster").alias("cluster"), pl.col("cluster").alias("_to")
            ).unique(),
            on="cluster",
        )
        spans = pl.concat([spans, lent.select(pl.col("_to").alias("cluster"), "lo", "hi")])
    window = _DAY + dt.timedelta(seconds=XID_WINDOW_S)
    grace = dt.timedelta(seconds=XID_GRACE_MAX_S)
    # an hourly aggregate's XID of the hour holding lo, which 5-minute samples from lo on may
    # stand for or no longer (metrics_build._hourly_xid_events), was raised after the hour
    # less the scrape grace
    hour_lo = pl.col("lo").dt.truncate("1h") - dt.timedelta(seconds=XID_SCRAPE_GRACE_S)
    failed = jobs.lazy().filter(
        (base_state() == "FAILED")
        & pl.col("start_at").is_not_null()
        & pl.col("end_at").is_not_null()
    )
    hit = (
        failed.select("cluster", "start_at", "end_at")
        .join(spans.lazy().select("cluster", "lo", "hi"), on="cluster")
        .filter(
            (pl.col("end_at") >= pl.min_horizontal(pl.col("lo") - grace, hour_lo))
            & (pl.col("end_at") <= pl.col("hi") + window)
        )
        .select("cluster", pl.col("start_at").alias("_lo"), pl.col("end_at").alias("_hi"))
        .unique()
        .collect()
    )
    return _days_of_spans(hit)


def _map_telemetry_days(
    spans: pl.DataFrame, telemetry: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> dict[str, set[dt.date]]:
    """Per cluster, the UTC days of the spans ``spans`` (``cluster, lo, hi``: the times at which
    a changed slurmd map places a sample otherwise, :func:`_moved_map_spans`) that a telemetry
    load of the pair covers: each span is cut to each load's times (``telemetry``:
    :data:`TELEMETRY_SPANS_TABLE` rows, ``cluster, lo, hi`` per load, the stored and the new)
    of its own cluster or of a cluster paired with it in ``pairs`` (``cluster, k8s_cluster``:
    the Slurm cluster's samples are its Kubernetes cluster's, loaded under either name), and
    the days of the pieces are taken. A slurmd pod's samples count on the Slurm node the map
    names at their time, else on the Kubernetes node
    (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`), so every hour of such a span
    that holds a sample may change: the GPU activity, the waterfall's idle and the GPU summaries
    of the Slurm cluster and of its Kubernetes cluster (both are among ``spans``). Times no load
    of the pair covers hold no sample: no day (nor for a load or span with a NULL end)."""
    if spans.is_empty() or telemetry.is_empty():
        return {}
    own = spans.select("cluster").unique().with_columns(pl.col("cluster").alias("_source"))
    partners = [own]
    if pairs is not None and pairs.height:
        p = pairs.select("cluster", "k8s_cluster").cast(pl.String()).drop_nulls()
        partners += [
            p.select("cluster", pl.col("k8s_cluster").alias("_source")),
            p.select(pl.col("k8s_cluster").alias("cluster"), pl.col("cluster").alias("_source")),
        ]
    loads = telemetry.select(
        pl.col("cluster").alias("_source"), pl.col("lo").alias("_t0"), pl.col("hi").alias("_t1")
    ).drop_nulls()
    pieces = (
        spans.drop_nulls()
        .join(pl.concat(partners).unique(), on="cluster")
        .join(loads, on="_source")
        .select(
            "cluster",
            pl.max_horizontal("lo", "_t0").alias("_lo"),
            pl.min_horizontal("hi", "_t1").alias("_hi"),
        )
        .filter(pl.col("_lo") <= pl.col("_hi"))
    )
    return _days_of_spans(pieces)


def _latest_times(
    as_of: pl.DataFrame, telemetry: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """``cluster, latest``: per cluster, the later of its cut-off (``as_of``: ``cluster,
    as_of``) and its telemetry loads' last sample (``telemetry``: :data:`TELEMETRY_SPANS_TABLE`
    rows), a Slurm cluster run in slurmd pods counting its Kubernetes cluster's (``pairs``:
    ``cluster, k8s_cluster``: those samples are moved onto its nodes): as far as an attempt
    still open owns its GPUs' samples."""
    lent = (
        telemetry.join(
            pairs.select(pl.col("k8s_cluster").alias("cluster"), pl.col("cluster").alias("_to")),
            on="cluster",
        ).select(pl.col("_to").alias("cluster"), pl.col("hi").alias("latest"))
        if pairs is not None and pairs.height
        else pl.DataFrame(schema={"cluster": pl.String(), "latest": telemetry.schema["hi"]})
    )
    return (
        pl.concat(
            [
                as_of.select("cluster", pl.col("as_of").alias("latest")),
                telemetry.select("cluster", pl.col("hi").alias("latest")),
                lent,
            ],
            how="vertical_relaxed",
        )
        .drop_nulls()
        .group_by("cluster")
        .agg(pl.col("latest").max())
    )


def _gres_days(
    con: duckdb.DuckDBPyConnection,
    new_ids: list[int],
    gone_ids: list[int],
    jobs: pl.DataFrame,
    latest: pl.DataFrame,
) -> dict[str, set[dt.date]]:
    """Per cluster, the UTC days on which the attempts ran of the jobs whose map rows the per-job
    GPU index map loads ``new_ids`` may change (``sql/analytics/gres_changed_jobs.sql``: a row
    (job, start, node) that no other load holds with the same indices and GRES, or that another
    holds with others; a daily snapshot that names a running job with the indices it had changes
    nothing), and of every job the loads ``gone_ids`` named (deleted since: their jobs as
    :data:`GRES_JOBS_TABLE` kept them).

    The map (:func:`metrics.attribution.gres_holdings`) gives an attempt of the job it names
    (``job_id`` = sacct's JobIDRaw) its GPU indices, and the samples of those GPUs over the
    attempt's whole run are attributed by it: a snapshot taken on one day changes the activity
    of every day the attempt ran. Every started Slurm attempt of each job named is taken, from
    its start to its end (``jobs``: the new ``core.jobs``), or while still open, to its
    cluster's ``latest`` time (``cluster, latest``: :func:`_latest_times`). A job's attempts
    that changed since are planned by their own rows, old and new."""
    keys = [pl.DataFrame(schema=_GRES_JOBS_SCHEMA)]
    if new_ids and table_exists(con, "raw.slurm_job_gres"):
        keys.append(run_named(con, "analytics/gres_changed_jobs", {"ids": new_ids}))
    if gone_ids:
        keys.append(run_named(con, "analytics/gres_jobs_of_stored_loads", {"ids": gone_ids}))
    named = pl.concat(
        [k.select("cluster", "job_id") for k in keys], how="vertical_relaxed"
    ).unique()
    if named.is_empty() or jobs.is_empty():
        return {}
    spans = (
        jobs.lazy()
        .filter((pl.col("source") == "slurm") & pl.col("start_at").is_not_null())
        .select(
            "cluster",
            pl.coalesce("job_id_raw", "job_id").alias("job_id"),
            "start_at",
            "end_at",
        )
        .join(named.lazy(), on=["cluster", "job_id"], how="semi")
        .join(latest.lazy(), on="cluster", how="left")
        .select(
            "cluster",
            pl.col("start_at").alias("_lo"),
            pl.coalesce("end_at", "latest").alias("_hi"),
        )
        .collect()
    )
    return _days_of_spans(spans)


def _map_pod_spans(
    con: duckdb.DuckDBPyConnection,
    old: pl.DataFrame,
    new: pl.DataFrame,
    pairs: pl.DataFrame,
) -> pl.DataFrame:
    """``cluster, lo, hi`` (UTC): per Kubernetes cluster and UTC day, the first and last time of
    its stored DCGM samples whose pod entered or left the slurmd pods the map names (the pods of
    ``new``, a new ``analytics.slurm_node_map``, against those of ``old``, the stored one).

    :func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm` clears a slurmd pod's ``namespace``
    and ``pod`` on every sample of it, inside its map intervals or not, so a pod that enters
    the map (a node comment polled late, or a native pod's name taken by a slurmd pod) changes
    the attribution of its samples at any time, where :func:`_moved_map_spans` sees only the
    intervals that moved; and one that leaves it gives its samples their labels back. Those
    samples' days are read from the loads' pod days (:data:`POD_DAYS_TABLE`,
    ``sql/analytics/pod_sample_days.sql``, only when the pods named changed), not from the
    samples.

    Args:
        con: the warehouse (:data:`POD_DAYS_TABLE`, when there is one).
        old, new: slurm node map rows (``cluster`` the Slurm cluster, ``namespace``, ``pod``);
            ``old`` without those columns: no earlier map.
        pairs: ``cluster, k8s_cluster`` (a Slurm cluster's pods run on its Kubernetes
            cluster; a Slurm cluster without a pair has no samples to clear).
    """
    cols = ["cluster", "namespace", "pod"]

    def pods(frame: pl.DataFrame) -> pl.DataFrame:
        if not frame.width or not set(cols) <= set(frame.columns):
            return pl.DataFrame(schema={c: pl.String() for c in cols})
        return frame.select(pl.col(cols).cast(pl.String())).drop_nulls()

    # compared by row hash, as the intervals are (a map holds a row per pod life: hundreds of
    # thousands on a Slinky fleet of a year), then paired with the Kubernetes clusters
    o, n = pods(old), pods(new)
    ho, hn = row_hashes(o), row_hashes(n)
    changed = (
        pl.concat([n.filter(~hn.is_in(ho.implode())), o.filter(~ho.is_in(hn.implode()))])
        .unique()
        .join(pairs.select(pl.col("cluster", "k8s_cluster").cast(pl.String())), on="cluster")
        .select(pl.col("k8s_cluster").alias("cluster"), "namespace", "pod")
        .unique()
    )
    return _pod_days(con, changed)


def _pod_sample_spans(
    con: duckdb.DuckDBPyConnection, new: pl.DataFrame, changed_jobs: pl.DataFrame
) -> tuple[pl.DataFrame, RowDiff | None]:
    """``cluster, lo, hi`` (UTC): per cluster and UTC day, the first and last time of the
    stored DCGM samples of the pods whose lives differ between the stored
    :data:`POD_LIVES_TABLE` and ``new`` (this build's, :data:`_POD_LIVES_COLUMNS`), or whose
    job is among ``changed_jobs`` (``cluster, job_id``: rows that changed, old and new); and
    the lives' row difference (:func:`pipelines.warehouse.row_diff`, compared in DuckDB; None
    where the stored table cannot be compared so, and is then read and compared whole).

    :func:`metrics.attribution.attribute_samples` gives a pod-labelled sample the job of its
    pod's life at the sample's time and that job's team, also where no attempt of the job holds
    it (samples after the pod ended, or loaded before the pod was): a pod file loaded later, a
    pod name taken again by a later pod, or a Workload's queue (team) changed moves those
    samples, on days no changed row spans. A changed job's pods are among the new lives (a life
    it had and lost is among the changed ones). The days come from the loads' pod days
    (:data:`POD_DAYS_TABLE`, ``sql/analytics/pod_sample_days.sql``), read only when some pod
    qualifies: a build that sees new pods (most builds of a Kubernetes cluster) reads that
    table, never the samples.
    """
    cols = ["cluster", "namespace", "pod"]
    lives = new.select(_POD_LIVES_COLUMNS)
    found = row_diff(con, POD_LIVES_TABLE, lives)
    moved = (
        found.rows
        if found is not None
        else _changed_rows(
            read_table(con, POD_LIVES_TABLE)
            if table_exists(con, POD_LIVES_TABLE)
            else lives.clear(),
            lives,
        )
    )
    jobs = changed_jobs.select(pl.col("cluster", "job_id").cast(pl.String())).unique()
    named = [
        moved.select(pl.col(cols).cast(pl.String())),
        lives.join(jobs, on=["cluster", "job_id"], how="semi").select(
            pl.col(cols).cast(pl.String())
        ),
    ]
    return _pod_days(con, pl.concat(named).unique().drop_nulls()), found


def _pod_days(con: duckdb.DuckDBPyConnection, pods: pl.DataFrame) -> pl.DataFrame:
    """``cluster, lo, hi`` (UTC): per cluster and UTC day, the first and last time of the
    stored DCGM samples of ``pods`` (``cluster, namespace, pod``), from the loads' pod days
    (:data:`POD_DAYS_TABLE`, ``sql/analytics/pod_sample_days.sql``); none without pods or
    without that table."""
    schema = {"cluster": pl.String(), "lo": _SPANS_SCHEMA["lo"], "hi": _SPANS_SCHEMA["hi"]}
    if pods.is_empty() or not table_exists(con, POD_DAYS_TABLE):
        return pl.DataFrame(schema=schema)
    found = run_named(
        con,
        "analytics/pod_sample_days",
        {name: pods[c].to_list() for name, c in
         (("clusters", "cluster"), ("namespaces", "namespace"), ("pods", "pod"))},
    )  # fmt: skip
    return found.cast(schema)  # type: ignore[arg-type]


def _moved_map_spans(
    old: pl.DataFrame, new: pl.DataFrame, slurmd_pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """``cluster, lo, hi`` (UTC): the times at which the slurmd map ``new``
    (``analytics.slurm_node_map`` rows, :data:`pipelines.core.slurm_on_k8s.NODE_MAP_SCHEMA`)
    may place an XID event otherwise than the stored map ``old`` did: on another Slurm node, or
    on none, left on its Kubernetes node
    (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm` reads the map at the event's time).

    Only the columns that place an event are compared (:data:`_MAP_PLACES`; a change of
    ``gpus``, ``nodeset``, ``source`` or ``k8s_node`` alone moves none). An interval in one
    map and not the other: the whole interval. An interval in both whose end alone differs
    (``valid_to``; NULL: still open): from the earlier end to the later one. A missing start is
    taken as 1970-01-01, a missing end as 9999-01-01, so a span is never cut short. ``old``
    without those columns (no earlier map): every interval of ``new``.

    Each span is the Slurm cluster's (``cluster``), and again its Kubernetes cluster's where
    ``slurmd_pairs`` (``cluster, k8s_cluster``) names one, since an event the map no longer
    places stays on the Kubernetes node, and the other way round. :func:`_xid_attempt_days`
    reads them: the FAILED attempts ending in a span or up to a day and the XID window after
    it (the day is a DCGM load's margin, wider than a map change needs); and
    :func:`_map_telemetry_days`: every day of a span, since the map places the pods' other
    samples at the same times."""
    schema = {"cluster": pl.String(), "lo": _SPANS_SCHEMA["lo"], "hi": _SPANS_SCHEMA["hi"]}
    n = new.select(_MAP_PLACES).unique()
    if old.width and set(_MAP_PLACES) <= set(old.columns):
        o = old.select(_MAP_PLACES).cast(n.schema, strict=False).unique()  # type: ignore[arg-type]
    else:
        o = n.clear()
    ho, hn = row_hashes(o), row_hashes(n)
    only_new = n.filter(~hn.is_in(ho.implode()))
    only_old = o.filter(~ho.is_in(hn.implode()))
    if only_new.height == 0 and only_old.height == 0:
        return pl.DataFrame(schema=schema)
    start = pl.col("valid_from").fill_null(_EARLIEST)

    def end(col: str) -> pl.Expr:
        return pl.col(col).fill_null(_LATEST)

    paired = (
        only_new.select(*_MAP_INTERVAL, "valid_to", pl.len().over(_MAP_INTERVAL).alias("_n"))
        .join(
            only_old.select(
                *_MAP_INTERVAL,
                pl.col("valid_to").alias("_old_to"),
                pl.len().over(_MAP_INTERVAL).alias("_o"),
            ),
            on=_MAP_INTERVAL,
            how="full",
            coalesce=True,
            nulls_equal=True,
        )
        # one version on each side (so their ends differ): the time between the ends
        .filter((pl.col("_n") == 1) & (pl.col("_o") == 1))
    )
    cut = paired.select(
        "cluster",
        pl.min_horizontal(end("valid_to"), end("_old_to")).alias("lo"),
        pl.max_horizontal(end("valid_to"), end("_old_to")).alias("hi"),
    )
    # every other version: its whole interval
    whole = pl.concat(
        [
            only.join(paired, on=_MAP_INTERVAL, how="anti", nulls_equal=True).select(
                "cluster", start.alias("lo"), end("valid_to").alias("hi")
            )
            for only in (only_new, only_old)
        ]
    )
    spans = pl.concat([cut, whole]).cast(schema)  # type: ignore[arg-type]
    if slurmd_pairs is not None and slurmd_pairs.height:
        lent = spans.join(slurmd_pairs.select("cluster", "k8s_cluster").unique(), on="cluster")
        spans = pl.concat([spans, lent.select(pl.col("k8s_cluster").alias("cluster"), "lo", "hi")])
    return spans.unique().sort("cluster", "lo", "hi")


def _new_spans(con: duckdb.DuckDBPyConnection, loads: pl.DataFrame | None) -> pl.DataFrame:
    """:data:`TELEMETRY_SPANS_TABLE` rows of the telemetry loads among ``loads`` (``ingest_id,
    source``; None: every telemetry load in the warehouse), read from their raw tables."""
    parts = [pl.DataFrame(schema=_SPANS_SCHEMA)]
    for source, (table, time_col) in _TELEMETRY_SPANS.items():
        if not table_exists(con, table):
            continue
        ids = None
        if loads is not None:
            ids = loads.filter(pl.col("source") == source)["ingest_id"].to_list()
            if not ids:
                continue
        parts.append(ingest_time_spans(con, table, time_col, ids).cast(_SPANS_SCHEMA))  # type: ignore[arg-type]
    return pl.concat(parts).sort("ingest_id", "cluster")


def record_build(
    con: duckdb.DuckDBPyConnection,
    plan: BuildPlan,
    as_of: pl.DataFrame,
    pending: pl.DataFrame,
    log: list[tuple[str, str, int | None, int]],
    node_down: pl.DataFrame,
    resolution: str,
    pod_lives: pl.DataFrame | None = None,
) -> None:
    """Store the build's highest ingest id (for the record: the next plan compares loads whole),
    fingerprint, the plan's reason (why full, or ``incremental``), cut-offs, never-started rows
    and node down/drain intervals (:data:`NODE_DOWN_TABLE`), the loads it read
    (:data:`INGESTS_TABLE`, :data:`TELEMETRY_SPANS_TABLE`, :data:`GRES_JOBS_TABLE`), the key
    of the resolution ``core.slurm_jobs`` now holds (``resolution``, :data:`RESOLUTION_TABLE`)
    with the raw Slurm rows per ingest it was resolved from (:data:`SLURM_INGESTS_TABLE`), the
    pod lives (``pod_lives``, :data:`POD_LIVES_TABLE`: only their changed rows written), the
    loads' pod days (:data:`POD_DAYS_TABLE`), and
    one ``analytics.build_log`` row per table written: (table, mode, deleted, inserted)."""
    _ensure_state(con)
    cuts = {c: a.isoformat() for c, a in as_of.iter_rows() if a is not None}
    con.execute(
        load_sql("analytics/insert_build_state"),
        {"build_id": plan.build_id, "mode": "full" if plan.full else "incremental",
         "max_ingest_id": plan.max_ingest_id, "fingerprint": plan.fingerprint,
         "as_of_json": json.dumps(cuts, sort_keys=True), "reason": plan.reason},
    )  # fmt: skip
    days = json.dumps(
        {c: sorted(d.isoformat() for d in ds) for c, ds in plan.days.items()}, sort_keys=True
    )
    for table, mode, deleted, inserted in log:
        con.execute(
            load_sql("analytics/insert_build_log"),
            {"build_id": plan.build_id, "table_name": table, "mode": mode,
             "rows_deleted": deleted, "rows_inserted": inserted,
             "days": days if mode == "days" else None},
        )  # fmt: skip
    replace_table(con, "analytics.build_pending", pending)
    replace_table(con, NODE_DOWN_TABLE, node_down)
    replace_table(
        con,
        RESOLUTION_TABLE,
        pl.DataFrame(
            {"build_id": [plan.build_id], "resolution_key": [resolution]},
            schema={"build_id": pl.Int64(), "resolution_key": pl.String()},
        ),
    )
    replace_table(con, SLURM_INGESTS_TABLE, run_named(con, "analytics/slurm_ingest_rows"))
    loads = (
        plan.ingests if plan.ingests is not None else run_named(con, "analytics/ingest_identities")
    )
    replace_table(con, INGESTS_TABLE, loads)
    replace_table(
        con, TELEMETRY_SPANS_TABLE, plan.spans if plan.spans is not None else _new_spans(con, None)
    )
    _record_gres_jobs(con, plan.gres_loads)
    _record_pod_days(con, plan.sample_loads)
    if pod_lives is not None:
        lives = pod_lives.select(_POD_LIVES_COLUMNS)
        found = plan.diffs.get(POD_LIVES_TABLE)
        if found is not None:
            apply_row_diff(con, lives, found)
        elif (
            not table_exists(con, POD_LIVES_TABLE)
            or diff_replace(con, POD_LIVES_TABLE, lives) is None
        ):
            replace_table(con, POD_LIVES_TABLE, lives)


#: The columns of :data:`POD_LIVES_TABLE`.
_POD_LIVES_COLUMNS = ["cluster", "namespace", "pod", "uid", "job_id", "pod_from"]


def _record_pod_days(
    con: duckdb.DuckDBPyConnection, loads: tuple[list[int], list[int]] | None
) -> None:
    """Keep :data:`POD_DAYS_TABLE`: with ``loads`` (the ids of the ``raw.dcgm_samples`` loads
    new and deleted since the last build), the deleted loads' rows dropped and the new loads'
    added (in DuckDB, from their samples only); without (a full build, or no such table yet),
    written whole from ``raw.dcgm_samples`` (empty without it)."""
    has_raw = table_exists(con, "raw.dcgm_samples")
    if loads is None or not table_exists(con, POD_DAYS_TABLE):
        con.execute(load_sql("analytics/create_empty_pod_days"))
        if has_raw:
            con.execute(load_sql("analytics/insert_pod_days"), {"all": True, "ids": []})
        return
    new_ids, gone_ids = loads
    if gone_ids:
        con.execute(load_sql("analytics/delete_pod_days"), {"ids": gone_ids})
    if new_ids and has_raw:
        con.execute(load_sql("analytics/insert_pod_days"), {"all": False, "ids": new_ids})


def record_dcgm_hosts(
    con: duckdb.DuckDBPyConnection, loads: tuple[list[int], list[int]] | None
) -> None:
    """Keep :data:`DCGM_HOSTS_TABLE`: with ``loads`` (the ids of the ``raw.dcgm_samples`` loads
    new and deleted since the last build: :attr:`BuildPlan.sample_loads`), the rows of both
    dropped and the new loads' added from their samples alone
    (``sql/analytics/insert_dcgm_hosts.sql``); without (a full build, or no such table yet),
    written whole from ``raw.dcgm_samples`` (empty without it). Inside the build's transaction,
    before the findings read it."""
    has_raw = table_exists(con, "raw.dcgm_samples")
    if loads is None or not table_exists(con, DCGM_HOSTS_TABLE):
        con.execute(load_sql("analytics/create_empty_dcgm_hosts"))
        if has_raw:
            con.execute(load_sql("analytics/insert_dcgm_hosts"), {"all": True, "ids": []})
        return
    new_ids, gone_ids = loads
    if new_ids or gone_ids:
        con.execute(load_sql("analytics/delete_dcgm_hosts"), {"ids": [*new_ids, *gone_ids]})
    if new_ids and has_raw:
        con.execute(load_sql("analytics/insert_dcgm_hosts"), {"all": False, "ids": new_ids})


def _record_gres_jobs(
    con: duckdb.DuckDBPyConnection, loads: tuple[list[int], list[int]] | None
) -> None:
    """Keep :data:`GRES_JOBS_TABLE`: with ``loads`` (the ids of the per-job GPU index map loads
    new and deleted since the last build), the deleted loads' jobs dropped and the new loads'
    added; without (a full build, or no such table yet), written whole from
    ``raw.slurm_job_gres``."""
    has_raw = table_exists(con, "raw.slurm_job_gres")
    if loads is None or not table_exists(con, GRES_JOBS_TABLE):
        whole = (
            run_named(con, "analytics/gres_jobs_of_loads", {"all": True, "ids": []})
            if has_raw
            else pl.DataFrame(schema=_GRES_JOBS_SCHEMA)
        )
        replace_table(con, GRES_JOBS_TABLE, whole.cast(_GRES_JOBS_SCHEMA))  # type: ignore[arg-type]
        return
    new_ids, gone_ids = loads
    if gone_ids:
        con.execute(load_sql("analytics/delete_gres_jobs"), {"ids": gone_ids})
    if new_ids and has_raw:
        found = run_named(con, "analytics/gres_jobs_of_loads", {"all": False, "ids": new_ids})
        if found.height:
            append_rows(con, GRES_JOBS_TABLE, found.cast(_GRES_JOBS_SCHEMA))  # type: ignore[arg-type]


def with_stored_days(
    con: duckdb.DuckDBPyConnection,
    table: str,
    fresh: pl.DataFrame,
    days: Mapping[str, set[dt.date]] | None,
    *,
    time_col: str = "hour",
    order: Sequence[str] = (),
    since: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every day's rows of an :data:`INCREMENTAL_TABLES` table as a build that computed only
    ``days`` sees them before it writes: the stored rows of the other cluster-days (read with
    ``fresh``'s columns and types) and ``fresh`` (the rows of ``days`` about to be written).
    With ``since``, of the stored rows only those the caller reads.

    Args:
        con: the warehouse (``table`` is read).
        table: ``schema.name`` with ``cluster`` and ``time_col`` (UTC timestamps).
        fresh: the build's rows of ``days``.
        days: cluster → UTC days the build computed; None: a full build (``fresh`` is every
            day and is returned as it is, as it is when ``table`` does not exist yet).
        time_col: the column whose UTC day places a row.
        order: columns the result is sorted by (a full build's frame sorted by them is the same
            frame); empty: the stored rows (with ``since``, in no particular order), then
            ``fresh``.
        since: ``cluster, since`` (UTC datetimes): the stored rows are read only for these
            clusters, and only at or after ``since`` (:func:`pipelines.warehouse.
            read_rows_since`), for a caller that reads no other row (the large-job wait causes
            of a few jobs read the hours of those jobs' waits, not a year of them). None:
            every stored row.

    Returns:
        ``fresh``'s columns.
    """
    if days is None or not table_exists(con, table):
        return fresh
    stored = (
        read_table(con, table)
        if since is None
        else read_rows_since(con, table, since, time_col=time_col)
    )
    kept = (
        stored.select(fresh.columns)
        .cast(fresh.schema, strict=False)  # type: ignore[arg-type]
        .with_columns(pl.col(time_col).dt.convert_time_zone("UTC").dt.date().alias("_day"))
        .join(cluster_days(days), on=["cluster", "_day"], how="anti")
        .drop("_day")
    )
    whole = pl.concat([kept, fresh])
    return whole.sort(order) if order else whole


def write_window_tables(
    con: duckdb.DuckDBPyConnection,
    plan: BuildPlan,
    tables: dict[str, pl.DataFrame],
    job_keys: pl.DataFrame,
) -> list[tuple[str, str, int | None, int]]:
    """Write an incremental build's time-keyed tables (caller holds the transaction).

    The rows of the plan's cluster-days of :data:`INCREMENTAL_TABLES` are replaced by
    ``tables``' rows (:func:`pipelines.warehouse.replace_days`), and the
    ``analytics.job_gpu_summary`` rows of ``job_keys`` by its rows
    (:func:`pipelines.warehouse.replace_job_rows`). No row stores the data cut-off ``as_of``
    (``core.build_cutoffs`` holds it, once per cluster), so the rows of the other days stay
    as they are when it moves.

    Args:
        con: read-write connection.
        plan: an incremental plan (its ``days``).
        tables: :func:`pipelines.analytics.windows.window_tables` frames of ``plan.days``.
        job_keys: ``cluster, job_id`` the summary frame covers.

    Returns:
        ``(table, mode, rows deleted, rows inserted)`` per table; mode ``days`` or ``jobs``.
    """
    log: list[tuple[str, str, int | None, int]] = []
    for table, time_col in INCREMENTAL_TABLES.items():
        d, i = replace_days(con, table, tables[table], plan.days, time_col=time_col)
        log.append((table, "days", d, i))
    d, i = replace_job_rows(
        con, "analytics.job_gpu_summary", tables["analytics.job_gpu_summary"], job_keys
    )
    log.append(("analytics.job_gpu_summary", "jobs", d, i))
    return log
