"""Down and drained ``scontrol show node`` snapshots as node down time (METRICS.md "Node states").

A site that gives only ``scontrol show node`` snapshots (no ``sacctmgr show event``): a node
down or drained with a reason time ``[user@time]`` is down / planned_down from that time until
a later snapshot shows it back (open: to the cut-off), classified by its reason as sacctmgr
events are. A cluster with sacctmgr node events takes its down time from those alone; a
snapshot is dated by its file's modification time clamped into the UTC day its name carries.

Build case (cluster c4, UTC): n1–n3 with 4 GPUs each (capacity 12 × 3,600 = 43,200 GPU-s an
hour, from the inventory). Job 300 holds n2's 4 GPUs 10:00–12:00 (the cut-off, 12:00). The
snapshot, taken at 12:00: n1 ``IDLE+DRAIN`` "maint: firmware upgrade [root@10:00]", n2
``ALLOCATED``, n3 ``DOWN*`` "Not responding [slurm@11:30]".

- hour 10: planned_down 4 × 3,600 = 14,400 (n1: "maint", "upgrade"), allocated 14,400, idle
  43,200 − 14,400 − 14,400 = 14,400 (n3);
- hour 11: planned_down 14,400, down 4 × 1,800 = 7,200 (n3 from 11:30: "not responding" is
  unplanned), allocated 14,400, idle 43,200 − 14,400 − 7,200 − 14,400 = 7,200;
- n1 over the day: 4 GPUs × 2 h = 28,800 planned_down GPU-s; node_reliability: n1
  planned_down_s 7,200, n3 down_s 1,800 in 1 episode.

Before snapshots counted, both hours had no down time: idle 28,800 each.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.core.node_states import SLURM_DOWN_STATES, snapshot_node_events
from pipelines.ingest import ingest_file, ingest_options
from pipelines.slurm import snapshot_time
from pipelines.slurm._scontrol_nodes import parse_scontrol_nodes
from pipelines.warehouse import connect, init_warehouse, read_table, run_named

_H10 = dt.datetime(2024, 10, 8, 10, tzinfo=dt.UTC)
_H11 = dt.datetime(2024, 10, 8, 11, tzinfo=dt.UTC)

_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList\n"
    "300|300|c4|gpu|acct1|u1|COMPLETED|0:0|2024-10-08T09:50:00|2024-10-08T09:50:00|"
    "2024-10-08T10:00:00|2024-10-08T12:00:00|02:00:00|1|billing=4,cpu=4,gres/gpu=4,mem=8G,"
    "node=1|billing=4,cpu=4,gres/gpu=4,node=1|n2\n"
)
_NODES = (
    "NodeName=n1 Arch=x86_64 CPUTot=32 Gres=gpu:4 State=IDLE+DRAIN Partitions=gpu "
    "Reason=maint: firmware upgrade [root@2024-10-08T10:00:00]\n"
    "NodeName=n2 Arch=x86_64 CPUTot=32 Gres=gpu:4 State=ALLOCATED Partitions=gpu\n"
    "NodeName=n3 Arch=x86_64 CPUTot=32 Gres=gpu:4 State=DOWN* Partitions=gpu "
    "Reason=Not responding [slurm@2024-10-08T11:30:00]\n"
)


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def _config(d: Path) -> Config:
    """A config of cluster c4 (Slurm, UTC) with its inventory, data in ``d``."""
    (d / "inventory").mkdir()
    (d / "inventory" / "c4.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,4,a100,gpu,r1\nn2,4,a100,gpu,r1\nn3,4,a100,gpu,r1\n",
        encoding="utf-8",
    )
    (d / "goodput.toml").write_text(
        f'default_cluster = "c4"\n[warehouse]\npath = "{d}/warehouse.duckdb"\n'
        f'serving_path = "{d}/serving.duckdb"\ninputs = "{d}/inputs"\n'
        f'inventory = "{d}/inventory"\nregistry = "{d}/registry.yaml"\n'
        'partitions_start = "2024-01-01"\n'
        '[[clusters]]\nname = "c4"\nscheduler = "slurm"\ntimezone = "UTC"\n',
        encoding="utf-8",
    )
    return load_config(d / "goodput.toml")


def _files(d: Path) -> dict[str, Path]:
    """The sacct file and the node snapshot (dated 12:00 UTC by its modification time)."""
    d.mkdir(exist_ok=True)
    sacct, nodes = d / "sacct_2024-10-08.psv", d / "nodes_2024-10-08.txt"
    sacct.write_text(_SACCT, encoding="utf-8")
    nodes.write_text(_NODES, encoding="utf-8")
    noon = _utc("2024-10-08T12:00:00").timestamp()
    os.utime(nodes, (noon, noon))
    return {"sacct": sacct, "slurm-state": nodes}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("snap")
    cfg = _config(d)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, path in _files(d / "in").items():
            st = ingest_file(con, kind, path, ingest_options(cfg, kind, "c4"))
            assert st.rows_rejected == 0
        rebuild(con, cfg, full=True)
    return cfg.warehouse_path


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()


@pytest.mark.slow
def test_drained_and_down_snapshots_are_node_down_time(warehouse: Path) -> None:
    rows = _rows(
        warehouse,
        "SELECT hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s"
        " FROM analytics.occupancy_hourly WHERE cluster = 'c4' AND hour IN"
        " ('2024-10-08 10:00:00+00', '2024-10-08 11:00:00+00') ORDER BY hour",
    )
    assert rows == [
        (_H10, 43_200.0, 0.0, 14_400.0, 14_400.0),
        (_H11, 43_200.0, 7_200.0, 14_400.0, 14_400.0),
    ]
    (total,) = _rows(
        warehouse,
        "SELECT sum(planned_down_gpu_s) FROM analytics.occupancy_hourly WHERE cluster = 'c4'",
    )
    assert total == (28_800.0,)


@pytest.mark.slow
def test_waterfall_moves_the_snapshot_down_time_out_of_idle(warehouse: Path) -> None:
    got: dict[tuple[object, object], float] = {
        (hour, bucket): float(str(gpu_s))
        for hour, bucket, gpu_s in _rows(
            warehouse,
            "SELECT hour, bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE cluster = 'c4' AND hour IN ('2024-10-08 10:00:00+00',"
            " '2024-10-08 11:00:00+00') GROUP BY hour, bucket",
        )
    }
    for hour, down, planned, idle in ((_H10, 0.0, 14_400.0, 14_400.0),
                                      (_H11, 7_200.0, 14_400.0, 7_200.0)):  # fmt: skip
        assert got.get((hour, "down"), 0.0) == pytest.approx(down)
        assert got[(hour, "planned_down")] == pytest.approx(planned)
        assert got[(hour, "idle")] == pytest.approx(idle)
        assert sum(v for (h, _b), v in got.items() if h == hour) == pytest.approx(43_200.0)


@pytest.mark.slow
def test_node_reliability_counts_the_snapshot_down_time(warehouse: Path) -> None:
    rows = _rows(
        warehouse,
        "SELECT host, down_s, planned_down_s, down_episodes FROM analytics.node_reliability"
        " WHERE cluster = 'c4' AND host IN ('n1', 'n3') ORDER BY host",
    )
    assert rows == [("n1", 0.0, 7_200.0, 0), ("n3", 1_800.0, 0.0, 1)]


@pytest.mark.slow
def test_incremental_build_equals_full(tmp_path: Path) -> None:
    """The snapshot loaded first, each load built incrementally: equal to a full rebuild."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    cfg = _config(tmp_path)
    files = _files(tmp_path / "in")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind in ("slurm-state", "sacct"):
            ingest_file(con, kind, files[kind], ingest_options(cfg, kind, "c4"))
            rebuild(con, cfg)
    assert assert_equals_full_rebuild(cfg, tmp_path) > 0


# --------------------------------------------------------------------------- the rule alone


def _snapshots(*records: tuple[str, str, str, int]) -> pl.DataFrame:
    """``(record text, snapshot time, ingest_id)`` → ``raw.slurm_nodes`` rows."""
    frames = [
        parse_scontrol_nodes(
            "nodes.txt", cluster="c", text=text, snapshot_at=_utc(at)
        ).rows.with_columns(pl.lit(ingest, dtype=pl.Int64).alias("ingest_id"))
        for text, at, _label, ingest in records
    ]
    return pl.concat(frames)


def test_a_later_snapshot_with_the_node_back_ends_the_event() -> None:
    """n1 drained at 10:00 (seen 12:00), IDLE at 13:00: 10:00–13:00. A node down without a
    reason time (n4) adds nothing; an ``IDLE*`` node (not responding, not yet DOWN) neither."""
    snaps = _snapshots(
        ("NodeName=n1 Gres=gpu:4 State=IDLE+DRAIN Reason=bad gpu [root@2024-10-08T10:00:00]\n"
         "NodeName=n4 Gres=gpu:4 State=DOWN\n"
         "NodeName=n5 Gres=gpu:4 State=IDLE* Reason=odd [root@2024-10-08T09:00:00]\n",
         "2024-10-08T12:00:00", "a", 1),
        ("NodeName=n1 Gres=gpu:4 State=IDLE\n", "2024-10-08T13:00:00", "b", 2),
    )  # fmt: skip
    none = pl.DataFrame(schema={"cluster": pl.String(), "node": pl.String(),
                                "start_at": pl.Datetime("us", "UTC"),
                                "end_at": pl.Datetime("us", "UTC")})  # fmt: skip
    got = snapshot_node_events(snaps, none)
    assert got.select("node", "start_at", "end_at", "state", "reason", "gpus").rows() == [
        ("n1", _utc("2024-10-08T10:00:00"), _utc("2024-10-08T13:00:00"), "IDLE+DRAIN",
         "bad gpu", 4.0),
    ]  # fmt: skip


def test_a_cluster_with_sacctmgr_node_events_takes_none_from_snapshots() -> None:
    """sacctmgr is the system of record where it is loaded. Cluster c: n2 DOWN since 09:00
    (seen 12:00, open) with sacctmgr's n2 DOWN 09:00–10:30; n3 drained since 11:00 with an
    open sacctmgr event: the snapshots add nothing (n2 was extended 10:30 onwards, to the
    cut-off, though slurmdbd had closed that very event). Cluster d, no sacctmgr node event
    (a cluster registration is not one): its n2 drained 09:00 (seen 12:00) is 09:00–open."""
    snaps = pl.concat([
        _snapshots(
            ("NodeName=n2 Gres=gpu:8 State=DOWN Reason=xid 79 [root@2024-10-08T09:00:00]\n"
             "NodeName=n3 Gres=gpu:8 State=MIXED+DRAIN Reason=nvlink [root@2024-10-08T11:00:00]\n",
             "2024-10-08T12:00:00", "a", 1),
        ),
        _snapshots(
            ("NodeName=n2 Gres=gpu:8 State=IDLE+DRAIN Reason=xid 79 [root@2024-10-08T09:00:00]\n",
             "2024-10-08T12:00:00", "b", 2),
        ).with_columns(cluster=pl.lit("d")),
    ])  # fmt: skip
    events = pl.DataFrame(
        {
            "cluster": ["c", "c", "d"],
            "event": ["node", "node", "cluster"],
            "node": ["n2", "n3", None],
            "start_at": [_utc("2024-10-08T09:00:00"), _utc("2024-10-08T11:00:00"),
                         _utc("2024-10-01T00:00:00")],
            "end_at": [_utc("2024-10-08T10:30:00"), None, None],
        }
    )  # fmt: skip
    got = snapshot_node_events(snaps, events)
    assert got.select("cluster", "node", "start_at", "end_at").rows() == [
        ("d", "n2", _utc("2024-10-08T09:00:00"), None)
    ]


def test_a_new_reason_time_starts_a_new_event() -> None:
    """n1 drained at 10:00 (seen 11:00), drained again at 11:30 with another reason (seen
    12:00), back at 13:00: 10:00–11:30 "bad gpu", 11:30–13:00 "maint"."""
    snaps = _snapshots(
        ("NodeName=n1 Gres=gpu:4 State=IDLE+DRAIN Reason=bad gpu [root@2024-10-08T10:00:00]\n",
         "2024-10-08T11:00:00", "a", 1),
        ("NodeName=n1 Gres=gpu:4 State=IDLE+DRAIN Reason=maint [root@2024-10-08T11:30:00]\n",
         "2024-10-08T12:00:00", "b", 2),
        ("NodeName=n1 Gres=gpu:4 State=IDLE\n", "2024-10-08T13:00:00", "c", 3),
    )  # fmt: skip
    none = pl.DataFrame(schema={"cluster": pl.String(), "node": pl.String(),
                                "start_at": pl.Datetime("us", "UTC"),
                                "end_at": pl.Datetime("us", "UTC")})  # fmt: skip
    got = snapshot_node_events(snaps, none)
    assert got.select("start_at", "end_at", "reason").rows() == [
        (_utc("2024-10-08T10:00:00"), _utc("2024-10-08T11:30:00"), "bad gpu"),
        (_utc("2024-10-08T11:30:00"), _utc("2024-10-08T13:00:00"), "maint"),
    ]


# ------------------------------------------------------- the collector's daily files, as spooled

# ``pipelines/slurm/resources.py`` spools ``events_<day>.txt`` and ``nodes_<day>.txt`` each UTC
# day. Cluster c4 as above; job 300 holds n2 10-08 10:00 to 10-20 00:00 (the cut-off).
_SACCT_DAILY = _SACCT.replace("2024-10-08T12:00:00|02:00:00", "2024-10-20T00:00:00|11-14:00:00")
_DAY1 = (
    "NodeName=n1 Gres=gpu:4 State=IDLE+DRAIN Partitions=gpu "
    "Reason=maint: firmware upgrade [root@2024-10-08T10:00:00]\n"
    "NodeName=n2 Gres=gpu:4 State=ALLOCATED Partitions=gpu\n"
    "NodeName=n3 Gres=gpu:4 State=IDLE Partitions=gpu\n"
)
_DAY2 = (
    "NodeName=n1 Gres=gpu:4 State=IDLE Partitions=gpu\n"
    "NodeName=n2 Gres=gpu:4 State=ALLOCATED Partitions=gpu\n"
    "NodeName=n3 Gres=gpu:4 State=IDLE Partitions=gpu\n"
)
_EVENTS_DAY1 = (
    "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
    "c4|n1|2024-10-08T10:00:00|2024-10-08T11:00:00|DRAIN|maint: firmware upgrade|root(0)\n"
)


def _daily_planned_down(d: Path, day1_at: str, day2_at: str, *, events: bool) -> tuple[object, ...]:
    """``(planned_down GPU-s, first hour, last hour)`` of c4 built from the daily files, the
    node files dated ``day1_at`` / ``day2_at`` by their modification times."""
    cfg = _config(d)
    state = d / "in" / "c4" / "slurm_state"
    state.mkdir(parents=True)
    sacct = d / "in" / "sacct_2024-10-08.psv"
    sacct.write_text(_SACCT_DAILY, encoding="utf-8")
    files = [("sacct", sacct)]
    for name, text, at in (("nodes_2024-10-08.txt", _DAY1, day1_at),
                           ("nodes_2024-10-09.txt", _DAY2, day2_at),
                           *((("events_2024-10-08.txt", _EVENTS_DAY1, "2024-10-09T00:10:00"),)
                             if events else ())):  # fmt: skip
        path = state / name
        path.write_text(text, encoding="utf-8")
        os.utime(path, (_utc(at).timestamp(), _utc(at).timestamp()))
        files.append(("slurm-state", path))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, path in files:
            assert ingest_file(con, kind, path, ingest_options(cfg, kind, "c4")).rows_rejected == 0
        rebuild(con, cfg, full=True)
    (row,) = _rows(
        cfg.warehouse_path,
        "SELECT sum(planned_down_gpu_s), min(hour) FILTER (WHERE planned_down_gpu_s > 0),"
        " max(hour) FILTER (WHERE planned_down_gpu_s > 0) FROM analytics.occupancy_hourly"
        " WHERE cluster = 'c4'",
    )
    return row


@pytest.mark.slow
def test_a_drain_sacctmgr_closed_is_not_extended_by_a_snapshot(tmp_path: Path) -> None:
    """sacctmgr: n1 drained 10:00–11:00. The day's snapshot (10:30) shows n1 drained since
    10:00, the next day's (10-09 00:00) idle. sacctmgr's event alone: 4 GPUs × 3,600 s =
    14,400 GPU-s in hour 10 (was 201,600 over hours 10–23: the snapshot ran from 11:00 to
    the next snapshot)."""
    got = _daily_planned_down(tmp_path, "2024-10-08T10:30:00", "2024-10-09T00:00:00", events=True)
    assert got == (14_400.0, _H10, _H10)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("day1_at", "day2_at", "want"),
    [
        # as spooled: 10-08 10:00 to the idle snapshot at 10-09 00:00, 14 h × 4 × 3,600
        ("2024-10-08T10:30:00", "2024-10-09T00:00:00",
         (201_600.0, _H10, dt.datetime(2024, 10, 8, 23, tzinfo=dt.UTC))),
        # copied 10-17 12:00, in either order: dated 10-09 00:00 and 10-10 00:00 (the ends of
        # their days), 10-08 10:00 to 10-10 00:00, 38 h × 4 × 3,600 (was 10-08 10:00 to 10-17
        # 12:00:01, 3,139,204; the other order 10-17 12:00 to the cut-off, 864,000)
        ("2024-10-17T12:00:00", "2024-10-17T12:00:01",
         (547_200.0, _H10, dt.datetime(2024, 10, 9, 23, tzinfo=dt.UTC))),
        ("2024-10-17T12:00:01", "2024-10-17T12:00:00",
         (547_200.0, _H10, dt.datetime(2024, 10, 9, 23, tzinfo=dt.UTC))),
    ],
)  # fmt: skip
def test_a_copied_snapshot_is_dated_within_its_day(
    tmp_path: Path, day1_at: str, day2_at: str, want: tuple[object, ...]
) -> None:
    assert _daily_planned_down(tmp_path, day1_at, day2_at, events=False) == want


def test_snapshot_time_is_the_mtime_clamped_into_the_named_day() -> None:
    day = Path("c4/slurm_state/nodes_2024-10-08.txt")
    assert snapshot_time(day, _utc("2024-10-08T10:30:00")) == _utc("2024-10-08T10:30:00")
    assert snapshot_time(day, _utc("2024-10-17T12:00:00")) == _utc("2024-10-09T00:00:00")
    assert snapshot_time(day, _utc("2024-10-01T08:00:00")) == _utc("2024-10-08T00:00:00")
    assert snapshot_time(Path("nodes.txt"), _utc("2024-10-17T12:00:00")) == _utc(
        "2024-10-17T12:00:00"
    )
    assert snapshot_time(day, None) is None


def test_the_build_reads_state_changes_only(tmp_path: Path) -> None:
    """n1 idle 10-01 and 10-02, drained since 10-03 08:00 in the snapshots of 10-03 to 10-05,
    idle 10-06 and 10-07; n3 idle throughout; n9 down without a reason time. The statement
    keeps n1's first and last snapshot of each run (10-01, 10-02, 10-03, 10-05, 10-06, 10-07),
    nothing of n3 or n9 (it read all 21), and the event is the same: 10-03 08:00 to 10-06."""
    cfg = _config(tmp_path)
    state = tmp_path / "in" / "c4" / "slurm_state"
    state.mkdir(parents=True)
    drained = "Reason=bad gpu [root@2024-10-03T08:00:00]"
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for day in range(1, 8):
            n1 = f"IDLE+DRAIN {drained}" if 3 <= day <= 5 else "IDLE"
            path = state / f"nodes_2024-10-0{day}.txt"
            path.write_text(
                f"NodeName=n1 Gres=gpu:4 State={n1}\nNodeName=n3 Gres=gpu:4 State=IDLE\n"
                "NodeName=n9 Gres=gpu:4 State=DOWN\n",
                encoding="utf-8",
            )
            at = _utc(f"2024-10-0{day}T12:00:00").timestamp()
            os.utime(path, (at, at))
            ingest_file(con, "slurm-state", path, ingest_options(cfg, "slurm-state", "c4"))
        got = run_named(
            con, "analytics/slurm_node_snapshots", {"down_states": list(SLURM_DOWN_STATES)}
        )
        every = read_table(con, "raw.slurm_nodes")
    assert got.select("host", pl.col("snapshot_at").dt.day()).rows() == [
        ("n1", 1), ("n1", 2), ("n1", 3), ("n1", 5), ("n1", 6), ("n1", 7),
    ]  # fmt: skip
    none = pl.DataFrame(schema={"cluster": pl.String(), "node": pl.String(),
                                "start_at": pl.Datetime("us", "UTC")})  # fmt: skip
    events = snapshot_node_events(got, none)
    assert events.select("node", "start_at", "end_at").rows() == [
        ("n1", _utc("2024-10-03T08:00:00"), _utc("2024-10-06T12:00:00"))
    ]
    assert events.equals(snapshot_node_events(every, none))
