"""The ``goodput`` command line: ``ingest``, ``materialize``, ``sql``, ``generate``, ``app``, and
the commands of :mod:`pipelines.cli.report` and :mod:`pipelines.cli.k8s_watch` added to it."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer
from polars.exceptions import PanicException

from pipelines._parse_result import InputFormatError
from pipelines._progress import progress_bar
from pipelines.cli.k8s_watch import watch_app
from pipelines.cli.poll import poll_app
from pipelines.cli.report import report_app
from pipelines.config import ConfigError, load_config, repo_root
from pipelines.core.registry import RegistryError
from pipelines.kinds import input_kinds
from pipelines.privacy import PseudonymCollision

__all__ = ["app", "main"]

app = typer.Typer(
    help="goodput: where a GPU fleet's GPU-hours go.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

app.add_typer(report_app)
app.add_typer(watch_app)  # goodput watch k8s
app.add_typer(poll_app)  # goodput poll slurm

#: The ``goodput ingest`` words (the kinds registry).
_SOURCES = tuple(k.name for k in input_kinds())


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"goodput: error: {message}", err=True)
    return typer.Exit(code)


@app.command()
def ingest(
    source: Annotated[
        str,
        typer.Argument(
            help="Input kind: " + "; ".join(f"{k.name} ({k.help})" for k in input_kinds())
        ),
    ],
    paths: Annotated[list[Path], typer.Argument(help="Files (dcgm: files or snapshot folders)")],
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default: the warehouse)")] = None,
    cluster: Annotated[
        str | None, typer.Option(help="Cluster for rows without a Cluster column")
    ] = None,
    tz: Annotated[str | None, typer.Option(help="IANA zone of naive times")] = None,
    delimiter: Annotated[str | None, typer.Option(help="sacct delimiter (default |)")] = None,
    fields: Annotated[
        str | None, typer.Option(help="Headerless sacct: the --format list, comma-separated")
    ] = None,
    scrape_time: Annotated[
        str | None,
        typer.Option(help="dcgm: ISO time of samples without a timestamp (naive = UTC)"),
    ] = None,
) -> None:
    """Parse input files and load them (re-ingesting a file replaces its earlier load)."""
    from pipelines.analytics.build import rebuild
    from pipelines.ingest import ingest_configured, ingest_options
    from pipelines.warehouse import (
        WarehouseLocked,
        connect,
        init_warehouse,
        publish_serving_copy,
    )

    if source not in _SOURCES:
        raise _fail(f"unknown source {source!r}; expected one of {', '.join(_SOURCES)}", 2)
    try:
        cfg = load_config()
    except ConfigError as exc:
        raise _fail(str(exc)) from exc
    target = db or cfg.warehouse_path
    field_list = [f.strip() for f in fields.split(",") if f.strip()] if fields else None
    zone = ingest_options(cfg, source, cluster, tz=tz).tz
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        name = cluster or cfg.default_cluster
        where = "--tz" if tz else f"cluster {name!r} timezone in the config"
        raise _fail(f"unknown time zone {zone!r} ({where}); use an IANA name", 2) from exc
    scraped = None
    if scrape_time:
        try:
            scraped = dt.datetime.fromisoformat(scrape_time)
        except ValueError as exc:
            raise _fail(f"--scrape-time {scrape_time!r} is not an ISO time", 2) from exc
        scraped = scraped if scraped.tzinfo else scraped.replace(tzinfo=dt.UTC)
    errors = 0
    bar = progress_bar(len(paths), f"ingest {source}", unit="file")
    say = bar.write if not bar.disable else typer.echo
    try:
        with connect(target) as con:
            init_warehouse(con)
            for path in paths:
                bar.update(1)
                try:
                    # Options from the config unless given; a sacct file that names its own cluster
                    # is read in that cluster's zone unless --tz says (the raw assets' code path).
                    stats = ingest_configured(
                        con, cfg, source, path, cluster=cluster, tz=tz, fields=field_list,
                        delimiter=delimiter, scrape_time=scraped,
                    )  # fmt: skip
                except InputFormatError as exc:
                    typer.echo(f"goodput: error: {exc}", err=True)
                    errors += 1
                    continue
                except (Exception, PanicException) as exc:
                    # a parser fault (a polars panic is a BaseException): this file rolls back, the
                    # batch goes on
                    typer.echo(
                        f"goodput: error: {path}: not loaded, "
                        f"unexpected {type(exc).__name__}: {exc}",
                        err=True,
                    )
                    errors += 1
                    continue
                say(
                    f"{path}: {stats.rows_loaded} rows loaded, {stats.rows_rejected} rejected"
                    + (" (replaced an earlier load)" if stats.replaced_ingests else "")
                )
                for warning in stats.warnings:
                    typer.echo(f"goodput: warning: {path}: {warning}", err=True)
                if stats.rows_loaded == 0 and stats.rows_rejected == 0:
                    # Not an error (an idle day can be empty), but worth a look: say so on stderr.
                    typer.echo(f"goodput: warning: no rows found in {path}", err=True)
                elif stats.rows_loaded == 0:
                    typer.echo(
                        f"goodput: error: {path}: every row was rejected ({stats.rows_rejected}); "
                        'see the reasons with goodput sql "select * from rejected_rows"',
                        err=True,
                    )
                    errors += 1
            bar.close()
            rebuild(con, cfg)
    except WarehouseLocked as exc:  # another writer holds the file past the wait
        raise _fail(str(exc)) from exc
    except (InputFormatError, RegistryError) as exc:  # the loads stand; the build refused
        raise _fail(f"the files are loaded, but the warehouse was not rebuilt: {exc}") from exc
    if db is None:
        try:
            publish_serving_copy(target, cfg.serving_path, detail_days=cfg.serving_detail_days)
        except PseudonymCollision as exc:  # the warehouse is built; the old copy stays
            raise _fail(
                f"the warehouse is rebuilt, but the serving copy was not published: {exc}"
            ) from exc
    if errors:
        raise typer.Exit(1)


@app.command()
def materialize(
    date_from: Annotated[str | None, typer.Option("--from", help="First day, YYYY-MM-DD")] = None,
    date_to: Annotated[str | None, typer.Option("--to", help="Last day, YYYY-MM-DD")] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Rebuild analytics from all history, not the new days")
    ] = False,
) -> None:
    """Run every asset as Dagster runs: the cluster-day partitions with input as partition-range
    (backfill) runs, then core and analytics (incremental unless --full) and the serving copy."""
    from pipelines.cli.runner import dagster_env, materialize_all

    dagster_env()
    try:
        cfg = load_config()
        summary = materialize_all(cfg, date_from=date_from, date_to=date_to, full=full)
    except (ConfigError, RuntimeError) as exc:
        raise _fail(str(exc)) from exc
    typer.echo(
        f"materialized {len(summary.partitions)} partitions in {summary.runs} Dagster runs; "
        f"serving copy: {cfg.serving_path}"
    )


#: ``goodput sql "-- note\nselect 1"``: a query that opens with an SQL comment starts with ``--``,
#: which click would read as an option; unknown options are taken as the query instead, and one
#: that looks like a mistyped option (``--fromat``) is refused in the command.
_QUERY_ARGUMENT = {"ignore_unknown_options": True}


@app.command(context_settings=_QUERY_ARGUMENT)
def sql(
    query: Annotated[
        str,
        typer.Argument(
            help="One SELECT over the documented views (sql/README.md); it may open with a "
            "-- comment"
        ),
    ],
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default: the serving copy)")] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="table | csv | json (table: fits the terminal, first and last 20 rows, middle "
            "columns left out when too many; csv: list columns such as node_list are joined "
            "with ',', other nested values are written as JSON text)",
        ),
    ] = "table",
    limit: Annotated[int, typer.Option(help="Row limit")] = 100_000,
) -> None:
    """Run a read-only query over the documented views (no writes, no file access, no ATTACH,
    no catalog or settings). When rows are cut at the limit, the table says "showing N of M
    rows" (csv and json: on stderr)."""
    from pipelines.warehouse.safe_sql import SqlRefused, flat_for_csv, run_query_counted

    if re.fullmatch(r"--?[A-Za-z][\w-]*(=\S*)?", query):
        raise _fail(f"no such option: {query.split('=', 1)[0]}", 2)
    if fmt not in ("table", "csv", "json"):
        raise _fail("--format must be table, csv or json", 2)
    try:
        cfg = load_config()
    except ConfigError as exc:
        raise _fail(str(exc)) from exc
    path = db or cfg.serving_path
    try:
        result = run_query_counted(
            path, query, row_limit=limit, time_limit_s=cfg.sql_time_limit_s,
            memory_limit=cfg.sql_memory_limit,
        )  # fmt: skip
    except (SqlRefused, FileNotFoundError) as exc:
        raise _fail(str(exc)) from exc
    df = result.rows
    if fmt == "csv":
        sys.stdout.write(flat_for_csv(df).write_csv(null_value=""))
    elif fmt == "json":
        sys.stdout.write(df.write_json() + "\n")
    else:
        from pipelines.cli._table import render_table

        typer.echo(render_table(df))
    if result.capped:
        note = f"{result.shown()} (--limit {limit:,})"
        typer.echo(note if fmt == "table" else f"goodput: note: {note}", err=fmt != "table")


@app.command()
def generate(
    out: Annotated[Path | None, typer.Option(help="Folder (default: data/)")] = None,
    seed: Annotated[int, typer.Option(help="Random seed")] = 7,
    days: Annotated[int, typer.Option(help="Days to simulate")] = 14,
    gpus: Annotated[
        int | None, typer.Option(help="Simulate one Slurm cluster of this many GPUs at scale")
    ] = None,
    start: Annotated[
        str | None, typer.Option(help="First day YYYY-MM-DD (with --gpus; default 2025-01-06)")
    ] = None,
    dcgm_5min_days: Annotated[
        int, typer.Option(help="With --gpus: last days that also get 5-minute DCGM text")
    ] = 30,
    plant_change: Annotated[
        str | None,
        typer.Option(
            help="Simulate a 64-GPU Slurm cluster (slurm-p) with a planted policy change, e.g. "
            "backfill:large_p90_wait=-0.4@day30 (use --days 60; --start default 2026-09-01)"
        ),
    ] = None,
) -> None:
    """Write the bundled sample fleet (inputs, registry, inventory) in the real formats.

    With ``--gpus`` write a fleet of that size instead (``pipelines/sample_fleet/_scale.py``);
    with ``--plant-change`` a small cluster with a planted policy change of known effect
    (``pipelines/sample_fleet/_policy_plant.py``).
    """
    if plant_change is not None:
        import datetime as _dt

        from pipelines.sample_fleet import PLANTED_CHANGE_KEY, PlantSpec, generate_planted_fleet

        try:
            spec = PlantSpec.parse(plant_change)
            first = _dt.date.fromisoformat(start) if start else _dt.date(2026, 9, 1)
            target = out or repo_root() / "data"
            planted = generate_planted_fleet(target, spec, seed=seed, start=first, days=days)
        except ValueError as exc:
            typer.echo(f"goodput: {exc}", err=True)
            raise typer.Exit(2) from exc
        typer.echo(
            f"planted fleet written to {target} (cluster slurm-p, 64 GPUs, {days} days from "
            f"{first}; add it to goodput.toml's [[clusters]] with timezone UTC): "
            f"{PLANTED_CHANGE_KEY} = {planted[PLANTED_CHANGE_KEY]}"
        )
        return
    if gpus is not None:
        import datetime as _dt

        from pipelines.sample_fleet import ScaleConfig, generate_scale_fleet

        first = _dt.date.fromisoformat(start) if start else ScaleConfig.start
        cfg = ScaleConfig(
            gpus=gpus, days=days, seed=seed, start=first, dcgm_5min_days=dcgm_5min_days
        )
        last = first + _dt.timedelta(days=days - 1)
        if last >= _dt.datetime.now(_dt.UTC).date():
            typer.echo(
                f"goodput: warning: the window ends {last}, today or later; sacct ingest rejects "
                "times after now + 1 day as implausible (pick an earlier --start)",
                err=True,
            )
        target = out or repo_root() / "data"
        typer.echo(f"fleet at scale written to {target}: {generate_scale_fleet(target, cfg)}")
        return
    from pipelines.sample_fleet import generate_sample_fleet

    target = out or repo_root() / "data"
    summary = generate_sample_fleet(target, seed=seed, days=days)
    typer.echo(f"sample fleet written to {target}: {summary}")


@app.command("app")
def run_app(
    port: Annotated[int, typer.Option(help="Port")] = 8501,
    address: Annotated[str, typer.Option(help="Address")] = "127.0.0.1",
) -> None:
    """Serve the Streamlit dashboard (reads the serving copy)."""
    script = repo_root() / "dashboards" / "app.py"
    typer.echo(f"goodput dashboard: http://{address}:{port}")
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.address", address, "--server.port", str(port),
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    raise typer.Exit(subprocess.call(cmd, env=os.environ.copy()))


def main() -> None:
    """Entry point of the ``goodput`` script."""
    app()


if __name__ == "__main__":
    main()
