"""The reporting commands of ``goodput``: ``report``, ``job`` and ``kpis``.

Registered on the main app with ``app.add_typer(report_app)`` (its commands join the top level).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.config import Config, ConfigError, load_config
from pipelines.report import IsoWeek, ReportError

__all__ = ["report_app"]

report_app = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"goodput: error: {message}", err=True)
    return typer.Exit(code)


def _target(db: Path | None) -> tuple[Path, Config | None]:
    """The DuckDB file to read (``--db``, else the configured serving copy) and the config."""
    try:
        cfg = load_config()
    except ConfigError as exc:
        if db is None:
            raise _fail(str(exc)) from exc
        return db, None
    return db or cfg.serving_path, cfg


@report_app.command("report")
def report_cmd(
    week: Annotated[
        str | None,
        typer.Option(help="ISO week YYYY-Www (default: the latest week the data cover whole)"),
    ] = None,
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default: the serving copy)")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Reports folder (default: data/reports beside the copy)")
    ] = None,
    force: Annotated[bool, typer.Option(help="Rewrite an existing snapshot")] = False,
    pdf: Annotated[bool, typer.Option(help="Print the PDF with headless Chromium")] = True,
    mail_to: Annotated[
        list[str] | None, typer.Option(help="Mail the PDF to this address (GOODPUT_SMTP_*)")
    ] = None,
) -> None:
    """Write the weekly fairness report (HTML, PDF, JSON) for one ISO week; kept as a snapshot."""
    from pipelines.report.mail import MailError, send_report
    from pipelines.report.weekly import build_weekly_report, latest_complete_report_week

    path, cfg = _target(db)
    try:
        wk = IsoWeek.parse(week) if week else latest_complete_report_week(path)
        paths = build_weekly_report(
            path,
            wk,
            out,
            force=force,
            pdf=pdf,
            large_job_gpus=cfg.large_job_gpus if cfg else 64.0,
        )
    except (ReportError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from exc
    state = "written" if paths.written else "kept (snapshot exists; --force rewrites it)"
    typer.echo(f"{paths.week}: {state}")
    for p in (paths.html, paths.pdf, paths.json):
        if p is not None:
            typer.echo(f"  {p}")
    if mail_to:
        try:
            send_report(paths, mail_to)
        except MailError as exc:
            raise _fail(str(exc)) from exc
        typer.echo(f"  mailed to {', '.join(mail_to)}")


@report_app.command("job")
def job_cmd(
    job_id: Annotated[str, typer.Argument(help="JobID or JobIDRaw (Kubernetes: namespace/pod)")],
    cluster: Annotated[str | None, typer.Option(help="Only this cluster")] = None,
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default: the serving copy)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text")] = False,
) -> None:
    """Efficiency of one job, per attempt (like seff/jobstats): wait, run, GPU activity, memory."""
    from pipelines.report.job_report import format_job_report, job_report

    path, cfg = _target(db)
    try:
        rep = job_report(path, job_id, cluster=cluster,
                         idle_below=cfg.idle_activity if cfg else 0.05)  # fmt: skip
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from exc
    if rep.attempts.height == 0 and rep.never_started.height == 0:
        where = f" on cluster {cluster}" if cluster else ""
        raise _fail(f"no job {job_id}{where} in {path}")
    if as_json:
        sys.stdout.write(json.dumps(rep.to_dicts(), indent=2) + "\n")
    else:
        sys.stdout.write(format_job_report(rep))


@report_app.command("kpis")
def kpis_cmd(
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default: the serving copy)")] = None,
    hours: Annotated[
        int, typer.Option(help="Occupancy/goodput window: last N complete hours")
    ] = 24,
    wait_days: Annotated[int, typer.Option(help="Large-job wait window in days")] = 7,
) -> None:
    """Headline KPIs in the Prometheus text format (node_exporter textfile, Grafana, alerts)."""
    from pipelines.report.kpis import kpis_text

    path, cfg = _target(db)
    if hours < 1 or wait_days < 1:
        raise _fail("--hours and --wait-days must be at least 1", 2)
    try:
        text = kpis_text(path, hours=hours, wait_days=wait_days,
                         large_job_gpus=cfg.large_job_gpus if cfg else 64.0)  # fmt: skip
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from exc
    sys.stdout.write(text)
