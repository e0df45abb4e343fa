"""The hosts a cluster's Slurm attempts were seen on (``pipelines.core.build._observed_hosts``),
on hand-made attempts: per host the most GPUs one attempt held there and the first GPU type and
partition named; the clusters with an inventory left out."""

from __future__ import annotations

import polars as pl

from pipelines.core.build import _observed_hosts

ATTEMPTS = pl.DataFrame(
    {
        "cluster": ["a", "a", "a", "b", None],
        "node_list": [["n1", "n2"], ["n1"], [], ["m1"], ["x1"]],
        "gpus": [8.0, 6.0, 4.0, 2.0, 1.0],
        "gpu_type": [None, "h100", "h100", "a100", None],
        "partition": ["gpu", "debug", "gpu", "gpu", "p"],
        "state": ["COMPLETED"] * 5,
    }
)


def test_most_gpus_per_host_and_first_type_and_partition() -> None:
    """n1: max(8/2, 6) = 6 GPUs, type h100 (the first named), partition gpu (the first); n2: 4;
    the attempt without nodes counts nowhere; b and the cluster-less attempt keep their host."""
    got = _observed_hosts(ATTEMPTS)
    assert got.columns == ["cluster", "host", "gpus", "gpu_type", "partition"]
    assert got.rows() == [
        ("a", "n1", 6.0, "h100", "gpu"),
        ("a", "n2", 4.0, None, "gpu"),
        ("b", "m1", 2.0, "a100", "gpu"),
        (None, "x1", 1.0, None, "p"),
    ]


def test_clusters_with_an_inventory_are_left_out() -> None:
    """Skipping a keeps b and the cluster-less row exactly as without the skip."""
    got = _observed_hosts(ATTEMPTS, skip={"a"})
    assert got.rows() == [("b", "m1", 2.0, "a100", "gpu"), (None, "x1", 1.0, None, "p")]
    assert _observed_hosts(ATTEMPTS, skip={"a", "b"}).rows() == [(None, "x1", 1.0, None, "p")]
