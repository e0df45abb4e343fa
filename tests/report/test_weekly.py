"""The weekly fairness report of 2026-W45 of the small fleet: numbers, page, snapshot."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli.report import report_app
from pipelines.report import IsoWeek, ReportError, build_weekly_report, weekly
from pipelines.report.weekly import load_recommendations, narrative
from pipelines.warehouse import publish_serving_copy
from tests.conftest import Materialized
from tests.report.conftest import Direct

WEEK = "2026-W45"
MONDAY = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
TEAM_FIELDS = (
    "share", "demand_gpu_s", "fair_gpu_s", "used_gpu_s", "entitlement_ratio",
    "fair_share_debt_gpu_h",
)  # fmt: skip


class _TeamCells(HTMLParser):
    """Collects ``(cluster, team) → {field: data-value}`` from the page's team tables."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str | None, str], dict[str, str]] = {}
        self._row: tuple[str | None, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and "data-team" in a:
            self._row = (a.get("data-cluster") or None, str(a["data-team"]))
            self.rows[self._row] = {}
        elif tag == "td" and self._row is not None and "data-field" in a:
            self.rows[self._row][str(a["data-field"])] = str(a.get("data-value") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None


def _view_rows(con: Direct) -> dict[tuple[str | None, str], dict[str, object]]:
    rows = con.rows(
        f"SELECT cluster, team, {', '.join(TEAM_FIELDS)} FROM fairness_weekly "
        "WHERE \"window\" = 'week' AND week = ?",
        [MONDAY],
    )
    return {(r[0], r[1]): dict(zip(TEAM_FIELDS, r[2:], strict=True)) for r in rows}


@pytest.fixture(scope="module")
def report(serving: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The W45 report written once (no PDF: the browser test prints one) into a temp folder."""
    out = tmp_path_factory.mktemp("reports")
    paths = build_weekly_report(serving, WEEK, out, pdf=False, recommendations=out / "none.json")
    assert paths.written
    return paths.folder


def test_sidecar_team_numbers_equal_the_fairness_view(report: Path, direct: Direct) -> None:
    """Every (cluster, team) row of fairness_weekly for W45 is in report.json with equal values."""
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    got = {(t["cluster"], t["team"]): {f: t[f] for f in TEAM_FIELDS} for t in data["teams"]}
    want = _view_rows(direct)
    assert want, "the fleet has fairness rows for W45"
    assert got == want


def test_page_team_table_equals_the_fairness_view(report: Path, direct: Direct) -> None:
    """The HTML team tables carry each view value exactly (data-value attributes)."""
    parser = _TeamCells()
    parser.feed((report / "report.html").read_text(encoding="utf-8"))
    want = _view_rows(direct)
    assert set(parser.rows) == set(want)
    for key, fields in want.items():
        for f, v in fields.items():
            cell = parser.rows[key][f]
            assert cell == "" if v is None else float(cell) == v, (key, f, cell, v)


def test_headline_numbers_equal_direct_queries(report: Path, direct: Direct) -> None:
    """Occupancy, allocated GPU-hours, goodput ratio and Jain's index equal the views' values."""
    fleet = json.loads((report / "report.json").read_text(encoding="utf-8"))["fleet"]
    end = MONDAY + dt.timedelta(days=7)
    occ, alloc_h = direct.one(
        "SELECT sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s), "
        "sum(allocated_gpu_s) / 3600 FROM occupancy_hourly WHERE hour >= ? AND hour < ?",
        [MONDAY, end],
    )
    good = direct.one(
        "SELECT sum(gpu_s) / (SELECT sum(capacity_gpu_s) FROM occupancy_hourly "
        "                     WHERE hour >= $1 AND hour < $2) "
        "FROM gpu_waterfall_hourly WHERE bucket = 'goodput' AND hour >= $1 AND hour < $2",
        [MONDAY, end],
    )
    jain = direct.one(
        "SELECT jain_index FROM fairness_summary_weekly "
        "WHERE \"window\" = 'week' AND week = ? AND cluster IS NULL",
        [MONDAY],
    )
    assert fleet["occupancy"] == pytest.approx(occ, rel=1e-12)
    assert fleet["allocated_gpu_h"] == pytest.approx(alloc_h, rel=1e-12)
    assert fleet["goodput_ratio"] == pytest.approx(good[0], rel=1e-12)
    assert fleet["jain_index"] == jain[0]


def test_large_job_p90_is_kaplan_meier_over_the_weeks_spells(report: Path, direct: Direct) -> None:
    """p90 of ≥ 64-GPU waits: smallest wait where the KM survival falls to 0.1 or below."""
    rows = direct.rows(
        "SELECT wait_s, started FROM time_to_start_jobs WHERE size_gpus >= 64 "
        "AND eligible_at >= ? AND eligible_at < ? ORDER BY wait_s, started DESC",
        [MONDAY, MONDAY + dt.timedelta(days=7)],
    )
    survival, at_risk, p90 = 1.0, len(rows), None
    for wait, started in rows:
        if started:
            survival *= 1 - 1 / at_risk
            if survival <= 0.1 + 1e-9 and p90 is None:
                p90 = wait
        at_risk -= 1
    fleet = json.loads((report / "report.json").read_text(encoding="utf-8"))["fleet"]
    assert fleet["large_spells"] == len(rows)
    assert fleet["large_wait_p90_s"] == p90


def test_page_is_self_contained(report: Path) -> None:
    """Inline CSS and plotly.js: no stylesheet link, no script or image loaded from a URL."""
    page = (report / "report.html").read_text(encoding="utf-8")
    assert "<link" not in page
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<img[^>]+src=[\"']?https?:", page)
    assert "@import" not in page
    assert "Plotly.newPlot" in page and "chart-teams" in page
    assert page.count("<script>window.PlotlyConfig") == 1


def test_user_names_are_pseudonymised(report: Path, materialized: Materialized) -> None:
    """The longest-waits table shows pseudonyms (``user-`` + 12 hex digits), never the user
    names (those of the warehouse: the serving copy holds pseudonyms)."""
    page = (report / "report.html").read_text(encoding="utf-8")
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    users = [w["user"] for w in data["longest_waits"]]
    assert users and all(re.fullmatch(r"user-[0-9a-f]{12}", u) for u in users)
    assert data["user_names"] == "pseudonymised"
    names = {r[0] for r in Direct(materialized.cfg.warehouse_path).rows(
        "SELECT DISTINCT user_name FROM jobs") if r[0]}  # fmt: skip
    assert names
    shown = set(re.findall(r"<td class=\"text\">([^<]+)</td>", page))
    assert not names & shown


def test_recommendations_none_yet(report: Path) -> None:
    """Without a recommendations file the page says so."""
    assert "No recommendations yet." in (report / "report.html").read_text(encoding="utf-8")


def test_partial_week_is_flagged(report: Path, direct: Direct) -> None:
    """The fleet's data end on 2026-11-04: the report says the week is partial and how many of
    its hours the data cover (cut-off − Monday 00:00, the data beginning before it)."""
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    assert data["complete"] is False
    (cut,) = direct.one("SELECT min(c) FROM (SELECT max(as_of) AS c FROM occupancy_hourly "
                        "GROUP BY cluster)")  # fmt: skip
    hours = (cut - MONDAY).total_seconds() / 3600
    assert data["covered_h"] == pytest.approx(hours)
    assert data["narrative"][0].startswith(f"The week is partial: the data cover {hours:,.1f} of")


def test_a_partial_week_is_not_compared_with_the_week_before(report: Path) -> None:
    """W45 is partial (and W44 holds only the fleet's first hours): no comparison is made."""
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    assert data["previous"] is None and data["team_changes"]
    assert all(
        v is None for r in data["team_changes"] for k, v in r.items() if k.endswith("_last_week")
    )
    assert [d["delta"] for d in data["deltas"]] == [None] * len(data["deltas"])
    assert not any("from last week" in line for line in data["narrative"])


def test_deltas_compare_with_the_previous_week(
    serving: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were W45 complete, each delta is this week's value minus last week's (W44 holds the
    fleet's first hours): the comparison arithmetic, with the completeness rule forced."""
    monkeypatch.setattr(weekly, "is_complete", lambda *a, **k: True)
    paths = build_weekly_report(serving, WEEK, tmp_path, pdf=False, recommendations=tmp_path / "x")
    data = json.loads(paths.json.read_text(encoding="utf-8"))
    assert data["previous_week"] == "2026-W44" and data["previous"] is not None
    for d in data["deltas"]:
        if d["this_week"] is not None and d["last_week"] is not None:
            assert d["delta"] == pytest.approx(d["this_week"] - d["last_week"])
    occ = next(d for d in data["deltas"] if d["metric"] == "occupancy")
    assert occ["last_week"] == pytest.approx(data["previous"]["occupancy"])


def test_snapshot_kept_unless_forced(serving: Path, tmp_path: Path) -> None:
    """A second run keeps the week's files byte for byte; ``force`` rewrites them."""
    first = build_weekly_report(serving, WEEK, tmp_path, pdf=False, recommendations=tmp_path / "x")
    stamp = first.html.stat().st_mtime_ns
    before = first.json.read_text(encoding="utf-8")
    again = build_weekly_report(serving, WEEK, tmp_path, pdf=False, recommendations=tmp_path / "x")
    assert again.written is False
    assert again.html.stat().st_mtime_ns == stamp
    assert again.json.read_text(encoding="utf-8") == before
    os.utime(first.html, ns=(0, 0))
    forced = build_weekly_report(
        serving, WEEK, tmp_path, pdf=False, recommendations=tmp_path / "x", force=True
    )
    assert forced.written is True
    assert forced.html.stat().st_mtime_ns != 0


def test_week_without_data_is_refused(serving: Path, tmp_path: Path) -> None:
    """A week the serving copy holds nothing for is an error, and nothing is written."""
    with pytest.raises(ReportError, match="no data for 2027-W10"):
        build_weekly_report(serving, "2027-W10", tmp_path, pdf=False)
    assert not (tmp_path / "2027-W10").exists()


def test_recommendations_top_items_most_severe_first(tmp_path: Path) -> None:
    """latest.json is read; items sort by severity, at most five are kept."""
    path = tmp_path / "latest.json"
    recs = [
        {"id": f"r{i}", "rule": "rule", "scope": "slurm-a", "severity": sev,
         "change_text": f"change {i}", "expected_gain": 10.0 * i}
        for i, sev in enumerate(["low", "critical", "medium", "high", "info", "low", "high"])
    ]  # fmt: skip
    path.write_text(json.dumps({"as_of": "2026-11-04T00:00:00Z", "recommendations": recs}))
    got = load_recommendations(path)
    assert got["total"] == 7 and got["as_of"] == "2026-11-04T00:00:00Z"
    assert [r["id"] for r in got["items"]] == ["r1", "r3", "r6", "r2", "r0"]
    # the published report names the file, never its folder on the machine (a home folder
    # names a person)
    assert got["source"] == "latest.json"
    home = tmp_path / "home" / "alice" / "recs"
    home.mkdir(parents=True)
    assert load_recommendations(home / "latest.json")["source"] == "latest.json"
    (home / "latest.json").write_text("{")
    broken = load_recommendations(home / "latest.json")
    assert broken["source"] == "latest.json" and "alice" not in broken["note"]


def test_narrative_names_the_most_owed_team() -> None:
    """The narrative is built from the numbers: occupancy, p90 wait, Jain and the owed team."""
    fleet = {
        "occupancy": 0.5, "allocated_gpu_h": 100.0, "available_gpu_h": 200.0,
        "goodput_ratio": 0.4, "telemetry_coverage": 0.9, "large_spells": 2,
        "large_wait_p90_s": 7200.0, "large_wait_p90_reason": None, "jain_index": 0.8,
        "unmet_entitlement": 0.25,
    }  # fmt: skip
    data = {
        "week": WEEK, "complete": True, "as_of": None, "large_job_gpus": 64.0, "fleet": fleet,
        "deltas": [{"metric": "occupancy", "delta": 0.1}, {"metric": "goodput_ratio",
                                                            "delta": None}],
        "teams": [
            {"cluster": None, "team": "a", "fair_share_debt_gpu_h": 12.0,
             "entitlement_ratio": 0.5},
            {"cluster": None, "team": "b", "fair_share_debt_gpu_h": 3.0,
             "entitlement_ratio": 0.9},
        ],
        "recommendations": {"total": 0, "items": []},
    }  # fmt: skip
    text = " ".join(narrative(data))
    assert "50.0 % occupied" in text and "up 10.0 points" in text
    assert "within 2.0 h" in text
    assert "team a is owed the most, 12 GPU-hours" in text


def test_iso_weeks_in_utc() -> None:
    """ISO week ↔ dates: W45 of 2026 is Monday 2 Nov; 2026 has a W53; Sunday 23:59 UTC is W45."""
    w = IsoWeek.parse("2026-W45")
    assert w.start == MONDAY and w.end == MONDAY + dt.timedelta(days=7)
    assert IsoWeek.parse("2027-W01").previous() == IsoWeek(2026, 53)
    assert IsoWeek.of(dt.datetime(2026, 11, 8, 23, 59, tzinfo=dt.UTC)) == w
    assert str(IsoWeek.of(dt.datetime(2026, 11, 9, 0, 30, tzinfo=dt.UTC))) == "2026-W46"
    with pytest.raises(ReportError):
        IsoWeek.parse("2025-W53")
    with pytest.raises(ReportError):
        IsoWeek.parse("2026-45")


def test_show_user_names_env(
    materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serving copy published with ``GOODPUT_SHOW_USER_NAMES=1`` shows the real names in the
    report."""
    monkeypatch.setenv("GOODPUT_SHOW_USER_NAMES", "1")
    shown = publish_serving_copy(materialized.cfg.warehouse_path, tmp_path / "shown.duckdb")
    monkeypatch.delenv("GOODPUT_SHOW_USER_NAMES")
    paths = build_weekly_report(shown, WEEK, tmp_path, pdf=False, recommendations=tmp_path / "x")
    data = json.loads(paths.json.read_text(encoding="utf-8"))
    assert data["user_names"] == "shown"
    names = {r[0] for r in Direct(materialized.cfg.warehouse_path).rows(
        "SELECT DISTINCT user_name FROM jobs") if r[0]}  # fmt: skip
    assert data["longest_waits"]
    assert all(w["user"] in names for w in data["longest_waits"])


def test_report_command_writes_then_keeps(serving: Path, tmp_path: Path) -> None:
    """`goodput report --week`: written the first time, kept the second, rewritten with --force."""
    runner = CliRunner()
    args = ["report", "--week", WEEK, "--db", str(serving), "--out", str(tmp_path), "--no-pdf"]
    first = runner.invoke(report_app, args)
    assert first.exit_code == 0, first.output
    assert f"{WEEK}: written" in first.stdout
    assert str(tmp_path / WEEK / "report.html") in first.stdout
    second = runner.invoke(report_app, args)
    assert second.exit_code == 0 and "kept (snapshot exists" in second.stdout
    forced = runner.invoke(report_app, [*args, "--force"])
    assert forced.exit_code == 0 and f"{WEEK}: written" in forced.stdout
    bad = runner.invoke(report_app, ["report", "--week", "2026-45", "--db", str(serving)])
    assert bad.exit_code == 1 and "YYYY-Www" in bad.output
