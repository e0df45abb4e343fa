"""The job report's observed GPU-seconds weigh a MIG slice by the MIG fraction of METRICS.md
(``sql/report/job_attempts.sql`` with ``metrics.mig.MIG_PATTERN``), like the metric engine.

Hand-made (no public serving copy has MIG samples): one attempt from 00:00 to 00:10 UTC, one
5-minute bucket at 00:00 per slice, each sample with activity 0.5. A slice's bucket counts its
300 s overlap × its fraction: A30 ``1g.6gb`` 300 × 1/4 = 75 s; site-named ``a100_3g.20gb``
300 × 3/7 ≈ 128.571 s; an impossible ``9g.99gb`` counts as a whole GPU, 300 s.
"""

from __future__ import annotations

import duckdb
import pytest

from metrics.mig import MIG_PATTERN
from pipelines.report._common import query


@pytest.mark.parametrize(
    ("profile", "observed_s"),
    [("1g.6gb", 75.0), ("a100_3g.20gb", 300 * 3 / 7), ("9g.99gb", 300.0), (None, 300.0)],
)
def test_observed_gpu_seconds_weigh_the_slice(profile: str | None, observed_s: float) -> None:
    con = duckdb.connect()
    con.execute(
        """
        CREATE TABLE jobs AS SELECT
            'slurm' AS source, 'c1' AS cluster, '7' AS job_id, '7' AS job_id_raw, 0 AS attempt,
            't' AS team, 'a' AS account, 'u' AS user_name, 'p' AS partition, 'q' AS qos,
            'COMPLETED' AS state, 1.0 AS gpus, 1.0 AS req_gpus, NULL::VARCHAR AS gpu_type,
            TIMESTAMPTZ '2025-01-01 00:00:00+00' AS submit_at,
            TIMESTAMPTZ '2025-01-01 00:00:00+00' AS eligible_at,
            TIMESTAMPTZ '2025-01-01 00:00:00+00' AS start_at,
            TIMESTAMPTZ '2025-01-01 00:10:00+00' AS end_at,
            0.0 AS wait_s, 600.0 AS run_s, 600.0 AS gpu_s, 'n1' AS node_list,
            3600.0 AS timelimit_s, 0 AS exit_code, TIMESTAMPTZ '2025-01-02 00:00:00+00' AS as_of
        """
    )
    # no pieces of held GPUs: the attempt holds its GPU over its span
    con.execute(
        "CREATE TABLE job_holds AS SELECT cluster, job_id, attempt, start_at, end_at,"
        " gpus, false AS pieced FROM jobs"
    )
    con.execute(
        """
        CREATE TABLE dcgm_samples AS SELECT
            'c1' AS cluster, '7' AS hpc_job, NULL::VARCHAR AS namespace, NULL::VARCHAR AS pod,
            'GPU-1' AS gpu_uuid, 1 AS mig_instance, $p::VARCHAR AS mig_profile,
            'DCGM_FI_PROF_GR_ENGINE_ACTIVE' AS metric,
            TIMESTAMPTZ '2025-01-01 00:01:00+00' AS ts, 0.5 AS value
        """,
        {"p": profile},
    )
    # The pipeline attributed the slice's bucket to the attempt (sql/views/gpu_activity.sql).
    con.execute(
        """
        CREATE TABLE gpu_activity AS SELECT
            'c1' AS cluster, 'GPU-1' AS gpu_uuid, 1 AS mig_instance,
            TIMESTAMPTZ '2025-01-01 00:00:00+00' AS bucket, '7' AS job_id, 0::BIGINT AS attempt,
            'label_hpc_job' AS attribution
        """
    )
    out = query(
        con, "job_attempts", job_id="7", cluster=None, idle_below=0.1, mig_pattern=MIG_PATTERN
    )
    assert out.height == 1
    assert out["observed_gpu_s"][0] == pytest.approx(observed_s)
    assert out["mean_activity"][0] == pytest.approx(0.5)
