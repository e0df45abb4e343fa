"""Real Slurm 22.05 against itself: sacct's job records agree with sreport's rolled-up hour.

The ``slurm_cluster`` fixture ran the job mix of ``tests/integration/slurm/jobmix.py`` on a real
4-node, 32-GPU cluster and rolled up the hour it ran in. These tests check that sacct shows
every job with its expected outcome, and that sreport's GPU-seconds for the hour equal what a
plain reading of sacct's allocation rows gives. That sum is the oracle for the pipeline's own
parser (last test).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from tests.integration.slurm import GPUS_PER_NODE, NODE_NAMES, ClusterRun
from tests.integration.slurm.reconcile import assert_reconciles

pytestmark = pytest.mark.slurm

Row = dict[str, str]


def _rows(text: str) -> list[Row]:
    """sacct ``--parsable2`` text → one dict per line, keyed by the header."""
    header, *lines = text.splitlines()
    names = header.split("|")
    rows = [dict(zip(names, line.split("|"), strict=True)) for line in lines if line]
    return rows


def _allocations(run: ClusterRun) -> list[Row]:
    """Allocation rows (one per job attempt), not steps (``12.batch``, ``12.0``, ``12.extern``)."""
    return [row for row in _rows(run.sacct_text) if "." not in row["JobID"]]


def _attempts(run: ClusterRun, job_id: str) -> list[Row]:
    """The allocation rows of one job, oldest attempt first."""
    rows = [row for row in _allocations(run) if row["JobID"] == job_id]
    return sorted(rows, key=lambda row: row["Submit"])


def _gpus(row: Row) -> int:
    """GPUs in a row's AllocTRES (``…,gres/gpu=4,…``); 0 when there are none."""
    for item in row["AllocTRES"].split(","):
        name, _, value = item.partition("=")
        if name == "gres/gpu":
            return int(value)
    return 0


def _moment(text: str) -> datetime | None:
    """A sacct time (UTC, ``TZ=UTC``) or None for ``Unknown``/``None``."""
    if not text or not text[0].isdigit():
        return None
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _gpu_seconds_in_hour(run: ClusterRun) -> float:
    """Σ over allocation rows of GPUs × elapsed, clipped to the rolled-up hour."""
    total = 0.0
    for row in _allocations(run):
        start, end = _moment(row["Start"]), _moment(row["End"])
        if start is None or end is None:
            continue
        start, end = max(start, run.hour_start), min(end, run.hour_end)
        if end > start:
            total += _gpus(row) * (end - start).total_seconds()
    return total


def _explain(run: ClusterRun, job_id: str) -> str:
    """Why a job ended as it did: its sacct rows (state, exit code, reason, nodes), what it wrote
    to stdout/stderr, and the daemon log lines that name it. For assertion messages."""
    rows = [row for row in _rows(run.sacct_text) if row["JobID"].split(".")[0] == job_id]
    parts = [
        f"{row['JobID']} (raw {row['JobIDRaw']}): {row['State']} exit {row['ExitCode']} "
        f"reason {row['Reason']!r} nodes {row['NodeList']}"
        for row in rows
    ]
    for raw in dict.fromkeys(row["JobIDRaw"].split(".")[0] for row in rows):
        parts.append(f"output of {raw}: {run.cluster.job_output(raw)!r}")
        parts += run.cluster.node_log_lines(raw)
    return "\n  ".join(["", *parts])


def test_every_job_appears_with_its_expected_final_state(slurm_cluster: ClusterRun) -> None:
    """Each submitted job (array tasks one by one) has sacct rows ending in the expected state."""
    wrong = {}
    explained: list[str] = []
    for job in slurm_cluster.mix.jobs:
        attempts = _attempts(slurm_cluster, job.job_id)
        states = tuple(row["State"] for row in attempts)
        ok = len(states) == len(job.states) and all(
            seen.split()[0] == want for seen, want in zip(states, job.states, strict=True)
        )
        if not ok:
            wrong[f"{job.key} ({job.job_id})"] = (states, job.states)
            explained.append(f"{job.key}:{_explain(slurm_cluster, job.job_id)}")
    assert not wrong, f"seen vs expected: {wrong}\n" + "\n".join(explained)


def test_requeued_job_shows_both_attempts(slurm_cluster: ClusterRun) -> None:
    """``sacct -D`` keeps the requeued attempt next to the rerun, each with its own run time."""
    job = slurm_cluster.mix.by_key("requeue")
    first, second = _attempts(slurm_cluster, job.job_id)
    assert (first["State"], second["State"]) == ("REQUEUED", "COMPLETED")
    first_end, second_start = _moment(first["End"]), _moment(second["Start"])
    assert first_end is not None and second_start is not None
    assert second_start >= first_end
    assert _gpus(first) == _gpus(second) == job.gpus


def test_exit_codes_tell_exit_from_signal(slurm_cluster: ClusterRun) -> None:
    """A script exiting 1 shows ``1:0``; one killed by SIGKILL shows ``0:9``; both FAILED."""
    for key in ("failed-exit", "failed-signal"):
        job = slurm_cluster.mix.by_key(key)
        (row,) = _attempts(slurm_cluster, job.job_id)
        assert (row["State"], row["ExitCode"]) == ("FAILED", job.exit_code), key


def test_timeout_job_ran_past_its_one_minute_limit(slurm_cluster: ClusterRun) -> None:
    """The 1-minute job ends as TIMEOUT after at least 60 s (limits are checked every 30 s)."""
    (row,) = _attempts(slurm_cluster, slurm_cluster.mix.by_key("timeout").job_id)
    assert row["State"] == "TIMEOUT"
    assert row["Timelimit"] == "00:01:00"
    assert 60 <= int(row["ElapsedRaw"]) <= 120


def test_cancelled_while_pending_never_ran(slurm_cluster: ClusterRun) -> None:
    """The job cancelled on its dependency has no start and no allocation."""
    (row,) = _attempts(slurm_cluster, slurm_cluster.mix.by_key("cancel-pending").job_id)
    assert row["State"].startswith("CANCELLED")
    assert _moment(row["Start"]) is None
    assert _gpus(row) == 0
    assert int(row["ElapsedRaw"]) == 0


def test_cancelled_while_running_was_charged(slurm_cluster: ClusterRun) -> None:
    """The job cancelled while running held its GPUs for a few seconds."""
    job = slurm_cluster.mix.by_key("cancel-running")
    (row,) = _attempts(slurm_cluster, job.job_id)
    assert row["State"] == f"CANCELLED by {slurm_cluster.cluster.users[job.user].uid}"
    assert _gpus(row) == job.gpus
    assert int(row["ElapsedRaw"]) >= 5


def test_allocations_match_what_was_asked(slurm_cluster: ClusterRun) -> None:
    """GPUs, nodes, partition, user and account of each allocation are the requested ones."""
    for job in slurm_cluster.mix.jobs:
        if not job.ran:
            continue
        row = _attempts(slurm_cluster, job.job_id)[-1]
        seen = (_gpus(row), int(row["NNodes"]), row["Partition"], row["User"], row["Account"])
        assert seen == (job.gpus, job.nodes, job.partition, job.user, job.account), job.key


def test_two_node_job_has_its_srun_step(slurm_cluster: ClusterRun) -> None:
    """The 16-GPU job spans two nodes and its ``srun`` step is a row of its own."""
    job = slurm_cluster.mix.by_key("two-node")
    steps = {row["JobID"]: row for row in _rows(slurm_cluster.sacct_text)}
    assert f"{job.job_id}.batch" in steps, _explain(slurm_cluster, job.job_id)
    assert f"{job.job_id}.0" in steps, _explain(slurm_cluster, job.job_id)
    step = steps[f"{job.job_id}.0"]
    assert (step["State"], step["NNodes"], step["NTasks"]) == ("COMPLETED", "2", "2")


def test_whole_cluster_job_pended_until_the_others_ended(slurm_cluster: ClusterRun) -> None:
    """The 32-GPU job (lowest priority) was eligible from its submission, waited for resources,
    and started only once every other GPU allocation of the mix had ended."""
    job = slurm_cluster.mix.by_key("whole-cluster")
    (row,) = _attempts(slurm_cluster, job.job_id)
    eligible, start = _moment(row["Eligible"]), _moment(row["Start"])
    assert eligible is not None and start is not None
    assert (start - eligible).total_seconds() >= 30, _explain(slurm_cluster, job.job_id)
    others = [
        _moment(other["End"])
        for other in _allocations(slurm_cluster)
        if other["JobID"] != job.job_id and _gpus(other) > 0
    ]
    assert others and all(end is not None and end <= start for end in others)


def test_array_throttle_keeps_two_tasks_running(slurm_cluster: ClusterRun) -> None:
    """With ``%2`` no more than two of the four array tasks ever run at the same time."""
    rows = [_attempts(slurm_cluster, job.job_id)[0] for job in slurm_cluster.mix.jobs
            if job.key.startswith("array-")]  # fmt: skip
    spans = []
    for row in rows:
        start, end = _moment(row["Start"]), _moment(row["End"])
        assert start is not None and end is not None
        spans.append((start, end))
    assert len(spans) == 4
    for start, _ in spans:
        running = sum(1 for s, e in spans if s <= start < e)
        assert running <= 2


def test_sreport_reported_is_the_whole_cluster_for_the_whole_hour(
    slurm_cluster: ClusterRun,
) -> None:
    """Reported GPU-seconds for the hour = 32 GPUs × 3600 s; nothing was down."""
    capacity = len(NODE_NAMES) * GPUS_PER_NODE * 3600
    assert slurm_cluster.sreport["Reported"] == capacity
    assert slurm_cluster.sreport["Down"] == 0
    assert slurm_cluster.sreport["PlannedDown"] == 0


def test_sreport_parts_add_up_to_reported(slurm_cluster: ClusterRun) -> None:
    """Allocated + Down + PlannedDown + Idle + Planned = Reported."""
    report = slurm_cluster.sreport
    parts = ("Allocated", "Down", "PlannedDown", "Idle", "Planned")
    assert sum(report[key] for key in parts) == report["Reported"]


def test_sreport_allocated_equals_sacct_gpu_seconds(slurm_cluster: ClusterRun) -> None:
    """sreport's Allocated = Σ allocation rows' GPUs × elapsed in the hour, within 0.1 %.

    Every allocation that started has an end, so rule "running at the rollup" (METRICS.md
    "Comparison with Slurm": the rollup counts a running job to the hour's end) moves nothing.
    """
    started = [row for row in _allocations(slurm_cluster) if _moment(row["Start"]) is not None]
    assert started and all(_moment(row["End"]) is not None for row in started)
    from_sacct = _gpu_seconds_in_hour(slurm_cluster)
    assert from_sacct > 0
    assert_reconciles("Allocated (sacct)", from_sacct, slurm_cluster.sreport["Allocated"])


def test_project_parser_agrees_with_sacct(slurm_cluster: ClusterRun) -> None:
    """``parse_sacct`` reads the live capture into sacct's rows, states and GPU-seconds."""
    import polars as pl

    from pipelines.slurm._sacct_parse import parse_sacct

    result = parse_sacct("live-sacct.psv", text=slurm_cluster.sacct_text)
    assert result.rejected.height == 0, result.rejected.to_dicts()
    assert result.rows.height == len(_rows(slurm_cluster.sacct_text))

    allocations = result.rows.filter(pl.col("is_allocation"))
    plain = _allocations(slurm_cluster)
    assert sorted(allocations["job_id"].to_list()) == sorted(row["JobID"] for row in plain)
    assert Counter(allocations["state"].to_list()) == Counter(
        row["State"].split()[0] for row in plain
    )
    cancelled_by = allocations.filter(pl.col("cancelled_by_uid").is_not_null())
    assert Counter(cancelled_by["cancelled_by_uid"].to_list()) == Counter(
        int(row["State"].split()[-1]) for row in plain if row["State"].startswith("CANCELLED by")
    )

    hour_start, hour_end = slurm_cluster.hour_start, slurm_cluster.hour_end
    overlap = (
        pl.min_horizontal(pl.col("end_at"), pl.lit(hour_end))
        - pl.max_horizontal(pl.col("start_at"), pl.lit(hour_start))
    ).dt.total_seconds()
    gpu_seconds = allocations.select(
        (pl.col("gpus").fill_null(0) * overlap.clip(lower_bound=0).fill_null(0)).sum()
    ).item()
    assert gpu_seconds == pytest.approx(_gpu_seconds_in_hour(slurm_cluster))
    assert_reconciles("Allocated (parse_sacct)", gpu_seconds, slurm_cluster.sreport["Allocated"])
