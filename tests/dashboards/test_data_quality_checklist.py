"""The Overview's data-quality checklist counts every check that has a finding in the window."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from dashboards import queries
from dashboards.queries import Filters


def _serving(path: Path) -> str:
    """A serving copy with two clusters' hours and three findings: one of a listed check, one of
    a check outside the list (an open attempt ended by its job's requeue), one outside the
    window."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE jobs (cluster VARCHAR)")
        con.execute("CREATE TABLE occupancy_hourly (cluster VARCHAR, hour TIMESTAMPTZ)")
        con.execute(
            "INSERT INTO occupancy_hourly VALUES ('a', '2026-11-02 00:00+00'),"
            " ('b', '2026-11-02 00:00+00')"
        )
        con.execute(
            'CREATE TABLE data_quality (cluster VARCHAR, day DATE, "check" VARCHAR, value DOUBLE)'
        )
        con.execute(
            "INSERT INTO data_quality VALUES"
            " ('a', '2026-11-02', 'rejected_rows', 3),"
            " ('a', '2026-11-02', 'open_attempts_ended_by_requeue', 1),"
            " ('b', '2026-10-01', 'pods_ended_without_time', 2)"
        )
    return str(path)


def test_a_check_outside_the_list_lowers_the_score(tmp_path: Path) -> None:
    """9 listed checks + 1 found in the window, × 2 clusters = 20 pairs; cluster a has 2 with a
    finding (rejected_rows, open_attempts_ended_by_requeue): 18 of 20 clean. The finding of
    October is outside the window and adds no check. Before, the unlisted check was left out:
    17 of 18."""
    path = _serving(tmp_path / "serving.duckdb")
    f = Filters(
        start=dt.date(2026, 11, 1),
        end=dt.date(2026, 11, 7),
    )
    checks = queries.data_quality_checks(path, f)
    assert queries.data_quality_score(checks) == (18, 20)
    row = checks.filter(
        (checks["cluster"] == "a") & (checks["check"] == "open_attempts_ended_by_requeue")
    ).row(0, named=True)
    assert (row["findings"], row["value"]) == (1, 1.0)
    assert "pods_ended_without_time" not in checks["check"].to_list()
