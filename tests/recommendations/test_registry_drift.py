"""Registry vs scheduler drift: sacctmgr fairshare and Kueue nominalQuota from the registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from metrics.recommendations import kueue_quota_drift, slurm_fairshare_drift
from tests.recommendations._crd import CRD_DIR, validate_patch
from tests.recommendations._frames import window

W = window(1)


def _registry(vision_share: float = 0.12) -> tuple[pl.DataFrame, pl.DataFrame]:
    shares = {"vision": vision_share, "nlp": 0.08, "speech": 0.08, "genomics": 0.06,
              "safety": 0.06}  # fmt: skip
    teams = pl.DataFrame({"team": list(shares), "share": list(shares.values())})
    mapping = pl.DataFrame(
        [
            *({"kind": "slurm_account", "key": t, "team": t} for t in shares),
            *({"kind": "k8s_namespace", "key": t, "team": t} for t in shares),
            *({"kind": "k8s_local_queue", "key": f"lq-{t}", "team": t} for t in shares),
        ]
    )
    return teams, mapping


def _sshare(speech_raw: int) -> pl.DataFrame:
    rows = [
        ("root", None, None, None),
        ("root", "root", 1, 0.01),
        ("vision", None, 12, 0.3),
        ("vision", "alice", 1, 1.0),
        ("nlp", None, 8, 0.2),
        ("speech", None, speech_raw, 0.075),
        ("genomics", None, 6, 0.15),
        ("safety", None, 6, 0.15),
    ]
    return pl.DataFrame(
        [{"cluster": "slurm-a", "account": a, "user_name": u, "raw_shares": r, "norm_shares": n}
         for a, u, r, n in rows],
        schema={"cluster": pl.String(), "account": pl.String(), "user_name": pl.String(),
                "raw_shares": pl.Int64(), "norm_shares": pl.Float64()},
    )  # fmt: skip


def test_drifted_account_gets_the_registry_fairshare() -> None:
    """speech has RawShares 3 where its registry share 0.08 × the site's scale 100 gives 8."""
    teams, mapping = _registry()
    out = slurm_fairshare_drift(teams, mapping, _sshare(3), W,
                                capacity_gpu_h_per_week={"slurm-a": 1000.0})  # fmt: skip
    assert out["scope"].to_list() == ["cluster=slurm-a/account=speech"]
    rec = out.row(0, named=True)
    assert rec["patch_kind"] == "sacctmgr"
    assert rec["patch_content"] == "sacctmgr -i modify account name=speech set fairshare=8"
    ev = json.loads(rec["evidence"])
    assert (ev["raw_shares"], ev["expected_raw_shares"], ev["scale"]) == (3, 8, 100.0)
    # registry 0.08 / 0.40 = 0.2 of the fleet, scheduler 3 / 35: 0.1143 of 1000 GPU-h a week
    assert rec["expected_gain_gpu_h_per_week"] == pytest.approx(1000 * (0.2 - 3 / 35), abs=0.01)
    assert rec["severity"] == "critical"


def test_the_rule_fires_where_the_view_says_drifted() -> None:
    """Teams a and b, registry 0.5 each, RawShares 100 and 130: normalised 0.435 and 0.565
    against 0.5, a relative drift of 13 %, under the 20 % tolerance: the ``registry_drift``
    view says neither drifted, and the rule proposes nothing (before: RawShares against the
    lower-middle scale 200 made b 30 % off, a warning and a patch). At 100 and 160 (23 %) both
    measures agree it drifted."""
    from metrics.drift import account_shares, registry_drift, slurm_share_drift

    teams = pl.DataFrame({"team": ["a", "b"], "share": [0.5, 0.5]})
    mapping = pl.DataFrame({"kind": ["slurm_account"] * 2, "key": ["a", "b"], "team": ["a", "b"]})

    def sshare(b_raw: int) -> pl.DataFrame:
        return pl.DataFrame(
            {"cluster": ["c1", "c1"], "account": ["a", "b"], "user_name": [None, None],
             "raw_shares": [100, b_raw], "norm_shares": [None, None]},
            schema_overrides={"user_name": pl.String()},
        )  # fmt: skip

    for b_raw, drifted in ((130, False), (160, True)):
        view = registry_drift(
            slurm_share_drift(account_shares(teams, mapping, "slurm_account"), sshare(b_raw).lazy())
        ).collect()
        assert view["drifted"].to_list() == [drifted, drifted]
        out = slurm_fairshare_drift(teams, mapping, sshare(b_raw), W)
        assert (out.height > 0) == drifted
        if drifted:
            assert json.loads(out.row(0, named=True)["evidence"])["relative_drift"] == (
                pytest.approx(abs(100 / 260 - 0.5) / 0.5, abs=1e-4)  # evidence rounds to 4
            )


def test_matching_shares_do_not_fire() -> None:
    """RawShares 8 for speech matches the registry."""
    teams, mapping = _registry()
    assert slurm_fairshare_drift(teams, mapping, _sshare(8), W).height == 0


def _kueue_objects() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    objects = CRD_DIR / "objects"
    cqs = json.loads(Path(objects / "clusterqueues.json").read_text())["items"]
    lqs = json.loads(Path(objects / "localqueues.json").read_text())["items"]
    return cqs, lqs


def test_clusterqueue_quota_follows_the_registry() -> None:
    """cq-research serves nlp, genomics, safety (0.20), cq-prod vision: with vision at 0.20 the
    cohort's 64 GPUs split 32/32, so cq-research goes 40 → 32 and cq-prod 24 → 32; the patches
    carry the whole resourceGroups and validate against the CRDs."""
    teams, mapping = _registry(vision_share=0.20)
    cqs, lqs = _kueue_objects()
    out = kueue_quota_drift(teams, mapping, cqs, lqs, W, cluster="k8s-b")
    assert out["scope"].to_list() == [
        "cluster=k8s-b/clusterqueue=cq-prod/resource=nvidia.com/gpu",
        "cluster=k8s-b/clusterqueue=cq-research/resource=nvidia.com/gpu",
    ]
    by_cq = {json.loads(r["evidence"])["expected_nominal_gpus"]: r for r in out.to_dicts()}
    assert set(by_cq) == {32}
    originals = {c["metadata"]["name"]: c for c in cqs}
    for rec in out.to_dicts():
        assert rec["patch_kind"] == "kubernetes-merge-patch"
        patch = yaml.safe_load(rec["patch_content"])
        name = patch["metadata"]["name"]
        assert validate_patch(originals[name], patch) == []
        gpu = [
            r
            for g in patch["spec"]["resourceGroups"]
            for f in g["flavors"]
            for r in f["resources"]
            if r["name"] == "nvidia.com/gpu" and r["nominalQuota"] not in (0, "0")
        ]
        assert [r["nominalQuota"] for r in gpu] == [32]
        # CPU and memory quotas travel unchanged in the replaced list
        assert any("cpu" in g["coveredResources"] for g in patch["spec"]["resourceGroups"])


def test_clusterqueues_in_proportion_do_not_fire() -> None:
    """With the registry's own shares (research 0.20 : prod 0.12 of 64 = 40 : 24) no drift."""
    teams, mapping = _registry(vision_share=0.12)
    cqs, lqs = _kueue_objects()
    assert kueue_quota_drift(teams, mapping, cqs, lqs, W, cluster="k8s-b").height == 0
