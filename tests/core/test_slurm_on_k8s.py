"""Slurm on Kubernetes: the dated node map, layer ownership, mirrors and the double-count rate,
each pinned on literal frames with the arithmetic written out."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from pipelines.core.slurm_on_k8s import (
    POD_HOSTNAME_LABEL,
    SLURM_JOBID_LABEL,
    SlurmOnK8s,
    attribute_slurmd_dcgm,
    slurm_node_map,
    slurm_on_k8s_findings,
    slurm_on_k8s_hourly,
    slurmd_pods,
)

UTC = dt.UTC
AS_OF = dt.datetime(2026, 11, 2, 3, 0, tzinfo=UTC)
SETTING = SlurmOnK8s(cluster="sok-c", k8s_cluster="k8s-c", pattern="A")


def t(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 2, h, m, tzinfo=UTC)


_POD_SCHEMA = {
    "cluster": pl.String(), "namespace": pl.String(), "name": pl.String(),
    "node_name": pl.String(), "gpus": pl.Float64(), "labels": pl.String(),
    "created_at": pl.Datetime("us", "UTC"), "scheduled_at": pl.Datetime("us", "UTC"),
    "started_at": pl.Datetime("us", "UTC"), "finished_at": pl.Datetime("us", "UTC"),
    "deleted_at": pl.Datetime("us", "UTC"),
}  # fmt: skip
_ATT_SCHEMA = {
    "job_id": pl.String(), "attempt": pl.Int64(), "gpus": pl.Float64(),
    "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC"),
    "node_list": pl.List(pl.String()), "admin_comment": pl.String(),
}  # fmt: skip
_COMMENT_SCHEMA = {
    "cluster": pl.String(), "slurm_node": pl.String(), "polled_at": pl.Datetime("us", "UTC"),
    "namespace": pl.String(), "pod": pl.String(), "k8s_node": pl.String(),
    "nodeset": pl.String(),
}  # fmt: skip


def pod(ns, name, node, gpus, start, end=None, labels=None, created=None, scheduled="start"):
    return {
        "cluster": "k8s-c", "namespace": ns, "name": name, "node_name": node, "gpus": gpus,
        "labels": json.dumps(labels or {}), "created_at": created or start,
        "scheduled_at": start if scheduled == "start" else scheduled, "started_at": start,
        "finished_at": end, "deleted_at": None,
    }  # fmt: skip


def pods(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=_POD_SCHEMA)


def attempts(*rows: tuple) -> pl.DataFrame:
    keys = list(_ATT_SCHEMA)
    return pl.DataFrame([dict(zip(keys, r, strict=True)) for r in rows], schema=_ATT_SCHEMA)


NO_COMMENTS = pl.DataFrame(schema=_COMMENT_SCHEMA)
K8S_NODES = pl.DataFrame(
    {"cluster": ["k8s-c"] * 3, "host": ["kn1", "kn2", "kn3"], "gpus": [8.0] * 3,
     "gpu_type": ["h100"] * 3}
)  # fmt: skip
SLURMD = {POD_HOSTNAME_LABEL: "sok-0", "app.kubernetes.io/instance": "slurm-worker-gpu"}


def worked_example() -> tuple[pl.DataFrame, pl.DataFrame]:
    """kn1 (8 × h100): slurmd pod sok-0 holds 4 GPUs 00:00 → (running at 03:00); native pod
    train-1 holds 2 GPUs 00:30–01:30; pod infer-1 (1 GPU, 02:00–03:00) is mirrored by external
    job 103; pod wait-1 (1 GPU) pends from 01:00 to the cut-off. Slurm jobs on sok-0: 101 (4
    GPUs, 00:00–01:00), 102 (2 GPUs, 01:30–02:30), mirror 103 (1 GPU, 02:00–03:00)."""
    p = pods(
        pod("slurm", "sok-0", "kn1", 4.0, t(0), labels=SLURMD),
        pod("ml", "train-1", "kn1", 2.0, t(0, 30), t(1, 30)),
        pod("ml", "infer-1", "kn1", 1.0, t(2), t(3), labels={SLURM_JOBID_LABEL: "103"}),
        pod("ml", "wait-1", None, 1.0, None, created=t(1), scheduled=None),
    )
    a = attempts(
        ("101", 0, 4.0, t(0), t(1), ["sok-0"], None),
        ("102", 0, 2.0, t(1, 30), t(2, 30), ["sok-0"], None),
        ("103", 0, 1.0, t(2), t(3), ["sok-0"], '{"pods":["ml/infer-1"]}'),
    )
    return p, a


def test_layer_ownership_per_node_hour_is_hand_computed() -> None:
    """Hour 00: capacity 8×3600 = 28 800; lent 4×3600 = 14 400; native train-1 2×1800 = 3 600;
    k8s idle 28 800 − 14 400 − 3 600 = 10 800; Slurm allocated (101) 14 400, idle 0; no pod
    pends, held idle 0. Naive = Slurm 14 400 + pods (14 400 + 3 600) = 32 400; reconciled =
    3 600 + 14 400 = 18 000; rate = 14 400 / 18 000 = 0.8.

    Hour 01: native train-1 3 600; allocated (102, 01:30–02:00) 2×1800 = 3 600, Slurm idle
    10 800; wait-1 pends all hour, so held idle = 4×1800 (01:00–01:30) + 2×1800 = 10 800.
    Naive = 3 600 + 18 000 = 21 600; reconciled = 7 200; rate = 14 400 / 7 200 = 2.0.

    Hour 02: native infer-1 (mirrored: the pod carries the work) 3 600; allocated (102,
    02:00–02:30) 3 600; mirror 103 3 600 counts nowhere; Slurm idle 10 800; held idle =
    2×1800 + 4×1800 = 10 800. Naive = (3 600 + 3 600) + (14 400 + 3 600) = 25 200;
    reconciled = 7 200; rate = 18 000 / 7 200 = 2.5."""
    p, a = worked_example()
    hourly, node_map, _pieces, mirrors = slurm_on_k8s_hourly(
        SETTING, a, p, NO_COMMENTS, K8S_NODES, AS_OF
    )
    got = hourly.select(
        "hour", "capacity_gpu_s", "lent_to_slurm_gpu_s", "k8s_native_gpu_s", "k8s_idle_gpu_s",
        "slurm_allocated_gpu_s", "mirror_gpu_s", "slurm_idle_gpu_s", "slurmd_held_idle_gpu_s",
        "naive_slurm_gpu_s", "naive_k8s_gpu_s", "naive_gpu_s", "reconciled_gpu_s",
        "double_count_rate",
    ).rows()  # fmt: skip
    assert got == [
        (t(0), 28800.0, 14400.0, 3600.0, 10800.0, 14400.0, 0.0, 0.0, 0.0,
         14400.0, 18000.0, 32400.0, 18000.0, 0.8),
        (t(1), 28800.0, 14400.0, 3600.0, 10800.0, 3600.0, 0.0, 10800.0, 10800.0,
         3600.0, 18000.0, 21600.0, 7200.0, 2.0),
        (t(2), 28800.0, 14400.0, 3600.0, 10800.0, 3600.0, 3600.0, 10800.0, 10800.0,
         7200.0, 18000.0, 25200.0, 7200.0, 2.5),
    ]  # fmt: skip
    assert node_map.select("slurm_node", "valid_from", "valid_to", "pod", "k8s_node",
                           "nodeset", "source").rows() == [
        ("sok-0", t(0), None, "sok-0", "kn1", "slurm-worker-gpu", "pod")
    ]  # fmt: skip
    assert mirrors.rows() == [("103", ["ml/infer-1"], 1)]


def test_both_layers_balance_in_every_node_hour() -> None:
    """Kubernetes side: lent + native + k8s idle = capacity; Slurm side: allocated + idle = lent;
    so reconciled + both idles = capacity (28 800 each hour), exactly."""
    p, a = worked_example()
    hourly = slurm_on_k8s_hourly(SETTING, a, p, NO_COMMENTS, K8S_NODES, AS_OF)[0]
    k8s_side = hourly["lent_to_slurm_gpu_s"] + hourly["k8s_native_gpu_s"] + hourly["k8s_idle_gpu_s"]
    slurm_side = hourly["slurm_allocated_gpu_s"] + hourly["slurm_idle_gpu_s"]
    assert (k8s_side - hourly["capacity_gpu_s"]).abs().max() <= 1e-9
    assert (slurm_side - hourly["lent_to_slurm_gpu_s"]).abs().max() <= 1e-9
    whole = hourly["reconciled_gpu_s"] + hourly["k8s_idle_gpu_s"] + hourly["slurm_idle_gpu_s"]
    assert whole.to_list() == [28800.0] * 3


def test_double_count_rate_over_the_example() -> None:
    """Σ naive = 32 400 + 21 600 + 25 200 = 79 200; Σ reconciled = 18 000 + 7 200 + 7 200 =
    32 400; rate = 46 800 / 32 400 = 1.444…; a node-hour with nothing reconciled is NULL."""
    p, a = worked_example()
    hourly = slurm_on_k8s_hourly(SETTING, a, p, NO_COMMENTS, K8S_NODES, AS_OF)[0]
    naive, rec = hourly["naive_gpu_s"].sum(), hourly["reconciled_gpu_s"].sum()
    assert (naive, rec) == (79200.0, 32400.0)
    assert (naive - rec) / rec == pytest.approx(46800 / 32400, rel=1e-12)
    idle_only = pods(pod("slurm", "sok-0", "kn1", 4.0, t(0), t(1), labels=SLURMD))
    h = slurm_on_k8s_hourly(SETTING, attempts(), idle_only, NO_COMMENTS, K8S_NODES, AS_OF)[0]
    assert h.select("naive_gpu_s", "reconciled_gpu_s", "double_count_rate").rows() == [
        (14400.0, 0.0, None)
    ]


def test_node_map_from_polled_comments_holds_until_it_changes() -> None:
    """Comments polled at 00:00 and 01:00 name pod p5 on kn5, at 02:00 pod p5b on kn6: two
    intervals, [00:00, 02:00) on kn5 and [02:00, open) on kn6; a comment naming an ingested
    pod adds nothing (the pod's own span wins)."""
    comments = pl.DataFrame(
        [
            ("sok-c", "sok-5", t(0), "slurm", "p5", "kn5", "gpu"),
            ("sok-c", "sok-5", t(1), "slurm", "p5", "kn5", "gpu"),
            ("sok-c", "sok-5", t(2), "slurm", "p5b", "kn6", "gpu"),
            ("sok-c", "sok-0", t(0), "slurm", "sok-0", "kn1", "gpu"),
        ],
        schema=_COMMENT_SCHEMA,
        orient="row",
    )
    slurmd = slurmd_pods(pods(pod("slurm", "sok-0", "kn1", 4.0, t(0), labels=SLURMD)),
                         "k8s-c", AS_OF)  # fmt: skip
    got = slurm_node_map(slurmd, comments, "sok-c", AS_OF)
    cols = ("slurm_node", "valid_from", "valid_to", "pod", "k8s_node", "source")
    assert got.select(cols).rows() == [
        ("sok-0", t(0), None, "sok-0", "kn1", "pod"),
        ("sok-5", t(0), t(2), "p5", "kn5", "comment"),
        ("sok-5", t(2), None, "p5b", "kn6", "comment"),
    ]  # fmt: skip


def test_findings_name_each_planted_fault() -> None:
    """sok-1 runs on kn2 00:00–01:00, then (StatefulSet pod recreated) on kn3 01:00 →: job 201
    (8 GPUs, 00:30–01:30) migrates, value 2 nodes. Job 202 asks 6 GPUs on sok-0 whose pod holds
    4 (00:00–01:00): GRES mismatch of 2×3600 = 7 200 GPU-s. Job 203 on sok-9 (no pod): 1 GPU ×
    3600 s unmapped. Mirror 204 names ml/gone, never ingested: 1 pod missing. Job 205's
    AdminComment opens with '{' but is free text: no mirror, no failure."""
    sok1 = {POD_HOSTNAME_LABEL: "sok-1"}
    p = pods(
        pod("slurm", "sok-0", "kn1", 4.0, t(0), t(1), labels=SLURMD),
        pod("slurm", "sok-1", "kn2", 8.0, t(0), t(1), labels=sok1),
        pod("slurm", "sok-1", "kn3", 8.0, t(1), None, labels=sok1),
    )
    a = attempts(
        ("201", 0, 8.0, t(0, 30), t(1, 30), ["sok-1"], None),
        ("202", 0, 6.0, t(0), t(1), ["sok-0"], None),
        ("203", 0, 1.0, t(0), t(1), ["sok-9"], None),
        ("204", 0, 1.0, t(2), t(3), ["sok-1"], '{"pods":["ml/gone"]}'),
        ("205", 0, 0.0, t(2), t(3), ["sok-1"], "{not json: an administrator's note"),
    )
    hourly, _m, pieces, mirrors = slurm_on_k8s_hourly(SETTING, a, p, NO_COMMENTS, K8S_NODES,
                                                      AS_OF)  # fmt: skip
    found = slurm_on_k8s_findings("sok-c", hourly, pieces, mirrors)
    assert found.select("check", "value").rows() == [
        ("sok_gres_mismatch", 7200.0),
        ("sok_job_without_pod", 3600.0),
        ("sok_mirror_without_pod", 1.0),
        ("sok_node_migration", 2.0),
    ]
    moved = found.filter(pl.col("check") == "sok_node_migration")["detail"].item()
    assert moved == "job 201 attempt 0: Slurm node sok-1 moved between Kubernetes nodes kn2 → kn3"
    # the migrating job's GPU-seconds land on each machine for its own half hour: 8×1800
    per_node = hourly.filter(pl.col("slurm_allocated_gpu_s") > 0).select(
        "k8s_node", "hour", "slurm_allocated_gpu_s"
    )
    assert per_node.rows() == [
        ("kn1", t(0), 21600.0),
        ("kn2", t(0), 14400.0),
        ("kn3", t(1), 14400.0),
    ]


def test_slurmd_pod_telemetry_goes_to_the_slurm_job_never_to_the_pod() -> None:
    """Samples of sok-0's pod at 00:30 (job 101 alone on sok-0) and 02:10 (jobs 102 and mirror
    103 both run: left to the GPU index map) go to Slurm node sok-0; the native pod's sample is
    not a slurmd sample and is not returned. Pod and namespace are cleared."""
    p, a = worked_example()
    _h, node_map, pieces, _m = slurm_on_k8s_hourly(SETTING, a, p, NO_COMMENTS, K8S_NODES, AS_OF)
    samples = pl.DataFrame(
        {
            "ts": [t(0, 30), t(2, 10), t(0, 45)],
            "host": ["kn1"] * 3,
            "gpu_index": [0, 1, 6],
            "pod": ["sok-0", "sok-0", "train-1"],
            "namespace": ["slurm", "slurm", "ml"],
            "value": [0.9, 0.5, 0.7],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC"), "gpu_index": pl.Int32},
    )
    got = attribute_slurmd_dcgm(samples, "sok-c", node_map, pieces)
    assert got.select("ts", "gpu_index", "slurm_cluster", "slurm_node", "job_id", "attempt",
                      "pod", "namespace", "value").rows() == [
        (t(0, 30), 0, "sok-c", "sok-0", "101", 0, None, None, 0.9),
        (t(2, 10), 1, "sok-c", "sok-0", None, None, None, None, 0.5),
    ]  # fmt: skip


def test_a_comment_interval_ends_where_the_node_s_next_slurmd_pod_begins() -> None:
    """Slurm node sok-1 (8 GPUs): a comment polled at 00:00 names slurm/old-1 on kn2 (never
    ingested, Gres= 8 GPUs), and the ingested slurm/new-1 on kn3 runs from 01:00 (no later poll);
    job 201 holds 8 GPUs on sok-1 01:00–03:00. The node runs in one pod at a time: the comment's
    interval ends at 01:00, so kn2 lends 8 × 3,600 at 00:00 only and each hour lends and
    allocates at most 28,800 (both pods lent, and the job was on both, 57,600 an hour)."""
    lab = {POD_HOSTNAME_LABEL: "sok-1", "app.kubernetes.io/instance": "slurm-worker-gpu"}
    p = pods(pod("slurm", "new-1", "kn3", 8.0, t(1), labels=lab))
    a = attempts(("201", 0, 8.0, t(1), t(3), ["sok-1"], None))
    comments = pl.DataFrame(
        [("sok-c", "sok-1", t(0), "slurm", "old-1", "kn2", "gpu", 8.0)],
        schema={**_COMMENT_SCHEMA, "gpus": pl.Float64()},
        orient="row",
    )
    hourly, node_map, _, _ = slurm_on_k8s_hourly(SETTING, a, p, comments, K8S_NODES, AS_OF)
    assert node_map.select("valid_from", "valid_to", "pod", "source").rows() == [
        (t(0), t(1), "old-1", "comment"),
        (t(1), None, "new-1", "pod"),
    ]
    got = (
        hourly.group_by("k8s_node", "hour")
        .agg(pl.col("lent_to_slurm_gpu_s", "slurm_allocated_gpu_s").sum())
        .sort("hour")
        .rows()
    )
    assert got == [
        ("kn2", t(0), 28800.0, 0.0),
        ("kn3", t(1), 28800.0, 28800.0),
        ("kn3", t(2), 28800.0, 28800.0),
    ]
