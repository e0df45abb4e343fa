"""The weekly report's "What changed and what it did": the week's changes and the effects
measured in it, on hand-written rows (``tests/dashboards/changes_db.py``) and on the fleet."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import duckdb
import polars as pl

from pipelines.report import build_weekly_report
from pipelines.report.changes import week_changes
from tests.dashboards import changes_db
from tests.report.conftest import Direct

MONDAY = dt.datetime(2026, 3, 9, tzinfo=dt.UTC)
WEEK = dt.timedelta(days=7)
_LEDGER_COLS = ("change_id", "cluster", "scheduler", "scope", "object", "key", "old", "new",
                "actor", "changed_at", "changed_after", "source")  # fmt: skip
_IMPACT_COLS = ("change_id", "bundle_id", "cluster", "scope", "kpi", "method", "window_start",
                "window_end", "n_pre", "n_post", "unit", "before", "after", "estimate", "ci_low",
                "ci_high", "p_value", "placebo_p", "mde", "verdict")  # fmt: skip


def _ledger() -> pl.DataFrame:
    return pl.DataFrame([dict(zip(_LEDGER_COLS, r, strict=True)) for r in changes_db.LEDGER])


def _effects() -> pl.DataFrame:
    return pl.DataFrame([dict(zip(_IMPACT_COLS, r, strict=True)) for r in changes_db.IMPACT])


def test_the_weeks_changes_and_the_effects_measured_in_it() -> None:
    """Week of 2026-03-09: the bundle c2+c3 (03-10) is its one change row; c1's effect (window
    ends 03-12 10:00, inside the week) is measured in it although c1 was made the week before;
    the bundle's effects end 03-17 06:00, the next week."""
    got = week_changes(_ledger(), _effects(), MONDAY, MONDAY + WEEK)
    assert got["measured"] and got["note"] is None
    fields = ("when", "what", "old_new", "who", "changes")
    assert [tuple(c[f] for f in fields) for c in got["changes"]] == [
        ("between 2026-03-09 06:00 and 2026-03-10 06:00 UTC",
         "slurm.conf SchedulerParameters:bf_window; slurm.conf PriorityWeightFairShare",
         "60 → 2880; 1000 → 10000", "unknown (Slurm does not record it)", "2"),
    ]  # fmt: skip
    assert got["effects"] == [
        {"cluster": "slurm-a", "change": "account=speech shares: 8 → 3",
         "kpi": "Jain's index of usage ÷ share",
         "method": "its", "before": "0.800", "after": "0.850",
         "effect": "+0.050 (95 % CI +0.020 to +0.080)", "verdict": "improved",
         "placebo_p": 0.03, "mde": "0.030", "enough": "a week is enough to tell"},
    ]  # fmt: skip


def test_a_week_without_changes_still_reports_effects() -> None:
    """Week of 2026-03-16: no change made; the bundle's two estimates (wait improved by 3 h,
    occupancy no detectable effect) are measured in it, improved first."""
    got = week_changes(_ledger(), _effects(), MONDAY + WEEK, MONDAY + 2 * WEEK)
    assert got["changes"] == [] and got["note"] == "No scheduler setting changed this week."
    assert [(e["kpi"], e["effect"], e["verdict"]) for e in got["effects"]] == [
        ("p90 time to start, 64+ GPUs", "-3.00 h (95 % CI -5.00 to -1.00)", "improved"),
        ("occupancy", "+0.010 (95 % CI -0.020 to +0.040)", "no detectable effect"),
    ]


def test_without_the_impact_view_effects_are_not_measured_yet() -> None:
    """No ``policy_change_impact``: the change is listed with "effects not measured yet" and
    the note says so; no ledger at all: the note says that."""
    got = week_changes(_ledger(), None, MONDAY, MONDAY + WEEK)
    assert not got["measured"] and got["effects"] == []
    assert [c["effects"] for c in got["changes"]] == ["effects not measured yet"] * 2
    assert got["note"] == "Effects not measured yet."
    assert week_changes(None, None, MONDAY, MONDAY + WEEK)["note"] == (
        "No policy-change ledger in this serving copy."
    )


def test_the_fleet_report_lists_its_changes_and_a_measured_effect(
    serving: Path, tmp_path: Path
) -> None:
    """On a copy of the fleet's serving copy with one hand-written effect for its first W45
    change (jain +0.02 [−0.01, 0.05], no detectable effect, window ending 2026-11-04): the
    sidecar lists every change the ledger dates in W45 and that effect; the page shows both
    tables. Without the view (the fleet as published) the note says effects are not measured
    yet."""
    copy = tmp_path / "serving.duckdb"
    shutil.copyfile(serving, copy)
    monday = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    week = Direct(copy).rows(
        "SELECT change_id, cluster, object, key FROM policy_changes"
        " WHERE changed_at >= ? AND changed_at < ? ORDER BY changed_at, change_id",
        [monday, monday + WEEK],
    )
    assert week, "the fleet plants changes in W45"
    first = week[0]
    with duckdb.connect(str(copy)) as con:
        con.execute(
            "CREATE OR REPLACE TABLE analytics.policy_change_impact AS SELECT * FROM (VALUES "
            "(?, ?, ?, "
            "'config', 'jain', 'its', TIMESTAMPTZ '2026-10-20 00:00:00+00', "
            "TIMESTAMPTZ '2026-11-04 00:00:00+00', 14, 2, 'index', 0.9::DOUBLE, 0.92::DOUBLE, "
            "0.02::DOUBLE, -0.01::DOUBLE, 0.05::DOUBLE, 0.3::DOUBLE, 0.4::DOUBLE, 0.04::DOUBLE, "
            "'no detectable effect')) AS t(change_id, bundle_id, cluster,"
            " scope, kpi, method, window_start, window_end, n_pre, n_post, unit, before, after,"
            " estimate, ci_low, ci_high, p_value, placebo_p, mde, verdict)",
            [first[0], first[0], first[1]],
        )
        con.execute(
            "CREATE OR REPLACE VIEW policy_change_impact AS "
            "SELECT * FROM analytics.policy_change_impact"
        )
    out = tmp_path / "reports"
    paths = build_weekly_report(copy, "2026-W45", out, pdf=False, recommendations=out / "x.json")
    doc = json.loads(paths.json.read_text())["policy_changes"]
    listed = sum(int(c["changes"]) for c in doc["changes"])
    assert listed == len(week)
    assert [(e["kpi"], e["effect"], e["verdict"]) for e in doc["effects"]] == [
        (
            "Jain's index of usage ÷ share",
            "+0.020 (95 % CI -0.010 to +0.050)",
            "no detectable effect",
        )
    ]
    assert doc["effects"][0]["change"].startswith(f"{first[2]} {first[3]}: ")
    page = paths.html.read_text()
    assert 'id="policy-changes"' in page and 'id="policy-effects"' in page
    # a serving copy without the impact view (published before the engine existed)
    bare = tmp_path / "bare.duckdb"
    shutil.copyfile(serving, bare)
    with duckdb.connect(str(bare)) as con:
        con.execute("DROP VIEW IF EXISTS policy_change_impact")
        con.execute("DROP TABLE IF EXISTS analytics.policy_change_impact")
    plain = build_weekly_report(bare, "2026-W45", tmp_path / "plain", pdf=False,
                                recommendations=out / "x.json")  # fmt: skip
    doc = json.loads(plain.json.read_text())["policy_changes"]
    assert doc["note"] == "Effects not measured yet." and not doc["measured"]
    assert {c["effects"] for c in doc["changes"]} == {"effects not measured yet"}


def test_kpi_labels_name_each_kpi_for_a_reader() -> None:
    """Each KPI of policy_change_impact has a label; a size bucket reads as GPUs."""
    from pipelines.report.changes import kpi_label

    assert [kpi_label(k) for k in (
        "wait_p50_h[1]", "held_for_gangs_gpu_h", "entitlement_ratio_min",
        "preemption_loss_gpu_h", "goodput_ratio", "something_else",
    )] == [
        "p50 time to start, 1 GPU", "GPU-hours held for gangs", "lowest team entitlement ratio",
        "preemption loss", "goodput ÷ allocated", "something_else",
    ]  # fmt: skip
