"""The weekly report asset, its job and its schedule."""

from __future__ import annotations

import datetime as dt
import json
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


def test_scheduled_run_writes_the_week_and_its_numbers_equal_the_views(
    materialized: Materialized, tmp_path: Path
) -> None:
    """The schedule's own run request for the Monday 2026-11-09 tick, executed: it writes
    2026-W45, and the report's per-team numbers equal ``fairness_weekly`` for that week. The
    request's config is used as given except the folder (a temp folder, not the shared fleet's)
    and ``pdf`` (off: printing is covered by tests/report/test_pdf.py)."""
    from tests.report.conftest import Direct
    from tests.report.test_weekly import TEAM_FIELDS, _view_rows

    schedule = weekly_report_schedule(materialized.cfg)
    ctx = dg.build_schedule_context(
        scheduled_execution_time=dt.datetime(2026, 11, 9, 6, 0, tzinfo=dt.UTC)
    )
    (request,) = schedule.evaluate_tick(ctx).run_requests or []
    op_config = dict(request.run_config["ops"]["analytics__weekly_report"]["config"])
    op_config.update(out_dir=str(tmp_path), pdf=False)
    result = dg.materialize(
        [weekly_report],
        resources={"settings": SettingsResource(config_path=str(materialized.cfg.path))},
        run_config={"ops": {"analytics__weekly_report": {"config": op_config}}},
        instance=materialized.instance,
        tags=request.tags,
    )
    assert result.success
    data = json.loads((tmp_path / "2026-W45" / "report.json").read_text(encoding="utf-8"))
    got = {(t["cluster"], t["team"]): {f: t[f] for f in TEAM_FIELDS} for t in data["teams"]}
    want = _view_rows(Direct(materialized.cfg.serving_path))
    assert want, "the fleet has fairness rows for W45"
    assert got == want
