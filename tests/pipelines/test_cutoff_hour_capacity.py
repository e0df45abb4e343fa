"""The hour of the cut-off, and an hour registered mid-way, through a full build (METRICS.md
waterfall: capacity = GPUs × time, cut at the cluster's cut-off; held = free GPUs while demand
waits, in the part of the hour that has capacity). Three clusters, each its own cut-off:

- c10: inventory n1, n2 with 8 GPUs each; one 8-GPU job 10:00–10:30, so the cut-off is 10:30.
  Hour 10: capacity 16 × 1,800 = 28,800 (not 57,600), allocated 14,400, occupancy 0.5 (not
  0.25), idle 14,400 (not 43,200).
- c3: 16 GPUs registered since 11-01; 8-GPU job 100 10:00–11:00, 4-GPU job 101 FAILED
  10:00–10:30, 4-GPU job 102 requeued 10:00–10:20 and run again 10:40–11:40 (the cut-off), an
  8-GPU job pending from 10:00. Hour 11: capacity 16 × 2,400 = 38,400, goodput 4 × 2,400 =
  9,600, 12 GPUs free while 8 are asked: held 8 × 2,400 = 19,200 (not 16,000 from
  38,400 ÷ 3,600 = 10.67 GPUs), idle 9,600 (not 12,800).
- c4: 16 GPUs registered at 10:30; an 8-GPU job pending from 10:00, a 4-GPU job submitted and
  run 10:40–11:30 (the cut-off). Hour 10: capacity 16 × 1,800 = 28,800, goodput 4 × 1,200 =
  4,800; held = 8 × 600 (10:30–10:40, 16 free) + 8 × 1,200 (10:40–11:00, 12 free) = 14,400,
  idle 9,600 (not held 24,000 and idle 0, from 28,800 ÷ 3,600 = 8 GPUs over the whole hour).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect, init_warehouse

pytestmark = pytest.mark.slow

_HEAD = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList\n"
)
_G8 = "billing=8,cpu=8,gres/gpu=8,node=1"
_G4 = "billing=4,cpu=4,gres/gpu=4,node=1"
_REQ8 = "billing=8,cpu=8,gres/gpu=8,node=1"
_DAY = "2026-11-02T"
_SACCT = _HEAD + "".join(
    f"{j}|{j}|{c}|gpu|acctA|u1|{st}|0:0|{_DAY}{sub}|{_DAY}{sub}|{s}|{e}|{el}|1|{alloc}|{req}|{nl}\n"
    for j, c, st, sub, s, e, el, alloc, req, nl in (
        ("100", "c10", "COMPLETED", "09:00:00", f"{_DAY}10:00:00", f"{_DAY}10:30:00",
         "00:30:00", _G8, _G8, "n1"),
        ("100", "c3", "COMPLETED", "09:00:00", f"{_DAY}10:00:00", f"{_DAY}11:00:00",
         "01:00:00", _G8, _G8, "n1"),
        ("101", "c3", "FAILED", "09:00:00", f"{_DAY}10:00:00", f"{_DAY}10:30:00",
         "00:30:00", _G4, _G4, "n2"),
        ("102", "c3", "REQUEUED", "09:30:00", f"{_DAY}10:00:00", f"{_DAY}10:20:00",
         "00:20:00", _G4, _G4, "n2"),
        ("102", "c3", "COMPLETED", "10:20:00", f"{_DAY}10:40:00", f"{_DAY}11:40:00",
         "01:00:00", _G4, _G4, "n2"),
        ("103", "c3", "PENDING", "10:00:00", "Unknown", "Unknown", "00:00:00",
         "billing=8,cpu=8,node=1", _REQ8, "None assigned"),
        ("200", "c4", "COMPLETED", "10:40:00", f"{_DAY}10:40:00", f"{_DAY}11:30:00",
         "00:50:00", _G4, _G4, "m1"),
        ("201", "c4", "PENDING", "10:00:00", "Unknown", "Unknown", "00:00:00",
         "billing=8,cpu=8,node=1", _REQ8, "None assigned"),
    )
)  # fmt: skip
_TRES = "billing=64,cpu=64,gres/gpu=16,mem=1000G,node=2"
_EVENTS = (
    "Cluster|Cluster Nodes|NodeName|TimeStart|TimeEnd|State|StateRaw|Event|Reason|User|TRES\n"
    f"c3|n[1-2]||2026-11-01T00:00:00|Unknown||0|Cluster|Cluster Registered TRES||{_TRES}\n"
    f"c4|m[1-2]||{_DAY}10:30:00|Unknown||0|Cluster|Cluster Registered TRES||{_TRES}\n"
)


def _config(d: Path) -> Config:
    (d / "inventory").mkdir()
    (d / "inventory" / "c10.csv").write_text("host,gpus\nn1,8\nn2,8\n", encoding="utf-8")
    (d / "registry.yaml").write_text(
        "teams:\n  - team: ta\n    share: 1.0\n    slurm_accounts: [acctA]\n", encoding="utf-8"
    )
    clusters = "".join(
        f'[[clusters]]\nname = "{c}"\nscheduler = "slurm"\ntimezone = "UTC"\n'
        for c in ("c10", "c3", "c4")
    )
    (d / "goodput.toml").write_text(
        f'default_cluster = "c3"\n[warehouse]\npath = "{d}/warehouse.duckdb"\n'
        f'serving_path = "{d}/serving.duckdb"\ninputs = "{d}/inputs"\n'
        f'inventory = "{d}/inventory"\nregistry = "{d}/registry.yaml"\n'
        'partitions_start = "2024-01-01"\n' + clusters,
        encoding="utf-8",
    )
    return load_config(d / "goodput.toml")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cutoff_hour")
    cfg = _config(d)
    (d / "sacct_2026-11-02.psv").write_text(_SACCT, encoding="utf-8")
    (d / "events_2026-11-02.psv").write_text(_EVENTS, encoding="utf-8")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, name in (("sacct", "sacct_2026-11-02.psv"),
                           ("slurm-state", "events_2026-11-02.psv")):  # fmt: skip
            st = ingest_file(con, kind, d / name, ingest_options(cfg, kind, None))
            assert st.rows_rejected == 0
        rebuild(con, cfg, full=True)
    return cfg.warehouse_path


def _h(hour: int) -> dt.datetime:
    return dt.datetime(2026, 11, 2, hour, tzinfo=dt.UTC)


def _occupancy(db: Path, cluster: str) -> list[tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(
            "SELECT hour, capacity_gpu_s, allocated_gpu_s, occupancy, capacity_source"
            " FROM analytics.occupancy_hourly WHERE cluster = ? ORDER BY hour",
            [cluster],
        ).fetchall()


def _leaves(db: Path, cluster: str, hour: dt.datetime) -> dict[str, float]:
    with connect(db, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(
            "SELECT bucket, gpu_s FROM analytics.gpu_waterfall_hourly"
            " WHERE cluster = ? AND hour = ?",
            [cluster, hour],
        ).fetchall()
    return {str(b): float(g) for b, g in rows}


def test_inventory_capacity_stops_at_the_cut_off(warehouse: Path) -> None:
    assert _occupancy(warehouse, "c10") == [(_h(10), 28_800.0, 14_400.0, 0.5, "inventory")]
    leaves = _leaves(warehouse, "c10", _h(10))
    assert (leaves["goodput"], leaves["held"], leaves["idle"]) == (14_400.0, 0.0, 14_400.0)
    assert sum(leaves.values()) == 28_800.0


def test_held_in_the_cut_off_hour_uses_the_registered_gpus(warehouse: Path) -> None:
    occ = _occupancy(warehouse, "c3")
    assert [(r[0], r[1]) for r in occ] == [(_h(10), 57_600.0), (_h(11), 38_400.0)]
    leaves = _leaves(warehouse, "c3", _h(11))
    assert (leaves["goodput"], leaves["held"], leaves["idle"]) == (9_600.0, 19_200.0, 9_600.0)
    assert sum(leaves.values()) == 38_400.0


def test_held_in_an_hour_registered_mid_way_counts_from_the_registration(
    warehouse: Path,
) -> None:
    occ = _occupancy(warehouse, "c4")
    assert [(r[0], r[1], r[2]) for r in occ] == [
        (_h(10), 28_800.0, 4_800.0),
        (_h(11), 16 * 1_800.0, 4 * 1_800.0),
    ]
    leaves = _leaves(warehouse, "c4", _h(10))
    assert (leaves["goodput"], leaves["held"], leaves["idle"]) == (4_800.0, 14_400.0, 9_600.0)
    assert sum(leaves.values()) == 28_800.0
    # hour 11, cut at 11:30: 12 GPUs free while 8 are asked, 8 × 1,800 held
    h11 = _leaves(warehouse, "c4", _h(11))
    assert (h11["goodput"], h11["held"], h11["idle"]) == (7_200.0, 14_400.0, 7_200.0)
