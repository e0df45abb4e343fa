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


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm_topology"


def test_topology_yaml_is_the_configuration_in_force(tmp_path: Path) -> None:
    """Slurm's topology.yaml(5) example (tests/fixtures/slurm_topology): its
    ``cluster_default: true`` topology topo1 is a tree → form tree, no BlockSizes. With topo2
    (block, block_sizes 4, 16) made the default instead → form block, [4, 16]. A dated
    ``topology_2026-11-05.yaml`` is in force over ``topology_2026-11-01.conf`` (the latest by
    name)."""
    from pipelines.slurm import topology_config

    text = (FIXTURES / "topology.yaml").read_text(encoding="utf-8")
    (tmp_path / "topology.yaml").write_text(text, encoding="utf-8")
    assert topology_config(tmp_path) == {"form": "tree", "block_sizes": None,
                                         "file": "topology.yaml"}  # fmt: skip
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    (swapped / "topology_2026-11-01.conf").write_text(
        (FIXTURES / "topology_tree.conf").read_text(encoding="utf-8"), encoding="utf-8"
    )
    block_default = text.replace("cluster_default: true", "cluster_default: x").replace(
        "topology: topo2\n  cluster_default: false", "topology: topo2\n  cluster_default: true"
    )
    (swapped / "topology_2026-11-05.yaml").write_text(block_default, encoding="utf-8")
    assert topology_config(swapped) == {"form": "block", "block_sizes": [4, 16],
                                        "file": "topology_2026-11-05.yaml"}  # fmt: skip


def test_a_block_topology_yaml_drives_the_slurm_proposal(tmp_path: Path) -> None:
    """A topology.yaml whose default topology is a block topology with block_sizes [18]
    (topo2 of the example, its sizes set to 18): same proposals as topology.conf with
    BlockSizes=18: a/36 → BlockSizes=18,36; a/16 → --segment=16."""
    from pipelines.slurm import topology_config

    text = (FIXTURES / "topology.yaml").read_text(encoding="utf-8")
    text = (
        text.replace("cluster_default: true", "cluster_default: x")
        .replace(
            "topology: topo2\n  cluster_default: false", "topology: topo2\n  cluster_default: true"
        )
        .replace("      - 4\n      - 16\n", "      - 18\n")
    )
    (tmp_path / "topology.yaml").write_text(text, encoding="utf-8")
    got = _run({"c": topology_config(tmp_path) or {}})
    assert "Proposed: set BlockSizes=18,36 in topology.conf." in got["change_text"][1]
    assert "--segment=16" in got["change_text"][0]
    assert json.loads(got["evidence"][0])["config_in_force"] == "topology/block, BlockSizes=18"


def _nvlink_run(levels: list[str]) -> pl.DataFrame:
    """The literal classes at level nvlink (cliques of 18) on a Kubernetes cluster whose Kueue
    Topologies have ``levels`` (read back through the recommendations' SQL from a
    ``raw.kueue_topologies`` with an older snapshot that had only the hostname level)."""
    import duckdb

    from pipelines.recommendations import _kueue_topology_config, _query

    with duckdb.connect() as con:
        con.execute(
            "CREATE SCHEMA raw; CREATE TABLE raw.kueue_topologies (cluster VARCHAR, name VARCHAR,"
            " uid VARCHAR, level_index BIGINT, node_label VARCHAR, snapshot_at TIMESTAMPTZ)"
        )
        con.execute(
            "INSERT INTO raw.kueue_topologies VALUES ('c', 'old', 'u0', 0,"
            " 'kubernetes.io/hostname', TIMESTAMPTZ '2026-10-01 00:00:00+00')"
        )
        con.executemany(
            "INSERT INTO raw.kueue_topologies VALUES ('c', 'default', 'u1', ?, ?,"
            " TIMESTAMPTZ '2026-11-01 00:00:00+00')",
            list(enumerate(levels)),
        )
        conf = _kueue_topology_config(_query(con, "kueue_topology_levels"))
    placement = _placement().with_columns(pl.col("level").replace("block", "nvlink"))
    return topology_levels(placement, _jobs(), W, {"c": "kubernetes"}, config={"c": conf})


def test_kueue_topology_levels_name_the_annotation_label() -> None:
    """Topology levels block label, clique label, hostname (latest snapshot only): the gang
    level nvlink is the node label nvidia.com/gpu.clique, a level that exists → a/16:
    podset-required-topology: nvidia.com/gpu.clique; a/36: slice-required at the clique label
    with slice size 18. In force names the three levels."""
    levels = ["cloud.provider.com/topology-block", "nvidia.com/gpu.clique",
              "kubernetes.io/hostname"]  # fmt: skip
    got = _nvlink_run(levels)
    assert (
        "Proposed: annotate the pod sets of a's 16-node jobs with "
        "kueue.x-k8s.io/podset-required-topology: nvidia.com/gpu.clique." in got["change_text"][0]
    )
    assert (
        "kueue.x-k8s.io/podset-slice-required-topology: nvidia.com/gpu.clique and "
        "kueue.x-k8s.io/podset-slice-size: 18" in got["change_text"][1]
    )
    ev = json.loads(got["evidence"][0])
    assert ev["config_in_force"] == "Kueue Topology levels " + ", ".join(levels)


def test_a_missing_kueue_level_is_added_first() -> None:
    """Topology levels block label and hostname only: TAS cannot place at the clique label, so
    the proposal adds nodeLabel nvidia.com/gpu.clique to spec.levels before annotating."""
    got = _nvlink_run(["cloud.provider.com/topology-block", "kubernetes.io/hostname"])
    assert (
        "Proposed: add nodeLabel nvidia.com/gpu.clique to the Kueue Topology's spec.levels, "
        "then annotate the pod sets of a's 16-node jobs with "
        "kueue.x-k8s.io/podset-required-topology: nvidia.com/gpu.clique." in got["change_text"][0]
    )
