"""Benchmark: Kubernetes node states for a year of a 10,000-GPU cluster (1,250 × 8-GPU nodes,
one Node snapshot per node and day = 456,250 snapshot rows).

goodput: :func:`metrics.k8s_node_states.k8s_node_states_hourly` (intervals collected once; the
cluster's GPUs per state as a step function before the hourly split). Baseline, in the same
process: the obvious polars version — every node interval split into hours by
:func:`metrics.occupancy.allocated_gpu_seconds_hourly`, once per output (capacity, down,
planned_down), each recomputing the intervals. Both must give the same GPU-seconds.

    .venv/bin/python bench/bench_k8s_node_states.py [--nodes 1250 --days 365]
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import time

import numpy as np
import polars as pl

from metrics.k8s_node_states import k8s_node_intervals, k8s_node_states_hourly
from metrics.occupancy import allocated_gpu_seconds_hourly

_UTC = pl.Datetime("us", "UTC")


def snapshots(nodes: int, days: int, seed: int = 1) -> pl.DataFrame:
    """Daily snapshots at 23:59:59; 0.3 % NotReady (since 3 h before), 0.2 % cordoned."""
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    rng = np.random.default_rng(seed)
    at = [t0 + dt.timedelta(days=d + 1, seconds=-1) for d in range(days)]
    n = nodes * days
    return pl.DataFrame({
        "cluster": "k", "name": np.repeat([f"n{i:05d}" for i in range(nodes)], days),
        "snapshot_at": pl.Series(at * nodes).cast(_UTC), "gpu_allocatable": 8.0,
        "gpu_capacity": 8.0, "ready": rng.random(n) > 0.003,
        "unschedulable": rng.random(n) < 0.002,
    }).with_columns(
        (pl.col("snapshot_at") - pl.duration(hours=3)).alias("ready_since"),
        pl.lit(None, pl.String).alias("taints"), pl.lit(t0).cast(_UTC).alias("created_at"),
        pl.lit(None, _UTC).alias("deleted_at"),
    )  # fmt: skip


def baseline(snaps: pl.LazyFrame, as_of: dt.datetime) -> tuple[float, float, float]:
    out = []
    for state in (None, "down", "planned_down"):
        iv = k8s_node_intervals(snaps, as_of)
        if state is not None:
            iv = iv.filter(pl.col("state") == state)
        hourly = allocated_gpu_seconds_hourly(iv, as_of).collect()
        out.append(float(hourly["allocated_gpu_s"].sum()))
    return out[0], out[1], out[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1250)
    ap.add_argument("--days", type=int, default=365)
    a = ap.parse_args()
    snaps = snapshots(a.nodes, a.days).lazy()
    as_of = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=a.days)
    t = time.perf_counter()
    base = baseline(snaps, as_of)
    t_base = time.perf_counter() - t
    t = time.perf_counter()
    reg, down = k8s_node_states_hourly(snaps, as_of)
    r, d = pl.collect_all([reg, down])
    t_ours = time.perf_counter() - t
    ours = tuple(
        float(f[c].sum())
        for f, c in ((r, "capacity_gpu_s"), (d, "down_gpu_s"), (d, "planned_down_gpu_s"))
    )
    assert all(abs(x - y) <= 1e-6 * max(1.0, y) for x, y in zip(ours, base, strict=True)), (
        ours, base,
    )  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"| snapshot rows | {a.nodes * a.days:,} | cluster-hours | {r.height:,} |")
    print(f"| baseline (per node-hour, 3 passes) | {t_base:.2f} s |")
    print(f"| goodput k8s_node_states_hourly | {t_ours:.2f} s |")
    print(f"| ratio | {t_base / t_ours:.1f}× faster | peak RSS (process) | {peak:.2f} GB |")
    print(f"| GPU-h capacity / down / planned | {ours[0] / 3600:,.0f} / {ours[1] / 3600:,.0f} / "
          f"{ours[2] / 3600:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
