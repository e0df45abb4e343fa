"""Slurm on Kubernetes, one owner per GPU-second (METRICS.md "Slurm on Kubernetes"): the slurmd
pod's GPU numbering, the Slurm allocation the pods lend, one pod per Slurm node at a time, on
literal frames, hand-computed."""

from __future__ import annotations

import datetime as dt

import polars as pl

H0 = dt.datetime(2026, 11, 2, 0, tzinfo=dt.UTC)
H1 = H0 + dt.timedelta(hours=1)
H2 = H0 + dt.timedelta(hours=2)
M30 = dt.timedelta(minutes=30)
_UTC = pl.Datetime("us", "UTC")


def test_slurmd_pod_gpus_take_the_slurm_node_numbering() -> None:
    """slurmd pod slurm/slinky-0 (Slurm node sok-0, 4 GPUs) holds physical GPUs 2–5 of kn1
    (native pods hold 0–1 and 6–7). Inside the pod Slurm numbers them 0–3, so
    ``scontrol show job -d`` gives job 701 IDX 0-1 (physical 2, 3) and job 702 IDX 2-3
    (physical 4, 5). dcgm-exporter labels the physical index: the rows moved to sok-0 carry the
    rank among the pod's GPUs (nvidia2 → 0 … nvidia5 → 3), and the GPU map then gives physical
    2, 3 to 701 and 4, 5 to 702 (before: 2, 3 matched 702's IDX 2-3, and 4, 5 nothing)."""
    from metrics.attribution import attribute_samples
    from pipelines.core.slurm_on_k8s import rehome_slurmd_dcgm

    phys = [2, 3, 4, 5]
    samples = pl.DataFrame(
        {
            "cluster": ["kc"] * 4, "host": ["kn1"] * 4,
            "gpu_uuid": [f"GPU-kn1-{g}" for g in phys], "gpu_index": phys,
            "device": [f"nvidia{g}" for g in phys], "mig_profile": [None] * 4,
            "mig_instance": [None] * 4, "hpc_job": [None] * 4,
            "namespace": ["slurm"] * 4, "pod": ["slinky-0"] * 4, "ts": [H0 + M30] * 4,
        },
        schema_overrides={"ts": _UTC, "gpu_index": pl.Int32(), "mig_profile": pl.String(),
                          "mig_instance": pl.Int32(), "hpc_job": pl.String()},
    )  # fmt: skip
    maps = pl.DataFrame(
        {
            "cluster": ["sc"], "k8s_cluster": ["kc"], "slurm_node": ["sok-0"],
            "valid_from": [H0], "valid_to": [None], "namespace": ["slurm"],
            "pod": ["slinky-0"], "gpus": [4.0],
        },
        schema_overrides={"valid_from": _UTC, "valid_to": _UTC},
    )  # fmt: skip
    moved = rehome_slurmd_dcgm(samples, maps)
    assert moved.columns == samples.columns
    assert moved.select("host", "gpu_uuid", "gpu_index", "device").rows() == [
        ("sok-0", "GPU-kn1-2", 0, "nvidia0"),
        ("sok-0", "GPU-kn1-3", 1, "nvidia1"),
        ("sok-0", "GPU-kn1-4", 2, "nvidia2"),
        ("sok-0", "GPU-kn1-5", 3, "nvidia3"),
    ]
    # A pod whose rows carry more GPUs than it holds: no rank is the Slurm index.
    wrong = rehome_slurmd_dcgm(samples, maps.with_columns(pl.lit(2.0).alias("gpus")))
    assert wrong["gpu_index"].to_list() == [None] * 4
    assert wrong["device"].to_list() == [None] * 4
    jobs = pl.DataFrame(
        {
            "source": ["slurm", "slurm"], "cluster": ["sc", "sc"], "job_id": ["701", "702"],
            "job_id_raw": ["701", "702"], "attempt": [0, 0], "team": ["physics", "ml"],
            "gpus": [2.0, 2.0], "start_at": [H0, H0], "end_at": [H2, H2],
            "node_list": [["sok-0"], ["sok-0"]],
        },
        schema_overrides={"start_at": _UTC, "end_at": _UTC},
    )  # fmt: skip
    gres = pl.DataFrame(
        {
            "cluster": ["sc", "sc"], "job_id": ["701", "702"], "start_at": [H0, H0],
            "node": ["sok-0", "sok-0"], "gpu_indices": [[0, 1], [2, 3]],
            "gres": ["gpu:2", "gpu:2"], "snapshot_at": [H0 + M30, H0 + M30],
        },
        schema_overrides={"start_at": _UTC, "snapshot_at": _UTC},
    )  # fmt: skip
    att = attribute_samples(
        moved.lazy(), jobs.lazy(), pod_jobs=pl.DataFrame(
            schema={"cluster": pl.String(), "namespace": pl.String(), "pod": pl.String(),
                    "job_id": pl.String()}).lazy(),
        gres=gres.lazy(),
    ).collect()  # fmt: skip
    assert att.sort("gpu_uuid").select("gpu_uuid", "job_id", "team", "attribution").rows() == [
        ("GPU-kn1-2", "701", "physics", "gres_index"),
        ("GPU-kn1-3", "701", "physics", "gres_index"),
        ("GPU-kn1-4", "702", "ml", "gres_index"),
        ("GPU-kn1-5", "702", "ml", "gres_index"),
    ]
