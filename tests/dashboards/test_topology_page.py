"""The Topology page on the rack-scale cluster slurm-nvl (tests/rackscale.py), rows checked
by hand against what the fleet plants: racks of 18 trays, two trays of nvl03 out from day 3
(gb-041 DOWN, gb-047 DRAIN), multimodal's gangs spread over domains, large jobs only from
agents, nlp, vision and multimodal."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboards.test_pages import _table
from tests.rackscale import build_rackscale_warehouse

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(warehouse path, config path) of nine built days of slurm-nvl."""
    cfg = build_rackscale_warehouse(tmp_path_factory.mktemp("nvl-page"))
    return str(cfg.warehouse_path), str(cfg.path)


@pytest.fixture
def page(served: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The app on its Topology page, reading the warehouse file read-only."""
    monkeypatch.setenv("GOODPUT_SERVING_DB", served[0])
    monkeypatch.setenv("GOODPUT_CONFIG", served[1])
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    at.switch_page("pages/topology.py").run()
    assert not at.exception
    return at


def test_rack_grid_at_the_last_hour_shows_the_failed_trays(page: AppTest) -> None:
    """Last hour (the slider's default): nvl01, 02, 04 have 18 of 18 trays healthy, nvl03 16
    with 2 out; free ≤ healthy everywhere; the degraded-racks table has one row, nvl03, most
    trays out 2, 16 healthy trays in the last hour."""
    assert [t.value for t in page.title] == ["Topology"]
    grid = _table(page, "domain", "trays", "healthy", "out", "free")
    assert grid.select("domain", "trays", "healthy", "out").rows() == [
        ("nvl01", 18, 18, 0), ("nvl02", 18, 18, 0), ("nvl03", 18, 16, 2), ("nvl04", 18, 18, 0),
    ]  # fmt: skip
    assert (grid["free"] <= grid["healthy"]).all()
    degraded = _table(page, "domain", "most trays out", "healthy trays (last hour)")
    cols = ("domain", "trays", "most trays out", "healthy trays (last hour)")
    assert degraded.select(cols).rows() == [("nvl03", 18, 2, 16)]


def test_slider_to_the_first_hour_shows_every_rack_whole(page: AppTest) -> None:
    """Moved to the window's first hour (before day 3's failures): every rack 18 healthy,
    0 out."""
    page.select_slider(key="topology_hour").set_value(_first_hour()).run()
    assert not page.exception
    grid = _table(page, "domain", "trays", "healthy", "out")
    assert grid.select("healthy", "out").rows() == [(18, 0)] * 4


def _first_hour() -> object:
    """The slider's first option: the first hour of ``domain_capacity_hourly``."""
    from dashboards import queries

    hours = queries.topology_hours(queries.serving_path(), queries.Filters())
    return hours[0]


def test_placement_and_wait_tables(page: AppTest) -> None:
    """multimodal is the one team with gangs placed over more domains than needed (lowest
    optimal share, first row); every other team's gangs are placed optimally (share 1). The
    wait table lists only large-job teams, and none of its jobs is exact (no polled reasons)."""
    placed = _table(page, "team", "gangs", "placed optimally (GPU-hour share)")
    assert placed["team"][0] == "multimodal"
    assert placed["placed optimally (GPU-hour share)"][0] == 0.0  # every gang over >1 domain
    others = placed.filter(pl.col("team") != "multimodal")
    assert others.height > 3
    assert others["placed optimally (GPU-hour share)"].to_list() == [1.0] * others.height
    waits = _table(page, "team", "jobs", "fragmentation h", "exact (polled reasons)")
    assert set(waits["team"]) <= {"agents", "nlp", "vision", "multimodal"}
    assert waits["exact (polled reasons)"].sum() == 0
