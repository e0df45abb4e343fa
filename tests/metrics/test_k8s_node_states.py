"""Kubernetes node states (metrics/k8s_node_states.py) on literal Node snapshots and Events."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from metrics.k8s_node_states import k8s_node_intervals, k8s_node_states_hourly

_UTC = pl.Datetime("us", "UTC")
_SNAP_SCHEMA = {
    "cluster": pl.String(), "name": pl.String(), "snapshot_at": _UTC,
    "gpu_allocatable": pl.Float64(), "gpu_capacity": pl.Float64(), "ready": pl.Boolean(),
    "ready_since": _UTC, "unschedulable": pl.Boolean(), "taints": pl.String(),
    "created_at": _UTC, "deleted_at": _UTC,
}  # fmt: skip
_EVENT_SCHEMA = {
    "cluster": pl.String(), "involved_kind": pl.String(), "involved_name": pl.String(),
    "reason": pl.String(), "last_seen": _UTC,
}  # fmt: skip


def t(h: int, m: int = 0, d: int = 1) -> dt.datetime:
    return dt.datetime(2026, 11, d, h, m, tzinfo=dt.UTC)


def snap(
    name: str, at: dt.datetime, *, gpus: float = 8.0, ready: bool | None = True,
    since: dt.datetime | None = None, cordon: bool = False, taints: list[str] | None = None,
    created: dt.datetime | None = None, deleted: dt.datetime | None = None,
) -> dict[str, object]:  # fmt: skip
    return {"cluster": "k", "name": name, "snapshot_at": at, "gpu_allocatable": gpus,
            "gpu_capacity": gpus, "ready": ready, "ready_since": since, "unschedulable": cordon,
            "taints": json.dumps(taints) if taints else None, "created_at": created or at,
            "deleted_at": deleted}  # fmt: skip


def frame(rows: list[dict[str, object]]) -> pl.LazyFrame:
    return pl.DataFrame(rows, schema=_SNAP_SCHEMA, orient="row").lazy()


def events(rows: list[tuple[str, str, dt.datetime]]) -> pl.LazyFrame:
    return pl.DataFrame(
        [("k", "Node", n, r, at) for n, r, at in rows], schema=_EVENT_SCHEMA, orient="row"
    ).lazy()


def hourly(
    snaps: pl.LazyFrame, as_of: dt.datetime, ev: pl.LazyFrame | None = None
) -> dict[int, tuple[float, float, float]]:
    reg, down = k8s_node_states_hourly(snaps, as_of, events=ev)
    out = reg.join(down, on=["cluster", "hour"], how="full", coalesce=True).sort("hour").collect()
    return {
        r["hour"].hour + 24 * (r["hour"].day - 1): (
            r["capacity_gpu_s"], r["down_gpu_s"], r["planned_down_gpu_s"],
        )
        for r in out.iter_rows(named=True)
    }  # fmt: skip


def test_not_ready_90_minutes_across_an_hour_boundary() -> None:
    """8-GPU node: Ready at 00:00; the 01:00 snapshot is NotReady since 00:30; the 03:00
    snapshot is Ready again since 02:00. as_of 04:00.

    Down = 00:30–02:00 (90 min): hour 0: 30 min × 60 × 8 = 14 400 GPU-s; hour 1: 3 600 × 8 =
    28 800; hours 2, 3: 0. Σ down = 43 200 = 90 × 60 × 8. Capacity: 8 × 3 600 = 28 800 each hour
    (Ready or not).
    """
    rows = [snap("n1", t(0)), snap("n1", t(1), ready=False, since=t(0, 30)),
            snap("n1", t(3), since=t(2))]  # fmt: skip
    got = hourly(frame(rows), t(4))
    assert got == {0: (28800.0, 14400.0, 0.0), 1: (28800.0, 28800.0, 0.0),
                   2: (28800.0, 0.0, 0.0), 3: (28800.0, 0.0, 0.0)}  # fmt: skip


def test_events_time_a_spell_between_daily_snapshots() -> None:
    """Daily snapshots (day 1 00:00 and day 2 00:00) both Ready since creation: alone they show
    no down time (a spell between two snapshots is not seen). Events NodeNotReady at 00:30 and
    NodeReady at 02:00 give the same 90 minutes as above: hour 0 = 14 400, hour 1 = 28 800.
    A ``Rebooted`` event at 01:00 and a NodeNotReady Event about a Pod (03:00) change nothing."""
    rows = [snap("n1", t(0)), snap("n1", t(0, d=2), created=t(0))]
    assert all(v[1] == 0.0 for v in hourly(frame(rows), t(0, d=2)).values())
    ev = events([("n1", "NodeNotReady", t(0, 30)), ("n1", "Rebooted", t(1)),
                 ("n1", "NodeReady", t(2))])  # fmt: skip
    pod = pl.LazyFrame([("k", "Pod", "n1", "NodeNotReady", t(3))], schema=_EVENT_SCHEMA,
                       orient="row")  # fmt: skip
    ev = pl.concat([ev, pod])
    got = hourly(frame(rows), t(0, d=2), ev)
    assert len(got) == 24
    assert got[0] == (28800.0, 14400.0, 0.0)
    assert got[1] == (28800.0, 28800.0, 0.0)
    assert sum(v[1] for v in got.values()) == 43200.0


def test_cordoned_node_is_planned_down() -> None:
    """4-GPU node ``c`` uncordoned at 00:00, ``spec.unschedulable`` at the 02:00 snapshot (no
    time known: it changes at that snapshot). Node ``t`` carries the cordon taint
    ``node.kubernetes.io/unschedulable:NoSchedule`` from 00:00; node ``g`` only the GPU taint
    ``nvidia.com/gpu=present:NoSchedule`` (not maintenance). Node ``d`` is cordoned and NotReady
    (down outranks planned_down). Snapshots at 00:00 and 02:00; as_of 04:00; every node 4 GPUs.

    planned_down: hours 0, 1 = t only = 4 × 3 600 = 14 400; hours 2, 3 = c + t = 28 800.
    down = d = 14 400 every hour. Capacity = 4 nodes × 4 × 3 600 = 57 600.
    """
    rows = [snap("c", t(0), gpus=4), snap("c", t(2), gpus=4, cordon=True, created=t(0))]
    for at in (t(0), t(2)):  # every node is in both snapshots
        rows += [
            snap("t", at, gpus=4, taints=["node.kubernetes.io/unschedulable:NoSchedule"]),
            snap("g", at, gpus=4, taints=["nvidia.com/gpu=present:NoSchedule"]),
            snap("d", at, gpus=4, ready=False, cordon=True, created=t(0)),
        ]  # fmt: skip
    got = hourly(frame(rows), t(4))
    assert got == {0: (57600.0, 14400.0, 14400.0), 1: (57600.0, 14400.0, 14400.0),
                   2: (57600.0, 14400.0, 28800.0), 3: (57600.0, 14400.0, 28800.0)}  # fmt: skip


def test_daily_snapshots_hold_state_between_them() -> None:
    """Snapshots at day granularity (00:00 of days 1, 2, 3). Node ``a`` (8 GPUs) is up on day 1,
    cordoned in the day-2 snapshot and uncordoned on day 3: planned_down exactly day 2, 00:00 to
    day 3, 00:00 = 24 h × 8 × 3 600 = 691 200 GPU-s (state held between snapshots). Node ``b``
    (2 GPUs) is in the day-1 snapshot only: it counts until the cluster's next snapshot (day 2,
    00:00) = 24 × 2 × 3 600 = 172 800 GPU-s of capacity. as_of = day 3, 06:00.

    Intervals of ``a``: up [d1, d2), planned_down [d2, d3), up [d3, d3 06:00).
    """
    rows = [snap("a", t(0, d=1)), snap("a", t(0, d=2), cordon=True, created=t(0)),
            snap("a", t(0, d=3), created=t(0)), snap("b", t(0, d=1), gpus=2)]  # fmt: skip
    iv = k8s_node_intervals(frame(rows), t(6, d=3)).collect()
    a = iv.filter(pl.col("name") == "a")
    planned = a.filter(pl.col("state") == "planned_down")
    assert planned.select("start_at", "end_at").rows() == [(t(0, d=2), t(0, d=3))]
    assert a.filter(pl.col("state") == "up")["end_at"].max() == t(6, d=3)
    b = iv.filter(pl.col("name") == "b")
    assert b.select("state", "start_at", "end_at").rows() == [("up", t(0, d=1), t(0, d=2))]
    got = hourly(frame(rows), t(6, d=3))
    assert sum(v[2] for v in got.values()) == 691200.0
    assert sum(v[0] for v in got.values()) == (54 * 8 + 24 * 2) * 3600.0


def test_first_snapshot_reaches_back_to_creation_and_deletion_ends_a_node() -> None:
    """Node created 00:00, first snapshot at 06:00 NotReady since 04:00: up 00:00–04:00 (it was
    Ready before going NotReady), down 04:00–06:00 and on. It is deleted at 07:30
    (``deletionTimestamp`` in a later snapshot at 07:00). as_of 09:00.

    Down: 04:00–07:30 = 3.5 h × 1 GPU × 3 600 = 12 600 GPU-s; capacity 7.5 h × 3 600 = 27 000.
    """
    rows = [snap("n", t(6), gpus=1, ready=False, since=t(4), created=t(0)),
            snap("n", t(7), gpus=1, ready=False, since=t(4), created=t(0),
                 deleted=t(7, 30))]  # fmt: skip
    got = hourly(frame(rows), t(9))
    assert sum(v[1] for v in got.values()) == 12600.0
    assert sum(v[0] for v in got.values()) == 27000.0
    assert got[3] == (3600.0, 0.0, 0.0) and got[4] == (3600.0, 3600.0, 0.0)
    assert got[7] == (1800.0, 1800.0, 0.0)


def test_nothing_after_as_of_and_repeated_snapshots_count_once() -> None:
    """One 8-GPU node, the 00:00 snapshot loaded twice, a 05:00 snapshot after the cut-off
    (ignored). as_of 01:30: capacity hour 0 = 28 800, hour 1 = 1 800 × 8 = 14 400."""
    rows = [snap("n", t(0)), snap("n", t(0)), snap("n", t(5), ready=False, since=t(4))]
    assert hourly(frame(rows), t(1, 30)) == {0: (28800.0, 0.0, 0.0), 1: (14400.0, 0.0, 0.0)}


def test_allocated_time_wins_over_down_and_cordon() -> None:
    """Node ``c`` (4 GPUs) cordoned, a pod holding 2 of its GPUs 00:00–01:30 (a cordon keeps
    running pods); node ``d`` (8 GPUs) NotReady, an 8-GPU pod on it (and on node ``u``, up,
    so 8 ÷ 2 = 4 GPUs per node) 00:00–00:15. as_of 02:00.

    c: hour 0 planned = 4 × 3 600 − 2 × 3 600 = 7 200; hour 1 = 14 400 − 2 × 1 800 = 10 800.
    d: hour 0 down = 8 × 3 600 − 4 × 900 = 25 200; hour 1 = 28 800.
    Without allocations: planned 14 400 and down 28 800 in both hours.
    """
    rows = [snap("c", t(0), gpus=4, cordon=True), snap("d", t(0), ready=False),
            snap("u", t(0))]  # fmt: skip
    alloc = pl.LazyFrame(
        [("k", ["c"], 2.0, t(0), t(1, 30)), ("k", ["d", "u"], 8.0, t(0), t(0, 15))],
        schema={"cluster": pl.String(), "node_list": pl.List(pl.String()), "gpus": pl.Float64(),
                "start_at": _UTC, "end_at": _UTC},
        orient="row",
    )  # fmt: skip
    _, down = k8s_node_states_hourly(frame(rows), t(2), allocations=alloc)
    got = down.collect().select("down_gpu_s", "planned_down_gpu_s").rows()
    assert got == [(25200.0, 7200.0), (28800.0, 10800.0)]
    _, plain = k8s_node_states_hourly(frame(rows), t(2))
    assert plain.collect().select("down_gpu_s", "planned_down_gpu_s").rows() == [
        (28800.0, 14400.0), (28800.0, 14400.0),
    ]  # fmt: skip


def test_allocations_win_per_instant_not_per_node_hour() -> None:
    """Two 8-GPU nodes, hour 00:00–01:00 (as_of 01:00); allocated time is taken off per node
    and instant, as for Slurm's node events:

    - ``c``: cordoned 00:00–00:30 (snapshot 00:00 cordoned, 00:30 not), an 8-GPU pod on it
      00:30–01:00: planned_down 8 × 1 800 = 14 400 (no pod during the cordon), allocated
      14 400, idle 0.
    - ``d``: NotReady 00:00–00:30, then Ready but cordoned, a 4-GPU pod on it from 00:30 still
      running (NULL end: to as_of): down 8 × 1 800 = 14 400; planned_down (8 − 4) × 1 800 =
      7 200; allocated 7 200; idle 0.

    Hour 0: capacity 2 × 8 × 3 600 = 57 600, allocated 21 600, down 14 400, planned_down 21 600,
    idle 0. Per node-hour (the rule before): c planned = 14 400 − max(0, 14 400 − 0) = 0; d
    down = max(0, 14 400 − 7 200) = 7 200 and planned = 14 400 − max(0, 7 200 − 14 400) =
    14 400; and the running pod's −4 GPUs were stepped at its NULL end, before its +4, so it
    took nothing off: down 14 400, planned_down 14 400, idle 57 600 − 21 600 − 28 800 = 7 200.
    """
    rows = [snap("c", t(0), cordon=True), snap("c", t(0, 30)),
            snap("d", t(0), ready=False),
            snap("d", t(0, 30), since=t(0, 30), cordon=True)]  # fmt: skip
    alloc = pl.LazyFrame(
        [("k", ["c"], 8.0, t(0, 30), t(1)), ("k", ["d"], 4.0, t(0, 30), None)],
        schema={"cluster": pl.String(), "node_list": pl.List(pl.String()), "gpus": pl.Float64(),
                "start_at": _UTC, "end_at": _UTC},
        orient="row",
    )  # fmt: skip
    reg, down = k8s_node_states_hourly(frame(rows), t(1), allocations=alloc)
    (cap,) = reg.collect()["capacity_gpu_s"].to_list()
    ((d, p),) = down.collect().select("down_gpu_s", "planned_down_gpu_s").rows()
    assert (cap, d, p) == (57600.0, 14400.0, 21600.0)
    assert cap - 21600.0 - d - p == 0.0  # idle
