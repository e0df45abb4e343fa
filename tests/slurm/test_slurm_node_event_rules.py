"""Slurm node events: which reasons are planned, and allocated time winning over a node's
down / planned-down state (``pipelines/core/node_states.py``; METRICS.md "Node states").
Every expected value is computed by hand in the test's docstring."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from pipelines.core.node_states import (
    latest_node_events,
    node_event_gpu_seconds_hourly,
    planned_reason,
    unallocated_node_events,
)


def _t(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2024, 10, 8, h, m, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("reason", "planned"),
    [
        ("Node unexpectedly rebooted boot_time=1728381600 last response=1728381500", False),
        ("Not responding", False),
        ("Kill task failed", False),
        ("NHC: check_hw_ib: No IB port is ACTIVE", False),
        ("batch job complete failure", False),
        ("reboot timed out", False),
        ("bad ib port", False),
        (None, False),
        ("reboot requested", True),
        ("Reboot ASAP", True),
        ("REBOOT_ISSUED", True),
        ("scheduled maintenance", True),
        ("driver upgrade", True),
        ("planned outage", True),
    ],
)
def test_planned_reason(reason: str | None, planned: bool) -> None:
    got = pl.DataFrame({"reason": [reason]}, schema={"reason": pl.String()}).select(
        planned_reason(pl.col("reason"))
    )
    assert got.item() is planned


def _hourly(events: pl.DataFrame, jobs: pl.DataFrame, cut: dt.datetime) -> dict[tuple, float]:
    pieces = unallocated_node_events(events, jobs, cut)
    per = node_event_gpu_seconds_hourly(pieces.lazy(), _t(0), _t(23), cut).collect()
    return {(r["state"], r["hour"].hour): r["gpu_s"] for r in per.iter_rows(named=True)}


def _events(*rows: tuple[str, str, dt.datetime, dt.datetime | None, float]) -> pl.DataFrame:
    return pl.DataFrame(
        [("c", n, s, a, b, g) for n, s, a, b, g in rows],
        schema={"cluster": pl.String(), "node": pl.String(), "state": pl.String(),
                "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC"),
                "gpus": pl.Float64()},
        orient="row",
    )  # fmt: skip


def _jobs(*rows: tuple[list[str], float, dt.datetime, dt.datetime | None]) -> pl.DataFrame:
    return pl.DataFrame(
        [("c", n, g, a, b) for n, g, a, b in rows],
        schema={"cluster": pl.String(), "node_list": pl.List(pl.String()), "gpus": pl.Float64(),
                "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
        orient="row",
    )  # fmt: skip


def test_drain_under_a_whole_node_job_is_down_after_the_job() -> None:
    """n1 (8 GPUs) DRAIN 10:00–12:00, job on its 8 GPUs 09:00–11:00: hour 10 down 0,
    hour 11 down 8 × 3,600 = 28,800."""
    got = _hourly(_events(("n1", "down", _t(10), _t(12), 8.0)),
                  _jobs((["n1"], 8.0, _t(9), _t(11))), _t(13))  # fmt: skip
    assert got == {("down", 11): 28_800.0}


def test_drain_under_a_half_node_job_leaves_the_free_gpus_down() -> None:
    """n1 (8 GPUs) DRAIN 10:00–11:00 under a 4-GPU job 09:00–12:00: the 4 free GPUs can take
    no job, 4 × 3,600 = 14,400 down; the job's 4 are allocated."""
    got = _hourly(_events(("n1", "down", _t(10), _t(11), 8.0)),
                  _jobs((["n1"], 4.0, _t(9), _t(12))), _t(13))  # fmt: skip
    assert got == {("down", 10): 14_400.0}


def test_allocation_is_subtracted_instant_by_instant() -> None:
    """n1 (8 GPUs) down 10:00–10:30, a job on it 10:30–11:00 (after the node came back): the
    two do not overlap, down stays 8 × 1,800 = 14,400 (an hourly max(0, down − allocated)
    would give 0)."""
    got = _hourly(_events(("n1", "down", _t(10), _t(10, 30), 8.0)),
                  _jobs((["n1"], 8.0, _t(10, 30), _t(11))), _t(13))  # fmt: skip
    assert got == {("down", 10): 14_400.0}


def test_maintenance_drain_under_a_job_and_a_two_node_job() -> None:
    """n1 and n2 (8 GPUs each) in a planned drain 10:00–11:00; a 16-GPU job on n1+n2 (8 per
    node) 10:00–10:15, and an open DOWN on n3 from 10:30 (cut-off 11:00) with a running
    4-GPU job on n3 (no end): n1, n2 planned 2 × 8 × 2,700 = 43,200; n3 down 4 × 1,800 =
    7,200 (never down and allocated at once)."""
    got = _hourly(
        _events(("n1", "planned", _t(10), _t(11), 8.0), ("n2", "planned", _t(10), _t(11), 8.0),
                ("n3", "down", _t(10, 30), None, 8.0)),
        _jobs((["n1", "n2"], 16.0, _t(10), _t(10, 15)), (["n3"], 4.0, _t(9), None)),
        _t(11),
    )  # fmt: skip
    assert got == {("planned", 10): 43_200.0, ("down", 10): 7_200.0}


def test_a_closed_copy_of_an_event_wins_over_an_open_one_in_any_load_order() -> None:
    """n2 DOWN from 20:00: open (end Unknown) in load 5, closed at 01:00 in load 2 (a later day
    loaded first, the earlier day again after it). Kept once, closed at 01:00: 8 GPUs × 5 h =
    144,000 GPU-s, not to a cut-off. Of two closed copies the later load wins (loads 2 and 7:
    end 02:00 from 7); of two open copies, the later load too. Same rows for any input order."""

    def row(load: int, end: dt.datetime | None, node: str = "n2") -> dict[str, object]:
        return {
            "cluster": "c", "event": "node", "node": node, "start_at": _t(20), "end_at": end,
            "state": "DOWN", "gpus": 8.0, "ingest_id": load, "line_no": 3,
        }  # fmt: skip

    closed = _t(1) + dt.timedelta(days=1)
    events = pl.DataFrame([row(2, closed), row(5, None), row(2, None, "n3"), row(4, None, "n3")])
    for order in (events, events.reverse()):
        kept = latest_node_events(order).sort("node")
        assert kept.select("node", "end_at", "ingest_id").rows() == [
            ("n2", closed, 2),
            ("n3", None, 4),
        ]
        per = node_event_gpu_seconds_hourly(
            kept.filter(pl.col("node") == "n2").lazy(), _t(0), _t(0) + dt.timedelta(days=2),
            _t(12) + dt.timedelta(days=1),
        ).collect()  # fmt: skip
        assert per["gpu_s"].sum() == 144_000.0
    later = pl.DataFrame([row(2, closed), row(7, closed + dt.timedelta(hours=1)), row(5, None)])
    assert latest_node_events(later)["end_at"].to_list() == [closed + dt.timedelta(hours=1)]
