"""Registry drift and the schedulers' own view (METRICS.md "Registry drift")."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from metrics.drift import (
    account_shares,
    cluster_queue_teams,
    kueue_quota_shares,
    latest_snapshot,
    registry_drift,
    scheduler_fairshare,
    slurm_share_drift,
)

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")

TEAMS = pl.DataFrame({"team": ["a", "b", "c"], "share": [0.5, 0.3, 0.2]})
MAPPING = pl.DataFrame(
    {
        "kind": ["slurm_account", "slurm_account", "slurm_account", "slurm_account",
                 "k8s_local_queue", "k8s_namespace", "k8s_namespace"],
        "key": ["a1", "a2", "b", "c", "lq-a", "b", "c"],
        "team": ["a", "a", "b", "c", "a", "b", "c"],
    }
)  # fmt: skip


def _sshare(raw: dict[str, int]) -> pl.DataFrame:
    """Account rows of one snapshot plus root and a user row (both left out of the sums)."""
    accounts = list(raw)
    return pl.DataFrame(
        {
            "cluster": ["s"] * (len(accounts) + 2),
            "account": ["root", *accounts, accounts[0]],
            "user_name": [None, *[None] * len(accounts), "u1"],
            "raw_shares": [None, *raw.values(), 1],
            "norm_shares": [1.0, *[0.0] * len(accounts), 1.0],
        },
        schema_overrides={"raw_shares": pl.Int64(), "user_name": pl.String()},
    )


def test_slurm_drift_normalises_raw_shares_over_the_mapped_accounts() -> None:
    """Registry: a 0.5 over accounts a1, a2 (0.25 each), b 0.3, c 0.2 (Σ = 1.0).
    sshare RawShares a1 25, a2 25, b 10, c 20 (Σ = 80; an unmapped account x = 99 is left out).
    Per team: a configured (25 + 25)/80 = 0.625 vs 0.5 → drift +0.125, relative +0.25 > 0.2
    (flagged); b 10/80 = 0.125 vs 0.3 → −0.175, relative −0.5833 (flagged); c 20/80 = 0.25 vs
    0.2 → +0.05, relative +0.25 (flagged at 0.2, not at 0.3)."""
    acct = account_shares(TEAMS, MAPPING, "slurm_account")
    rows = slurm_share_drift(acct, _sshare({"a1": 25, "a2": 25, "b": 10, "c": 20, "x": 99}).lazy())
    drift = registry_drift(rows, None, tolerance=0.2).collect()
    assert drift.select("team", "objects", "configured_value").rows() == [
        ("a", "a1, a2", 50.0),
        ("b", "b", 10.0),
        ("c", "c", 20.0),
    ]
    assert drift["configured_share"].to_list() == pytest.approx([0.625, 0.125, 0.25])
    assert drift["registry_share"].to_list() == pytest.approx([0.5, 0.3, 0.2])
    assert drift["drift"].to_list() == pytest.approx([0.125, -0.175, 0.05])
    assert drift["relative_drift"].to_list() == pytest.approx([0.25, -0.175 / 0.3, 0.25])
    assert drift["drifted"].to_list() == [True, True, True]
    loose = registry_drift(rows, None, tolerance=0.3).collect()
    assert loose["drifted"].to_list() == [False, True, False]


def test_no_drift_when_raw_shares_are_the_registry_times_a_scale() -> None:
    """RawShares = share × 100 for every account (a1 25, a2 25, b 30, c 20): drift 0 everywhere."""
    acct = account_shares(TEAMS, MAPPING, "slurm_account")
    rows = slurm_share_drift(acct, _sshare({"a1": 25, "a2": 25, "b": 30, "c": 20}).lazy())
    drift = registry_drift(rows).collect()
    assert drift["drift"].to_list() == pytest.approx([0.0, 0.0, 0.0])
    assert not any(drift["drifted"].to_list())


def test_kueue_quota_share_of_the_cohort() -> None:
    """Cohort co: cq-a (team a via LocalQueue lq-a) 30 + 10 GPUs over two flavors, cq-bc (teams b
    and c via namespaces) 60; cq-x serves no registry team (left out of the sums).
    Configured: cq-a 40/100 = 0.4, cq-bc 0.6; registry: a 0.5/1.0, b + c 0.5/1.0.
    Drift: cq-a −0.1 (relative −0.2: not above 0.2), cq-bc +0.1 (+0.2: not above)."""
    lqs = pl.DataFrame(
        {
            "namespace": ["ns-a", "b", "c", "x"],
            "name": ["lq-a", "lq-b", "lq-c", "lq-x"],
            "cluster_queue": ["cq-a", "cq-bc", "cq-bc", "cq-x"],
        }
    )
    cq_teams = cluster_queue_teams(lqs, MAPPING)
    assert cq_teams.collect().rows() == [("cq-a", "a"), ("cq-bc", "b"), ("cq-bc", "c")]
    quotas = pl.DataFrame(
        {
            "cohort": ["co", "co", "co", "co"],
            "cluster_queue": ["cq-a", "cq-a", "cq-bc", "cq-x"],
            "resource": ["nvidia.com/gpu"] * 4,
            "nominal_quota": [30.0, 10.0, 60.0, 500.0],
        }
    )
    shares = kueue_quota_shares(quotas.lazy(), cq_teams, TEAMS).with_columns(
        pl.lit("k").alias("cluster")
    )
    drift = registry_drift(None, shares).collect()
    assert drift.select("scheduler", "team", "objects", "configured_value").rows() == [
        ("kueue", "a", "cq-a", 40.0),
        ("kueue", "b, c", "cq-bc", 60.0),
    ]
    assert drift["configured_share"].to_list() == pytest.approx([0.4, 0.6])
    assert drift["registry_share"].to_list() == pytest.approx([0.5, 0.5])
    assert drift["drift"].to_list() == pytest.approx([-0.1, 0.1])
    assert drift["drifted"].to_list() == [False, False]


def test_latest_snapshot_keeps_the_newest_per_cluster() -> None:
    """Cluster s has snapshots at 01:00 (ingest 1) and 02:00 (ingests 2 and 3: 3 wins); cluster t
    has only an undated one (ingest 4), which is its latest."""
    t1, t2 = dt.datetime(2026, 11, 2, 1, tzinfo=UTC), dt.datetime(2026, 11, 2, 2, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "cluster": ["s", "s", "s", "t"],
            "snapshot_at": [t1, t2, t2, None],
            "ingest_id": [1, 2, 3, 4],
        },
        schema_overrides={"snapshot_at": TS},
    )
    out = latest_snapshot(frame.lazy(), order=("snapshot_at", "ingest_id")).collect()
    assert out["ingest_id"].to_list() == [3, 4]


def test_scheduler_fairshare_maps_accounts_and_cluster_queues_to_teams() -> None:
    """sshare account rows a1, b and unmapped x: teams a, b, unattributed; a1's FairShare is the
    mean of its users' (Fair Tree prints it on users only): u1 0.8, u2 0.4 → 0.6, users 2.
    Kueue cq-a: nominal 30 + 10, used 20 + 10, borrowed 0 + 5 → usage of nominal 30/40 = 0.75."""
    sshare = pl.DataFrame(
        {
            "cluster": ["s"] * 6,
            "account": ["root", "a1", "a1", "a1", "b", "x"],
            "user_name": [None, None, "u1", "u2", None, None],
            "raw_shares": [None, 25, 1, 1, 30, 5],
            "norm_shares": [1.0, 0.4, 0.5, 0.5, 0.5, 0.1],
            "raw_usage": [100.0, 60.0, 40.0, 20.0, 40.0, 0.0],
            "effective_usage": [1.0, 0.6, 0.4, 0.2, 0.4, 0.0],
            "level_fs": [None, 0.67, 1.25, 2.5, 1.25, None],
            "fair_share": [None, None, 0.8, 0.4, None, None],
            "snapshot_at": [None] * 6,
        },
        schema_overrides={"raw_shares": pl.Int64(), "snapshot_at": TS, "user_name": pl.String()},
    )
    cqs = pl.DataFrame(
        {
            "cluster": ["k", "k"],
            "name": ["cq-a", "cq-a"],
            "cohort": ["co", "co"],
            "nominal_gpus": [30.0, 10.0],
            "usage_gpus": [20.0, 10.0],
            "borrowed_gpus": [0.0, 5.0],
        }
    )
    cq_teams = pl.DataFrame({"cluster_queue": ["cq-a"], "team": ["a"]})
    accounts = MAPPING.filter(pl.col("kind") == "slurm_account").lazy()
    out = scheduler_fairshare(sshare.lazy(), accounts, cqs.lazy(), cq_teams.lazy()).collect()
    assert out.select("cluster", "scheduler", "object", "team", "users").rows() == [
        ("k", "kueue", "cq-a", "a", None),
        ("s", "slurm", "a1", "a", 2),
        ("s", "slurm", "b", "b", 0),
        ("s", "slurm", "x", "unattributed", 0),
    ]
    assert out["fair_share"].to_list()[1] == pytest.approx(0.6)
    assert out.row(0, named=True)["usage_of_nominal"] == pytest.approx(0.75)
    assert out.row(0, named=True)["borrowed_gpus"] == 5.0
