"""The weekly report asset, its job and its schedule."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg

from pipelines._raw_assets import SettingsResource
from pipelines.report.dagster import (
    WEEKLY_REPORT_JOB,
    WEEKLY_REPORT_KEY,
    WeeklyReportConfig,
    weekly_report,
    weekly_report_job,
    weekly_report_schedule,
)
from tests.conftest import Materialized


def test_asset_writes_the_configured_week(materialized: Materialized, tmp_path: Path) -> None:
    """Materializing the asset writes the week's page and sidecar; a second run keeps them."""
    settings = SettingsResource(config_path=str(materialized.cfg.path))
    config = WeeklyReportConfig(week="2026-W45", out_dir=str(tmp_path), pdf=False)
    run_config = dg.RunConfig(ops={"analytics__weekly_report": config})
    result = dg.materialize(
        [weekly_report], resources={"settings": settings}, run_config=run_config,
        instance=materialized.instance,
    )  # fmt: skip
    assert result.success
    meta = result.asset_materializations_for_node("analytics__weekly_report")[0].metadata
    assert meta["week"].value == "2026-W45" and meta["written"].value is True
    assert (tmp_path / "2026-W45" / "report.html").exists()
    assert (tmp_path / "2026-W45" / "report.json").exists()
    again = dg.materialize(
        [weekly_report], resources={"settings": settings}, run_config=run_config,
        instance=materialized.instance,
    )  # fmt: skip
    meta = again.asset_materializations_for_node("analytics__weekly_report")[0].metadata
    assert meta["written"].value is False


def test_schedule_requests_the_week_that_just_ended(materialized: Materialized) -> None:
    """The Monday 06:00 UTC tick of 2026-11-09 asks for 2026-W45, keyed by the week."""
    schedule = weekly_report_schedule(materialized.cfg)
    assert schedule.cron_schedule == "0 6 * * 1" and schedule.execution_timezone == "UTC"
    ctx = dg.build_schedule_context(
        scheduled_execution_time=dt.datetime(2026, 11, 9, 6, 0, tzinfo=dt.UTC)
    )
    request = schedule.evaluate_tick(ctx).run_requests
    assert request is not None and len(request) == 1
    assert request[0].run_key == "2026-W45"
    op_config = request[0].run_config["ops"]["analytics__weekly_report"]["config"]
    assert op_config["week"] == "2026-W45"
    assert op_config["out_dir"] == str(materialized.cfg.serving_path.parent / "reports")


def test_definitions_with_the_report_resolve(materialized: Materialized) -> None:
    """The asset (depending on the serving copy), its job and schedule load in one Definitions."""
    defs = dg.Definitions(
        assets=[weekly_report],
        jobs=[weekly_report_job],
        schedules=[weekly_report_schedule(materialized.cfg)],
        resources={"settings": SettingsResource(config_path=str(materialized.cfg.path))},
    )
    assert defs.resolve_job_def(WEEKLY_REPORT_JOB) is not None
    assert weekly_report.asset_deps[WEEKLY_REPORT_KEY] == {
        dg.AssetKey(["analytics", "serving_copy"])
    }
    assert defs.resolve_schedule_def("weekly_report").job_name == WEEKLY_REPORT_JOB
