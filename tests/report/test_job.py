"""`goodput job`: one Slurm job of the small fleet, per attempt, against the tests' own queries."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.cli.report import report_app
from pipelines.report.job_report import JobReport, advice, job_waterfall, outcome
from tests.report.conftest import Direct

runner = CliRunner()
THETA = 0.05
ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


@pytest.fixture
def job(direct: Direct) -> tuple[str, str]:
    """The Slurm job with the most attempts among those with DCGM samples (requeued if any)."""
    row = direct.one(
        "SELECT cluster, job_id FROM jobs WHERE source = 'slurm' AND job_id IN "
        "(SELECT hpc_job FROM dcgm_samples WHERE hpc_job IS NOT NULL) "
        "GROUP BY ALL ORDER BY count(*) DESC, job_id LIMIT 1"
    )
    return str(row[0]), str(row[1])


def _expected(con: Direct, cluster: str, job_id: str) -> list[dict[str, Any]]:
    """Per attempt: jobs columns, and 5-minute means per GPU computed here in polars."""
    attempts = con.frame(
        "SELECT attempt, state, exit_code, gpus, wait_s, run_s, gpu_s, start_at, end_at "
        "FROM jobs WHERE cluster = ? AND job_id = ? ORDER BY attempt",
        [cluster, job_id],
    )
    samples = con.frame(
        "SELECT ts, gpu_uuid, mig_profile, metric, value FROM dcgm_samples "
        "WHERE cluster = ? AND hpc_job = ?",
        [cluster, job_id],
    )
    assert samples["mig_profile"].null_count() == samples.height, "whole GPUs in this job"
    out = []
    for a in attempts.iter_rows(named=True):
        start, stop = a["start_at"], a["end_at"]
        mine = samples.filter((pl.col("ts") >= start) & (pl.col("ts") < stop))
        buckets = (
            mine.filter(pl.col("metric") == ACTIVE)
            .with_columns(pl.col("ts").dt.truncate("5m").alias("bucket"))
            .group_by("gpu_uuid", "bucket")
            .agg(pl.col("value").mean().alias("activity"))
        )
        five = dt.timedelta(minutes=5)
        weights = [
            max(0.0, (min(b + five, stop) - max(b, start)).total_seconds())
            for b in buckets["bucket"].to_list()
        ]
        acts = buckets["activity"].to_list()
        observed = sum(weights)
        out.append(
            {
                **a,
                "observed_gpu_s": observed,
                "mean_activity": sum(x * w for x, w in zip(acts, weights, strict=True)) / observed,
                "idle_gpu_s": sum(w for x, w in zip(acts, weights, strict=True) if x < THETA),
                "peak_fb_used_mib": mine.filter(pl.col("metric") == "DCGM_FI_DEV_FB_USED")[
                    "value"
                ].max(),
            }
        )
    return out


def test_job_json_equals_direct_query(serving: Path, direct: Direct, job: tuple[str, str]) -> None:
    """GPUs, state, wait, run time, GPU-hours, activity, idle GPU-hours and peak memory agree."""
    cluster, job_id = job
    result = runner.invoke(report_app, ["job", job_id, "--db", str(serving), "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["attempts"]
    want = _expected(direct, cluster, job_id)
    assert [g["attempt"] for g in got] == [w["attempt"] for w in want]
    for g, w in zip(got, want, strict=True):
        for key in ("state", "gpus", "wait_s", "run_s", "gpu_s"):
            assert g[key] == w[key], key
        assert g["observed_gpu_s"] == pytest.approx(w["observed_gpu_s"], rel=1e-9)
        assert g["mean_activity"] == pytest.approx(w["mean_activity"], rel=1e-9)
        assert g["idle_gpu_s"] == pytest.approx(w["idle_gpu_s"], abs=1e-6)
        assert g["peak_fb_used_mib"] == w["peak_fb_used_mib"]


def test_job_text_prints_the_same_values(
    serving: Path, direct: Direct, job: tuple[str, str]
) -> None:
    """The seff-style text shows each attempt's values as the direct query formats them."""
    cluster, job_id = job
    result = runner.invoke(report_app, ["job", job_id, "--db", str(serving), "--cluster", cluster])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert f"Job ID: {job_id}    Cluster: {cluster}" in text
    for w in _expected(direct, cluster, job_id):
        block = text.split(f"Attempt {w['attempt']}\n", 1)[1].split("\nAttempt ", 1)[0]
        assert f"State:               {w['state']}" in block
        assert f"GPUs:                {w['gpus']:g} " in block
        assert f"GPU-hours:           {w['gpu_s'] / 3600:.2f}" in block
        assert f"GPU activity:        {w['mean_activity'] * 100:.1f} %" in block
        assert f"Idle GPU-hours:      {w['idle_gpu_s'] / 3600:.2f}" in block
        assert f"Peak GPU memory:     {w['peak_fb_used_mib']:.0f} MiB" in block
        assert f"Outcome:             {outcome(w['state'], w['exit_code'])}" in block


def test_job_without_telemetry_says_so(serving: Path, direct: Direct) -> None:
    """An attempt with no DCGM samples prints "no telemetry" for activity, idle and memory."""
    row = direct.one(
        "SELECT job_id FROM jobs WHERE source = 'slurm' AND gpus > 0 AND job_id NOT IN "
        "(SELECT hpc_job FROM dcgm_samples WHERE hpc_job IS NOT NULL) ORDER BY job_id LIMIT 1"
    )
    result = runner.invoke(report_app, ["job", str(row[0]), "--db", str(serving)])
    assert result.exit_code == 0, result.output
    assert "GPU activity:        no telemetry" in result.stdout
    assert "Peak GPU memory:     no telemetry" in result.stdout


def test_unknown_job_fails(serving: Path) -> None:
    """A job id the copy does not hold exits 1 with a message."""
    result = runner.invoke(report_app, ["job", "999999999", "--db", str(serving)])
    assert result.exit_code == 1
    assert "no job 999999999" in result.output


def test_kubernetes_job_gets_the_pipelines_telemetry(serving: Path, direct: Direct) -> None:
    """A Kubernetes job (``namespace/<workload>``, whose pods carry their own names) gets the
    telemetry that ``job_gpu_summary`` holds for it: the report clips the attempt's first and
    last 5-minute buckets to the attempt; ``job_gpu_summary`` clips each bucket to the pieces
    of GPUs the attempt held (``job_holds``, as the waterfall: METRICS.md "Per-job
    telemetry"), so neither counts the 429,600 GPU-s of whole buckets it counted before (the
    report 429,056, the summary 429,008: this gang's pods held apart)."""
    cluster, job_id, summary_obs, summary_idle = direct.one(
        "SELECT cluster, job_id, observed_gpu_s, idle_gpu_s FROM job_gpu_summary "
        "WHERE source = 'kubernetes' AND observed_gpu_s > 0 "
        "ORDER BY idle_gpu_s DESC, job_id LIMIT 1"
    )
    # Per bucket: min(GPUs seen, allocated) × (the whole bucket, its part inside the attempt).
    whole, clipped = direct.one(
        "WITH b AS (SELECT g.bucket, least(sum(g.gpus), any_value(j.gpus)) AS n, "
        "any_value(j.start_at) AS s, any_value(coalesce(j.end_at, j.as_of)) AS e "
        "FROM gpu_activity g JOIN jobs j USING (cluster, job_id, attempt) "
        "WHERE g.cluster = ? AND g.job_id = ? AND g.activity IS NOT NULL "
        "AND g.attribution IN ('label_hpc_job', 'pod', 'gres_index', 'whole_node') "
        "GROUP BY g.bucket) "
        "SELECT sum(n * 300), sum(n * (epoch(least(bucket + INTERVAL 5 MINUTE, e)) "
        "- epoch(greatest(bucket, s)))) FROM b",
        [cluster, job_id],
    )
    # Per bucket and piece: min(GPUs seen, the piece's GPUs) × the bucket's part inside it.
    (pieced,) = direct.one(
        "WITH b AS (SELECT attempt, bucket, sum(gpus) AS n FROM gpu_activity "
        "WHERE cluster = ? AND job_id = ? AND activity IS NOT NULL "
        "AND attribution IN ('label_hpc_job', 'pod', 'gres_index', 'whole_node') "
        "GROUP BY attempt, bucket) "
        "SELECT sum(least(b.n, h.gpus) * greatest(0, epoch(least(b.bucket + INTERVAL 5 MINUTE, "
        "coalesce(h.end_at, b.bucket + INTERVAL 5 MINUTE))) - epoch(greatest(b.bucket, "
        "h.start_at)))) FROM b JOIN job_holds h USING (attempt) "
        "WHERE h.cluster = ? AND h.job_id = ? AND h.gpus > 0",
        [cluster, job_id, cluster, job_id],
    )
    assert summary_obs == pytest.approx(pieced, rel=1e-12)
    assert pieced <= clipped < whole
    result = runner.invoke(
        report_app, ["job", job_id, "--db", str(serving), "--cluster", cluster, "--json"]
    )
    assert result.exit_code == 0, result.output
    (got,) = json.loads(result.stdout)["attempts"]
    assert got["observed_gpu_s"] == pytest.approx(clipped, rel=1e-12)
    assert got["idle_gpu_s"] > 0 and summary_idle > 0
    text = runner.invoke(report_app, ["job", job_id, "--db", str(serving)]).stdout
    assert "no telemetry" not in text
    assert f"Idle GPU-hours:      {got['idle_gpu_s'] / 3600:.2f}" in text


def _attempt(**over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "cluster": "c", "attempt": 0, "state": "COMPLETED", "gpus": 4.0, "gpu_s": 14_400.0,
        "gpu_s_so_far": 14_400.0, "run_s": 3_600.0, "timelimit_s": 7_200,
        "observed_gpu_s": 14_400.0, "mean_activity": 0.5, "idle_gpu_s": 3_600.0,
    }  # fmt: skip
    return {**row, **over}


def test_advice_like_jobstats() -> None:
    """Idle GPUs (mostly, or half the time), a time limit four times the run, a timeout and thin
    telemetry each get a note; a busy job that used half its limit gets none."""
    assert advice(_attempt()) == []
    assert advice(_attempt(mean_activity=0.05)) == [
        "the GPUs were mostly idle; check the job's GPU use"
    ]
    assert advice(_attempt(idle_gpu_s=10_800.0)) == [
        "75% of its observed GPU-time was idle: fewer GPUs, or overlapping data loading with "
        "compute, would free them"
    ]
    assert advice(_attempt(timelimit_s=14_401)) == [
        "it ran 01:00:00 of its 04:00:01 time limit; a limit nearer the run time lets the "
        "scheduler start it sooner (backfill)"
    ]
    assert advice(_attempt(state="TIMEOUT")) == [
        "it hit its time limit: checkpoint, or ask for a longer limit"
    ]
    assert advice(_attempt(observed_gpu_s=7_199.0, idle_gpu_s=0.0)) == [
        "telemetry covers under half of its GPU-time: the activity figures are partial"
    ]


def test_job_waterfall_splits_by_leaf() -> None:
    """A completed attempt: idle GPU-seconds are allocated_idle, the rest goodput; a failed one
    puts all its GPU-seconds in failed_work_user."""
    attempts = pl.DataFrame(
        [_attempt(), _attempt(attempt=1, state="FAILED", gpu_s=None, gpu_s_so_far=900.0)]
    )
    report = JobReport("7", attempts, pl.DataFrame(), 0.05)
    assert job_waterfall(report).rows() == [
        ("c", 0, "allocated_idle", 3_600.0),
        ("c", 0, "goodput", 10_800.0),
        ("c", 1, "failed_work_user", 900.0),
    ]


def test_job_never_started_says_when_it_ended(tmp_path: Path) -> None:
    """A requeued job cancelled while pending again (tests/fixtures/slurm-planned, job
    7320455): its never-started record says when it was cancelled, its End 2026-08-17T00:03:01
    EDT = 04:03:01 UTC, and how long it pended: Submit 2026-08-16T18:38:10 EDT = 22:38:10 UTC to
    04:03:01 UTC = 1 h 21 min 50 s + 4 h 3 min 1 s = 5:24:51 (it said "since" its Submit)."""
    from pipelines.warehouse import publish_serving_copy
    from tests.slurm.test_sacct_planned import planned_warehouse

    cfg = planned_warehouse(tmp_path)
    serving = publish_serving_copy(cfg.warehouse_path, cfg.serving_path)
    result = runner.invoke(report_app, ["job", "7320455", "--db", str(serving)])
    assert result.exit_code == 0, result.output
    assert (
        "Not started: CANCELLED at 2026-08-17 04:03:01 UTC after 05:24:51 pending"
        " (submitted 2026-08-16 22:38:10 UTC, eligible n/a)"
    ) in result.stdout
    assert "since" not in result.stdout
