"""The GPU-time waterfall (METRICS.md) on literal frames with hand-computed values."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics import (
    LossPolicy,
    attempt_outcomes,
    check_conservation,
    gpu_waterfall_hourly,
    headline_ratios,
)
from metrics.schema import WATERFALL_LEAVES

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")
H = 3600.0

Row = tuple[str, str, float, dt.datetime | None, dt.datetime | None, list[str]]


def _t(h: int, m: int = 0, day: int = 1) -> dt.datetime:
    return dt.datetime(2026, 1, day, h, m, tzinfo=UTC)


def _attempts(rows: list[Row], eligible: list[dt.datetime | None] | None = None) -> pl.LazyFrame:
    """Rows of (job_id, state, gpus, start, end, nodes); eligible defaults to the start."""
    n = len(rows)
    return pl.DataFrame(
        {
            "cluster": ["c"] * n,
            "job_id": [r[0] for r in rows],
            "attempt": [0] * n,
            "partition": ["gpu"] * n,
            "team": ["t"] * n,
            "state": [r[1] for r in rows],
            "gpus": [r[2] for r in rows],
            "req_gpus": [r[2] for r in rows],
            "eligible_at": eligible if eligible is not None else [r[3] for r in rows],
            "start_at": [r[3] for r in rows],
            "end_at": [r[4] for r in rows],
            "node_list": [r[5] for r in rows],
        },
        schema_overrides={"eligible_at": TS, "start_at": TS, "end_at": TS},
    ).lazy()


def _capacity(
    hours: list[dt.datetime], gpus: float, down: float = 0.0, planned: float = 0.0
) -> pl.LazyFrame:
    n = len(hours)
    return pl.DataFrame(
        {
            "cluster": ["c"] * n,
            "hour": hours,
            "capacity_gpu_s": [gpus * H] * n,
            "down_gpu_s": [down] * n,
            "planned_down_gpu_s": [planned] * n,
        },
        schema_overrides={"hour": TS},
    ).lazy()


def _pending(rows: list[tuple[float, dt.datetime, dt.datetime | None]]) -> pl.LazyFrame:
    """Never-started rows of (req_gpus, eligible, cancel time or None)."""
    n = len(rows)
    return pl.DataFrame(
        {
            "cluster": ["c"] * n,
            "job_id": [f"p{i}" for i in range(n)],
            "partition": ["gpu"] * n,
            "team": ["t"] * n,
            "req_gpus": [r[0] for r in rows],
            "eligible_at": [r[1] for r in rows],
            "end_at": [r[2] for r in rows],
            "state": ["PENDING" if r[2] is None else "CANCELLED" for r in rows],
        },
        schema_overrides={"eligible_at": TS, "end_at": TS},
    ).lazy()


def _leaves(wf: pl.LazyFrame, hour: dt.datetime) -> dict[str, float]:
    df = wf.collect().filter(pl.col("hour") == hour)
    return dict(zip(df["leaf"].cast(pl.String).to_list(), df["gpu_s"].to_list(), strict=True))


def test_every_leaf_in_metrics_order_and_the_hour_is_conserved() -> None:
    """8 GPUs × 1 h = 28800 GPU-s; down 3600, planned_down 3600. 1-GPU attempts in hour 0:
    COMPLETED 60 min → goodput 3600; NODE_FAIL 30 min → infra 1800; FAILED (no XID) 30 min and
    OUT_OF_MEMORY 10 min → user 1800 + 600 = 2400; PREEMPTED 20 min → 1200; TIMEOUT 10 min →
    600; CANCELLED 15 min → 900. Allocated = 3600+1800+2400+1200+600+900 = 10500. Unallocated =
    28800 − 3600 − 3600 − 10500 = 11100. A 2-GPU job pends all hour; held is free GPUs while it
    waits, on the time axis, with 21600 ÷ 3600 = 6 GPUs available on average (down time spread
    over the hour): allocated 7 GPUs 00:00–00:10 (0 free), 5 to 00:15 (1), 4 to 00:20 (2), 3 to
    00:30 (3), 1 to 01:00 (5) → held = 1×300 + 2×300 + 2×600 + 2×1800 = 5700, idle 5400. Leaves
    sum to 28800."""
    att = _attempts(
        [
            ("1", "COMPLETED", 1.0, _t(0), _t(1), ["n1"]),
            ("2", "NODE_FAIL", 1.0, _t(0), _t(0, 30), ["n1"]),
            ("3", "FAILED", 1.0, _t(0), _t(0, 30), ["n1"]),
            ("4", "OUT_OF_MEMORY", 1.0, _t(0), _t(0, 10), ["n1"]),
            ("5", "PREEMPTED", 1.0, _t(0), _t(0, 20), ["n1"]),
            ("6", "TIMEOUT", 1.0, _t(0), _t(0, 10), ["n1"]),
            ("7", "CANCELLED by 42", 1.0, _t(0), _t(0, 15), ["n1"]),
        ]
    )
    wf = gpu_waterfall_hourly(
        att,
        _capacity([_t(0)], 8.0, down=H, planned=H),
        _t(2),
        pending=_pending([(2.0, _t(0), None)]),
    )
    expected = pl.DataFrame(
        {
            "leaf": list(WATERFALL_LEAVES),
            "gpu_s": [3600.0, 3600.0, 1800.0, 2400.0, 1200.0, 600.0, 900.0, 0.0, 3600.0,
                      5700.0, 5400.0],
        }
    )  # fmt: skip
    out = wf.collect().select(pl.col("leaf").cast(pl.String), "gpu_s")
    assert_frame_equal(out, expected)
    assert check_conservation(wf).collect().is_empty()


def test_failed_attempt_is_infra_only_with_an_xid_on_its_nodes_in_its_last_10_minutes() -> None:
    """Three FAILED attempts end at 01:00. A (nodes n1, n2): XID on n2 at 00:52 → infra.
    B (n3): XID at 00:45, 15 min before its end → user. C (n4): XID at 01:05, after its end →
    user. XID events on other nodes never count."""
    att = _attempts(
        [
            ("A", "FAILED", 8.0, _t(0), _t(1), ["n1", "n2"]),
            ("B", "FAILED", 8.0, _t(0), _t(1), ["n3"]),
            ("C", "FAILED", 8.0, _t(0), _t(1), ["n4"]),
        ]
    )
    xid = pl.DataFrame(
        {
            "cluster": ["c", "c", "c", "c"],
            "host": ["n2", "n3", "n4", "n9"],
            "ts": [_t(0, 52), _t(0, 45), _t(1, 5), _t(0, 59)],
            "xid": [79, 48, 79, 79],
        },
        schema_overrides={"ts": TS},
    ).lazy()
    out = attempt_outcomes(att, _t(2), xid_events=xid).sort("job_id").collect()
    assert out["leaf"].cast(pl.String).to_list() == [
        "failed_work_infra",
        "failed_work_user",
        "failed_work_user",
    ]


def _s(h: int, m: int, sec: int) -> dt.datetime:
    return dt.datetime(2026, 1, 1, h, m, sec, tzinfo=UTC)


def test_an_xid_first_scraped_just_after_a_failed_end_may_have_killed_it() -> None:
    """Hour 10:00, 10 GPUs (36,000 GPU-s). Five FAILED 2-GPU attempts 10:00–10:30 (3,600 GPU-s
    each), one per node; an XID on each node first scraped after the end (raised after r):
    n1 at 10:30:20, scrape before 10:30:05 (15-s scrape): r = 10:30:05 − 30 s = 10:29:35 <
    10:30 → infra. n2 at 10:31:00, scrape before 10:30:45: r = 10:30:15, after the end (that
    scrape saw none, collected at or after 10:30:15) → user. n3 at 10:31:00, scrape before
    unknown: r = 10:31:00 − 90 s = 10:29:30 → infra. n4 at 10:34:00 (5-minute snapshots),
    scrape before 10:29:00: r = max(10:28:30, 10:34:00 − 330 s) = 10:28:30 → infra. n5 at
    10:31:40, scrape before unknown: r = 10:30:10 → user. failed_work_infra 3 × 3,600 =
    10,800, failed_work_user 2 × 3,600 = 7,200, idle 18,000 (before: infra 0, user 18,000:
    only events at or before the end counted)."""
    att = _attempts([(f"{i}", "FAILED", 2.0, _t(10), _t(10, 30), [f"n{i}"]) for i in range(1, 6)])
    xid = pl.DataFrame(
        {
            "cluster": ["c"] * 5,
            "host": ["n1", "n2", "n3", "n4", "n5"],
            "ts": [_s(10, 30, 20), _s(10, 31, 0), _s(10, 31, 0), _s(10, 34, 0), _s(10, 31, 40)],
            "xid": [79] * 5,
            "prev_ts": [_s(10, 30, 5), _s(10, 30, 45), None, _s(10, 29, 0), None],
        },
        schema_overrides={"ts": TS, "prev_ts": TS},
    ).lazy()
    out = attempt_outcomes(att, _t(12), xid_events=xid).sort("job_id").collect()
    assert out["leaf"].cast(pl.String).to_list() == [
        "failed_work_infra",
        "failed_work_user",
        "failed_work_infra",
        "failed_work_infra",
        "failed_work_user",
    ]
    wf = gpu_waterfall_hourly(att, _capacity([_t(10)], 10.0), _t(12), xid_events=xid)
    leaves = _leaves(wf, _t(10))
    assert (leaves["failed_work_infra"], leaves["failed_work_user"], leaves["idle"]) == (
        10800.0,
        7200.0,
        18000.0,
    )


def test_attempt_crossing_an_hour_and_a_day_boundary_is_clipped_to_each_hour() -> None:
    """2 GPUs COMPLETED from day 1 23:30 to day 2 01:15, 4 GPUs of capacity (14400 per hour).
    Goodput: 23:00 → 2×1800 = 3600; day 2 00:00 → 2×3600 = 7200; 01:00 → 2×900 = 1800.
    Idle: 10800, 7200, 12600. Each hour is conserved."""
    hours = [_t(23), _t(0, day=2), _t(1, day=2)]
    att = _attempts([("1", "COMPLETED", 2.0, _t(23, 30), _t(1, 15, day=2), ["n1"])])
    wf = gpu_waterfall_hourly(att, _capacity(hours, 4.0), _t(6, day=2))
    got = [(_leaves(wf, h)["goodput"], _leaves(wf, h)["idle"]) for h in hours]
    assert got == [(3600.0, 10800.0), (7200.0, 7200.0), (1800.0, 12600.0)]
    assert check_conservation(wf).collect().is_empty()


def test_running_attempt_counts_as_goodput_until_as_of() -> None:
    """as_of 00:30. A RUNNING 2-GPU attempt from 00:00 (no end) and a 1-GPU attempt whose
    recorded end (FAILED at 00:50) lies after as_of: both are running at as_of, so goodput =
    2×1800 + 1×1800 = 5400 and nothing is lost yet."""
    att = _attempts(
        [
            ("1", "RUNNING", 2.0, _t(0), None, ["n1"]),
            ("2", "FAILED", 1.0, _t(0), _t(0, 50), ["n1"]),
        ]
    )
    leaves = _leaves(gpu_waterfall_hourly(att, _capacity([_t(0)], 8.0), _t(0, 30)), _t(0))
    assert leaves["goodput"] == 5400.0
    assert leaves["failed_work_user"] == 0.0


def test_checkpoint_policy_loses_only_the_tail_since_the_last_checkpoint() -> None:
    """PREEMPTED 1 GPU 00:00–01:30 (5400 s). whole_attempt: preempted 3600 + 1800.
    checkpoint Δ = 1200 s, u0 = 300 s: lost = min(5400, 600 + 300) = 900 s, the tail
    01:15–01:30 → preempted 900 in hour 1; the rest is goodput: 3600 in hour 0, 900 in hour 1.
    A TIMEOUT attempt of 600 s (< 900) loses all 600 under either policy."""
    att = _attempts(
        [
            ("1", "PREEMPTED", 1.0, _t(0), _t(1, 30), ["n1"]),
            ("2", "TIMEOUT", 1.0, _t(0), _t(0, 10), ["n1"]),
        ]
    )
    cap = _capacity([_t(0), _t(1)], 4.0)
    whole = gpu_waterfall_hourly(att, cap, _t(3))
    ckpt = gpu_waterfall_hourly(att, cap, _t(3), policy=LossPolicy("checkpoint", 1200.0, 300.0))
    assert (_leaves(whole, _t(0))["preempted_work"], _leaves(whole, _t(1))["preempted_work"]) == (
        3600.0,
        1800.0,
    )
    h0, h1 = _leaves(ckpt, _t(0)), _leaves(ckpt, _t(1))
    assert (h0["preempted_work"], h0["goodput"], h0["timeout_work"]) == (0.0, 3600.0, 600.0)
    assert (h1["preempted_work"], h1["goodput"]) == (900.0, 900.0)


def test_allocated_idle_only_where_telemetry_exists_and_headline_ratios() -> None:
    """Capacity 4 GPUs (14400). Job 1: 2 GPUs 00:00–00:15 with activity 0.01 at 00:00 (below
    θ = 0.05 → allocated_idle 2×300 = 600), 0.5 at 00:05 (observed goodput 600, active 300), no
    sample at 00:10 (unobserved goodput 600). Job 2: 1 GPU 00:00–00:15, no telemetry → goodput
    900. allocated = 2700, goodput = 2100, observed allocated = 1200.
    occupancy = 2700/14400 = 0.1875; goodput ratio = 2100/14400; allocated activity =
    (0.01×600 + 0.5×600)/1200 = 0.255; telemetry coverage = 1200/2700; goodput coverage =
    600/2100."""
    att = _attempts(
        [
            ("1", "COMPLETED", 2.0, _t(0), _t(0, 15), ["n1"]),
            ("2", "COMPLETED", 1.0, _t(0), _t(0, 15), ["n1"]),
        ]
    )
    activity = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "job_id": ["1", "1"],
            "attempt": [0, 0],
            "bucket": [_t(0), _t(0, 5)],
            "activity": [0.01, 0.5],
            "gpus": [2.0, 2.0],
        },
        schema_overrides={"bucket": TS},
    ).lazy()
    wf = gpu_waterfall_hourly(att, _capacity([_t(0)], 4.0), _t(1), activity=activity)
    leaves = _leaves(wf, _t(0))
    assert (leaves["allocated_idle"], leaves["goodput"], leaves["idle"]) == (600.0, 2100.0, 11700.0)
    r = headline_ratios(wf).collect().row(0, named=True)
    assert r["occupancy"] == pytest.approx(0.1875)
    assert r["goodput_ratio"] == pytest.approx(2100 / 14400)
    assert r["allocated_activity"] == pytest.approx(0.255)
    assert r["telemetry_coverage"] == pytest.approx(1200 / 2700)
    assert r["goodput_telemetry_coverage"] == pytest.approx(600 / 2100)


def test_held_counts_pending_waits_and_is_capped_by_unallocated_time() -> None:
    """Hour 0, 4 GPUs (14400). A 1-GPU attempt eligible 00:00 runs 00:30–01:00 (goodput 1800;
    its wait adds 1×1800 demand); a 1-GPU job cancelled while pending at 00:15 adds 900.
    Unallocated 12600, demand 2700 → held 2700, idle 9900. Hour 1: a 16-GPU job pending all
    hour asks 57600 > unallocated 14400 → held 14400, idle 0."""
    att = _attempts([("1", "COMPLETED", 1.0, _t(0, 30), _t(1), ["n1"])], eligible=[_t(0)])
    pend = _pending([(1.0, _t(0), _t(0, 15)), (16.0, _t(1), None)])
    wf = gpu_waterfall_hourly(att, _capacity([_t(0), _t(1)], 4.0), _t(2), pending=pend)
    h0, h1 = _leaves(wf, _t(0)), _leaves(wf, _t(1))
    assert (h0["goodput"], h0["held"], h0["idle"]) == (1800.0, 2700.0, 9900.0)
    assert (h1["held"], h1["idle"]) == (14400.0, 0.0)


def test_allocation_beyond_capacity_is_reported_not_clipped() -> None:
    """1 GPU of capacity (3600) but a 2-GPU attempt all hour: goodput 7200, held = idle = 0,
    so the leaves sum to 7200 and check_conservation reports diff +3600 (> 0.1 % of 3600)."""
    att = _attempts([("1", "COMPLETED", 2.0, _t(0), _t(1), ["n1"])])
    wf = gpu_waterfall_hourly(att, _capacity([_t(0)], 1.0), _t(2))
    bad = check_conservation(wf).collect()
    assert bad.select("capacity_gpu_s", "leaves_gpu_s", "diff_gpu_s").row(0) == (
        3600.0,
        7200.0,
        3600.0,
    )


def test_checkpoint_policy_needs_an_interval() -> None:
    """``checkpoint`` without Δ > 0, or a negative restart overhead, is a ValueError."""
    with pytest.raises(ValueError, match="checkpoint_interval_s"):
        LossPolicy("checkpoint")
    with pytest.raises(ValueError, match="restart_overhead_s"):
        LossPolicy("checkpoint", 600.0, -1.0)


def test_capacity_rows_set_the_window_and_long_spans_are_cut_to_it() -> None:
    """Capacity rows only for hour 01:00 (4 GPUs). A 1-GPU attempt 00:00–03:00 adds 3600
    goodput there and nothing elsewhere; a 2-GPU job pending 00:00–02:30 holds 7200 of the
    10800 unallocated GPU-s in that hour. Only hour 01:00 is in the output (11 leaves)."""
    att = _attempts([("1", "COMPLETED", 1.0, _t(0), _t(3), ["n1"])])
    pend = _pending([(2.0, _t(0), _t(2, 30))])
    wf = gpu_waterfall_hourly(att, _capacity([_t(1)], 4.0), _t(4), pending=pend)
    out = wf.collect()
    assert out.height == len(WATERFALL_LEAVES)
    leaves = _leaves(wf, _t(1))
    assert (leaves["goodput"], leaves["held"], leaves["idle"]) == (3600.0, 7200.0, 3600.0)


def test_held_is_free_gpus_while_demand_waits_on_the_time_axis() -> None:
    """Hour 0, 8 GPUs (28,800). A 4-GPU job runs all hour and a 2-GPU job 00:00–00:20; an 8-GPU
    job is eligible at 00:30 and starts at 01:30. By hand: allocated 14,400 + 2,400 = 16,800,
    unallocated 12,000. Before 00:30 nothing waits: 2 free GPUs × 1,200 s + 4 × 600 s = 4,800
    idle. 00:30–01:00: 4 free GPUs while 8 are asked, held 4 × 1,800 = 7,200. (The hour's totals
    alone, min(12,000, 8 × 1,800 = 14,400), made all 12,000 held.) Hour 1: 4 free GPUs while the
    8-GPU job waits until 01:30: held 7,200; then it runs and nothing is free."""
    att = _attempts(
        [
            ("1", "COMPLETED", 4.0, _t(0), _t(2), ["n1"]),
            ("2", "COMPLETED", 2.0, _t(0), _t(0, 20), ["n1"]),
            ("3", "COMPLETED", 4.0, _t(1, 30), _t(2), ["n1"]),
        ],
        eligible=[_t(0), _t(0), _t(0, 30)],
    )
    # the 8-GPU job asks 8 (req_gpus) and got 4 more beside job 1 once it ran: its wait asks 8
    att = att.with_columns(
        pl.when(pl.col("job_id") == "3").then(8.0).otherwise(pl.col("req_gpus")).alias("req_gpus")
    )
    wf = gpu_waterfall_hourly(att, _capacity([_t(0), _t(1)], 8.0), _t(3))
    h0, h1 = _leaves(wf, _t(0)), _leaves(wf, _t(1))
    assert (h0["goodput"], h0["held"], h0["idle"]) == (16800.0, 7200.0, 4800.0)
    assert (h1["goodput"], h1["held"], h1["idle"]) == (14400.0 + 7200.0, 7200.0, 0.0)


def test_held_in_the_cut_off_hour_stops_at_the_cut_off() -> None:
    """Hour 0, 4 GPUs (14,400), the cut-off at 00:30. A 1-GPU job runs 00:00–00:30 and a 2-GPU
    job waits from 00:10: held = min(3 free, 2 asked) × 1,200 = 2,400 (nothing waits after the
    cut-off); idle = 14,400 − 1,800 − 2,400 = 10,200."""
    att = _attempts([("1", "COMPLETED", 1.0, _t(0), _t(0, 30), ["n1"])])
    wf = gpu_waterfall_hourly(
        att, _capacity([_t(0)], 4.0), _t(0, 30), pending=_pending([(2.0, _t(0, 10), None)])
    )
    h0 = _leaves(wf, _t(0))
    assert (h0["goodput"], h0["held"], h0["idle"]) == (1800.0, 2400.0, 10200.0)
    assert sum(h0.values()) == 14400.0


def test_held_of_an_hour_before_a_gap_in_the_capacity_rows_is_that_hour_s() -> None:
    """8 GPUs; an 8-GPU job waits from day 1 23:30 to day 2 12:00. Capacity rows of days 1 and 3
    only (an incremental build's unit of two days of one month) give day 1 23:00 what a window of
    three whole days gives it: held 8 × 1,800 = 14,400, idle 14,400 (the wait's hours in the gap
    are no hour's)."""

    def hours(day: int) -> list[dt.datetime]:
        return [_t(h, day=day) for h in range(24)]

    pend = _pending([(8.0, _t(23, 30, day=1), _t(12, 0, day=2))])
    att = _attempts([("1", "COMPLETED", 1.0, _t(12, day=2), _t(13, day=2), ["n1"])])
    for days in ([1, 2, 3], [1, 3]):
        cap = _capacity([h for d in days for h in hours(d)], 8.0)
        wf = gpu_waterfall_hourly(att, cap, _t(0, day=5), pending=pend)
        h = _leaves(wf, _t(23, day=1))
        assert (h["held"], h["idle"]) == (14400.0, 14400.0), days


def test_held_of_a_lent_cluster_counts_the_gpus_its_cap_frees() -> None:
    """8 lent GPUs; an 8-GPU Slurm attempt all hour on a node no slurmd pod held, and 8 GPUs asked
    all hour. With the allocation cut to 0 (``allocated_cap``) the 8 GPUs are free while 8 wait:
    held 28,800; cut to 14,400: 4 GPUs on average are free, held 14,400."""
    att = _attempts([("1", "COMPLETED", 8.0, _t(0), _t(1), ["n9"])])
    pend = _pending([(8.0, _t(0), None)])
    for cap_s, goodput, held in ((0.0, 0.0, 28800.0), (14400.0, 14400.0, 14400.0)):
        lent = pl.DataFrame(
            {"cluster": ["c"], "hour": [_t(0)], "allocated_gpu_s": [cap_s]},
            schema_overrides={"hour": TS},
        ).lazy()
        wf = gpu_waterfall_hourly(
            att, _capacity([_t(0)], 8.0), _t(2), pending=pend, allocated_cap=lent
        )
        h = _leaves(wf, _t(0))
        assert (h["goodput"], h["held"], h["idle"]) == (goodput, held, 0.0)


def _nodes(gpus: list[float]) -> pl.LazyFrame:
    """The cluster's nodes (``cluster, host, gpus``), one a GPU count."""
    return pl.LazyFrame(
        {"cluster": ["c"] * len(gpus), "host": [f"n{i}" for i in range(len(gpus))], "gpus": gpus}
    )


def test_held_for_gangs_is_free_gpus_while_gangs_wait_on_the_time_axis() -> None:
    """2 nodes × 8 GPUs = 16 GPUs, hour 10:00–11:00 (57,600 GPU-s). An 8-GPU job runs all hour
    (8 free). A 16-GPU job (wider than one node of 8: a gang of 2 nodes) waits 10:00–10:30 and
    is cancelled; a 4-GPU job waits 10:30–11:00.

    held = min(8 free, 16 asked) × 1,800 + min(8 free, 4 asked) × 1,800 = 14,400 + 7,200
    = 21,600 GPU-s; idle = 57,600 − 28,800 − 21,600 = 7,200.
    held for gangs = min(8 free, 16 asked by gangs) × 1,800 + min(8, 0) × 1,800 = 14,400 on the
    ``held`` row (the hour's bound, min(held 21,600, gang demand 16 × 1,800 = 28,800), made all
    21,600 held for gangs though the 4-GPU job's 7,200 came after the gang left); held other =
    21,600 − 14,400 = 7,200. Every other leaf has 0 gang GPU-seconds."""
    att = _attempts([("1", "COMPLETED", 8.0, _t(10), _t(11), ["n0"])])
    pend = _pending([(16.0, _t(10), _t(10, 30)), (4.0, _t(10, 30), _t(11))])
    wf = gpu_waterfall_hourly(
        att, _capacity([_t(10)], 16.0), _t(11), pending=pend, nodes=_nodes([8.0, 8.0])
    ).collect()
    rows = {r["leaf"]: r for r in wf.with_columns(pl.col("leaf").cast(pl.String)).to_dicts()}
    assert (rows["goodput"]["gpu_s"], rows["held"]["gpu_s"], rows["idle"]["gpu_s"]) == (
        28800.0, 21600.0, 7200.0,
    )  # fmt: skip
    assert rows["held"]["gang_gpu_s"] == 14400.0
    assert rows["held"]["gpu_s"] - rows["held"]["gang_gpu_s"] == 7200.0
    assert sum(r["gang_gpu_s"] for r in rows.values()) == 14400.0
    # Without the nodes no wait is known to be a gang's: 0 held for gangs.
    bare = gpu_waterfall_hourly(att, _capacity([_t(10)], 16.0), _t(11), pending=pend).collect()
    assert bare["gang_gpu_s"].sum() == 0.0


def test_held_for_gangs_stays_within_held_when_unallocated_time_caps_held() -> None:
    """2 nodes × 8 GPUs, hour 10:00–11:00, with 14,400 GPU-s down: 12 GPUs available on
    average. A 16-GPU job runs 10:00–10:15 (more than the 12: 0 free), then nothing (12 free). A
    16-GPU gang waits all hour. On the time axis 12 × 2,700 = 32,400 GPU-s are free while it
    waits, above unallocated = 57,600 − 14,400 − 16 × 900 = 28,800: held = 28,800, idle 0, and
    held for gangs = min(held 28,800, 32,400) = 28,800, held other 0 (never negative)."""
    att = _attempts([("1", "COMPLETED", 16.0, _t(10), _t(10, 15), ["n0", "n1"])])
    pend = _pending([(16.0, _t(10), None)])
    wf = gpu_waterfall_hourly(
        att, _capacity([_t(10)], 16.0, down=14400.0), _t(11), pending=pend,
        nodes=_nodes([8.0, 8.0]),
    ).collect()  # fmt: skip
    held = wf.filter(pl.col("leaf") == "held").row(0, named=True)
    idle = wf.filter(pl.col("leaf") == "idle").row(0, named=True)
    assert (held["gpu_s"], held["gang_gpu_s"], idle["gpu_s"]) == (28800.0, 28800.0, 0.0)


def _holds(rows: list[tuple[str, dt.datetime, dt.datetime | None, float]]) -> pl.LazyFrame:
    """Pieces of held GPUs (job_id, start, end, gpus) of cluster ``c``, attempt 0."""
    return pl.DataFrame(
        {
            "cluster": ["c"] * len(rows),
            "job_id": [r[0] for r in rows],
            "attempt": [0] * len(rows),
            "start_at": [r[1] for r in rows],
            "end_at": [r[2] for r in rows],
            "gpus": [r[3] for r in rows],
        },
        schema_overrides={"start_at": TS, "end_at": TS},
    ).lazy()


def test_a_gang_s_leaves_are_its_pieces_of_held_gpus_grace_period_included() -> None:
    """PREEMPTED gang, 16 GPUs, 00:00 - 01:00 (the eviction); its pods held 8 GPUs 00:00 -
    00:30, 16 GPUs 00:30 - 01:00 and 8 GPUs on through a 60 s grace period, 01:00 - 01:01.
    Whole-attempt loss: preempted = 8 x 1,800 + 16 x 1,800 = 43,200 in hour 0 (not 16 x 3,600
    = 57,600) and 8 x 60 = 480 in hour 1 (Σ 43,680 = the pieces' GPU-seconds). Capacity 16
    GPUs: idle 14,400 and 57,120, every hour conserved. A Slurm job beside it (no pieces:
    1 GPU 00:00 - 00:30, COMPLETED) stays goodput 1,800."""
    att = _attempts(
        [
            ("g", "PREEMPTED", 16.0, _t(0), _t(1), ["n1", "n2"]),
            ("s", "COMPLETED", 1.0, _t(0), _t(0, 30), ["n3"]),
        ]
    )
    holds = _holds([("g", _t(0), _t(0, 30), 8.0), ("g", _t(0, 30), _t(1), 16.0),
                    ("g", _t(1), _t(1, 1), 8.0)])  # fmt: skip
    wf = gpu_waterfall_hourly(att, _capacity([_t(0), _t(1)], 17.0), _t(3), holds=holds)
    h0, h1 = _leaves(wf, _t(0)), _leaves(wf, _t(1))
    assert (h0["preempted_work"], h0["goodput"], h0["idle"]) == (43_200.0, 1_800.0, 16_200.0)
    assert (h1["preempted_work"], h1["goodput"], h1["idle"]) == (480.0, 0.0, 60_720.0)
    assert check_conservation(wf).collect().height == 0


def test_allocated_idle_of_a_gang_is_observed_on_the_gpus_it_held() -> None:
    """COMPLETED gang, 16 GPUs, 00:00 - 01:00; one worker (8 GPUs) held 00:00 - 00:30, both
    (16) 00:30 - 01:00. Its telemetry: every 5-minute bucket idle (activity 0), all GPUs
    (``gpus`` NULL). allocated_idle = 8 x 1,800 + 16 x 1,800 = 43,200 = its allocation, goodput
    0 (with the attempt's 16 GPUs in every bucket, allocated_idle was 57,600 and goodput
    −14,400). Capacity 16 GPUs: idle 14,400."""
    att = _attempts([("g", "COMPLETED", 16.0, _t(0), _t(1), ["n1", "n2"])])
    holds = _holds([("g", _t(0), _t(0, 30), 8.0), ("g", _t(0, 30), _t(1), 16.0)])
    buckets = [_t(0, m) for m in range(0, 60, 5)]
    activity = pl.DataFrame(
        {
            "cluster": ["c"] * 12,
            "job_id": ["g"] * 12,
            "attempt": [0] * 12,
            "bucket": buckets,
            "activity": [0.0] * 12,
            "gpus": [None] * 12,
        },
        schema_overrides={"bucket": TS, "gpus": pl.Float64()},
    ).lazy()
    wf = gpu_waterfall_hourly(att, _capacity([_t(0)], 16.0), _t(2), activity=activity, holds=holds)
    h0 = _leaves(wf, _t(0))
    assert (h0["allocated_idle"], h0["goodput"], h0["idle"]) == (43_200.0, 0.0, 14_400.0)
    assert check_conservation(wf).collect().height == 0


def test_a_het_job_wider_than_a_node_is_a_gang_whatever_its_components() -> None:
    """2 nodes × 8 GPUs, hour 10:00–11:00; an 8-GPU job runs all hour (8 free). Het job 300
    (300+0 and 300+1, 8 GPUs each: neither wider than one node) waits 10:00–10:30 and is
    cancelled. Slurm starts the components together, so it is one wait of 16 GPUs, a gang's:
    held = min(8 free, 16 asked) × 1,800 = 14,400 and all of it held for gangs (before: two
    one-node waits, held for gangs 0; held 14,400 either way)."""
    att = _attempts([("1", "COMPLETED", 8.0, _t(10), _t(11), ["n0"])])
    pend = _pending([(8.0, _t(10), _t(10, 30)), (8.0, _t(10), _t(10, 30))]).with_columns(
        job_id=pl.Series(["300+0", "300+1"])
    )
    wf = gpu_waterfall_hourly(
        att, _capacity([_t(10)], 16.0), _t(11), pending=pend, nodes=_nodes([8.0, 8.0])
    ).collect()
    held = wf.filter(pl.col("leaf").cast(pl.String) == "held").row(0, named=True)
    assert (held["gpu_s"], held["gang_gpu_s"]) == (14400.0, 14400.0)


def test_a_het_job_partly_running_holds_only_its_pending_components_gpus() -> None:
    """4 nodes × 8 GPUs = 32 GPUs, hour 10:00–11:00 (115,200 GPU-s), cut-off 11:00. Het job 7:
    7+0 (8 GPUs) eligible 10:00, started 10:30 on n0, still running; 7+1 (8 GPUs) eligible
    10:00, still pending. 7+0's GPUs are allocated from 10:30, not pending demand:
    10:00–10:30: 32 free, 16 asked (a gang's: 16 > 8) → 16 × 1,800 = 28,800 held, for gangs;
    10:30–11:00: 24 free, 8 asked (7+1 alone, no gang) → 8 × 1,800 = 14,400 held.
    held = 43,200, held for gangs = 28,800, goodput 8 × 1,800 = 14,400,
    idle = 115,200 − 14,400 − 43,200 = 57,600.
    Before: 16 asked all hour: held 57,600 and all of it for gangs, idle 43,200."""
    att = _attempts([("7+0", "RUNNING", 8.0, _t(10, 30), None, ["n0"])], eligible=[_t(10)])
    pend = _pending([(8.0, _t(10), None)]).with_columns(job_id=pl.Series(["7+1"]))
    wf = gpu_waterfall_hourly(
        att, _capacity([_t(10)], 32.0), _t(11), pending=pend, nodes=_nodes([8.0] * 4)
    ).collect()
    rows = {r["leaf"]: r for r in wf.with_columns(pl.col("leaf").cast(pl.String)).to_dicts()}
    assert (rows["goodput"]["gpu_s"], rows["held"]["gpu_s"], rows["idle"]["gpu_s"]) == (
        14400.0, 43200.0, 57600.0,
    )  # fmt: skip
    assert rows["held"]["gang_gpu_s"] == 28800.0


def test_a_het_unit_attempt_without_every_component_starts_with_those_it_has() -> None:
    """4 nodes × 8 GPUs, hours 10:00 and 11:00, cut-off 12:00. 7+0 and 7+1 (8 GPUs each) ran
    10:00–10:15 (attempt 0, no wait); 7+0 was requeued: attempt 1 eligible 10:30, ran
    10:45–11:00; 7+1 has no attempt 1. Unit attempt 1 is 7+0's alone and started at 10:45:
    held 8 × 900 = 7,200 in hour 10, 0 in hour 11. Before: it never started and waited to the
    cut-off as a pending row: 8 × 1,800 = 14,400 held in hour 10 and 8 × 3,600 = 28,800 in hour
    11 (without ``pending``, a not-started attempt row: its wait was lost, 0 and 0)."""
    att = _attempts(
        [
            ("7+0", "REQUEUED", 8.0, _t(10), _t(10, 15), ["n0"]),
            ("7+1", "COMPLETED", 8.0, _t(10), _t(10, 15), ["n1"]),
            ("7+0", "COMPLETED", 8.0, _t(10, 45), _t(11), ["n0"]),
        ],
        eligible=[_t(10), _t(10), _t(10, 30)],
    ).with_columns(attempt=pl.Series([0, 0, 1]))
    none_pending = _pending([]).cast(
        {"cluster": pl.String, "job_id": pl.String, "req_gpus": pl.Float64, "state": pl.String}
    )
    for pend in (none_pending, None):
        wf = gpu_waterfall_hourly(
            att, _capacity([_t(10), _t(11)], 32.0), _t(12), pending=pend, nodes=_nodes([8.0] * 4)
        )
        assert (_leaves(wf, _t(10))["held"], _leaves(wf, _t(11))["held"]) == (7200.0, 0.0)
