"""The recommendations pipeline on the materialized two-day sample fleet."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
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
    "expected_wait_reduction_s", "confidence", "change_text", "patch",
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
    idle = by_scope[("idle_allocations", "cluster=slurm-a/team=recsys")]
    assert idle["evidence"]["idle_share"] > 0.8


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
