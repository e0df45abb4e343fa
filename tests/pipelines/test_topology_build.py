"""Topology end to end: a hand-made topology.conf for the small fleet's Slurm cluster is
ingested beside its sacct files, and the build places every multi-node attempt on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
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
