"""The Dagster code location loads, and its asset, check and job names are the expected ones."""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import ANALYTICS_JOB, RAW_JOB, defs

EXPECTED_ASSETS = {
    "raw/slurm_rows", "raw/k8s_events", "raw/k8s_pods", "raw/dcgm_samples", "raw/dcgm_hourly",
    "raw/k8s_objects",
    "core/slurm_jobs", "core/k8s_pods", "core/k8s_events", "core/jobs", "core/nodes",
    "core/job_holds",
    "analytics/occupancy_hourly", "analytics/time_to_start_summary", "analytics/serving_copy",
    "analytics/data_quality", "raw/slurm_state", "analytics/gpu_waterfall_hourly",
    "analytics/time_to_start_jobs", "analytics/time_to_start_counts",
    "analytics/fairness_weekly",
    "analytics/fairness_summary_weekly", "analytics/fair_share_hourly",
    "analytics/node_reliability", "analytics/node_signals_daily", "core/k8s_workloads",
    "core/k8s_pending_reasons", "analytics/job_gpu_summary",
    "analytics/gpu_activity", "analytics/weekly_report",
    "analytics/recommendations", "analytics/lake_export",
    "raw/topology", "core/topology", "analytics/job_placement",
    "analytics/nvlink_colocation_weekly",
    "analytics/topology_fragmentation_hourly", "raw/slurm_squeue", "core/pending_reason_spells",
    "analytics/domain_capacity_hourly",
    "analytics/segment_capacity_hourly",
    "analytics/topology_stranded_hourly",
    "analytics/large_job_wait_causes",
    "analytics/slurm_node_map",
    "analytics/slurm_on_k8s_hourly",
}  # fmt: skip


def test_definitions_load_and_resolve_every_job() -> None:
    """Every job resolves (always on in CI: a broken code location fails here)."""
    repo = defs.get_repository_def()
    assert {j.name for j in repo.get_all_jobs()} >= {RAW_JOB, ANALYTICS_JOB}
    for job in repo.get_all_jobs():
        assert job.graph is not None


def test_asset_names_snapshot() -> None:
    """The asset graph's keys are exactly the documented ones (renames are deliberate)."""
    keys = {"/".join(k.path) for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == EXPECTED_ASSETS


def test_every_asset_has_a_check_or_feeds_one() -> None:
    """Each raw asset carries its rejected-share check; core/analytics carry data-rule checks."""
    graph = defs.resolve_asset_graph()
    checked = {"/".join(k.asset_key.path) for k in graph.asset_check_keys}
    assert {"raw/slurm_rows", "raw/k8s_events", "raw/k8s_pods", "raw/dcgm_samples",
            "core/jobs", "core/slurm_jobs", "analytics/occupancy_hourly"} <= checked  # fmt: skip


def test_writers_are_in_the_duckdb_pool() -> None:
    """Every asset that writes the warehouse is in the single-writer ``duckdb`` pool."""
    for a in defs.assets or []:
        assert isinstance(a, dg.AssetsDefinition)
        for spec in a.specs:
            if spec.key.path[0] in ("raw", "core", "analytics"):
                assert a.op.pool == "duckdb", spec.key
