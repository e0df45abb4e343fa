"""The Topology page on the rack-scale cluster slurm-nvl (tests/rackscale.py), rows checked
by hand against what the fleet plants: racks of 18 trays, two trays of nvl03 out from day 3
(gb-041 DOWN, gb-047 DRAIN), multimodal's gangs spread over domains, large jobs only from
agents, nlp, vision and multimodal."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from pipelines.warehouse import connect
from pipelines.warehouse.sql import load_sql
from tests.dashboards.test_pages import _table
from tests.rackscale import build_rackscale_warehouse

#: Hand-made placements at level ``nvlink`` (cliques of 4 nodes): (job, start, nodes, cliques
#: used, the Workload's topology request). Week of 2026-11-02: g1 2 nodes in 1 clique, g2 3 in 2,
#: g3 4 in 1, g4 6 nodes (does not fit one clique: left out of the co-location share), g5 1 node
#: (not a gang: left out); week of 2026-11-09: g6 2 in 2. g1 and g3 asked for a level; g2, g4,
#: g5 and g6 asked for none.
NVLINK = [
    ("g1", dt.datetime(2026, 11, 3, 10, tzinfo=dt.UTC), 2, 1, "required: nvidia.com/gpu.clique"),
    ("g2", dt.datetime(2026, 11, 4, 10, tzinfo=dt.UTC), 3, 2, None),
    ("g3", dt.datetime(2026, 11, 5, 10, tzinfo=dt.UTC), 4, 1, "preferred: nvidia.com/gpu.clique"),
    ("g4", dt.datetime(2026, 11, 5, 11, tzinfo=dt.UTC), 6, 2, None),
    ("g5", dt.datetime(2026, 11, 6, 10, tzinfo=dt.UTC), 1, 1, None),
    ("g6", dt.datetime(2026, 11, 9, 10, tzinfo=dt.UTC), 2, 2, None),
]

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(warehouse path, config path) of nine built days of slurm-nvl, with the NVLink
    placements of :data:`NVLINK` added (slurm-nvl has no clique labels of its own)."""
    cfg = build_rackscale_warehouse(tmp_path_factory.mktemp("nvl-page"))
    with connect(cfg.warehouse_path) as con:
        con.executemany(
            "INSERT INTO analytics.job_placement VALUES"
            " ('slurm-nvl', ?, 0, 'nvlink', ?, ?, 4, ?, ceil(? / 4), ? - ceil(? / 4), ?)",
            [(j, at, n, used, n, used, n, req) for j, at, n, used, req in NVLINK],
        )
        # the weekly counts the build stores from the placements, again with these
        con.execute(
            "CREATE OR REPLACE TABLE analytics.nvlink_colocation_weekly AS "
            + load_sql("analytics/nvlink_colocation_weekly")
        )
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


def test_nvlink_colocation_table_and_tiles(page: AppTest) -> None:
    """From NVLINK: week 2026-11-02: gangs that fit one clique g1, g2, g3 = 3, in one clique
    g1, g3 = 2, share 2/3; week 2026-11-09: g6 alone, 0 of 1. Tiles: 3 + 1 = 4 gangs, 2 of 4
    = 50.0 % ran inside one clique."""
    got = _table(page, "week", "gangs", "colocated", "co-location share")
    assert got.select(pl.col("week").dt.date().cast(pl.String), "gangs", "colocated").rows() == [
        ("2026-11-02", 3, 2), ("2026-11-09", 1, 0),
    ]  # fmt: skip
    assert got["co-location share"].to_list() == pytest.approx([2 / 3, 0.0])
    tiles = {m.label: m.value for m in page.metric}
    assert tiles["Gangs that fit one clique"] == "4"
    assert tiles["Ran inside one clique"] == "50.0%"


def test_nvlink_unconstrained_gangs_are_counted_and_listed(page: AppTest) -> None:
    """From NVLINK: multi-node gangs week 2026-11-02 g1, g2, g3, g4 = 4, unconstrained g2, g4 =
    2, share 1/2; week 2026-11-09 g6 = 1 of 1. Tile: 2 + 1 = 3 of 4 + 1 = 5. Listed, most nodes
    first: g4 (6 nodes), g2 (3), g6 (2); g5 (one node) and g1, g3 (asked for a level) not."""
    got = _table(page, "week", "multi-node gangs", "unconstrained", "unconstrained share")
    assert got.select("multi-node gangs", "unconstrained").rows() == [(4, 2), (1, 1)]
    assert got["unconstrained share"].to_list() == pytest.approx([0.5, 1.0])
    tiles = {m.label: m.value for m in page.metric}
    assert tiles["Multi-node gangs with no topology constraint"] == "3 of 5"
    listed = _table(page, "job_id", "start_at", "nodes", "domains_used")
    assert listed.select("job_id", "nodes", "domains_used").rows() == [
        ("g4", 6, 2), ("g2", 3, 2), ("g6", 2, 2),
    ]  # fmt: skip
