"""The lent GPUs in the fleet-wide tables (METRICS.md "Slurm on Kubernetes", layer ownership):
:func:`slurmd_job_keys` and :func:`lend_capacity` on literal frames, hand-computed."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from pipelines.core.slurm_on_k8s import (
    LENT_CAPACITY_SOURCE,
    POD_HOSTNAME_LABEL,
    lend_capacity,
    slurmd_job_keys,
)

H0 = dt.datetime(2026, 1, 5, 0, tzinfo=dt.UTC)
H1 = H0 + dt.timedelta(hours=1)
H2 = H0 + dt.timedelta(hours=2)


def _occ(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String(), "hour": pl.Datetime("us", "UTC"),
            "capacity_gpu_s": pl.Float64(), "down_gpu_s": pl.Float64(),
            "planned_down_gpu_s": pl.Float64(), "allocated_gpu_s": pl.Float64(),
            "occupancy": pl.Float64(), "capacity_source": pl.String(),
        },
        orient="row",
    )  # fmt: skip


def _hourly(rows: list[tuple]) -> pl.DataFrame:
    """``cluster, k8s_cluster, k8s_node, hour, lent_to_slurm_gpu_s, slurm_allocated_gpu_s``
    (the columns read; a 5-tuple row has nothing allocated)."""
    return pl.DataFrame(
        [r if len(r) == 6 else (*r, 0.0) for r in rows],
        schema={
            "cluster": pl.String(), "k8s_cluster": pl.String(), "k8s_node": pl.String(),
            "hour": pl.Datetime("us", "UTC"), "lent_to_slurm_gpu_s": pl.Float64(),
            "slurm_allocated_gpu_s": pl.Float64(),
        },
        orient="row",
    )  # fmt: skip


def test_lent_gpus_move_from_kubernetes_to_slurm() -> None:
    """Kubernetes cluster kc: 2 nodes × 8 GPUs = 16 × 3 600 = 57 600 GPU-s per hour. slurmd pod
    on kn1 holds 4 GPUs all of 00:00 and 01:00 (14 400 GPU-s each), a second one on kn2 holds 8
    GPUs from 01:30 (8 × 1 800 = 14 400 at 01:00, 28 800 at 02:00). Slurm cluster sc had
    allocations only at 01:00 (7 200 GPU-s; its observed capacity 28 800 is replaced).

    kc capacity: 00 57 600 − 14 400 = 43 200; 01 57 600 − 14 400 − 14 400 = 28 800;
    02 57 600 − 28 800 = 28 800. sc capacity: 00 14 400 (row added, nothing allocated);
    01 28 800 (occupancy 7 200 ÷ 28 800 = 0.25); 02 28 800 (row added).
    Per hour kc + sc = 57 600: the physical GPUs once. Cluster other is untouched."""
    occ = _occ([
        ("kc", H0, 57600.0, 0.0, 0.0, 3600.0, 3600.0 / 57600.0, "inventory"),
        ("kc", H1, 57600.0, 0.0, 0.0, 7200.0, 7200.0 / 57600.0, "inventory"),
        ("kc", H2, 57600.0, 0.0, 0.0, 0.0, 0.0, "inventory"),
        ("sc", H1, 28800.0, 0.0, 0.0, 7200.0, 0.25, "observed"),
        ("other", H1, 3600.0, 0.0, 0.0, 1800.0, 0.5, "inventory"),
    ])  # fmt: skip
    hourly = _hourly([
        ("sc", "kc", "kn1", H0, 14400.0), ("sc", "kc", "kn1", H1, 14400.0, 7200.0),
        ("sc", "kc", "kn2", H1, 14400.0), ("sc", "kc", "kn2", H2, 28800.0),
    ])  # fmt: skip
    out = lend_capacity(occ, hourly)
    assert out.columns == occ.columns
    got = {(r["cluster"], r["hour"]): r for r in out.iter_rows(named=True)}
    assert [got["kc", h]["capacity_gpu_s"] for h in (H0, H1, H2)] == [43200.0, 28800.0, 28800.0]
    assert [got["kc", h]["allocated_gpu_s"] for h in (H0, H1, H2)] == [3600.0, 7200.0, 0.0]
    # 3 600 ÷ 43 200 = 1/12; 7 200 ÷ 28 800 = 0.25
    assert got["kc", H0]["occupancy"] == pytest.approx(1 / 12)
    assert got["kc", H1]["occupancy"] == 0.25
    assert [got["sc", h]["capacity_gpu_s"] for h in (H0, H1, H2)] == [14400.0, 28800.0, 28800.0]
    assert [got["sc", h]["allocated_gpu_s"] for h in (H0, H1, H2)] == [0.0, 7200.0, 0.0]
    assert [got["sc", h]["occupancy"] for h in (H0, H1, H2)] == [0.0, 0.25, 0.0]
    assert {got["sc", h]["capacity_source"] for h in (H0, H1, H2)} == {LENT_CAPACITY_SOURCE}
    assert got["sc", H0]["down_gpu_s"] == 0.0 and got["sc", H0]["planned_down_gpu_s"] == 0.0
    for h in (H0, H1, H2):
        assert got["kc", h]["capacity_gpu_s"] + got["sc", h]["capacity_gpu_s"] == 57600.0
    assert got["other", H1] == {
        "cluster": "other", "hour": H1, "capacity_gpu_s": 3600.0, "down_gpu_s": 0.0,
        "planned_down_gpu_s": 0.0, "allocated_gpu_s": 1800.0, "occupancy": 0.5,
        "capacity_source": "inventory",
    }  # fmt: skip
    assert out.height == 3 + 3 + 1


def test_no_pair_leaves_occupancy_unchanged() -> None:
    """With no Slurm-on-Kubernetes rows the frame is returned as it was."""
    occ = _occ([("kc", H0, 57600.0, 0.0, 0.0, 3600.0, 0.0625, "inventory")])
    assert lend_capacity(occ, _hourly([])).equals(occ)


def test_slurmd_job_keys_are_the_jobs_of_labelled_pods() -> None:
    """Pods sok-0 and sok-1 carry the pod-hostname label (slurmd pods); train-1 does not; a
    labelled pod of another cluster is not this cluster's. Jobs: kc/slurm/sok-0 and
    kc/slurm/sok-1 (train-1's job kc/ml/train is not one)."""
    lab = '{"' + POD_HOSTNAME_LABEL + '": "%s"}'
    pods = pl.DataFrame({
        "cluster": ["kc", "kc", "kc", "other"],
        "namespace": ["slurm", "slurm", "ml", "slurm"],
        "name": ["sok-0", "sok-1", "train-1", "sok-0"],
        "labels": [lab % "sok-0", lab % "sok-1", '{"app": "train"}', lab % "x"],
    })  # fmt: skip
    pod_jobs = pl.DataFrame({
        "cluster": ["kc", "kc", "kc", "other"],
        "namespace": ["slurm", "slurm", "ml", "slurm"],
        "pod": ["sok-0", "sok-1", "train-1", "sok-0"],
        "job_id": ["slurm/sok-0", "slurm/sok-1", "ml/train", "slurm/sok-0"],
    })  # fmt: skip
    assert slurmd_job_keys(pods, pod_jobs, "kc").rows() == [
        ("kc", "slurm/sok-0"), ("kc", "slurm/sok-1"),
    ]  # fmt: skip


def _maps() -> pl.DataFrame:
    """sok-0 ran as pod slurm/sok-0 on kn1 from 00:00 until 01:00, then (StatefulSet migration)
    as the same pod name on kn2 from 01:00, still open."""
    return pl.DataFrame(
        {
            "cluster": ["sc", "sc"], "k8s_cluster": ["kc", "kc"],
            "slurm_node": ["sok-0", "sok-0"], "valid_from": [H0, H1], "valid_to": [H1, None],
            "namespace": ["slurm", "slurm"], "pod": ["sok-0", "sok-0"],
        },
        schema_overrides={"valid_from": pl.Datetime("us", "UTC"),
                          "valid_to": pl.Datetime("us", "UTC")},
    )  # fmt: skip


def test_slurmd_telemetry_moves_to_the_slurm_node() -> None:
    """Four DCGM rows: (1) slurmd pod sok-0 on kn1 at 00:30 → sc/sok-0, pod cleared; (2) the same
    pod on kn2 at 01:30 → sc/sok-0; (3) native pod ml/train on kn1 → unchanged; (4) a row of
    another cluster with the same namespace/pod → unchanged (not kc's)."""
    from pipelines.core.slurm_on_k8s import rehome_slurmd_dcgm

    m30 = dt.timedelta(minutes=30)
    samples = pl.DataFrame(
        {
            "cluster": ["kc", "kc", "kc", "other"], "host": ["kn1", "kn2", "kn1", "x1"],
            "namespace": ["slurm", "slurm", "ml", "slurm"],
            "pod": ["sok-0", "sok-0", "train", "sok-0"],
            "ts": [H0 + m30, H1 + m30, H0 + m30, H0 + m30], "gr_sum": [0.9, 0.8, 0.5, 0.1],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    out = rehome_slurmd_dcgm(samples, _maps())
    assert out.columns == samples.columns
    assert out.select("cluster", "host", "namespace", "pod", "gr_sum").rows() == [
        ("sc", "sok-0", None, None, 0.9),
        ("sc", "sok-0", None, None, 0.8),
        ("kc", "kn1", "ml", "train", 0.5),
        ("other", "x1", "slurm", "sok-0", 0.1),
    ]
    assert rehome_slurmd_dcgm(samples, _maps().clear()).equals(samples)


def test_slurmd_telemetry_goes_to_the_slurm_job_never_the_pod() -> None:
    """Attribution after the move (:func:`metrics.attribution.attribute_samples`): Slurm job
    101 (sc, 8 GPUs = the whole of node sok-0, 00:00–02:00) gets both slurmd rows by the
    whole-node rule; the slurmd pod's Kubernetes job (kc, slurm/sok-0) gets none (it is left out
    of the jobs, as the build does); the native pod keeps its own job ml/train by its labels."""
    from metrics.attribution import attribute_samples
    from pipelines.core.slurm_on_k8s import rehome_slurmd_dcgm

    m30 = dt.timedelta(minutes=30)
    samples = pl.DataFrame(
        {
            "cluster": ["kc", "kc", "kc"], "host": ["kn1", "kn2", "kn1"],
            "gpu_uuid": ["GPU-a", "GPU-b", "GPU-c"], "gpu_index": ["0", "0", "1"],
            "device": ["nvidia0", "nvidia0", "nvidia1"], "mig_profile": [None, None, None],
            "mig_instance": [None, None, None], "hpc_job": [None, None, None],
            "namespace": ["slurm", "slurm", "ml"], "pod": ["sok-0", "sok-0", "train"],
            "ts": [H0 + m30, H1 + m30, H0 + m30],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC"), "mig_profile": pl.String(),
                          "mig_instance": pl.String(), "hpc_job": pl.String()},
    )  # fmt: skip
    jobs = pl.DataFrame(
        {
            "source": ["slurm", "kubernetes"], "cluster": ["sc", "kc"],
            "job_id": ["101", "ml/train"], "job_id_raw": ["101", None], "attempt": [0, 0],
            "team": ["physics", "ml"], "gpus": [8.0, 1.0], "start_at": [H0, H0],
            "end_at": [H2, H2], "node_list": [["sok-0"], ["kn1"]],
        },
        schema_overrides={"start_at": pl.Datetime("us", "UTC"),
                          "end_at": pl.Datetime("us", "UTC"), "job_id_raw": pl.String()},
    )  # fmt: skip
    pod_jobs = pl.DataFrame({
        "cluster": ["kc", "kc"], "namespace": ["slurm", "ml"], "pod": ["sok-0", "train"],
        "job_id": ["slurm/sok-0", "ml/train"],
    })  # fmt: skip
    nodes = pl.DataFrame({"cluster": ["sc", "kc"], "host": ["sok-0", "kn1"], "gpus": [8.0, 8.0]})
    att = attribute_samples(
        rehome_slurmd_dcgm(samples, _maps()).lazy(), jobs.lazy(), pod_jobs=pod_jobs.lazy(),
        nodes=nodes.lazy(),
    ).collect()  # fmt: skip
    assert att.select("cluster", "host", "job_id", "attempt", "team", "attribution").rows() == [
        ("sc", "sok-0", "101", 0, "physics", "whole_node"),
        ("sc", "sok-0", "101", 0, "physics", "whole_node"),
        ("kc", "kn1", "ml/train", 0, "ml", "pod"),
    ]
    assert "slurm/sok-0" not in att["job_id"].to_list()
