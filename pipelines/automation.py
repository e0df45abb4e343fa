"""Schedules and sensors: a daily run per cluster, a sensor that loads new input files, and the
frequent poll of live Slurm state."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path

import dagster as dg

from pipelines._file_source import KIND_GLOBS, _day_of, _files
from pipelines.config import Config
from pipelines.poll_job import poll_slurm_state
from pipelines.slurm.poll import POLL_CRON, live_poll_clusters, poll_kinds

__all__ = [
    "SLURM_POLL_JOB",
    "build_daily_schedules",
    "build_new_files_sensor",
    "build_slurm_poll",
    "input_fingerprints",
]

#: The job the ``slurm_live_poll`` schedule runs.
SLURM_POLL_JOB = "slurm_live_poll_job"


def input_fingerprints(cluster_dirs: Mapping[str, Path]) -> dict[str, list[object]]:
    """Every input file as ``path → [cluster, day, mtime_ns, size]``.

    Args:
        cluster_dirs: cluster → its input folder (``Config.cluster_input_dirs()``).
    """
    out: dict[str, list[object]] = {}
    for cluster, cluster_dir in cluster_dirs.items():
        for kind in KIND_GLOBS:
            for p in _files(cluster_dir, kind):
                st = p.stat()
                out[str(p)] = [cluster, _day_of(p), st.st_mtime_ns, st.st_size]
    return out


def build_new_files_sensor(
    cfg: Config,
    raw_job: dg.UnresolvedAssetJobDefinition,
    analytics_job: dg.UnresolvedAssetJobDefinition,
) -> dg.SensorDefinition:
    """A sensor that requests a raw run for each cluster-day with a new or changed input file.

    The cursor holds each file's modification time and size; a partition is requested once per
    change (the run key names the partition and the change), then one analytics refresh.
    """
    cluster_dirs = cfg.cluster_input_dirs()

    @dg.sensor(
        name="new_input_files",
        jobs=[raw_job, analytics_job],
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Load each cluster-day whose input files are new or changed, then refresh.",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        seen: dict[str, list[object]] = json.loads(context.cursor) if context.cursor else {}
        now = input_fingerprints(cluster_dirs)
        changed = sorted({(v[0], v[1]) for k, v in now.items() if seen.get(k) != v})
        stamp = max((int(str(v[2])) for v in now.values()), default=0)
        requests = [
            dg.RunRequest(
                run_key=f"{cluster}|{day}|{stamp}",
                partition_key=dg.MultiPartitionKey({"cluster": str(cluster), "date": str(day)}),
                job_name=raw_job.name,
            )
            for cluster, day in changed
        ]
        if requests:
            requests.append(dg.RunRequest(run_key=f"refresh|{stamp}", job_name=analytics_job.name))
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(now, sort_keys=True))

    return _sensor


def build_daily_schedules(
    cfg: Config, raw_job: str, analytics_job: str
) -> list[dg.ScheduleDefinition]:
    """At 00:30 UTC, load yesterday for every cluster; at 01:30 UTC, refresh analytics."""
    clusters = [c.name for c in cfg.clusters] or [cfg.default_cluster]

    @dg.schedule(
        name="daily_ingest",
        cron_schedule="30 0 * * *",
        execution_timezone="UTC",
        job_name=raw_job,
        description="Yesterday's partition of every cluster (live sources fetch it then).",
    )
    def _daily(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        day = (context.scheduled_execution_time.date() - dt.timedelta(days=1)).isoformat()
        return [
            dg.RunRequest(
                run_key=f"{c}|{day}",
                partition_key=dg.MultiPartitionKey({"cluster": c, "date": day}),
            )
            for c in clusters
        ]

    refresh = dg.ScheduleDefinition(
        name="daily_analytics_refresh",
        cron_schedule="30 1 * * *",
        execution_timezone="UTC",
        job_name=analytics_job,
        description="Recompute core and analytics and publish the serving copy.",
    )
    return [_daily, refresh]


def build_slurm_poll(
    cfg: Config,
) -> tuple[dg.JobDefinition, dg.ScheduleDefinition] | None:
    """The job and schedule that poll live Slurm state (``squeue``; ``node_comments`` on Slurm
    run on Kubernetes) every two minutes (:data:`~pipelines.slurm.poll.POLL_CRON`), one run
    per live Slurm cluster, spooled into the inputs folder as the live source does.

    Returns:
        ``(job, schedule)``, or None where no cluster's source is live (``[sources] sacct`` is
        not ``cli``): exported files carry no live state to poll. The schedule starts running
        (``DefaultScheduleStatus.RUNNING``) since it is defined only where it can work.
    """
    clusters = live_poll_clusters(cfg)
    if not clusters:
        return None
    spool = str(cfg.inputs_dir)

    @dg.job(name=SLURM_POLL_JOB, description="Poll live Slurm state (squeue, node comments).")
    def _job() -> None:
        poll_slurm_state()

    @dg.schedule(
        name="slurm_live_poll",
        cron_schedule=POLL_CRON,
        execution_timezone="UTC",
        job=_job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Poll squeue (and node comments) of every live Slurm cluster.",
    )
    def _schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
        stamp = context.scheduled_execution_time.isoformat()
        return [
            dg.RunRequest(
                run_key=f"poll|{c.name}|{stamp}",
                run_config={
                    "ops": {"poll_slurm_state": {"config": {
                        "spool_dir": spool, "cluster": c.name, "kinds": poll_kinds(c),
                    }}}
                },
                tags={"cluster": c.name},
            )
            for c in clusters
        ]  # fmt: skip

    return _job, _schedule
