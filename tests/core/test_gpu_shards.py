"""Slurm GPU shards (``gres/shard``) as fractions of a GPU (``pipelines.core.gpu_shards``),
on hand-made TRES strings, node states and attempts (METRICS.md "Units and identities")."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.core.gpu_shards import (
    node_gpus_per_shard,
    pending_shard_gpus,
    shard_gpus,
    tres_shards,
)

#: A DGX Spark's AllocTRES of a job holding 40 of its GB10's shards (a public sacct fixture).
SPARK = "billing=10,cpu=10,gres/shard:nvidia_gb10=40,gres/shard=40,mem=50G,node=1"


@pytest.mark.parametrize(
    ("tres", "shards"),
    [
        (SPARK, 40.0),  # the untyped count wins over the typed one (not 80)
        ("cpu=32,gres/shard=32,mem=98G", 32.0),
        ("cpu=2,gres/shard:a=3,gres/shard:b=5", 8.0),  # typed only: summed
        ("billing=8,cpu=8,gres/gpu=1,mem=10G,node=1", 0.0),
        ("gres/shardx=4", 0.0),  # another GRES whose name starts alike
        ("", 0.0),
        (None, None),
    ],
)
def test_the_shards_a_tres_string_names(tres: str | None, shards: float | None) -> None:
    got = pl.select(tres_shards(pl.lit(tres, dtype=pl.String())).alias("s")).item()
    assert got == shards


def test_gpus_per_shard_of_a_node() -> None:
    """dgx-spark ``gpu:nvidia_gb10:1,shard:nvidia_gb10:80``: 1/80; tux ``gpu:2,shard:64(S:0)``:
    2/64; a node without shards, or with shards and no GPU, is left out."""
    nodes = pl.DataFrame(
        {
            "cluster": ["c", "c", "c", "c"],
            "host": ["dgx-spark", "tux", "plain", "odd"],
            "gpus": [1.0, 2.0, 8.0, 0.0],
            "gres": ["gpu:nvidia_gb10:1,shard:nvidia_gb10:80", "gpu:2,shard:64(S:0)", "gpu:8",
                     "shard:8"],
        }
    )  # fmt: skip
    got = node_gpus_per_shard(nodes)
    assert got.rows() == [("c", "dgx-spark", 1 / 80), ("c", "tux", 2 / 64)]


def _attempts() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["c"] * 6,
            "job_id": ["101", "102", "103", "104", "105", "106"],
            "node_list": [["dgx-spark"], ["tux", "dgx-spark"], ["g1"], ["unknown"],
                          ["dgx-spark", "unknown"], ["dgx-spark"]],
            "gpus": [0.0, 0.0, 4.0, 0.0, 0.0, 0.0],
            "shards": [40.0, 32.0, 8.0, 40.0, 40.0, 20.0],
            "req_gpus": [0.0, 0.0, 4.0, 0.0, 0.0, 0.0],
            "req_shards": [40.0, 16.0, 8.0, 40.0, 40.0, 20.0],
            "run_s": [7200, 3600, 3600, 3600, 3600, None],
            "gpu_s": [0.0, 0.0, 14400.0, 0.0, 0.0, None],
        },
        schema_overrides={"run_s": pl.Int64()},
    )  # fmt: skip


def test_a_jobs_shards_as_gpus_from_its_nodes() -> None:
    """By hand (dgx-spark 1 GPU / 80 shards, tux 2 GPUs / 64 shards):

    - 101: 40 shards on dgx-spark for 2 h: 40/80 = 0.5 GPU, 0.5 × 7,200 = 3,600 GPU-s;
    - 102: 32 shards over tux and dgx-spark, 16 on each: 16 × 2/64 + 16/80 = 0.5 + 0.2 = 0.7
      GPU, 2,520 GPU-s;
    - 103 holds 4 GPUs (gres/gpu): its shards are never added (4 GPUs, 14,400 GPU-s);
    - 104 and 105 ran on a node of unknown shard count: 0 GPUs (105's dgx-spark half is not
      counted alone);
    - 106, running (no run_s): 20/80 = 0.25 GPU, GPU-s NULL.

    Requested alike: 101 40/80 = 0.5, 102 16 shards: 8 × 2/64 + 8/80 = 0.35, 103 its 4 GPUs,
    104 and 105 0, 106 0.25."""
    per_shard = pl.DataFrame(
        {"cluster": ["c", "c"], "host": ["dgx-spark", "tux"], "gpus_per_shard": [1 / 80, 2 / 64]}
    )
    got = shard_gpus(_attempts(), per_shard)
    assert got.columns == _attempts().columns
    assert got["job_id"].to_list() == ["101", "102", "103", "104", "105", "106"]
    assert got["gpus"].to_list() == pytest.approx([0.5, 0.7, 4.0, 0.0, 0.0, 0.25])
    assert got["gpu_s"].to_list()[:5] == pytest.approx([3600.0, 2520.0, 14400.0, 0.0, 0.0])
    assert got["gpu_s"][5] is None
    assert got["req_gpus"].to_list() == pytest.approx([0.5, 0.35, 4.0, 0.0, 0.0, 0.25])


def test_without_node_state_the_attempts_are_unchanged() -> None:
    empty = pl.DataFrame(
        schema={"cluster": pl.String(), "host": pl.String(), "gpus_per_shard": pl.Float64()}
    )
    assert shard_gpus(_attempts(), empty).equals(_attempts())


def test_a_pending_jobs_shards_where_the_clusters_nodes_are_sharded_alike() -> None:
    """Cluster c's sharded nodes all hold 1 GPU per 80 shards: a pending row asking 20 shards
    asks 20/80 = 0.25 GPU. Cluster d's nodes differ (1/80, 2/64): no node is known yet, so its
    row keeps 0. A row asking 2 GPUs keeps them; cluster e has no node state."""
    per_shard = pl.DataFrame(
        {
            "cluster": ["c", "c", "d", "d"],
            "host": ["s1", "s2", "s3", "tux"],
            "gpus_per_shard": [1 / 80, 1 / 80, 1 / 80, 2 / 64],
        }
    )
    pending = pl.DataFrame(
        {
            "cluster": ["c", "d", "c", "e"],
            "job_id": ["1", "2", "3", "4"],
            "req_gpus": [0.0, 0.0, 2.0, 0.0],
            "req_shards": [20.0, 20.0, 0.0, 20.0],
        }
    )
    got = pending_shard_gpus(pending, per_shard)
    assert got.columns == pending.columns
    assert got["req_gpus"].to_list() == pytest.approx([0.25, 0.0, 2.0, 0.0])
