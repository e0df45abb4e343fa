"""`goodput kpis`: Prometheus text exposition format, values equal to the views'."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.cli.report import report_app
from pipelines.report.kpis import Gauge, complete_fairness, format_prometheus
from tests.report.conftest import Direct

runner = CliRunner()

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"'
_VALUE = r"(?:[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|NaN|[-+]Inf)"
SAMPLE = re.compile(rf"^({_NAME})(?:\{{({_LABEL}(?:,{_LABEL})*)?\}})? ({_VALUE})$")
HELP = re.compile(rf"^# HELP ({_NAME}) .+$")
TYPE = re.compile(rf"^# TYPE ({_NAME}) gauge$")


def _parse(text: str) -> dict[str, dict[str, float]]:
    """Check every line's form; return ``name → {label text: value}``; HELP/TYPE precede samples."""
    out: dict[str, dict[str, float]] = {}
    typed: set[str] = set()
    assert text.endswith("\n")
    for line in text.splitlines():
        if m := HELP.match(line):
            continue
        if m := TYPE.match(line):
            typed.add(m.group(1))
            continue
        m = SAMPLE.match(line)
        assert m, f"not exposition format: {line!r}"
        assert m.group(1) in typed, f"sample before its TYPE line: {line!r}"
        out.setdefault(m.group(1), {})[m.group(2) or ""] = float(m.group(3))
    return out


@pytest.fixture
def kpis(serving: Path) -> dict[str, dict[str, float]]:
    """`goodput kpis --db <serving copy>` parsed."""
    result = runner.invoke(report_app, ["kpis", "--db", str(serving)])
    assert result.exit_code == 0, result.output
    return _parse(result.stdout)


def test_kpis_have_the_headline_families(kpis: dict[str, dict[str, float]]) -> None:
    """Occupancy, GPU-hours, goodput, large-job p90 wait, Jain (week) and as-of are exposed."""
    assert {
        "goodput_occupancy_ratio", "goodput_allocated_gpu_hours_total", "goodput_goodput_ratio",
        "goodput_large_job_wait_p90_seconds", "goodput_jain_index",
        "goodput_data_as_of_timestamp_seconds",
    } <= set(kpis)  # fmt: skip
    # The test fleet holds two days: no week is complete, so only the rolling window is a
    # headline (a partial week never is: METRICS.md "Complete periods").
    assert set(kpis["goodput_jain_index"]) == {'window="rolling_28d"'}
    assert set(kpis["goodput_occupancy_ratio"]) == {'cluster="k8s-b"', 'cluster="slurm-a"'}


def test_occupancy_gauge_equals_the_view(kpis: dict[str, dict[str, float]], direct: Direct) -> None:
    """Per cluster: occupancy_hourly over the 24 complete hours before its as_of."""
    rows = direct.rows(
        """
        SELECT cluster, sum(allocated_gpu_s)
               / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s)
        FROM occupancy_hourly AS o
        WHERE hour < (SELECT date_trunc('hour', max(as_of)) FROM occupancy_hourly AS p
                      WHERE p.cluster = o.cluster)
          AND hour >= (SELECT date_trunc('hour', max(as_of)) FROM occupancy_hourly AS p
                       WHERE p.cluster = o.cluster) - INTERVAL 24 HOUR
        GROUP BY cluster
        """
    )
    assert rows
    for cluster, occ in rows:
        assert kpis["goodput_occupancy_ratio"][f'cluster="{cluster}"'] == occ


def test_allocated_total_and_as_of_equal_the_views(
    kpis: dict[str, dict[str, float]], direct: Direct
) -> None:
    """All loaded allocated GPU-hours and the cut-off (Unix seconds) per cluster."""
    for cluster, gpu_h, as_of in direct.rows(
        "SELECT cluster, sum(allocated_gpu_s) / 3600.0, epoch(max(as_of)) "
        "FROM occupancy_hourly GROUP BY cluster"
    ):
        label = f'cluster="{cluster}"'
        assert kpis["goodput_allocated_gpu_hours_total"][label] == pytest.approx(gpu_h)
        assert kpis["goodput_data_as_of_timestamp_seconds"][label] == pytest.approx(as_of)


def test_fairness_kpis_take_the_latest_complete_week() -> None:
    """Data from Mon 2 Nov to Mon 16 Nov 04:48 on one cluster, 01:00 on the other: the week of
    16 Nov (Jain 0.18 on 4.8 h) is partial and left out; the week of 9 Nov (0.73) is the
    headline, beside the latest rolling window."""
    utc = dt.UTC
    weeks = [dt.datetime(2026, 11, d, tzinfo=utc) for d in (2, 9, 16)]
    fair = pl.DataFrame(
        {
            "window": ["week", "week", "week", "rolling_28d"],
            "week": [*weeks, weeks[2]],
            "jain_index": [0.96, 0.73, 0.18, 0.9],
            "unmet_entitlement": [0.01, 0.1, 0.75, 0.05],
        }
    )
    bounds = pl.DataFrame(
        {
            "cluster": ["a", "b"],
            "data_from": [weeks[0], weeks[0]],
            "as_of": [dt.datetime(2026, 11, 16, 4, 48, tzinfo=utc),
                      dt.datetime(2026, 11, 16, 1, tzinfo=utc)],
        }
    )  # fmt: skip
    out = complete_fairness(fair, bounds)
    assert out.select("window", "jain_index").rows() == [("week", 0.73), ("rolling_28d", 0.9)]
    early = bounds.with_columns(pl.lit(dt.datetime(2026, 11, 15, 23, tzinfo=utc)).alias("as_of"))
    assert complete_fairness(fair, early)["jain_index"].to_list() == [0.96, 0.9]


def test_labels_and_help_are_escaped() -> None:
    """Quotes, backslashes and newlines in label values are escaped; empty families are left out."""
    text = format_prometheus(
        [
            Gauge("x_ratio", "help with \\ and\nnewline", [({"cluster": 'a"b\\c\nd'}, 0.5)]),
            Gauge("empty_ratio", "no samples"),
            Gauge("nan_ratio", "undefined", [({}, float("nan"))]),
        ]
    )
    parsed = _parse(text)
    assert parsed["x_ratio"] == {'cluster="a\\"b\\\\c\\nd"': 0.5}
    assert "nan_ratio NaN" in text.splitlines()
    assert "empty_ratio" not in text
