"""Nodes the allocations used that the inventory lacks (METRICS.md "Capacity without an
inventory", data-quality ``nodes_outside_inventory``).

Build case (cluster c1, UTC): the inventory lists n1, n2 with 8 GPUs each; three 8-GPU jobs run
00:00–01:00 on n1, n2 and n3. The job record proves n3 exists with at least 8 GPUs: capacity
(8 + 8 + 8) × 3,600 = 86,400 GPU-s, allocated 3 × 8 × 3,600 = 86,400, occupancy 1.0, and one
finding names n3 (8 GPUs). Before: capacity 57,600 (the inventory alone), occupancy
86,400 ÷ 57,600 = 1.5, and no finding.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.core.build import OUTSIDE_INVENTORY, _outside_inventory
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect, init_warehouse

_H0 = dt.datetime(2026, 11, 2, 0, tzinfo=dt.UTC)


def _job(job: str, account: str, node: str) -> str:
    return (
        f"{job}|{job}|c1|gpu|{account}|u1|COMPLETED|0:0|2026-11-02T00:00:00|2026-11-02T00:00:00|"
        "2026-11-02T00:00:00|2026-11-02T01:00:00|01:00:00|1|billing=8,cpu=8,gres/gpu=8,mem=8G,"
        f"node=1|billing=8,cpu=8,gres/gpu=8,node=1|{node}\n"
    )


_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList\n"
    + _job("1", "aA", "n1")
    + _job("2", "aB", "n2")
    + _job("3", "aC", "n3")
)


def _config(d: Path) -> Config:
    (d / "inventory").mkdir()
    (d / "inventory" / "c1.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,8,a100,gpu,r1\nn2,8,a100,gpu,r1\n",
        encoding="utf-8",
    )
    (d / "goodput.toml").write_text(
        f'default_cluster = "c1"\n[warehouse]\npath = "{d}/warehouse.duckdb"\n'
        f'serving_path = "{d}/serving.duckdb"\ninputs = "{d}/inputs"\n'
        f'inventory = "{d}/inventory"\nregistry = "{d}/registry.yaml"\n'
        'partitions_start = "2024-01-01"\n'
        '[[clusters]]\nname = "c1"\nscheduler = "slurm"\ntimezone = "UTC"\n',
        encoding="utf-8",
    )
    return load_config(d / "goodput.toml")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("outside")
    cfg = _config(d)
    sacct = d / "sacct_2026-11-02.psv"
    sacct.write_text(_SACCT, encoding="utf-8")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        st = ingest_file(con, "sacct", sacct, ingest_options(cfg, "sacct", "c1"))
        assert (st.rows_loaded, st.rows_rejected) == (3, 0)
        rebuild(con, cfg, full=True)
    return cfg.warehouse_path


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()


@pytest.mark.slow
def test_a_node_outside_the_inventory_is_capacity_and_flagged(warehouse: Path) -> None:
    assert _rows(
        warehouse,
        "SELECT hour, capacity_gpu_s, allocated_gpu_s, occupancy FROM analytics.occupancy_hourly"
        " WHERE cluster = 'c1' ORDER BY hour",
    ) == [(_H0, 86_400.0, 86_400.0, 1.0)]
    assert _rows(
        warehouse,
        "SELECT host, gpus, capacity_source FROM core.nodes WHERE cluster = 'c1' ORDER BY host",
    ) == [("n1", 8.0, "inventory"), ("n2", 8.0, "inventory"), ("n3", 8.0, OUTSIDE_INVENTORY)]
    assert _rows(
        warehouse,
        "SELECT \"check\", value, detail FROM analytics.data_quality WHERE cluster = 'c1'"
        " AND \"check\" = 'nodes_outside_inventory'",
    ) == [
        ("nodes_outside_inventory", 8.0,
         "nodes used by allocations, not in the inventory (capacity counts the most GPUs held "
         "on each at once): n3 (8 GPUs)"),
    ]  # fmt: skip


@pytest.mark.slow
def test_the_waterfall_stays_conserved(warehouse: Path) -> None:
    """The leaves add up to the hour's capacity, 86,400 (before: 86,400 against 57,600)."""
    ((leaves, capacity),) = _rows(
        warehouse,
        "SELECT (SELECT sum(gpu_s) FROM analytics.gpu_waterfall_hourly WHERE cluster = 'c1'),"
        " (SELECT sum(capacity_gpu_s) FROM analytics.occupancy_hourly WHERE cluster = 'c1')",
    )
    assert capacity == 86_400.0
    assert float(str(leaves)) == pytest.approx(86_400.0)


# --------------------------------------------------------------------------- the rule alone


def _at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2025, 12, 1, hour, minute, tzinfo=dt.UTC)


def test_the_gpus_held_at_once_on_nodes_the_inventory_lacks() -> None:
    """Inventory of a: n1. m1 holds two 4-GPU jobs 05:00–06:00 at once (8); an 8-GPU job on
    [n1, m2] gives m2 4 (n1 is in the inventory: not added); b has no inventory (its nodes are
    the observed ones, not these)."""
    ts = pl.Datetime("us", "UTC")
    held = pl.DataFrame(
        {
            "cluster": ["a", "a", "a", "b"],
            "node_list": [["m1"], ["m1"], ["n1", "m2"], ["x1"]],
            "gpus": [4.0, 4.0, 8.0, 2.0],
            "start_at": [_at(5), _at(5), _at(5), _at(5)],
            "end_at": [_at(6), _at(6), _at(6), _at(6)],
            "as_of": [_at(6)] * 4,
            "gpu_type": [None, "h100", "h100", None],
            "partition": ["gpu", "gpu", "gpu", "gpu"],
        },
        schema_overrides={"start_at": ts, "end_at": ts, "as_of": ts},
    )
    inventory = pl.DataFrame(
        {"cluster": ["a"], "host": ["n1"], "gpus": [4.0], "gpu_type": ["h100"],
         "partition": ["gpu"], "rack": ["r1"], "capacity_source": ["inventory"]}
    )  # fmt: skip
    got = _outside_inventory(held, inventory)
    assert got.columns == inventory.columns
    assert got.rows() == [
        ("a", "m1", 8.0, "h100", "gpu", None, OUTSIDE_INVENTORY),
        ("a", "m2", 4.0, "h100", "gpu", None, OUTSIDE_INVENTORY),
    ]
    assert _outside_inventory(held.filter(pl.col("cluster") == "b"), inventory).height == 0


def test_a_node_the_inventory_names_by_its_full_name_is_in_it() -> None:
    """Inventory of a: ``gpu001.hpc.example.org`` (8 GPUs) and ``n1``; sacct's NodeList names
    ``gpu001`` and ``n1.hpc.example.org``: one node each, by short name (metrics.hosts), so none
    is outside the inventory (compared by exact name, both were: 16 GPUs of capacity counted
    twice). ``m9`` is outside it: 8 GPUs held at once."""
    ts = pl.Datetime("us", "UTC")
    held = pl.DataFrame(
        {
            "cluster": ["a", "a", "a"],
            "node_list": [["gpu001"], ["n1.hpc.example.org"], ["m9"]],
            "gpus": [8.0, 8.0, 8.0],
            "start_at": [_at(5)] * 3,
            "end_at": [_at(6)] * 3,
            "as_of": [_at(6)] * 3,
        },
        schema_overrides={"start_at": ts, "end_at": ts, "as_of": ts},
    )
    inventory = pl.DataFrame(
        {"cluster": ["a", "a"], "host": ["gpu001.hpc.example.org", "n1"], "gpus": [8.0, 8.0],
         "gpu_type": ["h100", "h100"], "partition": ["gpu", "gpu"], "rack": ["r1", "r1"],
         "capacity_source": ["inventory", "inventory"]}
    )  # fmt: skip
    got = _outside_inventory(held, inventory)
    assert got.select("cluster", "host", "gpus").rows() == [("a", "m9", 8.0)]
