"""Preemption churn: PreemptExemptTime for the cluster, GraceTime for the preempted QOS."""

from __future__ import annotations

import json

from metrics.recommendations import preemption_churn
from tests.recommendations._frames import H, job, jobs, window

W = window(7)


def _attempts(run_before_preemption: float) -> list[dict[str, object]]:
    preempted = [
        job(f"p{i}", eligible=i * H, start=i * H, run=run_before_preemption, qos="low",
            state="PREEMPTED")
        for i in range(8)
    ]  # fmt: skip
    others = [job(f"c{i}", eligible=0, start=0, run=5 * H) for i in range(3)]
    return preempted + others


def test_churn_gets_exempt_time_and_grace_time() -> None:
    """8 attempts × 8 GPUs preempted after 20 min: 21.3 GPU-h lost a week; p75 run (20 min) →
    PreemptExemptTime 20 min; QOS low gets GraceTime=300."""
    out = preemption_churn(jobs(_attempts(1200)), W)
    by_rule = {r["rule"]: r for r in out.iter_rows(named=True)}
    exempt = by_rule["preempt_exempt_time"]
    assert exempt["scope"] == "cluster=slurm-a"
    assert exempt["patch_kind"] == "slurm.conf"
    assert exempt["patch_content"] == "PreemptExemptTime=00:20:00"
    ev = json.loads(exempt["evidence"])
    assert ev["preempted_attempts"] == 8
    assert ev["preempted_gpu_h_per_week"] == round(8 * 8 * 1200 / 3600, 4)
    grace = by_rule["preemption_grace_time"]
    assert grace["scope"] == "cluster=slurm-a/qos=low"
    assert grace["patch_content"] == "sacctmgr -i modify qos name=low set GraceTime=300"
    assert grace["patch_kind"] == "sacctmgr"


def test_exempt_time_is_kept_within_bounds() -> None:
    """A 2-minute p75 still gets the 10-minute floor."""
    out = preemption_churn(jobs(_attempts(120)), W, min_lost_gpu_h_per_week=0)
    exempt = out.filter(out["rule"] == "preempt_exempt_time")
    assert exempt["patch_content"].to_list() == ["PreemptExemptTime=00:10:00"]


def test_late_preemptions_are_not_churn() -> None:
    """Preempted after 5 h on median: losing work is not from churn; nothing fires."""
    assert preemption_churn(jobs(_attempts(5 * H)), W).height == 0


def test_known_exempt_time_already_long_enough() -> None:
    """With PreemptExemptTime already 1 h only the GraceTime change remains."""
    out = preemption_churn(jobs(_attempts(1200)), W, current_exempt_s=3600)
    assert out["rule"].to_list() == ["preemption_grace_time"]
