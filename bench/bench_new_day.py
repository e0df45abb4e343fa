"""Benchmark: a full rebuild, then one new day and an incremental rebuild, in wall and CPU seconds.

Paired runs of two checkouts on one shared machine: each side starts from a copy of one ingested
warehouse (every generated file but the window's last day, loaded once by ``prepare``; the raw
tables do not depend on the build code), runs a full rebuild, loads the held day's sacct and
hourly DCGM files and rebuilds incrementally. ``prepare`` settles the loaded warehouse's vacuum
(``bench._harness.settle_vacuum``), as a warehouse loaded day by day is. CPU seconds (user +
system, all threads, of the process) vary less with other processes' load than wall seconds, so
the ratio incremental ÷ full is given in both.

Usage (the year from ``bench_scale.py --sizes 1000x365 --stages generate --keep``)::

    python bench/bench_new_day.py prepare --data ROOT/1000x365/data --work /tmp/new-day
    # then, alternating the checkouts, each with its own interpreter:
    (cd CHECKOUT && .venv/bin/python /path/to/bench/bench_new_day.py side \\
        --data ROOT/1000x365/data --work /tmp/new-day --out results.jsonl)

Each ``side`` appends one JSON line: full and incremental wall and CPU seconds, their ratios, the
rows the incremental build deleted and inserted in ``core.jobs`` and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

CLUSTER = "scale-a"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    """Run ``prepare`` or one ``side`` (the checkout is the working directory)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("prepare", "side"))
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    sys.path.insert(0, os.getcwd())  # the checkout measured, not this file's
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    inputs = a.data / "inputs" / CLUSTER
    opts = IngestOptions(cluster=CLUSTER, tz="UTC")
    day = sorted((inputs / "sacct").glob("*.psv"))[-1].stem[-10:]
    ingested = a.work / "ingested.duckdb"  # not raw.duckdb: the catalog would shadow schema raw
    if a.mode == "prepare":
        a.work.mkdir(parents=True, exist_ok=True)
        with connect(ingested) as con:
            init_warehouse(con)
            for kind, pattern in (("sacct", "sacct/*.psv"),
                                  ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet")):  # fmt: skip
                for f in sorted(inputs.glob(pattern)):
                    if day not in str(f.relative_to(a.data)):
                        ingest_file(con, kind, f, opts)
        # A history loaded in one go leaves its vacuum to the later checkpoints (the new day's
        # commit merged raw.dcgm_hourly's under-full row groups: 3-5 s of a year's new day that a
        # warehouse loaded day by day does not pay); settled here, as bench_history.py does.
        from bench._harness import settle_vacuum

        print(json.dumps({"settle": settle_vacuum(ingested)}))
        return
    from bench._harness import write_bench_config
    from pipelines.analytics.build import rebuild
    from pipelines.config import load_config

    side = a.work / "side"
    shutil.rmtree(side, ignore_errors=True)
    side.mkdir()
    shutil.copyfile(ingested, side / "warehouse.duckdb")
    cfg = load_config(write_bench_config(side, a.data, CLUSTER, "2025-01-01"))
    res: dict[str, object] = {"checkout": os.getcwd(), "day": day}
    with connect(side / "warehouse.duckdb") as con:
        t, c = time.perf_counter(), _cpu()
        rebuild(con, cfg, full=True)
        full_wall, full_cpu = time.perf_counter() - t, _cpu() - c
        for kind, f in [("sacct", f) for f in sorted(inputs.glob(f"sacct/*{day}.psv"))] + [
            ("dcgm-hourly", f) for f in sorted(inputs.glob(f"dcgm_hourly/date={day}/*"))
        ]:
            ingest_file(con, kind, f, opts)
        t, c = time.perf_counter(), _cpu()
        rebuild(con, cfg)
        inc_wall, inc_cpu = time.perf_counter() - t, _cpu() - c
        (deleted, inserted), = con.execute(
            "SELECT rows_deleted, rows_inserted FROM analytics.build_log"
            " WHERE table_name = 'core.jobs' ORDER BY build_id DESC LIMIT 1"
        ).fetchall()  # fmt: skip
    peak_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    res.update(
        full_wall_s=round(full_wall, 2), full_cpu_s=round(full_cpu, 2),
        inc_wall_s=round(inc_wall, 2), inc_cpu_s=round(inc_cpu, 2),
        wall_ratio=round(inc_wall / full_wall, 3), cpu_ratio=round(inc_cpu / full_cpu, 3),
        core_jobs_deleted=deleted, core_jobs_inserted=inserted, peak_rss_mb=peak_mb,
    )  # fmt: skip
    print(json.dumps(res))
    if a.out:
        with a.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
