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
    """``cluster, k8s_cluster, k8s_node, hour, lent_to_slurm_gpu_s`` (the columns read)."""
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String(), "k8s_cluster": pl.String(), "k8s_node": pl.String(),
            "hour": pl.Datetime("us", "UTC"), "lent_to_slurm_gpu_s": pl.Float64(),
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
        ("sc", "kc", "kn1", H0, 14400.0), ("sc", "kc", "kn1", H1, 14400.0),
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
