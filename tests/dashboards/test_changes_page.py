"""The Changes page over a small serving copy with hand-written ledger and impact rows
(``tests/dashboards/changes_db.py``), with and without the ``policy_change_impact`` view."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboards import queries
from pipelines.privacy import pseudonymise
from pipelines.report.changes import change_hover
from pipelines.warehouse import publish_serving_copy
from tests.conftest import REPO
from tests.dashboards import changes_db

PAGE = str(REPO / "dashboards" / "pages" / "changes.py")


def _run(db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def _table(at: AppTest, *columns: str) -> pl.DataFrame:
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return pl.from_pandas(element.value)
    raise AssertionError(f"no table with columns {columns}")


def test_ledger_rows_bundles_and_effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three rows, newest first: the bundle b2 (c2 and c3, seen between the snapshots of 03-09
    and 03-10 06:00, no actor), c4 (03-07, nothing measured for it) and c1 (alice's shares
    8 → 3, which applied rec-000000000001, confirmed). The bundle's estimates count once:
    wait_p90_h[64+] improved and occupancy no detectable effect, 2 estimates (not 4)."""
    at = _run(changes_db.build(tmp_path / "s.duckdb"), monkeypatch)
    ledger = _table(at, "When", "What", "Old → new", "Who")
    assert ledger.rows() == [
        ("between 2026-03-09 06:00 and 2026-03-10 06:00 UTC", "slurm-a", "config",
         "slurm.conf SchedulerParameters:bf_window; slurm.conf PriorityWeightFairShare",
         "60 → 2880; 1000 → 10000", "unknown (Slurm does not record it)",
         "scontrol show config", "2", "1 improved, 1 no detectable effect (of 2 estimates)", ""),
        ("between 2026-03-06 12:00 and 2026-03-07 12:00 UTC", "k8s-b", "cluster_queue",
         "clusterqueue=cq-prod nominalQuota[h100/nvidia.com/gpu]", "24 → 19",
         "unknown (the Kubernetes API keeps no history of it)", "kubectl get clusterqueues", "1",
         "no effect measured for it", ""),
        ("2026-03-05 10:00 UTC", "slurm-a", "association", "account=speech shares", "8 → 3",
         "alice", "sacctmgr list transactions", "1", "1 improved (of 1 estimates)",
         "rec-000000000001 (applied → measured → confirmed)"),
    ]  # fmt: skip


def test_effects_with_interval_placebo_mde_and_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One row per change or bundle × KPI × method, improved first. c1: jain +0.050 (95 % CI
    +0.020 to +0.080); window end 03-12 10:00 is 7 days after 03-05 10:00 → "a week", |0.05|
    ≥ MDE 0.03 → enough. Bundle b2 from 03-10 06:00 to 03-17 06:00 (7 days): wait −3.00 h,
    |−3| ≥ 2 → enough; occupancy +0.010 < MDE 0.050 → not enough, effects under 0.050 unseen."""
    at = _run(changes_db.build(tmp_path / "s.duckdb"), monkeypatch)
    effects = _table(at, "KPI", "Effect (95 % CI)", "Placebo p", "MDE", "Enough data?")
    bundle = "slurm.conf SchedulerParameters:bf_window: 60 → 2880; "
    bundle += "slurm.conf PriorityWeightFairShare: 1000 → 10000"
    assert effects.select(
        "Change", "KPI", "Effect (95 % CI)", "Verdict", "Placebo p", "MDE", "Enough data?"
    ).rows() == [
        ("account=speech shares: 8 → 3", "Jain's index of usage ÷ share",
         "+0.050 (95 % CI +0.020 to +0.080)", "improved", 0.03, "0.030",
         "a week is enough to tell"),
        (bundle, "p90 time to start, 64+ GPUs", "-3.00 h (95 % CI -5.00 to -1.00)", "improved",
         0.02, "2.00 h", "a week is enough to tell"),
        (bundle, "occupancy", "+0.010 (95 % CI -0.020 to +0.040)", "no detectable effect", 0.6,
         "0.050", "a week is not enough to tell: effects under 0.050 go unseen"),
    ]  # fmt: skip


def test_without_the_impact_view_effects_are_not_measured_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy without ``policy_change_impact``: the ledger is there, every row's effects read
    "effects not measured yet" and the page says so instead of failing."""
    at = _run(changes_db.build(tmp_path / "s.duckdb", impact=False), monkeypatch)
    ledger = _table(at, "When", "What", "Effects")
    assert ledger.height == 4  # no bundle known: c2 and c3 are rows of their own
    assert set(ledger["Effects"]) == {"effects not measured yet"}
    assert any(i.value.startswith("Effects not measured yet") for i in at.info)


def test_cluster_filter_keeps_that_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ?cluster=k8s-b only cq-prod's change is listed."""
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(changes_db.build(tmp_path / "s.duckdb")))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["cluster"] = "k8s-b"
    at.run()
    assert not at.exception
    assert _table(at, "When", "What")["Cluster"].to_list() == ["k8s-b"]


def test_the_page_is_in_the_navigation() -> None:
    """The entry point lists the page (title Changes)."""
    text = (REPO / "dashboards" / "app.py").read_text(encoding="utf-8")
    assert 'st.Page(PAGES / "changes.py", title="Changes"' in text


def test_actors_are_pseudonyms_in_the_published_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice made c1: the warehouse keeps her name; the serving copy published from it (as
    ``publish_serving_copy`` pseudonymises ``analytics.policy_changes.actor``) and so the
    page and the chart hover show HMAC-SHA256("planted", "alice")'s pseudonym, never alice."""
    monkeypatch.setenv("GOODPUT_PSEUDONYM_SALT", "planted")
    monkeypatch.delenv("GOODPUT_SHOW_USER_NAMES", raising=False)
    warehouse = changes_db.build(tmp_path / "warehouse.duckdb")
    copy = publish_serving_copy(warehouse, tmp_path / "serving.duckdb", detail_days=0)
    alias = pseudonymise("alice", salt="planted")
    at = _run(copy, monkeypatch)
    who = _table(at, "When", "Who")["Who"].to_list()
    assert who[-1] == alias and "alice" not in " ".join(who)
    marks = queries.change_marks(str(copy))
    assert marks is not None
    hover = change_hover(marks[0].row(0, named=True), marks[1])
    assert f"who: {alias}" in hover and "alice" not in hover
    with duckdb.connect(str(warehouse), read_only=True) as con:
        kept = con.execute("SELECT actor FROM policy_changes WHERE change_id = 'c1'").fetchall()
    assert kept == [("alice",)]


@pytest.mark.parametrize(
    ("status", "text"),
    [
        ("applied", "applied"),
        ("measured", "applied → measured"),
        ("confirmed", "applied → measured → confirmed"),
        ("regressed", "applied → measured → regressed"),
        ("proposed", "proposed"),
    ],
)
def test_a_recommendations_life_reads_as_its_steps(status: str, text: str) -> None:
    """Each status reads as the steps of its life so far (METRICS.md "Recommendation status")."""
    from pipelines.report.changes import life_text

    assert life_text(status) == text
