"""Benchmark: four cluster-day partition runs committing to the lake's Delta tables at once.

The sample fleet (``generate_sample_fleet``, seed 7, ``--days`` days, clusters ``slurm-a`` and
``k8s-b``: ``2 × days`` cluster-day partitions) is committed by ``lake_raw_job`` twice, each into
an empty lake folder: once on the in-process executor (the baseline: one partition after
another) and once on the multiprocess executor with ``max_concurrent = 4`` (four partition steps,
four processes, committing at once). Then both lakes' raw tables are compared row for row and
the commits counted (one per partition and table that has rows, none lost to a race).

Prints one JSON object; ``--markdown`` also prints a table. Data lives under ``--root`` (default
``/tmp/goodput-lake-bench``), never in the repository.

Usage: ``flock /tmp/goodput-big.lock .venv/bin/python bench/bench_lake.py --markdown``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


def _run(config: Path, root: Path, keys: list[str], parallel: bool, home: Path) -> float:
    import dagster as dg

    from pipelines.lake_job import lake_raw_job

    executor = {"multiprocess": {"max_concurrent": 4}} if parallel else {"in_process": {}}
    run_config = {
        "ops": {"lake_partitions": {"config": {"partitions": keys}}},
        "resources": {
            "settings": {"config": {"config_path": str(config)}},
            "lake": {"config": {"root_url": str(root)}},
        },
        "execution": {"config": executor},
    }
    home.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        t0 = time.perf_counter()
        result = dg.execute_job(
            dg.reconstructable(lake_raw_job), instance=instance, run_config=run_config
        )
        wall = time.perf_counter() - t0
    if not result.success:
        raise SystemExit("lake_raw_job failed")
    return wall


def _commit_worker(job: tuple[str, str, str, str], barrier: Any, out: Any) -> None:
    """One partition's :func:`commit_raw_partition` in a spawned process: imports first, then
    waits for the other workers, so the span measured is the commits', not the start-ups'."""
    from pipelines.config import load_config
    from pipelines.lake_assets import commit_raw_partition

    config, root, cluster, day = job
    cfg = load_config(Path(config))
    barrier.wait()
    t0 = time.time()
    commit_raw_partition(cfg, cluster, day, root)
    out.put((t0, time.time()))


def _commits(config: Path, root: Path, keys: list[str], parallel: bool) -> float:
    """The partitions committed without Dagster, serially in this process or by one spawned
    process each, all released at once: wall seconds from the first commit's start to the last
    one's end (what the commits themselves cost, without process start-up)."""
    import multiprocessing

    from pipelines.config import load_config
    from pipelines.lake_assets import commit_raw_partition
    from pipelines.partitions import split_partition_key

    jobs = [(str(config), str(root), *split_partition_key(k)) for k in keys]
    if not parallel:
        cfg = load_config(config)
        t0 = time.perf_counter()
        for _config, _root, cluster, day in jobs:
            commit_raw_partition(cfg, cluster, day, str(root))
        return time.perf_counter() - t0
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(len(jobs)), ctx.Queue()
    procs = [ctx.Process(target=_commit_worker, args=(job, barrier, out)) for job in jobs]
    for proc in procs:
        proc.start()
    spans = [out.get(timeout=1800) for _ in procs]
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a commit worker failed ({proc.exitcode})")
    return max(e for _s, e in spans) - min(s for s, _e in spans)


def main() -> None:
    """Run both sides and print the figures."""
    import dagster as dg
    import polars as pl
    from deltalake import DeltaTable
    from polars.testing import assert_frame_equal

    from pipelines.sample_fleet import generate_sample_fleet
    from pipelines.warehouse import RAW_TABLES
    from pipelines.warehouse.delta import delta_table_exists, delta_table_url, read_delta
    from tests.conftest import write_config

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--root", type=Path, default=Path("/tmp/goodput-lake-bench"))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    shutil.rmtree(args.root, ignore_errors=True)
    fleet = args.root / "fleet"
    fleet.mkdir(parents=True)
    generate_sample_fleet(fleet, seed=7, days=args.days)
    config = write_config(args.root, days_dir=fleet)
    days = sorted(
        {p.stem.split("_")[-1] for p in (fleet / "inputs" / "slurm-a" / "sacct").glob("*.psv")}
    )
    keys = [
        str(dg.MultiPartitionKey({"cluster": c, "date": d}))
        for d in days
        for c in ("slurm-a", "k8s-b")
    ]
    bare_serial = _commits(config, args.root / "bare-serial", keys, False)
    bare_parallel = _commits(config, args.root / "bare-parallel", keys, True)
    serial = _run(config, args.root / "serial", keys, False, args.root / "home-serial")
    parallel = _run(config, args.root / "parallel", keys, True, args.root / "home-parallel")
    rows = commits = 0
    sides = ("serial", "parallel", "bare-serial", "bare-parallel")
    for table in sorted(set(RAW_TABLES.values())):
        there = [delta_table_exists(str(args.root / s), table) for s in sides]
        assert len(set(there)) == 1, table
        if not there[0]:
            continue
        a, *others = (read_delta(str(args.root / s), table).collect() for s in sides)
        cols = [c for c, t in a.schema.items() if not isinstance(t, pl.List | pl.Struct)]
        for b in others:
            assert_frame_equal(a.sort(cols, nulls_last=True), b.sort(cols, nulls_last=True))
        rows += a.height
        commits += len(DeltaTable(delta_table_url(str(args.root / "parallel"), table)).history())
    out: dict[str, Any] = {
        "partitions": len(keys),
        "rows": rows,
        "commits_parallel": commits,
        "serial_s": round(serial, 2),
        "parallel_s": round(parallel, 2),
        "speedup": round(serial / parallel, 2),
        "commits_only_serial_s": round(bare_serial, 2),
        "commits_only_parallel_s": round(bare_parallel, 2),
        "lake_mb": round(_du_mb(args.root / "parallel"), 1),
        "inputs_mb": round(_du_mb(fleet / "inputs"), 1),
        "equal_row_for_row": True,
    }
    print(json.dumps(out))
    if args.markdown:
        print("| side | seconds | rows committed | commits |")
        print("|---|---|---|---|")
        print(f"| serial (in-process executor) | {out['serial_s']} | {rows:,} | {commits} |")
        print(
            f"| 4 at once (multiprocess, max_concurrent 4) | {out['parallel_s']} | {rows:,} "
            f"| {commits} |"
        )
        bare = out["commits_only_serial_s"]
        print(f"| commits only, serial (no Dagster) | {bare} | {rows:,} | |")
        print(
            "| commits only, 4 processes released at once (no Dagster) | "
            f"{out['commits_only_parallel_s']} "
            f"| {rows:,} | |"
        )


if __name__ == "__main__":
    main()
