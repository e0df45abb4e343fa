"""MIG slices of the RTX PRO 6000 Blackwell (96 GB), a 4-slice GPU like the A30: its profiles
``1g.24gb`` (4 per GPU), ``2g.48gb`` (2) and ``4g.96gb`` (1) (NVIDIA's default mig-parted config,
"RTX-PRO-6000-96GB"). ``2g.48gb`` and ``4g.96gb`` exist on no 7-slice product, so they are half
and all of a GPU wherever they are named (Kubernetes resource, DCGM ``GPU_I_PROFILE``, Slurm GRES
type). ``1g.24gb`` is also an H100 NVL / GH200 profile (1 of 7): a bare name cannot tell, it stays
1/7, but a name that names the product too (GPU Feature Discovery's product label under the MIG
single strategy, a site's GRES type ``rtx_pro_6000_1g.24gb``) is 1/4.

Fixture ``tests/fixtures/k8s-mig-rtxpro/`` (see its SOURCE.md): the ``all-balanced`` node of a
real cluster's record (2 × ``nvidia.com/mig-1g.24gb`` + 1 × ``nvidia.com/mig-2g.48gb``) and two
pods on it from 10:00 to 11:00."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from metrics.attribution import mig_fraction as dcgm_fraction
from metrics.mig import mig_fraction, mig_fraction_expr
from pipelines.core.k8s_gpu_units import mig_product_factor, nodes_in_gpus, pods_in_gpus
from pipelines.kubernetes._objects import parse_k8s_nodes
from pipelines.kubernetes._pods_parse import gpu_worth, parse_k8s_pods
from pipelines.slurm._sacct_values import gpus_from_tres

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-mig-rtxpro"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("2g.48gb", 2 / 4),  # before: 2/7
        ("4g.96gb", 4 / 4),  # before: 4/7
        ("2g.48gb-me", 2 / 4),  # without media engines (go-nvlib's "-me")
        ("2g.48gb+gfx", 2 / 4),
        ("rtxpro6000_2g.48gb", 2 / 4),  # a site-named Slurm GRES type
        ("1g.24gb", 1 / 7),  # ambiguous with the H100 NVL's 1g.24gb: kept at 1/7
        ("3g.48gb", 3 / 7),  # GH200 / H100 96GB, a 7-slice profile, unchanged
        ("4g.48gb", 4 / 7),  # GH200 / H100 96GB, unchanged
        # the product named beside the profile: 4 slices for 1g.24gb too (before: 1/7)
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb", 1 / 4),
        ("rtx_pro_6000_1g.24gb", 1 / 4),
        ("NVIDIA-H100-NVL-MIG-1g.24gb", 1 / 7),
    ],
)
def test_rtx_pro_6000_profiles(name: str, expected: float) -> None:
    """Python and polars rules give the hand fractions (K of 4 slices for the two profiles only
    the RTX PRO 6000 has)."""
    assert mig_fraction(name) == pytest.approx(expected)
    frame = pl.DataFrame({"n": [name]})
    assert frame.select(x=mig_fraction_expr(pl.col("n")))["x"][0] == pytest.approx(expected)


def test_resources_samples_and_tres() -> None:
    """The same fraction as a Kubernetes resource, a DCGM GPU-instance label and in TRES:
    ``gres/gpu:rtxpro6000_2g.48gb=2`` is 2 × 1/2 = 1 GPU (before: 4/7)."""
    assert gpu_worth("nvidia.com/mig-2g.48gb") == pytest.approx(0.5)
    assert gpu_worth("nvidia.com/mig-4g.96gb") == pytest.approx(1.0)
    assert gpu_worth("nvidia.com/mig-2g.48gb.gfx") == pytest.approx(0.5)
    frame = pl.DataFrame({"p": ["2g.48gb", "4g.96gb"]})
    assert frame.select(x=dcgm_fraction(pl.col("p")))["x"].to_list() == pytest.approx([0.5, 1.0])
    assert gpus_from_tres("cpu=8,gres/gpu=2,gres/gpu:rtxpro6000_2g.48gb=2") == pytest.approx(1.0)


def test_pod_on_the_2g_slice_holds_half_a_gpu() -> None:
    """``chat-predictor-0`` asks ``nvidia.com/mig-2g.48gb: 1``: 2/4 = 0.5 GPU (before: 2/7 =
    0.286), 0.5 × 3,600 s = 1,800 GPU-s; ``embeddings-0`` on ``mig-1g.24gb`` stays 1/7."""
    rows = parse_k8s_pods(FIXTURES / "pods_2026-08-27.json", cluster="k8s-z").rows
    gpus = dict(rows.select("name", "gpus").rows())
    assert gpus == {"chat-predictor-0": pytest.approx(0.5), "embeddings-0": pytest.approx(1 / 7)}


def test_single_strategy_node_of_1g_slices_is_one_gpu() -> None:
    """MIG single strategy, ``all-1g.24gb``: the node advertises ``nvidia.com/gpu: 4`` and GPU
    Feature Discovery names the product
    ``NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb``: one unit is 1/4, the node
    4 × 1/4 = 1 GPU (before: 4 × 1/7 = 0.571)."""
    node = {
        "cluster": "k8s-z",
        "name": "g7e-b",
        "snapshot_at": dt.datetime(2026, 8, 27, 11, tzinfo=dt.UTC),
        "labels": json.dumps({"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.replicas": "1"}),
        "gpu_product": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb",
        "gpu_resource": "nvidia.com/gpu",
        "gpu_capacity": 4.0,
        "gpu_allocatable": 4.0,
    }
    got = nodes_in_gpus(pl.DataFrame([node]))
    assert got.select("gpu_capacity", "gpu_allocatable").row(0) == pytest.approx((1.0, 1.0))


def test_mixed_strategy_node_reads_the_product_label_of_each_slice() -> None:
    """The fixture's ``all-balanced`` node (mixed strategy): GFD labels each MIG resource's
    product (``nvidia.com/mig-1g.24gb.product: NVIDIA-RTX-PRO-6000-...-MIG-1g.24gb``), so
    ``mig-1g.24gb: 2`` is 2 × 1/4 and ``mig-2g.48gb: 1`` 1 × 1/2: 1 GPU (before: 2/7 + 1/2 =
    0.786)."""
    rows = parse_k8s_nodes(FIXTURES / "nodes_2026-08-27.json", cluster="k8s-z").rows
    assert rows.select("gpu_capacity", "gpu_allocatable").row(0) == pytest.approx((1.0, 1.0))
    assert nodes_in_gpus(rows)["gpu_allocatable"].to_list() == pytest.approx([1.0])


def test_pod_on_a_1g_slice_meets_its_node_product() -> None:
    """``embeddings-0`` asks ``nvidia.com/mig-1g.24gb: 1`` (1/7 by the name alone) and is bound
    at 10:00 to the node whose 11:00 snapshot names the slice's product, the RTX PRO 6000: 1/4
    GPU (before: 1/7); ``chat-predictor-0`` on ``mig-2g.48gb`` stays 1/2."""
    pods = parse_k8s_pods(FIXTURES / "pods_2026-08-27.json", cluster="k8s-z").rows
    nodes = parse_k8s_nodes(FIXTURES / "nodes_2026-08-27.json", cluster="k8s-z").rows
    nodes = nodes.with_columns(
        cluster=pl.lit("k8s-z"), snapshot_at=pl.lit(dt.datetime(2026, 8, 27, 11, tzinfo=dt.UTC))
    )
    got = dict(pods_in_gpus(pods, nodes).select("name", "gpus").rows())
    assert got == {"chat-predictor-0": pytest.approx(0.5), "embeddings-0": pytest.approx(0.25)}


def test_product_factor_of_a_dotted_attribute_slice() -> None:
    """A pod on ``nvidia.com/mig-1g.24gb.me`` (the device plugin's name of ``1g.24gb+me``, 1/7 by
    the name) on a node whose GFD label names the RTX PRO 6000: factor (1/4) ÷ (1/7) = 7/4, so
    the pod holds 1/7 × 7/4 = 1/4; a 7-slice product's label gives 1 (no change)."""
    frame = pl.DataFrame(
        {
            "labels": [
                '"nvidia.com/mig-1g.24gb.me.product": '
                '"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb+me"',
                '"nvidia.com/mig-1g.10gb.me.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb+me"',
            ],
            "res": ["nvidia.com/mig-1g.24gb.me", "nvidia.com/mig-1g.10gb.me"],
        }
    )
    got = mig_product_factor(frame, "labels", "res").to_list()
    assert got == pytest.approx([7 / 4, 1.0])
