"""Benchmark: a new day costs a day's work — incremental rebuild, range backfills, serving copy.

On a generated fleet (``generate_scale_fleet``: ``--gpus`` GPUs, ``--days`` days, 5-minute DCGM
text every day), in one command:

- ``backfill``: the raw sacct + DCGM assets of every day materialized as Dagster runs, once as one
  run per cluster-day (the old runner) and once as partition-range runs (``BackfillPolicy``; what
  ``goodput materialize`` does now), each into a fresh warehouse;
- ``rebuild``: days 1..D−2 loaded and built in full; then day D−1 loaded (its sacct and DCGM
  files) and built incrementally, beside a full rebuild of the same data (the baseline); then day
  D−2 re-loaded and rebuilt incrementally (the re-run case of issue 9). The generator writes the
  Slurm node events and sshare of the whole window into one file named for day D, which is
  loaded with the first days (a live state source delivers events as they happen);
- ``publish``: the serving copy as a whole-file copy (``serving_detail_days = 0``, the baseline)
  and as aggregates + 7 days of detail.

Prints one JSON object; ``--markdown`` also prints a table. Generated data lives under ``--root``
(default ``/tmp/goodput-incremental``), never in the repository.

Usage: ``flock /tmp/goodput-big.lock .venv/bin/python bench/bench_incremental.py --markdown``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._harness import write_bench_config  # noqa: E402 (after the sys.path line above)


def _timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _load_day(
    con: Any, cfg: Any, day: str, kinds: tuple[str, ...] = ("sacct", "slurm-state", "dcgm")
) -> int:
    from pipelines._file_source import files_for_day
    from pipelines.ingest import IngestOptions, ingest_file

    n = 0
    for c in cfg.clusters:
        for kind in kinds:
            for f in files_for_day(cfg.inputs_dir / c.name, kind, day):
                ingest_file(con, kind, f, IngestOptions(cluster=c.name, tz=c.timezone))
                n += 1
    return n


def _backfill(cfg: Any, days: list[str], *, per_partition: bool) -> float:
    """Materialize raw sacct + dcgm for ``days`` as Dagster runs into a fresh warehouse."""
    import dagster as dg
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    from pipelines.definitions import build_defs

    cfg.warehouse_path.unlink(missing_ok=True)
    defs = build_defs(cfg)
    assets = [defs.get_assets_def(dg.AssetKey(["raw", n])) for n in ("slurm_rows", "dcgm_samples")]
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    c = cfg.clusters[0].name
    t = time.perf_counter()
    with dg.instance_for_test() as instance:
        if per_partition:
            for d in days:
                key = dg.MultiPartitionKey({"cluster": c, "date": d})
                r = dg.materialize(assets, partition_key=key, instance=instance,
                                   resources=defs.resources, run_config=quiet)  # fmt: skip
                assert r.success
        else:
            start = dg.MultiPartitionKey({"cluster": c, "date": days[0]})
            end = dg.MultiPartitionKey({"cluster": c, "date": days[-1]})
            r = dg.materialize(
                assets, instance=instance, resources=defs.resources, run_config=quiet,
                tags={ASSET_PARTITION_RANGE_START_TAG: str(start),
                      ASSET_PARTITION_RANGE_END_TAG: str(end)},
            )  # fmt: skip
            assert r.success
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=256)
    ap.add_argument("--days", type=int, default=28)
    ap.add_argument("--root", type=Path, default=Path("/tmp/goodput-incremental"))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    from pipelines._file_source import partitions_with_input
    from pipelines.analytics.build import rebuild
    from pipelines.config import load_config
    from pipelines.sample_fleet._scale import ScaleConfig, generate_scale_fleet
    from pipelines.warehouse import connect, init_warehouse, publish_serving_copy

    data = args.root / f"fleet-{args.gpus}x{args.days}"
    work = args.root / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    scfg = ScaleConfig(gpus=args.gpus, days=args.days, dcgm_5min_days=args.days)
    if not (data / "planted.json").exists():
        generate_scale_fleet(data, scfg, progress=False)
    cfg = load_config(write_bench_config(work, data, scfg.cluster, "2025-01-01"))
    days = sorted(
        {d for _c, d in partitions_with_input({scfg.cluster: cfg.cluster_input_dir(scfg.cluster)})}
    )
    out: dict[str, Any] = {"gpus": args.gpus, "days": len(days)}

    out["backfill_per_partition_s"] = _backfill(cfg, days, per_partition=True)
    out["backfill_range_s"] = _backfill(cfg, days, per_partition=False)
    cfg.warehouse_path.unlink(missing_ok=True)

    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for d in days[:-2]:
            _load_day(con, cfg, d)
        _load_day(con, cfg, days[-1], ("slurm-state",))
        out["full_build_first_days_s"], _ = _timed(lambda: rebuild(con, cfg))
        _load_day(con, cfg, days[-2], ("sacct", "dcgm"))
    baseline = work / "full.duckdb"
    shutil.copyfile(cfg.warehouse_path, baseline)
    with connect(baseline) as con:
        out["full_rebuild_s"], _ = _timed(lambda: rebuild(con, cfg, full=True))
    with connect(cfg.warehouse_path) as con:
        out["incremental_new_day_s"], _ = _timed(lambda: rebuild(con, cfg))
        out["new_day_rows"] = {
            t: [d, i]
            for t, d, i in con.execute(
                "SELECT table_name, rows_deleted, rows_inserted FROM analytics.build_log"
                " WHERE build_id = (SELECT max(build_id) FROM analytics.build_log)"
                " AND mode IN ('days', 'jobs')"
            ).fetchall()
        }
        _load_day(con, cfg, days[-3])  # re-load a day that was already built
        out["incremental_rerun_day_s"], _ = _timed(lambda: rebuild(con, cfg))
        out["rerun_rows"] = {
            t: [d, i]
            for t, d, i in con.execute(
                "SELECT table_name, rows_deleted, rows_inserted FROM analytics.build_log"
                " WHERE build_id = (SELECT max(build_id) FROM analytics.build_log)"
                " AND mode <> 'full'"
            ).fetchall()
        }
        out["rows_total"] = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in out["rerun_rows"]
        }
    # Check: the incremental warehouse (new day, then a re-loaded day) equals a full rebuild of
    # a copy of it, every core and analytics table row for row (floats within 1e-9 relative).
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    out["incremental_equals_full_tables"] = assert_equals_full_rebuild(cfg, work)
    for detail in (0, 7):
        s, p = _timed(lambda d=detail: publish_serving_copy(
            cfg.warehouse_path, work / f"serving{d}.duckdb", detail_days=d))  # fmt: skip
        out[f"publish_detail{detail}_s"] = s
        out[f"publish_detail{detail}_mb"] = p.stat().st_size / 2**20
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out, indent=1))
    if args.markdown:
        r = out
        print("\n| step | goodput | baseline | ratio |\n|---|---|---|---|")
        print(
            f"| raw backfill, {r['days']} cluster-days (sacct + DCGM) | "
            f"{r['backfill_range_s']:.1f} s (range runs) | "
            f"{r['backfill_per_partition_s']:.1f} s (one run per partition) | "
            f"{r['backfill_range_s'] / r['backfill_per_partition_s']:.2f}× |"
        )
        print(
            f"| rebuild after a new day | {r['incremental_new_day_s']:.1f} s (incremental) | "
            f"{r['full_rebuild_s']:.1f} s (full) | "
            f"{r['incremental_new_day_s'] / r['full_rebuild_s']:.2f}× |"
        )
        print(
            f"| rebuild after re-loading one day | {r['incremental_rerun_day_s']:.1f} s | "
            f"{r['full_rebuild_s']:.1f} s (full) | "
            f"{r['incremental_rerun_day_s'] / r['full_rebuild_s']:.2f}× |"
        )
        print(f"| serving copy | {r['publish_detail7_s']:.1f} s, {r['publish_detail7_mb']:.0f} MB"
              f" (7 days of detail) | {r['publish_detail0_s']:.1f} s, "
              f"{r['publish_detail0_mb']:.0f} MB (all rows) | "
              f"{r['publish_detail7_mb'] / r['publish_detail0_mb']:.2f}× size |")  # fmt: skip


if __name__ == "__main__":
    main()
