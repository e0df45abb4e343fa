"""Fairness (METRICS.md): water-filled fair allocation, entitlement, Jain's index, wait fairness."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics import (
    entitlement,
    fair_share_hourly,
    fairness_summary,
    jain_index,
    wait_fairness,
    water_fill,
)

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")
H = 3600.0


def _t(h: int, m: int = 0, day: int = 1) -> dt.datetime:
    return dt.datetime(2026, 1, day, h, m, tzinfo=UTC)


def _attempts(
    rows: list[tuple[str, float, dt.datetime, dt.datetime, dt.datetime]],
) -> pl.LazyFrame:
    """Rows of (team, gpus, eligible, start, end)."""
    n = len(rows)
    return pl.DataFrame(
        {
            "cluster": ["c"] * n,
            "team": [r[0] for r in rows],
            "gpus": [r[1] for r in rows],
            "req_gpus": [r[1] for r in rows],
            "eligible_at": [r[2] for r in rows],
            "start_at": [r[3] for r in rows],
            "end_at": [r[4] for r in rows],
        },
        schema_overrides={"eligible_at": TS, "start_at": TS, "end_at": TS},
    ).lazy()


def _capacity(hours: list[dt.datetime], gpus: float) -> pl.LazyFrame:
    n = len(hours)
    return pl.DataFrame(
        {
            "cluster": ["c"] * n,
            "hour": hours,
            "capacity_gpu_s": [gpus * H] * n,
            "down_gpu_s": [0.0] * n,
            "planned_down_gpu_s": [0.0] * n,
        },
        schema_overrides={"hour": TS},
    ).lazy()


def test_water_filling_gives_a_team_below_its_share_its_demand_and_redistributes() -> None:
    """Capacity 100; A (share 0.5) asks 10, B and C (0.25 each) ask 100. A gets its 10 (less
    than its 50); the remaining 90 is split 1:1 between B and C → 45 each. Group 2: capacity
    10, D (share 1) asks 50 → 10; E (share 0) asks 50 → 0; F (share 1) asks 0 → 0."""
    frame = pl.DataFrame(
        {
            "g": [1, 1, 1, 2, 2, 2],
            "team": ["A", "B", "C", "D", "E", "F"],
            "cap": [100.0, 100.0, 100.0, 10.0, 10.0, 10.0],
            "w": [0.5, 0.25, 0.25, 1.0, 0.0, 1.0],
            "d": [10.0, 100.0, 100.0, 50.0, 50.0, 0.0],
        }
    ).lazy()
    out = water_fill(frame, ["g"], capacity="cap", weight="w", demand="d").collect()
    assert out["fair_gpu_s"].to_list() == [10.0, 45.0, 45.0, 10.0, 0.0, 0.0]


def test_water_filling_gives_the_same_bits_whatever_the_rows_order() -> None:
    """Capacity 1, teams A, B, C with shares 0.1, 0.2, 0.3 asking 10, 20, 30 (all at d/w = 100,
    so none is met in full): each gets 1 × its share ÷ Σ shares. In floats 0.1 + 0.2 + 0.3 is
    0.6000000000000001 and 0.3 + 0.2 + 0.1 is 0.6, so a total taken in the rows' order gave
    other last bits for the rows reversed; the split is summed in its own order (d/w, then d,
    then w) and is the same bits both ways: A 1/6, B 1/3, C 1/2 within 1e-15."""
    frame = pl.DataFrame(
        {
            "g": [1, 1, 1],
            "team": ["A", "B", "C"],
            "cap": [1.0, 1.0, 1.0],
            "w": [0.1, 0.2, 0.3],
            "d": [10.0, 20.0, 30.0],
        }
    )

    def fill(rows: pl.DataFrame) -> list[float]:
        out = water_fill(rows.lazy(), ["g"], capacity="cap", weight="w", demand="d").collect()
        return out.sort("team")["fair_gpu_s"].to_list()

    forward, backward = fill(frame), fill(frame.reverse())
    assert forward == backward
    assert forward == pytest.approx([1 / 6, 1 / 3, 1 / 2], abs=1e-15)


def test_water_filling_meets_all_demand_when_capacity_suffices() -> None:
    """Capacity 100, demands 20 and 30 with shares 0.9 and 0.1: both fully met (50 ≤ 100)."""
    frame = pl.DataFrame({"g": [1, 1], "cap": [100.0] * 2, "w": [0.9, 0.1], "d": [20.0, 30.0]})
    out = water_fill(frame.lazy(), ["g"], capacity="cap", weight="w", demand="d").collect()
    assert out["fair_gpu_s"].to_list() == [20.0, 30.0]


def test_entitlement_debt_jain_and_unmet_from_attempts() -> None:
    """One hour, 4 GPUs (14400 GPU-s), shares a = b = 0.5. a runs 1 GPU all hour (U 3600,
    D 3600). b runs 2 GPUs all hour (U 7200) and has a 2-GPU job eligible at 00:00 that starts
    at 01:00 (pending 7200) → D 14400. Water-fill: a gets its demand 3600 (< 7200), b gets the
    remaining 10800. e_a = 1, e_b = 7200/10800 = 2/3; b's debt = (10800 − 7200)/3600 = 1
    GPU-h. Jain = (1 + 2/3)² / (2 × (1 + 4/9)) = 25/26. Unmet = 3600 / 14400 = 0.25."""
    att = _attempts(
        [
            ("a", 1.0, _t(0), _t(0), _t(1)),
            ("b", 2.0, _t(0), _t(0), _t(1)),
            ("b", 2.0, _t(0), _t(1), _t(2)),
        ]
    )
    shares = pl.DataFrame({"team": ["a", "b"], "share": [0.5, 0.5]}).lazy()
    hourly = fair_share_hourly(att, _capacity([_t(0)], 4.0), shares, _t(3))
    ent = entitlement(hourly).collect()
    expected = pl.DataFrame(
        {
            "team": ["a", "b"],
            "usage_gpu_s": [3600.0, 7200.0],
            "demand_gpu_s": [3600.0, 14400.0],
            "fair_gpu_s": [3600.0, 10800.0],
            "entitlement_ratio": [1.0, 2 / 3],
            "unmet_gpu_s": [0.0, 3600.0],
            "debt_gpu_h": [0.0, 1.0],
        }
    )
    assert_frame_equal(ent.drop("window_start", "window_end"), expected)
    assert ent["window_start"].to_list() == [dt.datetime(2025, 12, 29, tzinfo=UTC)] * 2
    summary = fairness_summary(ent.lazy()).collect().row(0, named=True)
    assert summary["teams"] == 2
    assert summary["fairness_index"] == pytest.approx(25 / 26)
    assert summary["unmet_entitlement"] == pytest.approx(0.25)


def test_a_share_that_changes_mid_window_applies_per_hour() -> None:
    """Two hours, 2 GPUs (7200 per hour); a and b each run 2 GPUs both hours (demand 7200 per
    hour each). Shares 1:1 from the start, then a's share drops to 0 from 01:00. Hour 0: 3600
    each; hour 1: a 0, b 7200. F_a = 3600, F_b = 10800."""
    att = _attempts([("a", 2.0, _t(0), _t(0), _t(2)), ("b", 2.0, _t(0), _t(0), _t(2))])
    shares = pl.DataFrame(
        {
            "team": ["a", "b", "a"],
            "share": [0.5, 0.5, 0.0],
            "valid_from": [dt.datetime(2025, 1, 1), dt.datetime(2025, 1, 1), _t(1)],
        },
        schema_overrides={"valid_from": TS},
    ).lazy()
    hourly = fair_share_hourly(att, _capacity([_t(0), _t(1)], 2.0), shares, _t(3)).collect()
    assert hourly.select("hour", "team", "fair_gpu_s").rows() == [
        (_t(0), "a", 3600.0),
        (_t(0), "b", 3600.0),
        (_t(1), "a", 0.0),
        (_t(1), "b", 7200.0),
    ]


def test_jain_is_one_for_equal_ratios_and_one_over_n_when_one_team_gets_everything() -> None:
    """(Σe)²/(n·Σe²): e = (0.7, 0.7, 0.7) → 1; e = (2, 0, 0) → 4 / (3 × 4) = 1/3."""
    df = pl.DataFrame({"g": [1, 1, 1, 2, 2, 2], "e": [0.7, 0.7, 0.7, 2.0, 0.0, 0.0]})
    out = df.group_by("g").agg(jain_index(pl.col("e")).alias("j")).sort("g")
    assert out["j"].to_list() == [pytest.approx(1.0), pytest.approx(1 / 3)]


def test_rolling_28_day_window_sums_the_28_days_ending_each_day() -> None:
    """Team a uses 1 GPU for 1 h on day 1 and 2 GPUs for 1 h on day 3 (4 GPUs of capacity,
    alone, so F = U). Windows end on days 1, 2, 3 with U = 3600, 3600, 10800 GPU-s; the window
    ending day 3 starts 27 days earlier."""
    att = _attempts(
        [
            ("a", 1.0, _t(0), _t(0), _t(1)),
            ("a", 2.0, _t(0, day=3), _t(0, day=3), _t(1, day=3)),
        ]
    )
    shares = pl.DataFrame({"team": ["a"], "share": [1.0]}).lazy()
    cap = _capacity([_t(0), _t(0, day=3)], 4.0)
    ent = entitlement(fair_share_hourly(att, cap, shares, _t(5, day=3)), window="rolling_28d")
    out = ent.collect()
    assert out["usage_gpu_s"].to_list() == [3600.0, 3600.0, 10800.0]
    assert out["fair_gpu_s"].to_list() == [3600.0, 3600.0, 10800.0]
    assert out["window_end"].to_list()[-1] == _t(0, day=4)
    assert out["window_start"].to_list()[-1] == dt.datetime(2025, 12, 7, tzinfo=UTC)


def test_wait_fairness_compares_team_mean_to_overall_mean_within_a_bucket() -> None:
    """Bucket 1 GPU: team a waits 100 and 300 s (mean 200), b waits 50 s; overall mean
    (100 + 300 + 50)/3 = 150 → a 200/150 = 4/3, b 50/150 = 1/3. Bucket 2-8: c waits 0 s →
    overall mean 0 → ratio NULL."""
    df = pl.DataFrame(
        {
            "cluster": ["c"] * 4,
            "team": ["a", "a", "b", "c"],
            "gpus": [1.0, 1.0, 1.0, 4.0],
            "eligible_at": [_t(0)] * 4,
            "wait_s": [100.0, 300.0, 50.0, 0.0],
        },
        schema_overrides={"eligible_at": TS},
    )
    out = wait_fairness(df.lazy()).collect()
    assert out.select("bucket", "team", "attempts").rows() == [
        ("1", "a", 2),
        ("1", "b", 1),
        ("2-8", "c", 1),
    ]
    ratios = out["wait_ratio"].to_list()
    assert ratios[:2] == [pytest.approx(4 / 3), pytest.approx(1 / 3)]
    assert ratios[2] is None


def test_shares_can_differ_per_pool() -> None:
    """Pools = clusters x and y, 2 GPUs each (7200 GPU-s); a and b each run 1 GPU for the hour
    in both. Registry: pool x a = b = 1; pool y only a. x: both get their demand 3600; y: a
    3600, b (no share there) 0. Summed over pools: F_a = 7200, F_b = 3600."""
    att = pl.concat(
        [
            _attempts([("a", 1.0, _t(0), _t(0), _t(1)), ("b", 1.0, _t(0), _t(0), _t(1))])
            .with_columns(pl.lit(c).alias("cluster"))
            .collect()
            for c in ("x", "y")
        ]
    ).lazy()
    cap = pl.concat(
        [_capacity([_t(0)], 2.0).with_columns(pl.lit(c).alias("cluster")) for c in ("x", "y")]
    )
    shares = pl.DataFrame(
        {"pool": ["x", "x", "y"], "team": ["a", "b", "a"], "share": [1.0, 1.0, 1.0]}
    ).lazy()
    hourly = fair_share_hourly(att, cap, shares, _t(2))
    per_pool = entitlement(hourly, by_pool=True).collect()
    assert per_pool.select("pool", "team", "fair_gpu_s").rows() == [
        ("x", "a", 3600.0),
        ("x", "b", 3600.0),
        ("y", "a", 3600.0),
        ("y", "b", 0.0),
    ]
    summed = entitlement(hourly).collect()
    assert summed.select("team", "fair_gpu_s").rows() == [("a", 7200.0), ("b", 3600.0)]


def test_usage_of_a_gang_is_the_gpus_its_pods_held() -> None:
    """Team a's gang: 16 GPUs, 00:10 - 02:10, its pods holding 8 GPUs 00:10 - 00:20, 16
    00:20 - 00:40 and 8 00:40 - 02:10 (``holds``). By hand its usage: hour 0 = 4,800 + 19,200
    + 9,600 = 33,600, hour 1 = 28,800, hour 2 = 4,800 (Σ 67,200 = its gpu_s; the attempt's
    16 GPUs over its span gave 48,000 / 57,600 / 9,600)."""
    att = pl.DataFrame(
        {
            "cluster": ["c"],
            "job_id": ["team-a/train"],
            "attempt": [0],
            "team": ["a"],
            "gpus": [16.0],
            "req_gpus": [16.0],
            "eligible_at": [_t(0, 10)],
            "start_at": [_t(0, 10)],
            "end_at": [_t(2, 10)],
        },
        schema_overrides={"eligible_at": TS, "start_at": TS, "end_at": TS},
    ).lazy()
    holds = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "job_id": ["team-a/train"] * 3,
            "attempt": [0] * 3,
            "start_at": [_t(0, 10), _t(0, 20), _t(0, 40)],
            "end_at": [_t(0, 20), _t(0, 40), _t(2, 10)],
            "gpus": [8.0, 16.0, 8.0],
        },
        schema_overrides={"start_at": TS, "end_at": TS},
    ).lazy()
    shares = pl.LazyFrame({"team": ["a"], "share": [1.0]})
    cap = _capacity([_t(0), _t(1), _t(2)], 16.0)
    hourly = fair_share_hourly(att, cap, shares, _t(3), holds=holds).collect()
    assert hourly.select("hour", "usage_gpu_s").rows() == [
        (_t(0), 33_600.0),
        (_t(1), 28_800.0),
        (_t(2), 4_800.0),
    ]
