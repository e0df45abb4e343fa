"""The policy-change ledger from literal, hand-made raw rows (values chosen for the test, in the
shapes the Slurm parsers produce)."""

from __future__ import annotations

import datetime as dt

import polars as pl
from polars.testing import assert_frame_equal

from pipelines.core.policy_changes import (
    POLICY_CHANGE_SCHEMA,
    cluster_queue_changes,
    config_changes,
    policy_changes,
    share_changes,
    transaction_changes,
)
from pipelines.slurm._sacctmgr_transactions import TRANSACTION_SCHEMA
from pipelines.slurm._sacctmgr_tres import TRES_SCHEMA

UTC = dt.UTC
T0 = dt.datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
T1 = dt.datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
T2 = dt.datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
_SHOWN = ["cluster", "object", "key", "old", "new", "actor", "changed_at", "changed_after",
          "source", "scope"]  # fmt: skip


def _tx(*rows: tuple[object, ...]) -> pl.DataFrame:
    """``(changed_at, verb, kind, actor, target, key, value, line_no)`` rows of cluster c."""
    return pl.DataFrame(
        [
            {"cluster": "c", "changed_at": at, "action": f"{verb} {kind}", "verb": verb,
             "object_kind": kind, "actor": actor, "target": target, "key": key, "value": value,
             "assoc_account": None, "assoc_user": None, "file": "t.psv", "line_no": no}
            for at, verb, kind, actor, target, key, value, no in rows
        ],
        schema=TRANSACTION_SCHEMA,
    )  # fmt: skip


TRES = pl.DataFrame(
    {"cluster": ["c", "c"], "tres_id": [1, 1001], "tres_type": ["cpu", "gres"],
     "tres_name": [None, "gpu"], "tres": ["cpu", "gres/gpu"], "file": ["x", "x"],
     "line_no": [2, 3]},
    schema=TRES_SCHEMA,
)  # fmt: skip


def test_fairshare_change_reads_old_value_from_the_add() -> None:
    """Association 4 was added as account team-b with shares=30 at T0; ``shares=45`` at T1 by
    alice is one row 30 → 45, named by the Add, with alice and T1."""
    tx = _tx(
        (T0, "add", "association", "root", "4", "acct", "team-b", 2),
        (T0, "add", "association", "root", "4", "user", "", 2),
        (T0, "add", "association", "root", "4", "shares", "30", 2),
        (T1, "modify", "association", "alice", "4", "shares", "45", 3),
    )
    got = transaction_changes(tx, TRES).select(_SHOWN)
    expected = pl.DataFrame(
        {"cluster": ["c"], "object": ["account=team-b"], "key": ["shares"], "old": ["30"],
         "new": ["45"], "actor": ["alice"], "changed_at": [T1], "changed_after": [None],
         "source": ["sacctmgr list transactions"], "scope": ["association"]},
        schema={c: POLICY_CHANGE_SCHEMA[c] for c in _SHOWN},
    )  # fmt: skip
    assert_frame_equal(got, expected)


def test_old_value_is_null_without_an_earlier_transaction() -> None:
    """A modify of association 9 with no Add loaded: old NULL, object named by its id."""
    tx = _tx((T1, "modify", "association", "root", "9", "max_jobs", "3", 2))
    got = transaction_changes(tx, TRES)
    assert got.select("object", "key", "old", "new").rows() == [
        ("id_assoc=9", "max_jobs", None, "3")
    ]


def test_tres_limits_are_one_row_per_tres_named_through_show_tres() -> None:
    """QOS high: ``1001=24`` at T0, then ``1=64,1001=16`` at T1: gres/gpu 24 → 16 and cpu
    NULL → 64 at T1 (and gres/gpu NULL → 24 at T0); an id show tres lacks keeps its number."""
    tx = _tx(
        (T0, "modify", "qos", "root", "high", "grp_tres", "1001=24", 2),
        (T1, "modify", "qos", "root", "high", "grp_tres", "1=64,1001=16", 3),
        (T2, "modify", "qos", "root", "low", "max_tres_pu", "77=2", 4),
    )
    got = transaction_changes(tx, TRES).sort("changed_at", "key")
    assert got.select("object", "key", "old", "new", "changed_at").rows() == [
        ("qos=high", "grp_tres[gres/gpu]", None, "24", T0),
        ("qos=high", "grp_tres[cpu]", None, "64", T1),
        ("qos=high", "grp_tres[gres/gpu]", "24", "16", T1),
        ("qos=low", "max_tres_pu[77]", None, "2", T2),
    ]


def test_a_modify_to_the_same_value_is_no_change() -> None:
    """Priority 10 set again at T1 after 10 at T0: only the T0 row."""
    tx = _tx(
        (T0, "modify", "qos", "root", "normal", "priority", "10", 2),
        (T1, "modify", "qos", "root", "normal", "priority", "10", 3),
    )
    assert transaction_changes(tx, TRES)["changed_at"].to_list() == [T0]


def test_a_transaction_loaded_twice_counts_once() -> None:
    """Overlapping daily files repeat a transaction: it is one change, not a change and a
    no-change."""
    row = (T1, "modify", "association", "root", "4", "shares", "45", 2)
    assert transaction_changes(_tx(row, row), TRES).height == 1


def test_controller_registration_is_not_a_policy_change() -> None:
    """``Modify Clusters`` control_port (slurmctld registering) is left out."""
    tx = _tx((T1, "modify", "cluster", "root", "c", "control_port", "6817", 2))
    assert transaction_changes(tx, TRES).height == 0


def _config(*rows: tuple[dt.datetime, str, str | None]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"cluster": "c", "snapshot_at": at, "key": k, "value": v} for at, k, v in rows],
        schema={"cluster": pl.String(), "snapshot_at": pl.Datetime("us", "UTC"),
                "key": pl.String(), "value": pl.String()},
    )  # fmt: skip


def test_config_diff_of_consecutive_snapshots_with_the_interval() -> None:
    """PriorityWeightFairShare 10000 (T0) → 20000 (T1) → 20000 (T2): one row at T1, after
    T0, actor NULL; bf_interval 5 → 10 and bf_window new at T1; BOOT_TIME is runtime state."""
    cfg = _config(
        (T0, "PriorityWeightFairShare", "10000"), (T0, "SchedulerParameters", "bf_interval=5"),
        (T0, "BOOT_TIME", "1"),
        (T1, "PriorityWeightFairShare", "20000"),
        (T1, "SchedulerParameters", "bf_interval=10,bf_window=120"), (T1, "BOOT_TIME", "2"),
        (T2, "PriorityWeightFairShare", "20000"),
        (T2, "SchedulerParameters", "bf_interval=10,bf_window=120"),
    )  # fmt: skip
    got = config_changes(cfg).sort("key")
    assert got.select("key", "old", "new", "actor", "changed_at", "changed_after").rows() == [
        ("PriorityWeightFairShare", "10000", "20000", None, T1, T0),
        ("SchedulerParameters:bf_interval", "5", "10", None, T1, T0),
        ("SchedulerParameters:bf_window", None, "120", None, T1, T0),
    ]
    assert set(got["object"]) == {"slurm.conf"}
    assert set(got["scope"]) == {"config"}


def test_a_setting_gone_from_the_later_snapshot_is_new_null() -> None:
    """PreemptMode present at T0 and absent at T1: old ``SUSPEND``, new NULL; a flag item of
    SchedulerParameters reads ``true``."""
    cfg = _config(
        (T0, "PreemptMode", "SUSPEND"), (T0, "SchedulerParameters", "bf_continue"),
        (T1, "SchedulerParameters", "bf_interval=30"),
    )  # fmt: skip
    got = config_changes(cfg).sort("key")
    assert got.select("key", "old", "new").rows() == [
        ("PreemptMode", "SUSPEND", None),
        ("SchedulerParameters:bf_continue", "true", None),
        ("SchedulerParameters:bf_interval", None, "30"),
    ]


def test_sshare_raw_shares_diff_per_association() -> None:
    """team-b 30 → 45 between T0 and T1; team-a 50 unchanged; alice's user row 1 unchanged."""
    sshare = pl.DataFrame(
        {"cluster": ["c"] * 6, "account": ["team-a", "team-b", "team-a"] * 2,
         "user_name": [None, None, "alice"] * 2, "raw_shares": [50, 30, 1, 50, 45, 1],
         "snapshot_at": [T0] * 3 + [T1] * 3},
        schema_overrides={"snapshot_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    got = share_changes(sshare)
    assert got.select(
        "object", "key", "old", "new", "changed_at", "changed_after", "source"
    ).rows() == [("account=team-b", "RawShares", "30", "45", T1, T0, "sshare")]


def test_change_ids_are_stable_and_the_ledger_is_oldest_first() -> None:
    """The same input gives the same ids; parts are merged by time."""
    tx = _tx((T2, "modify", "qos", "root", "normal", "priority", "10", 2))
    cfg = _config((T0, "PreemptMode", "OFF"), (T1, "PreemptMode", "REQUEUE"))
    first = policy_changes(transaction_changes(tx, TRES), config_changes(cfg))
    again = policy_changes(transaction_changes(tx, TRES), config_changes(cfg))
    assert first["changed_at"].to_list() == [T1, T2]
    assert first["change_id"].to_list() == again["change_id"].to_list()
    assert first["change_id"].n_unique() == 2
    assert policy_changes().schema == pl.Schema(POLICY_CHANGE_SCHEMA)


def test_cluster_queue_quota_and_preemption_changes_between_snapshots() -> None:
    """team-a-cq: nominalQuota of default/nvidia.com/gpu 8 → 16 and reclaimWithinCohort
    Never → Any between T0 and T1; borrowingLimit unset both times; team-b-cq unchanged."""
    cqs = pl.DataFrame(
        {"cluster": ["k"] * 4, "name": ["team-a-cq", "team-b-cq"] * 2,
         "flavor": ["default"] * 4, "resource": ["nvidia.com/gpu"] * 4,
         "nominal_quota": [8.0, 4.0, 16.0, 4.0], "borrowing_limit": [None] * 4,
         "lending_limit": [None] * 4, "cohort": ["all"] * 4,
         "queueing_strategy": ["BestEffortFIFO"] * 4,
         "preemption_within_cq": ["LowerPriority"] * 4,
         "reclaim_within_cohort": ["Never", "Never", "Any", "Never"],
         "fair_sharing_weight": [None] * 4, "snapshot_at": [T0, T0, T1, T1]},
        schema_overrides={"borrowing_limit": pl.Float64(), "lending_limit": pl.Float64(),
                          "fair_sharing_weight": pl.Float64(),
                          "snapshot_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    got = cluster_queue_changes(cqs).sort("key")
    assert got.select(
        "scheduler", "object", "key", "old", "new", "actor", "changed_at", "changed_after"
    ).rows() == [
        ("kueue", "clusterqueue=team-a-cq", "nominalQuota[default/nvidia.com/gpu]", "8", "16",
         None, T1, T0),
        ("kueue", "clusterqueue=team-a-cq", "preemption.reclaimWithinCohort", "Never", "Any",
         None, T1, T0),
    ]  # fmt: skip
    assert set(got["scope"]) == {"cluster_queue"}
