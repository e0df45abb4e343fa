"""A recommendation's life (METRICS.md "Recommendation status"): proposed → applied → measured →
confirmed or regressed, matched on hand-written ledger and impact rows."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import yaml

from metrics.recommendations.life import (
    proposed_settings,
    recommendation_life,
    rollback_patch,
    values_equal,
)
from metrics.schema import UTC_DATETIME
from pipelines.recommendations import with_status, write_outputs

UTC = dt.UTC
W0 = dt.datetime(2026, 3, 1, tzinfo=UTC)
FAIR = "sacctmgr -i modify account name=speech set fairshare=8"
BF = "SchedulerParameters=bf_window=2880,bf_continue"
CQ = yaml.safe_dump(
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
     "metadata": {"name": "cq-prod"},
     "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
         {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 19}]}]}]}}
)  # fmt: skip


def _recs(*rows: tuple[str, str, str, str, str]) -> pl.DataFrame:
    """(id, rule, cluster, patch_kind, patch_content) rows, window from W0."""
    return pl.DataFrame(
        [
            {"id": i, "rule": rule, "cluster": c, "scope": f"cluster={c}", "severity": "warning",
             "window_start": W0, "window_end": W0 + dt.timedelta(days=28), "evidence": "{}",
             "expected_gain_gpu_h_per_week": 1.0, "expected_wait_reduction_s": None,
             "confidence": 1.0, "change_text": "do it", "patch_kind": kind,
             "patch_content": content}
            for i, rule, c, kind, content in rows
        ],
        schema={"id": pl.String(), "rule": pl.String(), "cluster": pl.String(),
                "scope": pl.String(), "severity": pl.String(), "window_start": UTC_DATETIME,
                "window_end": UTC_DATETIME, "evidence": pl.String(),
                "expected_gain_gpu_h_per_week": pl.Float64(),
                "expected_wait_reduction_s": pl.Float64(), "confidence": pl.Float64(),
                "change_text": pl.String(), "patch_kind": pl.String(),
                "patch_content": pl.String()},
    )  # fmt: skip


def _changes(*rows: tuple[str, str, str, str, str | None, str, dt.datetime]) -> pl.DataFrame:
    """(change_id, cluster, object, key, old, new, changed_at) rows."""
    return pl.DataFrame(
        rows,
        schema={"change_id": pl.String(), "cluster": pl.String(), "object": pl.String(),
                "key": pl.String(), "old": pl.String(), "new": pl.String(),
                "changed_at": UTC_DATETIME},
        orient="row",
    )  # fmt: skip


def _impact(*rows: tuple[str, str, str]) -> pl.DataFrame:
    """(change_id, kpi, verdict) rows, method its."""
    return pl.DataFrame(
        [(c, k, "its", v) for c, k, v in rows],
        schema={"change_id": pl.String(), "kpi": pl.String(), "method": pl.String(),
                "verdict": pl.String()},
        orient="row",
    )  # fmt: skip


def _day(month: int, day: int) -> dt.datetime:
    return dt.datetime(2026, month, day, tzinfo=UTC)


def _status(life: pl.DataFrame) -> dict[str, tuple[str, str | None]]:
    return {r["id"]: (r["status"], r["change_id"]) for r in life.iter_rows(named=True)}


def test_patches_read_as_ledger_settings() -> None:
    """Each patch kind gives the object and key the ledger writes: fairshare is slurmdbd's
    ``shares``, SchedulerParameters item by item (``bf_continue`` alone is ``true``), a Kueue
    quota ``nominalQuota[flavor/resource]``, GrpTRES per TRES."""
    recs = _recs(
        ("r1", "registry_drift_slurm", "slurm-a", "sacctmgr", FAIR),
        ("r2", "backfill_tuning", "slurm-a", "slurm.conf", BF),
        ("r3", "kueue_quota_drift", "k8s-b", "kubernetes-merge-patch", CQ),
        ("r4", "idle_allocations", "slurm-a", "sacctmgr",
         "sacctmgr -i modify account name=recsys set GrpTRES=gres/gpu=19"),
        ("r5", "lemon_nodes", "slurm-a", "scontrol", "scontrol update nodename=n1 state=drain"),
    )  # fmt: skip
    got = proposed_settings(recs).rows()
    assert got == [
        ("r1", "slurm-a", "account=speech", "shares", "8"),
        ("r2", "slurm-a", "slurm.conf", "SchedulerParameters:bf_window", "2880"),
        ("r2", "slurm-a", "slurm.conf", "SchedulerParameters:bf_continue", "true"),
        ("r3", "k8s-b", "clusterqueue=cq-prod", "nominalQuota[h100/nvidia.com/gpu]", "19"),
        ("r4", "slurm-a", "account=recsys", "grp_tres[gres/gpu]", "19"),
    ]


def test_values_compare_as_text_or_numbers() -> None:
    """``8`` = ``8.0`` = ``8 `` and YES = yes; 8 ≠ 9; NULL equals only NULL."""
    assert values_equal("8", "8.0") and values_equal("8 ", "8") and values_equal("YES", "yes")
    assert not values_equal("8", "9") and not values_equal(None, "8")
    assert values_equal(None, None)


def test_a_matching_change_after_the_proposal_applies_it() -> None:
    """r1 proposes shares=8 for account=speech from 2026-03-01: c1 (3 → 8 on 03-05) applies
    it; c0 (the same value on 02-20, before the proposal) and c2 (3 → 9) do not. sshare's
    ``RawShares`` is the same setting: r2's change c3 (03-10) applies it."""
    recs = _recs(
        ("r1", "registry_drift_slurm", "slurm-a", "sacctmgr", FAIR),
        ("r2", "registry_drift_slurm", "slurm-b", "sacctmgr", FAIR),
        ("r3", "registry_drift_slurm", "slurm-c", "sacctmgr", FAIR),
    )
    changes = _changes(
        ("c0", "slurm-a", "account=speech", "shares", "3", "8", _day(2, 20)),
        ("c1", "slurm-a", "account=speech", "shares", "3", "8", _day(3, 5)),
        ("c2", "slurm-c", "account=speech", "shares", "3", "9", _day(3, 5)),
        ("c3", "slurm-b", "account=speech", "RawShares", "3", "8", _day(3, 10)),
    )
    assert _status(recommendation_life(recs, changes)) == {
        "r1": ("applied", "c1"),
        "r2": ("applied", "c3"),
        "r3": ("proposed", None),
    }


def test_verdicts_on_the_target_kpi_confirm_or_regress() -> None:
    """Backfill's target is ``wait_p90_h`` of the large jobs' buckets, fair share's ``jain``:
    r1's change improved jain → confirmed; r2's regressed wait_p90_h[64+] → regressed;
    r3's change has rows but only on occupancy (not its target) → measured; r4's has no
    impact row → applied; with no impact view at all every applied one stays applied."""
    t = dt.datetime(2026, 3, 5, tzinfo=UTC)
    recs = _recs(
        ("r1", "registry_drift_slurm", "a", "sacctmgr", FAIR),
        ("r2", "backfill_tuning", "b", "slurm.conf", BF),
        ("r3", "registry_drift_slurm", "c", "sacctmgr", FAIR),
        ("r4", "registry_drift_slurm", "d", "sacctmgr", FAIR),
    )
    changes = _changes(
        ("c1", "a", "account=speech", "shares", "3", "8", t),
        ("c2", "b", "slurm.conf", "SchedulerParameters:bf_window", "60", "2880", t),
        ("c3", "c", "account=speech", "shares", "3", "8", t),
        ("c4", "d", "account=speech", "shares", "3", "8", t),
    )
    impact = _impact(
        ("c1", "jain", "improved"), ("c1", "occupancy", "no detectable effect"),
        ("c2", "wait_p90_h[64+]", "regressed"), ("c2", "wait_p90_h[1]", "no detectable effect"),
        ("c3", "occupancy", "improved"),
    )  # fmt: skip
    assert _status(recommendation_life(recs, changes, impact)) == {
        "r1": ("confirmed", "c1"),
        "r2": ("regressed", "c2"),
        "r3": ("measured", "c3"),
        "r4": ("applied", "c4"),
    }
    assert {s for s, _ in _status(recommendation_life(recs, changes, None)).values()} == {"applied"}


def test_a_rule_for_large_jobs_is_judged_by_the_large_jobs_waits() -> None:
    """Backfill changes c1 (recorded, the scheduler unchanged: no detectable effect on the
    64–255-GPU waits, chance "improved" verdicts on 1- and 2–8-GPU jobs) and c2 (large-job p90
    up: regressed there, "improved" on 2–8 GPUs). r1 stays measured and r2 is regressed
    (before: the verdicts of every size bucket counted, r1 "confirmed" and r2 mixed, so
    measured and no rollback). With ``large_job_gpus`` 1 the small buckets are the target
    too, as before."""
    t = dt.datetime(2026, 3, 5, tzinfo=UTC)
    recs = _recs(
        ("r1", "backfill_min_age_reserve", "p", "slurm.conf", BF),
        ("r2", "backfill_tuning", "q", "slurm.conf", BF),
    )
    changes = _changes(
        ("c1", "p", "slurm.conf", "SchedulerParameters:bf_window", "60", "2880", t),
        ("c2", "q", "slurm.conf", "SchedulerParameters:bf_window", "60", "2880", t),
    )
    impact = _impact(
        ("c1", "wait_p90_h[64-255]", "no detectable effect"), ("c1", "wait_p90_h[1]", "improved"),
        ("c1", "wait_p90_h[2-8]", "improved"),
        ("c2", "wait_p90_h[64-255]", "regressed"), ("c2", "wait_p90_h[2-8]", "improved"),
    )  # fmt: skip
    assert _status(recommendation_life(recs, changes, impact)) == {
        "r1": ("measured", "c1"),
        "r2": ("regressed", "c2"),
    }
    assert _status(recommendation_life(recs, changes, impact, large_job_gpus=1)) == {
        "r1": ("confirmed", "c1"),
        "r2": ("measured", "c2"),
    }


def test_a_regressed_recommendation_proposes_its_rollback(tmp_path: Path) -> None:
    """r1's change (shares 3 → 8) regressed jain: its patch becomes ``fairshare=3`` and its
    text starts ROLLBACK; the confirmed r2 keeps its patch. The patch file ``sacctmgr.sh``
    carries the rollback for cluster a, and latest.json both statuses."""
    t = dt.datetime(2026, 3, 5, tzinfo=UTC)
    recs = _recs(
        ("r1", "registry_drift_slurm", "a", "sacctmgr", FAIR),
        ("r2", "registry_drift_slurm", "b", "sacctmgr", FAIR),
    )
    changes = _changes(
        ("c1", "a", "account=speech", "shares", "3", "8", t),
        ("c2", "b", "account=speech", "shares", "3", "8", t),
    )
    impact = _impact(("c1", "jain", "regressed"), ("c2", "jain", "improved"))
    out = {r["id"]: r for r in with_status(recs, changes, impact).iter_rows(named=True)}
    assert out["r1"]["status"] == "regressed"
    assert out["r1"]["patch_content"] == "sacctmgr -i modify account name=speech set fairshare=3"
    assert out["r1"]["change_text"].startswith("ROLLBACK: ")
    assert (out["r2"]["status"], out["r2"]["patch_content"]) == ("confirmed", FAIR)
    frame = with_status(recs, changes, impact)
    files = write_outputs(frame, tmp_path, W0, show_names=True)
    script = files["sacctmgr.sh"].read_text()
    cluster_a = script.split("## cluster a\n", 1)[1].split("## cluster b\n", 1)[0]
    assert "\nsacctmgr -i modify account name=speech set fairshare=3\n" in cluster_a
    doc = json.loads(files["latest.json"].read_text())
    assert [(r["id"], r["status"], r["change_id"]) for r in doc["recommendations"]] == [
        ("r1", "regressed", "c1"), ("r2", "confirmed", "c2")]  # fmt: skip


def test_rollback_patches_per_kind() -> None:
    """A slurm.conf key, a SchedulerParameters item, a QOS GPU limit that was unset (-1 clears
    it) and a ClusterQueue quota each get the patch that restores the old value."""
    t = dt.datetime(2026, 3, 5, tzinfo=UTC)

    def ch(obj: str, key: str, old: str | None) -> dict[str, object]:
        return {"object": obj, "key": key, "old": old, "new": "x", "changed_at": t}

    assert rollback_patch(ch("slurm.conf", "PriorityWeightFairShare", "1000")) == (
        "slurm.conf", "PriorityWeightFairShare=1000")  # fmt: skip
    assert rollback_patch(ch("slurm.conf", "SchedulerParameters:bf_window", "60")) == (
        "slurm.conf", "SchedulerParameters=bf_window=60")  # fmt: skip
    assert rollback_patch(ch("qos=normal", "grp_tres[gres/gpu]", None)) == (
        "sacctmgr", "sacctmgr -i modify qos name=normal set GrpTRES=gres/gpu=-1")  # fmt: skip
    kind, content = rollback_patch(ch("clusterqueue=cq-prod",  # type: ignore[misc]
                                      "nominalQuota[h100/nvidia.com/gpu]", "24"))  # fmt: skip
    doc = yaml.safe_load(content)
    assert kind == "kubernetes-merge-patch" and doc["metadata"]["name"] == "cq-prod"
    res = doc["spec"]["resourceGroups"][0]["flavors"][0]
    assert res == {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "24"}]}
    assert rollback_patch(ch("slurm.conf", "PriorityWeightAge", None)) is None


def test_a_preemption_rule_is_judged_on_preemption_loss() -> None:
    """preemption_grace_time's target is preemption_loss_gpu_h: its change improved preemption
    loss and regressed occupancy (not its target) → confirmed."""
    t = dt.datetime(2026, 3, 5, tzinfo=UTC)
    recs = _recs(
        ("r1", "preemption_grace_time", "a", "sacctmgr",
         "sacctmgr -i modify qos name=low set GraceTime=300"),
    )  # fmt: skip
    changes = _changes(("c1", "a", "qos=low", "grace_time", "0", "300", t))
    impact = _impact(("c1", "preemption_loss_gpu_h", "improved"), ("c1", "occupancy", "regressed"))
    assert _status(recommendation_life(recs, changes, impact)) == {"r1": ("confirmed", "c1")}


def test_a_scheduler_parameters_rollback_is_the_whole_line_in_force(tmp_path: Path) -> None:
    """bf_min_age_reserve 57600 → 84240 regressed the large jobs' p90 on cluster a, whose
    SchedulerParameters in force are ``bf_interval=30,bf_window=2880,bf_min_age_reserve=84240``:
    the rollback is that line with 57600 back in place (slurm.conf takes SchedulerParameters
    whole: the item alone would drop bf_interval and bf_window), and so is the patch file's
    line for cluster a."""
    t = dt.datetime(2026, 3, 5, tzinfo=UTC)
    recs = _recs(
        ("r1", "backfill_min_age_reserve", "a", "slurm.conf",
         "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=84240"),
    )  # fmt: skip
    changes = _changes(
        ("c1", "a", "slurm.conf", "SchedulerParameters:bf_min_age_reserve", "57600", "84240", t)
    )
    impact = _impact(("c1", "wait_p90_h[64-255]", "regressed"))
    config = {
        "a": {"SchedulerParameters": "bf_interval=30,bf_window=2880,bf_min_age_reserve=84240"}
    }
    frame = with_status(recs, changes, impact, slurm_config=config)
    row = frame.row(0, named=True)
    whole = "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=57600"
    assert (row["status"], row["patch_content"]) == ("regressed", whole)
    files = write_outputs(frame, tmp_path, W0, show_names=True)
    assert f"\n{whole}\n" in files["slurm.conf.patch"].read_text()


def test_scheduler_parameters_line_replaces_removes_and_appends() -> None:
    """In force ``bf_window=2880,bf_continue,bf_min_age_reserve=600``: bf_window set to 4320
    in place, bf_continue (a flag) removed, bf_max_job_test appended; nothing in force
    (``(null)``): the items alone."""
    from metrics.recommendations.slurm_config import scheduler_parameters_line

    conf = {"SchedulerParameters": "bf_window=2880,bf_continue,bf_min_age_reserve=600"}
    items = {"bf_window": "4320", "bf_continue": None, "bf_max_job_test": "1000"}
    assert scheduler_parameters_line(conf, items) == (
        "SchedulerParameters=bf_window=4320,bf_min_age_reserve=600,bf_max_job_test=1000"
    )
    assert scheduler_parameters_line(
        {"SchedulerParameters": "(null)"}, {"bf_continue": "true"}
    ) == ("SchedulerParameters=bf_continue")
