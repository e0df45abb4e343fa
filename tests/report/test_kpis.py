"""`goodput kpis`: Prometheus text exposition format, values equal to the views'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli.report import report_app
from pipelines.report.kpis import Gauge, format_prometheus
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
    assert 'window="week"' in kpis["goodput_jain_index"]
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
