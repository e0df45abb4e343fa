"""Reliability and health (METRICS.md): node signals, lemon score, ETTR, on literal frames."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics import (
    LossPolicy,
    down_time_per_node,
    ettr_per_run,
    gpu_waterfall_hourly,
    node_reliability,
    node_signals,
    rack_reliability,
)
from metrics.schema import LOSS_LEAVES

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")

Row = tuple[str, int, str, float, dt.datetime, dt.datetime, dt.datetime | None, list[str]]


def _t(h: int, m: int = 0, day: int = 1) -> dt.datetime:
    return dt.datetime(2026, 1, day, h, m, tzinfo=UTC)


def _attempts(rows: list[Row]) -> pl.LazyFrame:
    """Rows of (job_id, attempt, state, gpus, eligible, start, end, nodes)."""
    n = len(rows)
    return pl.DataFrame(
        {
            "cluster": ["c"] * n,
            "job_id": [r[0] for r in rows],
            "attempt": [r[1] for r in rows],
            "team": ["t"] * n,
            "state": [r[2] for r in rows],
            "gpus": [r[3] for r in rows],
            "req_gpus": [r[3] for r in rows],
            "eligible_at": [r[4] for r in rows],
            "start_at": [r[5] for r in rows],
            "end_at": [r[6] for r in rows],
            "node_list": [r[7] for r in rows],
        },
        schema_overrides={"eligible_at": TS, "start_at": TS, "end_at": TS},
    ).lazy()


def test_down_time_merges_overlapping_intervals_and_keeps_planned_apart() -> None:
    """n1 unplanned DOWN 02:00–03:00 and DRAIN 02:30–03:30 → one episode of 5400 s; planned
    04:00 – still down at as_of 06:00 → 7200 s planned."""
    down = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "host": ["n1"] * 3,
            "start_at": [_t(2), _t(2, 30), _t(4)],
            "end_at": [_t(3), _t(3, 30), None],
            "state": ["DOWN", "DRAIN", "DOWN"],
            "planned": [False, False, True],
        },
        schema_overrides={"start_at": TS, "end_at": TS},
    ).lazy()
    out = down_time_per_node(down, _t(6)).collect()
    assert out.rows() == [("c", "n1", 5400.0, 7200.0, 1)]


def test_node_signals_and_infrastructure_share_of_lost_time() -> None:
    """Job 1 (8 GPUs on n1+n2, 1 h) ends NODE_FAIL: 4 GPUs × 3600 = 14400 infra GPU-s per node.
    Job 2 (4 GPUs on n1, 1 h) FAILED with an XID on n1 5 min before its end → infra 14400 on n1.
    Job 3 (4 GPUs on n2, 1 h) FAILED without XID → user 14400 on n2. n1: lost 28800, all infra
    (share 1); n2: lost 28800, infra 14400 (share 0.5); n1 has 1 XID event, code 79."""
    att = _attempts(
        [
            ("1", 0, "NODE_FAIL", 8.0, _t(0), _t(0), _t(1), ["n1", "n2"]),
            ("2", 0, "FAILED", 4.0, _t(1), _t(1), _t(2), ["n1"]),
            ("3", 0, "FAILED", 4.0, _t(1), _t(1), _t(2), ["n2"]),
        ]
    )
    xid = pl.DataFrame(
        {"cluster": ["c"], "host": ["n1"], "ts": [_t(1, 55)], "xid": [79]},
        schema_overrides={"ts": TS},
    ).lazy()
    out = node_reliability(att, _t(6), xid_events=xid).sort("host").collect()
    cols = ["host", "attempts", "node_fail_attempts", "infra_failed_attempts", "xid_events"]
    assert out.select(cols).rows() == [("n1", 2, 1, 2, 1), ("n2", 2, 1, 1, 0)]
    assert out["xid_codes"].to_list() == [[79], []]
    assert out["lost_gpu_s"].to_list() == [28800.0, 28800.0]
    assert out["infra_share"].to_list() == [1.0, 0.5]


def _two_days() -> list[Row]:
    """Day 1: job 1 (8 GPUs on n1+n2, 1 h) ends NODE_FAIL; day 2: job 2 (4 GPUs on n1, 2 h)
    FAILED with an XID 5 min before its end, job 3 (2 GPUs on n2, 30 min) COMPLETED; job 4 (2
    GPUs on n1) starts 23:00 on day 2 and ends 01:00 on day 3, PREEMPTED."""
    return [
        ("1", 0, "NODE_FAIL", 8.0, _t(0), _t(0), _t(1), ["n1", "n2"]),
        ("2", 0, "FAILED", 4.0, _t(1, day=2), _t(1, day=2), _t(3, day=2), ["n1"]),
        ("3", 0, "COMPLETED", 2.0, _t(1, day=2), _t(1, day=2), _t(1, 30, day=2), ["n2"]),
        ("4", 0, "PREEMPTED", 2.0, _t(23, day=2), _t(23, day=2), _t(1, day=3), ["n1"]),
    ]


def _xid_n1() -> pl.LazyFrame:
    return pl.DataFrame(
        {"cluster": ["c"], "host": ["n1"], "ts": [_t(2, 55, day=2)], "xid": [79]},
        schema_overrides={"ts": TS},
    ).lazy()


def test_daily_node_signals_are_keyed_by_the_attempts_start_day() -> None:
    """Per node and UTC start day (job 4 counts on day 2, where it started, though it ends on
    day 3): day 1 n1 and n2 each 1 attempt, NODE_FAIL, infra, 4 GPUs × 3600 s = 14400 lost;
    day 2 n1: jobs 2 and 4, job 2 infra by the XID (4 × 7200 = 28800), job 4 preempted (2 ×
    7200 = 14400 lost, not infra) → lost 43200, infra 28800; day 2 n2: job 3 completed, 0 lost
    (a sum of nothing)."""
    out = (
        node_signals(_attempts(_two_days()), _t(6, day=3), xid_events=_xid_n1(), daily=True)
        .sort("host", "day")
        .collect()
    )
    assert out.columns == [
        "cluster", "host", "day", "attempts", "node_fail_attempts", "infra_failed_attempts",
        "lost_gpu_s", "infra_lost_gpu_s",
    ]  # fmt: skip
    assert out.schema["day"] == TS
    assert out.drop("cluster").rows() == [
        ("n1", dt.datetime(2026, 1, 1, tzinfo=UTC), 1, 1, 1, 14400.0, 14400.0),
        ("n1", dt.datetime(2026, 1, 2, tzinfo=UTC), 2, 0, 1, 43200.0, 28800.0),
        ("n2", dt.datetime(2026, 1, 1, tzinfo=UTC), 1, 1, 1, 14400.0, 14400.0),
        ("n2", dt.datetime(2026, 1, 2, tzinfo=UTC), 1, 0, 0, 0.0, 0.0),
    ]


def test_node_reliability_from_daily_signals_equals_it_from_the_attempts() -> None:
    """The node table from the daily signals (in any row order, as stored days and a day
    computed again come) equals the one from the attempts: n1 3 attempts, lost 14400 + 43200 =
    57600, infra 14400 + 28800 = 43200; n2 2 attempts, lost 14400, all infra."""
    att, cut, xid = _attempts(_two_days()), _t(6, day=3), _xid_n1()
    whole = node_reliability(att, cut, xid_events=xid).sort("host").collect()
    daily = node_signals(att, cut, xid_events=xid, daily=True).collect()
    for rows in (daily, daily.reverse()):
        got = node_reliability(None, cut, xid_events=xid, signals=rows.lazy())
        assert_frame_equal(got.sort("host").collect(), whole)
    assert whole.select("host", "attempts", "lost_gpu_s", "infra_lost_gpu_s").rows() == [
        ("n1", 3, 57600.0, 43200.0),
        ("n2", 2, 14400.0, 14400.0),
    ]


def test_node_days_add_up_to_the_same_bits_in_any_row_order() -> None:
    """A node's days' lost GPU-seconds are added exactly (decimals): 200,000 daily rows of
    values over seven orders of magnitude on 50 nodes give the same sums, bit for bit, in their
    order and shuffled (a plain group sum of these rows differs in the last bits between the
    two orders)."""
    rng = np.random.default_rng(7)
    n = 200_000
    lost = (rng.random(n) * 10.0 ** rng.integers(0, 7, n)).round(6)
    days = pl.DataFrame(
        {
            "cluster": "c",
            "host": pl.Series(rng.integers(0, 50, n)).cast(pl.String),
            "day": [_t(0) + dt.timedelta(days=int(i)) for i in range(n)],
            "attempts": 1,
            "node_fail_attempts": 0,
            "infra_failed_attempts": 0,
            "lost_gpu_s": lost,
            "infra_lost_gpu_s": lost / 3,
        },
        schema_overrides={"day": TS},
    )
    cut = _t(0)
    ordered = node_reliability(None, cut, signals=days.lazy()).sort("host").collect()
    shuffled = node_reliability(
        None, cut, signals=days.sample(fraction=1.0, shuffle=True, seed=3).lazy()
    )
    assert_frame_equal(shuffled.sort("host").collect(), ordered, check_exact=True)
    assert ordered["attempts"].sum() == n


def test_a_day_computed_alone_is_the_same_day_computed_among_a_year() -> None:
    """The daily rows of one day, computed from that day's attempts alone and in another order
    (as an incremental build computes its days), equal the same day's rows computed among the
    attempts of 200 days (as a full build computes them), bit for bit: 300,000 FAILED attempts
    of 1 to 4 GPUs on 3 nodes each, durations over seven orders of magnitude. A plain float sum
    depends on the rows' order, and on how many threads split a large frame: with the day's
    rows shuffled it differs in the last bits at any thread count."""
    rng = np.random.default_rng(11)
    n = 300_000
    offsets = zip(rng.integers(0, 200, n), rng.integers(0, 86_400, n), strict=True)
    start = [_t(0) + dt.timedelta(days=int(d), seconds=int(s)) for d, s in offsets]
    seconds = (rng.random(n) * 10.0 ** rng.integers(0, 7, n)).round(6)
    att = pl.DataFrame(
        {
            "cluster": "c",
            "job_id": [str(i) for i in range(n)],
            "attempt": 0,
            "state": "FAILED",
            "gpus": rng.integers(1, 5, n).astype(float),
            "start_at": start,
            "end_at": [
                s + dt.timedelta(seconds=float(x)) for s, x in zip(start, seconds, strict=True)
            ],
            "host": rng.integers(0, 50, n),
        },
        schema_overrides={"start_at": TS, "end_at": TS},
    ).with_columns(
        pl.concat_list(*(((pl.col("host") + k) % 50).cast(pl.String) for k in range(3))).alias(
            "node_list"
        )
    )
    cut = _t(0) + dt.timedelta(days=400)
    day = dt.datetime(2026, 3, 1, tzinfo=UTC)
    on_day = pl.col("start_at").dt.truncate("1d") == day
    among = node_signals(att.lazy(), cut, daily=True).filter(pl.col("day") == day)
    shuffled = att.filter(on_day).sample(fraction=1.0, shuffle=True, seed=5)
    alone = node_signals(shuffled.lazy(), cut, daily=True)
    want = among.sort("host").collect()
    assert want.height == 50 and want["attempts"].sum() == 3 * att.filter(on_day).height
    assert_frame_equal(alone.sort("host").collect(), want, check_exact=True)


def test_a_non_finite_lost_value_is_left_out_of_a_nodes_sum() -> None:
    """Three days of n1 lost 100.5, NaN and 200.25 GPU-seconds: the node's sum is 300.75 (the
    NaN has no exact decimal and is left out rather than failing the build); infra lost 0.0
    on every day sums to 0.0; the counts add up (3 attempts)."""
    days = pl.DataFrame(
        {
            "cluster": "c",
            "host": "n1",
            "day": [_t(0), _t(0, day=2), _t(0, day=3)],
            "attempts": 1,
            "node_fail_attempts": 0,
            "infra_failed_attempts": 0,
            "lost_gpu_s": [100.5, float("nan"), 200.25],
            "infra_lost_gpu_s": 0.0,
        },
        schema_overrides={"day": TS},
    )
    out = node_reliability(None, _t(0), signals=days.lazy()).collect()
    assert out.select("host", "attempts", "lost_gpu_s", "infra_lost_gpu_s").rows() == [
        ("n1", 3, 300.75, 0.0)
    ]


def test_node_reliability_needs_attempts_or_signals() -> None:
    """Neither attempts nor signals: a ValueError, not an empty table."""
    with pytest.raises(ValueError, match="attempts or their signals"):
        node_reliability(None, _t(6))


def test_lemon_score_flags_the_node_that_breaks_more_jobs_than_expected() -> None:
    """Four nodes each run two 1-GPU jobs; the two on n3 end NODE_FAIL. Cluster rate = 2
    infra failures / 8 node-attempts = 0.25, expected per node = 0.5. Score = (k + 1)/(0.5 + 1):
    n3 → 3/1.5 = 2, others → 1/1.5 = 2/3. n3 ranks 1; its rack r2 scores (2+1)/(1+1) = 1.5
    (n3 and n4: expected 0.5 + 0.5), r1 scores 1/2."""
    rows: list[Row] = []
    for i, host in enumerate(["n1", "n2", "n3", "n4"]):
        state = "NODE_FAIL" if host == "n3" else "COMPLETED"
        rows += [
            (f"{i}a", 0, state, 1.0, _t(0), _t(0), _t(1), [host]),
            (f"{i}b", 0, state, 1.0, _t(1), _t(1), _t(2), [host]),
        ]
    nodes = pl.DataFrame(
        {"cluster": ["c"] * 4, "host": ["n1", "n2", "n3", "n4"], "rack": ["r1", "r1", "r2", "r2"]}
    ).lazy()
    out = node_reliability(_attempts(rows), _t(6), nodes=nodes).collect()
    assert out["host"].to_list()[0] == "n3"
    scores = dict(zip(out["host"].to_list(), out["lemon_score"].to_list(), strict=True))
    assert scores == {
        "n3": pytest.approx(2.0),
        "n1": pytest.approx(2 / 3),
        "n2": pytest.approx(2 / 3),
        "n4": pytest.approx(2 / 3),
    }
    racks = rack_reliability(out.lazy()).collect()
    assert racks.select("rack", "nodes", "infra_failed_attempts").rows() == [
        ("r2", 2, 2),
        ("r1", 2, 0),
    ]
    assert racks["lemon_score"].to_list() == [pytest.approx(1.5), pytest.approx(0.5)]


def test_ettr_counts_every_eligible_wait_and_the_lost_work() -> None:
    """Run 1: attempt 0 waits 1 h (00:00→01:00), runs 1 h, ends NODE_FAIL (lost 3600);
    requeued, attempt 1 waits 1 h (02:00→03:00), runs 2 h COMPLETED (productive 7200).
    ETTR = 7200 / (7200 queue + 7200 + 3600) = 0.4. With checkpoints Δ = 1200 s, u0 = 300 s
    only 900 s of attempt 0 is lost: productive 7200 + 2700 = 9900, ETTR = 9900/18000 = 0.55."""
    att = _attempts(
        [
            ("1", 0, "NODE_FAIL", 8.0, _t(0), _t(1), _t(2), ["n1"]),
            ("1", 1, "COMPLETED", 8.0, _t(2), _t(3), _t(5), ["n2"]),
        ]
    )
    whole = ettr_per_run(att, _t(6)).collect().row(0, named=True)
    assert (whole["attempts"], whole["queue_s"], whole["productive_s"]) == (2, 7200.0, 7200.0)
    assert (whole["unproductive_s"], whole["ettr"], whole["running"]) == (3600.0, 0.4, False)
    ckpt = ettr_per_run(att, _t(6), policy=LossPolicy("checkpoint", 1200.0, 300.0)).collect()
    assert ckpt.row(0, named=True)["ettr"] == pytest.approx(0.55)


def test_ettr_adds_the_wait_of_a_requeued_run_pending_again() -> None:
    """Run 2 ran 00:00–01:00 (eligible 00:00, no wait) and was PREEMPTED (lost 3600); it is
    pending again since 01:00 at as_of 02:00 → queue 3600. ETTR = 0 / (3600 + 0 + 3600) = 0."""
    att = _attempts([("2", 0, "PREEMPTED", 1.0, _t(0), _t(0), _t(1), ["n1"])])
    pending = pl.DataFrame(
        {"cluster": ["c"], "job_id": ["2"], "eligible_at": [_t(1)], "end_at": [None]},
        schema_overrides={"eligible_at": TS, "end_at": TS},
    ).lazy()
    row = ettr_per_run(att, _t(2), pending=pending).collect().row(0, named=True)
    assert (row["queue_s"], row["unproductive_s"], row["ettr"]) == (3600.0, 3600.0, 0.0)


def _pieces(rows: list[tuple[str, dt.datetime, dt.datetime | None, float]]) -> pl.LazyFrame:
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


def _gang() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """A PREEMPTED 16-GPU gang g 00:00–01:00 on n1, n2 whose pods held 8 GPUs 00:00–00:30,
    16 00:30–01:00 and 8 through an eviction's grace period 01:00–01:01 (gpu_s 14,400 +
    28,800 + 480 = 43,680); a Slurm attempt s (no pieces) FAILED 8 GPUs 00:00–01:00 on n3;
    a gang e PREEMPTED 8 GPUs 00:00–01:00 on n4 whose pods held nothing (one empty piece)."""
    att = _attempts(
        [
            ("g", 0, "PREEMPTED", 16.0, _t(0), _t(0), _t(1), ["n1", "n2"]),
            ("s", 0, "FAILED", 8.0, _t(0), _t(0), _t(1), ["n3"]),
            ("e", 0, "PREEMPTED", 8.0, _t(0), _t(0), _t(1), ["n4"]),
        ]
    )
    holds = _pieces(
        [
            ("g", _t(0), _t(0, 30), 8.0),
            ("g", _t(0, 30), _t(1), 16.0),
            ("g", _t(1), _t(1, 1), 8.0),
            ("e", _t(0), _t(0), 0.0),
        ]
    )
    return att, holds


def _waterfall_lost(att: pl.LazyFrame, holds: pl.LazyFrame, policy: LossPolicy) -> float:
    cap = pl.DataFrame(
        {
            "cluster": ["c"] * 2,
            "hour": [_t(0), _t(1)],
            "capacity_gpu_s": [48.0 * 3600] * 2,
            "down_gpu_s": [0.0] * 2,
            "planned_down_gpu_s": [0.0] * 2,
        },
        schema_overrides={"hour": TS},
    ).lazy()
    wf = gpu_waterfall_hourly(att, cap, _t(3), holds=holds, policy=policy).collect()
    return float(wf.filter(pl.col("leaf").is_in(list(LOSS_LEAVES)))["gpu_s"].sum())


def test_a_gang_s_lost_gpu_seconds_are_its_pieces_as_in_the_waterfall() -> None:
    """whole_attempt, as_of 03:00: g lost every piece, 43,680 GPU-s (not 16 × 3,600 =
    57,600, more than it held), 21,840 on each of n1, n2; s (no pieces) 8 × 3,600 = 28,800 on
    n3 as before; e held nothing and lost 0 (not 28,800), its attempt still counted on n4.
    Σ = 72,480 = the waterfall's leaves 3–6."""
    att, holds = _gang()
    rel = node_reliability(att, _t(3), holds=holds).collect().sort("host")
    assert rel["host"].to_list() == ["n1", "n2", "n3", "n4"]
    assert rel["lost_gpu_s"].to_list() == [21_840.0, 21_840.0, 28_800.0, 0.0]
    assert rel["attempts"].to_list() == [1, 1, 1, 1]
    assert rel["lost_gpu_s"].sum() == 72_480.0
    assert _waterfall_lost(att, holds, LossPolicy()) == 72_480.0
    daily = node_signals(att, _t(3), holds=holds, daily=True).collect()
    assert daily["lost_gpu_s"].sum() == 72_480.0


def test_a_gang_s_lost_pieces_start_at_the_checkpoint_policy_s_lost_from_at() -> None:
    """checkpoint Δ = 3,600 s, u0 = 300 s: g lost min(3,600, 1,800 + 300) = 2,100 s, so
    lost_from_at = 01:00 − 2,100 s = 00:25: 8 GPUs 00:25–00:30 (2,400) + 16 × 1,800 (28,800) +
    8 × 60 (480) = 31,680 GPU-s (not 16 × 2,100 = 33,600), 15,840 per node; s 8 × 2,100 =
    16,800; e 0. Σ 48,480 = the waterfall's leaves 3–6 under the same policy."""
    att, holds = _gang()
    policy = LossPolicy("checkpoint", 3600.0, 300.0)
    rel = node_reliability(att, _t(3), holds=holds, policy=policy).collect().sort("host")
    assert rel["lost_gpu_s"].to_list() == [15_840.0, 15_840.0, 16_800.0, 0.0]
    assert rel["infra_lost_gpu_s"].to_list() == [0.0, 0.0, 0.0, 0.0]
    assert _waterfall_lost(att, holds, policy) == 48_480.0


def _gang_on_nodes() -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]:
    """A 16-GPU gang w FAILED 10:00–13:00 on c1, g1, g2: its launcher pod (0 GPUs) on c1, worker
    pods of 8 GPUs each on g1 (bound 10:00, ended 13:00) and g2 (bound 11:00, ended 13:00), so
    its pieces per node are g1 8 GPUs 10:00–13:00 and g2 8 GPUs 11:00–13:00 (c1 held none);
    an XID on g2 at 12:55, in its last 10 minutes, makes it failed_work_infra."""
    att = _attempts([("w", 0, "FAILED", 16.0, _t(10), _t(10), _t(13), ["c1", "g1", "g2"])])
    holds = (
        _pieces([("w", _t(10), _t(13), 8.0), ("w", _t(11), _t(13), 8.0)])
        .with_columns(pl.Series("host", ["g1", "g2"]))
        .lazy()
    )
    xid = pl.DataFrame(
        {"cluster": ["c"], "host": ["g2"], "ts": [_t(12, 55)], "xid": [79]},
        schema_overrides={"ts": TS},
    ).lazy()
    return att, holds, xid


def test_a_gang_s_lost_gpu_seconds_go_to_the_nodes_its_pieces_were_on() -> None:
    """whole_attempt, as_of 15:00: w lost every piece: g1 8 GPUs × 3 h = 86,400 GPU-s, g2
    8 × 2 h = 57,600, c1 (the CPU-only launcher's node) 0; all infra (the XID on g2). Before:
    Σ 144,000 split evenly, 48,000 on each of c1, g1, g2. The attempt still counts once on each
    of its three nodes, and Σ = 144,000 = the waterfall's failed_work_infra (the pieces added
    up over the nodes: 8 GPUs 10:00–11:00, 16 11:00–13:00)."""
    att, holds, xid = _gang_on_nodes()
    rel = node_reliability(att, _t(15), holds=holds, xid_events=xid).collect().sort("host")
    assert rel["host"].to_list() == ["c1", "g1", "g2"]
    assert rel["lost_gpu_s"].to_list() == [0.0, 86_400.0, 57_600.0]
    assert rel["infra_lost_gpu_s"].to_list() == [0.0, 86_400.0, 57_600.0]
    assert rel["attempts"].to_list() == [1, 1, 1]
    assert rel["infra_failed_attempts"].to_list() == [1, 1, 1]
    daily = node_signals(att, _t(15), holds=holds, xid_events=xid, daily=True).collect()
    assert daily.sort("host")["lost_gpu_s"].to_list() == [0.0, 86_400.0, 57_600.0]
    cap = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "hour": [_t(10), _t(11), _t(12)],
            "capacity_gpu_s": [48.0 * 3600] * 3,
            "down_gpu_s": [0.0] * 3,
            "planned_down_gpu_s": [0.0] * 3,
        },
        schema_overrides={"hour": TS},
    ).lazy()
    wf = gpu_waterfall_hourly(att, cap, _t(15), holds=holds, xid_events=xid).collect()
    assert wf.filter(pl.col("leaf") == "failed_work_infra")["gpu_s"].sum() == 144_000.0


def test_a_gang_s_pieces_per_node_start_at_the_checkpoint_policy_s_lost_from_at() -> None:
    """checkpoint Δ = 3,600 s, u0 = 300 s: w ran 10,800 s and lost min(10,800, 1,800 + 300) =
    2,100 s, from 13:00 − 2,100 s = 12:25, when both workers held: g1 8 × 2,100 = 16,800 GPU-s,
    g2 8 × 2,100 = 16,800, c1 0 (before: 16 × 2,100 = 33,600 ÷ 3 = 11,200 on each)."""
    att, holds, xid = _gang_on_nodes()
    policy = LossPolicy("checkpoint", 3600.0, 300.0)
    rel = node_reliability(att, _t(15), holds=holds, xid_events=xid, policy=policy)
    rel_df = rel.collect().sort("host")
    assert rel_df["lost_gpu_s"].to_list() == [0.0, 16_800.0, 16_800.0]
    assert rel_df["infra_lost_gpu_s"].to_list() == [0.0, 16_800.0, 16_800.0]
