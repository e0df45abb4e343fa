"""The discrete-event scheduler model: hand-checked replays and the EASY backfill guarantee."""

from __future__ import annotations

import random
from collections import defaultdict

import polars as pl
import pytest

from metrics.scheduler_model import (
    Node,
    RecurringReservation,
    SchedulerSettings,
    SimJob,
    jobs_from_frame,
    simulate,
    wait_summary,
)
from tests.recommendations._frames import T0, H, at, job, jobs, pending

TWO_NODES = [Node("n1", "p", 4), Node("n2", "p", 4)]
EXACT = SchedulerSettings(bf_resolution_s=1)


def test_hand_checked_replay_backfills_the_short_job() -> None:
    """A (4 GPUs, 0–100) runs; B (8 GPUs) needs both nodes, so its reservation is at 100; C (4
    GPUs, limit 60) fits on n2 now and ends by 80 ≤ 100, so it is backfilled ahead of B."""
    js = [
        SimJob("A", "p", 4, eligible_s=0, runtime_s=100, limit_s=100),
        SimJob("B", "p", 8, eligible_s=10, runtime_s=50, limit_s=100),
        SimJob("C", "p", 4, eligible_s=20, runtime_s=50, limit_s=60),
    ]
    out = simulate(TWO_NODES, js, EXACT).outcomes
    assert (out["A"].start_s, out["A"].hosts, out["A"].backfilled) == (0, ("n1",), False)
    assert (out["C"].start_s, out["C"].end_s, out["C"].hosts) == (20, 70, ("n2",))
    assert out["C"].backfilled
    assert (out["B"].start_s, out["B"].wait_s, out["B"].hosts) == (100, 90, ("n1", "n2"))


def test_job_that_would_delay_the_head_is_not_backfilled() -> None:
    """With limit 90 C would hold n2 until 110 > B's reservation at 100: it waits for B."""
    js = [
        SimJob("A", "p", 4, 0, 100, 100),
        SimJob("B", "p", 8, 10, 50, 100),
        SimJob("C", "p", 4, 20, 50, 90),
    ]
    out = simulate(TWO_NODES, js, EXACT).outcomes
    assert out["B"].start_s == 100
    assert out["C"].start_s == 150
    assert not out["C"].backfilled


def test_reservation_beyond_bf_window_lets_small_jobs_pass() -> None:
    """B's shadow time (100) lies beyond a 50 s bf_window: no reservation at 10 or 20, so C
    (limit 90) starts at 20 and B waits until both nodes are free at 110."""
    js = [
        SimJob("A", "p", 4, 0, 100, 100),
        SimJob("B", "p", 8, 10, 50, 100),
        SimJob("C", "p", 4, 20, 90, 90),
    ]
    res = simulate(TWO_NODES, js, SchedulerSettings(bf_window_s=50, bf_resolution_s=1))
    assert res.outcomes["C"].start_s == 20
    assert res.outcomes["B"].start_s == 110
    # planned only once its shadow time came within the window (A ended at 100)
    assert [r.at_s for r in res.reservations if r.job_id == "B"] == [100]


def test_priority_orders_the_queue() -> None:
    """A later job of higher priority starts before an earlier one of lower priority."""
    js = [
        SimJob("A", "p", 8, 0, 100, 100),
        SimJob("low", "p", 8, 10, 10, 10, priority=0),
        SimJob("high", "p", 8, 20, 10, 10, priority=5),
    ]
    out = simulate(TWO_NODES, js, EXACT).outcomes
    assert out["high"].start_s == 100
    assert out["low"].start_s == 110


def test_runs_are_cut_at_their_time_limit_and_cancel_leaves_the_queue() -> None:
    """A run longer than its limit ends at the limit; a job cancelled while pending never runs
    and its wait is counted up to the cancel time."""
    js = [
        SimJob("A", "p", 8, 0, 500, 100),
        SimJob("B", "p", 8, 10, 10, 10, cancel_s=50),
    ]
    out = simulate(TWO_NODES, js, EXACT).outcomes
    assert out["A"].end_s == 100
    assert not out["B"].started
    assert out["B"].wait_s == 40


def _random_jobs(seed: int, n: int = 60) -> list[SimJob]:
    rng = random.Random(seed)
    out = []
    t = 0.0
    for i in range(n):
        t += rng.uniform(0, 600)
        gpus = rng.choice([1, 2, 4, 8, 8, 16, 24, 32])
        limit = rng.choice([600, 1800, 3600, 7200])
        runtime = rng.uniform(0.1, 1.2) * limit  # some runs hit their limit
        out.append(SimJob(f"j{i}", "p", gpus, t, runtime, limit))
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("resolution", [1, 60, 300])
def test_easy_backfill_never_delays_the_head_reservation(seed: int, resolution: int) -> None:
    """With equal priorities, every job that got a reservation starts no later than the shadow
    time it was given (EASY: backfilled jobs end before it or stay off its nodes)."""
    nodes = [Node(f"n{i}", "p", 8) for i in range(4)]
    js = _random_jobs(seed)
    res = simulate(nodes, js, SchedulerSettings(bf_resolution_s=resolution, bf_window_s=10**7))
    assert res.reservations, "the workload should block some head job"
    for r in res.reservations:
        start = res.outcomes[r.job_id].start_s
        assert start is not None and start <= r.shadow_s + 1e-9, r


@pytest.mark.parametrize("seed", range(4))
def test_no_gpu_is_ever_held_twice(seed: int) -> None:
    """At every instant the GPUs running on a node never exceed the node's GPUs."""
    nodes = [Node(f"n{i}", "p", 8) for i in range(4)]
    js = _random_jobs(seed, 80)
    res = simulate(nodes, js, SchedulerSettings())
    gpus = {j.job_id: j.gpus for j in js}
    events: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for o in res.outcomes.values():
        if o.started:
            assert o.start_s is not None and o.end_s is not None
            per_node = gpus[o.job_id] / len(o.hosts) if gpus[o.job_id] > 8 else gpus[o.job_id]
            for h in o.hosts:
                events[h] += [(o.start_s, per_node), (o.end_s, -per_node)]
    for h, ev in events.items():
        used = 0.0
        for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
            used += d
            assert used <= 8 + 1e-9, h


def test_recurring_reservation_keeps_small_jobs_off_its_nodes() -> None:
    """n1 is reserved for ≥ 8-GPU jobs daily from 100 s for 50 s: a 4-GPU job whose limit would
    run into the occurrence goes to n2; a large job may use n1 at any time."""
    res = RecurringReservation("p", nodes=1, first_start_s=100, duration_s=50, min_gpus=8)
    assert res.overlaps(90, 110) and res.overlaps(120, 130) and res.overlaps(0, 1e6)
    assert not res.overlaps(0, 100) and not res.overlaps(150, 86400 + 100)
    assert res.overlaps(86400 + 120, 86400 + 121)
    settings = SchedulerSettings(bf_resolution_s=1, reservations=(res,))
    js = [SimJob("small", "p", 4, 0, 60, 120), SimJob("fits", "p", 4, 0, 60, 60)]
    out = simulate(TWO_NODES, js, settings).outcomes
    assert out["fits"].hosts == ("n1",)  # ends at 60, before the occurrence
    assert out["small"].hosts == ("n2",)
    big = simulate(TWO_NODES, [SimJob("big", "p", 8, 110, 10, 10)], settings).outcomes
    assert big["big"].start_s == 110


def test_jobs_from_frame_reads_attempts_and_pending_rows() -> None:
    """Attempts run end − start (running ones up to ``as_of``), later attempts get ``#n``, QOS
    maps to priority; never-started rows run their limit and leave at their cancel time."""
    frame = jobs(
        [
            job("1", eligible=0, start=60, run=600, qos="high", limit=3600),
            job("1", eligible=700, start=760, run=None, attempt=1, limit=3600),
        ]
    )
    as_of = at(2 * H)
    sims = jobs_from_frame(frame, as_of)
    assert [(s.job_id, s.runtime_s, s.priority) for s in sims] == [
        ("1", 600.0, 2),
        ("1#1", 2 * H - 760, 1),
    ]
    p = pending(
        [{"cluster": "slurm-a", "job_id": "9", "partition": "gpu", "qos": "low",
          "account": "nlp", "req_gpus": 64.0, "eligible_at": T0, "cancel_at": at(H),
          "timelimit_s": 7200}]
    ).with_columns(
        pl.lit(None, dtype=pl.Float64).alias("gpus"),
        pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("start_at"),
        pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("end_at"),
    )  # fmt: skip
    (s,) = jobs_from_frame(p, as_of)
    assert (s.gpus, s.runtime_s, s.limit_s, s.priority, s.cancel_s) == (
        64,
        7200.0,
        7200.0,
        0,
        at(H).timestamp(),
    )


def test_wait_summary_censors_jobs_not_started_at_the_horizon() -> None:
    """A job still pending at the horizon waits horizon − eligible (a lower bound)."""
    js = [SimJob("A", "p", 8, 0, 1000, 1000), SimJob("B", "p", 8, 0, 10, 10)]
    res = simulate(TWO_NODES, js, EXACT, horizon_s=400)
    assert wait_summary(res, js) == {
        "jobs": 2.0, "mean_wait_s": 200.0, "p50_wait_s": 0.0, "p90_wait_s": 400.0
    }  # fmt: skip
