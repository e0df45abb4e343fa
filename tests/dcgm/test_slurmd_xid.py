"""XID events of GPUs held by slurmd pods count on the Slurm side (METRICS.md "Slurm on
Kubernetes", telemetry and XID events): read from ``raw.dcgm_samples`` in a DuckDB warehouse,
moved by the one re-homing rule (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`), then
counted by the reliability table and the per-job summary.

The case (2026-01-05 UTC). Slurm cluster ``sc`` runs in Kubernetes cluster ``kc``: Slurm node
``sok-0`` is slurmd pod ``slurm/sok-0`` on Kubernetes node ``kn1`` from 00:00 to 02:00 (the map).
``DCGM_FI_DEV_XID_ERRORS`` (the last XID; an event is each change to a non-zero value) on kn1:

- GPU-a (pod slurm/sok-0): 0 at 00:10, 79 at 00:20, 79 at 00:30, 48 at 00:40 → 2 events
  (00:20 XID 79, 00:40 XID 48), inside the map → ``sc``/``sok-0``, pod cleared;
- GPU-b (pod slurm/sok-0): 31 at 02:30 → 1 event, outside every map interval → stays
  ``kc``/``kn1`` (pod cleared: a slurmd pod is never a Kubernetes workload's);
- GPU-c (native pod ml/train): 13 at 00:20 → 1 event, stays ``kc``/``kn1`` with its pod.

Jobs: Slurm job 101 (sc, 8 GPUs = all of sok-0, 00:00–00:45, FAILED); Kubernetes job ml/train
(kc, 1 GPU on kn1, 00:00–00:25, FAILED).
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from metrics.reliability import node_reliability
from pipelines.analytics.metrics_build import _xid_events, attributed_gpu_buckets
from pipelines.dcgm._dcgm_parse import DCGM_SAMPLE_SCHEMA
from pipelines.warehouse import init_warehouse

H0 = dt.datetime(2026, 1, 5, 0, tzinfo=dt.UTC)
_TS = pl.Datetime("us", "UTC")


def _m(minutes: int) -> dt.datetime:
    return H0 + dt.timedelta(minutes=minutes)


MAPS = pl.DataFrame(
    {"cluster": ["sc"], "k8s_cluster": ["kc"], "slurm_node": ["sok-0"], "valid_from": [H0],
     "valid_to": [_m(120)], "namespace": ["slurm"], "pod": ["sok-0"]},
    schema_overrides={"valid_from": _TS, "valid_to": _TS},
)  # fmt: skip
JOBS = pl.DataFrame(
    {"source": ["slurm", "kubernetes"], "cluster": ["sc", "kc"], "job_id": ["101", "ml/train"],
     "job_id_raw": ["101", None], "attempt": [0, 0], "team": ["physics", "ml"],
     "state": ["FAILED", "FAILED"], "gpus": [8.0, 1.0], "start_at": [H0, H0],
     "end_at": [_m(45), _m(25)], "node_list": [["sok-0"], ["kn1"]]},
    schema_overrides={"start_at": _TS, "end_at": _TS, "job_id_raw": pl.String()},
)  # fmt: skip
POD_JOBS = pl.DataFrame(
    {"cluster": ["kc"], "namespace": ["ml"], "pod": ["train"], "job_id": ["ml/train"]}
)
NODES = pl.DataFrame({"cluster": ["sc", "kc"], "host": ["sok-0", "kn1"], "gpus": [8.0, 8.0]})


def _warehouse() -> duckdb.DuckDBPyConnection:
    rows = []
    series = (
        ("GPU-a", 0, "slurm", "sok-0", ((10, 0.0), (20, 79.0), (30, 79.0), (40, 48.0))),
        ("GPU-b", 1, "slurm", "sok-0", ((150, 31.0),)),
        ("GPU-c", 2, "ml", "train", ((20, 13.0),)),
    )
    for uuid, g, ns, pod, points in series:
        for k, (minute, value) in enumerate(points):
            rows.append({
                "ts": _m(minute), "cluster": "kc", "host": "kn1", "gpu_uuid": uuid,
                "gpu_index": g, "device": f"nvidia{g}", "model_name": "H100",
                "metric": "DCGM_FI_DEV_XID_ERRORS", "value": value, "pod": pod,
                "namespace": ns, "container": "c", "host_is_exporter_pod": False,
                "file": "f", "line_no": k,
            })  # fmt: skip
    samples = pl.DataFrame(rows, schema=DCGM_SAMPLE_SCHEMA).with_columns(  # noqa: F841
        pl.lit(1, dtype=pl.Int64()).alias("ingest_id")
    )
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    init_warehouse(con)
    con.execute("INSERT INTO raw.dcgm_samples BY NAME SELECT * FROM samples")
    return con


def test_slurmd_xid_events_move_to_the_slurm_node() -> None:
    """4 events in all (2 on GPU-a, 1 on GPU-b, 1 on GPU-c); GPU-a's 2 move to sc/sok-0, the
    other 2 stay on kc/kn1. Without the map all 4 stay on kn1 with their pods."""
    con = _warehouse()
    got = _xid_events(con, MAPS).sort("ts", "gpu_uuid")
    assert got.select("cluster", "host", "ts", "xid", "gpu_uuid", "namespace", "pod").rows() == [
        ("sc", "sok-0", _m(20), 79, "GPU-a", None, None),
        ("kc", "kn1", _m(20), 13, "GPU-c", "ml", "train"),
        ("sc", "sok-0", _m(40), 48, "GPU-a", None, None),
        ("kc", "kn1", _m(150), 31, "GPU-b", None, None),
    ]
    naive = _xid_events(con).sort("ts", "gpu_uuid")
    assert naive.select("cluster", "host").rows() == [("kc", "kn1")] * 4
    assert naive["pod"].to_list() == ["sok-0", "train", "sok-0", "sok-0"]


def test_lemon_table_counts_each_slurmd_xid_once_on_the_slurm_side() -> None:
    """``node_reliability`` per cluster (as ``build_metric_tables`` runs it): sok-0 has
    xid_events = 2 (codes 48, 79) and job 101, FAILED at 00:45 with XID 48 at 00:40 on its node
    (within the 10-minute window), is an infra failure; kn1 keeps 2 events (13 from ml/train's
    GPU, 31 outside the map) instead of 4, and ml/train (FAILED 00:25, XID 13 at 00:20) is still
    infra. Fleet total 2 + 2 = 4 = the events read: each counted once."""
    xid = _xid_events(_warehouse(), MAPS)
    as_of = _m(180)
    rows = {}
    for c in ("sc", "kc"):
        rel = node_reliability(
            JOBS.filter(pl.col("cluster") == c).lazy(), as_of,
            xid_events=xid.filter(pl.col("cluster") == c).lazy(),
        ).collect()  # fmt: skip
        for r in rel.iter_rows(named=True):
            rows[(r["cluster"], r["host"])] = (
                r["xid_events"],
                r["xid_codes"],
                r["attempts"],
                r["infra_failed_attempts"],
            )
    assert rows == {
        ("sc", "sok-0"): (2, [48, 79], 1, 1),
        ("kc", "kn1"): (2, [13, 31], 1, 1),
    }
    assert sum(v[0] for v in rows.values()) == 4


def test_slurmd_xid_events_go_to_the_slurm_job_at_that_time() -> None:
    """Per-job XIDs (``job_gpu_summary.xid_events`` sums the buckets'): GPU-a's 2 events
    (00:20, 00:40, each in its own 5-minute bucket) belong to job 101 by the whole-node rule
    (8 GPUs = all of sok-0); GPU-c's 1 to ml/train by its pod; GPU-b's 1 (02:30, unmapped) to no
    job. No row names the slurmd pod."""
    buckets = attributed_gpu_buckets(_warehouse(), JOBS, POD_JOBS, NODES, slurmd_maps=MAPS)
    per_job = (
        buckets.filter(pl.col("xid_events") > 0)
        .group_by("cluster", "host", "job_id", "attribution")
        .agg(pl.col("xid_events").sum())
        .sort("cluster", "job_id", nulls_last=True)
    )
    assert per_job.rows() == [
        ("kc", "kn1", "ml/train", "pod", 1),
        ("kc", "kn1", None, "unattributed", 1),
        ("sc", "sok-0", "101", "whole_node", 2),
    ]
