"""Headline KPIs in the Prometheus text exposition format (for Grafana and alerting).

Every series is a gauge: the numbers are recomputed from the serving copy and may be restated
when late data arrive, so none of them is a counter (``..._total`` names the quantity, all the
GPU-hours loaded so far, not a Prometheus counter). A series whose value is undefined (no large
job waited, no fair share) is left out rather than written as NaN.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from metrics import wait_percentiles_km
from metrics.periods import latest_complete_week, scope_bounds
from pipelines.report._common import query
from pipelines.warehouse.safe_sql import open_readonly

__all__ = ["Gauge", "collect_kpis", "complete_fairness", "format_prometheus", "kpis_text"]


@dataclass(frozen=True)
class Gauge:
    """One metric family: its name, help text and ``(labels, value)`` samples."""

    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def format_prometheus(gauges: Sequence[Gauge]) -> str:
    """The text exposition format: ``# HELP``, ``# TYPE ... gauge``, then one line per sample.

    Args:
        gauges: the families, written in this order; a family without samples is left out.
    """
    lines: list[str] = []
    for g in gauges:
        if not g.samples:
            continue
        lines.append(f"# HELP {g.name} {_escape_help(g.help)}")
        lines.append(f"# TYPE {g.name} gauge")
        for labels, value in g.samples:
            body = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
            lines.append(
                f"{g.name}{{{body}}} {_value(value)}" if body else f"{g.name} {_value(value)}"
            )
    return "\n".join(lines) + "\n" if lines else ""


def _per_cluster(df: pl.DataFrame, column: str) -> list[tuple[dict[str, str], float]]:
    return [
        ({"cluster": str(r["cluster"])}, float(r[column]))
        for r in df.iter_rows(named=True)
        if r[column] is not None
    ]


def _epoch(value: dt.datetime) -> float:
    return value.timestamp()


def complete_fairness(fair: pl.DataFrame, bounds: pl.DataFrame) -> pl.DataFrame:
    """The fleet fairness rows the KPIs expose: the latest *complete* week and the latest
    ``rolling_28d`` window (a partial week is never a headline: METRICS.md "Complete periods").

    Args:
        fair: ``window, week, jain_index, unmet_entitlement`` (``sql/report/kpi_fairness.sql``).
        bounds: ``cluster, data_from, as_of`` per cluster (``sql/report/period_bounds.sql``).

    Returns:
        ``fair`` without its other weeks; no ``week`` row when no week is complete yet.
    """
    cut, begin = scope_bounds(bounds["as_of"].to_list(), bounds["data_from"].to_list())
    latest = latest_complete_week(cut, begin)
    keep = pl.col("window") != "week"
    if latest is not None:
        keep = keep | (pl.col("week").dt.replace_time_zone(None) == latest.replace(tzinfo=None))
    return fair.filter(keep)


def collect_kpis(
    serving_db: str | Path, *, hours: int = 24, large_job_gpus: float = 64.0, wait_days: int = 7
) -> list[Gauge]:
    """The headline KPIs of the serving copy.

    Args:
        serving_db: the serving copy (opened read-only, locked down).
        hours: occupancy and goodput cover the last ``hours`` complete UTC hours before each
            cluster's data cut-off.
        large_job_gpus: "large" job threshold (GPUs).
        wait_days: the large-job p90 wait covers spells eligible in the last ``wait_days`` days
            before the cut-off (Kaplan–Meier, pending jobs censored).

    Raises:
        FileNotFoundError: no such serving copy.
    """
    con = open_readonly(serving_db)
    try:
        occ = query(con, "kpi_occupancy", hours=hours)
        good = query(con, "kpi_goodput", hours=hours)
        alloc = query(con, "kpi_allocated_total")
        spells = query(con, "kpi_large_waits", min_gpus=large_job_gpus, days=wait_days)
        fair = complete_fairness(query(con, "kpi_fairness"), query(con, "period_bounds"))
        as_of = query(con, "data_as_of")
        ingests = query(con, "kpi_last_ingest")
    finally:
        con.close()
    p90 = (
        wait_percentiles_km(spells.lazy(), by=("cluster",), quantiles=(0.9,)).collect()
        if spells.height
        else pl.DataFrame({"cluster": [], "km_p90_s": []}, schema={"cluster": pl.String,
                                                                   "km_p90_s": pl.Float64})
    )  # fmt: skip
    window = f"the last {hours} complete hours before the cluster's data cut-off"
    return [
        Gauge("goodput_occupancy_ratio",
              f"Allocated / (capacity - down - planned down) GPU-seconds over {window}.",
              _per_cluster(occ, "occupancy")),
        Gauge("goodput_goodput_ratio",
              f"Goodput GPU-seconds / capacity (the waterfall's goodput leaf) over {window}.",
              _per_cluster(good, "goodput_ratio")),
        Gauge("goodput_telemetry_coverage_ratio",
              f"Allocated GPU-seconds with DCGM data / allocated GPU-seconds over {window}.",
              _per_cluster(good, "telemetry_coverage")),
        Gauge("goodput_allocated_gpu_hours_total",
              "Allocated GPU-hours over all loaded data (restated when data arrive late).",
              _per_cluster(alloc, "allocated_gpu_h")),
        Gauge("goodput_large_job_wait_p90_seconds",
              f"Kaplan-Meier p90 wait (eligible to start) of jobs with >= {large_job_gpus:g} "
              f"GPUs eligible in the last {wait_days} days before the data cut-off.",
              _per_cluster(p90, "km_p90_s")),
        Gauge("goodput_jain_index",
              "Jain's index over the teams' entitlement ratios, fleet, the latest complete week "
              "and the latest rolling 28 days.",
              [({"window": str(r["window"])}, float(r["jain_index"]))
               for r in fair.iter_rows(named=True) if r["jain_index"] is not None]),
        Gauge("goodput_unmet_entitlement_ratio",
              "Share of the fair GPU-time the teams did not get, fleet, the latest complete week "
              "and the latest rolling 28 days.",
              [({"window": str(r["window"])}, float(r["unmet_entitlement"]))
               for r in fair.iter_rows(named=True) if r["unmet_entitlement"] is not None]),
        Gauge("goodput_data_as_of_timestamp_seconds",
              "Data cut-off of the cluster (the latest time its loaded data know), Unix time.",
              [({"cluster": str(r["cluster"])}, _epoch(r["as_of"]))
               for r in as_of.iter_rows(named=True) if r["as_of"] is not None]),
        Gauge("goodput_last_ingest_timestamp_seconds",
              "When each input source of each cluster was last loaded, Unix time.",
              [({"cluster": str(r["cluster"]), "source": str(r["source"])}, _epoch(r["loaded_at"]))
               for r in ingests.iter_rows(named=True) if r["loaded_at"] is not None]),
    ]  # fmt: skip


def kpis_text(
    serving_db: str | Path, *, hours: int = 24, large_job_gpus: float = 64.0, wait_days: int = 7
) -> str:
    """:func:`collect_kpis` in the Prometheus text format (see it for the arguments)."""
    return format_prometheus(
        collect_kpis(serving_db, hours=hours, large_job_gpus=large_job_gpus, wait_days=wait_days)
    )
