"""``job_gpu_summary`` counts each 5-minute bucket's seconds only where the bucket
``[b, b + 300 s)`` overlaps the attempt's holding ``[start_at, end_at)`` (an attempt open at the
cut-off: ``[start_at, ∞)``, METRICS.md "Telemetry attribution"), as the waterfall counts
observed time (``metrics.waterfall._observed``), not the whole bucket.

Cases (samples labelled ``hpc_job``, one GPU each):

- job 18396137 (a real UVA sacct job, ``sacct_uva_hhemt.psv``): ``gres/gpu=1`` 14:36:56–14:38:56
  EDT = 18:36:56–18:38:56 UTC (``gpu_s`` 120), DCGM ``GPU_UTIL`` 0 at 18:37:00, 18:37:30, 18:38:00.
- job 7: 1 GPU 10:02–10:07, ``GR_ENGINE_ACTIVE`` 0.6 at 10:03, 10:04:30 (bucket 10:00) and
  0.02 at 10:05:30, 10:06:30 (bucket 10:05).
- job 8: 1 GPU from 10:02, open at the cut-off, the same samples on its own GPU plus 0.5 at
  10:08.
- job 9: 2 GPUs 10:00–10:10 (a gang whose pods held 1 GPU 10:02–10:05, 2 GPUs 10:05–10:10:
  pieces of held GPUs, METRICS.md "GPU holding"), both GPUs sampled at 0.5 in both buckets.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import duckdb
import polars as pl
import pytest

from pipelines.analytics.metrics_build import _activity, attributed_gpu_buckets, job_gpu_summary
from pipelines.dcgm._dcgm_parse import DCGM_SAMPLE_SCHEMA
from pipelines.warehouse import init_warehouse

UTC = dt.UTC
_TS = pl.Datetime("us", "UTC")
D = dt.datetime(2026, 8, 11, tzinfo=UTC)


def _at(h: int, m: int, s: int = 0) -> dt.datetime:
    return D.replace(hour=h, minute=m, second=s)


JOBS = pl.DataFrame(
    {
        "source": ["slurm"] * 4,
        "cluster": ["c"] * 4,
        "job_id": ["18396137", "7", "8", "9"],
        "job_id_raw": ["18396137", "7", "8", "9"],
        "attempt": [0, 0, 0, 0],
        "team": ["a", "a", "a", "a"],
        "gpus": [1.0, 1.0, 1.0, 2.0],
        "gpu_s": [120.0, 300.0, None, 780.0],
        "start_at": [_at(18, 36, 56), _at(10, 2), _at(10, 2), _at(10, 0)],
        "end_at": [_at(18, 38, 56), _at(10, 7), None, _at(10, 10)],
        "node_list": [["udc-an37-25"], ["n1"], ["n2"], ["n3"]],
    },
    schema_overrides={"start_at": _TS, "end_at": _TS},
)
NODES = pl.DataFrame(
    {"cluster": ["c"] * 4, "host": ["udc-an37-25", "n1", "n2", "n3"], "gpus": [8.0] * 4}
)
HOLDS = pl.DataFrame(
    {"cluster": ["c", "c"], "job_id": ["9", "9"], "attempt": [0, 0],
     "start_at": [_at(10, 2), _at(10, 5)], "end_at": [_at(10, 5), _at(10, 10)],
     "gpus": [1.0, 2.0]},
    schema_overrides={"start_at": _TS, "end_at": _TS},
)  # fmt: skip
POD_JOBS = pl.DataFrame(
    schema={"cluster": pl.String(), "namespace": pl.String(), "pod": pl.String(),
            "job_id": pl.String()}
)  # fmt: skip


def _samples() -> pl.DataFrame:
    rows = []
    uva = [_at(18, 37), _at(18, 37, 30), _at(18, 38)]
    two = [(_at(10, 3), 0.6), (_at(10, 4, 30), 0.6), (_at(10, 5, 30), 0.02), (_at(10, 6, 30), 0.02)]
    cases = [("udc-an37-25", "18396137", "DCGM_FI_DEV_GPU_UTIL", [(t, 0.0) for t in uva]),
             ("n1", "7", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", two),
             ("n2", "8", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", [*two, (_at(10, 8), 0.5)])]  # fmt: skip
    for host, job, metric, points in cases:
        for k, (ts, value) in enumerate(points):
            rows.append({"ts": ts, "cluster": "c", "model_name": "A100",
                         "host_is_exporter_pod": False, "file": "f", "line_no": k,
                         "host": host, "gpu_uuid": f"GPU-{host}-0", "gpu_index": 0,
                         "device": "nvidia0", "hpc_job": job, "metric": metric,
                         "value": value})  # fmt: skip
    for g in (0, 1):
        for k, ts in enumerate((_at(10, 3), _at(10, 7))):
            rows.append({"ts": ts, "cluster": "c", "model_name": "A100",
                         "host_is_exporter_pod": False, "file": "f", "line_no": k, "host": "n3",
                         "gpu_uuid": f"GPU-n3-{g}", "gpu_index": g, "device": f"nvidia{g}",
                         "hpc_job": "9", "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                         "value": 0.5})  # fmt: skip
    return pl.DataFrame(rows, schema=DCGM_SAMPLE_SCHEMA).with_columns(
        pl.lit(1, dtype=pl.Int64()).alias("ingest_id")
    )


@pytest.fixture
def summary() -> Iterator[dict[str, dict[str, object]]]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    init_warehouse(con)
    samples = _samples()  # noqa: F841 (read by DuckDB's replacement scans)
    con.execute("INSERT INTO raw.dcgm_samples BY NAME SELECT * FROM samples")
    buckets = attributed_gpu_buckets(con, JOBS, POD_JOBS, NODES)
    activity = _activity(con, JOBS, POD_JOBS, buckets=buckets)
    out = job_gpu_summary(
        con, JOBS, activity, POD_JOBS, idle_threshold=0.05, buckets=buckets, holds=HOLDS
    )
    con.close()
    yield {r["job_id"]: r for r in out.iter_rows(named=True)}


def test_a_two_minute_job_observes_its_two_minutes(
    summary: dict[str, dict[str, object]],
) -> None:
    """Job 18396137's samples lie in bucket 18:35:00–18:40:00, which overlaps its holding
    18:36:56–18:38:56 by 18:38:56 − 18:36:56 = 120 s: observed 1 GPU × 120 s = 120 GPU-s, all
    idle (utilisation 0 < θ = 0.05), no more than its own ``gpu_s`` 120 (before: the whole
    bucket, 300 and 300)."""
    s = summary["18396137"]
    assert s["observed_gpu_s"] == pytest.approx(120.0)
    assert s["idle_gpu_s"] == pytest.approx(120.0)
    assert s["mean_activity"] == pytest.approx(0.0)


def test_two_buckets_each_clipped_to_the_attempt(summary: dict[str, dict[str, object]]) -> None:
    """Job 7 (10:02–10:07): bucket 10:00 overlaps it 10:02–10:05 = 180 s at 0.6, bucket 10:05
    10:05–10:07 = 120 s at 0.02 (idle): observed 180 + 120 = 300 GPU-s = its ``gpu_s``
    (before: 600), idle 120 (before: 300), mean activity (0.6 × 180 + 0.02 × 120) / 300 =
    110.4 / 300 = 0.368 (before: the unweighted (0.6 + 0.02) / 2 = 0.31)."""
    s = summary["7"]
    assert s["observed_gpu_s"] == pytest.approx(300.0)
    assert s["idle_gpu_s"] == pytest.approx(120.0)
    assert s["mean_activity"] == pytest.approx(0.368)


def test_an_open_attempt_is_clipped_at_its_start_only(
    summary: dict[str, dict[str, object]],
) -> None:
    """Job 8, open (held over [10:02, ∞), so its later samples stay its): bucket 10:00 gives
    180 s at 0.6, bucket 10:05 the whole 300 s at (0.02 + 0.02 + 0.5) / 3 = 0.18 (not idle):
    observed 480 GPU-s (before: 600), idle 0, mean (0.6 × 180 + 0.18 × 300) / 480 = 162 / 480
    = 0.3375."""
    s = summary["8"]
    assert s["observed_gpu_s"] == pytest.approx(480.0)
    assert s["idle_gpu_s"] == pytest.approx(0.0)
    assert s["mean_activity"] == pytest.approx(0.3375)


def test_an_attempts_pieces_bound_its_observed_gpus(
    summary: dict[str, dict[str, object]],
) -> None:
    """Job 9's pieces: bucket 10:00 overlaps the 1-GPU piece 10:02–10:05 by 180 s, 2 GPUs seen
    → min(2, 1) × 180 = 180; bucket 10:05 the 2-GPU piece whole: min(2, 2) × 300 = 600;
    observed 780 GPU-s = its ``gpu_s`` (before: min(2, 2) × 300 × 2 = 1,200), mean 0.5, idle 0.
    """
    s = summary["9"]
    assert s["observed_gpu_s"] == pytest.approx(780.0)
    assert s["mean_activity"] == pytest.approx(0.5)
    assert s["idle_gpu_s"] == pytest.approx(0.0)
