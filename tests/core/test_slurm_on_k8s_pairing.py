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


def _hourly(rows: list[tuple]) -> pl.DataFrame:
    """``cluster, k8s_cluster, k8s_node, hour, lent_to_slurm_gpu_s, slurm_allocated_gpu_s``."""
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String(), "k8s_cluster": pl.String(), "k8s_node": pl.String(),
            "hour": _UTC, "lent_to_slurm_gpu_s": pl.Float64(),
            "slurm_allocated_gpu_s": pl.Float64(),
        },
        orient="row",
    )  # fmt: skip


def _occ(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String(), "hour": _UTC, "capacity_gpu_s": pl.Float64(),
            "down_gpu_s": pl.Float64(), "planned_down_gpu_s": pl.Float64(),
            "allocated_gpu_s": pl.Float64(), "occupancy": pl.Float64(),
            "capacity_source": pl.String(),
        },
        orient="row",
    )  # fmt: skip


def test_slurm_allocation_counts_only_what_the_pods_lend() -> None:
    """kc: kn1 and kn2, 8 GPUs each (57 600 GPU-s an hour).

    Hour 00: slurmd pod sok-0 on kn1 lends 4 GPUs (14 400) but Slurm allocates 8 on it (job on
    ``Gres=gpu:8``, 28 800 by sacct): sc allocated = min(28 800, 14 400) = 14 400, occupancy
    1.0 (before: 28 800, occupancy 2.0).
    Hour 01: the pod restarts under a new name with a 5-minute gap, 4 × 3 300 = 13 200 lent;
    the 4-GPU job is mapped for 13 200 (1 200 unmapped, ``sok_job_without_pod``); sacct says
    14 400: sc allocated 13 200, occupancy 1.0 (before 14 400 ÷ 13 200 = 1.0909).
    Hour 02: the pod was deleted, nothing lent, the job still runs by sacct (14 400): sc
    allocated 0, occupancy NULL (before 14 400 on capacity 0).
    kc + sc capacity = 57 600 in each hour."""
    from pipelines.core.slurm_on_k8s import lend_capacity

    occ = _occ([
        ("kc", H0, 57600.0, 0.0, 0.0, 0.0, 0.0, "inventory"),
        ("kc", H1, 57600.0, 0.0, 0.0, 0.0, 0.0, "inventory"),
        ("kc", H2, 57600.0, 0.0, 0.0, 0.0, 0.0, "inventory"),
        ("sc", H0, 28800.0, 0.0, 0.0, 28800.0, 1.0, "observed"),
        ("sc", H1, 28800.0, 0.0, 0.0, 14400.0, 0.5, "observed"),
        ("sc", H2, 28800.0, 0.0, 0.0, 14400.0, 0.5, "observed"),
    ])  # fmt: skip
    hourly = _hourly([
        ("sc", "kc", "kn1", H0, 14400.0, 28800.0),
        ("sc", "kc", "kn1", H1, 13200.0, 13200.0),
    ])  # fmt: skip
    out = lend_capacity(occ, hourly).filter(pl.col("cluster") == "sc")
    assert out.select("hour", "capacity_gpu_s", "allocated_gpu_s", "occupancy").rows() == [
        (H0, 14400.0, 14400.0, 1.0),
        (H1, 13200.0, 13200.0, 1.0),
        (H2, 0.0, 0.0, None),
    ]


def test_waterfall_of_a_lent_cluster_is_cut_to_its_lent_allocation() -> None:
    """One 4-GPU attempt COMPLETED over 01:00–02:00 (14 400 GPU-s by sacct) on a Slurm cluster
    whose pods lent 13 200 GPU-s that hour, all of it to the attempt (``allocated_cap`` 13 200).
    Leaves: goodput 14 400 × 13 200 ÷ 14 400 = 13 200, idle 0; they sum to the capacity 13 200
    (before: goodput 14 400 > capacity). A second hour with no cap row keeps its leaves."""
    from metrics import gpu_waterfall_hourly

    att = pl.DataFrame(
        {
            "cluster": ["sc"], "job_id": ["401"], "attempt": [0], "partition": ["sok"],
            "team": ["physics"], "state": ["COMPLETED"], "gpus": [4.0], "req_gpus": [4.0],
            "eligible_at": [H0], "start_at": [H0], "end_at": [H2], "node_list": [["sok-0"]],
        },
        schema_overrides={"eligible_at": _UTC, "start_at": _UTC, "end_at": _UTC},
    ).lazy()  # fmt: skip
    cap = pl.DataFrame(
        {
            "cluster": ["sc", "sc"], "hour": [H0, H1], "capacity_gpu_s": [14400.0, 13200.0],
            "down_gpu_s": [0.0, 0.0], "planned_down_gpu_s": [0.0, 0.0],
        },
        schema_overrides={"hour": _UTC},
    ).lazy()  # fmt: skip
    lent = pl.DataFrame(
        {"cluster": ["sc"], "hour": [H1], "allocated_gpu_s": [13200.0]},
        schema_overrides={"hour": _UTC},
    ).lazy()
    wf = gpu_waterfall_hourly(att, cap, H2, allocated_cap=lent).collect()
    leaves = {(r["hour"], r["leaf"]): r["gpu_s"] for r in wf.iter_rows(named=True) if r["gpu_s"]}
    assert leaves == {(H0, "goodput"): 14400.0, (H1, "goodput"): 13200.0}


def test_a_job_over_slurmd_pods_of_different_sizes_splits_by_their_gpus() -> None:
    """Job 406 holds 12 GPUs on sok-[0-1], 00:00–02:00; sok-0 runs in a 4-GPU slurmd pod on
    kn1, sok-1 in an 8-GPU pod on kn2. 12 × 4 ÷ 12 = 4 on sok-0 and 12 × 8 ÷ 12 = 8 on sok-1
    (before: 6 and 6, so kn1 showed 7 200 GPU-s allocated above its pod an hour, a false
    ``sok_gres_mismatch``). Where one node's GPUs are unknown (a comment without ``Gres=``) the
    split stays even: 6 and 6."""
    from pipelines.core.slurm_on_k8s import NODE_MAP_SCHEMA, map_attempt_nodes

    attempts = pl.DataFrame(
        {
            "job_id": ["406"], "attempt": [0], "gpus": [12.0], "start_at": [H0],
            "end_at": [H2], "node_list": [["sok-0", "sok-1"]],
        },
        schema_overrides={"start_at": _UTC, "end_at": _UTC},
    )  # fmt: skip
    node_map = pl.DataFrame(
        {
            "cluster": ["sc", "sc"], "slurm_node": ["sok-0", "sok-1"], "valid_from": [H0, H0],
            "valid_to": [None, None], "namespace": ["slurm", "slurm"],
            "pod": ["slinky-0", "slinky-1"], "k8s_node": ["kn1", "kn2"],
            "nodeset": ["s", "s"], "gpus": [4.0, 8.0], "source": ["pod", "pod"],
        },
        schema=NODE_MAP_SCHEMA,
    )  # fmt: skip
    out = map_attempt_nodes(attempts, node_map)
    assert out.select("slurm_node", "k8s_node", "gpus_per_node").rows() == [
        ("sok-0", "kn1", 4.0),
        ("sok-1", "kn2", 8.0),
    ]
    unknown = node_map.with_columns(
        pl.when(pl.col("slurm_node") == "sok-1").then(None).otherwise("gpus").alias("gpus")
    )
    assert map_attempt_nodes(attempts, unknown)["gpus_per_node"].to_list() == [6.0, 6.0]


def test_a_pods_state_is_its_most_advanced_over_the_loads() -> None:
    """Pod u1 loaded three times: load 3 (an old snapshot) Running, load 2 Succeeded with its
    finish at 02:00, load 1 Terminating (deleted at 01:50, not yet finished): the finished row
    wins (ends 02:00). Pod u2: load 1 Pending, load 2 Running: Running wins. Pod u3, one
    row: kept as loaded."""
    from pipelines.core.build import _newest_pod_state

    pods = pl.DataFrame(
        {
            "cluster": ["kc"] * 6, "uid": ["u1", "u1", "u1", "u2", "u2", "u3"],
            "phase": ["Running", "Succeeded", "Running", "Pending", "Running", "Running"],
            "scheduled_at": [H0, H0, H0, None, H0, H0],
            "started_at": [H0, H0, H0, None, H0, H0],
            "finished_at": [None, H2, None, None, None, None],
            "deleted_at": [None, None, H2 - dt.timedelta(minutes=10), None, None, None],
            "restart_count": [0, 0, 0, 0, 0, 1],
            "ingest_id": [3, 2, 1, 1, 2, 5],
        },
        schema_overrides={c: _UTC for c in
                          ("scheduled_at", "started_at", "finished_at", "deleted_at")},
    )  # fmt: skip
    out = _newest_pod_state(pods).sort("uid")
    assert out.select("uid", "phase", "finished_at", "ingest_id").rows() == [
        ("u1", "Succeeded", H2, 2),
        ("u2", "Running", None, 2),
        ("u3", "Running", None, 5),
    ]
