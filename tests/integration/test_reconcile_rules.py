"""The named sreport comparison rules of ``tests/integration/slurm/reconcile.py``, by hand.

The real cluster's hour exercises none of them with a value other than 0 (the cluster registers
before the hour and every job ends before the rollup), so their arithmetic is pinned here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.integration.slurm.reconcile import (
    assert_reconciles,
    assert_seconds_header,
    before_registration_gpu_s,
    running_at_rollup_gpu_s,
)

HOUR_END = datetime(2026, 11, 30, 3, tzinfo=UTC)
AS_OF = datetime(2026, 11, 30, 2, 42, 16, tzinfo=UTC)


def _row(start: str, end: str, tres: str) -> dict[str, str]:
    return {"Start": start, "End": end, "AllocTRES": tres}


def test_running_job_counts_from_as_of_to_the_hour_end() -> None:
    """4 GPUs running since 02:40 at an as_of of 02:42:16: 4 × 1064 s the rollup adds."""
    rows = [_row("2026-11-30T02:40:00", "Unknown", "billing=4,cpu=4,gres/gpu=4,node=1")]
    assert running_at_rollup_gpu_s(rows, HOUR_END, AS_OF) == 4 * (17 * 60 + 44)


def test_running_job_started_after_as_of_counts_from_its_start() -> None:
    """A job we have not seen start (02:50, after as_of) counts 10 min × its GPUs."""
    rows = [_row("2026-11-30T02:50:00", "Unknown", "cpu=1,gres/gpu=2")]
    assert running_at_rollup_gpu_s(rows, HOUR_END, AS_OF) == 2 * 600


def test_ended_never_started_and_cpu_only_jobs_add_nothing() -> None:
    """Ended jobs, jobs with no start and running jobs without GPUs are no part of the rule."""
    rows = [
        _row("2026-11-30T02:40:00", "2026-11-30T02:41:00", "gres/gpu=8"),
        _row("None", "2026-11-30T02:41:00", ""),
        _row("2026-11-30T02:40:00", "Unknown", "cpu=4,node=1"),
    ]
    assert running_at_rollup_gpu_s(rows, HOUR_END, AS_OF) == 0.0


def test_before_registration_is_capacity_less_registered() -> None:
    """The lab hour: 115200 inventory GPU-s − 41504 registered = 32 GPUs × 2303 s."""
    assert before_registration_gpu_s(115200.0, 41504.0) == 32 * 2303
    assert before_registration_gpu_s(115200.0, 115200.0) == 0.0


def test_tolerance_is_a_tenth_of_a_percent_of_sreport() -> None:
    """|ours + rules − sreport| ≤ 0.001 × sreport passes; one GPU-second more fails."""
    assert_reconciles("Idle", 100_100.0, 100_000.0)
    assert_reconciles("Idle", 100_500.0, 100_000.0, rules=-400.0)
    with pytest.raises(AssertionError):
        assert_reconciles("Idle", 100_101.0, 100_000.0)
    with pytest.raises(AssertionError):
        assert_reconciles("Down", 1.0, 0.0)


def test_only_seconds_captures_are_compared() -> None:
    """sreport's default unit (minutes) is rounded, so such a capture is refused."""
    assert_seconds_header("Usage reported in TRES Seconds\n")
    with pytest.raises(AssertionError):
        assert_seconds_header("Usage reported in TRES Minutes\n")
