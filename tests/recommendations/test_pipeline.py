"""The recommendations pipeline on the materialized two-day sample fleet."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from metrics.recommendations import PATCH_KINDS, RECOMMENDATION_SCHEMA, SEVERITIES
from pipelines.recommendations import (
    OUTPUT_FILES,
    read_inputs,
    recommendations_frame,
    run_recommendations,
    write_recommendations_table,
)
from pipelines.warehouse import connect
from tests.conftest import Materialized

FIELDS = {
    "id", "rule", "cluster", "scope", "severity", "evidence", "expected_gain_gpu_h_per_week",
    "expected_wait_reduction_s", "confidence", "change_text", "patch", "status", "change_id",
    "proposed_at", "is_current",
}  # fmt: skip


@pytest.fixture(scope="module")
def written(
    materialized: Materialized, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """latest.json and the patch files, written once for the module."""
    return run_recommendations(materialized.cfg, out_dir=tmp_path_factory.mktemp("recs"))


def test_latest_json_has_every_field(written: dict[str, Path]) -> None:
    """Each recommendation carries id, rule, scope, severity, evidence with its window, a gain
    or wait reduction field, confidence, change text and a typed patch."""
    doc = json.loads(written["latest.json"].read_text())
    assert doc["as_of"].endswith("Z")
    recs = doc["recommendations"]
    assert recs
    for r in recs:
        assert set(r) == FIELDS
        assert r["severity"] in SEVERITIES
        assert {"start", "end"} <= set(r["evidence"]["window"])
        assert "expected_gain_gpu_h_per_week" in r and "expected_wait_reduction_s" in r
        assert 0.0 <= r["confidence"] <= 1.0
        assert r["change_text"]
        if r["patch"] is not None:
            assert r["patch"]["kind"] in PATCH_KINDS and r["patch"]["content"]
    assert len({r["id"] for r in recs}) == len(recs)


def test_planted_findings_of_two_days_are_found(written: dict[str, Path]) -> None:
    """In two days the registry drift of speech and the idle recsys team are already visible."""
    recs = json.loads(written["latest.json"].read_text())["recommendations"]
    by_scope = {(r["rule"], r["scope"]): r for r in recs}
    drift = by_scope[("registry_drift_slurm", "cluster=slurm-a/account=speech")]
    assert drift["patch"] == {
        "kind": "sacctmgr",
        "content": "sacctmgr -i modify account name=speech set fairshare=8",
    }
    # The fleet's planted ledger change on speech goes 8 → 3, not to the proposed 8: proposed.
    assert (drift["status"], drift["change_id"]) == ("proposed", None)
    idle = by_scope[("idle_allocations", "cluster=slurm-a/team=recsys")]
    assert idle["evidence"]["idle_share"] > 0.8
    # Controls: defragmentation candidates only where gangs wait on rack-scale topology.
    assert {r["cluster"] for r in recs if r["rule"] == "defrag_candidates"} <= {"slurm-nvl"}


def test_patch_files_hold_each_patch(written: dict[str, Path]) -> None:
    """Every patch appears in its scheduler's file under its id; shell files are scripts."""
    recs = json.loads(written["latest.json"].read_text())["recommendations"]
    for kind, name in OUTPUT_FILES.items():
        text = written[name].read_text()
        for r in recs:
            if r["patch"] and r["patch"]["kind"] == kind:
                assert r["id"] in text and r["patch"]["content"].splitlines()[0] in text
    assert written["sacctmgr.sh"].read_text().startswith("#!/bin/sh\n")
    assert written["sacctmgr.sh"].stat().st_mode & 0o111


def test_ids_are_stable_across_runs(materialized: Materialized) -> None:
    """Two runs over the same data give the same ids in the same order."""
    with connect(materialized.cfg.serving_path, read_only=True) as con:
        inputs = read_inputs(con, materialized.cfg)
    first = recommendations_frame(inputs)
    second = recommendations_frame(inputs)
    assert first["id"].to_list() == second["id"].to_list()
    assert list(first.schema)[: len(RECOMMENDATION_SCHEMA)] == list(RECOMMENDATION_SCHEMA)


def test_recommendations_table_and_view(materialized: Materialized, tmp_path: Path) -> None:
    """The frame lands in ``analytics.recommendations`` behind a ``recommendations`` view."""
    with connect(materialized.cfg.serving_path, read_only=True) as con:
        frame = recommendations_frame(read_inputs(con, materialized.cfg))
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        assert write_recommendations_table(con, frame) == frame.height
        rows = con.sql("SELECT id, rule, patch_kind, as_of FROM recommendations").fetchall()
    assert sorted(r[0] for r in rows) == sorted(frame["id"].to_list())


def test_kueue_patch_file_has_one_patch_per_clusterqueue(
    written: dict[str, Path], fleet_dir: Path
) -> None:
    """On the fleet the borrowing finding raises cq-prod's lendingLimit 0 → 13 and the drift
    finding sets its nominalQuota 24 → 19, each as a whole resourceGroups list (applied in turn,
    the second reset the first's field). The file now holds one cq-prod document carrying both,
    the same state in either order, and both findings record the merge in their evidence."""
    import itertools

    import yaml

    from metrics.recommendations import apply_merge_patch

    docs = [d for d in yaml.safe_load_all(written["kueue-patches.yaml"].read_text()) if d]
    names = [d["metadata"]["name"] for d in docs]
    assert len(names) == len(set(names)) and "cq-prod" in names
    files = sorted((fleet_dir / "inputs" / "k8s-b" / "k8s").glob("clusterqueues_*.json"))
    objects = {o["metadata"]["name"]: o for o in json.loads(files[-1].read_text())["items"]}
    states = []
    for order in itertools.permutations(docs):
        state = dict(objects)
        for d in order:
            state[d["metadata"]["name"]] = apply_merge_patch(state[d["metadata"]["name"]], d)
        states.append(state)
    assert all(s == states[0] for s in states)
    gpu = next(
        r
        for r in states[0]["cq-prod"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        if r["name"] == "nvidia.com/gpu"
    )
    assert (gpu["nominalQuota"], gpu["lendingLimit"]) == (19, 13)
    recs = json.loads(written["latest.json"].read_text())["recommendations"]
    merged = {r["rule"]: r["evidence"].get("patch_merge") for r in recs if "kueue" in r["rule"]}
    assert merged["kueue_borrowing"][0]["target"] == (
        "kubernetes-merge-patch k8s-b ClusterQueue/cq-prod"
    )
    assert merged["registry_drift_kueue"][0]["conflicts"] == []


def test_patch_files_set_each_setting_once_per_cluster(written: dict[str, Path]) -> None:
    """slurm.conf.patch: no setting twice in a cluster; sacctmgr.sh: one command per entity."""
    from metrics.recommendations.merge import apply_slurm_conf

    for block in written["slurm.conf.patch"].read_text().split("\n## cluster ")[1:]:
        lines = [x for x in block.splitlines()[1:] if x and not x.startswith("#")]
        keys = [x.split()[0] if x.startswith("PartitionName=") else x.split("=")[0] for x in lines]
        assert len(keys) == len(set(keys))
        assert apply_slurm_conf({}, "\n".join(lines)) == apply_slurm_conf(
            {}, "\n".join(reversed(lines))
        )
    cmds = [x for x in written["sacctmgr.sh"].read_text().splitlines() if x.startswith("sacctmgr")]
    targets = [x.split(" set ")[0] for x in cmds]
    assert len(targets) == len(set(targets))


def test_idle_cap_on_the_fleet_respects_recsys_entitlement(written: dict[str, Path]) -> None:
    """recsys's p95 active GPUs (≈ 4.5) gave a one-node cap of 8; its registry share 0.10 of
    slurm-a's 192 GPUs entitles it to ⌈19.2⌉ = 20, so the cap is 20 (still below the ≈ 34 GPUs it
    holds at p95, so the GrpTRES patch stays)."""
    recs = json.loads(written["latest.json"].read_text())["recommendations"]
    idle = next(r for r in recs if r["scope"] == "cluster=slurm-a/team=recsys")
    cap = idle["evidence"]["caps"]["recsys"]
    assert (cap["cap_by_use_gpus"], cap["entitled_gpus"], cap["cap_gpus"]) == (8, 20, 20)
    assert (cap["registry_share"], cap["pool_gpus"]) == (0.1, 192.0)
    assert idle["patch"] == {
        "kind": "sacctmgr",
        "content": "sacctmgr -i modify account name=recsys set GrpTRES=gres/gpu=20",
    }


def test_settings_in_force_reach_the_fairness_rule(materialized: Materialized) -> None:
    """The fleet's inputs with a hand-built drifting fairness view (nlp at e = 4 for the last
    two weeks): without a loaded config the finding proposes no weight (info, a comment);
    with ``scontrol show config`` loaded for slurm-a (fair share 500, QOS 20000, half-life 1
    day) it proposes PriorityWeightFairshare=40000 and PriorityDecayHalfLife=7-0."""
    import dataclasses

    from metrics.recommendations.slurm_config import parse_scontrol_config
    from tests.recommendations.test_fairness_drift import _weekly

    with connect(materialized.cfg.serving_path, read_only=True) as con:
        inputs = read_inputs(con, materialized.cfg)
    drifting = dataclasses.replace(inputs, fairness_weekly=_weekly(4.0))
    rec = (
        recommendations_frame(drifting)
        .filter(pl.col("rule") == "fairness_drift")
        .row(0, named=True)
    )
    assert rec["severity"] == "info"
    assert rec["patch_content"].startswith("# needs input: the PriorityWeight* settings")
    config = parse_scontrol_config(
        "PriorityDecayHalfLife = 1-00:00:00\nPriorityWeightFairshare = 500\n"
        "PriorityWeightQOS = 20000\n"
    )
    loaded = dataclasses.replace(drifting, slurm_config={"slurm-a": config})
    rec = (
        recommendations_frame(loaded).filter(pl.col("rule") == "fairness_drift").row(0, named=True)
    )
    assert rec["patch_content"] == "PriorityWeightFairshare=40000\nPriorityDecayHalfLife=7-0"
    assert rec["severity"] == "critical"


def test_scontrol_config_is_read_from_the_inputs(
    materialized: Materialized, tmp_path: Path
) -> None:
    """``<inputs>/slurm-a/slurm_state/scontrol_config_<day>.txt``: the newest file by name is
    parsed into ``inputs.slurm_config``; a cluster without one has none."""
    import dataclasses

    state = tmp_path / "inputs" / "slurm-a" / "slurm_state"
    state.mkdir(parents=True)
    (state / "scontrol_config_2026-11-02.txt").write_text("PriorityWeightQOS = 1\n")
    (state / "scontrol_config_2026-11-03.txt").write_text(
        "Configuration data as of 2026-11-03T08:00:00\nPriorityWeightQOS       = 20000\n"
    )
    base = materialized.cfg
    cfg = dataclasses.replace(
        base,
        inputs_dir=tmp_path / "inputs",
        clusters=tuple(
            dataclasses.replace(c, input_dir=tmp_path / "inputs" / c.name) for c in base.clusters
        ),
    )
    with connect(cfg.serving_path, read_only=True) as con:
        inputs = read_inputs(con, cfg)
    assert inputs.slurm_config == {"slurm-a": {"PriorityWeightQOS": "20000"}}


def test_a_change_to_the_proposed_value_applies_and_a_regressed_one_rolls_back(
    materialized: Materialized, tmp_path: Path
) -> None:
    """On a copy of the fleet's serving copy: without ``policy_change_impact`` speech's drift
    finding (fairshare=8) is proposed, first at the run's cut-off (``proposed_at`` = as_of). A
    ledger row setting speech's shares 3 → 8 one hour into the evidence window, before that
    proposal, does not apply it; one an hour after the proposal does; with an impact row for
    that change saying jain (the rule's target KPI) regressed, it is regressed, and its patch
    puts fairshare 3 back."""
    import shutil

    copy = tmp_path / "serving.duckdb"
    shutil.copyfile(materialized.cfg.serving_path, copy)

    def drift() -> dict[str, object]:
        with connect(copy, read_only=True) as con:
            frame = recommendations_frame(read_inputs(con, materialized.cfg))
        rows = frame.filter(
            (pl.col("rule") == "registry_drift_slurm")
            & (pl.col("scope") == "cluster=slurm-a/account=speech")
        )
        assert rows.height == 1
        return rows.row(0, named=True)

    before = drift()
    assert (before["status"], before["change_id"]) == ("proposed", None)
    assert before["proposed_at"] == before["as_of"]
    insert = (
        "INSERT INTO analytics.policy_changes (change_id, cluster, scheduler, object, key, old,"
        " new, actor, changed_at, source, scope) VALUES (?, 'slurm-a', 'slurm',"
        " 'account=speech', 'shares', '3', '8', 'root', ?, 'sacctmgr list transactions',"
        " 'account')"
    )
    with duckdb.connect(str(copy)) as con:
        con.execute(insert, ["early", before["window_start"] + dt.timedelta(hours=1)])
    early = drift()
    assert (early["status"], early["change_id"]) == ("proposed", None)
    with duckdb.connect(str(copy)) as con:
        con.execute(insert, ["planted", before["proposed_at"] + dt.timedelta(hours=1)])
    applied = drift()
    assert (applied["status"], applied["change_id"]) == ("applied", "planted")
    with duckdb.connect(str(copy)) as con:
        con.execute(
            "CREATE OR REPLACE TABLE analytics.policy_change_impact AS"
            " SELECT 'planted' AS change_id, 'jain' AS kpi, 'its' AS method, 'regressed' AS verdict"
        )
        con.execute(
            "CREATE OR REPLACE VIEW policy_change_impact AS "
            "SELECT * FROM analytics.policy_change_impact"
        )
    regressed = drift()
    assert (regressed["status"], regressed["change_id"]) == ("regressed", "planted")
    assert regressed["patch_content"] == "sacctmgr -i modify account name=speech set fairshare=3"
