"""The Queue page's estimated start, on a serving copy built by hand so every value is checked by
hand: the scheduler model replayed from the cut-off (``metrics.scheduler_model.estimate_starts``).

The copy holds only what the page reads: one Slurm cluster ``c1`` with two 8-GPU nodes in
partition ``gpu``, two allocations running at the cut-off (Tue 2026-11-10 00:00 UTC), three jobs
pending, and one Kueue workload pending (not modelled).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, write_config

PAGE = REPO / "dashboards" / "pages" / "queue.py"
CUT = "TIMESTAMPTZ '2026-11-10 00:00:00+00'"

_TABLES = f"""
SET TimeZone = 'UTC';
CREATE TABLE occupancy_hourly AS
    SELECT 'c1' AS cluster, TIMESTAMPTZ '2026-11-09 00:00:00+00' + INTERVAL (h) HOUR AS hour,
           {CUT} AS as_of
    FROM range(24) AS r(h);
CREATE TABLE slurm_jobs (
    cluster VARCHAR, job_id VARCHAR, step VARCHAR, user_name VARCHAR, team VARCHAR,
    account VARCHAR, partition VARCHAR, qos VARCHAR, state VARCHAR, gpus DOUBLE,
    req_gpus DOUBLE, submit_at TIMESTAMPTZ, eligible_at TIMESTAMPTZ, start_at TIMESTAMPTZ,
    end_at TIMESTAMPTZ, timelimit_s DOUBLE, reason VARCHAR);
INSERT INTO slurm_jobs VALUES
    ('c1', 'A', NULL, 'user-aaaaaa', 't', 't', 'gpu', 'normal', 'RUNNING', 8, 8,
     '2026-11-09 21:00+00', '2026-11-09 21:00+00', '2026-11-09 22:00+00', NULL, 14400, NULL),
    ('c1', 'B', NULL, 'user-bbbbbb', 't', 't', 'gpu', 'normal', 'RUNNING', 4, 4,
     '2026-11-09 22:30+00', '2026-11-09 22:30+00', '2026-11-09 23:00+00', NULL, 7200, NULL),
    ('c1', 'P1', NULL, 'user-cccccc', 't', 't', 'gpu', 'normal', 'PENDING', 0, 8,
     '2026-11-09 20:00+00', '2026-11-09 20:00+00', NULL, NULL, 10800, 'Resources'),
    ('c1', 'P2', NULL, 'user-cccccc', 'u', 'u', 'gpu', 'normal', 'PENDING', 0, 4,
     '2026-11-09 21:00+00', '2026-11-09 21:00+00', NULL, NULL, 7200, 'Priority'),
    ('c1', 'P3', NULL, 'user-dddddd', 'u', 'u', 'gpu', 'normal', 'PENDING', 0, 2,
     '2026-11-09 21:30+00', '2026-11-09 21:30+00', NULL, NULL, 1800, 'Priority');
CREATE TABLE jobs AS
    SELECT cluster, job_id, team, eligible_at, start_at, {CUT} AS as_of
    FROM slurm_jobs WHERE start_at IS NOT NULL;
CREATE TABLE time_to_start_jobs AS SELECT eligible_at FROM slurm_jobs;
CREATE TABLE fairness_weekly AS SELECT DISTINCT team FROM slurm_jobs;
CREATE TABLE nodes (cluster VARCHAR, host VARCHAR, partition VARCHAR, gpus DOUBLE);
INSERT INTO nodes VALUES ('c1', 'n1', 'gpu', 8), ('c1', 'n2', 'gpu', 8);
CREATE TABLE k8s_workloads (
    cluster VARCHAR, job_id VARCHAR, attempt BIGINT, team VARCHAR, namespace VARCHAR,
    cluster_queue VARCHAR, queue_name VARCHAR, req_gpus DOUBLE, gpus DOUBLE,
    created_at TIMESTAMPTZ, eligible_at TIMESTAMPTZ, top_pending_reason VARCHAR,
    as_of TIMESTAMPTZ, state VARCHAR);
INSERT INTO k8s_workloads VALUES
    ('k1', 'ns/w1', 0, 't', 'ns', 'cq', 'lq', 4, 0, '2026-11-09 23:00+00',
     '2026-11-09 23:00+00', 'kueue: quota', {CUT}, 'PENDING');
CREATE TABLE k8s_pending_reasons (
    cluster VARCHAR, job_id VARCHAR, attempt BIGINT, component VARCHAR, example VARCHAR,
    last_seen TIMESTAMPTZ);
"""


@pytest.fixture
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The hand-built serving copy, wired into the page through the environment."""
    path = tmp_path / "serving.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(_TABLES)
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(path))
    cfg = write_config(tmp_path, clusters=(("c1", "slurm", "UTC"), ("k1", "kubernetes", "UTC")))
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    return str(path)


def test_estimated_starts_are_the_hand_worked_schedule(serving: str) -> None:
    """At the cut-off Tue 00:00 UTC, A (8 GPUs, started Mon 22:00, limit 4 h) fills n1 until
    02:00 and B (4 GPUs, started 23:00, limit 2 h) holds half of n2 until 01:00.

    - P1 (8 GPUs, eligible first) is the head; no node has 8 free until B ends: 01:00, on n2
      (shadow time 01:00; n2 reserved for it);
    - P2 (4 GPUs, 2 h limit) would end at 02:00, after the shadow, on the reserved n2: it waits
      for A to free n1 at 02:00;
    - P3 (2 GPUs, 30 min limit) ends by 00:30 ≤ 01:00: backfilled on n2 at once, 00:00.

    The Kueue workload is not modelled; the team filter does not change a start (the replay
    keeps every pending job of the cluster)."""
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    at.run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Pending"] == "4"
    table = pl.from_pandas(at.dataframe[0].value)
    got = dict(zip(table["job"], table["estimated start"], strict=True))
    assert got == {
        "P1": "2026-11-10 01:00 UTC (in 1.0 h)",
        "P2": "2026-11-10 02:00 UTC (in 2.0 h)",
        "P3": "2026-11-10 00:00 UTC (in 0 min)",
        "ns/w1": "n/a (Kueue admission is not modelled)",
    }

    at.sidebar.selectbox(key="team").set_value("u").run()
    assert not at.exception
    table = pl.from_pandas(at.dataframe[0].value)
    assert dict(zip(table["job"], table["estimated start"], strict=True)) == {
        "P2": "2026-11-10 02:00 UTC (in 2.0 h)",
        "P3": "2026-11-10 00:00 UTC (in 0 min)",
    }
