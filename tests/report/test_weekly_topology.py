"""The weekly report's Topology section on slurm-nvl (tests/rackscale.py): its numbers are the
views' over the week, and the rack with two failed trays is counted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.report._common import IsoWeek
from pipelines.report.weekly import collect_weekly, render_weekly_html
from pipelines.warehouse import connect
from tests.rackscale import build_rackscale_warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine built days of slurm-nvl."""
    return build_rackscale_warehouse(tmp_path_factory.mktemp("nvl-report")).warehouse_path


def test_topology_section_numbers_equal_the_views(warehouse: Path) -> None:
    """Week 2026-W45 (2026-11-02 … 11-08, days 0–6: the failed trays and the fragmentation
    period): one row, slurm-nvl; one degraded rack (nvl03); large jobs and fragmentation hours
    are those of ``large_job_wait_causes`` eligible in the week; the stranded share is
    Σ stranded ÷ Σ (idle + held) of ``stranded_gpu_hourly``; the page shows the section."""
    week = IsoWeek.parse("2026-W45")
    data = collect_weekly(warehouse, week)
    (row,) = data["topology"]
    span = {"a": week.start, "b": week.end}
    with connect(warehouse, read_only=True) as con:
        jobs, frag = con.execute(
            "SELECT count(*), sum(fragmentation_s) / 3600 FROM large_job_wait_causes"
            " WHERE eligible_at >= $a AND eligible_at < $b",
            span,
        ).fetchone() or (None, None)
        (share,) = con.execute(
            "SELECT sum(stranded_gpu_s) / sum(idle_gpu_s + held_gpu_s) FROM stranded_gpu_hourly"
            " WHERE hour >= $a AND hour < $b",
            span,
        ).fetchone() or (None,)
    assert row["cluster"] == "slurm-nvl"
    assert row["degraded_racks"] == 1
    assert row["large_jobs"] == jobs and jobs > 5
    assert row["fragmentation_h"] == pytest.approx(frag) and frag > 0
    assert row["stranded_share"] == pytest.approx(share)
    assert 0 < row["optimal_share"] < 1  # multimodal's spread gangs
    html = render_weekly_html(data)
    assert '<table id="topology">' in html and "slurm-nvl" in html


def test_a_serving_copy_without_the_topology_views_says_so(warehouse: Path, tmp_path: Path) -> None:
    """A copy published before the topology views existed (``stranded_gpu_hourly`` dropped):
    the section is empty and the page says no cluster has a map, instead of failing."""
    old = tmp_path / "old.duckdb"
    shutil.copy(warehouse, old)
    with connect(old) as con:
        con.execute("DROP VIEW stranded_gpu_hourly")
    data = collect_weekly(old, IsoWeek.parse("2026-W45"))
    assert data["topology"] == []
    assert "No cluster with a topology map this week." in render_weekly_html(data)
