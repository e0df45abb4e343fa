"""A per-job efficiency report, like Slurm's ``seff`` and Princeton's ``jobstats``.

For each attempt of a job: GPUs, state, wait, run time, GPU-hours, mean GPU activity and idle
GPU-hours from DCGM 5-minute means, peak GPU memory, and the outcome in the waterfall's words.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import hostlist
import polars as pl

from metrics.mig import MIG_PATTERN
from pipelines.report._common import fmt_duration, fmt_hours, fmt_pct, query
from pipelines.warehouse.safe_sql import open_readonly

__all__ = [
    "JobReport",
    "advice",
    "fmt_hours",
    "format_job_report",
    "job_report",
    "job_report_on",
    "job_waterfall",
    "outcome",
]

#: Base state → (what happened, the waterfall leaf its GPU-time lands in). METRICS.md.
_OUTCOMES = {
    "COMPLETED": ("completed", "goodput"),
    "RUNNING": ("still running", "goodput"),
    "SUSPENDED": ("suspended", "goodput"),
    "FAILED": ("failed", "failed_work_user"),
    "OUT_OF_MEMORY": ("ran out of memory", "failed_work_user"),
    "NODE_FAIL": ("ended by a node failure", "failed_work_infra"),
    "BOOT_FAIL": ("its nodes failed to boot", "failed_work_infra"),
    "PREEMPTED": ("preempted", "preempted_work"),
    "REQUEUED": ("requeued", "preempted_work"),
    "TIMEOUT": ("hit its time limit", "timeout_work"),
    "DEADLINE": ("hit its deadline", "timeout_work"),
    "CANCELLED": ("cancelled", "cancelled_work"),
    "REVOKED": ("revoked", "cancelled_work"),
}


@dataclass(frozen=True)
class JobReport:
    """One job's attempts (``sql/report/job_attempts.sql`` columns) and never-started rows."""

    job_id: str
    attempts: pl.DataFrame
    never_started: pl.DataFrame
    idle_below: float

    def to_dicts(self) -> dict[str, Any]:
        """JSON-ready: ``{"job_id", "idle_below", "attempts": [...], "never_started": [...]}``."""

        def rows(df: pl.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: v.isoformat() if isinstance(v, dt.datetime) else v for k, v in r.items()}
                for r in df.iter_rows(named=True)
            ]

        return {
            "job_id": self.job_id,
            "idle_below": self.idle_below,
            "attempts": rows(self.attempts),
            "never_started": rows(self.never_started),
        }


def job_report(
    serving_db: str | Path, job_id: str, *, cluster: str | None = None, idle_below: float = 0.05
) -> JobReport:
    """Read one job's attempts and DCGM summaries from the serving copy.

    Args:
        serving_db: the serving copy (opened read-only, locked down).
        job_id: Slurm JobID or JobIDRaw (``123``, ``123_4``), or Kubernetes ``namespace/<workload>``
            (the pods grouped by owner, as in ``jobs``).
        cluster: only this cluster; ``None`` = every cluster with such a job.
        idle_below: θ: a GPU's 5-minute mean activity below it counts as idle.

    Raises:
        FileNotFoundError: no such serving copy.
    """
    con = open_readonly(serving_db)
    try:
        return job_report_on(con, job_id, cluster=cluster, idle_below=idle_below)
    finally:
        con.close()


def job_report_on(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    cluster: str | None = None,
    idle_below: float = 0.05,
) -> JobReport:
    """:func:`job_report` on a connection already open on the serving copy (read-only, zone
    UTC): the dashboard's shared reader. Same arguments otherwise."""
    params = {"job_id": job_id, "cluster": cluster}
    attempts = query(con, "job_attempts", idle_below=idle_below, mig_pattern=MIG_PATTERN, **params)
    never = query(con, "job_never_started", **params)
    return JobReport(job_id, attempts, never, idle_below)


def outcome(state: str | None, exit_code: int | None = None) -> str:
    """The attempt's outcome in words, with its waterfall leaf (``failed (exit 1) → ...``)."""
    base = (state or "UNKNOWN").split()[0].upper()
    what, leaf = _OUTCOMES.get(base, (base.lower(), "goodput"))
    if base == "FAILED" and exit_code is not None:
        what = f"failed with exit code {exit_code}"
    return f"{what} (GPU-time counted as {leaf})"


def _ts(value: dt.datetime | None) -> str:
    return "n/a" if value is None else value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _gpus(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _attempt_lines(r: dict[str, Any], idle_below: float) -> list[str]:
    running = r["end_at"] is None
    run_s = r["run_s"] if not running else (r["as_of"] - r["start_at"]).total_seconds()
    gpu_s = r["gpu_s"] if r["gpu_s"] is not None else r["gpu_s_so_far"]
    limit = f" (time limit {fmt_duration(r['timelimit_s'])})" if r["timelimit_s"] else ""
    so_far = f" so far (running at {_ts(r['as_of'])})" if running else ""
    lines = [
        f"Attempt {r['attempt']}",
        f"  State:               {r['state']}",
        f"  Outcome:             {_attempt_outcome(r)}",
        f"  GPUs:                {_gpus(r['gpus'])} (requested {_gpus(r['req_gpus'])})"
        + (f", {r['gpu_type']}" if r["gpu_type"] else ""),
        f"  Nodes:               {hostlist.collect_hostlist(r['node_list'] or []) or 'n/a'}",
        f"  Eligible:            {_ts(r['eligible_at'])}",
        f"  Start / end:         {_ts(r['start_at'])} / {_ts(r['end_at'])}",
        f"  Wait:                {fmt_duration(r['wait_s'])}",
        f"  Run time:            {fmt_duration(run_s)}{limit}{so_far}",
        f"  GPU-hours:           {_gpu_h(gpu_s)}{' so far' if running else ''}",
    ]
    if not r["observed_gpu_s"]:
        lines += [
            "  GPU activity:        no telemetry",
            "  Idle GPU-hours:      no telemetry",
            "  Peak GPU memory:     no telemetry",
        ]
        return lines
    coverage = r["observed_gpu_s"] / gpu_s if gpu_s else None
    lines += [
        f"  GPU activity:        {fmt_pct(r['mean_activity'])} (mean of 5-min means of "
        f"{r['signal']}; {r['gpus_observed']} GPUs, {fmt_pct(coverage)} of GPU-time observed)",
        f"  Idle GPU-hours:      {_gpu_h(r['idle_gpu_s'])} (5-min means below "
        f"{fmt_pct(idle_below, 0)})",
        "  Peak GPU memory:     "
        + (
            f"{r['peak_fb_used_mib']:.0f} MiB (DCGM_FI_DEV_FB_USED, highest GPU)"
            if r["peak_fb_used_mib"] is not None
            else "no telemetry"
        ),
    ]
    lines += [f"  Note:                {note}" for note in advice(r)]
    return lines


def _attempt_outcome(r: dict[str, Any]) -> str:
    """An attempt's outcome in words; a RUNNING attempt with an end is a runaway job, which the
    build ends at its time limit + 1 h (METRICS.md "Runaway Slurm attempts")."""
    if r["state"] == "RUNNING" and r["end_at"] is not None:
        return (
            "still running in the accounting database long past its time limit (a runaway job:"
            " counted to its time limit + 1 h; sacctmgr show runawayjobs)"
        )
    return outcome(r["state"], r["exit_code"])


def advice(r: dict[str, Any]) -> list[str]:
    """What ``jobstats`` would tell the job's owner about one attempt (a row of the report).

    Mostly idle GPUs (mean activity < 10 %), else half or more of the observed GPU-time idle (the
    report's idle rule), an attempt that used under a quarter of its time
    limit (a shorter limit lets the scheduler backfill it sooner), one that hit its limit, and
    telemetry covering under half the GPU-time (the figures are partial).
    """
    out: list[str] = []
    act, observed = r.get("mean_activity"), r.get("observed_gpu_s")
    if observed and act is not None and act < 0.1:
        out.append("the GPUs were mostly idle; check the job's GPU use")
    elif observed and (r.get("idle_gpu_s") or 0.0) >= 0.5 * observed:
        out.append(
            f"{(r.get('idle_gpu_s') or 0.0) / observed:.0%} of its observed GPU-time was idle: "
            "fewer GPUs, or overlapping data loading with compute, would free them"
        )
    limit, run = r.get("timelimit_s"), r.get("run_s")
    base = (r.get("state") or "").split(" ")[0].upper()
    if limit and run is not None and base == "COMPLETED" and run < 0.25 * limit:
        out.append(
            f"it ran {fmt_duration(run)} of its {fmt_duration(limit)} time limit; a limit "
            "nearer the run time lets the scheduler start it sooner (backfill)"
        )
    if base in ("TIMEOUT", "DEADLINE"):
        out.append("it hit its time limit: checkpoint, or ask for a longer limit")
    gpu_s = r.get("gpu_s") if r.get("gpu_s") is not None else r.get("gpu_s_so_far")
    if r.get("observed_gpu_s") and gpu_s and r["observed_gpu_s"] / gpu_s < 0.5:
        out.append("telemetry covers under half of its GPU-time: the activity figures are partial")
    return out


def job_waterfall(report: JobReport) -> pl.DataFrame:
    """The job's GPU-seconds by waterfall leaf (METRICS.md, ``whole_attempt``): an attempt in a
    loss leaf (failed, preempted, timed out, cancelled) puts all its GPU-time there; otherwise
    its idle GPU-seconds (the report's rule) are ``allocated_idle`` and the rest ``goodput``
    (unobserved time stays goodput). Running attempts count up to the data cut-off.

    Returns:
        ``cluster, attempt, leaf, gpu_s``, only non-zero rows.
    """
    rows: list[dict[str, Any]] = []
    for r in report.attempts.iter_rows(named=True):
        gpu_s = r["gpu_s"] if r["gpu_s"] is not None else r["gpu_s_so_far"]
        if not gpu_s:
            continue
        base = (r["state"] or "UNKNOWN").split()[0].upper()
        leaf = _OUTCOMES.get(base, ("", "goodput"))[1]
        key = {"cluster": r["cluster"], "attempt": r["attempt"]}
        if leaf != "goodput":
            rows.append({**key, "leaf": leaf, "gpu_s": float(gpu_s)})
            continue
        idle = min(float(r["idle_gpu_s"] or 0.0), float(gpu_s))
        if idle > 0:
            rows.append({**key, "leaf": "allocated_idle", "gpu_s": idle})
        if gpu_s - idle > 0:
            rows.append({**key, "leaf": "goodput", "gpu_s": float(gpu_s) - idle})
    schema = {"cluster": pl.String(), "attempt": pl.Int64(), "leaf": pl.String(),
              "gpu_s": pl.Float64()}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def _gpu_h(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds / 3600.0:.2f}"


def format_job_report(report: JobReport) -> str:
    """The report as text, one block per cluster and attempt (``seff`` style).

    Args:
        report: :func:`job_report` output.
    """
    out: list[str] = []
    clusters = sorted(
        set(report.attempts["cluster"].to_list()) | set(report.never_started["cluster"].to_list())
    )
    for cluster in clusters:
        rows = report.attempts.filter(pl.col("cluster") == cluster).to_dicts()
        never = report.never_started.filter(pl.col("cluster") == cluster).to_dicts()
        head = rows[0] if rows else None
        if out:
            out.append("")
        out.append(f"Job ID: {report.job_id}    Cluster: {cluster}    Attempts: {len(rows)}")
        if head:
            out.append(
                f"User: {head['user_name'] or 'n/a'}    Team: {head['team']}    "
                f"Account: {head['account'] or 'n/a'}    Partition: {head['partition'] or 'n/a'}"
                f"    QOS: {head['qos'] or 'n/a'}"
            )
        for r in rows:
            out.append("")
            out.extend(_attempt_lines(r, report.idle_below))
        for n in never:
            out.append("")
            out.append(_never_started_line(n))
    return "\n".join(out) + "\n"


def _never_started_line(n: dict[str, Any]) -> str:
    """One never-started row in words: still pending since its Submit, or (with an end: a
    cancelled or otherwise ended pending job) ended at its End after End − Submit pending
    (``[D-]HH:MM:SS``)."""
    end, submit, eligible = n["end_at"], n["submit_at"], _ts(n["eligible_at"])
    if end is None:
        head = f"Not started: {n['state']} since {_ts(submit)} (eligible {eligible})"
    else:
        queued = None if submit is None else (end - submit).total_seconds()
        head = (
            f"Not started: {n['state']} at {_ts(end)} after {fmt_duration(queued)} pending"
            f" (submitted {_ts(submit)}, eligible {eligible})"
        )
    reason = f", reason {n['reason']}" if n["reason"] else ""
    return f"{head}, {_gpus(n['req_gpus'])} GPUs requested{reason}"
