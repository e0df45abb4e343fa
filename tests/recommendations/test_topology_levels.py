"""The topology-level rule (BlockSizes / --segment / Kueue TAS annotations) on literal frames
(hand-computed), and on the bundled fleet's rack-scale cluster.

Cluster c: levels ``block`` (domains of 18 nodes, the gang level) and ``spine`` (36). Team a's
16-node attempts used 2, 2 and 1 blocks (fewest 1); its 36-node attempts 3, 3, 3 blocks (fewest
2); team b's 16-node attempts 1, 1, 1. Every attempt holds 64 GPUs for 2 h (128 GPU-h); window
one week.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from metrics.recommendations import Window
from metrics.recommendations.topology_levels import topology_levels
from pipelines.recommendations import read_inputs, recommendations_frame
from pipelines.warehouse import connect
from tests.rackscale import build_rackscale_warehouse

W = Window(dt.datetime(2026, 11, 2, tzinfo=dt.UTC), dt.datetime(2026, 11, 9, tzinfo=dt.UTC))


def _placement(cluster: str = "c") -> pl.DataFrame:
    rows = [
        ("a1", 16, 2, 1), ("a2", 16, 2, 1), ("a3", 16, 1, 1),
        ("a4", 36, 3, 2), ("a5", 36, 3, 2), ("a6", 36, 3, 2),
        ("b1", 16, 1, 1), ("b2", 16, 1, 1), ("b3", 16, 1, 1),
    ]  # fmt: skip
    block = pl.DataFrame(
        {"job_id": [r[0] for r in rows], "nodes": [r[1] for r in rows],
         "domains_used": [r[2] for r in rows], "domains_min": [r[3] for r in rows]}
    ).with_columns(pl.lit("block").alias("level"), pl.lit(18).alias("domain_size"))  # fmt: skip
    spine = block.with_columns(
        pl.lit("spine").alias("level"), pl.lit(36).alias("domain_size"),
        pl.lit(1).alias("domains_used"), pl.lit(1).alias("domains_min"),
    )  # fmt: skip
    return pl.concat([block, spine], how="vertical_relaxed").with_columns(
        pl.lit(cluster).alias("cluster"), pl.lit(0).cast(pl.Int64).alias("attempt")
    )


def _jobs(cluster: str = "c") -> pl.DataFrame:
    ids = ["a1", "a2", "a3", "a4", "a5", "a6", "b1", "b2", "b3"]
    return pl.DataFrame(
        {"cluster": [cluster] * 9, "job_id": ids, "attempt": [0] * 9,
         "team": [i[0] for i in ids], "gpus": [64.0] * 9, "run_s": [7200.0] * 9}
    )  # fmt: skip


def _run(config: dict[str, dict[str, object]] | None, scheduler: str = "slurm") -> pl.DataFrame:
    return topology_levels(_placement(), _jobs(), W, {"c": scheduler}, config=config)


def test_block_topology_gets_segments_or_a_larger_block_size() -> None:
    """Gang level block (H = 18, the finest level with domains over one node). a/16: 1 of 3
    optimal (0.33 < 0.5) → --segment=16 (fits one block), warning; spread GPU-h 2 × 128 = 256
    a week, excess (1 + 1 + 0) / 3. a/36: 0 of 3 → critical; 36 > 18 needs the aggregate
    18 × 2^ceil(log2 2) = 36, missing from BlockSizes=18 → BlockSizes=18,36. b/16: all optimal,
    nothing. Confidence min(1, 3 / 6) = 0.5."""
    got = _run({"c": {"form": "block", "block_sizes": [18]}})
    assert got["scope"].to_list() == ["cluster=c/team=a/nodes=16", "cluster=c/team=a/nodes=36"]
    warn, crit = got.row(0, named=True), got.row(1, named=True)
    assert (crit["severity"], warn["severity"]) == ("critical", "warning")
    assert "Proposed: set BlockSizes=18,36 in topology.conf." in crit["change_text"]
    assert "Proposed: submit a's 16-node jobs with --segment=16" in warn["change_text"]
    ev = json.loads(warn["evidence"])
    assert (ev["level"], ev["domain_size"], ev["optimal_attempts"]) == ("block", 18, 1)
    assert ev["spread_gpu_h_per_week"] == 256.0
    assert ev["mean_excess_domains"] == round(2 / 3, 4)
    assert ev["config_in_force"] == "topology/block, BlockSizes=18"
    assert warn["confidence"] == 0.5 and warn["expected_gain_gpu_h_per_week"] is None


def test_block_sizes_that_hold_the_class_get_whole_block_segments() -> None:
    """BlockSizes=18,36 already holds the 36-node class: --segment=18 (whole blocks)."""
    got = _run({"c": {"form": "block", "block_sizes": [18, 36]}})
    assert "--segment=18 (whole blocks)" in got["change_text"][1]


def test_tree_topology_gets_the_block_plugin() -> None:
    """topology/tree: TopologyPlugin=topology/block (slurm.conf patch) with BlockSizes 18 for
    the 16-node class and 18,36 for the 36-node class."""
    got = _run({"c": {"form": "tree", "block_sizes": None}})
    assert got["patch_content"].to_list() == ["TopologyPlugin=topology/block"] * 2
    assert "BlockSizes=18)" in got["change_text"][0]
    assert "BlockSizes=18,36)" in got["change_text"][1]


def test_unknown_configuration_says_what_to_collect() -> None:
    """No configuration: no patch; the text names topology.conf and TopologyPlugin."""
    got = _run(None)
    assert got["patch_kind"].to_list() == [None, None]
    assert "collect topology.conf or `scontrol show topology`" in got["change_text"][0]


def test_kueue_classes_get_tas_annotations() -> None:
    """Kubernetes: a/16 fits one domain → podset-required-topology: block; a/36 →
    podset-slice-required-topology: block with podset-slice-size 18."""
    got = _run(None, "kubernetes")
    assert "kueue.x-k8s.io/podset-required-topology: block" in got["change_text"][0]
    assert (
        "kueue.x-k8s.io/podset-slice-required-topology: block and "
        "kueue.x-k8s.io/podset-slice-size: 18" in got["change_text"][1]
    )


def test_the_rackscale_fleet_flags_the_spread_team_only(tmp_path: Path) -> None:
    """Planted: slurm-nvl's spread team (multimodal) places its gangs over more blocks than
    needed; its 16-node class (4 attempts, none optimal) is the only class with at least 3
    attempts under half optimal. In force: topology/block, BlockSizes=18,36 (the input
    topology.conf), so the proposal is --segment=16; controls: no other team's class."""
    cfg = build_rackscale_warehouse(tmp_path)
    with connect(cfg.warehouse_path, read_only=True) as con:
        frame = recommendations_frame(read_inputs(con, cfg))
    got = frame.filter(pl.col("rule") == "topology_level")
    assert got["scope"].to_list() == ["cluster=slurm-nvl/team=multimodal/nodes=16"]
    ev = json.loads(got["evidence"][0])
    assert (ev["attempts"], ev["optimal_attempts"]) == (4, 0)
    assert ev["config_in_force"] == "topology/block, BlockSizes=18,36"
    assert "--segment=16" in got["change_text"][0]
