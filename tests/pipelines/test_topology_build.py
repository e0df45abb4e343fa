"""Topology end to end: a hand-made topology.conf for the small fleet's Slurm cluster is
ingested beside its sacct files, and the build places every multi-node attempt on it."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config

#: Hand-made: blocks of 4 nodes over the fleet's slurm-a inventory (a100-001 … a100-016 and
#: h100-001 … h100-008), unlike its racks of 8, so the map visibly replaces the racks.
TOPOLOGY = """\
# slurm-a, hand-made for the test fleet (blocks of 4)
BlockName=a1 Nodes=a100-[001-004]
BlockName=a2 Nodes=a100-[005-008]
BlockName=a3 Nodes=a100-[009-012]
BlockName=a4 Nodes=a100-[013-016]
BlockName=h1 Nodes=h100-[001-004]
BlockName=h2 Nodes=h100-[005-008]
BlockSizes=4
"""


@pytest.fixture(scope="module")
def warehouse(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """slurm-a's sacct files and the topology above (valid from 2026-11-01) loaded, built."""
    work = tmp_path_factory.mktemp("topology")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    conf = work / "topology_2026-11-01.conf"
    conf.write_text(TOPOLOGY, encoding="utf-8")
    cluster = cfg.clusters[0]
    opts = IngestOptions(cluster=cluster.name, tz=cluster.timezone)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for f in sorted((fleet_dir / "inputs" / cluster.name / "sacct").glob("*.psv")):
            ingest_file(con, "sacct", f, opts)
        stats = ingest_file(con, "topology", conf, opts)
        assert (stats.rows_loaded, stats.rows_rejected) == (24, 0)
        rebuild(con, cfg)
    return cfg.warehouse_path


def test_topology_conf_replaces_the_inventory_racks(warehouse: Path) -> None:
    """slurm-a's map is the six blocks of 4 from topology.conf (no ``rack`` level); k8s-b,
    without one, keeps its inventory racks (gpu-node-01…04 in r11, 05…08 in r12)."""
    with connect(warehouse, read_only=True) as con:
        rows = con.sql(
            "SELECT cluster, level, source, count(DISTINCT domain), count(*) FROM topology"
            " GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert rows == [
        ("k8s-b", "rack", "inventory", 2, 8),
        ("slurm-a", "block", "topology.conf", 6, 24),
    ]


def test_an_eight_node_gang_over_three_blocks_of_four(warehouse: Path) -> None:
    """Job 418531 ran on a100-[001-005,007,013-014] (started 2026-11-01 21:54 New York time,
    after the map's 2026-11-01 00:00 UTC): 4 nodes in a1, 2 in a2, 2 in a4 → 3 blocks used;
    min ceil(8/4) = 2; spread 1."""
    with connect(warehouse, read_only=True) as con:
        rows = con.sql(
            "SELECT level, nodes, domain_size, domains_used, domains_min, spread"
            " FROM job_placement WHERE cluster = 'slurm-a' AND job_id = '418531'"
        ).fetchall()
    assert rows == [("block", 8, 4, 3, 2, 1)]


def test_fragmentation_covers_every_hour_and_no_block_of_four_holds_sixteen(
    warehouse: Path,
) -> None:
    """slurm-a has one fragmentation row per ``occupancy_hourly`` hour and gang size (2, 4, 8,
    16) at level ``block``; blocks of 4 hold no gang of 8 or 16, so those rows have 0 domain
    slots and every unfragmented slot is stranded; free nodes never exceed the 24 mapped."""
    with connect(warehouse, read_only=True) as con:
        ((n_hours,),) = con.sql(
            "SELECT count(*) FROM occupancy_hourly WHERE cluster = 'slurm-a'"
        ).fetchall()
        (got,) = con.sql(
            "SELECT count(*), count(DISTINCT hour), max(free_nodes),"
            " max(domain_slots) FILTER (WHERE gang_nodes >= 8),"
            " bool_and(stranded_slots = unfragmented_slots) FILTER (WHERE gang_nodes >= 8)"
            " FROM topology_fragmentation_hourly WHERE cluster = 'slurm-a' AND level = 'block'"
        ).fetchall()
    assert n_hours > 24
    assert got[:2] == (4 * n_hours, n_hours)
    assert got[2] <= 24
    assert got[3:] == (0, True)


def test_domain_capacity_agrees_with_fragmentation_and_segments(warehouse: Path) -> None:
    """Per slurm-a hour at level ``block``: the domains' free nodes sum to the fragmentation
    view's ``free_nodes``; free slots of s = 2 and 4 equal its domain slots for gangs of 2
    and 4 (the same Σ floor(f_d/s)); blocks of 4 give no slot of 8; healthy + degraded = 4
    per block; efficiency at s = 4 is 1 wherever every block is whole."""
    with connect(warehouse, read_only=True) as con:
        (mismatch,) = con.execute(
            "SELECT count(*) FROM (SELECT hour, sum(free_nodes) AS f FROM domain_capacity_hourly"
            " WHERE cluster = 'slurm-a' AND level = 'block' GROUP BY hour) d"
            " JOIN topology_fragmentation_hourly t USING (hour)"
            " JOIN segment_capacity_hourly s USING (hour)"
            " WHERE t.cluster = 'slurm-a' AND t.level = 'block' AND s.cluster = 'slurm-a'"
            " AND t.gang_nodes = s.segment_size"
            " AND (d.f <> t.free_nodes OR s.free_slots <> t.domain_slots)"
        ).fetchone() or (None,)
        rows = con.execute(
            "SELECT max(free_slots) FILTER (WHERE segment_size = 8),"
            " bool_and(efficiency = 1) FILTER (WHERE segment_size = 4 AND healthy_nodes = 24)"
            " FROM segment_capacity_hourly WHERE cluster = 'slurm-a'"
        ).fetchone()
        (sizes,) = con.execute(
            "SELECT bool_and(healthy_nodes + degraded_nodes = 4 AND nodes = 4)"
            " FROM domain_capacity_hourly WHERE cluster = 'slurm-a'"
        ).fetchone() or (None,)
    assert mismatch == 0
    assert rows == (0, True)
    assert sizes is True


def test_stranded_parts_sum_to_the_waterfall_leaves_in_every_cluster_hour(
    warehouse: Path,
) -> None:
    """The asset check's query finds no cluster-hour whose stranded/other parts miss the
    ``idle`` leaf or whose held-for-gangs/other parts miss the ``held`` leaf, and every
    waterfall cluster-hour has a row."""
    with connect(warehouse, read_only=True) as con:
        check = load_sql("checks/stranded_splits_conserve_leaves")
        (bad,) = con.execute(check).fetchone() or (None,)
        (n_rows, n_hours) = con.execute(
            "SELECT (SELECT count(*) FROM stranded_gpu_hourly),"
            " (SELECT count(DISTINCT (cluster, hour)) FROM gpu_waterfall_hourly)"
        ).fetchone() or (None, None)
    assert bad == 0
    assert n_rows == n_hours > 0


def test_large_job_wait_parts_sum_to_the_wait(warehouse: Path) -> None:
    """Every large-job row (>= 64 GPUs asked) has quota + priority + fragmentation + other =
    wait (seconds) and is counterfactual (no polled reasons here)."""
    with connect(warehouse, read_only=True) as con:
        row = con.execute(
            "SELECT count(*), bool_and(abs(quota_s + priority_s + fragmentation_s + other_s"
            " - wait_s) < 1e-6), bool_and(basis = 'counterfactual'), min(req_gpus)"
            " FROM large_job_wait_causes"
        ).fetchone()
    assert row is not None
    assert row[0] == 0 or (row[1], row[2]) == (True, True)
    assert row[3] is None or row[3] >= 64


def _node(name: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels,
                     "creationTimestamp": "2026-10-03T00:00:00Z"},
        "status": {"capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "4"}},
    }  # fmt: skip


def test_node_labels_are_the_map_of_a_kubernetes_cluster(fleet_dir: Path, tmp_path: Path) -> None:
    """A hand-made Node list for k8s-b (snapshot 2026-11-02 00:00 UTC): gpu-node-01…03 in
    clique ``c1.0``, 04 in ``c1.1``, 01…04 on tier-1 switch ``sw-a``, 01…02 in block ``blk-1``
    and 03…04 in ``blk-2`` (a label k8s-b's Kueue Topology names as a level); the labels
    replace k8s-b's inventory racks (level ``rack``), slurm-a keeps its racks."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    clique = "nvidia.com/gpu.clique"
    tier = "fabric.topograph.run/tier-1"
    block = "cloud.provider.com/topology-block"
    items = [
        _node(
            f"gpu-node-0{i}",
            {clique: "c1.0" if i < 4 else "c1.1", tier: "sw-a", block: f"blk-{(i + 1) // 2}"},
        )
        for i in range(1, 5)
    ]
    kueue = {
        "apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology",
        "metadata": {"name": "default", "uid": "t-1"},
        "spec": {"levels": [{"nodeLabel": block}, {"nodeLabel": "kubernetes.io/hostname"}]},
    }  # fmt: skip
    items.append(kueue)
    nodes = tmp_path / "nodes_2026-11-02.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "utf-8")
    snapshot = dt.datetime(2026, 11, 2, tzinfo=dt.UTC).timestamp()
    os.utime(nodes, (snapshot, snapshot))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "k8s-objects", nodes, IngestOptions(cluster="k8s-b"))
        rebuild(con, cfg)
        rows = con.sql(
            "SELECT cluster, level, source, string_agg(DISTINCT domain, ',' ORDER BY domain),"
            " count(*), min(valid_from) FROM topology GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    day = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    assert [r[:5] for r in rows] == [
        ("k8s-b", block, "k8s-labels", "blk-1,blk-2", 4),
        ("k8s-b", "nvlink", "k8s-labels", "c1.0,c1.1", 4),
        ("k8s-b", "tier-1", "k8s-labels", "sw-a", 4),
        ("slurm-a", "rack", "inventory", "r01,r02,r03", 24),
    ]
    assert [r[5] for r in rows[:3]] == [day, day, day]
