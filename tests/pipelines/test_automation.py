"""The daily schedule and the new-input-files sensor request the right partitions."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dagster as dg

from pipelines.config import load_config
from pipelines.definitions import ANALYTICS_JOB, RAW_JOB, build_defs
from tests.conftest import write_config


def _defs(tmp_path: Path) -> dg.Definitions:
    return build_defs(load_config(write_config(tmp_path)))


def test_daily_schedule_requests_yesterday_for_every_cluster(tmp_path: Path) -> None:
    """Evaluated at 2026-11-03 00:30 UTC it asks for 2026-11-02 of slurm-a and k8s-b."""
    defs = _defs(tmp_path)
    sched = defs.get_schedule_def("daily_ingest")
    ctx = dg.build_schedule_context(
        scheduled_execution_time=dt.datetime(2026, 11, 3, 0, 30, tzinfo=dt.UTC),
        repository_def=defs.get_repository_def(),
    )
    reqs = list(sched.evaluate_tick(ctx).run_requests or [])
    keys = sorted(str(r.partition_key) for r in reqs)
    assert keys == ["k8s-b|2026-11-02", "slurm-a|2026-11-02"]


def test_sensor_requests_changed_partitions_once(tmp_path: Path) -> None:
    """A new file requests its cluster-day and a refresh; the same cursor requests nothing."""
    defs = _defs(tmp_path)
    sensor = defs.get_sensor_def("new_input_files")
    folder = tmp_path / "inputs" / "slurm-a" / "sacct"
    folder.mkdir(parents=True)
    f = folder / "sacct_2026-11-02.psv"
    f.write_text("JobID|State\n1|PENDING\n")
    res = sensor.evaluate_tick(dg.build_sensor_context(cursor=None, definitions=defs))
    reqs = res.run_requests or []
    assert [(r.job_name, str(r.partition_key)) for r in reqs] == [
        (RAW_JOB, "slurm-a|2026-11-02"),
        (ANALYTICS_JOB, "None"),
    ]
    again = sensor.evaluate_tick(dg.build_sensor_context(cursor=res.cursor, definitions=defs))
    assert not again.run_requests
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000_000))
    changed = sensor.evaluate_tick(dg.build_sensor_context(cursor=res.cursor, definitions=defs))
    assert [str(r.partition_key) for r in changed.run_requests or []][:1] == ["slurm-a|2026-11-02"]
