"""Benchmark: every metric of the engine for one year of a 10,000-GPU fleet, against pandas.

A seeded synthetic fleet (:mod:`bench._synth_fleet`: 1,250 nodes × 8 GPUs, ~10M allocation
attempts, node down intervals, XID events, never-started jobs, per-job telemetry summaries and
hourly per-GPU aggregates — 87.6M rows, Parquet) is written by a process of its own; then each
side runs in a process of its own, so its peak memory (``VmHWM``) is its own:

- ``polars``: the real :mod:`metrics` functions as ``pipelines/analytics/build.py`` and
  ``metrics_build.py`` call them: down-time per hour, ``occupancy_hourly``, the waterfall (with
  ``allocated_idle`` from the hourly per-GPU telemetry, streamed from Parquet),
  ``check_conservation``, headline ratios, wait spells + Kaplan–Meier percentiles for the five
  groupings + naive percentiles, fair shares + weekly / rolling-28-day entitlement + summaries +
  wait fairness, node and rack reliability + ETTR, per-team telemetry from the job summaries,
  and the data-quality check;
- ``pandas``: the same computation written the obvious way (:mod:`bench._pandas_metrics`).

pandas cannot do the full year of the full fleet in reasonable time, so both sides also run on a
fraction of the fleet (``--fraction-nodes`` nodes, same distributions): the ratio is measured
like for like there, and the full-fleet pandas time is extrapolated linearly in the number of
nodes (stated as such in the output).

Per metric family, the time and the peak resident memory during that family (``VmHWM`` reset
through ``/proc/self/clear_refs`` before each family, so it includes the data already held) are
reported; ``load`` is reading the Parquet tables.

Usage: ``python bench/bench_metrics.py [--nodes 1250] [--fraction-nodes 50] [--data DIR]
[--keep]``. Prints one JSON line. Wrap in ``flock /tmp/goodput-big.lock`` (it needs ~8 GB).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import peak_rss_mb, run_side
from bench._synth_fleet import AS_OF, read_fleet, write_fleet

T = TypeVar("T")

#: θ for allocated_idle (goodput.toml ``idle_activity``).
THETA = 0.05

_TTS_GROUPS: tuple[tuple[str, ...], ...] = (
    ("source", "cluster", "bucket"),
    ("source", "cluster"),
    ("week", "source", "cluster", "bucket"),
    ("source", "cluster", "partition", "bucket"),
    ("source", "cluster", "team", "bucket"),
)


def reset_peak() -> None:
    """Reset ``VmHWM`` to the current RSS (Linux ≥ 4.0); a no-op elsewhere."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class Timer:
    """Runs metric families one after another, recording wall seconds, CPU seconds (user +
    system, all threads: on a shared machine wall time includes waiting for a core) and peak MB
    of each."""

    def __init__(self) -> None:
        self.families: dict[str, dict[str, float]] = {}
        self.t0 = time.perf_counter()
        self.c0 = _cpu_s()

    def run(self, name: str, fn: Callable[[], T]) -> T:
        reset_peak()
        t, c = time.perf_counter(), _cpu_s()
        out = fn()
        self.families[name] = {
            "seconds": time.perf_counter() - t, "cpu_s": _cpu_s() - c, "peak_mb": peak_rss_mb()
        }  # fmt: skip
        return out

    def result(self) -> dict[str, object]:
        return {
            "families": self.families,
            "seconds": time.perf_counter() - self.t0,
            "cpu_s": _cpu_s() - self.c0,
            "peak_mb": max(f["peak_mb"] for f in self.families.values()),
        }


def _down_hourly(down: pl.DataFrame, as_of: dt.datetime) -> pl.DataFrame:
    """``cluster, hour, down_gpu_s, planned_down_gpu_s`` as ``build._node_states`` makes it."""
    from pipelines.core import node_event_gpu_seconds_hourly

    start = down["start_at"].min()
    assert isinstance(start, dt.datetime)
    per = node_event_gpu_seconds_hourly(
        down.rename({"host": "node"}).lazy(),
        start.replace(minute=0, second=0, microsecond=0),
        as_of + dt.timedelta(hours=1),
        as_of,
    ).collect()
    wide = per.pivot(
        on="state", index=["cluster", "hour"], values="gpu_s", aggregate_function="sum"
    )
    return wide.select(
        "cluster",
        "hour",
        pl.col("down").fill_null(0.0).alias("down_gpu_s"),
        pl.col("planned").fill_null(0.0).alias("planned_down_gpu_s"),
    )


def run_polars(folder: Path) -> dict[str, object]:
    """Every metric family through :mod:`metrics`; returns timings and check figures."""
    from metrics import (
        check_conservation,
        entitlement,
        ettr_per_run,
        fair_share_hourly,
        fairness_summary,
        gpu_waterfall_hourly,
        headline_ratios,
        naive_wait_percentiles,
        node_reliability,
        occupancy_hourly,
        rack_reliability,
        wait_fairness,
        wait_percentiles_km,
        wait_spells,
    )
    from metrics.data_quality import gpu_tracking_gaps

    as_of = AS_OF
    tm = Timer()
    # The job summaries are scanned lazily where they are used (telemetry_summary).
    d: dict[str, pl.DataFrame] = tm.run("load", lambda: read_fleet(folder, skip=("job_summary",)))
    jobs, pending, nodes = d["jobs"], d["pending"], d["nodes"]
    checks: dict[str, float] = {}

    def occupancy() -> pl.DataFrame:
        down = _down_hourly(d["down"], as_of)
        return occupancy_hourly(jobs.lazy(), nodes.lazy(), as_of, down=down.lazy()).collect()

    occ: pl.DataFrame = tm.run("occupancy", occupancy)
    cap = occ.select("cluster", "hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s")
    checks["allocated_gpu_h"] = float(occ["allocated_gpu_s"].sum()) / 3600

    def waterfall() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        activity = (
            pl.scan_parquet(folder / "gpu_hourly" / "*.parquet")
            .filter(pl.col("hpc_job").is_not_null())
            .select(
                "cluster",
                pl.col("hpc_job").alias("job_id"),
                "attempt",
                pl.col("hour").alias("bucket"),
                "activity",
                pl.lit(1.0).alias("gpus"),
            )
        )
        wf = gpu_waterfall_hourly(
            jobs.lazy(), cap.lazy(), as_of, pending=pending.lazy(), activity=activity,
            xid_events=d["xid"].lazy(), idle_threshold=THETA, activity_bucket_s=3600.0,
        ).collect(engine="streaming")  # fmt: skip
        bad = check_conservation(wf.lazy()).collect()
        daily = headline_ratios(
            wf.lazy(), by=("cluster", pl.col("hour").dt.date().alias("day"))
        ).collect()
        return wf, bad, daily

    wf, bad, _daily = tm.run("waterfall", waterfall)
    checks["conservation_violations"] = bad.height
    for leaf, gs in wf.group_by("leaf").agg(pl.col("gpu_s").sum()).iter_rows():
        checks[f"wf_{leaf}_gpu_h"] = gs / 3600
    fleet = headline_ratios(wf.lazy(), by=()).collect().row(0, named=True)
    for k in ("occupancy", "goodput_ratio", "allocated_activity", "telemetry_coverage"):
        checks[k] = fleet[k]

    def time_to_start() -> list[pl.DataFrame]:
        # Only the grouping and survival columns are kept (projection pushed into the spells).
        cols = ["source", "cluster", "partition", "team", "week", "bucket", "duration_s",
                "started"]  # fmt: skip
        sp = wait_spells(jobs.lazy(), as_of, pending=pending.lazy()).select(cols).collect()
        out = []
        for by in _TTS_GROUPS:
            labelled = sp.with_columns(
                pl.col(c).cast(pl.String).fill_null("(none)")
                for c in by
                if c in ("partition", "team")
            )
            out.append(wait_percentiles_km(labelled.lazy(), by=by).collect())
        out.append(naive_wait_percentiles(jobs.lazy()).collect())
        return out

    tts: list[pl.DataFrame] = tm.run("time_to_start", time_to_start)
    overall = tts[1].row(0, named=True)
    for k in ("spells", "censored", "km_p50_s", "km_p90_s", "km_p99_s", "naive_p50_s"):
        checks[f"tts_{k}"] = overall[k]

    def fairness() -> list[pl.DataFrame]:
        shares = d["shares"]
        fh = fair_share_hourly(
            jobs.lazy(), cap.lazy(), shares.lazy(), as_of, pending=pending.lazy()
        ).collect()
        out = [fh]
        for window in ("week", "rolling_28d"):
            per_cluster = entitlement(fh.lazy(), window=window, by_pool=True).collect()  # type: ignore[arg-type]
            fleet = entitlement(fh.lazy(), window=window, by_pool=False).collect()  # type: ignore[arg-type]
            if window == "rolling_28d":
                per_cluster = per_cluster.filter(pl.col("window_end").dt.weekday() == 1)
                fleet = fleet.filter(pl.col("window_end").dt.weekday() == 1)
            out += [per_cluster, fleet]
            out.append(fairness_summary(per_cluster.lazy()).collect())
            out.append(fairness_summary(fleet.lazy()).collect())
        out.append(wait_fairness(jobs.lazy()).collect())
        return out

    fair: list[pl.DataFrame] = tm.run("fairness", fairness)
    checks["fair_gpu_h"] = float(fair[0]["fair_gpu_s"].sum()) / 3600
    checks["pending_gpu_h"] = float(fair[0]["pending_gpu_s"].sum()) / 3600
    checks["weekly_jain_mean"] = float(fair[3]["fairness_index"].mean())  # type: ignore[arg-type]

    def reliability() -> list[pl.DataFrame]:
        node = node_reliability(
            jobs.lazy(), as_of, xid_events=d["xid"].lazy(),
            down_intervals=d["down"].lazy(), nodes=nodes.lazy(),
        ).collect()  # fmt: skip
        rack = rack_reliability(node.lazy()).collect()
        ettr = ettr_per_run(
            jobs.lazy(), as_of, pending=pending.lazy(), xid_events=d["xid"].lazy()
        ).collect()
        return [node, rack, ettr]

    rel: list[pl.DataFrame] = tm.run("reliability", reliability)
    checks["lost_gpu_h"] = float(rel[0]["lost_gpu_s"].sum()) / 3600
    checks["infra_lost_gpu_h"] = float(rel[0]["infra_lost_gpu_s"].sum()) / 3600
    checks["down_h"] = float(rel[0]["down_s"].sum()) / 3600
    checks["ettr_mean"] = float(rel[2]["ettr"].mean())  # type: ignore[arg-type]

    def telemetry() -> pl.DataFrame:
        return (
            pl.scan_parquet(folder / "job_summary.parquet")
            .group_by("cluster", "team")
            .agg(
                pl.col("gpu_s").sum(),
                pl.col("observed_gpu_s").sum(),
                pl.col("idle_gpu_s").sum(),
                ((pl.col("mean_activity") * pl.col("observed_gpu_s")).sum()
                 / pl.col("observed_gpu_s").sum()).alias("allocated_activity"),
            )
            .with_columns((pl.col("idle_gpu_s") / 3600).alias("idle_gpu_h"))
            .sort("idle_gpu_s", descending=True)
            .collect()
        )  # fmt: skip

    tel: pl.DataFrame = tm.run("telemetry_summary", telemetry)
    checks["idle_gpu_h"] = float(tel["idle_gpu_s"].sum()) / 3600

    def data_quality() -> pl.DataFrame:
        parts = jobs.filter(pl.col("gpus") > 0).select("cluster", "partition").unique()
        return gpu_tracking_gaps(jobs.lazy(), parts.lazy()).collect()

    dq: pl.DataFrame = tm.run("data_quality", data_quality)
    checks["dq_findings"] = dq.height
    res = tm.result()
    res["rows"] = {"attempts": jobs.height, "pending": pending.height,
                   "gpu_hourly": pl.scan_parquet(folder / "gpu_hourly" / "*.parquet")
                   .select(pl.len()).collect().item(),
                   "job_summary": pl.scan_parquet(folder / "job_summary.parquet")
                   .select(pl.len()).collect().item(),
                   "waterfall": wf.height}  # fmt: skip
    res["checks"] = checks
    return res


def _child(kind: str, folder: str) -> None:
    if kind == "polars":
        res = run_polars(Path(folder))
    else:
        from bench._pandas_metrics import run_pandas

        res = run_pandas(Path(folder))
    res["kind"] = kind
    print(json.dumps(res, default=float))


def _run(kind: str, folder: Path) -> dict[str, object]:
    out: dict[str, object] = run_side(__file__, "--child", kind, str(folder))
    return out


def _generate(folder: Path, nodes: int) -> float:
    t0 = time.perf_counter()
    if not (folder / "jobs.parquet").exists():
        subprocess.run(
            [sys.executable, __file__, "--generate", str(folder), str(nodes)], check=True
        )
    return time.perf_counter() - t0


def main() -> None:
    """Generate (or reuse) the fleets, measure each side in a subprocess, print JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1250)
    ap.add_argument("--fraction-nodes", type=int, default=50)
    ap.add_argument("--data", type=Path, default=Path("/tmp/goodput-bench-metrics"))
    ap.add_argument("--keep", action="store_true", help="keep (and reuse) the generated data")
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "DIR"))
    ap.add_argument("--generate", nargs=2, metavar=("DIR", "NODES"))
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.generate:
        write_fleet(Path(args.generate[0]), int(args.generate[1]))
        return
    full_dir = args.data / f"nodes{args.nodes}"
    frac_dir = args.data / f"nodes{args.fraction_nodes}"
    out: dict[str, object] = {"nodes": args.nodes, "fraction_nodes": args.fraction_nodes}
    try:
        out["generate_fraction_s"] = _generate(frac_dir, args.fraction_nodes)
        out["fraction_pandas"] = _run("pandas", frac_dir)
        out["fraction_polars"] = _run("polars", frac_dir)
        fp, fpl = out["fraction_pandas"], out["fraction_polars"]
        assert isinstance(fp, dict) and isinstance(fpl, dict)
        out["fraction_ratio"] = fp["seconds"] / fpl["seconds"]
        if not args.skip_full:
            out["generate_full_s"] = _generate(full_dir, args.nodes)
            out["full_polars"] = _run("polars", full_dir)
            full = out["full_polars"]
            assert isinstance(full, dict)
            scale = args.nodes / args.fraction_nodes
            out["pandas_full_extrapolated_s"] = fp["seconds"] * scale
            out["full_ratio_extrapolated"] = fp["seconds"] * scale / full["seconds"]
    finally:
        if not args.keep:
            shutil.rmtree(args.data, ignore_errors=True)
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
