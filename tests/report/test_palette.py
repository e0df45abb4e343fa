"""One colour per leaf, cluster, team and state, shared by the dashboard and the PDF report."""

from __future__ import annotations

import itertools
from typing import Any

import plotly.express as px
import polars as pl

from dashboards import _charts
from metrics.schema import SIZE_BUCKETS, WATERFALL_LEAVES
from pipelines.report import palette
from pipelines.report.weekly import _figures

#: Two colours closer than this in RGB read as the same hue at a glance.
MIN_DISTANCE = 80.0


def _report_data() -> dict[str, Any]:
    """The smallest input of the weekly report's figures: two clusters, every leaf, two teams."""
    return {
        "daily": [
            {"cluster": c, "day": "2026-11-09T00:00:00+00:00", "occupancy": 0.5}
            for c in ("slurm-a", "k8s-b")
        ],
        "waterfall": [
            {"cluster": c, "bucket": leaf, "gpu_h": 1.0}
            for c in ("slurm-a", "k8s-b", None)
            for leaf in WATERFALL_LEAVES
        ],
        "teams": [
            {"cluster": None, "team": t, "demand_gpu_s": 3600.0, "used_gpu_s": 3600.0,
             "fair_gpu_s": 3600.0}
            for t in ("nlp", "vision")
        ],
    }  # fmt: skip


def test_every_leaf_has_its_own_colour() -> None:
    """The leaf table covers ``WATERFALL_LEAVES`` exactly, eleven different colours."""
    assert set(palette.LEAF_COLORS) == set(WATERFALL_LEAVES)
    assert len(set(palette.LEAF_COLORS.values())) == len(WATERFALL_LEAVES)


def test_a_team_keeps_its_colour_across_subsets() -> None:
    """The same team has the same colour on a page showing two teams and one showing four."""
    few = palette.team_colors(["nlp", "vision"])
    many = palette.team_colors(["speech", "vision", "recsys", "nlp"])
    assert few["nlp"] == many["nlp"] and few["vision"] == many["vision"]


def test_a_cluster_keeps_its_colour_across_subsets() -> None:
    """A cluster filtered alone keeps the colour it has beside the others."""
    both = palette.cluster_colors(["slurm-a", "k8s-b"])
    assert palette.cluster_colors(["k8s-b"])["k8s-b"] == both["k8s-b"]
    assert palette.cluster_colors(["slurm-a", None])["slurm-a"] == both["slurm-a"]


def test_clusters_are_clearly_distinct() -> None:
    """The fleet's two clusters, and any two palette colours, are at least 80 apart in RGB."""
    both = palette.cluster_colors(["slurm-a", "k8s-b"])
    assert palette.rgb_distance(both["slurm-a"], both["k8s-b"]) >= MIN_DISTANCE
    for a, b in itertools.combinations(palette.CLUSTER_PALETTE, 2):
        assert palette.rgb_distance(a, b) >= MIN_DISTANCE, (a, b)


def test_cluster_colours_are_not_leaf_colours() -> None:
    """No cluster colour is a waterfall leaf's: a cluster never reads as a leaf."""
    assert not set(palette.CLUSTER_PALETTE) & set(palette.LEAF_COLORS.values())
    assert not set(palette.TEAM_PALETTE) & set(palette.LEAF_COLORS.values())


def test_size_buckets_run_light_to_dark() -> None:
    """Bucket colours get darker with the job size (sum of RGB falls), ``< 1`` spelt either way."""
    colors = palette.bucket_colors(["< 1"])
    ramp = [colors[label] for label, _lo, _hi in SIZE_BUCKETS]
    sums = [sum(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in ramp]
    assert sums == sorted(sums, reverse=True)
    assert colors["< 1"] == colors["<1"]


def test_states_take_their_leaf_colour() -> None:
    """A failed attempt is the colour of ``failed_work_user``, a completed one of goodput."""
    assert palette.STATE_COLORS["failed"] == palette.LEAF_COLORS["failed_work_user"]
    assert palette.STATE_COLORS["completed"] == palette.LEAF_COLORS["goodput"]


def test_leaf_colours_equal_in_the_dashboard_and_the_report() -> None:
    """The overview's waterfall figure (as the page builds it) and the weekly report's
    waterfall colour each leaf the same."""
    daily = pl.DataFrame(
        {"day": ["2026-11-09"] * len(WATERFALL_LEAVES), "leaf": list(WATERFALL_LEAVES),
         "gpu_h": [1.0] * len(WATERFALL_LEAVES), "cluster": ["slurm-a"] * len(WATERFALL_LEAVES)}
    )  # fmt: skip
    dash = px.bar(daily, x="day", y="gpu_h", color="leaf",
                  color_discrete_map=_charts.LEAF_COLORS).to_plotly_json()  # fmt: skip
    report = _figures(_report_data())["waterfall"].to_plotly_json()
    on_dash = {t["name"]: t["marker"]["color"] for t in dash["data"]}
    in_report = {t["name"]: t["marker"]["color"] for t in report["data"]}
    assert on_dash == in_report == palette.LEAF_COLORS


def test_report_clusters_use_the_cluster_palette() -> None:
    """The report's occupancy bars are in the clusters' dashboard colours."""
    fig = _figures(_report_data())["occupancy"].to_plotly_json()
    got = {t["name"]: t["marker"]["color"] for t in fig["data"]}
    assert got == palette.cluster_colors(["slurm-a", "k8s-b"])


FLEET_TEAMS = (
    "agents", "climate", "genomics", "infra", "multimodal", "nlp", "recsys", "rl", "robotics",
    "safety", "speech", "vision",
)  # fmt: skip


def test_a_team_keeps_its_colour_in_any_subset_of_the_universe() -> None:
    """Colliding hashes are resolved over every team of the serving copy, not the chart's.

    Hand-worked with the bundled fleet's 12 teams: ``genomics`` and ``nlp`` both hash to slot
    10 (SHA-1 of the name, first 4 bytes mod 12); ``multimodal`` hashes to 11. In sorted order
    genomics takes 10 (#7f3c8d), multimodal 11 (#a5aa99), and nlp moves on to the next free
    slot, 0 (#4e79a7). Drawn alone without the universe, nlp would take its own slot 10."""
    assert palette._slot("genomics", 12) == palette._slot("nlp", 12) == 10
    assert palette._slot("multimodal", 12) == 11
    full = palette.team_colors(FLEET_TEAMS)
    assert (full["genomics"], full["multimodal"], full["nlp"]) == ("#7f3c8d", "#a5aa99", "#4e79a7")
    assert palette.team_colors(["nlp"]) == {"nlp": "#7f3c8d"}  # no universe: a different colour
    for subset in (["nlp"], ["nlp", "vision"], ["speech", "rl", "nlp"]):
        got = palette.team_colors(subset, FLEET_TEAMS)
        assert got == {t: full[t] for t in subset}
        assert palette.color_map("team", subset, universe=FLEET_TEAMS) == got
    assert len(set(full.values())) == 12  # twelve teams, twelve colours


def test_report_debt_chart_colours_teams_over_the_universe() -> None:
    """The report's fair-share debt bars carry each team's colour resolved over the serving
    copy's teams (``team_universe``), the colour the dashboard's pages give it."""
    data = {**_report_data(), "team_universe": list(FLEET_TEAMS)}
    fig = _figures(data)["debt"].to_plotly_json()
    got = {t["name"]: t["marker"]["color"] for t in fig["data"]}
    assert got == {t: palette.team_colors(FLEET_TEAMS)[t] for t in ("nlp", "vision")}
    assert got["nlp"] == "#4e79a7"
