"""Rebuild the core and analytics layers from the raw tables, and publish the stable views.

The core layer and the window tables are recomputed from everything loaded; the time-keyed tables
and the telemetry summaries are rewritten only for the cluster-days affected since the last build
(:mod:`pipelines.analytics.incremental`; ``full=True`` rewrites all). The metric functions
themselves live in :mod:`metrics`.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import duckdb
import polars as pl

from metrics import (
    allocated_gpu_seconds_hourly,
    fragmentation_hourly,
    job_placement,
    naive_wait_percentiles,
    occupancy_hourly,
    with_assignment_nodes,
)
from metrics.data_quality import (
    DATA_QUALITY_SCHEMA,
    admitted_without_pods,
    dcgm_hosts_without_node,
    gpu_tracking_gaps,
    open_attempts_ended_by_requeue,
    pods_ended_without_time,
    runaway_running_attempts,
    unattributed_gpu_hours,
    uncounted_accelerator_cluster_queues,
    uncounted_accelerator_nodes,
    uncounted_accelerator_pods,
    uncounted_accelerator_workloads,
)
from metrics.domains import (
    domain_capacity_hourly,
    hourly_node_states,
    large_job_wait_causes,
    segment_capacity_hourly,
    stranded_hourly,
)
from metrics.het_jobs import het_unit_id, is_het_component
from pipelines.analytics.chunks import (
    BUILD_CHUNK,
    ROW_CHUNK,
    by_hour_chunks,
    cluster_days,
    of_keys,
    on_days,
    row_chunks,
    touching,
)
from pipelines.analytics.incremental import (
    HOLDS_TABLE,
    INCREMENTAL_TABLES,
    BuildPlan,
    changed_spell_jobs,
    nul_in_cluster_names,
    plan_build,
    record_build,
    record_dcgm_hosts,
    resolution_key,
    reusable_resolution,
    unchanged_slurm_ingests,
    with_stored_days,
    write_window_tables,
)
from pipelines.analytics.metrics_build import (
    TTS_COUNT_WEEKS,
    TTS_COUNTS_TABLE,
    build_metric_tables,
    loss_policy_of,
)
from pipelines.analytics.policy_impact import policy_impact_tables
from pipelines.analytics.policy_ledger import policy_change_tables
from pipelines.analytics.scheduler_views import quota_unit_findings, scheduler_tables
from pipelines.analytics.slurm_on_k8s import SlurmOnK8sTables, slurm_on_k8s_tables
from pipelines.analytics.windows import WINDOW_TABLES, window_tables, with_hourly_rule_days
from pipelines.config import Config
from pipelines.core import (
    JOBS_COLUMNS,
    OUTSIDE_INVENTORY,
    UNATTRIBUTED,
    BuildUnit,
    CoreFrames,
    RawFrames,
    RegistryFrames,
    StoredPart,
    build_core,
    in_resolution_order,
    load_registry,
    load_registry_history,
    resolved_slurm_schema,
    shares_at_window_start,
    unmatched_pools,
)
from pipelines.core.node_states import SLURM_DOWN_STATES
from pipelines.core.slurm_on_k8s import lend_capacity, slurm_node_gpus
from pipelines.inventory import read_inventory_folder
from pipelines.warehouse import (
    append_rows,
    apply_row_diff,
    columns_match,
    count_rows,
    diff_job_rows,
    diff_replace,
    diff_replace_from,
    diff_replace_keys,
    drop_table,
    ensure_raw_tables,
    memory_limit,
    read_table,
    release_memory,
    replace_job_rows,
    replace_table,
    replace_table_from,
    run_named,
    table_exists,
)
from pipelines.warehouse.sql import load_sql

__all__ = ["CUTOFF_TABLE", "HOLDS_TABLE", "JOBS_COLUMNS", "VIEWS", "create_views", "rebuild"]

log = logging.getLogger(__name__)

#: The inventory rows a build rejected (:func:`_inventory`): ``cluster`` and
#: :data:`pipelines._parse_result.REJECTED_SCHEMA`; the ``rejected_rows`` view shows them with
#: source ``inventory`` and no ingest (the inventory is read by each build, not loaded).
INVENTORY_REJECTED = "core.inventory_rejected"

#: The weekly NVLink co-location of multi-node gangs (``sql/analytics/nvlink_colocation_weekly
#: .sql``), stored by the build behind the view of the same name.
NVLINK_WEEKLY = "analytics.nvlink_colocation_weekly"

#: The one stored home of the data cut-off: ``cluster, as_of`` per cluster of the last build.
#: No other core or analytics table stores ``as_of``: the views join it in by ``cluster``, so a
#: new day that moves the cut-off does not rewrite every stored row (the row diff of an
#: incremental build sees only the rows whose values changed).
CUTOFF_TABLE = "core.build_cutoffs"

_CUTOFF_SCHEMA = {"cluster": pl.String(), "as_of": pl.Datetime("us", "UTC")}

#: The published views, created in this order (each from ``sql/views/<name>.sql``).
VIEWS = (
    "jobs", "job_holds", "slurm_jobs", "rejected_rows", "occupancy_hourly", "time_to_start_summary",
    "k8s_events", "k8s_pods", "dcgm_samples", "ingests", "nodes", "data_quality",
    "gpu_waterfall_hourly", "occupancy_daily", "time_to_start_jobs", "fairness_weekly",
    "fairness_summary_weekly", "node_reliability", "k8s_workloads", "k8s_pending_reasons",
    "job_gpu_summary", "telemetry_coverage_daily", "gpu_activity", "kueue_cluster_queues",
    "kueue_local_queues", "scheduler_fairshare", "registry_drift",
    "telemetry_coverage_team_daily", "topology", "job_placement",
    "topology_fragmentation_hourly", "policy_changes", "policy_change_impact",
    "pending_reason_spells", "topology_nodes",
    "domain_capacity_hourly", "segment_capacity_hourly", "stranded_gpu_hourly",
    "large_job_wait_causes", "nvlink_colocation_weekly", "slurm_node_map", "slurm_on_k8s_hourly",
)  # fmt: skip


#: Rejected inventory rows logged one by one per file; the rest are counted in one line (a file
#: whose GPU column is wrong throughout would otherwise log every host).
_LOGGED_REJECTS = 20


def _inventory(
    cfg: Config, clusters: Iterable[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The nodes and rejected rows of the inventory files of ``clusters`` (None: every file;
    :func:`pipelines.inventory.read_inventory_folder`); the first :data:`_LOGGED_REJECTS`
    rejected rows of each file are logged with their file, line and field, the rest counted."""
    nodes, rejected = read_inventory_folder(cfg.inventory_dir, clusters)
    for (file,), rows in rejected.group_by("file", maintain_order=True):
        for r in rows.head(_LOGGED_REJECTS).iter_rows(named=True):
            where = f"{file}:{r['line_no']}" + (f" (field {r['field']})" if r["field"] else "")
            log.warning("inventory row rejected: %s: %s", where, r["reason"])
        if rows.height > _LOGGED_REJECTS:
            log.warning("%s: %d more inventory rows rejected", file, rows.height - _LOGGED_REJECTS)
    return nodes, rejected


def _known_inventory(
    cfg: Config, raw: RawFrames, con: duckdb.DuckDBPyConnection
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The inventory files of configured clusters and of clusters the raw tables name, and
    their rejected rows: a file of a cluster that is neither (the sample fleet's ``k8s-c``
    under a configuration of other clusters) is not read. With no cluster configured, every
    file counts. (The Slurm rows' clusters are asked of ``raw.slurm_rows``: ``raw`` reads them
    in parts.)"""
    if not cfg.clusters:
        return _inventory(cfg)
    known = {c.name for c in cfg.clusters}
    known |= set(run_named(con, "analytics/slurm_row_clusters")["cluster"].to_list())
    for frame in (raw.slurm_rows, raw.k8s_pods):
        if "cluster" in frame.columns:
            known |= set(frame["cluster"].drop_nulls().unique().to_list())
    return _inventory(cfg, sorted(known))


def _cluster_findings(
    frame: pl.DataFrame, check: str, value: pl.Expr, detail: pl.Expr
) -> pl.DataFrame:
    """One data-quality finding per row of ``frame`` (which has ``cluster``): ``check``, the
    ``value`` and ``detail`` expressions over the row, no day and no partition (findings about a
    whole cluster or file)."""
    return frame.select(
        "cluster",
        pl.lit(None, dtype=pl.Date()).alias("day"),
        pl.lit(None, dtype=pl.String()).alias("partition"),
        pl.lit(check).alias("check"),
        value.alias("value"),
        detail.alias("detail"),
    )


def _inventory_rejects(rejected: pl.DataFrame) -> pl.DataFrame:
    """The data-quality findings of rejected inventory rows: per cluster and field, check
    ``rejected_rows``, the count, and the file's base name with the first row's line and
    reason (the rows themselves are logged by :func:`_inventory`)."""
    per_field = (
        rejected.with_row_index("_i")
        .group_by("cluster", "field")
        .agg(pl.len().cast(pl.Float64).alias("n"), pl.all().sort_by("_i").first())
    )
    return _cluster_findings(
        per_field,
        "rejected_rows",
        pl.col("n"),
        pl.format(
            "inventory {}: rows rejected ({}), first line {}: {}",
            pl.col("file").str.split("/").list.last(),
            pl.col("field").fill_null("fields"),
            pl.col("line_no"),
            pl.col("reason"),
        ),
    )


def _data_quality(
    con: duckdb.DuckDBPyConnection,
    s_att: pl.DataFrame,
    nodes: pl.DataFrame,
    jobs: pl.DataFrame,
    inventory_rejected: pl.DataFrame | None = None,
    pods: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The data-quality findings of the inputs: GPU tracking gaps, Kueue admissions without
    pods, Kubernetes pods over without an end and pods asking accelerators not counted as GPUs
    (``pods``: ``core.k8s_pods``), Nodes, Kueue Workloads and ClusterQueues naming such
    accelerators, DST repairs,
    rejects (of the raw tables, and ``inventory_rejected``: :func:`_inventory`'s), observed
    capacity, GPU shards of unknown share, Kueue GPU quota left in advertised units
    (:func:`quota_unit_findings`), DCGM hosts that are no node, open Slurm attempts ended by
    their job's requeue and runaway Slurm attempts capped at their time limit + 1 h."""
    # lazy: only the two columns are taken from the attempts (an eager filter of the whole
    # frame first copied every column of a year's 2.1M attempts, 150 MB)
    gpu_parts = (
        pl.concat(
            [
                frame.lazy().filter(pl.col("gpus") > 0).select("cluster", "partition")
                for frame in (nodes, jobs)
            ]
        )
        .drop_nulls()
        .unique()
        .collect()
    )
    parts = [gpu_tracking_gaps(s_att.lazy(), gpu_parts.lazy()).collect()]
    if "end_inferred" in s_att.columns:
        parts.append(open_attempts_ended_by_requeue(s_att.lazy()).collect())
        if "elapsed_s" in s_att.columns:
            parts.append(runaway_running_attempts(s_att.lazy()).collect())
    if "state" in jobs.columns and "eligible_at" in jobs.columns:
        parts.append(admitted_without_pods(jobs.lazy()).collect())
    if pods is not None and pods.height:
        parts.append(pods_ended_without_time(pods.lazy()).collect())
        if "uncounted_resources" in pods.columns:
            parts.append(uncounted_accelerator_pods(pods.lazy()).collect())
    ingests = read_table(con, "raw.ingests")
    if ingests.height:
        info = ingests.select(
            "cluster",
            "file",
            pl.col("info").str.json_path_match("$.dst_ambiguous").cast(pl.Float64).alias("amb"),
            pl.col("info").str.json_path_match("$.dst_nonexistent").cast(pl.Float64).alias("non"),
        )
        for col, check, what in (
            ("amb", "dst_ambiguous_times", "local times that occur twice, read as the earlier"),
            ("non", "dst_nonexistent_times", "local times in a DST gap, shifted forward"),
        ):
            parts.append(
                _cluster_findings(
                    info.filter(pl.col(col) > 0),
                    check,
                    pl.col(col),
                    # the file's base name: published views show no path of the machine
                    pl.format("{}: {}", pl.col("file").str.split("/").list.last(), pl.lit(what)),
                )
            )
    if table_exists(con, "raw.k8s_nodes"):
        accel_nodes = run_named(con, "analytics/uncounted_accelerator_nodes")
        if accel_nodes.height:
            parts.append(uncounted_accelerator_nodes(accel_nodes.lazy()).collect())
    if table_exists(con, "raw.k8s_workloads"):
        accel_wls = run_named(con, "analytics/uncounted_accelerator_workloads")
        if accel_wls.height:
            parts.append(uncounted_accelerator_workloads(accel_wls.lazy()).collect())
    if table_exists(con, "raw.kueue_cluster_queues"):
        accel_cqs = run_named(con, "analytics/uncounted_accelerator_cluster_queues")
        if accel_cqs.height:
            parts.append(uncounted_accelerator_cluster_queues(accel_cqs.lazy()).collect())
    rejected = run_named(con, "analytics/rejected_by_source")
    if rejected.height:
        parts.append(
            _cluster_findings(
                rejected,
                "rejected_rows",
                pl.col("n").cast(pl.Float64),
                pl.format("{}: {}", pl.col("source"), pl.col("reason")),
            )
        )
    if inventory_rejected is not None and inventory_rejected.height:
        parts.append(_inventory_rejects(inventory_rejected))
    if "shards" in s_att.columns:
        parts.append(_unconverted_shards(s_att))
    observed = nodes.filter(pl.col("capacity_source") == "observed")
    if observed.height:
        parts.append(
            _cluster_findings(
                observed.group_by("cluster").agg(pl.col("gpus").sum()),
                "capacity_from_observed_nodes",
                pl.col("gpus"),
                pl.lit("no inventory: capacity is the GPUs seen in allocations (a lower bound)"),
            )
        )
    units = quota_unit_findings(con)
    if units.height:
        parts.append(
            _cluster_findings(
                units, "kueue_quota_in_advertised_units", pl.col("value"), pl.col("detail")
            )
        )
    outside = nodes.filter(pl.col("capacity_source") == OUTSIDE_INVENTORY)
    if outside.height:
        parts.append(_outside_inventory_findings(outside))
    return pl.concat([p.cast(DATA_QUALITY_SCHEMA) for p in parts]).sort(  # type: ignore[arg-type]
        "cluster", "check", "day", "partition", nulls_last=True
    )


def _dcgm_host_findings(
    con: duckdb.DuckDBPyConnection, plan: BuildPlan, nodes: pl.DataFrame
) -> pl.DataFrame:
    """The findings ``dcgm_hosts_without_node`` and ``dcgm_hosts_ambiguous``: DCGM hosts that
    are no node (by name or short name, :mod:`metrics.hosts`), whose samples and XIDs reach no
    node's jobs. The hosts of every stored sample come from
    :data:`pipelines.analytics.incremental.DCGM_HOSTS_TABLE`, kept here first for the plan's new
    and deleted loads (:func:`record_dcgm_hosts`: their samples alone, all of them in a full
    build), so a build's cost does not grow with the samples' history.
    Also the finding ``dcgm_samples_without_host`` (:func:`_hostless_sample_findings`).
    :data:`DATA_QUALITY_SCHEMA` rows (none without such hosts)."""
    record_dcgm_hosts(con, None if plan.full else plan.sample_loads)
    hosts = run_named(con, "analytics/dcgm_hosts")
    hostless = _hostless_sample_findings(con)
    if hosts.height == 0:
        return hostless
    found = dcgm_hosts_without_node(hosts.lazy(), nodes.lazy()).collect()
    return pl.concat([found.cast(DATA_QUALITY_SCHEMA), hostless])  # type: ignore[arg-type]


#: How many series (``metric on GPU``) a ``dcgm_samples_without_host`` finding names.
_HOSTLESS_SERIES_NAMED = 5


def _hostless_sample_findings(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The data-quality findings ``dcgm_samples_without_host``: per cluster, the stored DCGM
    samples with no host label (``raw.dcgm_samples.host`` NULL: no ``node``,
    ``kubernetes_node``, ``Hostname`` or ``hostname`` label), which join no node (node activity
    and XIDs miss them; one with a ``pod`` or ``hpc_job`` label still reaches its job);
    value = the samples, detail = their series (``metric on GPU``, the first
    :data:`_HOSTLESS_SERIES_NAMED` by name, and how many more) and how many of them have no job
    label either, so that no job sees them. Read from the samples
    themselves: DuckDB skips the row groups whose statistics have no NULL host.
    :data:`DATA_QUALITY_SCHEMA` rows (none without such samples)."""
    found = run_named(con, "analytics/dcgm_samples_without_host", {"named": _HOSTLESS_SERIES_NAMED})
    more = pl.col("series") - _HOSTLESS_SERIES_NAMED
    detail = (
        pl.format(
            "DCGM samples without a host label (node, kubernetes_node, Hostname, hostname): {}",
            pl.col("named").list.join(", "),
        )
        + pl.when(more > 0).then(pl.format(" and {} more", more)).otherwise(pl.lit(""))
        + pl.format(
            "; {} of them without a pod or hpc_job label either (no job sees those)",
            pl.col("without_job_label"),
        )
    )
    return _cluster_findings(
        found, "dcgm_samples_without_host", pl.col("samples").cast(pl.Float64), detail
    ).cast(DATA_QUALITY_SCHEMA)  # type: ignore[arg-type]


#: How many node names a ``nodes_outside_inventory`` finding lists (then "… and N more").
_NAMED_NODES = 20


def _outside_inventory_findings(outside: pl.DataFrame) -> pl.DataFrame:
    """The data-quality findings ``nodes_outside_inventory``: per cluster with an inventory, the
    nodes attempts held GPUs on that the inventory lacks (``capacity_source`` =
    :data:`pipelines.core.build.OUTSIDE_INVENTORY`); value = their GPUs counted as capacity
    (the most held on each at once), detail = the nodes (the first :data:`_NAMED_NODES` by
    name, each with its GPUs)."""
    per_cluster = (
        outside.sort("cluster", "host")
        .group_by("cluster", maintain_order=True)
        .agg(
            pl.col("gpus").sum(),
            pl.len().alias("_n"),
            pl.format(
                "{} ({} GPUs)",
                pl.col("host"),
                pl.col("gpus").round(3).cast(pl.String).str.replace(r"\.0$", ""),
            )
            .head(_NAMED_NODES)
            .str.join(", ")
            .alias("_names"),
        )
    )
    more = pl.when(pl.col("_n") > _NAMED_NODES).then(
        pl.format(" … and {} more", pl.col("_n") - _NAMED_NODES)
    )
    return _cluster_findings(
        per_cluster,
        "nodes_outside_inventory",
        pl.col("gpus"),
        pl.format(
            "nodes used by allocations, not in the inventory (capacity counts the most GPUs "
            "held on each at once): {}{}",
            pl.col("_names"),
            more.fill_null(""),
        ),
    )


def _unconverted_shards(s_att: pl.DataFrame) -> pl.DataFrame:
    """The data-quality findings ``gpu_shards_without_node_state``: per cluster, the Slurm
    attempts that held GPU shards (``gres/shard``) and count 0 GPUs, because a node of theirs
    has no known shard count (no ``scontrol show node`` state naming its shards:
    :func:`pipelines.core.gpu_shards.shard_gpus`); value = attempts."""
    held = s_att.lazy().filter((pl.col("shards") > 0) & (pl.col("gpus") == 0))
    per_cluster = held.group_by("cluster").agg(pl.len().cast(pl.Float64).alias("n")).collect()
    return _cluster_findings(
        per_cluster.sort("cluster", nulls_last=True),
        "gpu_shards_without_node_state",
        pl.col("n"),
        pl.lit(
            "attempts held GPU shards (gres/shard): their share of a GPU is unknown without "
            "their nodes' shard counts, so they count 0 GPUs; load `scontrol show node` state"
        ),
    )


def _registry_findings(
    jobs: pl.DataFrame,
    slurmd_jobs: pl.DataFrame,
    registry: RegistryFrames,
    path: Path,
    nodes: pl.DataFrame,
) -> pl.DataFrame:
    """The data-quality findings of the allocation registry: GPU-hours no team counts
    (``path`` missing, or accounts it does not map; ``jobs`` less ``slurmd_jobs``, the slurmd
    pods of Slurm clusters run on Kubernetes) and pools that match no cluster of ``nodes``."""
    missing = None if path.is_file() else path.name
    # only the unattributed attempts' few columns are copied, not the whole jobs table
    few = jobs.filter(pl.col("team") == UNATTRIBUTED).select(
        "cluster", "job_id", "team", "account", "gpus", "start_at", "end_at", "as_of"
    )
    native = _without_slurmd(few, slurmd_jobs).lazy()
    unattributed = unattributed_gpu_hours(
        native, unattributed=UNATTRIBUTED, missing_registry=missing
    ).collect()
    return pl.concat(
        [unattributed, unmatched_pools(registry.history, nodes)], how="vertical_relaxed"
    )


def _tts_summary(km: pl.DataFrame) -> pl.DataFrame:
    """The ``time_to_start_summary`` rows from the Kaplan–Meier table (NULL group = all)."""
    return km.select(
        pl.col("week").cast(pl.Datetime("us", "UTC")),
        pl.col("source").cast(pl.String),
        pl.col("cluster").cast(pl.String),
        pl.col("partition").cast(pl.String),
        pl.col("team").cast(pl.String),
        pl.col("bucket").cast(pl.String),
        pl.col("spells").cast(pl.Int64).alias("jobs"),
        pl.col("censored").cast(pl.Int64),
        pl.col("excluded").cast(pl.Int64),
        pl.col("km_p50_s").alias("p50_s"),
        pl.col("km_p90_s").alias("p90_s"),
        pl.col("km_p99_s").alias("p99_s"),
        pl.coalesce("km_p50_reason", "km_p90_reason", "km_p99_reason").alias("reason"),
        "naive_p50_s",
        "naive_p90_s",
        "naive_p99_s",
    )


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every published view from ``sql/views/``."""
    for name in VIEWS:
        con.execute(load_sql(f"views/{name}"))


def rebuild(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    registry_path: Path | None = None,
    *,
    full: bool = False,
    slurm_part_rows: int | None = None,
    chunk: str = BUILD_CHUNK,
    chunk_rows: int = ROW_CHUNK,
) -> dict[str, int]:
    """Recompute core and analytics tables from the raw tables, then create the views.

    Incremental unless ``full`` or nothing was built before (:mod:`pipelines.analytics.
    incremental`): the time-keyed tables and the telemetry summaries are rewritten only for the
    cluster-days affected since the last build; the rest is recomputed from the core frames.
    Everything is written in one transaction.

    Args:
        con: read-write connection to an initialised warehouse (not inside a transaction).
        cfg: configuration (inventory folder, registry, thresholds).
        registry_path: overrides the configured allocation registry.
        full: rewrite every table from all history.
        slurm_part_rows: raw Slurm rows per part of the identity resolution (None:
            :data:`SLURM_PART_ROWS`): the history's sacct rows are read and resolved a part at
            a time (:func:`_read_raw`), never all at once.
        chunk: the unit of hours the hour-keyed topology tables are computed in, a polars
            duration (:data:`pipelines.analytics.chunks.BUILD_CHUNK`: one cluster-month).
        chunk_rows: attempts per unit of the per-attempt tables (placement, wait spells, GPU
            summary), and the rows written at a time of a table replaced whole.

    Returns:
        Row counts of the tables written, by table name.
    """
    path = registry_path or cfg.registry_path
    registry = _read_registry(path)
    # A warehouse made by earlier code gets the raw columns added since (NULL in its rows, as
    # its next load would add them), so the build's SQL binds: raw.dcgm_samples.xid.
    ensure_raw_tables(con)
    # One transaction throughout: each large table is written as soon as it is computed and
    # its frame released (no later step reads one of them back), so the build never holds every
    # output table at once; a failure anywhere rolls every write back.
    # DuckDB's own memory is bounded too (BUILD_QUERY_MEMORY): the blocks the build reads and
    # writes are evicted from its cache, its operators spill, instead of staying resident.
    with memory_limit(con, BUILD_QUERY_MEMORY):
        con.execute("BEGIN TRANSACTION")
        try:
            counts, windows = _build(
                con, cfg, registry, path, full=full, part_rows=slurm_part_rows,
                units=(chunk, chunk_rows),
            )  # fmt: skip
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        _checkpoint(con)
    for table in windows:
        counts[table] = count_rows(con, table)
    return counts


def _checkpoint(con: duckdb.DuckDBPyConnection) -> None:
    """Write what the build committed into the database file now, under the build's memory
    limit (DuckDB would otherwise do it at close, outside the limit: at 92 days of 10,000 GPUs
    1.84 GB there against 1.07 GB here). Skipped, and left to DuckDB's own checkpoint, while
    another transaction of the database runs (``CHECKPOINT`` then fails)."""
    try:
        con.execute("CHECKPOINT")
    except duckdb.Error as exc:
        log.info("checkpoint after the build left to DuckDB: %s", exc)


def _build(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    registry: RegistryFrames,
    path: Path,
    *,
    full: bool,
    part_rows: int | None,
    units: tuple[str, int] = (BUILD_CHUNK, ROW_CHUNK),
) -> tuple[dict[str, int], list[str]]:
    """The body of :func:`rebuild`, inside its transaction: returns the row counts of the
    tables written and the time-keyed tables an incremental build wrote by day (counted after
    the commit).

    Each part of the resolved Slurm rows is written as it is resolved: a requested full build
    (``full``) writes ``core.slurm_jobs`` itself (:class:`_PartWriter`); otherwise each part is
    diffed into the stored rows of its range of identities (:class:`_RangeDiffWriter`: the
    resolution of the same raw rows is the same whether the plan turns out full or incremental,
    so only the rows that changed are written), or, where ``core.slurm_jobs`` is missing or its
    columns differ, staged in :data:`_STAGED_SLURM_JOBS`, which then replaces it."""
    key = resolution_key(path)
    raw = _read_raw(con, part_rows, reuse=not full and reusable_resolution(con, key))
    parts = (
        _PartWriter(con, "core.slurm_jobs")
        if full
        else _RangeDiffWriter(con, "core.slurm_jobs", _STAGED_SLURM_JOBS, raw.slurm_parts)
    )
    inventory, inventory_rejected = _known_inventory(cfg, raw, con)
    core = build_core(raw, registry, inventory, BuildUnit.everything(), slurm_sink=parts)
    del raw
    release_memory(con)
    # The data-quality findings are the last use of the Slurm attempts: computed here, the
    # attempts are freed before the metric engine (the rebuild's peak memory).
    sok = slurm_on_k8s_tables(con, cfg, core)
    occ = _occupancy(core, sok)
    # A Slurm cluster run in slurmd pods has the pods' GPUs as capacity, not its observed nodes.
    lent = sorted(set(sok.hourly["cluster"].to_list()))
    dq = (
        pl.concat(
            [
                _data_quality(
                    con,
                    core.slurm_attempts,
                    core.nodes,
                    core.jobs,
                    inventory_rejected,
                    core.k8s_pods,
                ),
                _registry_findings(core.jobs, sok.slurmd_jobs, registry, path, core.nodes),
                sok.findings,
            ]
        )
        .filter(
            ~((pl.col("check") == "capacity_from_observed_nodes") & pl.col("cluster").is_in(lent))
        )
        .sort("cluster", "check", "day", "partition", nulls_last=True)
    )
    slurm_changed = _with_shard_jobs(
        parts.changed_jobs() if isinstance(parts, _RangeDiffWriter) else None, core.slurm_attempts
    )
    core = replace(core, slurm_attempts=core.slurm_attempts.clear())
    plan = plan_build(
        con, cfg, registry_path=path, jobs=core.jobs, pending=core.pending, occupancy=occ,
        nodes=core.nodes, as_of=core.as_of, topology=core.topology, node_down=core.node_down,
        full=full, slurmd_pairs=sok.slurmd_maps.select("cluster", "k8s_cluster")
        if sok.slurmd_maps.height else None,
        slurm_changed=slurm_changed,
        slurmd_map=sok.node_map, pod_jobs=core.pod_jobs, holds=core.holds,
    )  # fmt: skip
    plan = _pair_days(plan, sok.slurmd_maps)
    if not plan.full and plan.days:
        days = with_hourly_rule_days(con, plan.days, occ, sok.slurmd_maps)
        plan = _pair_days(replace(plan, days=days), sok.slurmd_maps)
    # the DCGM host findings read the loads' hosts, kept for the plan's loads first
    dq = pl.concat([dq, _dcgm_host_findings(con, plan, core.nodes)]).sort(
        "cluster", "check", "day", "partition", nulls_last=True
    )
    write = _TableWriter(con, plan, units[1])
    write.staged("core.slurm_jobs", parts)
    # the rejected inventory rows, behind the rejected_rows view beside the ingests' rejects
    write(INVENTORY_REJECTED, inventory_rejected)
    job_keys = _tables(con, cfg, core, registry, occ, dq, plan, sok, write, units)
    write("analytics.slurm_node_map", sok.node_map)
    write("analytics.slurm_on_k8s_hourly", sok.hourly)
    pending, as_of, node_down, lives = core.pending, core.as_of, core.node_down, core.pod_jobs
    del core, occ, sok
    write.finish(
        job_keys, pending=pending, as_of=as_of, node_down=node_down, resolution=key,
        pod_lives=lives,
    )  # fmt: skip
    return write.counts, write.windows_written


def _with_shard_jobs(changed: pl.DataFrame | None, s_att: pl.DataFrame) -> pl.DataFrame | None:
    """``changed`` (``cluster, job_id`` of the jobs whose resolved Slurm rows changed; None:
    every job may have) and the jobs of every attempt holding GPU shards: their GPUs come from
    the node state in effect at their start (:func:`pipelines.core.gpu_shards.shard_gpus`),
    which a newly loaded snapshot may change while their resolved rows do not (a first state of
    the node, or one dated before their start), so the plan compares them every build (they are
    few)."""
    if changed is None or "shards" not in s_att.columns:
        return changed
    sharded = s_att.filter(pl.col("shards") > 0).select(
        pl.col("cluster", "job_id").cast(pl.String())
    )
    if sharded.height == 0:
        return changed
    return pl.concat([changed.cast(pl.String()), sharded], how="vertical_relaxed").unique()


#: DuckDB's memory limit while :func:`rebuild` runs (its buffer cache and operators; polars'
#: frames are apart). Without it a year of 10,000 GPUs left 2.3 GB of warehouse blocks resident
#: after the build, the year's peak 3.76 GB against 3.45 GB with a 1 GB cap; 512 MB took the
#: year's peak from 2.68 to 2.21 GB for 2 % more wall time, 256 MB only to 2.09 GB for 10 % more
#: (BENCHMARKS.md, "Time to start from counts").
BUILD_QUERY_MEMORY = "512MB"

#: About how many raw Slurm rows the boundaries of the resolution's parts are quantiles of
#: (``sql/analytics/slurm_row_bounds.sql``): every row of a smaller table.
BOUNDS_SAMPLE_ROWS = 100_000

#: Where a build that is not known to be full stages the resolved Slurm rows, part by part,
#: before its plan decides how ``core.slurm_jobs`` is written (inside the build's transaction:
#: never seen outside it, dropped before it commits).
_STAGED_SLURM_JOBS = "core.slurm_jobs_staged"


class _PartWriter:
    """Writes a table part by part (``write(frame)``), each as stored (:func:`_stored`: without
    the cut-off ``as_of``): the first part replaces the table, the others are appended;
    ``rows`` counts the rows written. A table that receives no part is not touched."""

    def __init__(self, con: duckdb.DuckDBPyConnection, table: str) -> None:
        self.con, self.table, self.rows, self.parts = con, table, 0, 0

    def __call__(self, frame: pl.DataFrame) -> None:
        frame = _stored(self.table, frame)
        if self.parts == 0:
            replace_table(self.con, self.table, frame)
        else:
            append_rows(self.con, self.table, frame)
        self.parts += 1
        self.rows += frame.height
        release_memory(self.con)  # the written blocks are not kept cached while polars goes on


#: The columns that name a job in the per-attempt tables.
_JOB = ("cluster", "job_id")


class _RangeDiffWriter(_PartWriter):
    """Writes ``table`` part by part, each part the resolved rows of one range of identities
    (``ranges.current``, :class:`_SlurmParts`): the stored rows of that range that the part
    lacks are deleted and the part's rows the table lacks are inserted
    (:func:`pipelines.warehouse.diff_replace` with ``sql/analytics/slurm_jobs_in_range.sql``),
    so a build whose history barely changed rewrites only the changed rows, not every resolved
    row. Where the first part cannot be diffed (``table`` missing, its columns changed) every
    part goes to ``staged`` instead (:attr:`table` is then ``staged``, for
    :meth:`_TableWriter.staged`). ``deleted``/``inserted`` count the rows the diffs wrote, and
    :meth:`changed_jobs` names the jobs they belong to."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        table: str,
        staged: str,
        ranges: Callable[[], Iterable[pl.DataFrame | StoredPart]] | None,
    ) -> None:
        super().__init__(con, table)
        self.target, self.staged_table = table, staged
        self.ranges = ranges if isinstance(ranges, _SlurmParts) else None
        self.deleted = self.inserted = 0
        self.diffed = self.ranges is not None
        self.changed: list[pl.DataFrame] = []

    def changed_jobs(self) -> pl.DataFrame | None:
        """``cluster, job_id`` of every row the diffs deleted or inserted (the resolved rows
        of every other job are the stored ones), or None when the parts were not all diffed
        (staged: any job may have changed)."""
        if not self.diffed:
            return None
        if not self.changed:
            return pl.DataFrame(schema={"cluster": pl.String(), "job_id": pl.String()})
        return pl.concat(self.changed, how="vertical_relaxed").unique()

    def __call__(self, frame: pl.DataFrame) -> None:
        if self.diffed:
            assert self.ranges is not None
            done = diff_replace_keys(
                self.con, self.target, _stored(self.target, frame), _JOB,
                where=load_sql("analytics/slurm_jobs_in_range"),
                params=_range_params(*self.ranges.current, split=self.ranges.split),
            )  # fmt: skip
            if done is not None:
                self.deleted += done[0]
                self.inserted += done[1]
                if done[2].height:
                    self.changed.append(done[2].cast(pl.String()))
                self.parts += 1
                self.rows += frame.height
                release_memory(self.con)
                return
            if self.parts or (self.ranges is not None and self.ranges.stored):
                raise RuntimeError(
                    f"{self.target}: a part's columns differ from the stored rows', which earlier"
                    " parts were diffed into or taken from"
                )
            self.diffed, self.table = False, self.staged_table
        elif self.parts == 0:
            self.table = self.staged_table
        super().__call__(frame)


def _read_registry(path: Path) -> RegistryFrames:
    """The allocation registry file as frames (its team mapping and share history)."""
    _teams, mapping = load_registry(path)
    return RegistryFrames(mapping=mapping, history=load_registry_history(path))


#: Raw Slurm rows per part of the core layer's identity resolution: the build reads
#: ``raw.slurm_rows`` in ranges of job identity of about this many rows
#: (:attr:`pipelines.core.RawFrames.slurm_parts`). A year of 10,000 GPUs holds about 2.4M rows,
#: 10 parts; BENCHMARKS.md "The Slurm rows in parts" measures the peak memory this saves.
SLURM_PART_ROWS = 250_000
#: Ranges of :data:`SLURM_PART_ROWS` raw rows an incremental build reads from the stored
#: resolution at once, at most (:class:`_SlurmParts`): about 250,000 rows, whatever the
#: history's length. A read's memory grows with its rows: DuckDB hands them over and polars
#: copies them out (on the year of 10,000 GPUs one read of its 2.1M stored attempts rose
#: 1.7–2.2 GB above its start, for a frame that then holds 0.7 GB). At 8 ranges that read was
#: the new day's peak, 1.87–1.92 GB, above the full build's; at 2 it peaked at 1.62–1.72 GB
#: elsewhere, for 3 more reads (BENCHMARKS.md, "The stored resolution read 2 ranges at a
#: time, in its own order"), and once the other steps read only what they use, the reads were
#: the peak again (1.43–1.47 GB); at 1 the new day peaks 6 % lower (1,347–1,427 MB against
#: 1,456–1,474, 4 pairs on a loaded machine that could not resolve the time; quiet unpaired
#: runs put the Slurm side up to about 0.3 s slower: "The new day reads what it uses"). Each
#: read costs a pass over ``core.slurm_jobs``' zone maps.
STORED_RUN_RANGES = 1
#: Raw Slurm rows an incremental build reads at once for the ranges of changed identities, at
#: most (:class:`_SlurmParts`: ranges read together while their rows add up to no more). The
#: ranges of a read wait in memory while the stored parts between them are read, so the
#: budget is kept well under a part: about 46 MB of raw rows (about 460 bytes a row by
#: polars' estimate). A year of 10,000 GPUs' new day reads 61,789 raw rows in its changed
#: ranges.
CHANGED_BATCH_ROWS = 100_000


def _range_params(lo: str, hi: str, last: bool, split: bool = True) -> dict[str, object]:
    """The parameters of the statements that select one range ``[lo, hi)`` of ``(cluster, job
    key)`` sort keys (``last``: no upper end): the keys themselves and each split at its first
    NUL byte into cluster and job key (``sql/analytics/slurm_jobs_in_range.sql``,
    ``stored_part_*.sql``; each statement binds those it names). Without ``split`` (a cluster
    name holds a NUL byte, so the first one need not end it) the split parts are empty, which
    turns off the conjuncts ``slurm_jobs_in_range.sql`` pushes into the scan (the range test
    on the whole key stays)."""
    if not split:
        return {"lo": lo, "hi": hi, "last": last, "lo_cluster": "", "lo_job_key": "",
                "hi_cluster": "", "hi_job_key": ""}  # fmt: skip
    lo_cluster, _, lo_key = lo.partition("\0")
    hi_cluster, _, hi_key = hi.partition("\0")
    return {"lo": lo, "hi": hi, "last": last, "lo_cluster": lo_cluster, "lo_job_key": lo_key,
            "hi_cluster": hi_cluster, "hi_job_key": hi_key}  # fmt: skip


class _SlurmParts:
    """The rows of ``raw.slurm_rows`` in ranges of ``(cluster, job_key)``, one part per range,
    read when called and iterated (``sql/analytics/slurm_rows_part.sql``); ``current`` is the
    range ``(lo, hi, last)`` of the part last yielded (``last``: no upper end; one range
    ``("", "", True)`` is every row) and ``stored`` counts the parts taken as stored.

    With ``dirty`` (the sorted sort keys whose resolution may have changed, ``sql/analytics/
    slurm_dirty_keys.sql``), a range holding none of them is neither read from the raw rows nor
    resolved again: what the core layer takes from its stored resolution in ``core.slurm_jobs``
    (``sql/analytics/stored_part_*.sql``, typed as the resolution types them by ``schema``)
    comes as a :class:`pipelines.core.StoredPart`, one for each run of at most ``run_ranges``
    consecutive such ranges (:data:`STORED_RUN_RANGES`), and ``core.slurm_jobs`` keeps its
    rows. The ranges that hold changed keys (in key order, with stored runs between them) are
    read from the raw rows several at a time: where there are two or more, their rows are
    counted in one pass (``sql/analytics/slurm_rows_in_ranges_count.sql``), then read in one
    pass per batch of consecutive ones whose rows add up to at most ``batch_rows``
    (:data:`CHANGED_BATCH_ROWS`; ``sql/analytics/slurm_rows_in_ranges.sql``), a range alone in
    its batch read by itself as before; each still comes as a part of its own. Each read is a
    pass over ``raw.slurm_rows``, and a new day's changed identities lie in a few narrow ranges
    (three on the year of 10,000 GPUs: 0.76–0.87 s read one by one, 0.55–0.58 s in all
    counted and read together, of which the count 0.16 s). DuckDB joins each raw row's key
    with every range of a count or a read in a nested loop: about 0.13 s for the pass and
    0.02 s more per range on that year (0.15–0.19 s for 3 ranges, 1.05–1.16 s for 50).

    Raises:
        ValueError: ``run_ranges`` or ``batch_rows`` is not positive.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        cuts: list[str],
        dirty: list[str] | None = None,
        schema: pl.Schema | None = None,
        split: bool = True,
        run_ranges: int | None = None,
        batch_rows: int = CHANGED_BATCH_ROWS,
    ) -> None:
        self.run_ranges = STORED_RUN_RANGES if run_ranges is None else run_ranges
        for name, value in (("run_ranges", self.run_ranges), ("batch_rows", batch_rows)):
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        self.batch_rows = batch_rows
        self.con, self.dirty, self.schema, self.split = con, dirty, schema, split
        self.ranges = [
            (lo, hi, i == len(cuts))
            for i, (lo, hi) in enumerate(zip(["", *cuts], [*cuts, ""], strict=True))
        ]
        self.current: tuple[str, str, bool] = self.ranges[0]
        self.stored = 0

    def _is_clean(self, lo: str, hi: str, last: bool) -> bool:
        if self.dirty is None:
            return False
        at = bisect.bisect_left(self.dirty, lo)
        return at == len(self.dirty) or (not last and self.dirty[at] >= hi)

    def _stored_part(self, lo: str, hi: str, last: bool) -> StoredPart:
        assert self.schema is not None
        params = _range_params(lo, hi, last)

        def read(name: str) -> pl.DataFrame:
            frame = run_named(self.con, f"analytics/stored_part_{name}", params)
            # rechunk: one chunk per column (as a resolved part's), and the strings copied out
            # of the buffers DuckDB handed over, which hold more than these rows' strings
            # (10 parts of a year's attempts: 1,123 MB resident, against 1,434 MB kept as read)
            # (``run_to``, a cut-off's start + Elapsed, is of no resolved column: start_at's type)
            schema = self.schema
            assert schema is not None
            types = pl.Schema(
                {c: schema[c if c != "run_to" else "start_at"] for c in frame.columns}
            )
            return frame.cast(types).rechunk()

        self.stored += 1
        # read in the table's order, sorted only where it is not the resolution's (after a
        # rechunk, so that the sort gathers from the copied strings)
        attempts = in_resolution_order(read("attempts")).drop("step")
        return StoredPart(attempts=attempts, pending=read("pending"), cuts=read("cutoffs"))

    def _changed_batches(self) -> dict[int, list[int]]:
        """The indices of the ranges holding changed keys that are read with others, each
        mapped to the indices of its batch (two or more, in order); the other ranges are read
        alone. Where two or more ranges hold changed keys, their rows are counted first (one
        pass over ``raw.slurm_rows``)."""
        if self.dirty is None or len(self.ranges) == 1:
            return {}
        changed = [i for i, r in enumerate(self.ranges) if not self._is_clean(*r)]
        if len(changed) < 2:
            return {}
        counts = dict(
            run_named(self.con, "analytics/slurm_rows_in_ranges_count", self._range_lists(changed))
            .select(pl.col("_range").cast(pl.Int64), "n")
            .iter_rows()
        )
        batches: list[list[int]] = [[]]
        rows = 0
        for at, i in enumerate(changed):  # at: the range's position in the count
            n = counts.get(at, 0)
            if batches[-1] and rows + n > self.batch_rows:
                batches.append([])
                rows = 0
            batches[-1].append(i)
            rows += n
        return {i: batch for batch in batches if len(batch) > 1 for i in batch}

    def _range_lists(self, indices: list[int]) -> dict[str, object]:
        """The parameters of ``sql/analytics/slurm_rows_in_ranges*.sql`` for the ranges
        ``indices``: their lower ends, upper ends and ``last`` flags, as lists in that order."""
        picked = [self.ranges[i] for i in indices]
        return {
            "los": [lo for lo, _, _ in picked],
            "his": [hi for _, hi, _ in picked],
            "lasts": [last for _, _, last in picked],
        }

    def _read_batch(self, batch: list[int]) -> dict[int, pl.DataFrame]:
        """The raw rows of the ranges ``batch`` (indices), read in one pass, by range (a range
        without rows: an empty frame of the same columns and types)."""
        rows = run_named(self.con, "analytics/slurm_rows_in_ranges", self._range_lists(batch))
        parts = rows.partition_by("_range", as_dict=True, maintain_order=True, include_key=False)
        empty = rows.drop("_range").clear()
        # one chunk per column, as a read of one range gives (the split gathers by row)
        return {i: parts.get((at,), empty).rechunk() for at, i in enumerate(batch)}

    def __call__(self) -> Iterator[pl.DataFrame | StoredPart]:
        self.stored = 0
        batches = self._changed_batches()
        fetched: dict[int, pl.DataFrame] = {}
        indexed = enumerate(self.ranges)
        for clean, group in itertools.groupby(indexed, key=lambda r: self._is_clean(*r[1])):
            numbered = list(group)
            run = [r for _, r in numbered]
            if clean:
                # Up to run_ranges consecutive clean ranges are one stored part, one read of
                # the stored rows (each read costs a pass over core.slurm_jobs' zone maps at
                # least), in the same order as the ranges' parts would come. The read's memory
                # (DuckDB's result, the copy polars makes, a sort where the rows are out of
                # order) grows with its rows, so a run as long as the history would outgrow any
                # fixed memory; by default (STORED_RUN_RANGES) a read is one range.
                for at in range(0, len(run), self.run_ranges):
                    lo, (_, hi, last) = run[at][0], run[at : at + self.run_ranges][-1]
                    self.current = (lo, hi, last)
                    part = self._stored_part(lo, hi, last)
                    release_memory(self.con)
                    yield part
                continue
            for i, (lo, hi, last) in numbered:
                self.current = (lo, hi, last)
                if len(self.ranges) == 1:
                    rows = read_table(self.con, "raw.slurm_rows")
                elif i in batches:
                    if i not in fetched:
                        fetched = self._read_batch(batches[i])
                    rows = fetched.pop(i)
                else:
                    rows = run_named(
                        self.con, "analytics/slurm_rows_part", {"lo": lo, "hi": hi, "last": last}
                    )
                # DuckDB's cache of the blocks just read (and of the last part's writes) is
                # given back while polars resolves this part (release_memory)
                release_memory(self.con)
                yield rows
                # not held while the next part or stored run is read (the caller drops its own)
                del rows


def _slurm_parts(
    con: duckdb.DuckDBPyConnection, part_rows: int, reuse: bool = False
) -> _SlurmParts:
    """The rows of ``raw.slurm_rows`` in ascending ranges of ``(cluster, job_key)`` of about
    ``part_rows`` rows each (``sql/analytics/slurm_row_bounds.sql``: quantiles of the key of a
    sample of about :data:`BOUNDS_SAMPLE_ROWS` rows; one identity's rows never straddle two
    ranges), one part per range, read when
    iterated (a full build reads one range at a time). With ``reuse`` (the stored resolution
    was made by today's code and registry:
    :func:`pipelines.analytics.incremental.reusable_resolution`), each range is also cut
    around the identities that changed since (:func:`_around_dirty`), and the ranges none of
    whose identities changed come from the stored resolution (:class:`_SlurmParts`).

    Raises:
        ValueError: ``part_rows`` is not positive.
    """
    if part_rows < 1:
        raise ValueError(f"slurm_part_rows must be positive, got {part_rows}")
    rows = count_rows(con, "raw.slurm_rows")
    n = -(-rows // part_rows)
    cuts: list[str] = []
    if n > 1:
        fractions = [i / n for i in range(1, n)]
        # the sampled rows' share of the table, in millionths (every row when there are fewer)
        per_million = min(1_000_000, -(-BOUNDS_SAMPLE_ROWS * 1_000_000 // rows))
        bounds = run_named(
            con,
            "analytics/slurm_row_bounds",
            {"fractions": fractions, "per_million": per_million},
        )
        cuts = [b for b in bounds["bound"].to_list() if b]
    if not reuse:
        return _SlurmParts(con, cuts, split=not nul_in_cluster_names(con))
    schema = resolved_slurm_schema(run_named(con, "analytics/slurm_rows_empty"))
    stored = _stored("core.slurm_jobs", pl.DataFrame(schema=schema))
    if not columns_match(con, "core.slurm_jobs", stored):
        # A resolved part could not be diffed into the stored rows: the table is staged and
        # replaced whole, so every part must be resolved (a stored part would be lost).
        return _SlurmParts(con, cuts)
    unchanged = unchanged_slurm_ingests(con)
    dirty = run_named(con, "analytics/slurm_dirty_keys", {"unchanged": unchanged})["k"].to_list()
    batch_rows = min(part_rows, CHANGED_BATCH_ROWS)
    return _SlurmParts(con, _around_dirty(cuts, dirty), dirty, schema, batch_rows=batch_rows)


def _around_dirty(cuts: list[str], dirty: list[str]) -> list[str]:
    """``cuts`` (ascending sort keys: the ranges ``[cut_i, cut_i+1)`` of :class:`_SlurmParts`)
    with each range that holds changed keys (``dirty``, ascending) cut again at its first
    changed key and just after its last (the key followed by a NUL byte, which no key holds):
    a day's changed identities are resolved again in one range as narrow as they allow, and the
    identities of the range on either side of them come from the stored resolution (cuts
    ``c, g`` and changed keys ``d, e, h`` give ``c, d, e+NUL, g, h, h+NUL``).
    """
    edges: list[str | None] = ["", *cuts, None]
    out = set(cuts)
    for lo, hi in itertools.pairwise(edges):
        assert lo is not None
        first = bisect.bisect_left(dirty, lo)
        end = len(dirty) if hi is None else bisect.bisect_left(dirty, hi)
        if first < end:
            out.update((dirty[first], dirty[end - 1] + "\0"))
    return sorted(c for c in out if c)


def _read_raw(
    con: duckdb.DuckDBPyConnection, slurm_part_rows: int | None = None, reuse: bool = False
) -> RawFrames:
    """The raw tables the core layer reads (``raw.k8s_nodes`` only where the table exists; of
    ``raw.slurm_nodes`` the states over time of the nodes with GPU shards and the dated snapshots
    of the nodes that ever had a reason time; of ``raw.slurm_reservations`` all rows, the
    ``MAINT`` ones chosen by the core layer);
    the Slurm rows as parts of about ``slurm_part_rows`` rows (None: :data:`SLURM_PART_ROWS`),
    read when the core layer iterates them (``slurm_rows`` keeps only the schema; the parts are
    read through the connection's temporary view ``slurm_rows_keyed``, created here); with
    ``reuse``, the parts whose identities did not change since the stored resolution come from
    it (:func:`_slurm_parts`)."""
    con.execute(load_sql("analytics/create_slurm_rows_keyed"))
    pods = read_table(con, "raw.k8s_pods")
    return RawFrames(
        slurm_rows=run_named(con, "analytics/slurm_rows_empty"),
        slurm_parts=_slurm_parts(con, slurm_part_rows or SLURM_PART_ROWS, reuse),
        slurm_events=read_table(con, "raw.slurm_events"),
        k8s_pods=pods,
        k8s_events=read_table(con, "raw.k8s_events"),
        k8s_workloads=read_table(con, "raw.k8s_workloads"),
        kueue_local_queues=read_table(con, "raw.kueue_local_queues"),
        k8s_nodes=read_table(con, "raw.k8s_nodes") if table_exists(con, "raw.k8s_nodes") else None,
        topology=read_table(con, "raw.topology") if table_exists(con, "raw.topology") else None,
        kueue_topologies=read_table(con, "raw.kueue_topologies")
        if table_exists(con, "raw.kueue_topologies")
        else None,
        kueue_workload_topology=read_table(con, "raw.kueue_workload_topology")
        if table_exists(con, "raw.kueue_workload_topology")
        else None,
        slurm_squeue=read_table(con, "raw.slurm_squeue")
        if table_exists(con, "raw.slurm_squeue")
        else None,
        slurm_node_shards=run_named(con, "analytics/slurm_node_shards")
        if table_exists(con, "raw.slurm_nodes")
        else None,
        slurm_node_states=run_named(
            con, "analytics/slurm_node_snapshots", {"down_states": list(SLURM_DOWN_STATES)}
        )
        if table_exists(con, "raw.slurm_nodes")
        else None,
        slurm_reservations=run_named(con, "analytics/slurm_maint_reservations")
        if table_exists(con, "raw.slurm_reservations")
        else None,
        pod_samples=_pod_last_samples(con, pods),
    )


def _pod_last_samples(con: duckdb.DuckDBPyConnection, pods: pl.DataFrame) -> pl.DataFrame | None:
    """``cluster, namespace, pod, last_sample``: the latest DCGM sample of each pod name of each
    Kubernetes cluster after that cluster's cut-off from its pods' own times
    (``sql/analytics/pod_last_samples.sql``, one read per cluster: only a later sample can move
    its cut-off, and a cluster whose pods stopped long ago does not make the others read every
    sample since; :attr:`pipelines.core.build.RawFrames.pod_samples`); None without pods or
    samples."""
    times = ("created_at", "scheduled_at", "started_at", "finished_at", "deleted_at")
    if pods.height == 0 or not table_exists(con, "raw.dcgm_samples"):
        return None
    cuts = (
        pods.group_by("cluster")
        .agg(pl.max_horizontal(*[pl.col(c).max() for c in times]).alias("cut"))
        .filter(pl.col("cut").is_not_null())
        .sort("cluster")
    )
    if cuts.height == 0:
        return None
    return pl.concat(
        [
            run_named(con, "analytics/pod_last_samples", {"cluster": c, "after": cut})
            for c, cut in cuts.iter_rows()
        ],
        how="vertical_relaxed",
    )


def _occupancy(core: CoreFrames, sok: SlurmOnK8sTables | None = None) -> pl.DataFrame:
    """``analytics.occupancy_hourly``: per cluster, up to its cut-off (``as_of`` joined in
    for the build's planning; it is not stored). Where Slurm runs in slurmd pods, the pods'
    jobs define the Kubernetes cluster's hours but are not its allocation, and the GPUs they
    hold move to the Slurm cluster (:func:`pipelines.core.slurm_on_k8s.lend_capacity`)."""
    jobs, nodes, as_of = core.jobs, core.nodes, core.as_of
    sok = sok or SlurmOnK8sTables.empty()
    native = _without_slurmd(jobs, sok.slurmd_jobs)
    lenders = set(sok.slurmd_jobs["cluster"].to_list())
    occ_parts = []
    # pending GPU demand (waits of attempts, never-started jobs): the hours it reaches past the
    # last allocation, and all of a cluster's whose jobs all wait, are the cluster's too
    demand = pl.concat(
        [
            jobs.lazy()
            .filter(pl.col("req_gpus").fill_null(pl.col("gpus")) > 0)
            .select(
                "cluster", pl.col("eligible_at").alias("_from"), pl.col("start_at").alias("_to")
            ),
            core.pending.lazy()
            .filter(pl.col("req_gpus") > 0)
            .select("cluster", pl.col("eligible_at").alias("_from"), pl.col("end_at").alias("_to")),
        ],
        how="vertical_relaxed",
    )
    for row in as_of.filter(pl.col("as_of").is_not_null()).iter_rows(named=True):
        c, cut = row["cluster"], row["as_of"]
        reg_c = core.registered.filter(pl.col("cluster") == c)
        occ_c = occupancy_hourly(
            jobs.filter(pl.col("cluster") == c).lazy(),
            nodes.filter(pl.col("cluster") == c).lazy(),
            cut,
            down=core.down.filter(pl.col("cluster") == c).lazy(),
            registered=reg_c.lazy() if reg_c.height else None,
            demand=demand.filter(pl.col("cluster") == c),
            holds=_holds_of(core.holds, c),
        ).collect()
        if c in lenders:
            alloc = allocated_gpu_seconds_hourly(
                native.filter(pl.col("cluster") == c).lazy(), cut, holds=_holds_of(core.holds, c)
            ).collect()
            occ_c = (
                occ_c.drop("allocated_gpu_s")
                .join(alloc, on=["cluster", "hour"], how="left")
                .with_columns(pl.col("allocated_gpu_s").fill_null(0.0))
                .select(occ_c.columns)
            )
        occ_parts.append(occ_c)
    occ = (
        pl.concat(occ_parts)
        if occ_parts
        else occupancy_hourly(jobs.clear().lazy(), nodes.lazy(), dt.datetime.now(dt.UTC)).collect()
    )
    return lend_capacity(occ, sok.hourly).join(as_of, on="cluster", how="left")


def _holds_of(holds: pl.DataFrame, cluster: str) -> pl.LazyFrame | None:
    """Cluster ``cluster``'s pieces of held GPUs (:attr:`CoreFrames.holds`), None without any
    (a Slurm cluster's attempts pass through the hourly tables untouched)."""
    mine = holds.filter(pl.col("cluster") == cluster)
    return mine.lazy() if mine.height else None


def _pair_days(plan: BuildPlan, maps: pl.DataFrame) -> BuildPlan:
    """An incremental plan whose Slurm-on-Kubernetes pairs rewrite the same days: a day of the
    Kubernetes cluster (new telemetry of a slurmd pod) is also a day of its Slurm cluster (that
    telemetry's owner), and the other way round."""
    if plan.full or maps.is_empty():
        return plan
    days = {c: set(d) for c, d in plan.days.items()}
    for c, k in maps.select("cluster", "k8s_cluster").unique().iter_rows():
        both = days.get(c, set()) | days.get(k, set())
        for name in (c, k):
            if both or name in days:
                days[name] = set(both)
    return replace(plan, days=days)


def _without_slurmd(jobs: pl.DataFrame, slurmd_jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` without the slurmd pods' Kubernetes jobs (their GPUs are Slurm's capacity)."""
    if slurmd_jobs.is_empty():
        return jobs
    return jobs.join(slurmd_jobs, on=["cluster", "job_id"], how="anti")


def _tables(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    core: CoreFrames,
    registry: RegistryFrames,
    occ: pl.DataFrame,
    dq: pl.DataFrame,
    plan: BuildPlan,
    sok: SlurmOnK8sTables,
    write: _TableWriter,
    units: tuple[str, int] = (BUILD_CHUNK, ROW_CHUNK),
) -> pl.DataFrame | None:
    """Compute and ``write`` every table: the core frames, the metric engine's and the
    scheduler views' tables, and the time-keyed tables of the plan's cluster-days (every day in
    a full build, :func:`pipelines.analytics.windows.window_tables`); returns the job keys whose
    ``job_gpu_summary`` rows an incremental build rewrites (None in a full build). The
    time-keyed tables leave the slurmd pods' jobs out (their GPUs are lent to Slurm, METRICS.md
    "Slurm on Kubernetes") and attribute the pods' telemetry through the Slurm node map.

    Each large table is written as soon as it is computed (the later steps read none of them
    from the warehouse: the policy impact reads the waterfall's frame, and in an incremental
    build the stored waterfall of the days outside the plan, which ``write`` keeps until
    :meth:`_TableWriter.finish`); the core tables are written last."""
    jobs, as_of = core.jobs, core.as_of
    # The Slurm nodes run in slurmd pods have the pods' GPUs (the whole-node rule reads them).
    nodes = slurm_node_gpus(core.nodes, sok.node_map)
    # A full build writes the per-attempt GPU summary a range of attempts at a time.
    summary = write.parts("analytics.job_gpu_summary") if plan.full else None
    # One loss policy per cluster for every table that counts lost time (the waterfall's
    # leaves 3–6, node reliability's lost GPU-seconds); a change of it rebuilds in full
    # (pipelines.analytics.incremental._fingerprint).
    policy = loss_policy_of(cfg)
    windows = window_tables(
        con, jobs=_without_slurmd(jobs, sok.slurmd_jobs), pending=core.pending, occupancy=occ,
        as_of=as_of, pod_jobs=core.pod_jobs, nodes=nodes, idle_threshold=cfg.idle_activity,
        days=None if plan.full else plan.days, changed_keys=plan.changed_keys,
        slurmd_maps=sok.slurmd_maps if sok.slurmd_maps.height else None, every=units[0],
        rows=units[1], summary=summary, holds=core.holds, loss_policy=policy,
    )  # fmt: skip
    if summary is not None:
        write.staged("analytics.job_gpu_summary", summary)
    release_memory(con)
    waterfall = windows.tables.pop("analytics.gpu_waterfall_hourly")
    for table in list(windows.tables):  # the policy impact reads only the waterfall
        write(table, windows.tables.pop(table))
    # The per-attempt tables (a row per wait spell, a row per placed attempt and level) are
    # written a range of attempts at a time by a full build, never held whole. An incremental
    # build keeps only the spells of the jobs whose spells may differ (``plan.wait_keys``) and
    # rewrites those jobs' rows: comparing every held spell with the stored rows took 1.4 s of
    # a year's 12 s new day (BENCHMARKS.md "Stored parts read as runs").
    kept = _KeyedSpells(plan.wait_keys) if not plan.full and plan.wait_keys is not None else None
    spells = write.parts("analytics.time_to_start_jobs") if plan.full else kept
    # The slurmd pods' jobs are not a team's work: their GPUs are Slurm's capacity, and the
    # Slurm jobs on them its usage (counted there; with them, a team of the slurmd pods'
    # namespace had a second copy of those GPU-hours in fair share and fairness).
    engine = build_metric_tables(
        con,
        jobs=_without_slurmd(jobs, sok.slurmd_jobs),
        pending=_without_slurmd(core.pending, sok.slurmd_jobs),
        occupancy=occ,
        shares=core.shares,
        nodes=nodes,
        as_of=as_of,
        slurmd_maps=sok.slurmd_maps if sok.slurmd_maps.height else None,
        pod_jobs=core.pod_jobs,
        every=units[0],
        rows=units[1],
        spells=spells,
        holds=core.holds,
        days=None if plan.full else plan.days,
        wait_keys=plan.wait_keys if kept is not None else None,
        loss_policy=policy,
    )  # fmt: skip
    if kept is not None:
        write.job_rows("analytics.time_to_start_jobs", kept.frame(), kept.keys)
    elif isinstance(spells, _PartWriter):
        write.staged("analytics.time_to_start_jobs", spells)
    else:
        write("analytics.time_to_start_jobs", engine.pop("analytics.time_to_start_jobs"))
    release_memory(con)
    km = engine.pop("analytics.time_to_start_km")
    fair_hourly = engine.pop("fair_share_hourly")
    tts = _tts_summary(km) if km.width else naive_wait_percentiles(jobs.lazy()).collect()
    write("analytics.time_to_start_summary", tts)
    del km, tts
    fair = engine["analytics.fairness_weekly"]
    if fair.width:
        engine["analytics.fairness_weekly"] = shares_at_window_start(
            fair, core.shares, registry.history
        )
    weeks = engine.pop(TTS_COUNT_WEEKS, None)
    if weeks is not None:  # the weeks whose counts may have changed: their rows compared only
        write.weeks(TTS_COUNTS_TABLE, engine.pop(TTS_COUNTS_TABLE), weeks)
    for table in list(engine):
        write(table, engine.pop(table))
    every, rows = units
    days = None if plan.full else plan.days
    if plan.full:
        placed = write.parts("analytics.job_placement")
        for part in _placement(core, rows):
            placed(part)
        write.staged("analytics.job_placement", placed)
    else:
        keys = _placement_keys(core.jobs, plan, core.kueue_nodes, core.kueue_requests)
        write.jobs("analytics.job_placement", pl.concat(_placement(core, rows, keys)), keys)
    release_memory(con)
    # Every week's NVLink co-location, from the placements just written (the serving copy cuts
    # job_placement to its recent rows and keeps this whole).
    write(NVLINK_WEEKLY, run_named(con, "analytics/nvlink_colocation_weekly"))
    schedulers = scheduler_tables(
        con, registry.history, registry.mapping, core.nodes, as_of,
        tolerance=cfg.registry_drift_tolerance,
    )  # fmt: skip
    ledger = policy_change_tables(con)
    causes = (
        None
        if plan.full
        else _large_waits_on_days(
            core,
            plan,
            cfg.large_job_gpus,
            changed_spell_jobs(con, core.pending_spells, plan.diffs),
        )
    )
    domains = _domain_tables(con, cfg, core, occ, every, days, causes)
    release_memory(con)
    if causes is not None:  # the wait causes of those jobs only: their rows are rewritten
        write.job_rows(
            "analytics.large_job_wait_causes", domains.pop("analytics.large_job_wait_causes"),
            causes,
        )  # fmt: skip
    impact = policy_impact_tables(
        con, changes=ledger["analytics.policy_changes"], jobs=jobs, pending=core.pending,
        occupancy=occ, as_of=as_of,
        shares=core.shares, nodes=core.nodes,
        waterfall=waterfall, days=days,
        stranded=domains["analytics.topology_stranded_hourly"], fair_hourly=fair_hourly,
    )  # fmt: skip
    write("analytics.gpu_waterfall_hourly", waterfall)
    del waterfall
    rest = {
        CUTOFF_TABLE: as_of.cast(_CUTOFF_SCHEMA).sort("cluster"),  # type: ignore[arg-type]
        "core.k8s_pods": core.k8s_pods,
        "core.k8s_events": core.k8s_events,
        "core.jobs": jobs,
        "core.nodes": core.nodes,
        "analytics.data_quality": dq,
        "core.k8s_workloads": core.k8s_timings,
        "core.k8s_pending_reasons": core.k8s_pending_reasons,
        "core.topology": core.topology,
        "core.pending_reason_spells": core.pending_spells,
        HOLDS_TABLE: core.holds.sort(
            "cluster", "job_id", "attempt", "start_at", "host", nulls_last=True
        ),
        **domains,
        **schedulers,
        **ledger,
        **impact,
    }
    for table, frame in rest.items():
        write(table, frame)
    return windows.job_keys


#: The tables an incremental build compares with their stored rows bit for bit (floats
#: unrounded, :func:`pipelines.warehouse.diff_replace`), whichever way it writes them: the wait
#: spells and their counts. The counts count each spell at its exact wait (``duration_s``,
#: from integer microseconds, the same in every build), so a spell or count kept because it
#: equals the new one at 12 significant digits would no longer be the one counted.
_EXACT_TABLES = frozenset({"analytics.time_to_start_jobs", TTS_COUNTS_TABLE})


class _KeyedSpells:
    """Takes the wait spells part by part (``spells`` of :func:`build_metric_tables`) and keeps
    the rows of the jobs ``keys`` (``cluster, job_id``) only; :meth:`frame` is them, in the
    order they came."""

    def __init__(self, keys: pl.DataFrame) -> None:
        self.keys = keys.select(pl.col("cluster", "job_id").cast(pl.String()))
        self.parts: list[pl.DataFrame] = []

    def __call__(self, part: pl.DataFrame) -> None:
        self.parts.append(of_keys(part.lazy(), self.keys, ["cluster", "job_id"]).collect())

    def frame(self) -> pl.DataFrame:
        """The kept spells (:func:`build_metric_tables` emits at least one part, empty or not,
        for every cluster, and for a placeholder one when there is none).

        Raises:
            ValueError: no part came."""
        if not self.parts:
            raise ValueError("no wait spells were emitted (not even an empty part)")
        return pl.concat(self.parts, how="vertical_relaxed")


def _stored(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` as ``table`` stores it: without the cut-off ``as_of``, which only
    :data:`CUTOFF_TABLE` stores (the frames carry it in memory for the metrics that censor at
    it; the views join it back by ``cluster``)."""
    return frame if table == CUTOFF_TABLE else frame.drop("as_of", strict=False)


def _placement_keys(
    jobs: pl.DataFrame, plan: BuildPlan, *kueue: pl.DataFrame | None
) -> pl.DataFrame:
    """``cluster, job_id`` of the jobs whose ``analytics.job_placement`` rows an incremental
    build recomputes. A placement reads its attempt's row and the map and node states at its
    start, so: the jobs whose rows changed (``plan.changed_keys``, old rows and new), those
    with an attempt (of ``jobs``: ``cluster, job_id, start_at``) starting on one of the plan's
    days (the days where the map or a node interval changed are among them,
    :func:`pipelines.analytics.incremental.plan_build`), and every job of the ``kueue`` frames
    (``cluster, job_id``: Kueue topology assignments and requests, which the plan does not
    compare between builds)."""
    schema = {"cluster": pl.String(), "job_id": pl.String()}
    parts = [
        on_days(jobs.select("cluster", "job_id", "start_at"), plan.days, col="start_at"),
        plan.changed_keys,
        *kueue,
    ]
    return pl.concat(
        [p.select(pl.col(c).cast(t) for c, t in schema.items()) for p in parts if p is not None]
    ).unique()


def _placement(
    core: CoreFrames, rows: int = ROW_CHUNK, jobs: pl.DataFrame | None = None
) -> Iterator[pl.DataFrame]:
    """``analytics.job_placement``: every started attempt (with ``jobs``, ``cluster, job_id``:
    every started attempt of those jobs) against the map in force at its
    start, domain sizes counting only nodes up then (:func:`metrics.job_placement`), computed
    ``rows`` attempts at a time (:func:`pipelines.analytics.chunks.row_chunks`: each row
    depends on its attempt alone) and yielded a range at a time, in (cluster, job_id, attempt)
    order, so that the caller writes each before the next is computed (the concatenation is
    the table, sorted as one call's would be); a Kubernetes job whose pods were not seen is
    placed on the nodes of its Workload's topology assignment
    (:func:`metrics.with_assignment_nodes`, over every attempt of the jobs placed: it picks
    each job's latest attempt). ``topology_request``: the level
    its Kueue Workload's topology request names (:func:`metrics.topology_requests`; NULL: none,
    and for every Slurm job)."""
    cols = ["cluster", "job_id", "attempt", "start_at", "node_list"]
    attempts = core.jobs.select(*cols, *(c for c in ("segment_size",) if c in core.jobs.columns))
    # The jobs first: an assignment's nodes go to its job's latest attempt, which keeping every
    # attempt of a job keeps (a new day's few jobs, not the history's 2.1M attempts: 0.3 s).
    if jobs is not None:
        attempts = of_keys(attempts.lazy(), jobs, ["cluster", "job_id"]).collect()
    if core.kueue_nodes is not None and core.kueue_nodes.height:
        attempts = with_assignment_nodes(attempts.lazy(), core.kueue_nodes.lazy()).collect()
    topo, down = core.topology.lazy(), core.node_down.lazy()
    requests = (
        core.kueue_requests.lazy()
        if core.kueue_requests is not None
        else pl.LazyFrame(
            schema={"cluster": pl.String(), "job_id": pl.String(), "topology_request": pl.String()}
        )
    )
    # Units in (cluster, job_id, attempt) order, each placed and sorted by those keys and
    # level: the parts come sorted as one call's result would, without sorting it whole.
    for part in row_chunks(attempts, rows, order=("cluster", "job_id", "attempt")):
        yield (
            job_placement(part.lazy(), topo, down=down)
            .join(requests, on=["cluster", "job_id"], how="left", maintain_order="left")
            .collect()
        )


def _large_waits_on_days(
    core: CoreFrames, plan: BuildPlan, min_gpus: float, spelled: pl.DataFrame | None = None
) -> pl.DataFrame:
    """``cluster, job_id`` of the jobs whose large-job wait causes an incremental build
    recomputes: those asking for at least ``min_gpus`` GPUs (requested or allocated) whose
    eligible wait (to the start, or to the end or cut-off while never started: the wait as far
    as it can reach) touches one of the plan's days, the jobs whose waits may differ
    (``plan.wait_keys``: changed rows, old and new, and rows reading a cut-off that moved), and
    the jobs ``spelled`` (``cluster, job_id``: their pending-reason spells changed,
    :func:`pipelines.analytics.incremental.changed_spell_jobs`).

    A job's causes read its own wait and, at each hour of it, the domain capacity, its team's
    held GPUs and the running attempts' nodes, which the plan's days hold every hour where any
    of them changed, and its pending-reason spells, wherever they lie (a spell needs no planned
    day to move: ``spelled``); so no other job's causes can differ. A het job is one job, named
    by its leader ``H+0`` (:func:`metrics.het_jobs.het_unit_id`), whichever component's row or
    wait touches those days, whatever each component's size."""
    cut = core.as_of.select("cluster", pl.col("as_of").alias("_cut")).lazy()
    planned = cluster_days(plan.days).lazy()

    def day(col: pl.Expr) -> pl.Expr:
        return col.dt.convert_time_zone("UTC").dt.date()

    parts = []
    for frame, asked, to in (
        (core.jobs,
         pl.max_horizontal(pl.col("req_gpus").fill_null(0), pl.col("gpus").fill_null(0)),
         pl.coalesce("start_at", "_cut")),
        (core.pending, pl.col("req_gpus").fill_null(0), pl.coalesce("end_at", "_cut")),
    ):  # fmt: skip
        elig = pl.col("eligible_at")
        to = to.fill_null(elig)
        parts.append(
            frame.lazy()  # lazy: only the columns read here are taken from the attempts
            .join(cut, on="cluster", how="left")
            # a het component of any size: its het job asks the components' GPUs together
            .filter(((asked >= min_gpus) | is_het_component(pl.col("job_id"))) & elig.is_not_null())
            .select(
                "cluster",
                pl.col("job_id").cast(pl.String()),
                pl.date_ranges(
                    day(pl.min_horizontal(elig, to)), day(pl.max_horizontal(elig, to))
                ).alias("_day"),
            )
            .explode("_day")
            .join(planned, on=["cluster", "_day"], how="semi")
            .select("cluster", "job_id")
            .collect()
        )
    for keys in (plan.wait_keys, spelled):
        if keys is not None:
            parts.append(keys.select(pl.col("cluster", "job_id").cast(pl.String())))
    # a het job's causes are one row, keyed by its leader (metrics.large_job_wait_causes)
    return pl.concat(parts).with_columns(het_unit_id(pl.col("job_id"))).unique()


def _first_wait_hours(keys: pl.DataFrame, *frames: pl.DataFrame) -> pl.DataFrame:
    """Per cluster, the hour from which the large-job wait causes of the jobs ``keys`` read the
    domain capacity: the hour (UTC, truncated) of the earliest ``eligible_at`` among those
    jobs' rows in ``frames``.

    The causes cut each wait at hour boundaries from its ``eligible_at`` hour on and read the
    capacity at those hours only (:func:`metrics.large_job_wait_causes`), so an incremental
    build reads the stored capacity from there on (:func:`_domain_tables`), not the whole
    history's.

    Args:
        keys: ``cluster, job_id`` of the jobs.
        frames: attempts and never-started rows, each with ``cluster, job_id, eligible_at``
            (any time unit; zoned, or naive read as UTC).

    Returns:
        ``cluster, since`` (``Datetime(us, UTC)``), one row per cluster with such a row; a
        cluster whose rows have no ``eligible_at``, or that has none, is left out.
    """
    named = keys.select("cluster", pl.col("job_id").cast(pl.String())).unique()
    job = pl.col("job_id").cast(pl.String())
    if named.filter(is_het_component(pl.col("job_id"))).height:
        job = het_unit_id(job)  # a het job's key names every component's rows
    rows = [
        frame.lazy().select(
            "cluster",
            job.alias("job_id"),
            pl.col("eligible_at").cast(pl.Datetime("us", "UTC")),
        )
        for frame in frames
    ]
    return (
        of_keys(pl.concat(rows), named, ["cluster", "job_id"])
        .group_by("cluster")
        .agg(
            pl.col("eligible_at").min().dt.truncate("1h")
            .alias("since")
        )
        .filter(pl.col("since").is_not_null())
        .collect()
    )  # fmt: skip


def _domain_tables(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    core: CoreFrames,
    occ: pl.DataFrame,
    every: str = BUILD_CHUNK,
    days: Mapping[str, set[dt.date]] | None = None,
    causes_of: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """``analytics.domain_capacity_hourly``, ``segment_capacity_hourly``,
    ``topology_stranded_hourly``, ``large_job_wait_causes`` (:mod:`metrics.domains`) and
    ``topology_fragmentation_hourly`` (:func:`metrics.fragmentation_hourly`, gangs of
    :data:`metrics.GANG_NODES` nodes), every hour of ``occupancy_hourly``, segment sizes from
    ``[topology] segment_sizes``. The four hourly tables are computed one cluster-month at a
    time (:func:`pipelines.analytics.chunks.by_hour_chunks`: each hour reads only the attempts
    and waits that touch it; the capacity, the stranded GPUs and the fragmentation read the
    unit's :func:`metrics.domains.hourly_node_states`, computed once); with ``days`` (an
    incremental plan's cluster-days) only for the hours on those days. The large-job wait
    causes read the domain capacity of the hours of their waits: with ``days``, the stored
    rows of the other days and this build's of those
    (:func:`pipelines.analytics.incremental.with_stored_days`); with
    ``causes_of`` (``cluster, job_id``, :func:`_large_waits_on_days`) they are computed for
    those jobs only, and the stored rows are read only from the hour of those jobs' first wait
    on (:func:`_first_wait_hours`)."""
    topo, jobs, nodes = core.topology.lazy(), core.jobs.lazy(), core.nodes.lazy()
    down, pending = core.node_down.lazy(), core.pending.lazy()
    as_of = core.as_of.filter(pl.col("as_of").is_not_null()).lazy()
    sizes = cfg.segment_sizes

    stranded: list[pl.DataFrame] = []
    fragmentation: list[pl.DataFrame] = []

    def unit(hours: pl.DataFrame, c: str, lo: dt.datetime, hi: dt.datetime) -> pl.DataFrame:
        """The unit's domain capacity; its stranded GPUs and fragmentation go to ``stranded``
        and ``fragmentation`` (all three read the same node states, computed once:
        BENCHMARKS.md "The topology tables' node-hour states computed once")."""
        # The unit's attempts taken once: the node states, fragmentation, stranded GPUs and
        # capacity each read them, and left lazy each read filtered every attempt of the
        # history again (the stranded GPUs' het units twice more, a regex over every job id).
        held, at = touching(jobs, c, lo, hi).collect().lazy(), hours.lazy()
        states = hourly_node_states(topo, held, at, nodes, down).collect().lazy()
        fragmentation.append(
            fragmentation_hourly(topo, held, at, down=down, states=states).collect()
        )
        stranded.append(
            stranded_hourly(
                topo, held, at, nodes, as_of, pending=touching(pending, c, lo, hi), down=down,
                states=states,
            ).collect()
        )  # fmt: skip
        return domain_capacity_hourly(
            topo, held, at, nodes, down=down, segment_sizes=sizes, states=states
        ).collect()

    hours = on_days(occ.select("cluster", "hour"), days)
    capacity = by_hour_chunks(hours, unit, every)
    segments = by_hour_chunks(
        hours,
        lambda _h, c, lo, hi: segment_capacity_hourly(
            capacity.lazy().filter(
                (pl.col("cluster") == c) & (pl.col("hour") >= lo) & (pl.col("hour") < hi)
            ),
            sizes,
        ).collect(),
        every,
    )
    # This build's pending-reason spells only (none: the causes take the counterfactual
    # basis), never an earlier build's table: with every poll deleted, a full build sees none.
    spells = core.pending_spells if core.pending_spells.height else None
    every_hour = with_stored_days(
        con, "analytics.domain_capacity_hourly", capacity, days,
        order=("cluster", "hour", "level", "domain"),
        since=None if causes_of is None else _first_wait_hours(causes_of, core.jobs, core.pending),
    )  # fmt: skip
    causes = large_job_wait_causes(
        every_hour.lazy(), jobs, nodes, as_of, topology=topo, pending=pending,
        shares=core.shares.lazy() if core.shares.height else None,
        reasons=spells.lazy() if spells is not None else None, min_gpus=cfg.large_job_gpus,
        only=None if causes_of is None else causes_of.lazy(), down=down,
    ).collect()  # fmt: skip
    return {
        "analytics.domain_capacity_hourly": capacity,
        "analytics.segment_capacity_hourly": segments,
        "analytics.topology_stranded_hourly": pl.concat(stranded),
        "analytics.topology_fragmentation_hourly": pl.concat(fragmentation),
        "analytics.large_job_wait_causes": causes,
    }


class _TableWriter:
    """Writes a build's tables as they are computed, inside the caller's transaction.

    Called as ``write(table, frame)``: the frame is stored without the cut-off ``as_of``
    (:func:`_stored`); a full build replaces the table; an incremental build rewrites only the
    rows that changed (:func:`pipelines.warehouse.diff_replace`, or the difference the plan
    found, ``plan.diffs``: :func:`pipelines.warehouse.apply_row_diff`; a table whose columns changed
    is replaced whole), except the time-keyed :data:`WINDOW_TABLES` and
    :data:`~pipelines.analytics.incremental.INCREMENTAL_TABLES` (computed for the plan's days
    only), which it keeps until :meth:`finish` writes the plan's cluster-days of them
    (:func:`pipelines.analytics.incremental.write_window_tables`). A table replaced whole is
    written ``rows`` rows at a time (:meth:`_replace`). ``counts`` holds the row count of each
    table written, ``log`` the build-log rows.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, plan: BuildPlan, rows: int = ROW_CHUNK
    ) -> None:
        self.con, self.plan, self.rows = con, plan, rows
        self.log: list[tuple[str, str, int | None, int]] = []
        self.counts: dict[str, int] = {}
        self.windows: dict[str, pl.DataFrame] = {}
        self.windows_written: list[str] = []

    def __call__(self, table: str, frame: pl.DataFrame) -> None:
        frame = _stored(table, frame)
        if not self.plan.full and (table in WINDOW_TABLES or table in INCREMENTAL_TABLES):
            self.windows[table] = frame
            return
        found = self.plan.diffs.get(table)  # compared by the plan already
        self._put(
            table, frame.height,
            (lambda: diff_replace(self.con, table, frame, exact=table in _EXACT_TABLES))
            if found is None
            else (lambda: apply_row_diff(self.con, frame, found)),
            lambda: self._replace(table, frame),
        )  # fmt: skip
        release_memory(self.con)

    def _replace(self, table: str, frame: pl.DataFrame) -> None:
        """Replace ``table`` with ``frame``, ``rows`` rows at a time (:data:`ROW_CHUNK`),
        DuckDB's cache given back after each (:class:`_PartWriter`): DuckDB's copy of the
        year's attempts (``core.jobs``) written whole rose about 290 MB above the build's floor
        (BENCHMARKS.md, "The build gives DuckDB's cache back")."""
        if frame.height <= self.rows:
            replace_table(self.con, table, frame)
            return
        parts = _PartWriter(self.con, table)
        for part in frame.iter_slices(self.rows):
            parts(part)

    def weeks(self, table: str, frame: pl.DataFrame, weeks: pl.DataFrame) -> None:
        """Write an incremental build's ``table`` (every row in ``frame``) whose rows can
        differ from the stored ones only in the weeks ``weeks`` (``cluster, week``, NULLs
        equal): only those weeks' stored rows are compared with ``frame``'s rows of them, and
        the rows that differ written (:func:`pipelines.warehouse.diff_replace` under
        ``sql/analytics/rows_of_cluster_weeks.sql``, floats bit for bit in
        :data:`_EXACT_TABLES`); where the stored columns differ, the table is replaced whole."""
        frame = _stored(table, frame)
        part = frame.join(weeks, on=["cluster", "week"], how="semi", nulls_equal=True)
        if weeks.height:
            where = load_sql("analytics/rows_of_cluster_weeks")
            params = {"clusters": weeks["cluster"].to_list(), "weeks": weeks["week"].to_list()}
        else:  # no week to compare, but the stored columns still checked
            where, params = load_sql("analytics/no_stored_rows"), {}
        self._put(
            table, frame.height,
            lambda: diff_replace(
                self.con, table, part, where=where, params=params, exact=table in _EXACT_TABLES
            ),
            lambda: self._replace(table, frame),
        )  # fmt: skip
        release_memory(self.con)

    def jobs(self, table: str, frame: pl.DataFrame, keys: pl.DataFrame) -> None:
        """Write an incremental build's rows of the jobs ``keys`` (``cluster, job_id``) of a
        per-attempt ``table``: their stored rows are deleted and ``frame``'s inserted
        (:func:`pipelines.warehouse.replace_job_rows`)."""
        d, i = replace_job_rows(self.con, table, _stored(table, frame), keys)
        self.counts[table] = count_rows(self.con, table)
        self.log.append((table, "jobs", d, i))

    def job_rows(self, table: str, frame: pl.DataFrame, keys: pl.DataFrame) -> None:
        """Write an incremental build's rows of the jobs ``keys`` (``cluster, job_id``) of a
        per-attempt ``table``, ``frame`` holding every new row of those jobs and no other:
        only the rows that differ from those jobs' stored rows are written
        (:func:`pipelines.warehouse.diff_job_rows`, floats bit for bit in
        :data:`_EXACT_TABLES`); where the stored columns differ, the jobs' rows are deleted
        and ``frame`` inserted by column name, as :meth:`jobs` does."""
        frame = _stored(table, frame)
        done = diff_job_rows(self.con, table, frame, keys, exact=table in _EXACT_TABLES)
        if done is None:
            done = replace_job_rows(self.con, table, frame, keys)
        self.counts[table] = count_rows(self.con, table)
        self.log.append((table, "rows", *done))

    def parts(self, table: str) -> _PartWriter:
        """A writer of ``table`` part by part, for :meth:`staged` to finish: a full build
        writes the parts into ``table`` itself; an incremental one stages them in
        ``<table>_staged`` (inside the build's transaction, dropped by :meth:`staged`)."""
        return _PartWriter(self.con, table if self.plan.full else f"{table}_staged")

    def staged(self, table: str, parts: _PartWriter) -> None:
        """Write ``table`` from the rows ``parts`` wrote: nothing to do when they went to
        ``table`` itself; else a full plan replaces ``table`` with them and an incremental one
        rewrites only the rows that changed (a table whose columns changed is replaced whole),
        and the staged table is dropped."""
        if isinstance(parts, _RangeDiffWriter) and parts.diffed:
            self.counts[table] = count_rows(self.con, table)
            self.log.append((table, "rows", parts.deleted, parts.inserted))
            return
        if parts.table == table:
            self.counts[table] = parts.rows
            self.log.append((table, "full", None, parts.rows))
            return
        self._put(
            table, parts.rows,
            lambda: diff_replace_from(self.con, table, parts.table),
            lambda: replace_table_from(self.con, table, parts.table),
        )  # fmt: skip
        drop_table(self.con, parts.table)

    def _put(
        self,
        table: str,
        rows: int,
        diff: Callable[[], tuple[int, int] | None],
        replace: Callable[[], None],
    ) -> None:
        """Write ``table`` (``rows`` rows): an incremental build tries the row ``diff``; a full
        build, or a diff that cannot apply (columns changed), ``replace``s the table whole."""
        self.counts[table] = rows
        done = None if self.plan.full else diff()
        if done is None:
            replace()
            self.log.append((table, "full", None, rows))
        else:
            self.log.append((table, "rows", *done))

    def finish(
        self,
        job_keys: pl.DataFrame | None,
        *,
        pending: pl.DataFrame,
        as_of: pl.DataFrame,
        node_down: pl.DataFrame,
        resolution: str,
        pod_lives: pl.DataFrame | None = None,
    ) -> None:
        """Write an incremental build's time-keyed tables, record the build (with the pod
        lives ``pod_lives``) and create the views (still inside the caller's transaction)."""
        if not self.plan.full:
            assert job_keys is not None
            self.log += write_window_tables(self.con, self.plan, self.windows, job_keys)
            self.windows_written = list(self.windows)
            self.windows.clear()
        record_build(
            self.con, self.plan, as_of, pending, self.log, node_down, resolution, pod_lives
        )
        create_views(self.con)
