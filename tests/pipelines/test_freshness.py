"""Freshness: Dagster's last-update checks flag stale raw assets; the dashboard's rule agrees."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from dagster._core.test_utils import freeze_time  # Dagster's own clock patch for tests

from pipelines.config import ConfigError, load_config
from pipelines.definitions import build_defs
from pipelines.freshness import FRESHNESS_SENSOR, source_group, stale_sources
from pipelines.kinds import raw_source
from pipelines.warehouse import newest_data_time
from tests.conftest import write_config

CHECK = "freshness_check"


def _config(tmp_path: Path, freshness: str) -> Path:
    path = write_config(tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + f"\n[freshness]\n{freshness}\n")
    return path


def _materialized(instance: dg.DagsterInstance, name: str, at: dt.datetime) -> None:
    """Record a materialization of ``raw/<name>`` (one cluster-day) as if made at ``at``."""
    with freeze_time(at):
        instance.report_runless_asset_event(
            dg.AssetMaterialization(dg.AssetKey(["raw", name]), partition="slurm-a|2026-11-02")
        )


def test_stale_raw_asset_fails_its_check_and_fresh_ones_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounds sacct 26 h, k8s 48 h, dcgm 26 h; loads 1 min, 30 h, 30 h and never ago.

    Hand check: slurm_rows 1 min ≤ 26 h → pass; k8s_pods 30 h ≤ 48 h → pass; dcgm_samples
    30 h > 26 h → fail (stale); slurm_state never materialized → fail.
    """
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    cfg = load_config(_config(tmp_path, "sacct_hours = 26\nk8s_hours = 48\ndcgm_hours = 26"))
    defs = build_defs(cfg)
    checks = list(defs.asset_checks or [])
    job = dg.define_asset_job("freshness_checks", selection=dg.AssetSelection.checks(*checks))
    merged = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    now = dt.datetime.now(dt.UTC)
    with dg.DagsterInstance.get() as instance:
        assert str(instance.root_directory) == str(home)
        _materialized(instance, "slurm_rows", now - dt.timedelta(minutes=1))
        _materialized(instance, "k8s_pods", now - dt.timedelta(hours=30))
        _materialized(instance, "dcgm_samples", now - dt.timedelta(hours=30))

        sensor = merged.get_sensor_def(FRESHNESS_SENSOR)
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, definitions=merged))
        requested = {
            k.asset_key.path[-1] for r in tick.run_requests or [] for k in r.asset_check_keys or []
        }
        assert {"slurm_rows", "dcgm_samples"} <= requested

        result = merged.resolve_job_def("freshness_checks").execute_in_process(instance=instance)
    passed = {e.asset_key.path[-1]: e.passed for e in result.get_asset_check_evaluations()}
    assert {e.check_name for e in result.get_asset_check_evaluations()} == {CHECK}
    assert passed["slurm_rows"] is True
    assert passed["k8s_pods"] is True
    assert passed["dcgm_samples"] is False
    assert passed["slurm_state"] is False


def test_stale_sources_flags_loads_older_than_their_bound(tmp_path: Path) -> None:
    """Hand computation at 2026-11-03 12:00 UTC with sacct 26 h, k8s 48 h, dcgm 26 h:

    sacct loaded 11-02 12:00 → 24 h ≤ 26 → fresh; sshare 11-02 06:00 → 30 h > 26 → stale;
    k8s-pods 11-02 06:00 → 30 h ≤ 48 → fresh; dcgm 11-01 12:00 → 48 h > 26 → stale;
    ``other`` (no group) → no bound, not stale.
    """
    cfg = load_config(_config(tmp_path, "k8s_hours = 48"))
    t = dt.datetime(2026, 11, 3, 12, tzinfo=dt.UTC)
    frame = pl.DataFrame(
        {
            "source": ["sacct", "sshare", "k8s-pods", "dcgm", "other"],
            "cluster": ["a", "a", "b", "b", "b"],
            "last_loaded_at": [t - dt.timedelta(hours=h) for h in (24, 30, 30, 48, 100)],
        }
    )
    out = stale_sources(frame, cfg, t)
    assert out["age_h"].to_list() == [24.0, 30.0, 30.0, 48.0, 100.0]
    assert out["limit_h"].to_list() == [26.0, 26.0, 48.0, 26.0, None]
    assert out["stale"].to_list() == [False, True, False, True, False]


def test_stale_sources_judge_the_data_age_where_known(tmp_path: Path) -> None:
    """At 2026-11-03 12:00 UTC, sacct 26 h: sacct loaded 1 h ago with data of 15 days ago →
    data age 360 h > 26 → stale (the load age alone said fresh); a node list loaded 1 h ago
    carries no data time → judged by its load age, fresh; sshare snapshot 2 h old, loaded
    1 h ago → 2 h, fresh."""
    cfg = load_config(_config(tmp_path, "sacct_hours = 26"))
    t = dt.datetime(2026, 11, 3, 12, tzinfo=dt.UTC)
    frame = pl.DataFrame(
        {
            "source": ["sacct", "slurm-nodes", "sshare"],
            "cluster": ["a", "a", "a"],
            "newest_data_at": [t - dt.timedelta(days=15), None, t - dt.timedelta(hours=2)],
            "last_loaded_at": [t - dt.timedelta(hours=1)] * 3,
        },
        schema_overrides={"newest_data_at": pl.Datetime("us", "UTC")},
    )
    out = stale_sources(frame, cfg, t)
    assert out["data_age_h"].to_list() == [360.0, None, 2.0]
    assert out["load_age_h"].to_list() == [1.0, 1.0, 1.0]
    assert out["age_h"].to_list() == [360.0, 1.0, 2.0]
    assert out["stale"].to_list() == [True, False, False]


def test_newest_data_time_ignores_plans_and_reads_naive_as_utc() -> None:
    """The newest time not after the load: a future end (a reservation) is a plan and left out;
    a naive column is UTC; no rows or no column → None."""
    load = dt.datetime(2026, 11, 3, 12, tzinfo=dt.UTC)
    rows = pl.DataFrame(
        {
            "start_at": [dt.datetime(2026, 11, 1, tzinfo=dt.UTC), None],
            "end_at": [dt.datetime(2026, 11, 9, tzinfo=dt.UTC),
                       dt.datetime(2026, 11, 2, 6, tzinfo=dt.UTC)],
            "snapshot_at": [dt.datetime(2026, 11, 3, 11), dt.datetime(2026, 11, 3, 13)],
        }
    )  # fmt: skip
    assert newest_data_time(rows, ("start_at", "end_at"), load) == dt.datetime(
        2026, 11, 2, 6, tzinfo=dt.UTC
    )
    assert newest_data_time(rows, ("snapshot_at",), load) == dt.datetime(
        2026, 11, 3, 11, tzinfo=dt.UTC
    )
    assert newest_data_time(rows.clear(), ("start_at",), load) is None
    assert newest_data_time(rows, ("missing",), load) is None
    assert raw_source("slurm-nodes").data_time_columns == ()
    assert raw_source("sshare").data_time_columns == ("snapshot_at",)


def test_source_groups() -> None:
    """Every ingest source maps to the group of its raw asset."""
    assert [source_group(s) for s in ("sacct", "slurm-events", "slurm-nodes", "sshare")] == [
        "sacct"
    ] * 4
    assert [source_group(s) for s in ("k8s-events", "k8s-pods", "dcgm", "x")] == [
        "k8s", "k8s", "dcgm", None,
    ]  # fmt: skip


@pytest.mark.parametrize("line", ["sacct_hours = 0", "gpu_hours = 3", 'dcgm_hours = "soon"'])
def test_invalid_freshness_bound_is_refused(tmp_path: Path, line: str) -> None:
    """A non-positive bound, an unknown group or a non-number is a configuration error."""
    with pytest.raises(ConfigError, match="freshness"):
        load_config(_config(tmp_path, line))
