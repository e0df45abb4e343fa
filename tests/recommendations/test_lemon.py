"""Lemon nodes: a drain command on Slurm, a cordon merge patch on Kubernetes."""

from __future__ import annotations

import json

import polars as pl
import yaml

from metrics.recommendations import lemon_nodes
from tests.recommendations._frames import window

W = window(14)
SCHEDULERS = {"slurm-a": "slurm", "k8s-b": "kubernetes"}


def _reliability(score: float, fails: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["slurm-a", "slurm-a", "k8s-b"],
            "host": ["a100-013", "a100-010", "gpu-node-01"],
            "attempts": [40, 40, 30],
            "node_fail_attempts": [fails, 1, 0],
            "infra_failed_attempts": [fails, 1, 4],
            "expected_infra_failures": [0.8, 0.8, 0.5],
            "xid_events": [7, 0, 2],
            "xid_codes": [[79], [], [48, 79]],
            "down_s": [87000.0, 0.0, 0.0],
            "infra_lost_gpu_s": [1_234_800.0, 1000.0, 36000.0],
            "lemon_score": [score, 1.1, 3.3],
            "lemon_rank": [1, 2, 1],
        }
    )


def test_lemon_is_drained_with_its_evidence_in_the_reason() -> None:
    """a100-013 broke 14 jobs (score 8.1, XID 79): the scontrol line names them; 343 GPU-h
    lost over two weeks is 171.5 GPU-h a week."""
    out = lemon_nodes(_reliability(8.1, 14), W, SCHEDULERS)
    slurm = out.filter(pl.col("cluster") == "slurm-a").row(0, named=True)
    assert slurm["scope"] == "cluster=slurm-a/node=a100-013"
    assert slurm["patch_kind"] == "scontrol"
    assert slurm["patch_content"] == (
        "scontrol update nodename=a100-013 state=drain "
        'reason="goodput: lemon score 8.1, 14 NODE_FAIL, XID 79"'
    )
    assert slurm["expected_gain_gpu_h_per_week"] == 171.5
    assert slurm["severity"] == "critical"
    assert json.loads(slurm["evidence"])["xid_codes"] == [79]


def test_kubernetes_lemon_is_cordoned() -> None:
    """On Kubernetes the change is a Node merge patch setting spec.unschedulable."""
    out = lemon_nodes(_reliability(8.1, 14), W, SCHEDULERS)
    k8s = out.filter(pl.col("cluster") == "k8s-b").row(0, named=True)
    assert k8s["patch_kind"] == "kubernetes-merge-patch"
    assert "kubectl patch node gpu-node-01 --type merge" in k8s["patch_content"]
    doc = yaml.safe_load(k8s["patch_content"])
    assert doc == {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-01"},
                   "spec": {"unschedulable": True}}  # fmt: skip


def test_average_nodes_are_left_alone() -> None:
    """Score 1.5 (or only 2 failures) is not a lemon."""
    out = lemon_nodes(_reliability(1.5, 14), W, {"slurm-a": "slurm"})
    assert out.height == 0
    out = lemon_nodes(_reliability(8.1, 2), W, {"slurm-a": "slurm"})
    assert out.height == 0
