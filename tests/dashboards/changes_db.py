"""A small serving copy with hand-written ``policy_changes`` and ``policy_change_impact`` rows,
for the Changes page, the chart annotations and the weekly report's changes section.

Changes (UTC): c1 account=speech shares 8 → 3 by alice, 2026-03-05 10:00 (a transaction);
c2 SchedulerParameters:bf_window 60 → 2880 and c3 PriorityWeightFairShare 1000 → 10000, both
between two ``scontrol show config`` snapshots 2026-03-09 06:00 and 2026-03-10 06:00 (one bundle,
b2); c4 cq-prod nominalQuota 24 → 19 on k8s-b, 2026-03-07 12:00 (no effect measured).
Effects: c1 on jain +0.05 [0.02, 0.08], improved, MDE 0.03; bundle b2 on wait_p90_h[64+]
−3.00 h [−5.00, −1.00] improved, MDE 2 h, and on occupancy +0.01 [−0.02, 0.04], no detectable
effect, MDE 0.05. The recommendation rec-000000000001 (registry_drift_slurm, target KPI jain)
was applied by c1 and is confirmed.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

UTC = dt.UTC


def t(day: int, hour: int = 0) -> dt.datetime:
    """2026-03-<day> <hour>:00 UTC."""
    return dt.datetime(2026, 3, day, hour, tzinfo=UTC)


LEDGER = [
    ("c1", "slurm-a", "slurm", "association", "account=speech", "shares", "8", "3", "alice",
     t(5, 10), None, "sacctmgr list transactions"),
    ("c2", "slurm-a", "slurm", "config", "slurm.conf", "SchedulerParameters:bf_window", "60",
     "2880", None, t(10, 6), t(9, 6), "scontrol show config"),
    ("c3", "slurm-a", "slurm", "config", "slurm.conf", "PriorityWeightFairShare", "1000",
     "10000", None, t(10, 6), t(9, 6), "scontrol show config"),
    ("c4", "k8s-b", "kueue", "cluster_queue", "clusterqueue=cq-prod",
     "nominalQuota[h100/nvidia.com/gpu]", "24", "19", None, t(7, 12), t(6, 12),
     "kubectl get clusterqueues"),
]  # fmt: skip

IMPACT = [
    ("c1", "b1", "slurm-a", "association", "jain", "its", t(1), t(12, 10), 30, 7, "index",
     0.80, 0.85, 0.05, 0.02, 0.08, 0.01, 0.03, 0.03, "improved"),
    ("c2", "b2", "slurm-a", "config", "wait_p90_h[64+]", "its", t(1), t(17, 6), 30, 7, "h",
     10.0, 7.0, -3.0, -5.0, -1.0, 0.004, 0.02, 2.0, "improved"),
    ("c3", "b2", "slurm-a", "config", "wait_p90_h[64+]", "its", t(1), t(17, 6), 30, 7, "h",
     10.0, 7.0, -3.0, -5.0, -1.0, 0.004, 0.02, 2.0, "improved"),
    ("c2", "b2", "slurm-a", "config", "occupancy", "its", t(1), t(17, 6), 30, 7, "ratio",
     0.70, 0.71, 0.01, -0.02, 0.04, 0.5, 0.6, 0.05, "no detectable effect"),
    ("c3", "b2", "slurm-a", "config", "occupancy", "its", t(1), t(17, 6), 30, 7, "ratio",
     0.70, 0.71, 0.01, -0.02, 0.04, 0.5, 0.6, 0.05, "no detectable effect"),
]  # fmt: skip

_LEDGER_DDL = (
    "change_id VARCHAR, cluster VARCHAR, scheduler VARCHAR, scope VARCHAR, object VARCHAR, "
    "key VARCHAR, old VARCHAR, new VARCHAR, actor VARCHAR, changed_at TIMESTAMPTZ, "
    "changed_after TIMESTAMPTZ, source VARCHAR"
)
_IMPACT_DDL = (
    "change_id VARCHAR, bundle_id VARCHAR, cluster VARCHAR, scope VARCHAR, kpi VARCHAR, "
    "method VARCHAR, window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, n_pre INTEGER, "
    "n_post INTEGER, unit VARCHAR, before DOUBLE, after DOUBLE, estimate DOUBLE, ci_low DOUBLE, "
    "ci_high DOUBLE, p_value DOUBLE, placebo_p DOUBLE, mde DOUBLE, verdict VARCHAR"
)


def build(path: Path, *, impact: bool = True) -> Path:
    """Write the database: the ledger (``analytics.policy_changes`` behind the view), the
    effects view when ``impact``, and the few rows the filters read (days 2026-03-01 … 03-20)."""
    with duckdb.connect(str(path)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA analytics")
        con.execute(f"CREATE TABLE analytics.policy_changes ({_LEDGER_DDL})")
        con.executemany(
            f"INSERT INTO analytics.policy_changes VALUES ({', '.join(['?'] * 12)})", LEDGER
        )
        con.execute("CREATE VIEW policy_changes AS SELECT * FROM analytics.policy_changes")
        if impact:
            con.execute(f"CREATE TABLE analytics.policy_change_impact ({_IMPACT_DDL})")
            con.executemany(
                f"INSERT INTO analytics.policy_change_impact VALUES ({', '.join(['?'] * 20)})",
                IMPACT,
            )
            con.execute(
                "CREATE VIEW policy_change_impact AS SELECT * FROM analytics.policy_change_impact"
            )
        con.execute(
            "CREATE TABLE jobs AS SELECT * FROM (VALUES ('slurm-a', 'nlp', "
            "TIMESTAMPTZ '2026-03-01 00:00:00+00', TIMESTAMPTZ '2026-03-01 01:00:00+00'), "
            "('k8s-b', 'nlp', TIMESTAMPTZ '2026-03-20 00:00:00+00', "
            "TIMESTAMPTZ '2026-03-20 01:00:00+00')) AS j(cluster, team, eligible_at, start_at)"
        )
        con.execute(
            "CREATE TABLE occupancy_hourly AS SELECT 'slurm-a' AS cluster, "
            "TIMESTAMPTZ '2026-03-01 00:00:00+00' AS hour, "
            "TIMESTAMPTZ '2026-03-20 00:00:00+00' AS as_of"
        )
        con.execute(
            "CREATE TABLE time_to_start_jobs AS SELECT "
            "TIMESTAMPTZ '2026-03-01 00:00:00+00' AS eligible_at"
        )
        con.execute("CREATE TABLE fairness_weekly AS SELECT 'nlp' AS team")
        con.execute(
            "CREATE TABLE analytics.recommendations AS SELECT 'rec-000000000001' AS id, "
            "'registry_drift_slurm' AS rule, 'confirmed' AS status, 'c1' AS change_id"
        )
        con.execute("CREATE VIEW recommendations AS SELECT * FROM analytics.recommendations")
    return path
