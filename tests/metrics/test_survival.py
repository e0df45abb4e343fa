"""Kaplan–Meier time to start with right-censoring (METRICS.md) on literal frames."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics import SPELLS_N, kaplan_meier, wait_percentiles_km, wait_spell_counts, wait_spells

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")


def _t(h: int, m: int = 0, day: int = 1) -> dt.datetime:
    return dt.datetime(2026, 1, day, h, m, tzinfo=UTC)


def _spells(durations: list[float], started: list[bool], group: str = "g") -> pl.LazyFrame:
    return pl.DataFrame(
        {"team": [group] * len(durations), "duration_s": durations, "started": started}
    ).lazy()


def test_product_limit_with_censoring_and_ties_events_before_censorings() -> None:
    """Starts at 10, 20, 20, 40 s; censored at 20 and 30 s (6 spells).
    t=10: 6 at risk, 1 start → S = 5/6.
    t=20: 5 at risk (the spell censored at 20 still counts: events come first), 2 starts →
          S = 5/6 × 3/5 = 1/2.
    t=30: 2 at risk, a censoring only → S stays 1/2.
    t=40: 1 at risk, 1 start → S = 0."""
    spells = _spells([10.0, 20.0, 20.0, 40.0, 20.0, 30.0], [True, True, True, True, False, False])
    expected = pl.DataFrame(
        {
            "duration_s": [10.0, 20.0, 30.0, 40.0],
            "at_risk": [6, 5, 2, 1],
            "events": [1, 2, 0, 1],
            "censored": [0, 1, 1, 0],
            "survival": [5 / 6, 0.5, 0.5, 0.0],
        }
    )
    assert_frame_equal(kaplan_meier(spells).collect(), expected)


def test_km_percentile_uses_censored_waits_and_naive_is_shown_beside() -> None:
    """Starts at 10, 20, 50 s; censored at 30 and 40 s.
    S: t=10 → 4/5 = 0.8; t=20 → 0.8 × 3/4 = 0.6; 30, 40 censored; t=50 (1 at risk) → 0.
    KM p50 = smallest t with S ≤ 0.5 = 50 s, p90 = 50 s. Naive (started only: 10, 20, 50):
    p50 = ⌈1.5⌉ = 2nd = 20 s, p90 = ⌈2.7⌉ = 3rd = 50 s."""
    spells = _spells([10.0, 20.0, 50.0, 30.0, 40.0], [True, True, True, False, False])
    out = wait_percentiles_km(spells, by=["team"], quantiles=(0.5, 0.9)).collect()
    expected = pl.DataFrame(
        {
            "team": ["g"],
            "spells": [5],
            "events": [3],
            "censored": [2],
            "excluded": [0],
            "km_p50_s": [50.0],
            "km_p50_reason": pl.Series([None], dtype=pl.String),
            "naive_p50_s": [20.0],
            "km_p90_s": [50.0],
            "km_p90_reason": pl.Series([None], dtype=pl.String),
            "naive_p90_s": [50.0],
        }
    )
    assert_frame_equal(out, expected)


def test_percentile_never_reached_is_null_with_the_reason() -> None:
    """One start at 10 s, censored at 20 and 30 s: S = 2/3 after 10 s and never lower, so p50
    is NULL and the reason names the lowest S (0.6667); the naive p50 is 10 s."""
    out = wait_percentiles_km(_spells([10.0, 20.0, 30.0], [True, False, False]), quantiles=(0.5,))
    row = out.collect().row(0, named=True)
    assert row["km_p50_s"] is None
    assert row["km_p50_reason"] == (
        "S(t) never reaches 0.5: lowest S(t) = 0.6667; the remaining waits are censored"
    )
    assert row["naive_p50_s"] == 10.0


def test_without_censoring_km_equals_the_naive_nearest_rank() -> None:
    """Starts at 5, 1, 3, 2, 4 s, nothing censored: S(t) = 1 − rank/5, so KM p50 = 3 = naive
    (3rd smallest), p90 = 5 = naive (5th), p99 = 5."""
    out = wait_percentiles_km(_spells([5.0, 1.0, 3.0, 2.0, 4.0], [True] * 5)).collect()
    r = out.row(0, named=True)
    assert (r["km_p50_s"], r["km_p90_s"], r["km_p99_s"]) == (3.0, 5.0, 5.0)
    assert (r["naive_p50_s"], r["naive_p90_s"], r["naive_p99_s"]) == (3.0, 5.0, 5.0)


def test_spells_censor_pending_at_as_of_and_cancelled_at_cancel_time() -> None:
    """as_of 02:00, all eligible at 00:00 unless said. Attempts: a 1-GPU start at 00:10 → event
    600 s; a 4-GPU start at 03:00 (after as_of) → censored at as_of, 7200 s; eligible unknown →
    excluded (NULLs); CPU-only → dropped. Pending: 2 GPUs still pending → censored 7200 s;
    1 GPU cancelled at 00:30 → censored 1800 s. Per bucket: "1" has 1 start and 1 censoring,
    "2-8" has 2 censorings and the excluded spell."""
    attempts = pl.DataFrame(
        {
            "cluster": ["c"] * 4,
            "gpus": [1.0, 4.0, 2.0, 0.0],
            "req_gpus": [1.0, 4.0, 2.0, 0.0],
            "eligible_at": [_t(0), _t(0), None, _t(0)],
            "start_at": [_t(0, 10), _t(3), _t(1), _t(1)],
            "end_at": [_t(1), _t(4), _t(2), _t(2)],
        },
        schema_overrides={"eligible_at": TS, "start_at": TS, "end_at": TS},
    ).lazy()
    pending = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "req_gpus": [2.0, 1.0],
            "eligible_at": [_t(0), _t(0)],
            "end_at": [None, _t(0, 30)],
            "state": ["PENDING", "CANCELLED"],
        },
        schema_overrides={"eligible_at": TS, "end_at": TS},
    ).lazy()
    spells = wait_spells(attempts, _t(2), pending=pending).collect()
    assert spells["duration_s"].to_list() == [600.0, 7200.0, None, 7200.0, 1800.0]
    assert spells["started"].to_list() == [True, False, None, False, False]
    per_bucket = (
        wait_percentiles_km(spells.lazy(), by=["bucket"], quantiles=(0.5,))
        .select("bucket", "spells", "events", "censored", "excluded")
        .collect()
    )
    assert per_bucket.rows() == [("1", 2, 1, 1, 0), ("2-8", 2, 0, 2, 1)]


def test_quantiles_must_lie_strictly_between_0_and_1() -> None:
    """p = 1 has no smallest t with S(t) ≤ 0 in general: refused with a ValueError."""
    with pytest.raises(ValueError, match="not in"):
        wait_percentiles_km(_spells([1.0], [True]), quantiles=(1.0,))


def test_counts_of_parts_give_the_same_curve_and_percentiles_as_the_spells() -> None:
    """The six spells of the product-limit test above, split into two parts of three
    (10 ✓, 20 ✓, 20 ✗ | 20 ✓, 40 ✓, 30 ✗), counted per part and the counts counted again:
    (10, ✓) 1, (20, ✓) 2, (20, ✗) 1, (30, ✗) 1, (40, ✓) 1. Weighted by those counts, the curve
    is the one computed by hand there (S = 5/6, 1/2, 1/2, 0) and the percentiles are those of the
    spells: KM p50 = 20 s (S(20) = 1/2 ≤ 0.5); naive over the starts 10, 20, 20, 40: p50 = ⌈2⌉ =
    2nd = 20 s, p90 = ⌈3.6⌉ = 4th = 40 s. A seventh, excluded spell (NULL) is counted apart."""
    spells = _spells([10.0, 20.0, 20.0, 20.0, 40.0, 30.0], [True, True, False, True, True, False])
    excluded = pl.DataFrame(
        {"team": ["g"], "duration_s": [None], "started": [None]},
        schema={"team": pl.String, "duration_s": pl.Float64, "started": pl.Boolean},
    ).lazy()
    parts = [spells.slice(0, 3), pl.concat([spells.slice(3, 3), excluded])]
    counts = wait_spell_counts(
        pl.concat([wait_spell_counts(p, ["team"]).collect() for p in parts]).lazy(), ["team"]
    ).collect()
    assert sorted(counts.rows(), key=lambda r: (r[1] is None, r[1] or 0, bool(r[2]))) == [
        ("g", 10.0, True, 1),
        ("g", 20.0, False, 1),
        ("g", 20.0, True, 2),
        ("g", 30.0, False, 1),
        ("g", 40.0, True, 1),
        ("g", None, None, 1),
    ]
    curve = kaplan_meier(counts.lazy(), weight=SPELLS_N).collect()
    assert curve["survival"].to_list() == [5 / 6, 0.5, 0.5, 0.0]
    assert curve["at_risk"].to_list() == [6, 5, 2, 1]
    whole = pl.concat([spells, excluded])
    for frame, weight in ((whole, None), (counts.lazy(), SPELLS_N)):
        r = wait_percentiles_km(frame, by=["team"], quantiles=(0.5, 0.9), weight=weight)
        row = r.collect().row(0, named=True)
        assert (row["spells"], row["events"], row["censored"], row["excluded"]) == (6, 4, 2, 1)
        assert (row["km_p50_s"], row["naive_p50_s"], row["naive_p90_s"]) == (20.0, 20.0, 40.0)
        assert row["km_p90_s"] == 40.0
