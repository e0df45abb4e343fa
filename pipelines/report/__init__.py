"""Reports for leadership and users: the weekly fairness report, per-job efficiency, KPIs.

Dagster objects live in :mod:`pipelines.report.dagster`, the commands in
:mod:`pipelines.cli.report` (``report_app``).
"""

from __future__ import annotations

from pipelines.report._common import IsoWeek, ReportError
from pipelines.report.job_report import JobReport, format_job_report, job_report
from pipelines.report.kpis import collect_kpis, format_prometheus, kpis_text
from pipelines.report.mail import MailError, SmtpSettings, send_report
from pipelines.report.weekly import BrowserNotFound, ReportPaths, build_weekly_report

__all__ = [
    "BrowserNotFound",
    "IsoWeek",
    "JobReport",
    "MailError",
    "ReportError",
    "ReportPaths",
    "SmtpSettings",
    "build_weekly_report",
    "collect_kpis",
    "format_job_report",
    "format_prometheus",
    "job_report",
    "kpis_text",
    "send_report",
]
