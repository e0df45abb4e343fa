"""The daily schedule and the new-input-files sensor request the right partitions."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dagster as dg
import pytest

from pipelines.automation import SLURM_POLL_JOB
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


def test_the_slurm_poll_is_scheduled_only_where_the_source_is_live(tmp_path: Path) -> None:
    """Exported files: no poll schedule. ``[sources] sacct = "cli"``: ``slurm_live_poll`` every
    two minutes, one run per Slurm cluster (slurm-a, not k8s-b) polling ``squeue``."""
    assert "slurm_live_poll" not in {s.name for s in _defs(tmp_path).schedules or []}
    path = write_config(tmp_path)
    path.write_text(path.read_text() + '[sources]\nsacct = "cli"\n')
    defs = build_defs(load_config(path))
    sched = defs.get_schedule_def("slurm_live_poll")
    assert sched.cron_schedule == "*/2 * * * *"
    assert sched.job_name == SLURM_POLL_JOB
    ctx = dg.build_schedule_context(
        scheduled_execution_time=dt.datetime(2026, 11, 3, 10, 2, tzinfo=dt.UTC),
        repository_def=defs.get_repository_def(),
    )
    reqs = list(sched.evaluate_tick(ctx).run_requests or [])
    assert [r.run_config["ops"]["poll_slurm_state"]["config"] for r in reqs] == [
        {"spool_dir": str(tmp_path / "inputs"), "cluster": "slurm-a", "kinds": ["squeue"]}
    ]


def test_the_poll_job_appends_a_stamped_squeue_poll_to_the_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schedule's job run in process with a stand-in ``squeue`` on PATH (the real one runs
    in tests/integration/test_slurm_topology.py through ``goodput poll slurm``): two runs give
    two ``# poll_time=`` blocks in ``<inputs>/slurm-a/squeue/squeue_<today>.txt``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "squeue"
    fake.write_text("#!/bin/sh\necho 'JOBID|STATE'\necho '7|PENDING'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    path = write_config(tmp_path)
    path.write_text(path.read_text() + '[sources]\nsacct = "cli"\n')
    defs = build_defs(load_config(path))
    job = defs.get_job_def(SLURM_POLL_JOB)
    config = {"ops": {"poll_slurm_state": {"config": {
        "spool_dir": str(tmp_path / "inputs"), "cluster": "slurm-a", "kinds": ["squeue"],
    }}}}  # fmt: skip
    before = dt.datetime.now(dt.UTC)
    for _ in range(2):
        assert job.execute_in_process(run_config=config).success
    day = before.date().isoformat()
    text = (tmp_path / "inputs" / "slurm-a" / "squeue" / f"squeue_{day}.txt").read_text()
    assert text.count("# poll_time=") == 2
    assert text.count("7|PENDING\n") == 2
    stamp = int(text.splitlines()[0].split("=")[1])
    assert int(before.timestamp()) - 1 <= stamp <= int(before.timestamp()) + 60
