"""The weekly report in Dagster: an asset that writes last week's report, its job and schedule."""

# ruff: noqa: I002 - no `from __future__ import annotations` here: Dagster compares the `context`
# annotation object itself with AssetExecutionContext; a postponed (string) annotation fails.

import json
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext

from pipelines._raw_assets import SettingsResource
from pipelines.config import Config, load_config
from pipelines.report._common import IsoWeek, recommendations_path, reports_dir
from pipelines.report.weekly import build_weekly_report, latest_complete_report_week

__all__ = [
    "WEEKLY_REPORT_JOB",
    "WEEKLY_REPORT_KEY",
    "WeeklyReportConfig",
    "weekly_report",
    "weekly_report_job",
    "weekly_report_schedule",
]

WEEKLY_REPORT_KEY = dg.AssetKey(["analytics", "weekly_report"])
WEEKLY_REPORT_JOB = "weekly_report_job"
_SERVING_COPY = dg.AssetKey(["analytics", "serving_copy"])


class WeeklyReportConfig(dg.Config):
    """Which week to write and where (empty = the latest ISO week the data cover whole, the
    configured folder)."""

    week: str = ""
    out_dir: str = ""
    force: bool = False
    pdf: bool = True


@dg.asset(
    key=WEEKLY_REPORT_KEY,
    deps=[_SERVING_COPY],
    group_name="reports",
    pool="duckdb",
    kinds={"html", "pdf"},
)
def weekly_report(
    context: AssetExecutionContext, config: WeeklyReportConfig, settings: SettingsResource
) -> dg.MaterializeResult[Any]:
    """The weekly fairness report of last week (HTML, PDF, JSON), kept per ISO week.

    Reads the serving copy; an existing week's report is a snapshot and is kept unless
    ``force``. In the ``duckdb`` pool so it never reads while a writer publishes.
    """
    cfg = load_config(settings.config_path)
    week = (
        IsoWeek.parse(config.week) if config.week else latest_complete_report_week(cfg.serving_path)
    )
    paths = build_weekly_report(
        cfg.serving_path,
        week,
        config.out_dir or reports_dir(cfg),
        force=config.force,
        pdf=config.pdf,
        large_job_gpus=cfg.large_job_gpus,
        recommendations=recommendations_path(cfg),
    )
    data = json.loads(paths.json.read_text(encoding="utf-8"))
    fleet = data.get("fleet", {})
    context.log.info(f"{paths.week}: {'written' if paths.written else 'kept'} in {paths.folder}")
    return dg.MaterializeResult(
        metadata={
            "week": paths.week,
            "html": dg.MetadataValue.path(str(paths.html)),
            "pdf": dg.MetadataValue.path(str(paths.pdf)) if paths.pdf else "none",
            "written": paths.written,
            "complete_week": bool(data.get("complete")),
            "occupancy": fleet.get("occupancy"),
            "goodput_ratio": fleet.get("goodput_ratio"),
            "jain_index": fleet.get("jain_index"),
        }
    )


weekly_report_job = dg.define_asset_job(
    WEEKLY_REPORT_JOB,
    selection=dg.AssetSelection.assets(WEEKLY_REPORT_KEY),
    description="Write last week's fairness report (a snapshot, never rewritten).",
)


def weekly_report_schedule(cfg: Config) -> dg.ScheduleDefinition:
    """Mondays at 06:00 UTC, the report of the ISO week that just ended.

    The week is taken from the tick's scheduled time (so a late or backfilled tick writes the
    right week) and is the run key, so each week is requested once.

    Args:
        cfg: configuration; the reports folder is pinned in the run config.
    """
    out_dir = str(reports_dir(cfg))

    @dg.schedule(
        name="weekly_report",
        cron_schedule="0 6 * * 1",
        execution_timezone="UTC",
        job=weekly_report_job,
        description=f"Last ISO week's fairness report into {out_dir}/<YYYY-Www>/.",
    )
    def _weekly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        week = IsoWeek.of(context.scheduled_execution_time).previous()
        return dg.RunRequest(
            run_key=str(week),
            run_config=dg.RunConfig(
                ops={
                    "analytics__weekly_report": WeeklyReportConfig(week=str(week), out_dir=out_dir)
                }
            ),
            tags={"goodput/week": str(week)},
        )

    return _weekly
