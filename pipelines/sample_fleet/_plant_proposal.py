"""The planted cluster's proposal, as the product's own rule makes it before the change.

:func:`pre_change_frames` cuts a :class:`~pipelines.sample_fleet._policy_plant.PlantRun` at a
time (what ``sacct`` would report then: attempts eligible before it, starts and ends after it
unknown) into the frames the recommendation rules read (the ``jobs`` view's attempts, the
never-started jobs, the node inventory); :func:`rule_proposal` runs
:func:`metrics.recommendations.min_age_reserve.min_age_reserve` on them with the
``scontrol show config`` in force then.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.recommendations import Window
from metrics.recommendations.min_age_reserve import min_age_reserve
from metrics.recommendations.slurm_config import parse_scontrol_config
from pipelines.sample_fleet._policy_plant import (
    AGE_BEFORE,
    PLANT_LARGE_GPUS,
    PlantRun,
    _config_text,
)

__all__ = ["pre_change_frames", "rule_proposal"]

_TS = pl.Datetime("us", "UTC")


def _ts(t: int | None) -> dt.datetime | None:
    return None if t is None else dt.datetime.fromtimestamp(t, dt.UTC)


def pre_change_frames(
    run: PlantRun, cut: int, *, since: int | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """``(attempts, pending, nodes)`` of ``run`` as known at ``cut`` (epoch s).

    attempts: ``source, cluster, job_id, attempt, partition, qos, account, gpus, eligible_at,
    start_at, end_at, wait_s, run_s, timelimit_s`` — attempts started before ``cut`` (end NULL
    while running at ``cut``) and eligible at or after ``since`` (default the run's window
    start); pending: ``cluster, job_id, partition, qos, account, req_gpus, eligible_at,
    cancel_at, timelimit_s`` — attempts eligible in [since, cut) not started by ``cut``;
    nodes: ``cluster, host, partition, gpus``.
    """
    lo = run.win_start if since is None else since
    started, waiting = [], []
    name = run.cluster.name
    for job in run.jobs:
        for att in job.attempts:
            if att.eligible is None or not lo <= att.eligible < cut:
                continue
            jid = job.job_id if att.index == 0 else f"{job.job_id}#{att.index}"
            if att.start is not None and att.start < cut:
                end = att.end if att.end is not None and att.end <= cut else None
                started.append(
                    ("slurm", name, jid, att.index, job.partition, job.qos, job.team,
                     float(job.gpus), _ts(att.eligible), _ts(att.start), _ts(end),
                     float(att.start - att.eligible),
                     None if end is None else float(end - att.start), float(job.time_limit))
                )  # fmt: skip
            else:
                waiting.append(
                    (name, jid, job.partition, job.qos, job.team, float(job.gpus),
                     _ts(att.eligible), None, float(job.time_limit))
                )  # fmt: skip
    attempts = pl.DataFrame(
        started,
        schema={
            "source": pl.String(), "cluster": pl.String(), "job_id": pl.String(),
            "attempt": pl.Int64(), "partition": pl.String(), "qos": pl.String(),
            "account": pl.String(), "gpus": pl.Float64(), "eligible_at": _TS, "start_at": _TS,
            "end_at": _TS, "wait_s": pl.Float64(), "run_s": pl.Float64(),
            "timelimit_s": pl.Float64(),
        },
        orient="row",
    )  # fmt: skip
    pending = pl.DataFrame(
        waiting,
        schema={
            "cluster": pl.String(), "job_id": pl.String(), "partition": pl.String(),
            "qos": pl.String(), "account": pl.String(), "req_gpus": pl.Float64(),
            "eligible_at": _TS, "cancel_at": _TS, "timelimit_s": pl.Float64(),
        },
        orient="row",
    )  # fmt: skip
    nodes = pl.DataFrame(
        {
            "cluster": [name] * len(run.cluster.nodes),
            "host": [n.host for n in run.cluster.nodes],
            "partition": [n.partition for n in run.cluster.nodes],
            "gpus": [float(n.gpus) for n in run.cluster.nodes],
        }
    )
    return attempts, pending, nodes


def rule_proposal(run: PlantRun, cut: int, *, window_days: int = 14) -> pl.DataFrame:
    """The ``backfill_min_age_reserve`` rule on ``run``'s last ``window_days`` days before
    ``cut`` (the recommendation pipeline's default window), with the ``scontrol show config``
    in force then (``bf_min_age_reserve`` = :data:`AGE_BEFORE`).

    Returns:
        The rule's :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` frame.
    """
    since = max(run.win_start, cut - window_days * 86400)
    attempts, pending, nodes = pre_change_frames(run, cut, since=since)
    config = parse_scontrol_config(_config_text(run.cluster.name, cut, AGE_BEFORE))
    return min_age_reserve(
        attempts,
        pending,
        nodes,
        Window(dt.datetime.fromtimestamp(since, dt.UTC), dt.datetime.fromtimestamp(cut, dt.UTC)),
        cluster_config=config,
        large_gpus=PLANT_LARGE_GPUS,
    )
