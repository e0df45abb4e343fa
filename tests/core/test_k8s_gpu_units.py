"""What one advertised ``nvidia.com/gpu`` is worth on a node (:mod:`pipelines.core.k8s_gpu_units`):
the node's labels decide; pods meet the node snapshot of their bind time."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from pipelines.core.k8s_gpu_units import (
    cluster_gpu_units,
    cluster_queues_in_gpus,
    gpu_unit_expr,
    nodes_in_gpus,
    pods_in_gpus,
)

_UTC = pl.Datetime("us", "UTC")


def _t(hour: int) -> dt.datetime:
    return dt.datetime(2024, 10, 8, hour, tzinfo=dt.UTC)


def _node(at: int, labels: dict[str, str], product: str | None, alloc: float,
          resource: str = "nvidia.com/gpu") -> dict[str, object]:  # fmt: skip
    return {"cluster": "k", "name": "n1", "snapshot_at": _t(at), "labels": json.dumps(labels),
            "gpu_product": product, "gpu_resource": resource, "gpu_capacity": alloc,
            "gpu_allocatable": alloc}  # fmt: skip


_SINGLE = {"nvidia.com/mig.strategy": "single"}
_MIG_1G = "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"


def test_unit_per_labels() -> None:
    """Plain 1; MIG single 1g.5gb 1/7, 3g.40gb 3/7; single strategy without MIG mode 1;
    4 replicas 1/4; a 1g.5gb slice time-sliced in 2 replicas 1/14; mixed strategy 1."""
    rows = [
        ({}, "NVIDIA-A100-SXM4-80GB"),
        (_SINGLE, _MIG_1G),
        (_SINGLE, "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"),
        (_SINGLE, "NVIDIA-A100-SXM4-80GB"),
        ({"nvidia.com/gpu.replicas": "4"}, "NVIDIA-A100-SXM4-80GB-SHARED"),
        ({**_SINGLE, "nvidia.com/gpu.replicas": "2"}, _MIG_1G + "-SHARED"),
        ({"nvidia.com/mig.strategy": "mixed"}, "NVIDIA-A100-SXM4-80GB"),
    ]
    frame = pl.DataFrame(
        {"labels": [json.dumps(a) for a, _ in rows], "gpu_product": [p for _, p in rows]}
    )
    got = frame.select(gpu_unit_expr().alias("u"))["u"].to_list()
    assert got == pytest.approx([1.0, 1 / 7, 3 / 7, 1.0, 0.25, 1 / 14, 1.0])


def test_nodes_in_physical_gpus_but_mixed_mig_resources_kept() -> None:
    """7 slices (single) → 1 GPU; 32 replicas → 8; a node of the mixed strategy (2 GPUs of
    ``nvidia.com/mig-*`` already in GPUs) keeps 2."""
    nodes = pl.DataFrame(
        [
            _node(9, _SINGLE, _MIG_1G, 7.0),
            _node(9, {"nvidia.com/gpu.replicas": "4"}, "X-SHARED", 32.0, "nvidia.com/gpu.shared"),
            _node(
                9,
                {"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.replicas": "4"},
                None,
                2.0,
                "nvidia.com/mig-3g.40gb,nvidia.com/mig-4g.40gb",
            ),
        ]
    )
    assert nodes_in_gpus(nodes)["gpu_allocatable"].to_list() == pytest.approx([1.0, 8.0, 2.0])


def test_pods_meet_the_snapshot_of_their_bind_time() -> None:
    """n1 is a plain 1-GPU node at 09:00 and cut into 1g.5gb slices (single) at 12:00. Pods
    asking ``nvidia.com/gpu: 1``: bound 08:00 (before every snapshot: the first one, 09:00) 1;
    bound 10:00 (09:00's) 1; bound 13:00 (12:00's) 1/7; pending (no node) 1; a pod asking a
    mixed-strategy slice ``nvidia.com/mig-3g.40gb`` (3/7 already) on n1 at 13:00 keeps 3/7."""
    nodes = pl.DataFrame([_node(12, _SINGLE, _MIG_1G, 7.0), _node(9, {}, "A100", 1.0)])
    pods = pl.DataFrame(
        {
            "cluster": ["k"] * 5,
            "node_name": ["n1", "n1", "n1", None, "n1"],
            "gpus": [1.0, 1.0, 1.0, 1.0, 3 / 7],
            "gpu_resource": ["nvidia.com/gpu"] * 4 + ["nvidia.com/mig-3g.40gb"],
            "scheduled_at": [_t(8), _t(10), _t(13), None, _t(13)],
            "started_at": [None] * 5,
            "created_at": [_t(8), _t(10), _t(13), _t(7), _t(13)],
        },
        schema_overrides={"scheduled_at": _UTC, "started_at": _UTC, "created_at": _UTC},
    )
    got = pods_in_gpus(pods, nodes)
    assert got.columns == pods.columns
    assert got["gpus"].to_list() == pytest.approx([1.0, 1.0, 1 / 7, 1.0, 3 / 7])


def _cq(cluster: str, name: str, flavor: str, resource: str, nominal: float, used: float,
        borrowed: float) -> dict[str, object]:  # fmt: skip
    return {"cluster": cluster, "name": name, "flavor": flavor, "resource": resource,
            "nominal_quota": nominal, "lending_limit": 8.0, "nominal_gpus": nominal,
            "usage_gpus": used, "borrowed_gpus": borrowed}  # fmt: skip


def test_cluster_queue_quota_takes_the_unit_its_nodes_agree_on() -> None:
    """k: n1 and n2 time-sliced in 4 replicas (n1 plain at 08:00, replicas from its 09:00
    snapshot): ``cq-a``'s ``nvidia.com/gpu`` quota of 32 units, 12 used, 4 borrowed is 8, 3 and
    1 GPUs (× 1/4); ``cq-b``'s MIG-mixed resource (already GPUs) keeps 1; the knob
    ``nominal_quota`` and ``lending_limit`` stay in units. m: a MIG-single node (1/7) and a plain
    one (1) disagree: ``cq-c``'s 16 stay 16 and are the ambiguous row. z: no node, kept."""
    reps = {"nvidia.com/gpu.replicas": "4"}
    nodes = pl.DataFrame(
        [
            {**_node(8, {}, "NVIDIA-H100", 8.0)},
            {**_node(9, reps, "NVIDIA-H100-SHARED", 32.0)},
            {**_node(9, reps, "NVIDIA-H100-SHARED", 32.0), "name": "n2"},
            {**_node(9, _SINGLE, _MIG_1G, 7.0), "cluster": "m"},
            {**_node(9, {}, "NVIDIA-H100", 8.0), "cluster": "m", "name": "n2"},
            {**_node(9, {}, None, 2.0, "nvidia.com/mig-1g.5gb"), "name": "n3"},
        ]
    )
    units = cluster_gpu_units(nodes)
    assert units["cluster"].to_list() == ["k", "m"]
    assert units["gpu_unit"].to_list() == [0.25, None]
    assert units["units"].to_list() == [[0.25], [round(1 / 7, 12), 1.0]]
    cqs = pl.DataFrame(
        [
            _cq("k", "cq-a", "ts", "nvidia.com/gpu", 32.0, 12.0, 4.0),
            _cq("k", "cq-b", "mig", "nvidia.com/mig-1g.5gb", 1.0, 0.5, 0.0),
            _cq("m", "cq-c", "any", "nvidia.com/gpu", 16.0, 2.0, 0.0),
            _cq("z", "cq-d", "any", "nvidia.com/gpu", 4.0, 1.0, 0.0),
        ]
    )
    got, ambiguous = cluster_queues_in_gpus(cqs, nodes)
    assert got.columns == cqs.columns
    assert got.select("nominal_gpus", "usage_gpus", "borrowed_gpus").rows() == [
        (8.0, 3.0, 1.0),
        (1.0, 0.5, 0.0),
        (16.0, 2.0, 0.0),
        (4.0, 1.0, 0.0),
    ]
    assert got.select("nominal_quota", "lending_limit").equals(
        cqs.select("nominal_quota", "lending_limit")
    )
    assert ambiguous.rows() == [("m", "cq-c", "any", "nvidia.com/gpu", [round(1 / 7, 12), 1.0])]
    same, none = cluster_queues_in_gpus(cqs, None)
    assert same.equals(cqs) and none.height == 0


_MIXED = {"nvidia.com/mig.strategy": "mixed"}
_H100 = "NVIDIA-H100-80GB-HBM3"  # mixed: nvidia.com/gpu.product names the full GPU


def _reps(**profiles: int) -> dict[str, str]:
    """GFD's replicas label of each MIG resource (``nvidia.com/mig-<profile>.replicas``)."""
    return {f"nvidia.com/mig-{p.replace('_', '.')}.replicas": str(r) for p, r in profiles.items()}


def test_mixed_strategy_mig_slices_time_sliced_count_their_share() -> None:
    """MIG "mixed" strategy with time-slicing (the resource counts as the parser gives them,
    already × the slice's fraction):

    1. one H100 cut into 7 × 1g.10gb, 2 replicas each: ``nvidia.com/mig-1g.10gb: 14`` =
       14 × 1/7 = 2 → 2 ÷ 2 = 1 GPU (was 2);
    2. the same renamed (``nvidia.com/mig-1g.10gb.shared: 14``) → 1 GPU;
    3. one GPU as 3 × 2g.20gb + 1 × 1g.10gb, both in 4 replicas: ``mig-2g.20gb: 12`` (12 × 2/7)
       + ``mig-1g.10gb: 4`` (4/7) = 28/7 = 4 → 4 ÷ 4 = 1 GPU (was 4);
    4. ``mig-1g.10gb`` labelled with ``.replicas: "1"`` and ``nvidia.com/gpu.replicas: "4"``
       (time-slicing of the full GPUs only): 7 × 1/7 = 1 kept;
    5. two profiles in 2 and 3 replicas: their share of the sum cannot be told apart, kept
       as advertised (6 × 1/7 + 9 × 3/7 = 33/7).
    """
    nodes = pl.DataFrame(
        [
            _node(9, {**_MIXED, **_reps(**{"1g_10gb": 2})}, _H100, 2.0, "nvidia.com/mig-1g.10gb"),
            _node(9, {**_MIXED, **_reps(**{"1g_10gb": 2})}, _H100, 2.0,
                  "nvidia.com/mig-1g.10gb.shared"),
            _node(9, {**_MIXED, **_reps(**{"1g_10gb": 4, "2g_20gb": 4})}, _H100, 4.0,
                  "nvidia.com/mig-1g.10gb,nvidia.com/mig-2g.20gb"),
            _node(9, {**_MIXED, **_reps(**{"1g_10gb": 1}), "nvidia.com/gpu.replicas": "4"}, _H100,
                  1.0, "nvidia.com/mig-1g.10gb"),
            _node(9, {**_MIXED, **_reps(**{"1g_10gb": 2, "3g_40gb": 3})}, _H100, 33 / 7,
                  "nvidia.com/mig-1g.10gb,nvidia.com/mig-3g.40gb"),
        ]
    )  # fmt: skip
    got = nodes_in_gpus(nodes)
    assert got["gpu_allocatable"].to_list() == pytest.approx([1.0, 1.0, 1.0, 1.0, 33 / 7])
    assert got["gpu_capacity"].to_list() == pytest.approx([1.0, 1.0, 1.0, 1.0, 33 / 7])


def test_pods_on_time_sliced_mig_slices_hold_one_replica() -> None:
    """n1 (mixed strategy) at 09:00: 1g.10gb in 2 replicas, 3g.40gb in 4; at 12:00 no
    time-slicing. Pods (``gpus`` as parsed: the slice's fraction per unit):

    - ``mig-1g.10gb: 1`` bound 10:00 → 1/7 ÷ 2 = 1/14 (was 1/7);
    - ``mig-1g.10gb.shared: 2`` bound 10:00 → 2/7 ÷ 2 = 1/7 (was 2/7);
    - ``mig-3g.40gb: 1`` bound 10:00 → 3/7 ÷ 4 = 3/28 (was 3/7);
    - ``mig-1g.10gb: 1`` bound 13:00 (12:00's snapshot, no replicas) → 1/7;
    - ``mig-1g.10gb: 1`` bound 08:00 (before every snapshot: the first, 09:00) → 1/14;
    - ``mig-1g.10gb: 1`` pending (no node) → 1/7 (its request).
    """
    nodes = pl.DataFrame(
        [
            _node(9, {**_MIXED, **_reps(**{"1g_10gb": 2, "3g_40gb": 4})}, _H100, 2.0,
                  "nvidia.com/mig-1g.10gb,nvidia.com/mig-3g.40gb"),
            _node(12, _MIXED, _H100, 1.0, "nvidia.com/mig-1g.10gb"),
        ]
    )  # fmt: skip
    pods = pl.DataFrame(
        {
            "cluster": ["k"] * 6,
            "node_name": ["n1"] * 5 + [None],
            "gpus": [1 / 7, 2 / 7, 3 / 7, 1 / 7, 1 / 7, 1 / 7],
            "gpu_resource": ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb.shared",
                             "nvidia.com/mig-3g.40gb"] + ["nvidia.com/mig-1g.10gb"] * 3,
            "scheduled_at": [_t(10), _t(10), _t(10), _t(13), _t(8), None],
            "started_at": [None] * 6,
            "created_at": [_t(10)] * 6,
        },
        schema_overrides={"scheduled_at": _UTC, "started_at": _UTC, "created_at": _UTC},
    )  # fmt: skip
    got = pods_in_gpus(pods, nodes)["gpus"].to_list()
    assert got == pytest.approx([1 / 14, 1 / 7, 3 / 28, 1 / 7, 1 / 14, 1 / 7])
