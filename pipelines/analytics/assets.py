"""Core and analytics assets: identity-resolved jobs, occupancy, time to start, the serving copy."""

# ruff: noqa: I002 - no `from __future__ import annotations` here: Dagster compares the `context`
# annotation object itself with AssetExecutionContext; a postponed (string) annotation fails.

from collections.abc import Iterator
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext
from dagster_duckdb import DuckDBResource

from pipelines._raw_assets import SettingsResource
from pipelines.analytics.build import rebuild
from pipelines.analytics.checks import (
    ALLOCATED_WITHIN_CAPACITY,
    END_NOT_BEFORE_START,
    SOK_K8S_LAYER_CONSERVES,
    SOK_SLURM_LAYER_CONSERVES,
    STRANDED_SPLITS_CONSERVE_LEAVES,
    UNIQUE_ATTEMPT_KEYS,
    WATERFALL_CONSERVES_CAPACITY,
    allocated_within_capacity,
    end_not_before_start,
    slurm_on_k8s_k8s_layer_conserves,
    slurm_on_k8s_slurm_layer_conserves,
    stranded_splits_conserve_leaves,
    unique_attempt_keys,
    waterfall_conserves_capacity,
)
from pipelines.config import load_config
from pipelines.lake_assets import LakeResource
from pipelines.warehouse import init_warehouse, publish_serving_copy, run_named
from pipelines.warehouse.lake_load import load_raw_from_lake

__all__ = [
    "CORE_ANALYTICS_KEYS",
    "RECOMMENDATIONS_KEY",
    "core_and_analytics",
    "recommendations",
    "serving_copy",
]

#: The recommendations table (and ``recommendations`` view), written after the metrics.
RECOMMENDATIONS_KEY = dg.AssetKey(["analytics", "recommendations"])

_RAW = [
    dg.AssetKey(["raw", n])
    for n in (
        "slurm_rows",
        "k8s_events",
        "k8s_pods",
        "k8s_objects",
        "dcgm_samples",
        "dcgm_hourly",
        "topology",
        "slurm_squeue",
    )
]

#: Tables the rebuild writes, as asset keys (prefix = DuckDB schema).
CORE_ANALYTICS_KEYS = {
    "core.slurm_jobs": dg.AssetKey(["core", "slurm_jobs"]),
    "core.k8s_pods": dg.AssetKey(["core", "k8s_pods"]),
    "core.k8s_events": dg.AssetKey(["core", "k8s_events"]),
    "core.jobs": dg.AssetKey(["core", "jobs"]),
    "core.job_holds": dg.AssetKey(["core", "job_holds"]),
    "core.nodes": dg.AssetKey(["core", "nodes"]),
    "analytics.occupancy_hourly": dg.AssetKey(["analytics", "occupancy_hourly"]),
    "analytics.time_to_start_summary": dg.AssetKey(["analytics", "time_to_start_summary"]),
    "analytics.data_quality": dg.AssetKey(["analytics", "data_quality"]),
    "analytics.gpu_waterfall_hourly": dg.AssetKey(["analytics", "gpu_waterfall_hourly"]),
    "analytics.time_to_start_jobs": dg.AssetKey(["analytics", "time_to_start_jobs"]),
    "analytics.time_to_start_counts": dg.AssetKey(["analytics", "time_to_start_counts"]),
    "analytics.fairness_weekly": dg.AssetKey(["analytics", "fairness_weekly"]),
    "analytics.fairness_summary_weekly": dg.AssetKey(["analytics", "fairness_summary_weekly"]),
    "analytics.fair_share_hourly": dg.AssetKey(["analytics", "fair_share_hourly"]),
    "analytics.node_reliability": dg.AssetKey(["analytics", "node_reliability"]),
    "analytics.node_signals_daily": dg.AssetKey(["analytics", "node_signals_daily"]),
    "core.k8s_workloads": dg.AssetKey(["core", "k8s_workloads"]),
    "core.k8s_pending_reasons": dg.AssetKey(["core", "k8s_pending_reasons"]),
    "analytics.job_gpu_summary": dg.AssetKey(["analytics", "job_gpu_summary"]),
    "analytics.gpu_activity": dg.AssetKey(["analytics", "gpu_activity"]),
    "core.topology": dg.AssetKey(["core", "topology"]),
    "analytics.job_placement": dg.AssetKey(["analytics", "job_placement"]),
    "analytics.nvlink_colocation_weekly": dg.AssetKey(["analytics", "nvlink_colocation_weekly"]),
    "analytics.topology_fragmentation_hourly": dg.AssetKey(
        ["analytics", "topology_fragmentation_hourly"]
    ),
    "core.pending_reason_spells": dg.AssetKey(["core", "pending_reason_spells"]),
    "analytics.domain_capacity_hourly": dg.AssetKey(["analytics", "domain_capacity_hourly"]),
    "analytics.segment_capacity_hourly": dg.AssetKey(["analytics", "segment_capacity_hourly"]),
    "analytics.topology_stranded_hourly": dg.AssetKey(["analytics", "topology_stranded_hourly"]),
    "analytics.large_job_wait_causes": dg.AssetKey(["analytics", "large_job_wait_causes"]),
    "analytics.slurm_node_map": dg.AssetKey(["analytics", "slurm_node_map"]),
    "analytics.slurm_on_k8s_hourly": dg.AssetKey(["analytics", "slurm_on_k8s_hourly"]),
}

_DESCRIPTIONS = {
    "core.slurm_jobs": "Every Slurm row once: identity, attempt, team, waits and GPU-seconds.",
    "core.k8s_pods": "One row per pod uid, from its latest snapshot.",
    "core.k8s_events": "One row per Kubernetes event uid, with its latest count.",
    "core.jobs": "One row per allocation attempt, Slurm and Kubernetes (the `jobs` view).",
    "core.job_holds": "Per Kubernetes attempt whose pods held apart: its pieces of held GPUs.",
    "core.nodes": "GPU nodes per cluster: inventory file, else nodes seen in the data (flagged).",
    "analytics.occupancy_hourly": "Allocated GPU-seconds against capacity per cluster and hour.",
    "analytics.time_to_start_summary": "Naive wait percentiles per cluster and size bucket.",
    "analytics.data_quality": (
        "Data-quality findings: GPUs not tracked, DST repairs, rejects, observed capacity, "
        "Kueue admissions without pods, unattributed GPU-hours, registry pools that match "
        "nothing, Slurm-on-Kubernetes checks."
    ),
    "analytics.gpu_waterfall_hourly": "GPU-time waterfall: 11 leaf buckets per cluster-hour.",
    "analytics.time_to_start_jobs": "One waiting spell per attempt or pending job (censored).",
    "analytics.time_to_start_counts": "Wait spells counted per week, group, duration, outcome.",
    "analytics.fairness_weekly": "Entitlement, demand, fair allocation and debt per team.",
    "analytics.fairness_summary_weekly": "Jain's index and unmet entitlement per window.",
    "analytics.fair_share_hourly": "Per team and hour: usage, demand and water-filled fair share.",
    "analytics.node_reliability": "NODE_FAIL, XID, down time and lemon score per node.",
    "analytics.node_signals_daily": "Per node and start day: attempts, failures, lost GPU-s.",
    "core.k8s_workloads": "One row per Kueue workload attempt with each stage's timestamp.",
    "core.k8s_pending_reasons": "Why Kubernetes workloads pended: FailedScheduling etc. counts.",
    "analytics.job_gpu_summary": "Per attempt: observed GPU-s, mean activity, idle GPU-s, XIDs.",
    "analytics.gpu_activity": "Per GPU and 5-minute bucket: activity, signal used, job, team.",
    "core.topology": "Node → domain per topology level, with the time each map was in force.",
    "analytics.job_placement": "Per attempt and topology level: domains used against the fewest.",
    "analytics.nvlink_colocation_weekly": "Per week: multi-node gangs inside one NVLink clique.",
    "analytics.topology_fragmentation_hourly": "Whole-domain gang slots vs unfragmented, hourly.",
    "core.pending_reason_spells": (
        "Per Slurm job: each pending reason's spell from squeue polls; per Kueue Workload: "
        "its topology not-fit spells."
    ),
    "analytics.domain_capacity_hourly": "Per domain and hour: healthy, held, free trays and GPUs.",
    "analytics.segment_capacity_hourly": "Per segment size and hour: slots, capacity efficiency.",
    "analytics.topology_stranded_hourly": "Free GPUs no pending job shape can use, per hour.",
    "analytics.large_job_wait_causes": "Per large job: quota, priority, fragmentation delay.",
    "analytics.slurm_node_map": "Slurm node → slurmd pod → Kubernetes node, dated.",
    "analytics.slurm_on_k8s_hourly": "Slurm on Kubernetes: GPU-seconds by owning layer, hourly.",
}


class RebuildConfig(dg.Config):
    """Run config of :func:`core_and_analytics`."""

    full: bool = False  # rewrite every table from all history instead of the affected days


@dg.multi_asset(
    specs=[
        dg.AssetSpec(key, deps=_RAW, group_name="analytics", description=_DESCRIPTIONS[t],
                     kinds={"duckdb", "polars"})
        for t, key in CORE_ANALYTICS_KEYS.items()
    ],
    check_specs=[
        dg.AssetCheckSpec(END_NOT_BEFORE_START, asset=CORE_ANALYTICS_KEYS["core.jobs"],
                          description="No attempt ends before it starts."),
        dg.AssetCheckSpec(UNIQUE_ATTEMPT_KEYS, asset=CORE_ANALYTICS_KEYS["core.slurm_jobs"],
                          description="(cluster, job_key, attempt, step) is unique."),
        dg.AssetCheckSpec(ALLOCATED_WITHIN_CAPACITY,
                          asset=CORE_ANALYTICS_KEYS["analytics.occupancy_hourly"],
                          description="Allocated GPU-seconds never exceed capacity in an hour."),
        dg.AssetCheckSpec(WATERFALL_CONSERVES_CAPACITY,
                          asset=CORE_ANALYTICS_KEYS["analytics.gpu_waterfall_hourly"],
                          description="Each cluster-hour's leaf buckets sum to capacity (0.1 %)."),
        dg.AssetCheckSpec(STRANDED_SPLITS_CONSERVE_LEAVES,
                          asset=CORE_ANALYTICS_KEYS["analytics.topology_stranded_hourly"],
                          description="Stranded and held-for-gangs parts sum to the idle and "
                                      "held leaves in every cluster-hour (0.1 %)."),
        dg.AssetCheckSpec(SOK_K8S_LAYER_CONSERVES,
                          asset=CORE_ANALYTICS_KEYS["analytics.slurm_on_k8s_hourly"],
                          description="Lent + native + idle = node capacity, idle ≥ 0."),
        dg.AssetCheckSpec(SOK_SLURM_LAYER_CONSERVES,
                          asset=CORE_ANALYTICS_KEYS["analytics.slurm_on_k8s_hourly"],
                          description="Slurm allocated + idle = lent to Slurm, idle ≥ 0."),
    ],
    pool="duckdb",
)  # fmt: skip
def core_and_analytics(
    context: AssetExecutionContext,
    config: RebuildConfig,
    duckdb: DuckDBResource,
    settings: SettingsResource,
    lake: LakeResource,
) -> Iterator[dg.MaterializeResult[Any] | dg.AssetCheckResult]:
    """Recompute the core and analytics tables (incremental: the days affected since the last
    build, see :mod:`pipelines.analytics.incremental`; ``full`` rewrites all), then the views.

    With a lake URL set, the raw tables are first loaded from the lake's Delta tables (the
    cluster-days committed since the last load, :func:`pipelines.warehouse.lake_load.
    load_raw_from_lake`); a lake that holds no raw table yet leaves the warehouse's as they are.
    A load that removed a cluster-day (no longer in the lake) makes the build a full one.
    """
    cfg = load_config(settings.config_path)
    with duckdb.get_connection() as con:
        init_warehouse(con)
        root_url = lake.resolved_root_url()
        full = config.full
        if root_url is not None:
            loaded = load_raw_from_lake(con, root_url, storage_options=lake.storage_options())
            context.log.info(
                loaded.skipped
                or f"lake: {len(loaded.loaded)} cluster-days loaded, {len(loaded.removed)} "
                f"removed, {loaded.unchanged} unchanged, {loaded.foreign_ingests} loads made "
                "outside the lake replaced"
            )
            # A cluster-day gone from the lake leaves no new load behind to mark its days as
            # affected (a reloaded one does: its files' new ingest ids): rebuild it all.
            full = full or bool(loaded.removed)
        counts = rebuild(con, cfg, full=full)
        mode, reason = run_named(con, "analytics/last_build_mode").row(0)
        context.log.info(f"core + analytics: {mode} build ({reason})")
        checks = [
            end_not_before_start(con),
            unique_attempt_keys(con),
            allocated_within_capacity(con),
            waterfall_conserves_capacity(con),
            stranded_splits_conserve_leaves(con),
            slurm_on_k8s_k8s_layer_conserves(con),
            slurm_on_k8s_slurm_layer_conserves(con),
        ]
    for table, key in CORE_ANALYTICS_KEYS.items():
        yield dg.MaterializeResult(asset_key=key, metadata={"row_count": counts[table]})
    yield from checks


@dg.asset(
    key=RECOMMENDATIONS_KEY,
    deps=[*CORE_ANALYTICS_KEYS.values(), dg.AssetKey(["raw", "slurm_state"])],
    group_name="analytics",
    pool="duckdb",
    kinds={"duckdb", "polars"},
)
def recommendations(
    duckdb: DuckDBResource, settings: SettingsResource
) -> dg.MaterializeResult[Any]:
    """Scheduler tuning recommendations: one row per finding (rule, scope, evidence, expected
    gain, the change as text and as a patch), also written to ``data/recommendations/``
    (``latest.json`` and per-scheduler patch files). Ids are stable while a finding persists.
    Every proposal is also appended to ``analytics.recommendation_proposals`` (first proposal
    time kept), so a later ledger change can be matched to a recommendation no longer made.
    A bad record of an earlier run's proposal file (``inputs/<cluster>/recommendations/``) goes
    to ``raw.rejected_rows`` (source ``recommendation-history``)."""
    from pipelines.recommendations import (
        proposal_record,
        read_inputs,
        recommendations_frame,
        record_proposal_rejects,
        write_outputs,
        write_proposals,
        write_recommendations_table,
    )

    cfg = load_config(settings.config_path)
    with duckdb.get_connection() as con:
        inputs = read_inputs(con, cfg)
        rejected = record_proposal_rejects(con, cfg)
        frame = recommendations_frame(
            inputs, large_job_gpus=cfg.large_job_gpus, idle_activity=cfg.idle_activity
        )
        rows = write_recommendations_table(con, frame)
        proposals = write_proposals(con, proposal_record(inputs, frame))
    files = write_outputs(frame, cfg.warehouse_path.parent / "recommendations", inputs.as_of)
    return dg.MaterializeResult(
        metadata={
            "row_count": rows,
            "proposals": proposals,
            "proposal_records_rejected": rejected,
            "files": [str(p) for p in files.values()],
        }
    )


@dg.asset(
    key_prefix=["analytics"],
    deps=[*CORE_ANALYTICS_KEYS.values(), RECOMMENDATIONS_KEY],
    group_name="analytics",
    pool="duckdb",
    kinds={"duckdb"},
)
def serving_copy(duckdb: DuckDBResource, settings: SettingsResource) -> dg.MaterializeResult[Any]:
    """The read-only copy of the warehouse that the dashboard and `goodput sql` read:
    aggregates whole, detail rows (jobs, samples, events) for the last
    ``[warehouse] serving_detail_days`` days (0 = all).

    Written to a temporary file and renamed over the old copy, so readers never block the writer
    and never see a half-written pipeline.
    """
    cfg = load_config(settings.config_path)
    path = publish_serving_copy(
        duckdb.database, cfg.serving_path, detail_days=cfg.serving_detail_days
    )
    return dg.MaterializeResult(metadata={"path": str(path), "bytes": path.stat().st_size})
