"""A ``goodput materialize`` SIGKILLed while a Dagster run holds the ``duckdb`` pool slot must
not wedge the next one (issue 14): the next ``goodput materialize`` fails the dead run, frees
its slot (``pipelines/run_monitor.py``) and runs to the end. Real processes, a real Dagster
instance with the project's ``dagster.yaml`` (pool limit 1); nothing is mocked."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import REPO, write_config


def _materialize(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "materialize"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_materialize_after_a_killed_materialize_completes(
    fleet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "GOODPUT_DAGSTER_DIR": str(home / "storage"),
        "GOODPUT_DAGSTER_LOGS": str(home / "logs"),
        "GOODPUT_CONFIG": str(write_config(tmp_path, days_dir=fleet_dir)),
    }
    for key in ("GOODPUT_DAGSTER_DIR", "GOODPUT_DAGSTER_LOGS"):
        monkeypatch.setenv(key, env[key])
    (home / "storage").mkdir()
    first = _materialize(env)
    instance = dg.DagsterInstance.from_config(str(home))
    storage = instance.event_log_storage
    deadline = time.monotonic() + 300
    # kill once a run's step holds a concurrency slot (the moment that wedged later runs)
    while not storage.get_concurrency_run_ids() and time.monotonic() < deadline:
        assert first.poll() is None, first.communicate()[0][-2000:]
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    (dead_id,) = storage.get_concurrency_run_ids()
    run = instance.get_run_by_id(dead_id)
    assert run is not None and run.status == dg.DagsterRunStatus.STARTED  # left behind

    second = _materialize(env)
    try:
        out, _ = second.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        second.kill()
        pytest.fail("the materialize after a killed one did not finish (wedged on the pool slot)")
    assert second.returncode == 0, out[-3000:]
    assert "left STARTED by a dead process" in out
    run = instance.get_run_by_id(dead_id)
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
    assert dead_id not in storage.get_concurrency_run_ids()
    assert (tmp_path / "serving.duckdb").exists()
