"""Slurm node events against allocations and reasons, through a full build
(``tests/fixtures/slurm-node-drain``, SOURCE.md there): cluster c2, nodes n1–n3 with 8 GPUs
each (capacity 3 × 8 × 3,600 = 86,400 GPU-s an hour, from the inventory).

- n1 is drained (DRAIN "bad ib port") 10:00–12:00 while job 200 (8 GPUs) runs on it until
  11:00: allocated time wins over the drain (METRICS.md waterfall leaf 1, "drained with no
  job"), so n1 is down 0 in hour 10 and 8 × 3,600 = 28,800 in hour 11.
- n3 is DOWN 10:00–10:30 with slurmctld's reason "Node unexpectedly rebooted boot_time=…": a
  crash, down, not planned: 8 × 1,800 = 14,400 down GPU-s in hour 10, one down episode.

Hour 10: down 14,400, planned_down 0, allocated 57,600 (jobs 200 and 201), occupancy
57,600 / (86,400 − 14,400) = 0.8, idle 86,400 − 14,400 − 57,600 = 14,400; the leaves sum to
capacity. Hour 11: down 28,800 (n1, no job left), allocated 28,800 (job 201), occupancy
28,800 / 57,600 = 0.5.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect, init_warehouse

pytestmark = pytest.mark.slow

_FIX = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-node-drain"
_H10 = dt.datetime(2024, 10, 8, 10, tzinfo=dt.UTC)
_H11 = dt.datetime(2024, 10, 8, 11, tzinfo=dt.UTC)


def _config(d: Path) -> Config:
    """A config of cluster c2 (Slurm, UTC) with its inventory, data in ``d``."""
    (d / "inventory").mkdir()
    shutil.copy(_FIX / "inv_c2.csv", d / "inventory" / "c2.csv")
    (d / "goodput.toml").write_text(
        f'default_cluster = "c2"\n[warehouse]\npath = "{d}/warehouse.duckdb"\n'
        f'serving_path = "{d}/serving.duckdb"\ninputs = "{d}/inputs"\n'
        f'inventory = "{d}/inventory"\nregistry = "{d}/registry.yaml"\n'
        'partitions_start = "2024-01-01"\n'
        '[[clusters]]\nname = "c2"\nscheduler = "slurm"\ntimezone = "UTC"\n',
        encoding="utf-8",
    )
    return load_config(d / "goodput.toml")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = _config(tmp_path_factory.mktemp("drain"))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, name in (("sacct", "sacct_n1_2024-10-08.psv"),
                           ("slurm-state", "events_2024-10-08.psv")):  # fmt: skip
            st = ingest_file(con, kind, _FIX / name, ingest_options(cfg, kind, "c2"))
            assert st.rows_rejected == 0
        rebuild(con, cfg, full=True)
    return cfg.warehouse_path


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()


def test_drained_node_running_a_job_is_not_down(warehouse: Path) -> None:
    rows = _rows(
        warehouse,
        "SELECT hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s,"
        " occupancy FROM analytics.occupancy_hourly WHERE cluster = 'c2' AND hour IN"
        " ('2024-10-08 10:00:00+00', '2024-10-08 11:00:00+00') ORDER BY hour",
    )
    assert [r[0] for r in rows] == [_H10, _H11]
    h10, h11 = rows
    assert h10[1:5] == (86_400.0, 14_400.0, 0.0, 57_600.0)
    assert h10[5] == pytest.approx(0.8)
    assert h11[1:5] == (86_400.0, 28_800.0, 0.0, 28_800.0)
    assert h11[5] == pytest.approx(0.5)


def test_waterfall_leaves_sum_to_capacity(warehouse: Path) -> None:
    rows = dict(
        _rows(
            warehouse,
            "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE cluster = 'c2' AND hour = '2024-10-08 10:00:00+00' GROUP BY bucket",
        )
    )
    assert rows["down"] == pytest.approx(14_400.0)
    assert rows.get("planned_down", 0.0) == pytest.approx(0.0)
    assert rows["goodput"] == pytest.approx(57_600.0)
    assert rows["idle"] == pytest.approx(14_400.0)
    assert sum(rows.values()) == pytest.approx(86_400.0)


def test_unexpected_reboot_is_a_down_episode(warehouse: Path) -> None:
    (row,) = _rows(
        warehouse,
        "SELECT down_s, planned_down_s, down_episodes FROM analytics.node_reliability"
        " WHERE cluster = 'c2' AND host = 'n3'",
    )
    assert row == (1_800.0, 0.0, 1)


@pytest.mark.parametrize("first", ["slurm-state", "sacct"])
def test_incremental_build_equals_full_whichever_load_comes_first(
    tmp_path: Path, first: str
) -> None:
    """The drain loaded before the job that runs under it (the job's load turns n1's hour 10
    from down into allocated), or after it: built incrementally after each load, the warehouse
    equals a full rebuild row for row, with hour 10's down 14,400."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    cfg = _config(tmp_path)
    files = {"sacct": "sacct_n1_2024-10-08.psv", "slurm-state": "events_2024-10-08.psv"}
    order = [first, *(k for k in files if k != first)]
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind in order:
            ingest_file(con, kind, _FIX / files[kind], ingest_options(cfg, kind, "c2"))
            rebuild(con, cfg)
    assert assert_equals_full_rebuild(cfg, tmp_path) > 0
    (down,) = _rows(
        cfg.warehouse_path,
        "SELECT down_gpu_s FROM analytics.occupancy_hourly"
        " WHERE cluster = 'c2' AND hour = '2024-10-08 10:00:00+00'",
    )
    assert down == (14_400.0,)
