"""The Kueue findings planted in the bundled sample fleet, found by the recommendation rules.

The fleet's ``cq-prod`` (24 GPUs, ``lendingLimit: 0``) sits mostly unused while ``cq-research``
of the same cohort pends (``planted.json`` ``kueue_unused_quota``); its 24 GPUs are also above
the registry's share of the cohort's 64 (prod teams infra 0.05 + recsys 0.10 + genomics 0.06 +
climate 0.08 = 0.29; 0.29 × 64 = 18.56 → 19 by largest remainder against research's 45.44 → 45;
|24 − 19| ÷ 19 = 26 % > the 20 % tolerance).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.recommendations import read_inputs, recommendations_frame
from pipelines.warehouse import connect
from tests.conftest import Materialized
from tests.recommendations._crd import validate_object, validate_patch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recs(materialized: Materialized) -> list[dict[str, Any]]:
    with connect(materialized.cfg.serving_path, read_only=True) as con:
        frame = recommendations_frame(read_inputs(con, materialized.cfg))
    return frame.to_dicts()


def _cluster_queues(fleet_dir: Path) -> dict[str, dict[str, Any]]:
    files = sorted((fleet_dir / "inputs" / "k8s-b" / "k8s").glob("clusterqueues_*.json"))
    doc = json.loads(files[-1].read_text())
    return {o["metadata"]["name"]: o for o in doc["items"]}


def test_kueue_borrowing_finding_on_the_bundled_fleet(
    recs: list[dict[str, Any]], fleet_dir: Path
) -> None:
    """cq-research pended beside cq-prod's unused quota: the rule names cq-prod's
    ``lendingLimit: 0`` as the knob and patches it (a valid merge patch of that ClusterQueue)."""
    planted = json.loads((fleet_dir / "planted.json").read_text())["kueue_unused_quota"]
    assert (planted["lender"], planted["pending_queue"]) == ("cq-prod", "cq-research")
    found = [r for r in recs if r["rule"] == "kueue_borrowing"]
    assert [r["scope"] for r in found] == ["cluster=k8s-b/clusterqueue=cq-research"]
    rec = found[0]
    evidence = json.loads(rec["evidence"]) if isinstance(rec["evidence"], str) else rec["evidence"]
    assert evidence["cohort"] == "gpu-fleet" and evidence["nominal_gpus"] == 40.0
    assert evidence["lenders"]["cq-prod"]["lending_limit"] == 0.0
    assert evidence["pending_hours_beside_unused_quota"] >= 3
    assert rec["expected_gain_gpu_h_per_week"] >= 20.0
    assert "cq-prod's lendingLimit from 0" in rec["change_text"]
    patch = yaml.safe_load(rec["patch_content"])
    assert patch["metadata"]["name"] == "cq-prod"
    gpu = next(
        r
        for r in patch["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        if r["name"] == "nvidia.com/gpu"
    )
    assert 0 < gpu["lendingLimit"] <= 24
    assert validate_patch(_cluster_queues(fleet_dir)["cq-prod"], patch) == []


def test_kueue_quota_drift_finding_on_the_bundled_fleet(recs: list[dict[str, Any]]) -> None:
    """cq-prod's 24 GPUs against the registry's 19 (module docstring): the drift rule fires on
    cq-prod, asking for nominalQuota 19."""
    found = {r["scope"]: r for r in recs if r["rule"] == "registry_drift_kueue"}
    rec = found["cluster=k8s-b/clusterqueue=cq-prod/resource=nvidia.com/gpu"]
    patch = yaml.safe_load(rec["patch_content"])
    gpu = next(
        r
        for r in patch["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        if r["name"] == "nvidia.com/gpu"
    )
    assert gpu["nominalQuota"] == 19


def test_fleet_kueue_objects_validate_against_the_crds(fleet_dir: Path) -> None:
    """Every Workload, ClusterQueue and LocalQueue the fleet writes passes the Kueue CRD
    schemas (v1beta1) and the ClusterQueue CEL rules."""
    folder = fleet_dir / "inputs" / "k8s-b" / "k8s"
    checked = 0
    for stem in ("workloads", "clusterqueues", "localqueues"):
        for f in sorted(folder.glob(f"{stem}_*.json")):
            for obj in json.loads(f.read_text())["items"]:
                assert validate_object(obj) == [], (f.name, obj["metadata"]["name"])
                checked += 1
    assert checked > 100


def test_materialized_fleet_has_the_kueue_views(materialized: Materialized) -> None:
    """The ``raw/k8s_objects`` asset loaded each day's snapshots; the views keep the latest:
    two ClusterQueues (40 + 24 = 64 GPUs of quota, the fleet's 8 nodes × 8) and twelve
    LocalQueues, as of the last day's snapshot (2026-11-03 23:59:59 UTC)."""
    with connect(materialized.cfg.serving_path, read_only=True) as con:
        cq = con.sql(
            "SELECT name, nominal_gpus, cohort, as_of FROM kueue_cluster_queues ORDER BY name"
        ).fetchall()
        lq = con.sql("SELECT count(*), max(as_of) FROM kueue_local_queues").fetchall()
        wl = con.sql("SELECT count(DISTINCT uid) FROM raw.k8s_workloads").fetchall()
        nodes = con.sql("SELECT count(DISTINCT name), sum(gpu_allocatable) / count(DISTINCT "
                        "snapshot_at) FROM raw.k8s_nodes").fetchall()  # fmt: skip
    as_of = dt.datetime(2026, 11, 3, 23, 59, 59, tzinfo=dt.UTC)
    assert [(n, g, c) for n, g, c, _ in cq] == [
        ("cq-prod", 24.0, "gpu-fleet"),
        ("cq-research", 40.0, "gpu-fleet"),
    ]
    assert {r[3] for r in cq} == {as_of}
    assert lq == [(12, as_of)]
    assert wl[0][0] > 100
    assert nodes == [(8, 64.0)]
