"""Naive time-to-start percentiles and size buckets (METRICS.md) on literal frames."""

from __future__ import annotations

import polars as pl

from metrics import naive_wait_percentiles, nearest_rank, size_bucket


def test_size_buckets_follow_metrics_md() -> None:
    """0.5→<1, 1→1, 2 and 8→2-8, 9→9-63, 64→64-255, 1024→>=1024, 0→NULL (CPU-only)."""
    gpus = pl.Series("g", [0.5, 1.0, 2.0, 8.0, 9.0, 63.0, 64.0, 255.0, 256.0, 1024.0, 0.0])
    out = pl.select(size_bucket(pl.lit(gpus))).to_series().to_list()
    assert out == ["<1", "1", "2-8", "2-8", "9-63", "9-63", "64-255", "64-255", "256-1023",
                   ">=1024", None]  # fmt: skip


def test_nearest_rank_percentile() -> None:
    """Values 1..10: p50 = 5th smallest = 5; p90 = 9th = 9; p99 = ceil(9.9) = 10th = 10."""
    df = pl.DataFrame({"v": [float(x) for x in range(10, 0, -1)]})
    out = df.select(
        nearest_rank(pl.col("v"), 0.5).alias("p50"),
        nearest_rank(pl.col("v"), 0.9).alias("p90"),
        nearest_rank(pl.col("v"), 0.99).alias("p99"),
    ).row(0)
    assert out == (5.0, 9.0, 10.0)


def test_naive_percentiles_per_bucket_exclude_cpu_only_and_unknown_eligible() -> None:
    """1-GPU waits 10, 20, 30 s → p50 20, p90 30; an 8-GPU wait of 100 s is its own bucket;
    the CPU-only attempt and the one with unknown eligible time are excluded; the all-bucket
    row has 4 jobs with p50 = 2nd smallest of (10, 20, 30, 100) = 20 and p90 = 4th = 100."""
    df = pl.DataFrame(
        {
            "source": ["slurm"] * 6,
            "cluster": ["c"] * 6,
            "gpus": [1.0, 1.0, 1.0, 8.0, 0.0, 2.0],
            "wait_s": [10.0, 20.0, 30.0, 100.0, 5.0, None],
        }
    )
    out = naive_wait_percentiles(df.lazy()).collect()
    rows = {r["bucket"]: r for r in out.iter_rows(named=True)}
    assert set(rows) == {"1", "2-8", None}
    assert (rows["1"]["jobs"], rows["1"]["naive_p50_s"], rows["1"]["naive_p90_s"]) == (
        3,
        20.0,
        30.0,
    )
    assert (rows["2-8"]["jobs"], rows["2-8"]["naive_p99_s"]) == (1, 100.0)
    assert (rows[None]["jobs"], rows[None]["naive_p50_s"], rows[None]["naive_p90_s"]) == (
        4,
        20.0,
        100.0,
    )


def test_nearest_rank_of_a_group_without_values_is_null() -> None:
    """A group whose values are all NULL gets NULL, not an error."""
    df = pl.DataFrame({"g": [1, 1, 2], "v": [1.0, 2.0, None]})
    out = df.group_by("g").agg(nearest_rank(pl.col("v"), 0.5).alias("p50")).sort("g")
    assert out["p50"].to_list() == [1.0, None]
