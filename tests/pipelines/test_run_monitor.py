"""A ``goodput materialize`` killed mid-run must not wedge the next one: its run is failed and
its ``duckdb`` pool slot freed (``pipelines/run_monitor.py``), on a real Dagster instance with
the project's concurrency settings (pool limit 1)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import dagster as dg

from pipelines.run_monitor import HOST_TAG, PID_TAG, free_dead_runs, run_tags


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _run(instance: dg.DagsterInstance, tags: dict[str, str]) -> str:
    run_id = str(uuid.uuid4())
    instance.add_run(
        dg.DagsterRun(job_name="raw", run_id=run_id, status=dg.DagsterRunStatus.STARTED, tags=tags)
    )
    return run_id


@dg.asset(pool="duckdb")
def pooled() -> int:
    return 1


def test_dead_run_is_failed_and_its_slot_freed(tmp_path: Path) -> None:
    """A STARTED run whose process is gone holds the one ``duckdb`` slot: it is marked FAILURE
    and the slot freed; a live run (this process) and a run of another host are left alone;
    then a pooled asset materializes (before the fix it would wait for the slot forever)."""
    overrides = {"concurrency": {"pools": {"default_limit": 1}}}
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=overrides) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("duckdb", 1)
        dead = _run(instance, {**run_tags(), PID_TAG: str(_dead_pid())})
        live = _run(instance, run_tags())
        elsewhere = _run(instance, {HOST_TAG: "another-host", PID_TAG: str(_dead_pid())})
        claim = storage.claim_concurrency_slot("duckdb", dead, "raw_step")
        assert claim.is_claimed
        assert not storage.claim_concurrency_slot("duckdb", live, "other_step").is_claimed
        storage.free_concurrency_slot_for_step(live, "other_step")  # drop the pending claim

        said: list[str] = []
        assert free_dead_runs(instance, log=said.append) == [dead]
        assert "pid" in said[0] and "marked failed" in said[0]

        def status(run_id: str) -> dg.DagsterRunStatus:
            run = instance.get_run_by_id(run_id)
            assert run is not None
            return run.status

        assert status(dead) == dg.DagsterRunStatus.FAILURE
        assert status(live) == dg.DagsterRunStatus.STARTED
        assert status(elsewhere) == dg.DagsterRunStatus.STARTED
        assert storage.get_concurrency_info("duckdb").active_slot_count == 0
        assert free_dead_runs(instance, log=said.append) == []  # idempotent

        result = dg.materialize([pooled], instance=instance)
        assert result.success
        assert result.output_for_node("pooled") == 1


def test_slots_of_finished_runs_are_freed(tmp_path: Path) -> None:
    """A slot still claimed by a run that has finished (its process died after the run was
    marked done, before the slot was released) is freed too."""
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("duckdb", 1)
        run_id = _run(instance, {})
        assert storage.claim_concurrency_slot("duckdb", run_id, "s").is_claimed
        run = instance.get_run_by_id(run_id)
        assert run is not None
        instance.report_run_failed(run)
        assert free_dead_runs(instance, log=lambda _m: None) == [run_id]
        assert storage.get_concurrency_info("duckdb").active_slot_count == 0
