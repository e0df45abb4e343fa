"""The overview page renders from the serving copy and shows the values the views hold."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, Materialized

pytestmark = pytest.mark.slow


def test_overview_shows_view_values(
    materialized: Materialized, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The four answers equal the same numbers computed straight from the views: occupancy and
    its allocated / available GPU-hours, avoidable waste, Jain's index of the latest week, and
    the large-job KM spell count (too few for a percentile in the 2-day fleet)."""
    serving = str(materialized.cfg.serving_path)
    monkeypatch.setenv("GOODPUT_SERVING_DB", serving)
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    at = AppTest.from_file(str(REPO / "dashboards" / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    with duckdb.connect(serving, read_only=True) as con:
        occ, gpu_h, avail_h = con.execute(
            "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s),"
            " sum(allocated_gpu_s) / 3600,"
            " sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s) / 3600 from occupancy_hourly"
        ).fetchall()[0]
        waste = con.execute(
            "select sum(gpu_s) / 3600 from gpu_waterfall_hourly where bucket in"
            " ('failed_work_infra', 'failed_work_user', 'preempted_work', 'timeout_work',"
            " 'allocated_idle', 'held')"
        ).fetchall()[0][0]
        jain = con.execute(
            "select jain_index from fairness_summary_weekly where \"window\" = 'week'"
            " and cluster is null order by week desc limit 1"
        ).fetchall()[0][0]
        spells = con.execute(
            "select count(*) from time_to_start_jobs where size_gpus >= 64 and started is not null"
        ).fetchall()[0][0]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Occupancy"] == f"{occ:.1%}"
    assert any(
        f"{gpu_h:,.0f} of {avail_h:,.0f} available GPU-h allocated" in c.value for c in at.caption
    )
    assert shown["Avoidable waste"] == f"{waste:,.0f} GPU-h"
    assert shown["Fairness (Jain's index)"] == f"{jain:.2f}"
    label = "Large-job time to start (≥ 64 GPUs)"
    assert shown[label] == ("too few jobs (n < 10)" if spells < 10 else shown[label])
    assert any(f"n = {spells} jobs" in c.value for c in at.caption)
    assert occ > 0 and gpu_h > 0 and waste > 0 and spells > 0


def test_overview_without_data_says_so(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no serving copy the page explains how to produce one instead of failing."""
    monkeypatch.setenv("GOODPUT_SERVING_DB", "/nonexistent/serving.duckdb")
    at = AppTest.from_file(str(REPO / "dashboards" / "app.py"), default_timeout=30)
    at.run()
    assert not at.exception
    assert "goodput materialize" in at.warning[0].value


def test_overview_on_a_database_without_views_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serving file that exists but holds no views yet gets the same warning, not an error."""
    empty = tmp_path / "serving.duckdb"
    duckdb.connect(str(empty)).close()
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(empty))
    at = AppTest.from_file(str(REPO / "dashboards" / "app.py"), default_timeout=30)
    at.run()
    assert not at.exception
    assert "goodput materialize" in at.warning[0].value
