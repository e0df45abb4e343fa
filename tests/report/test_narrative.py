"""The shared narrative (Overview page and weekly report): drivers of a change, hand-computed."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.report.narrative import Driver, Facts, contributions, most_owed, narrative
from pipelines.report.weekly import narrative as weekly_narrative

#: Allocated GPU-hours per team; 100 available GPU-hours in each period.
TEAMS_NOW = pl.DataFrame({"team": ["a", "b"], "allocated_gpu_h": [30.0, 12.0]})
TEAMS_BEFORE = pl.DataFrame({"team": ["a", "b", "c"], "allocated_gpu_h": [20.0, 20.0, 6.0]})
CLUSTERS_NOW = pl.DataFrame({"cluster": ["x", "y"], "allocated_gpu_h": [40.0, 2.0]})
CLUSTERS_BEFORE = pl.DataFrame({"cluster": ["x", "y"], "allocated_gpu_h": [30.0, 16.0]})


def _team_drivers() -> list[Driver]:
    return contributions(TEAMS_NOW, TEAMS_BEFORE, key="team", part="allocated_gpu_h",
                         whole_now=100.0, whole_before=100.0)  # fmt: skip


def _cluster_drivers() -> list[Driver]:
    return contributions(CLUSTERS_NOW, CLUSTERS_BEFORE, key="cluster", part="allocated_gpu_h",
                         whole_now=100.0, whole_before=100.0)  # fmt: skip


def test_contributions_split_the_change_exactly() -> None:
    """Occupancy 42/100 now, 46/100 before: Δ = −0.04. Per team part/whole now − before:
    a 0.30 − 0.20 = +0.10, b 0.12 − 0.20 = −0.08, c (absent now) 0 − 0.06 = −0.06; they sum
    to −0.04, and the largest |·| (a) comes first."""
    got = _team_drivers()
    assert [d.name for d in got] == ["a", "b", "c"]
    assert [d.contribution for d in got] == pytest.approx([0.10, -0.08, -0.06])
    assert sum(d.contribution for d in got) == pytest.approx(42 / 100 - 46 / 100)
    assert {d.kind for d in got} == {"team"}


def test_contributions_with_different_denominators() -> None:
    """Whole 50 now, 80 before: a 30/50 − 20/80 = 0.35, b 12/50 − 20/80 = −0.01,
    c 0 − 6/80 = −0.075; the sum is 42/50 − 46/80 = 0.265."""
    got = contributions(TEAMS_NOW, TEAMS_BEFORE, key="team", part="allocated_gpu_h",
                        whole_now=50.0, whole_before=80.0)  # fmt: skip
    assert {d.name: d.contribution for d in got} == pytest.approx(
        {"a": 0.35, "b": -0.01, "c": -0.075}
    )
    assert sum(d.contribution for d in got) == pytest.approx(42 / 50 - 46 / 80)
    with pytest.raises(ValueError, match="positive"):
        contributions(TEAMS_NOW, TEAMS_BEFORE, key="team", part="allocated_gpu_h",
                      whole_now=0.0, whole_before=80.0)  # fmt: skip


def test_narrative_names_the_teams_and_clusters_that_moved_occupancy() -> None:
    """The top two drivers of each kind, signed, in ratio points: teams a (+10.0), b (−8.0);
    clusters y (0.02 − 0.16 = −14.0), x (0.40 − 0.30 = +10.0)."""
    facts = Facts(
        period="2026-W46", previous="last week", occupancy=0.42, allocated_gpu_h=42.0,
        available_gpu_h=100.0, occupancy_delta=-0.04,
        occupancy_drivers=[*_team_drivers(), *_cluster_drivers()],
    )  # fmt: skip
    text = narrative(facts)
    assert text[0] == (
        "In 2026-W46 the fleet's GPUs were 42.0 % occupied (42 of 100 available GPU-hours "
        "allocated), down 4.0 points from last week."
    )
    assert text[1] == (
        "What moved occupancy most: the teams a (+10.0 points), b (-8.0 points); "
        "the clusters y (-14.0 points), x (+10.0 points)."
    )


def test_narrative_names_the_waste_leaf_that_moved_most() -> None:
    """Waste 30 of 200 GPU-h now (15 %), 20 of 200 before (10 %): held 20/200 − 5/200 = +7.5
    points, allocated_idle 10/200 − 15/200 = −2.5 points."""
    now = pl.DataFrame({"leaf": ["held", "allocated_idle"], "gpu_h": [20.0, 10.0]})
    before = pl.DataFrame({"leaf": ["held", "allocated_idle"], "gpu_h": [5.0, 15.0]})
    drivers = contributions(now, before, key="leaf", part="gpu_h", whole_now=200.0,
                            whole_before=200.0)  # fmt: skip
    facts = Facts(
        period="2026-W46", waste_gpu_h=30.0, waste_share=0.15, waste_delta=0.05,
        waste_leaf="held", waste_leaf_gpu_h=20.0, waste_drivers=drivers,
    )  # fmt: skip
    text = narrative(facts)
    assert text[0] == (
        "Avoidable waste (lost work, allocated-idle and held GPU-time) was 30 GPU-hours, "
        "15.0 % of capacity, up 5.0 points from last week; the largest part: held (20 h)."
    )
    assert text[1] == (
        "What moved waste most: the waterfall leaves held (+7.5 points), "
        "allocated_idle (-2.5 points)."
    )


def test_a_partial_period_names_no_change_and_no_driver() -> None:
    """Partial: the first sentence says so; the occupancy sentence has no change, no drivers."""
    facts = Facts(
        period="2026-11-01 – 2026-11-04 UTC", unit="window", complete=False, covered_h=48.2,
        period_h=96.0, as_of="2026-11-03 23:14 UTC", occupancy=0.42, allocated_gpu_h=42.0,
        available_gpu_h=100.0, occupancy_delta=-0.04, occupancy_drivers=_team_drivers(),
    )  # fmt: skip
    text = narrative(facts)
    assert text[0].startswith("The window is partial: the data cover 48.2 of its 96 hours")
    assert text[1].endswith("available GPU-hours allocated).")
    assert not any("moved" in t for t in text)


def test_most_owed_team() -> None:
    """The largest debt above 0.05 GPU-hours; none when nobody is owed."""
    rows = [
        {"team": "a", "fair_share_debt_gpu_h": 12.0, "entitlement_ratio": 0.5},
        {"team": "b", "fair_share_debt_gpu_h": 30.0, "entitlement_ratio": None},
        {"team": "c", "fair_share_debt_gpu_h": -5.0, "entitlement_ratio": 1.4},
    ]
    owed = most_owed(rows)
    assert owed is not None and (owed.team, owed.debt_gpu_h, owed.entitlement_ratio) == (
        "b", 30.0, None,
    )  # fmt: skip
    assert most_owed([{"team": "a", "fair_share_debt_gpu_h": 0.01}]) is None


def test_weekly_report_narrative_uses_the_shared_one() -> None:
    """The report's summary: occupancy with the clusters that moved it (x: 40/100 − 30/100,
    y: 2/100 − 16/100), and the fleet's avoidable waste from its waterfall rows (held 20 +
    allocated_idle 10 of 200 GPU-h capacity = 15 %; goodput and idle are not waste)."""
    hour = 3600.0
    data = {
        "week": "2026-W46", "complete": True, "as_of": None, "large_job_gpus": 64.0,
        "fleet": {"occupancy": 0.42, "allocated_gpu_h": 42.0, "available_gpu_h": 100.0,
                  "goodput_ratio": None, "large_spells": 0, "jain_index": None},
        "previous": {"available_gpu_h": 100.0},
        "clusters": [{"cluster": c, "allocated_gpu_h": v} for c, v in (("x", 40.0), ("y", 2.0))],
        "previous_clusters": [
            {"cluster": c, "allocated_gpu_h": v} for c, v in (("x", 30.0), ("y", 16.0))
        ],
        "deltas": [{"metric": "occupancy", "delta": -0.04}],
        "waterfall": [
            {"cluster": None, "bucket": b, "gpu_s": h * hour}
            for b, h in (("held", 20.0), ("allocated_idle", 10.0), ("goodput", 150.0),
                         ("idle", 20.0))
        ] + [{"cluster": "x", "bucket": "held", "gpu_s": 20.0 * hour}],
        "teams": [],
        "recommendations": {"total": 0, "items": []},
    }  # fmt: skip
    text = weekly_narrative(data)
    assert text[1] == "What moved occupancy most: the clusters y (-14.0 points), x (+10.0 points)."
    assert text[2] == (
        "Avoidable waste (lost work, allocated-idle and held GPU-time) was 30 GPU-hours, "
        "15.0 % of capacity; the largest part: held (20 h)."
    )
    assert text[3] == "No large job (≥ 64 GPUs) became eligible this week."
