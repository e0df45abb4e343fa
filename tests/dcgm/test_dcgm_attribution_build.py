"""Telemetry tables built from raw DCGM samples and the Slurm GPU map in a DuckDB warehouse
(``pipelines.analytics.metrics_build``): attribution through the map, MIG slices kept apart.

The case (2026-11-02 UTC, samples every 30 s from 10:00 to 10:30):

- host ``h1`` (8 GPUs), no job labels: job 101 (team a, 2 GPUs) runs 10:00–10:20 and the map
  (``scontrol show job -d``) says it holds ``IDX:0-1``. ``nvidia0`` shows activity 0.8, FB
  1000 MiB and XID 79 from 10:07; ``nvidia1`` 0.02 and FB 3000 MiB; ``nvidia5`` (free) 0.5.
- host ``h2``: one GPU in MIG mode, instance 1 (``3g.40gb``) labelled ``hpc_job=201`` at 0.9,
  instance 2 (``1g.10gb``) labelled ``hpc_job=202`` at 0.03, both jobs 10:00–10:30.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import duckdb
import polars as pl
import pytest

from pipelines.analytics.metrics_build import (
    _activity,
    attributed_gpu_buckets,
    gpu_activity,
    job_gpu_summary,
    job_gpu_summary_ranges,
)
from pipelines.dcgm._dcgm_parse import DCGM_SAMPLE_SCHEMA
from pipelines.slurm._scontrol_jobs import SCONTROL_JOB_SCHEMA
from pipelines.warehouse import init_warehouse

UTC = dt.UTC
T0 = dt.datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
_TS = pl.Datetime("us", "UTC")

JOBS = pl.DataFrame(
    {
        "source": ["slurm"] * 3,
        "cluster": ["c"] * 3,
        "job_id": ["101", "201", "202"],
        "job_id_raw": ["101", "201", "202"],
        "attempt": [0, 0, 0],
        "team": ["a", "b", "c"],
        "gpus": [2.0, 3 / 7, 1 / 7],
        "gpu_s": [2.0 * 1200, 3 / 7 * 1800, 1 / 7 * 1800],
        "start_at": [T0, T0, T0],
        "end_at": [T0 + dt.timedelta(minutes=20), T0 + dt.timedelta(minutes=30),
                   T0 + dt.timedelta(minutes=30)],
        "node_list": [["h1"], ["h2"], ["h2"]],
    },
    schema_overrides={"start_at": _TS, "end_at": _TS},
)  # fmt: skip
NODES = pl.DataFrame({"cluster": ["c", "c"], "host": ["h1", "h2"], "gpus": [8.0, 1.0]})
POD_JOBS = pl.DataFrame(
    schema={"cluster": pl.String(), "namespace": pl.String(), "pod": pl.String(),
            "job_id": pl.String()}
)  # fmt: skip


def _samples() -> pl.DataFrame:
    rows = []
    for k in range(60):
        ts = T0 + dt.timedelta(seconds=30 * k)
        xid = 79.0 if ts >= T0 + dt.timedelta(minutes=7) else 0.0
        base = {"ts": ts, "cluster": "c", "model_name": "A100", "host_is_exporter_pod": False,
                "file": "f", "line_no": k}  # fmt: skip
        for g, act, fb in ((0, 0.8, 1000.0), (1, 0.02, 3000.0), (5, 0.5, 0.0)):
            gpu = {**base, "host": "h1", "gpu_uuid": f"GPU-h1-{g}", "gpu_index": g,
                   "device": f"nvidia{g}"}  # fmt: skip
            rows.append({**gpu, "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "value": act})
            rows.append({**gpu, "metric": "DCGM_FI_DEV_FB_USED", "value": fb})
            rows.append({**gpu, "metric": "DCGM_FI_DEV_XID_ERRORS",
                         "value": xid if g == 0 else 0.0})  # fmt: skip
        for inst, profile, job, act in ((1, "3g.40gb", "201", 0.9), (2, "1g.10gb", "202", 0.03)):
            rows.append({**base, "host": "h2", "gpu_uuid": "GPU-h2-0", "gpu_index": 0,
                         "device": "nvidia0", "mig_profile": profile, "mig_instance": inst,
                         "hpc_job": job, "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                         "value": act})  # fmt: skip
    return pl.DataFrame(rows, schema=DCGM_SAMPLE_SCHEMA).with_columns(
        pl.lit(1, dtype=pl.Int64()).alias("ingest_id")
    )


def _gres() -> pl.DataFrame:
    row = {"cluster": "c", "job_id": "101", "job_state": "RUNNING", "start_at": T0, "node": "h1",
           "gpu_type": "a100", "gpu_indices": [0, 1], "gpus": 2, "gres": "gpu:a100:2(IDX:0-1)",
           "snapshot_at": T0 + dt.timedelta(minutes=5), "file": "jobs.txt",
           "line_no": 1}  # fmt: skip
    return pl.DataFrame([row], schema=SCONTROL_JOB_SCHEMA).with_columns(
        pl.lit(1, dtype=pl.Int64()).alias("ingest_id")
    )


@pytest.fixture
def tables() -> Iterator[dict[str, pl.DataFrame]]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    init_warehouse(con)
    samples, gres = _samples(), _gres()  # noqa: F841 (read by DuckDB's replacement scans)
    con.execute("INSERT INTO raw.dcgm_samples BY NAME SELECT * FROM samples")
    con.execute("INSERT INTO raw.slurm_job_gres BY NAME SELECT * FROM gres")
    buckets = attributed_gpu_buckets(con, JOBS, POD_JOBS, NODES)
    activity = _activity(con, JOBS, POD_JOBS, buckets=buckets)
    yield {
        "buckets": buckets,
        "activity": activity,
        "summary": job_gpu_summary(
            con, JOBS, activity, POD_JOBS, idle_threshold=0.05, buckets=buckets
        ),
        "gpu_activity": gpu_activity(con, JOBS, POD_JOBS, buckets=buckets),
    }
    con.close()


def test_gres_map_attributes_unlabelled_gpus(tables: dict[str, pl.DataFrame]) -> None:
    """Job 101's buckets 10:00–10:15 (four; 10:20 starts at its end): 2 GPUs (nvidia0, nvidia1
    through IDX 0-1), activity (0.8 + 0.02) / 2 = 0.41 each."""
    a = tables["activity"].filter(pl.col("job_id") == "101").sort("bucket")
    assert a["bucket"].to_list() == [T0 + dt.timedelta(minutes=m) for m in (0, 5, 10, 15)]
    assert a["gpus"].to_list() == [2.0] * 4
    assert a["activity"].to_list() == pytest.approx([0.41] * 4)


def test_free_gpu_and_after_end_are_unattributed(tables: dict[str, pl.DataFrame]) -> None:
    """nvidia5 (not in the map) all six buckets, nvidia0/1 from 10:20 (job ended): 6 + 2 × 2 =
    10 unattributed GPU-buckets; the free GPU's 0.5 never reaches job 101."""
    ga = tables["gpu_activity"].filter(pl.col("host") == "h1")
    un = ga.filter(pl.col("attribution") == "unattributed")
    assert un.height == 10 and un["job_id"].null_count() == 10
    mapped = ga.filter(pl.col("attribution") == "gres_index")
    assert mapped.height == 8 and set(mapped["job_id"]) == {"101"}


def test_mig_slices_never_sum(tables: dict[str, pl.DataFrame]) -> None:
    """The MIG GPU has two rows per bucket, 0.9 (3/7 GPU, job 201) and 0.03 (1/7, job 202)."""
    ga = tables["gpu_activity"].filter(pl.col("host") == "h2")
    assert ga.height == 12
    per = ga.group_by("job_id").agg(pl.col("activity").mean(), pl.col("gpus").first())
    got = {r["job_id"]: (r["activity"], r["gpus"]) for r in per.iter_rows(named=True)}
    assert got["201"] == pytest.approx((0.9, 3 / 7))
    assert got["202"] == pytest.approx((0.03, 1 / 7))


def test_job_gpu_summary(tables: dict[str, pl.DataFrame]) -> None:
    """Per attempt:

    - 101: observed 4 buckets × min(2, 2) GPUs × 300 s = 2400 GPU-s, mean 0.41, idle 0 (0.41 ≥
      θ = 0.05), peak FB 3000 MiB (nvidia1), 1 XID change (0 → 79 at 10:07 on nvidia0);
    - 201: 6 × 3/7 × 300 = 771.43 GPU-s at 0.9, idle 0;
    - 202: 6 × 1/7 × 300 = 257.14 GPU-s at 0.03, all idle.
    """
    s = {r["job_id"]: r for r in tables["summary"].iter_rows(named=True)}
    assert s["101"]["observed_gpu_s"] == pytest.approx(2400.0)
    assert s["101"]["mean_activity"] == pytest.approx(0.41)
    assert s["101"]["idle_gpu_s"] == 0.0
    assert s["101"]["peak_fb_used_mib"] == 3000.0
    assert s["101"]["xid_events"] == 1
    assert s["201"]["observed_gpu_s"] == pytest.approx(6 * 3 / 7 * 300)
    assert s["201"]["mean_activity"] == pytest.approx(0.9)
    assert s["201"]["idle_gpu_s"] == 0.0
    assert s["202"]["observed_gpu_s"] == pytest.approx(6 * 1 / 7 * 300)
    assert s["202"]["idle_gpu_s"] == pytest.approx(6 * 1 / 7 * 300)


def test_no_samples_gives_empty_typed_tables(tables: dict[str, pl.DataFrame]) -> None:
    """No 5-minute samples (a fleet with hourly aggregates only): the buckets, activity and
    GPU-activity tables are empty with the columns and types they have with samples, and each
    of the 3 attempts keeps its summary row with 0 observed GPU-s, NULL mean activity, 0 XIDs.
    """
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    init_warehouse(con)
    buckets = attributed_gpu_buckets(con, JOBS, POD_JOBS, NODES)
    activity = _activity(con, JOBS, POD_JOBS, buckets=buckets)
    ga = gpu_activity(con, JOBS, POD_JOBS, buckets=buckets)
    summary = job_gpu_summary(con, JOBS, activity, POD_JOBS, idle_threshold=0.05, buckets=buckets)
    con.close()
    for name, got in (("buckets", buckets), ("activity", activity), ("gpu_activity", ga)):
        assert got.height == 0, name
        assert got.schema == tables[name].schema, name
    assert summary.schema == tables["summary"].schema
    assert sorted(summary["job_id"]) == ["101", "201", "202"]
    assert summary["observed_gpu_s"].to_list() == [0.0] * 3
    assert summary["mean_activity"].null_count() == 3
    assert summary["xid_events"].to_list() == [0] * 3


def test_job_gpu_summary_in_ranges_of_one_attempt(tables: dict[str, pl.DataFrame]) -> None:
    """The summary one attempt at a time (as a full build writes it): three ranges of one row
    each, in the attempts' order (101, 201, 202), with the hand values of
    :func:`test_job_gpu_summary` (101: 2400 GPU-s at 0.41, 1 XID; 202: 257.14 GPU-s, all
    idle), and together the whole summary, row for row; no attempt: one empty range with the
    summary's columns and types; a range of 0 attempts raises."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    init_warehouse(con)
    buckets, activity = tables["buckets"], tables["activity"]
    parts = list(
        job_gpu_summary_ranges(
            con, JOBS, activity, POD_JOBS, idle_threshold=0.05, rows=1, buckets=buckets
        )
    )
    assert [p["job_id"].to_list() for p in parts] == [["101"], ["201"], ["202"]]
    assert parts[0]["observed_gpu_s"][0] == pytest.approx(2400.0)
    assert parts[0]["mean_activity"][0] == pytest.approx(0.41)
    assert parts[0]["xid_events"][0] == 1
    assert parts[2]["idle_gpu_s"][0] == pytest.approx(6 * 1 / 7 * 300)
    assert pl.concat(parts).equals(tables["summary"])
    (empty,) = job_gpu_summary_ranges(
        con, JOBS.clear(), activity, POD_JOBS, idle_threshold=0.05, rows=1, buckets=buckets
    )
    assert empty.height == 0 and empty.schema == tables["summary"].schema
    with pytest.raises(ValueError, match="positive"):
        next(
            job_gpu_summary_ranges(
                con, JOBS, activity, POD_JOBS, idle_threshold=0.05, rows=0, buckets=buckets
            )
        )
    con.close()
