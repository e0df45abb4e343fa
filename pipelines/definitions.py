"""The Dagster code location: every source's assets, checks, jobs and resources in one ``defs``.

Load it with ``dagster dev -m pipelines.definitions`` (``make dev``) or ``goodput materialize``.
"""

from __future__ import annotations

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipelines._raw_assets import SettingsResource, build_raw_assets
from pipelines._sources import InputSource
from pipelines.analytics.assets import core_and_analytics, recommendations, serving_copy
from pipelines.automation import (
    build_daily_schedules,
    build_new_files_sensor,
    build_slurm_poll,
)
from pipelines.config import Config, load_config
from pipelines.dcgm.resources import (
    DcgmFileSource,
    DcgmHourlyFileSource,
    PrometheusDcgmSource,
)
from pipelines.freshness import build_freshness_checks, build_freshness_sensor
from pipelines.kubernetes.resources import (
    K8sEventsFileSource,
    K8sObjectsFileSource,
    K8sPodsFileSource,
)
from pipelines.lake_assets import LakeResource, lake_export
from pipelines.lake_job import lake_raw_job
from pipelines.partitions import cluster_day_partitions
from pipelines.report.dagster import (
    WEEKLY_REPORT_KEY,
    weekly_report,
    weekly_report_job,
    weekly_report_schedule,
)
from pipelines.slurm.resources import (
    SacctCliSource,
    SacctFileSource,
    SlurmStateCliSource,
    SlurmStateFileSource,
    SqueueFileSource,
    TopologyFileSource,
)

__all__ = ["ANALYTICS_JOB", "RAW_JOB", "build_defs", "defs"]

RAW_JOB = "raw_ingest"
ANALYTICS_JOB = "analytics_refresh"


def _cluster_dirs(cfg: Config) -> dict[str, str]:
    """Cluster → input folder, the file sources' ``cluster_dirs`` (``input_dir`` honoured)."""
    return {name: str(d) for name, d in cfg.cluster_input_dirs().items()}


def _sacct_source(cfg: Config) -> InputSource:
    if cfg.sources.get("sacct") == "cli":
        return SacctCliSource(spool_dir=str(cfg.inputs_dir))
    return SacctFileSource(inputs_dir=str(cfg.inputs_dir), cluster_dirs=_cluster_dirs(cfg))


def _slurm_state_source(cfg: Config) -> InputSource:
    if cfg.sources.get("sacct") == "cli":
        return SlurmStateCliSource(
            spool_dir=str(cfg.inputs_dir), kinds=["nodes", "events", "sshare"]
        )
    return SlurmStateFileSource(inputs_dir=str(cfg.inputs_dir), cluster_dirs=_cluster_dirs(cfg))


def _dcgm_source(cfg: Config) -> InputSource:
    if cfg.sources.get("dcgm") == "prometheus":
        if cfg.prometheus_auth == "none":
            return PrometheusDcgmSource(
                url=cfg.prometheus_url, spool_dir=str(cfg.inputs_dir), step_s=cfg.prometheus_step_s
            )
        return PrometheusDcgmSource.from_env(
            str(cfg.inputs_dir),
            auth=cfg.prometheus_auth,  # type: ignore[arg-type]  # checked by load_config
            step_s=cfg.prometheus_step_s,
        )
    return DcgmFileSource(inputs_dir=str(cfg.inputs_dir), cluster_dirs=_cluster_dirs(cfg))


def build_defs(cfg: Config | None = None) -> dg.Definitions:
    """All definitions for the configured clusters.

    Args:
        cfg: configuration; default :func:`pipelines.config.load_config`.
    """
    cfg = cfg or load_config()
    parts = cluster_day_partitions(cfg)
    raw_assets = build_raw_assets(parts)
    inputs = str(cfg.inputs_dir)
    dirs = _cluster_dirs(cfg)
    raw_job = dg.define_asset_job(
        RAW_JOB,
        selection=dg.AssetSelection.key_prefixes("raw"),
        description="Load one cluster-day of every input kind.",
    )
    analytics_job = dg.define_asset_job(
        ANALYTICS_JOB,
        selection=dg.AssetSelection.key_prefixes("core", "analytics")
        - dg.AssetSelection.assets(WEEKLY_REPORT_KEY),
        description="Recompute core + analytics; publish the serving copy.",
    )
    freshness_checks = build_freshness_checks(cfg, raw_assets)
    poll = build_slurm_poll(cfg)
    poll_jobs, poll_schedules = ([poll[0]], [poll[1]]) if poll is not None else ([], [])
    return dg.Definitions(
        asset_checks=freshness_checks,
        assets=[
            *raw_assets,
            core_and_analytics,
            recommendations,
            serving_copy,
            lake_export,
            weekly_report,
        ],
        jobs=[raw_job, analytics_job, weekly_report_job, lake_raw_job, *poll_jobs],
        schedules=[
            *build_daily_schedules(cfg, RAW_JOB, ANALYTICS_JOB),
            weekly_report_schedule(cfg),
            *poll_schedules,
        ],
        sensors=[
            build_new_files_sensor(cfg, raw_job, analytics_job),
            build_freshness_sensor(freshness_checks),
        ],
        resources={
            "duckdb": DuckDBResource(database=str(cfg.warehouse_path)),
            "settings": SettingsResource(config_path=str(cfg.path)),
            "sacct_source": _sacct_source(cfg),
            "slurm_state_source": _slurm_state_source(cfg),
            "topology_source": TopologyFileSource(inputs_dir=inputs, cluster_dirs=dirs),
            "slurm_squeue_source": SqueueFileSource(inputs_dir=inputs, cluster_dirs=dirs),
            "k8s_events_source": K8sEventsFileSource(inputs_dir=inputs, cluster_dirs=dirs),
            "k8s_pods_source": K8sPodsFileSource(inputs_dir=inputs, cluster_dirs=dirs),
            "k8s_objects_source": K8sObjectsFileSource(inputs_dir=inputs, cluster_dirs=dirs),
            "dcgm_source": _dcgm_source(cfg),
            "dcgm_hourly_source": DcgmHourlyFileSource(inputs_dir=inputs, cluster_dirs=dirs),
            "lake": LakeResource(),
        },
    )


defs = build_defs()
