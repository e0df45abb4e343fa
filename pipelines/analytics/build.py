"""Rebuild the core and analytics layers from the raw tables, and publish the stable views.

The core layer and the window tables are recomputed from everything loaded; the time-keyed tables
and the telemetry summaries are rewritten only for the cluster-days affected since the last build
(:mod:`pipelines.analytics.incremental`; ``full=True`` rewrites all). The metric functions
themselves live in :mod:`metrics`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl

from metrics import naive_wait_percentiles, occupancy_hourly
from metrics.data_quality import DATA_QUALITY_SCHEMA, gpu_tracking_gaps
from pipelines.analytics.incremental import (
    INCREMENTAL_TABLES,
    apply_incremental,
    diff_replace,
    plan_build,
    record_build,
)
from pipelines.analytics.metrics_build import build_metric_tables
from pipelines.analytics.scheduler_views import scheduler_tables
from pipelines.config import Config
from pipelines.kubernetes import (
    k8s_attempts,
    k8s_pending_reasons,
    k8s_workload_timings,
    pending_workload_attempts,
    workload_attempts,
)
from pipelines.registry import (
    UNATTRIBUTED,
    cluster_shares,
    load_registry,
    load_registry_history,
    shares_at_window_start,
)
from pipelines.slurm import resolve_slurm_jobs, slurm_attempts
from pipelines.sql import SQL_DIR

__all__ = ["JOBS_COLUMNS", "VIEWS", "create_views", "rebuild"]

#: The ``jobs`` view's columns, in order (sql/README.md).
JOBS_COLUMNS = [
    "source", "cluster", "job_id", "job_id_raw", "attempt", "team", "account", "user_name",
    "partition", "qos", "state", "gpus", "req_gpus", "gpu_type", "submit_at", "eligible_at",
    "start_at", "end_at", "wait_s", "submit_wait_s", "run_s", "gpu_s", "node_list", "timelimit_s",
    "exit_code",
]  # fmt: skip

#: The published views, created in this order (each from ``sql/views/<name>.sql``).
VIEWS = (
    "jobs", "slurm_jobs", "rejected_rows", "occupancy_hourly", "time_to_start_summary",
    "k8s_events", "k8s_pods", "dcgm_samples", "ingests", "nodes", "data_quality",
    "gpu_waterfall_hourly", "occupancy_daily", "time_to_start_jobs", "fairness_weekly",
    "fairness_summary_weekly", "node_reliability", "k8s_workloads", "k8s_pending_reasons",
    "job_gpu_summary", "telemetry_coverage_daily", "gpu_activity", "kueue_cluster_queues",
    "kueue_local_queues", "scheduler_fairshare", "registry_drift",
    "telemetry_coverage_team_daily",
)  # fmt: skip

_INVENTORY_SCHEMA = {
    "host": pl.String(), "gpus": pl.Float64(), "gpu_type": pl.String(),
    "partition": pl.String(), "rack": pl.String(),
}  # fmt: skip


def _replace_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.width == 0:
        raise ValueError(f"{table}: no columns to write")
    _f = frame
    con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _f")


def _with_as_of(frame: pl.DataFrame, as_of: pl.DataFrame) -> pl.DataFrame:
    """``frame.join(as_of, on="cluster", how="left")`` (``as_of``: one row per cluster) without
    copying ``frame``'s columns: the cut-off is looked up per row and appended (a join gathers
    every column, a second copy of multi-million-row frames such as ``core.slurm_jobs``)."""
    if "as_of" in frame.columns or frame.height == 0:  # keep the join's own naming / typing
        return frame.join(as_of, on="cluster", how="left")
    return frame.with_columns(
        pl.col("cluster")
        .replace_strict(as_of["cluster"], as_of["as_of"], default=None,
                        return_dtype=as_of.schema["as_of"])
        .alias("as_of")
    )  # fmt: skip


def _read(con: duckdb.DuckDBPyConnection, table: str) -> pl.DataFrame:
    """A table as polars, every zoned timestamp normalised to ``UTC`` (DuckDB may say Etc/UTC)."""
    df: pl.DataFrame = con.sql(f"SELECT * FROM {table}").pl()
    zoned = [n for n, t in df.schema.items() if isinstance(t, pl.Datetime) and t.time_zone]
    return df.with_columns(pl.col(zoned).dt.convert_time_zone("UTC")) if zoned else df


def _inventory(cfg: Config) -> pl.DataFrame:
    frames = []
    if cfg.inventory_dir.is_dir():
        for f in sorted(cfg.inventory_dir.glob("*.csv")):
            df = pl.read_csv(f, schema_overrides=_INVENTORY_SCHEMA)
            for col, dtype in _INVENTORY_SCHEMA.items():
                if col not in df.columns:
                    df = df.with_columns(pl.lit(None, dtype=dtype).alias(col))
            frames.append(
                df.select(
                    pl.lit(f.stem).alias("cluster"),
                    *_INVENTORY_SCHEMA,
                    pl.lit("inventory").alias("capacity_source"),
                )
            )
    if not frames:
        return pl.DataFrame(
            schema={"cluster": pl.String(), **_INVENTORY_SCHEMA, "capacity_source": pl.String()}
        )
    return pl.concat(frames)


def _observed_nodes(slurm_attempts_df: pl.DataFrame, pods: pl.DataFrame) -> pl.DataFrame:
    """Nodes seen in the data, each with the most GPUs any one attempt held on it."""
    slurm = (
        slurm_attempts_df.filter((pl.col("gpus") > 0) & (pl.col("node_list").list.len() > 0))
        .select(
            "cluster",
            pl.col("node_list").alias("host"),
            (pl.col("gpus") / pl.col("node_list").list.len()).alias("gpus"),
            "gpu_type",
            "partition",
        )
        .explode("host")
    )
    k8s = pods.filter(pl.col("node_name").is_not_null() & (pl.col("gpus") > 0)).select(
        "cluster",
        pl.col("node_name").alias("host"),
        "gpus",
        pl.lit(None, dtype=pl.String()).alias("gpu_type"),
        pl.lit(None, dtype=pl.String()).alias("partition"),
    )
    both = pl.concat([slurm, k8s])
    return both.group_by("cluster", "host").agg(
        pl.col("gpus").max(),
        pl.col("gpu_type").drop_nulls().first(),
        pl.col("partition").drop_nulls().first(),
        pl.lit(None, dtype=pl.String()).alias("rack"),
        pl.lit("observed").alias("capacity_source"),
    )


def _node_states(
    con: duckdb.DuckDBPyConnection,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    jobs: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Registered capacity and down / planned-down GPU-seconds per cluster-hour: Slurm clusters
    from their node events (:func:`_slurm_node_states`), Kubernetes clusters from their Node
    snapshots and Node Events (:func:`metrics.k8s_node_states.k8s_node_states_hourly`, ``jobs``
    as its ``allocations``; a cluster with Slurm events keeps those)."""
    from metrics.k8s_node_states import K8S_NODE_STATE_COLUMNS, k8s_node_states_hourly

    reg, down = _slurm_node_states(con, nodes, as_of)
    have = {r[0] for r in con.execute("SELECT schema_name || '.' || table_name FROM "
                                      "duckdb_tables()").fetchall()}  # fmt: skip
    if "raw.k8s_nodes" not in have:
        return reg, down
    snaps = _read(con, "raw.k8s_nodes").sort("ingest_id").select(K8S_NODE_STATE_COLUMNS)
    events = _read(con, "raw.k8s_events") if "raw.k8s_events" in have else None
    regs, downs = [reg], [down]
    for c, cut in as_of.filter(pl.col("as_of").is_not_null()).iter_rows():
        if c in set(reg["cluster"]) | set(down["cluster"]):
            continue
        s = snaps.filter(pl.col("cluster") == c)
        if s.height == 0:
            continue
        e = None if events is None else events.filter(pl.col("cluster") == c).lazy()
        a = None if jobs is None else jobs.filter(pl.col("cluster") == c).lazy()
        r, d = k8s_node_states_hourly(s.lazy(), cut, events=e, allocations=a)
        regs.append(r.collect())
        downs.append(d.collect())
    return pl.concat(regs, how="vertical_relaxed"), pl.concat(downs, how="vertical_relaxed")


def _slurm_node_states(
    con: duckdb.DuckDBPyConnection, nodes: pl.DataFrame, as_of: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Registered capacity and down / planned-down GPU-seconds per cluster-hour (Slurm events).

    Cluster TRES registrations give capacity (sreport *Reported*). Node events give down time:
    ``DOWN``/``FAIL``/``DRAIN`` → down, unless the reason says maintenance (``maint``, ``planned``,
    ``reboot``, ``upgrade``) → planned_down. Event GPUs come from the event's TRES, else the
    node's inventory. Several exports of the same event are kept once.
    """
    from pipelines.slurm import (
        node_event_gpu_seconds_hourly,
        registered_gpu_seconds_hourly,
    )

    events = (
        _read(con, "raw.slurm_events")
        .sort("ingest_id")
        .unique(["cluster", "event", "node", "start_at"], keep="last", maintain_order=True)
    )
    empty_reg = pl.DataFrame(
        schema={
            "cluster": pl.String(),
            "hour": pl.Datetime("us", "UTC"),
            "capacity_gpu_s": pl.Float64(),
        }
    )
    empty_down = pl.DataFrame(
        schema={"cluster": pl.String(), "hour": pl.Datetime("us", "UTC"),
                "down_gpu_s": pl.Float64(), "planned_down_gpu_s": pl.Float64()}
    )  # fmt: skip
    if events.height == 0:
        return empty_reg, empty_down
    node_gpus = nodes.select("cluster", pl.col("host").alias("node"), pl.col("gpus").alias("_ng"))
    cluster_gpus = nodes.group_by("cluster").agg(pl.col("gpus").sum().alias("_cg"))
    events = (
        events.join(node_gpus, on=["cluster", "node"], how="left")
        .join(cluster_gpus, on="cluster", how="left")
        .with_columns(
            pl.coalesce(
                "gpus", pl.when(pl.col("event") == "node").then("_ng").otherwise("_cg")
            ).alias("gpus")
        )
        .drop("_ng", "_cg")
    )
    regs, downs = [], []
    for row in as_of.filter(pl.col("as_of").is_not_null()).iter_rows(named=True):
        c, cut = row["cluster"], row["as_of"]
        ev = events.filter(pl.col("cluster") == c)
        if ev.height == 0:
            continue
        lo = ev["start_at"].min()
        assert isinstance(lo, dt.datetime)
        start = max(lo, cut - dt.timedelta(days=400)).replace(minute=0, second=0, microsecond=0)
        end = cut + dt.timedelta(hours=1)
        regs.append(registered_gpu_seconds_hourly(ev.lazy(), start, end, cut).collect())
        planned = (
            pl.col("reason")
            .fill_null("")
            .str.to_lowercase()
            .str.contains("maint|planned|reboot|upgrade")
        )
        ev = ev.with_columns(
            pl.when(planned).then(pl.lit("planned")).otherwise(pl.lit("down")).alias("state")
        )
        per = node_event_gpu_seconds_hourly(ev.lazy(), start, end, cut).collect()
        downs.append(
            per.pivot(
                on="state", index=["cluster", "hour"], values="gpu_s", aggregate_function="sum"
            )
        )
    reg = pl.concat(regs) if regs else empty_reg
    if not downs:
        return reg.select("cluster", "hour", "capacity_gpu_s"), empty_down
    down = pl.concat(downs, how="diagonal_relaxed")
    for col in ("down", "planned"):
        if col not in down.columns:
            down = down.with_columns(pl.lit(0.0).alias(col))
    down = down.select(
        "cluster",
        "hour",
        pl.col("down").fill_null(0.0).alias("down_gpu_s"),
        pl.col("planned").fill_null(0.0).alias("planned_down_gpu_s"),
    )
    return reg.select("cluster", "hour", "capacity_gpu_s"), down


def _as_of(frames: list[tuple[pl.DataFrame, list[str]]]) -> pl.DataFrame:
    """Per cluster, the latest timestamp the loaded data knows about (the data cut-off)."""
    parts = []
    for df, cols in frames:
        present = [c for c in cols if c in df.columns]
        if df.height and present:
            parts.append(
                df.group_by("cluster").agg(
                    pl.max_horizontal(*[pl.col(c).max() for c in present]).alias("as_of")
                )
            )
    if not parts:
        return pl.DataFrame(schema={"cluster": pl.String(), "as_of": pl.Datetime("us", "UTC")})
    return pl.concat(parts).group_by("cluster").agg(pl.col("as_of").max())


def _data_quality(
    con: duckdb.DuckDBPyConnection, s_att: pl.DataFrame, nodes: pl.DataFrame, jobs: pl.DataFrame
) -> pl.DataFrame:
    """Every data-quality finding: GPU tracking gaps, DST repairs, rejects, observed capacity."""
    gpu_parts = (
        pl.concat(
            [
                nodes.filter(pl.col("gpus") > 0).select("cluster", "partition"),
                jobs.filter(pl.col("gpus") > 0).select("cluster", "partition"),
            ]
        )
        .drop_nulls()
        .unique()
    )
    parts = [gpu_tracking_gaps(s_att.lazy(), gpu_parts.lazy()).collect()]
    ingests = _read(con, "raw.ingests")
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
                info.filter(pl.col(col) > 0).select(
                    "cluster",
                    pl.lit(None, dtype=pl.Date()).alias("day"),
                    pl.lit(None, dtype=pl.String()).alias("partition"),
                    pl.lit(check).alias("check"),
                    pl.col(col).alias("value"),
                    pl.format("{}: {}", pl.col("file"), pl.lit(what)).alias("detail"),
                )
            )
    rejected = con.sql(
        "SELECT i.cluster, r.source, r.reason, count(*) AS n FROM raw.rejected_rows r "
        "JOIN raw.ingests i USING (ingest_id) GROUP BY ALL"
    ).pl()
    if rejected.height:
        parts.append(
            rejected.select(
                "cluster",
                pl.lit(None, dtype=pl.Date()).alias("day"),
                pl.lit(None, dtype=pl.String()).alias("partition"),
                pl.lit("rejected_rows").alias("check"),
                pl.col("n").cast(pl.Float64).alias("value"),
                pl.format("{}: {}", pl.col("source"), pl.col("reason")).alias("detail"),
            )
        )
    observed = nodes.filter(pl.col("capacity_source") == "observed")
    if observed.height:
        parts.append(
            observed.group_by("cluster")
            .agg(pl.col("gpus").sum().alias("value"))
            .select(
                "cluster",
                pl.lit(None, dtype=pl.Date()).alias("day"),
                pl.lit(None, dtype=pl.String()).alias("partition"),
                pl.lit("capacity_from_observed_nodes").alias("check"),
                "value",
                pl.lit(
                    "no inventory: capacity is the GPUs seen in allocations (a lower bound)"
                ).alias("detail"),
            )
        )
    return pl.concat([p.cast(DATA_QUALITY_SCHEMA) for p in parts]).sort(  # type: ignore[arg-type]
        "cluster", "check", "day", "partition", nulls_last=True
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
        con.execute((SQL_DIR / "views" / f"{name}.sql").read_text(encoding="utf-8"))


def rebuild(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    registry_path: Path | None = None,
    *,
    full: bool = False,
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

    Returns:
        Row counts of the tables written, by table name.
    """
    _t, mapping = load_registry(registry_path or cfg.registry_path)
    account_teams = mapping.filter(pl.col("kind") == "slurm_account")
    ns_teams = mapping.filter(pl.col("kind") == "k8s_namespace")
    lq_teams = mapping.filter(pl.col("kind") == "k8s_local_queue")

    # engine="in-memory": polars 2.1's default (streaming) engine panics on this plan with
    # "assertion failed: i < self.len()" (in a string expression of its select node) when the
    # raw frame arrives from DuckDB in 20 chunks (2.36M rows, a year of 10k GPUs); the same
    # rows in one chunk, or in 17, do not. The in-memory engine is also the faster here.
    slurm = resolve_slurm_jobs(_read(con, "raw.slurm_rows").lazy(), account_teams.lazy()).collect(
        engine="in-memory"
    )
    pods_raw = _read(con, "raw.k8s_pods")
    pods = pods_raw.sort("ingest_id").unique(["cluster", "uid"], keep="last", maintain_order=True)
    events = (
        _read(con, "raw.k8s_events")
        .sort("count", "last_seen", "ingest_id", nulls_last=False)
        .unique(["cluster", "uid"], keep="last", maintain_order=True)
    )
    # The latest snapshot of each Kueue Workload / LocalQueue (admission state from the
    # Workload's conditions; clusters without Workload objects keep the pods+events rebuild).
    workloads = (
        _read(con, "raw.k8s_workloads")
        .sort("snapshot_at", "ingest_id")
        .unique(["cluster", "uid"], keep="last", maintain_order=True)
    )
    local_queues = (
        _read(con, "raw.kueue_local_queues")
        .sort("snapshot_at", "ingest_id")
        .unique(["cluster", "uid"], keep="last", maintain_order=True)
    )
    k8s_att = k8s_attempts(
        pods.lazy(),
        events.lazy(),
        workloads.lazy() if workloads.height else None,
        local_queues.lazy() if local_queues.height else None,
    )
    k8s_jobs = workload_attempts(k8s_att, ns_teams.lazy(), lq_teams.lazy()).collect()
    k8s_pending = pending_workload_attempts(k8s_att, ns_teams.lazy(), lq_teams.lazy()).collect()
    k8s_timings = k8s_workload_timings(
        k8s_att, events.lazy(), ns_teams.lazy(), lq_teams.lazy()
    ).collect()
    k8s_reasons = k8s_pending_reasons(k8s_att, events.lazy()).collect()
    s_att = slurm_attempts(slurm.lazy()).collect()

    as_of = _as_of(
        [
            (slurm, ["submit_at", "eligible_at", "start_at", "end_at"]),
            (pods, ["created_at", "scheduled_at", "started_at", "finished_at", "deleted_at"]),
        ]
    )
    jobs = pl.concat(
        [s_att.select(JOBS_COLUMNS), k8s_jobs.select(JOBS_COLUMNS)], how="vertical_relaxed"
    ).with_columns(pl.col("team").fill_null(UNATTRIBUTED))
    jobs = _with_as_of(jobs, as_of)

    inventory = _inventory(cfg)
    observed = _observed_nodes(s_att, pods)
    nodes = pl.concat(
        [
            inventory,
            observed.join(inventory.select("cluster").unique(), on="cluster", how="anti").select(
                inventory.columns
            ),
        ],
        how="vertical_relaxed",
    )
    registered, down = _node_states(con, nodes, as_of, jobs)
    occ_parts = []
    for row in as_of.filter(pl.col("as_of").is_not_null()).iter_rows(named=True):
        c, cut = row["cluster"], row["as_of"]
        reg_c = registered.filter(pl.col("cluster") == c)
        occ_parts.append(
            occupancy_hourly(
                jobs.filter(pl.col("cluster") == c).lazy(),
                nodes.filter(pl.col("cluster") == c).lazy(),
                cut,
                down=down.filter(pl.col("cluster") == c).lazy(),
                registered=reg_c.lazy() if reg_c.height else None,
            ).collect()
        )
    occ = (
        pl.concat(occ_parts)
        if occ_parts
        else occupancy_hourly(jobs.clear().lazy(), nodes.lazy(), dt.datetime.now(dt.UTC)).collect()
    ).join(as_of, on="cluster", how="left")
    pending_cols = ["cluster", "source", "job_id", "partition", "team", "req_gpus", "submit_at",
                    "eligible_at", "end_at", "state"]  # fmt: skip
    pending = pl.concat(
        [
            slurm.filter(pl.col("is_allocation") & pl.col("start_at").is_null())
            .with_columns(pl.coalesce("req_gpus", "gpus").alias("req_gpus"))
            .select(pending_cols),
            k8s_pending.select(pending_cols),
        ],
        how="vertical_relaxed",
    )
    # the registry's share history per cluster: a share change mid-window applies per hour
    history = load_registry_history(registry_path or cfg.registry_path)
    shares = cluster_shares(history, nodes)
    pod_jobs = k8s_att.pods.select(
        "cluster", "namespace", pl.col("name").alias("pod"),
        pl.format("{}/{}", pl.col("namespace"), pl.col("group")).alias("job_id"),
    )  # fmt: skip
    # The data-quality findings are the last use of the Slurm attempts: computed here, the
    # attempts are freed before the metric engine (the rebuild's peak memory).
    dq = _data_quality(con, s_att, nodes, jobs).join(as_of, on="cluster", how="left")
    del s_att
    plan = plan_build(
        con, cfg, registry_path=registry_path or cfg.registry_path, jobs=jobs, pending=pending,
        occupancy=occ, nodes=nodes, as_of=as_of, full=full,
    )  # fmt: skip
    engine = build_metric_tables(
        con,
        jobs=jobs,
        pending=pending,
        occupancy=occ,
        shares=shares,
        nodes=nodes,
        as_of=as_of,
        idle_threshold=cfg.idle_activity,
        pod_jobs=pod_jobs,
        telemetry=plan.full,
    )  # fmt: skip
    km = engine.pop("analytics.time_to_start_km")
    tts = (
        _tts_summary(km).join(as_of, on="cluster", how="left")
        if km.width
        else (naive_wait_percentiles(jobs.lazy()).collect().join(as_of, on="cluster", how="left"))
    )
    fair = engine["analytics.fairness_weekly"]
    if fair.width:
        engine["analytics.fairness_weekly"] = shares_at_window_start(fair, shares, history)

    schedulers = scheduler_tables(
        con, history, mapping, nodes, as_of, tolerance=cfg.registry_drift_tolerance
    )
    written = {
        "core.slurm_jobs": _with_as_of(slurm, as_of),
        "core.k8s_pods": pods,
        "core.k8s_events": events,
        "core.jobs": jobs,
        "core.nodes": nodes,
        "analytics.occupancy_hourly": occ,
        "analytics.time_to_start_summary": tts,
        "analytics.data_quality": dq,
        "core.k8s_workloads": k8s_timings.join(as_of, on="cluster", how="left"),
        "core.k8s_pending_reasons": k8s_reasons.join(as_of, on="cluster", how="left"),
        **schedulers,
        **{t: _with_as_of(f, as_of) if "cluster" in f.columns else f for t, f in engine.items()},
    }
    kept = set() if plan.full else {*INCREMENTAL_TABLES, "analytics.job_gpu_summary"}
    counts = {t: f.height for t, f in written.items() if t not in kept}
    # Each frame is dropped once written (the write converts it for DuckDB, a transient copy):
    # with ``slurm`` and ``engine`` released, core.slurm_jobs and the per-job analytics tables
    # do not all stay in memory through the writes.
    del slurm, engine
    con.execute("BEGIN TRANSACTION")
    try:
        log: list[tuple[str, str, int | None, int]] = []
        for table in list(written):
            frame = written.pop(table)
            if table in kept:
                continue
            # Incremental builds rewrite only the rows that changed (a window whose values
            # moved); a table whose columns changed, or a full build, is replaced whole.
            diff = None if plan.full else diff_replace(con, table, frame)
            if diff is None:
                _replace_table(con, table, frame)
                log.append((table, "full", None, frame.height))
            else:
                log.append((table, "rows", *diff))
            del frame
        if not plan.full:
            log += apply_incremental(
                con, plan, jobs=jobs, pending=pending, occupancy=occ, as_of=as_of,
                pod_jobs=pod_jobs, nodes=nodes, idle_threshold=cfg.idle_activity,
                changed_keys=plan.changed_keys,
            )  # fmt: skip
        record_build(con, plan, as_of, pending, log)
        create_views(con)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    for table in kept:
        counts[table] = int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])
    return counts
