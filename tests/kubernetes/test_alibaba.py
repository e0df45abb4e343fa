"""The Alibaba GPU trace (2023, 8,152 pods) through the converter and the Workload model.

Every expected number is computed here from the CSV with the standard library only (``csv``,
``math``): the naive time-to-start percentiles, a Kaplan–Meier estimate with the pending pods
censored, and the fractional-GPU occupancy over the trace. The pipeline's results (the converter,
the Workload model, ``metrics.naive_wait_percentiles``, ``metrics.wait_spells`` /
``wait_percentiles_km`` and ``metrics.allocated_gpu_seconds_hourly``) must agree.
"""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from metrics import (
    allocated_gpu_seconds_hourly,
    naive_wait_percentiles,
    wait_percentiles_km,
    wait_spells,
)
from pipelines.analytics.build import JOBS_COLUMNS
from pipelines.kubernetes._pods_parse import K8S_POD_SCHEMA
from tests.kubernetes.alibaba_trace import (
    ALIBABA_EPOCH,
    alibaba_attempts,
    read_alibaba_pods,
)

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "alibaba" / "openb_pod_list_default.csv"
TRACE_END_S = 12_902_960  # the largest timestamp in the file


@cache
def _csv() -> tuple[dict[str, str], ...]:
    with TRACE.open(newline="", encoding="utf-8") as fh:
        return tuple(csv.DictReader(fh))


def _gpus(r: dict[str, str]) -> float:
    return int(r["num_gpu"]) * int(r["gpu_milli"]) / 1000


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(q * len(ordered)) - 1]


def _kaplan_meier(obs: list[tuple[float, bool]], q: float) -> float | None:
    """Smallest t with S(t) ≤ 1 − q; censored times count as at risk at their own time."""
    survival = 1.0
    at_risk = len(obs)
    by_time: dict[float, list[bool]] = {}
    for t, event in obs:
        by_time.setdefault(t, []).append(event)
    for t in sorted(by_time):
        events = sum(by_time[t])
        if events:
            survival *= 1 - events / at_risk
            if survival <= 1 - q + 1e-12:
                return t
        at_risk -= len(by_time[t])
    return None


@cache
def _converted() -> tuple[pl.DataFrame, pl.DataFrame, datetime]:
    res = read_alibaba_pods(TRACE)
    jobs = alibaba_attempts(res.rows).collect()
    return res.rows, jobs, datetime.fromisoformat(str(res.info["as_of"]))


def test_every_pod_is_read_with_the_documented_epoch() -> None:
    """8,152 pods, none rejected; second 0 is 2023-01-01Z; as_of = the trace's last timestamp."""
    res = read_alibaba_pods(TRACE)
    assert res.rows.height == len(_csv()) == 8152
    assert res.rejected.height == 0
    assert res.rows.select(list(K8S_POD_SCHEMA)).schema == pl.Schema(K8S_POD_SCHEMA)
    assert res.info["phases"] == {"Failed": 1870, "Pending": 897, "Running": 5193, "Succeeded": 192}
    assert res.info["as_of"] == (ALIBABA_EPOCH + timedelta(seconds=TRACE_END_S)).isoformat()
    assert res.info["censored_running"] == 34
    assert res.info["fractional_gpu_pods"] == 3078
    first = res.rows.filter(pl.col("name") == "openb-pod-0001").row(0, named=True)
    assert first["created_at"] == datetime(2023, 1, 1, tzinfo=UTC) + timedelta(seconds=427061)
    assert first["gpus"] == pytest.approx(0.46)


def test_running_at_the_trace_end_is_censored_not_ended() -> None:
    """A Running pod whose deletion time is the trace's end has no end: RUNNING, end NULL."""
    pods, jobs, as_of = _converted()
    at_end = {
        r["name"]
        for r in _csv()
        if r["pod_phase"] == "Running" and int(r["deletion_time"]) == TRACE_END_S
    }
    assert len(at_end) == 34
    running = jobs.filter(pl.col("state") == "RUNNING")
    assert set(running["job_id"].str.strip_prefix("openb/")) == at_end
    assert running["end_at"].null_count() == 34 and running["gpu_s"].null_count() == 34
    assert pods.filter(pl.col("name").is_in(list(at_end)))["deleted_at"].null_count() == 34
    assert as_of == ALIBABA_EPOCH + timedelta(seconds=TRACE_END_S)


def test_states_of_the_attempts() -> None:
    """Scheduled pods are attempts; Pending pods are not; deleted while Running → CANCELLED."""
    _pods, jobs, _ = _converted()
    assert jobs.columns[: len(JOBS_COLUMNS)] == JOBS_COLUMNS
    counts = dict(jobs.group_by("state").len().iter_rows())
    assert counts == {"COMPLETED": 192, "FAILED": 1870, "CANCELLED": 5193 - 34, "RUNNING": 34}
    assert jobs.height == 8152 - 897
    assert jobs["team"].unique().to_list() == ["unattributed"]


def test_naive_percentiles_match_an_independent_computation() -> None:
    """p50/p90 of scheduled − creation over scheduled GPU pods, by hand and by the pipeline."""
    waits = [
        float(int(r["scheduled_time"]) - int(r["creation_time"]))
        for r in _csv()
        if r["scheduled_time"] and _gpus(r) > 0
    ]
    _pods, jobs, _ = _converted()
    got = (
        naive_wait_percentiles(jobs.lazy())
        .collect()
        .filter(pl.col("bucket").is_null())
        .row(0, named=True)
    )
    assert got["jobs"] == len(waits) == 6203
    assert got["naive_p50_s"] == _nearest_rank(waits, 0.5) == 2.0
    assert got["naive_p90_s"] == _nearest_rank(waits, 0.9) == 139.0
    assert got["naive_p99_s"] == _nearest_rank(waits, 0.99)


def test_pending_pods_are_censored_never_dropped() -> None:
    """Every GPU pod is one waiting spell; the 861 Pending GPU pods are censored at their
    deletion; the pipeline's Kaplan–Meier percentiles equal one computed here by hand."""
    expected = sorted(
        (
            float(int(r["scheduled_time"] or r["deletion_time"]) - int(r["creation_time"])),
            bool(r["scheduled_time"]),
        )
        for r in _csv()
        if _gpus(r) > 0
    )
    pods, jobs, as_of = _converted()
    pending = alibaba_attempts(pods, started=False).collect()
    assert pending.height == 897 and pending["start_at"].null_count() == 897
    assert set(pending["state"]) == {"CANCELLED"}  # deleted while Pending
    spells = wait_spells(jobs.lazy(), as_of, pending=pending.lazy()).collect()
    got = sorted(zip(spells["duration_s"].to_list(), spells["started"].to_list(), strict=True))
    assert got == expected
    assert spells.height == 7064 and spells.filter(~pl.col("started")).height == 861
    km = wait_percentiles_km(spells.lazy()).collect().row(0, named=True)
    by_hand = {q: _kaplan_meier(expected, q) for q in (0.5, 0.9, 0.99)}
    assert (km["km_p50_s"], km["km_p90_s"], km["km_p99_s"]) == (
        by_hand[0.5],
        by_hand[0.9],
        by_hand[0.99],
    )
    assert (km["km_p50_s"], km["km_p90_s"], km["km_p99_s"]) == (3.0, 313.0, 3354.0)
    naive = [t for t, e in expected if e]
    assert (km["naive_p50_s"], km["naive_p90_s"]) == (
        _nearest_rank(naive, 0.5),
        _nearest_rank(naive, 0.9),
    )
    assert km["km_p90_s"] > km["naive_p90_s"]  # dropping the censored waits understates them


def test_fractional_gpu_occupancy_over_the_trace() -> None:
    """Allocated GPU-seconds (and the fractional pods' part) agree with a by-hand sum; pods
    running at the end count up to the trace's end."""
    total = fractional = 0.0
    for r in _csv():
        if not r["scheduled_time"] or _gpus(r) == 0:
            continue
        span = min(int(r["deletion_time"]), TRACE_END_S) - int(r["scheduled_time"])
        total += _gpus(r) * span
        if int(r["gpu_milli"]) < 1000:
            fractional += _gpus(r) * span
    _pods, jobs, as_of = _converted()
    hourly = allocated_gpu_seconds_hourly(jobs.lazy(), as_of).collect()
    assert hourly["allocated_gpu_s"].sum() == pytest.approx(total, rel=1e-9)
    frac_jobs = jobs.filter(pl.col("gpus") < 1)
    frac_hourly = allocated_gpu_seconds_hourly(frac_jobs.lazy(), as_of).collect()
    assert frac_hourly["allocated_gpu_s"].sum() == pytest.approx(fractional, rel=1e-9)
    mean_gpus = total / TRACE_END_S
    assert mean_gpus == pytest.approx(14.36, abs=0.01)
    assert fractional / total == pytest.approx(0.1375, abs=0.0001)
    ended = jobs.filter(pl.col("end_at").is_not_null())
    assert ended["gpu_s"].sum() == pytest.approx(
        (ended["gpus"] * ended["run_s"]).sum(), rel=1e-12
    )  # one pod per attempt: per-pod GPU-seconds = gpus × run_s
