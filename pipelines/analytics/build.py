"""Rebuild the core and analytics layers from the raw tables, and publish the stable views.

Pure recomputation over everything loaded (the pipeline's inputs at this stage are weeks, not
years); the metric functions themselves live in :mod:`metrics`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl

from metrics import naive_wait_percentiles, occupancy_hourly
from metrics.data_quality import DATA_QUALITY_SCHEMA, gpu_tracking_gaps
from pipelines.analytics.metrics_build import build_metric_tables
from pipelines.config import Config
from pipelines.kubernetes._attempts import (
    k8s_attempts,
    pending_workload_attempts,
    workload_attempts,
)
from pipelines.kubernetes._timings import k8s_pending_reasons, k8s_workload_timings
from pipelines.registry import UNATTRIBUTED, load_registry
from pipelines.slurm._identity import resolve_slurm_jobs, slurm_attempts
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
    "job_gpu_summary", "telemetry_coverage_daily", "gpu_activity",
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
    con: duckdb.DuckDBPyConnection, nodes: pl.DataFrame, as_of: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Registered capacity and down / planned-down GPU-seconds per cluster-hour (Slurm events).

    Cluster TRES registrations give capacity (sreport *Reported*). Node events give down time:
    ``DOWN``/``FAIL``/``DRAIN`` → down, unless the reason says maintenance (``maint``, ``planned``,
    ``reboot``, ``upgrade``) → planned_down. Event GPUs come from the event's TRES, else the
    node's inventory. Several exports of the same event are kept once.
    """
    from pipelines.slurm._cluster_state import (
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
    con: duckdb.DuckDBPyConnection, cfg: Config, registry_path: Path | None = None
) -> dict[str, int]:
    """Recompute core and analytics tables from the raw tables, then create the views.

    Args:
        con: read-write connection to an initialised warehouse.
        cfg: configuration (inventory folder, registry, thresholds).
        registry_path: overrides the configured allocation registry.

    Returns:
        Row counts of the tables written, by table name.
    """
    _t, mapping = load_registry(registry_path or cfg.registry_path)
    account_teams = mapping.filter(pl.col("kind") == "slurm_account")
    ns_teams = mapping.filter(pl.col("kind") == "k8s_namespace")
    lq_teams = mapping.filter(pl.col("kind") == "k8s_local_queue")

    slurm = resolve_slurm_jobs(_read(con, "raw.slurm_rows").lazy(), account_teams.lazy()).collect()
    pods_raw = _read(con, "raw.k8s_pods")
    pods = pods_raw.sort("ingest_id").unique(["cluster", "uid"], keep="last", maintain_order=True)
    events = (
        _read(con, "raw.k8s_events")
        .sort("count", "last_seen", "ingest_id", nulls_last=False)
        .unique(["cluster", "uid"], keep="last", maintain_order=True)
    )
    k8s_att = k8s_attempts(pods.lazy(), events.lazy(), None, None)
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
    jobs = jobs.join(as_of, on="cluster", how="left")

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
    registered, down = _node_states(con, nodes, as_of)
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
    teams, _mapping = load_registry(registry_path or cfg.registry_path)
    engine = build_metric_tables(
        con,
        jobs=jobs,
        pending=pending,
        occupancy=occ,
        shares=teams,
        nodes=nodes,
        as_of=as_of,
        idle_threshold=cfg.idle_activity,
        pod_jobs=k8s_att.pods.select(
            "cluster", "namespace", pl.col("name").alias("pod"),
            pl.format("{}/{}", pl.col("namespace"), pl.col("group")).alias("job_id"),
        ),
    )  # fmt: skip
    km = engine.pop("analytics.time_to_start_km")
    tts = (
        _tts_summary(km).join(as_of, on="cluster", how="left")
        if km.width
        else (naive_wait_percentiles(jobs.lazy()).collect().join(as_of, on="cluster", how="left"))
    )
    fair = engine["analytics.fairness_weekly"]
    if fair.width:
        engine["analytics.fairness_weekly"] = fair.join(
            teams.select("team", "share"), on="team", how="left"
        )

    dq = _data_quality(con, s_att, nodes, jobs).join(as_of, on="cluster", how="left")
    written = {
        "core.slurm_jobs": slurm.join(as_of, on="cluster", how="left"),
        "core.k8s_pods": pods,
        "core.k8s_events": events,
        "core.jobs": jobs,
        "core.nodes": nodes,
        "analytics.occupancy_hourly": occ,
        "analytics.time_to_start_summary": tts,
        "analytics.data_quality": dq,
        "core.k8s_workloads": k8s_timings.join(as_of, on="cluster", how="left"),
        "core.k8s_pending_reasons": k8s_reasons.join(as_of, on="cluster", how="left"),
        **{
            t: (f.join(as_of, on="cluster", how="left") if "cluster" in f.columns else f)
            for t, f in engine.items()
        },
    }
    for table, frame in written.items():
        _replace_table(con, table, frame)
    create_views(con)
    return {t: f.height for t, f in written.items()}
