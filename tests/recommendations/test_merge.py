"""One merged patch per scheduler object, applied in any order; one finding per evidence."""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Mapping
from typing import Any

import polars as pl
import yaml

from metrics.recommendations import Recommendation, apply_merge_patch, to_frame
from metrics.recommendations._kueue import merge_patch_document, resource_groups_patch
from metrics.recommendations.merge import (
    apply_slurm_conf,
    companion_rows,
    dedupe_findings,
    merge_patches_by_object,
    split_yaml_documents,
)
from tests.recommendations._frames import window

W = window(7)


def _cq(nominal: int = 24, lending: int = 0) -> dict[str, Any]:
    """cq-prod as read from the API server: 24 GPUs, lendingLimit 0, cpu and memory too."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq-prod", "resourceVersion": "7"},
        "spec": {
            "cohort": "gpu-fleet",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100-prod",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "288"},
                                {"name": "nvidia.com/gpu", "nominalQuota": nominal,
                                 "lendingLimit": lending},
                            ],
                        }
                    ],
                }
            ],
        },
    }  # fmt: skip


def _rec(
    rule: str, scope: str, severity: str, gain: float | None, kind: str, content: str,
    cluster: str = "k8s-b", evidence: Mapping[str, Any] | None = None,
) -> Recommendation:  # fmt: skip
    return Recommendation(
        rule=rule, cluster=cluster, scope=scope, severity=severity, window=W,
        evidence=dict(evidence or {}), change_text=f"{rule} text", confidence=1.0,
        expected_gain_gpu_h_per_week=gain, patch_kind=kind, patch_content=content,
    )  # fmt: skip


def _kueue_rec(
    rule: str, severity: str, gain: float, fields: Mapping[str, float]
) -> Recommendation:
    patch = resource_groups_patch(_cq(), {("h100-prod", "nvidia.com/gpu"): dict(fields)})
    return _rec(
        rule, f"cluster=k8s-b/clusterqueue=cq-prod/{rule}", severity, gain,
        "kubernetes-merge-patch", merge_patch_document(patch, comment=rule),
    )  # fmt: skip


def _gpu(obj: Mapping[str, Any]) -> dict[str, Any]:
    res = obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return next(r for r in res if r["name"] == "nvidia.com/gpu")


def _apply_all(obj: dict[str, Any], docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The object after the documents in every order."""
    out = []
    for order in itertools.permutations(docs):
        state = obj
        for d in order:
            state = apply_merge_patch(state, d)
        out.append(state)
    return out


def test_two_patches_of_one_clusterqueue_merge_into_one() -> None:
    """The fleet's case by hand: the borrowing rule (critical) raises cq-prod's lendingLimit
    0 → 13, the drift rule (warning) sets nominalQuota 24 → 19, each writing the whole
    resourceGroups list. Applied one after the other, the second resets the first (lending 0 or
    nominal 24). Merged: one document with nominal 19 and lending 13, cpu untouched, the same
    in any order; both findings are its sources, no conflict."""
    borrow = _kueue_rec("kueue_borrowing", "critical", 690.0, {"lendingLimit": 13})
    drift = _kueue_rec("registry_drift_kueue", "warning", 840.0, {"nominalQuota": 19})
    frame = to_frame([borrow, drift])
    raw = [split_yaml_documents(r)[0] for r in frame["patch_content"].to_list()]
    unmerged = {(_gpu(s)["nominalQuota"], _gpu(s)["lendingLimit"]) for s in _apply_all(_cq(), raw)}
    assert unmerged == {(24, 13), (19, 0)}  # order-dependent, and never both changes
    merged = merge_patches_by_object(frame, {"k8s-b": [_cq()]})
    assert [(m.kind, m.target) for m in merged] == [
        ("kubernetes-merge-patch", "ClusterQueue/cq-prod")
    ]
    m = merged[0]
    assert m.sources == (borrow.id, drift.id) and m.conflicts == ()
    docs = split_yaml_documents(m.content)
    assert len(docs) == 1
    states = _apply_all(_cq(), docs)
    assert all(s == states[0] for s in states)
    assert _gpu(states[0]) == {"name": "nvidia.com/gpu", "nominalQuota": 19, "lendingLimit": 13}
    assert states[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {
        "name": "cpu", "nominalQuota": "288"
    }  # fmt: skip


def test_conflicting_values_keep_the_more_severe_findings() -> None:
    """Two findings set cq-prod's lendingLimit to 13 (critical) and 9 (warning): 13 is kept,
    the conflict names both; a nominalQuota lowered to 8 by a third finding pulls the merged
    lendingLimit down to 8 (Kueue rejects lendingLimit > nominalQuota), recorded too."""
    a = _kueue_rec("kueue_borrowing", "critical", 10.0, {"lendingLimit": 13})
    b = _kueue_rec("other_rule", "warning", 500.0, {"lendingLimit": 9})
    m = merge_patches_by_object(to_frame([b, a]), {"k8s-b": [_cq()]})[0]
    assert m.sources == (a.id, b.id)
    assert list(m.conflicts) == [
        {"key": "resourceGroups.h100-prod.nvidia.com/gpu.lendingLimit", "kept": 13,
         "kept_from": a.id, "dropped": [{"value": 9, "from": b.id}]}
    ]  # fmt: skip
    assert _gpu(split_yaml_documents(m.content)[0])["lendingLimit"] == 13
    c = _kueue_rec("registry_drift_kueue", "info", 1.0, {"nominalQuota": 8})
    m = merge_patches_by_object(to_frame([a, c]), {"k8s-b": [_cq()]})[0]
    assert _gpu(split_yaml_documents(m.content)[0]) == {
        "name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 8
    }  # fmt: skip
    assert m.conflicts[-1]["adjusted"] == 8


def test_slurm_conf_lines_set_each_key_once() -> None:
    """Three findings on slurm-a's slurm.conf: PreemptExemptTime 20 min (critical) vs 30 min
    (info), two partitions' SchedulerParameters (bf_window 2880 critical vs 4320 warning,
    bf_continue from both) and DefaultTime of two partitions. Merged: every setting once
    (PreemptExemptTime=00:20:00, one SchedulerParameters with bf_window=2880 and
    bf_max_job_test=600 from the warning one), so the lines give one state in any order."""
    recs = [
        _rec("preempt_exempt_time", "cluster=slurm-a", "critical", 30.0, "slurm.conf",
             "PreemptExemptTime=00:20:00", "slurm-a"),
        _rec("backfill_tuning", "cluster=slurm-a/partition=gpu", "critical", 5.0, "slurm.conf",
             "SchedulerParameters=bf_window=2880,bf_continue", "slurm-a"),
        _rec("backfill_tuning", "cluster=slurm-a/partition=h100", "warning", 9.0, "slurm.conf",
             "SchedulerParameters=bf_window=4320,bf_max_job_test=600,bf_continue", "slurm-a"),
        _rec("time_limits", "cluster=slurm-a/partition=gpu", "info", None, "slurm.conf",
             "PartitionName=gpu DefaultTime=12:00:00\nPreemptExemptTime=00:30:00", "slurm-a"),
        _rec("time_limits", "cluster=slurm-a/partition=h100", "info", 1.0, "slurm.conf",
             "PartitionName=h100 DefaultTime=04:00:00", "slurm-a"),
    ]  # fmt: skip
    frame = to_frame(recs)
    raw_lines = [ln for c in frame["patch_content"].to_list() for ln in c.splitlines()]
    raw_states = {
        tuple(sorted(apply_slurm_conf({}, "\n".join(o)).items()))
        for o in itertools.permutations(raw_lines)
    }
    assert len(raw_states) > 1  # the findings' own lines depend on their order
    (m,) = merge_patches_by_object(frame)
    lines = m.content.splitlines()
    assert lines == [
        "PreemptExemptTime=00:20:00",
        "SchedulerParameters=bf_window=2880,bf_continue,bf_max_job_test=600",
        "PartitionName=h100 DefaultTime=04:00:00",  # precedence: info with a gain first
        "PartitionName=gpu DefaultTime=12:00:00",
    ]
    states = {
        tuple(sorted(apply_slurm_conf({}, "\n".join(o)).items()))
        for o in itertools.permutations(lines)
    }
    assert len(states) == 1
    assert {c["key"]: (c["kept"], c["kept_from"]) for c in m.conflicts} == {
        "PreemptExemptTime": ("00:20:00", recs[0].id),
        "SchedulerParameters:bf_window": ("bf_window=2880", recs[1].id),
    }


def _sacctmgr_state(lines: list[str]) -> dict[tuple[str, str], str]:
    state: dict[tuple[str, str], str] = {}
    for line in lines:
        tok = shlex.split(line)
        target = " ".join(tok[tok.index("modify") + 1 : tok.index("set")])
        for kv in tok[tok.index("set") + 1 :]:
            k, v = kv.split("=", 1)
            state[(target, k.lower())] = v
    return state


def test_sacctmgr_commands_merge_per_account() -> None:
    """fairshare=8 (registry drift) and GrpTRES=gres/gpu=20 (idle cap) on account speech
    become one command; QOS low stays its own; the commands commute."""
    recs = [
        _rec("registry_drift_slurm", "cluster=slurm-a/account=speech", "critical", 1540.0,
             "sacctmgr", "sacctmgr -i modify account name=speech set fairshare=8", "slurm-a"),
        _rec("idle_allocations", "cluster=slurm-a/team=speech", "warning", 80.0, "sacctmgr",
             "sacctmgr -i modify account name=speech set GrpTRES=gres/gpu=20", "slurm-a"),
        _rec("preemption_grace_time", "cluster=slurm-a/qos=low", "warning", 20.0, "sacctmgr",
             "sacctmgr -i modify qos name=low set GraceTime=300", "slurm-a"),
    ]  # fmt: skip
    merged = merge_patches_by_object(to_frame(recs))
    assert [(m.target, m.content) for m in merged] == [
        ("account name=speech",
         "sacctmgr -i modify account name=speech set fairshare=8 GrpTRES=gres/gpu=20"),
        ("qos name=low", "sacctmgr -i modify qos name=low set GraceTime=300"),
    ]  # fmt: skip
    assert merged[0].sources == (recs[0].id, recs[1].id)
    lines = [m.content for m in merged]
    assert len({tuple(sorted(_sacctmgr_state(list(o)).items())) for o in
                itertools.permutations(lines)}) == 1  # fmt: skip


def test_two_preemption_findings_over_the_same_preemptions_become_one() -> None:
    """PreemptExemptTime (slurm.conf, 12 GPU-h/wk) and GraceTime of QOS normal (sacctmgr,
    40 GPU-h/wk) both count the same 19 preemptions (same basis): one finding remains, the
    grace one (larger gain; both critical), its gain the larger single gain (40, not 52), its
    evidence naming both rules' views; the exempt patch is kept as a companion and still
    written. A QOS finding over other preemptions is left alone."""
    basis = {"basis": "preempted:19:abc", "preempted_attempts": 19}
    exempt = _rec("preempt_exempt_time", "cluster=slurm-a", "critical", 12.0, "slurm.conf",
                  "PreemptExemptTime=00:20:00", "slurm-a", basis)  # fmt: skip
    grace = _rec("preemption_grace_time", "cluster=slurm-a/qos=normal", "critical", 40.0,
                 "sacctmgr", "sacctmgr -i modify qos name=normal set GraceTime=300", "slurm-a",
                 basis)  # fmt: skip
    other = _rec("preemption_grace_time", "cluster=slurm-a/qos=low", "warning", 5.0, "sacctmgr",
                 "sacctmgr -i modify qos name=low set GraceTime=300", "slurm-a",
                 {"basis": "preempted:4:def"})  # fmt: skip
    out = dedupe_findings(to_frame([exempt, grace, other]))
    assert out["id"].to_list() == [grace.id, other.id]
    head = out.row(0, named=True)
    assert head["expected_gain_gpu_h_per_week"] == 40.0
    ev = json.loads(head["evidence"])
    assert [v["rule"] for v in ev["views"]] == ["preemption_grace_time", "preempt_exempt_time"]
    assert ev["preempted_attempts"] == 19
    assert ev["companion_patches"] == [
        {"id": exempt.id, "kind": "slurm.conf", "content": "PreemptExemptTime=00:20:00"}
    ]
    assert "preempt_exempt_time text" in head["change_text"]
    comp = companion_rows(out)
    assert comp.select("id", "rule", "patch_kind").rows() == [
        (exempt.id, "preempt_exempt_time", "slurm.conf")
    ]
    merged = merge_patches_by_object(pl.concat([out, comp]))
    assert {(m.kind, m.target) for m in merged} == {
        ("slurm.conf", "slurm.conf"), ("sacctmgr", "qos name=normal"), ("sacctmgr", "qos name=low")
    }  # fmt: skip


def test_merged_kueue_document_is_yaml_of_one_object() -> None:
    """The merged body is plain YAML (no comments), loadable as one mapping."""
    rec = _kueue_rec("kueue_borrowing", "critical", 1.0, {"lendingLimit": 13})
    (m,) = merge_patches_by_object(to_frame([rec]), {"k8s-b": [_cq()]})
    assert isinstance(yaml.safe_load(m.content), dict)
    assert yaml.safe_load(m.content)["metadata"] == {"name": "cq-prod"}
