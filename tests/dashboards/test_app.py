"""The overview page renders from the serving copy and shows the values the views hold."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from metrics import nearest_rank
from tests.conftest import REPO, Materialized

pytestmark = pytest.mark.slow


def test_overview_shows_view_values(
    materialized: Materialized, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headline metrics equal the same numbers computed straight from the views."""
    import polars as pl

    serving = str(materialized.cfg.serving_path)
    monkeypatch.setenv("GOODPUT_SERVING_DB", serving)
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    at = AppTest.from_file(str(REPO / "dashboards" / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    with duckdb.connect(serving, read_only=True) as con:
        occ, gpu_h = con.execute(
            "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s),"
            " sum(allocated_gpu_s) / 3600 from occupancy_hourly"
        ).fetchall()[0]
        attempts = con.execute("select count(*) from jobs").fetchall()[0][0]
        waits = con.sql("select wait_s from jobs where gpus >= 64 and wait_s is not null").pl()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Occupancy"] == f"{occ:.1%}"
    assert shown["GPU-hours allocated"] == f"{gpu_h:,.0f}"
    assert shown["Jobs (attempts)"] == f"{attempts:,}"
    p90 = waits.select(nearest_rank(pl.col("wait_s"), 0.9)).item() if waits.height else None
    label = "p90 wait, jobs ≥ 64 GPUs"
    assert shown[label] == (f"{p90 / 3600:.1f} h" if p90 is not None else "n/a")
    assert occ > 0 and gpu_h > 0 and attempts > 0


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
