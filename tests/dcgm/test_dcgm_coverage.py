"""The ``telemetry_coverage_team_daily`` view on a literal case (METRICS.md: telemetry coverage
= observed allocated ÷ allocated GPU-seconds), per cluster, team and UTC day."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest

from metrics.holds import HOLD_SCHEMA
from pipelines.warehouse.sql import SQL_DIR
from tests.conftest import Materialized

UTC = dt.UTC


def _t(day: int, h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, h, m, tzinfo=UTC)


AS_OF = _t(3, 1)

JOBS = pl.DataFrame(
    {
        "cluster": ["c", "c", "c"],
        "job_id": ["A", "B", "C"],
        "attempt": [0, 0, 0],
        "team": ["x", "y", "x"],
        "gpus": [2.0, 3 / 7, 1.0],
        "start_at": [_t(2, 23, 50), _t(2, 10, 2), _t(3, 0)],
        "end_at": [_t(3, 0, 10), _t(2, 10, 10), None],
        "as_of": [AS_OF] * 3,
    },
    schema_overrides={c: pl.Datetime("us", "UTC") for c in ("start_at", "end_at", "as_of")},
)

# (job, bucket, GPU fraction seen, attribution)
_ROWS = [
    ("A", _t(2, 23, 50), 1.0, "gres_index"),
    ("A", _t(2, 23, 50), 1.0, "gres_index"),
    ("A", _t(2, 23, 55), 1.0, "gres_index"),
    ("A", _t(3, 0, 0), 1.0, "whole_node"),
    ("A", _t(3, 0, 0), 1.0, "whole_node"),
    ("B", _t(2, 10, 0), 3 / 7, "label_hpc_job"),
    ("B", _t(2, 10, 5), 3 / 7, "label_hpc_job"),
    ("C", _t(3, 0, 0), 1.0, "pod"),
    ("C", _t(3, 0, 0), 1.0, "pod"),
    (None, _t(2, 10, 0), 1.0, "node_group"),
]
ACTIVITY = pl.DataFrame(
    {
        "cluster": ["c"] * len(_ROWS),
        "job_id": [r[0] for r in _ROWS],
        "attempt": [0 if r[0] else None for r in _ROWS],
        "bucket": [r[1] for r in _ROWS],
        "gpus": [r[2] for r in _ROWS],
        "attribution": [r[3] for r in _ROWS],
        "activity": [0.5] * len(_ROWS),
    },
    schema_overrides={"bucket": pl.Datetime("us", "UTC"), "attempt": pl.Int64()},
)


def _coverage(
    jobs: pl.DataFrame, activity: pl.DataFrame, holds: pl.DataFrame | None = None
) -> dict[tuple[str | None, dt.date], tuple[float, float, float]]:
    """``telemetry_coverage_team_daily`` of cluster ``c`` over ``jobs`` (with ``as_of``),
    ``activity`` (``gpu_activity`` rows) and ``holds`` (``core.job_holds`` rows; None: none),
    by (team, day): allocated, observed, coverage."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA core; CREATE SCHEMA analytics")
    pieces = pl.DataFrame(schema=HOLD_SCHEMA) if holds is None else holds  # noqa: F841
    # the cut-off is stored once per cluster (core.build_cutoffs), not in the rows
    con.execute("CREATE TABLE core.jobs AS SELECT * EXCLUDE (as_of) FROM jobs")
    con.execute(
        "CREATE TABLE core.build_cutoffs AS SELECT cluster, max(as_of) AS as_of FROM jobs "
        "GROUP BY cluster"
    )
    con.execute("CREATE TABLE core.job_holds AS SELECT * FROM pieces")
    con.execute("CREATE TABLE analytics.gpu_activity AS SELECT * FROM activity")
    con.execute((SQL_DIR / "views" / "job_holds.sql").read_text())
    con.execute((SQL_DIR / "views" / "telemetry_coverage_team_daily.sql").read_text())
    rows = con.execute(
        "SELECT team, day, allocated_gpu_s, observed_gpu_s, telemetry_coverage, as_of"
        " FROM telemetry_coverage_team_daily WHERE cluster = 'c'"
    ).fetchall()
    con.close()
    assert {r[5] for r in rows} == set(jobs["as_of"])
    return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}


@pytest.fixture
def coverage() -> dict[tuple[str | None, dt.date], tuple[float, float, float]]:
    return _coverage(JOBS, ACTIVITY)


def test_team_day_values(
    coverage: dict[tuple[str | None, dt.date], tuple[float, float, float]],
) -> None:
    """Hand computation (GPU-seconds):

    - A (x, 2 GPUs, 11-02 23:50 → 11-03 00:10): allocated 2 × 600 = 1200 on each day;
      observed 23:50 2 GPUs × 300 + 23:55 1 GPU × 300 = 900 on 11-02, 00:00 2 × 300 = 600 on
      11-03 (00:05 unseen).
    - B (y, 3g slice = 3/7 GPU, 10:02 → 10:10): allocated 3/7 × 480 = 205.714; observed
      3/7 × (180 of the 10:00 bucket + 300 of 10:05) = 205.714 → coverage 1.
    - C (x, 1 GPU, running from 11-03 00:00, as_of 01:00): allocated 3600; the 00:00 bucket
      shows 2 series (duplicates), capped at its 1 GPU: observed 300.
    - the node_group row names no attempt: not observed for anyone.

    11-02: x 900 / 1200 = 0.75, y 1.0, all (1105.714 / 1405.714) = 0.78659;
    11-03: x (600 + 300) / (1200 + 3600) = 0.1875 = all.
    """
    d2, d3 = dt.date(2026, 11, 2), dt.date(2026, 11, 3)
    b = 3 / 7 * 480
    expected = {
        ("x", d2): (1200.0, 900.0, 0.75),
        ("y", d2): (b, b, 1.0),
        (None, d2): (1200 + b, 900 + b, (900 + b) / (1200 + b)),
        ("x", d3): (4800.0, 900.0, 0.1875),
        (None, d3): (4800.0, 900.0, 0.1875),
    }
    assert set(coverage) == set(expected)
    for key, values in expected.items():
        assert coverage[key] == pytest.approx(values), key


def test_a_gang_counts_the_pieces_of_gpus_it_held() -> None:
    """Gang G (team y, 16 GPUs, 11-02 23:40 → 11-03 00:20) held 16 GPUs 23:40 - 23:50, then 8
    (a worker ended; its pieces, ``core.job_holds``), samples naming 16 GPUs in the 23:40,
    23:50 and 00:00 buckets. As the waterfall counts it (METRICS.md "GPU holding"):

    - 11-02: allocated 16 × 600 + 8 × 600 = 14,400; observed 16 × 300 (23:40) + min(16, 8)
      × 300 (23:50) = 7,200; coverage 0.5 (16 GPUs over its span: 19,200 and 9,600);
    - 11-03: allocated 8 × 1,200 = 9,600; observed 8 × 300 = 2,400 (span: 19,200, 4,800).
    """
    utc = pl.Datetime("us", "UTC")
    jobs = pl.DataFrame(
        {"cluster": ["c"], "job_id": ["G"], "attempt": [0], "team": ["y"], "gpus": [16.0],
         "start_at": [_t(2, 23, 40)], "end_at": [_t(3, 0, 20)], "as_of": [AS_OF]},
        schema_overrides={c: utc for c in ("start_at", "end_at", "as_of")},
    )  # fmt: skip
    activity = pl.DataFrame(
        {"cluster": ["c"] * 3, "job_id": ["G"] * 3, "attempt": [0] * 3,
         "bucket": [_t(2, 23, 40), _t(2, 23, 50), _t(3, 0, 0)], "gpus": [16.0] * 3,
         "attribution": ["pod"] * 3, "activity": [0.5] * 3},
        schema_overrides={"bucket": utc, "attempt": pl.Int64()},
    )  # fmt: skip
    holds = pl.DataFrame(
        [("c", "G", 0, _t(2, 23, 40), _t(2, 23, 50), 16.0),
         ("c", "G", 0, _t(2, 23, 50), _t(3, 0, 20), 8.0)],
        schema=HOLD_SCHEMA, orient="row",
    )  # fmt: skip
    d2, d3 = dt.date(2026, 11, 2), dt.date(2026, 11, 3)
    got = _coverage(jobs, activity, holds)
    for team in ("y", None):
        assert got[(team, d2)] == pytest.approx((14_400.0, 7_200.0, 0.5))
        assert got[(team, d3)] == pytest.approx((9_600.0, 2_400.0, 0.25))
    spans = _coverage(jobs, activity)
    assert spans[("y", d2)] == pytest.approx((19_200.0, 9_600.0, 0.5))
    assert spans[("y", d3)] == pytest.approx((19_200.0, 4_800.0, 0.25))


@pytest.mark.slow
def test_all_teams_row_matches_the_waterfall_coverage(materialized: Materialized) -> None:
    """On the bundled fleet, the all-teams rows (team NULL) of ``telemetry_coverage_team_daily``
    equal ``telemetry_coverage_daily`` (from the waterfall's observed GPU-seconds) day by day,
    and each day's team rows sum to the all-teams row."""
    with duckdb.connect(str(materialized.cfg.serving_path), read_only=True) as con:
        pairs = con.execute(
            "SELECT d.cluster, d.day, d.telemetry_coverage, t.telemetry_coverage"
            " FROM telemetry_coverage_daily d JOIN telemetry_coverage_team_daily t"
            " ON t.cluster = d.cluster AND t.day = d.day AND t.team IS NULL"
            " WHERE d.allocated_gpu_s > 0"
        ).fetchall()
        sums = con.execute(
            "SELECT a.allocated_gpu_s, a.observed_gpu_s, s.allocated, s.observed"
            " FROM telemetry_coverage_team_daily a JOIN ("
            "  SELECT cluster, day, sum(allocated_gpu_s) AS allocated,"
            "   sum(observed_gpu_s) AS observed FROM telemetry_coverage_team_daily"
            "  WHERE team IS NOT NULL GROUP BY ALL) s USING (cluster, day)"
            " WHERE a.team IS NULL"
        ).fetchall()
    assert len(pairs) >= 4
    for _c, _d, waterfall, ours in pairs:
        assert ours == pytest.approx(waterfall, rel=1e-6)
    assert sums
    for alloc, obs, alloc_sum, obs_sum in sums:
        assert (alloc, obs) == pytest.approx((alloc_sum, obs_sum))
