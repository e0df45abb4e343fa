"""Kueue quota unused while other queues pend: cohort, borrowingLimit, lendingLimit patches."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from metrics.holds import HOLD_SCHEMA
from metrics.recommendations import cluster_queue_usage_hourly, kueue_borrowing
from tests.recommendations._crd import CRD_DIR, validate_patch
from tests.recommendations._frames import UTC, H, at, job, jobs, pending, window

W = window(1)


def _cqs() -> list[dict[str, Any]]:
    """cq-research (v1beta1, cohort gpu-pool, 40 GPUs, borrowingLimit 16, lendingLimit 8) and
    cq-prod (v1beta2, cohortName gpu-pool, 24 GPUs, no limits) from the fixture."""
    doc = json.loads(Path(CRD_DIR / "objects" / "clusterqueues.json").read_text())
    return [c for c in doc["items"] if c["metadata"]["name"] in ("cq-research", "cq-prod")]


def _usage(research_used: float, research_pending: float, prod_used: float) -> pl.DataFrame:
    """Six hours with the given GPUs in use / pending per ClusterQueue."""
    rows = []
    for h in range(6):
        for cq, used, pend in (
            ("cq-research", research_used, research_pending),
            ("cq-prod", prod_used, 0.0),
        ):
            rows.append({"cluster": "k8s-b", "cluster_queue": cq, "hour": at(h * H),
                         "used_gpu_s": used * H, "pending_gpu_s": pend * H})  # fmt: skip
    return pl.DataFrame(
        rows,
        schema={"cluster": pl.String(), "cluster_queue": pl.String(), "hour": UTC,
                "used_gpu_s": pl.Float64(), "pending_gpu_s": pl.Float64()},
    )  # fmt: skip


def _patches(content: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(content) if d}


def test_borrowing_limit_raised_when_it_capped_the_pending_queue() -> None:
    """cq-research ran at 40 + 16 borrowed with 16 more GPUs pending while cq-prod left all 24
    unused: it wanted 32 above its quota, so borrowingLimit 16 → 32; 16 GPU × 6 h missed is
    16 × 6 × 7 = 672 GPU-h a week."""
    cqs = _cqs()
    out = kueue_borrowing(_usage(56, 16, 0), cqs, W, cluster="k8s-b")
    assert out["scope"].to_list() == ["cluster=k8s-b/clusterqueue=cq-research"]
    rec = out.row(0, named=True)
    assert rec["expected_gain_gpu_h_per_week"] == 672.0
    assert "borrowingLimit from 16 to 32" in rec["change_text"]
    patches = _patches(rec["patch_content"])
    assert list(patches) == ["cq-research"]
    originals = {c["metadata"]["name"]: c for c in cqs}
    assert validate_patch(originals["cq-research"], patches["cq-research"]) == []
    limits = {
        f["name"]: r.get("borrowingLimit")
        for g in patches["cq-research"]["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }
    # the zero-quota a100-mig flavor is a placeholder and keeps no limit
    assert limits == {"h100-research": 32, "a100-mig": None}


def test_borrowing_limit_is_split_over_the_flavors() -> None:
    """cq-research with two GPU flavors of 20 nominal each (borrowingLimit 8 each, 16 in all):
    it wanted 32 above its quota, so 32 in all, 16 per flavor (before: 32 on each flavor, 64
    borrowable where the text said 32)."""
    cqs = copy.deepcopy(_cqs())
    research = next(c for c in cqs if c["metadata"]["name"] == "cq-research")
    group = next(
        g for g in research["spec"]["resourceGroups"] if "nvidia.com/gpu" in g["coveredResources"]
    )
    h100 = next(f for f in group["flavors"] if f["name"] == "h100-research")
    gpu = next(r for r in h100["resources"] if r["name"] == "nvidia.com/gpu")
    gpu.update(nominalQuota=20, borrowingLimit=8)
    twin = copy.deepcopy(h100)
    twin["name"] = "h100-research-b"
    group["flavors"].append(twin)
    out = kueue_borrowing(_usage(56, 16, 0), cqs, W, cluster="k8s-b")
    rec = out.row(0, named=True)
    assert "borrowingLimit from 16 to 32" in rec["change_text"]
    limits = {
        f["name"]: r.get("borrowingLimit")
        for g in _patches(rec["patch_content"])["cq-research"]["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }
    assert limits == {"h100-research": 16, "h100-research-b": 16, "a100-mig": None}


def test_queues_outside_one_cohort_are_joined() -> None:
    """Without a shared cohort nothing can be borrowed: both go into cohort gpu-pool."""
    cqs = _cqs()
    lone = copy.deepcopy(cqs)
    for c in lone:
        c["spec"].pop("cohort", None)
        c["spec"].pop("cohortName", None)
        for g in c["spec"]["resourceGroups"]:
            for f in g["flavors"]:
                for r in f["resources"]:
                    r.pop("borrowingLimit", None)  # forbidden without a cohort
    lone[1]["spec"]["cohortName"] = "gpu-pool"  # only cq-prod is in a cohort
    out = kueue_borrowing(_usage(40, 16, 0), lone, W, cluster="k8s-b")
    rec = out.row(0, named=True)
    patches = _patches(rec["patch_content"])
    assert list(patches) == ["cq-research"]
    assert patches["cq-research"]["spec"] == {"cohort": "gpu-pool"}  # v1beta1 field name
    assert validate_patch(lone[0], patches["cq-research"]) == []


def test_lending_limit_raised_when_it_held_back_unused_quota() -> None:
    """cq-prod lends at most 4 of 24 idle GPUs: its lendingLimit goes to 24."""
    cqs = _cqs()
    for f in cqs[1]["spec"]["resourceGroups"][1]["flavors"]:
        for r in f["resources"]:
            if r["name"] == "nvidia.com/gpu":
                r["lendingLimit"] = "4"
    out = kueue_borrowing(_usage(40, 8, 0), cqs, W, cluster="k8s-b")
    rec = out.row(0, named=True)
    assert "cq-prod's lendingLimit from 4 to 24" in rec["change_text"]
    patches = _patches(rec["patch_content"])
    originals = {c["metadata"]["name"]: c for c in cqs}
    assert validate_patch(originals["cq-prod"], patches["cq-prod"]) == []


def test_no_pending_work_does_not_fire() -> None:
    """Unused quota alone is not a finding."""
    assert kueue_borrowing(_usage(30, 0, 0), _cqs(), W, cluster="k8s-b").height == 0


def test_busy_lenders_do_not_fire() -> None:
    """When the other queue uses its whole quota there was nothing to borrow."""
    assert kueue_borrowing(_usage(56, 16, 24), _cqs(), W, cluster="k8s-b").height == 0


def test_usage_hourly_from_attempts_and_pending_workloads() -> None:
    """Attempts count as used from start to end and as pending while they waited; never-started
    workloads pend until cancelled or the window end."""
    attempts = jobs(
        [job("a", eligible=0, start=1800, run=3600, gpus=4, partition="cq-research",
             source="kubernetes", cluster="k8s-b")]
    )  # fmt: skip
    never = pending(
        [{"cluster": "k8s-b", "job_id": "b", "partition": "cq-prod", "qos": None,
          "account": "vision", "req_gpus": 2.0, "eligible_at": at(0), "cancel_at": None,
          "timelimit_s": None}]
    )  # fmt: skip
    out = cluster_queue_usage_hourly(attempts, never, window(2 / 24))
    research = out.filter(pl.col("cluster_queue") == "cq-research")
    assert research["used_gpu_s"].to_list() == [4 * 1800.0, 4 * 1800.0]
    assert research["pending_gpu_s"].to_list() == [4 * 1800.0, 0.0]
    prod = out.filter(pl.col("cluster_queue") == "cq-prod")
    assert prod["pending_gpu_s"].to_list() == [2 * 3600.0, 2 * 3600.0]


def test_quota_in_time_sliced_units_is_compared_in_gpus() -> None:
    """On nodes time-sliced in 4 replicas one ``nvidia.com/gpu`` is 1/4 GPU: cq-research's
    quota of 40 units is 10 GPUs, its borrowingLimit of 16 units 4 GPUs; cq-prod's 24 units 6
    GPUs. cq-research ran 14 GPUs (10 + the 4 it may borrow) with 4 more pending while cq-prod
    used none: it missed min(4, 6) × 6 h = 24 GPU-h (168 a week) and wanted 18 − 10 = 8 GPUs
    above its quota = 32 units, so borrowingLimit 16 → 32. Read in units (the usage of 14
    against a quota of 40), it had quota to spare and no limit was named: no recommendation."""
    cqs = _cqs()
    assert kueue_borrowing(_usage(14, 4, 0), cqs, W, cluster="k8s-b").height == 0
    out = kueue_borrowing(_usage(14, 4, 0), cqs, W, cluster="k8s-b", gpu_unit=0.25)
    rec = out.row(0, named=True)
    assert rec["expected_gain_gpu_h_per_week"] == 168.0
    assert "borrowingLimit from 16 to 32" in rec["change_text"]
    evidence = json.loads(rec["evidence"])
    assert (evidence["nominal_gpus"], evidence["p90_wanted_above_quota_gpus"]) == (10.0, 8.0)
    limits = {
        f["name"]: r.get("borrowingLimit")
        for g in _patches(rec["patch_content"])["cq-research"]["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }
    assert limits == {"h100-research": 32, "a100-mig": None}


def test_usage_hourly_spreads_a_gangs_pieces_of_held_gpus() -> None:
    """A gang attempt of 16 GPUs over 0 - 2 h whose pods held 8 GPUs over 0 - 600 s, 16 over
    600 - 1,800 s and 8 over 1,800 - 7,200 s (METRICS.md "GPU holding") used, by hand,
    8 x 600 + 16 x 1,200 + 8 x 1,800 = 38,400 GPU-s in hour 0 and 8 x 3,600 = 28,800 in
    hour 1 (its gpu_s, 67,200), as the waterfall counts it; 16 GPUs over its span gave
    57,600 each."""
    attempts = jobs(
        [job("g", eligible=0, start=0, run=7200, gpus=16, partition="cq-research",
             source="kubernetes", cluster="k8s-b")]
    )  # fmt: skip
    holds = pl.DataFrame(
        [("k8s-b", "g", 0, at(0), at(600), 8.0), ("k8s-b", "g", 0, at(600), at(1800), 16.0),
         ("k8s-b", "g", 0, at(1800), at(7200), 8.0)],
        schema=HOLD_SCHEMA, orient="row",
    )  # fmt: skip
    out = cluster_queue_usage_hourly(attempts, pending(), window(2 / 24), holds=holds.lazy())
    assert out["used_gpu_s"].to_list() == [38_400.0, 28_800.0]
    spans = cluster_queue_usage_hourly(attempts, pending(), window(2 / 24))
    assert spans["used_gpu_s"].to_list() == [57_600.0, 57_600.0]
