"""MAINT reservations as planned_down node time (METRICS.md "Node states", waterfall leaf 2).

Build case (cluster c1, UTC): n1, n2 with 8 GPUs each (capacity 16 × 3,600 = 57,600 GPU-s an
hour, from the inventory). Job 1 holds n2's 8 GPUs 00:00–03:00 (the cut-off, 03:00). The
``scontrol show reservation`` output holds ``maint1`` (``Flags=MAINT,SPEC_NODES``) on n1
01:00–02:00 with no job on it, ``fw`` (``Flags=MAINT,IGNORE_JOBS``) on ``n[1-2]`` 02:00–03:00,
and ``big`` (no MAINT flag) on n1 00:00–01:00.

- hour 00: ``big`` is no maintenance: idle 8 × 3,600 = 28,800, allocated 28,800, occupancy 0.5;
- hour 01: n1 planned_down 28,800, idle 0, occupancy 28,800 ÷ (57,600 − 28,800) = 1.0;
- hour 02: n1 planned_down 28,800; n2 is in ``fw`` too, but job 1 (left running there by
  IGNORE_JOBS) holds its 8 GPUs, and allocated time wins: allocated 28,800, idle 0, occupancy
  1.0;
- planned_down over the build: 57,600 GPU-s; node_reliability: n1 planned_down_s 7,200.

Before MAINT reservations counted, hours 01 and 02 had idle 28,800 and occupancy 0.5.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.core.node_states import MAINT_RESERVATION_STATE, maint_reservation_node_events
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect, init_warehouse


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


_H = [_utc(f"2026-11-02T0{h}:00:00") for h in range(3)]

_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList\n"
    "1|1|c1|gpu|acct1|u1|COMPLETED|0:0|2026-11-02T00:00:00|2026-11-02T00:00:00|"
    "2026-11-02T00:00:00|2026-11-02T03:00:00|03:00:00|1|billing=8,cpu=8,gres/gpu=8,mem=8G,"
    "node=1|billing=8,cpu=8,gres/gpu=8,node=1|n2\n"
)


def _reservation(name: str, start: str, end: str, nodes: str, flags: str) -> str:
    return (
        f"ReservationName={name} StartTime=2026-11-02T{start} EndTime=2026-11-02T{end} "
        f"Duration=01:00:00 Nodes={nodes} NodeCnt=1 CoreCnt=64 Features=(null) "
        f"PartitionName=(null) Flags={flags} TRES=cpu=64 Users=root Groups=(null) "
        "Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a "
        "MaxStartDelay=(null)\n"
    )


_RESERVATIONS = (
    _reservation("big", "00:00:00", "01:00:00", "n1", "SPEC_NODES")
    + _reservation("maint1", "01:00:00", "02:00:00", "n1", "MAINT,SPEC_NODES")
    + _reservation("fw", "02:00:00", "03:00:00", "n[1-2]", "MAINT,IGNORE_JOBS,SPEC_NODES")
)


def _config(d: Path) -> Config:
    """A config of cluster c1 (Slurm, UTC) with its inventory, data in ``d``."""
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


def _files(d: Path) -> dict[str, Path]:
    d.mkdir(exist_ok=True)
    sacct, res = d / "sacct_2026-11-02.psv", d / "reservations_2026-11-02.txt"
    sacct.write_text(_SACCT, encoding="utf-8")
    res.write_text(_RESERVATIONS, encoding="utf-8")
    return {"sacct": sacct, "slurm-state": res}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("maint")
    cfg = _config(d)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, path in _files(d / "in").items():
            st = ingest_file(con, kind, path, ingest_options(cfg, kind, "c1"))
            assert st.rows_rejected == 0
        rebuild(con, cfg, full=True)
    return cfg.warehouse_path


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()


@pytest.mark.slow
def test_maint_reservations_are_planned_down(warehouse: Path) -> None:
    rows = _rows(
        warehouse,
        "SELECT hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s, occupancy"
        " FROM analytics.occupancy_hourly WHERE cluster = 'c1' ORDER BY hour",
    )
    assert rows == [
        (_H[0], 57_600.0, 0.0, 0.0, 28_800.0, 0.5),
        (_H[1], 57_600.0, 0.0, 28_800.0, 28_800.0, 1.0),
        (_H[2], 57_600.0, 0.0, 28_800.0, 28_800.0, 1.0),
    ]


@pytest.mark.slow
def test_waterfall_moves_the_maintenance_out_of_idle(warehouse: Path) -> None:
    got: dict[tuple[object, object], float] = {
        (hour, bucket): float(str(gpu_s))
        for hour, bucket, gpu_s in _rows(
            warehouse,
            "SELECT hour, bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE cluster = 'c1' GROUP BY hour, bucket",
        )
    }
    for hour, planned, idle in ((_H[0], 0.0, 28_800.0), (_H[1], 28_800.0, 0.0),
                                (_H[2], 28_800.0, 0.0)):  # fmt: skip
        assert got.get((hour, "planned_down"), 0.0) == pytest.approx(planned)
        assert got.get((hour, "idle"), 0.0) == pytest.approx(idle)
        assert got[(hour, "goodput")] == pytest.approx(28_800.0)
        # conserved: the leaves add up to the hour's capacity
        assert sum(v for (h, _b), v in got.items() if h == hour) == pytest.approx(57_600.0)


@pytest.mark.slow
def test_node_reliability_counts_the_maintenance(warehouse: Path) -> None:
    rows = _rows(
        warehouse,
        "SELECT host, down_s, planned_down_s, down_episodes FROM analytics.node_reliability"
        " WHERE cluster = 'c1' AND host = 'n1'",
    )
    assert rows == [("n1", 0.0, 7_200.0, 0)]


@pytest.mark.slow
def test_incremental_build_equals_full(tmp_path: Path) -> None:
    """The reservations loaded first, each load built incrementally: equal to a full rebuild."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    cfg = _config(tmp_path)
    files = _files(tmp_path / "in")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind in ("slurm-state", "sacct"):
            ingest_file(con, kind, files[kind], ingest_options(cfg, kind, "c1"))
            rebuild(con, cfg)
    assert assert_equals_full_rebuild(cfg, tmp_path) > 0


# --------------------------------------------------------------------------- the rule alone


def _res(*rows: tuple[str, str, str, list[str], bool, int]) -> pl.DataFrame:
    """``(name, start, end, nodes, maint, ingest_id)`` → ``raw.slurm_reservations`` rows."""
    return pl.DataFrame(
        [
            {"cluster": "c", "name": n, "start_at": _utc(s), "end_at": _utc(e), "nodes": nodes,
             "maint": m, "ingest_id": i, "line_no": 1}
            for n, s, e, nodes, m, i in rows
        ],
        schema_overrides={"start_at": pl.Datetime("us", "UTC"),
                          "end_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip


_NO_EVENTS = pl.DataFrame(
    schema={"cluster": pl.String(), "node": pl.String(), "start_at": pl.Datetime("us", "UTC"),
            "end_at": pl.Datetime("us", "UTC")}
)  # fmt: skip


def test_a_reservation_loaded_again_counts_once_as_last_loaded() -> None:
    """``m`` loaded at 10:00–14:00, then (a later load) shortened to 10:00–12:00: 10:00–12:00
    once; ``m2`` on n1 11:00–13:00 overlaps it: one event 10:00–13:00 on n1; n2 only ``m``;
    the non-MAINT ``r`` adds nothing."""
    res = _res(
        ("m", "2024-10-08T10:00:00", "2024-10-08T14:00:00", ["n1", "n2"], True, 1),
        ("m", "2024-10-08T10:00:00", "2024-10-08T12:00:00", ["n1", "n2"], True, 2),
        ("m2", "2024-10-08T11:00:00", "2024-10-08T13:00:00", ["n1"], True, 2),
        ("r", "2024-10-08T08:00:00", "2024-10-08T20:00:00", ["n3"], False, 2),
    )
    got = maint_reservation_node_events(res, _NO_EVENTS)
    assert got.select("node", "start_at", "end_at", "state", "reason", "gpus").rows() == [
        ("n1", _utc("2024-10-08T10:00:00"), _utc("2024-10-08T13:00:00"),
         MAINT_RESERVATION_STATE, "MAINT reservation m", None),
        ("n2", _utc("2024-10-08T10:00:00"), _utc("2024-10-08T12:00:00"),
         MAINT_RESERVATION_STATE, "MAINT reservation m", None),
    ]  # fmt: skip


def test_other_node_events_win_where_both_exist() -> None:
    """n1 in ``m`` 10:00–14:00; sacctmgr has n1 DOWN 09:00–11:00 and drained from 13:00 (open):
    the reservation adds 11:00–13:00 only, not counted twice."""
    res = _res(("m", "2024-10-08T10:00:00", "2024-10-08T14:00:00", ["n1"], True, 1))
    events = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "event": ["node", "node"],
            "node": ["n1", "n1"],
            "start_at": [_utc("2024-10-08T09:00:00"), _utc("2024-10-08T13:00:00")],
            "end_at": [_utc("2024-10-08T11:00:00"), None],
        }
    )
    got = maint_reservation_node_events(res, events)
    assert got.select("node", "start_at", "end_at").rows() == [
        ("n1", _utc("2024-10-08T11:00:00"), _utc("2024-10-08T13:00:00"))
    ]


def _loads(*rows: tuple[str, str, str, list[str], list[str], str | None, int]) -> pl.DataFrame:
    """``(name, start, end, nodes, flags, state, ingest_id)`` → ``raw.slurm_reservations`` rows
    as the analytics query reads them (``maint`` from the flags)."""
    return pl.DataFrame(
        [
            {"cluster": "c", "name": n, "reservation_id": None, "start_at": _utc(s),
             "end_at": _utc(e), "nodes": nodes, "flags": flags, "maint": "MAINT" in flags,
             "state": st, "snapshot_at": None, "ingest_id": i, "line_no": 1}
            for n, s, e, nodes, flags, st, i in rows
        ],
        schema_overrides={"reservation_id": pl.Int64(), "start_at": pl.Datetime("us", "UTC"),
                          "end_at": pl.Datetime("us", "UTC"), "state": pl.String(),
                          "snapshot_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip


def _node_hours(events: pl.DataFrame) -> float:
    return float((events["end_at"] - events["start_at"]).dt.total_seconds().sum()) / 3_600


def test_a_reservation_moved_before_it_starts_counts_at_its_new_times() -> None:
    """``fw`` (MAINT) on n1, n2 (8 GPUs each) Tue 11-03 01:00–05:00 in Monday's snapshot, moved
    to Wed 11-04 01:00–05:00 in the next: 2 nodes × 4 h = 8 node-hours, 64 GPU-hours, all on
    Wednesday (was 16 node-hours, 128 GPU-hours: Tuesday's kept as its own start)."""
    res = _loads(
        ("fw", "2026-11-03T01:00:00", "2026-11-03T05:00:00", ["n1", "n2"], ["MAINT"],
         "INACTIVE", 1),
        ("fw", "2026-11-04T01:00:00", "2026-11-04T05:00:00", ["n1", "n2"], ["MAINT"],
         "INACTIVE", 2),
    )  # fmt: skip
    got = maint_reservation_node_events(res, _NO_EVENTS)
    assert got.select("node", "start_at", "end_at").rows() == [
        ("n1", _utc("2026-11-04T01:00:00"), _utc("2026-11-04T05:00:00")),
        ("n2", _utc("2026-11-04T01:00:00"), _utc("2026-11-04T05:00:00")),
    ]
    assert _node_hours(got) == 8.0
    assert _node_hours(got) * 8 == 64.0


def test_a_reservation_whose_maint_flag_is_removed_counts_nothing() -> None:
    """``fw`` on n1 01:00–05:00 with MAINT, then (same start, a later load) without it: 0."""
    res = _loads(
        ("fw", "2026-11-03T01:00:00", "2026-11-03T05:00:00", ["n1"], ["MAINT"], "INACTIVE", 1),
        ("fw", "2026-11-03T01:00:00", "2026-11-03T05:00:00", ["n1"], ["IGNORE_JOBS"],
         "INACTIVE", 2),
    )  # fmt: skip
    assert maint_reservation_node_events(res, _NO_EVENTS).height == 0


def test_a_recurring_reservation_keeps_its_past_occurrences_only() -> None:
    """``d`` (MAINT,DAILY) on n1, one hour a day: Monday's snapshot shows it ACTIVE on 11-02
    01:00–02:00 (past: counts), Tuesday's 00:30 snapshot the next one 11-03 01:00–02:00 not yet
    started, the last one 11-03 moved to 03:00–04:00 (counts; 01:00 was never held); slurmdbd's
    history row of 11-01 01:00–02:00 (no state) is before the latest start: counts. 3 node-hours
    (was 4: the moved 11-03 01:00 counted too)."""
    res = _loads(
        ("d", "2026-11-01T01:00:00", "2026-11-01T02:00:00", ["n1"], ["MAINT", "DAILY"], None, 1),
        ("d", "2026-11-02T01:00:00", "2026-11-02T02:00:00", ["n1"], ["MAINT", "DAILY"],
         "ACTIVE", 2),
        ("d", "2026-11-03T01:00:00", "2026-11-03T02:00:00", ["n1"], ["MAINT", "DAILY"],
         "INACTIVE", 3),
        ("d", "2026-11-03T03:00:00", "2026-11-03T04:00:00", ["n1"], ["MAINT", "DAILY"],
         "INACTIVE", 4),
    )  # fmt: skip
    got = maint_reservation_node_events(res, _NO_EVENTS)
    assert got.select("start_at", "end_at").rows() == [
        (_utc("2026-11-01T01:00:00"), _utc("2026-11-01T02:00:00")),
        (_utc("2026-11-02T01:00:00"), _utc("2026-11-02T02:00:00")),
        (_utc("2026-11-03T03:00:00"), _utc("2026-11-03T04:00:00")),
    ]
    assert _node_hours(got) == 3.0


@pytest.mark.slow
def test_a_later_snapshot_without_maint_counts_nothing(tmp_path: Path) -> None:
    """The build case, then a later snapshot (11-03's file) of the same reservations with
    ``fw``'s MAINT flag removed (same times): ``fw`` counts no more, its latest load's row
    deciding. Hour 02: n1 planned_down 0 (was 28,800), idle 28,800, job 1's 28,800 on n2,
    occupancy 28,800 ÷ 57,600 = 0.5 (was 1.0); hour 01 (``maint1``) as before."""
    cfg = _config(tmp_path)
    files = _files(tmp_path / "in")
    later = tmp_path / "in" / "reservations_2026-11-03.txt"
    later.write_text(
        _RESERVATIONS.replace("Flags=MAINT,IGNORE_JOBS", "Flags=IGNORE_JOBS"), encoding="utf-8"
    )
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, path in [*files.items(), ("slurm-state", later)]:
            st = ingest_file(con, kind, path, ingest_options(cfg, kind, "c1"))
            assert st.rows_rejected == 0
        rebuild(con, cfg, full=True)
    rows = _rows(
        cfg.warehouse_path,
        "SELECT hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s, occupancy"
        " FROM analytics.occupancy_hourly WHERE cluster = 'c1' ORDER BY hour",
    )
    assert rows == [
        (_H[0], 57_600.0, 0.0, 0.0, 28_800.0, 0.5),
        (_H[1], 57_600.0, 0.0, 28_800.0, 28_800.0, 1.0),
        (_H[2], 57_600.0, 0.0, 0.0, 28_800.0, 0.5),
    ]


def test_one_history_listing_keeps_all_its_occurrences() -> None:
    """One ``sacctmgr`` listing (no state) holds ``d`` (MAINT,DAILY) on n1 on 11-03 01:00–02:00
    and, on an earlier line, 11-02 01:00–02:00: 11-03 is the latest row (the later start), 11-02
    a past occurrence before it: 2 node-hours, whatever the line order."""
    res = _loads(
        ("d", "2026-11-03T01:00:00", "2026-11-03T02:00:00", ["n1"], ["MAINT", "DAILY"], None, 1),
        ("d", "2026-11-02T01:00:00", "2026-11-02T02:00:00", ["n1"], ["MAINT", "DAILY"], None, 1),
    ).with_columns(pl.Series("line_no", [2, 3]))
    assert _node_hours(maint_reservation_node_events(res, _NO_EVENTS)) == 2.0
