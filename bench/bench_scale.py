"""Benchmark: the fleet at scale, stage by stage, beside baselines measured in the same command.

For each size (``--sizes 1000x30,10000x30,100000x30,10000x365``: GPUs × days) it runs, each in a
process of its own (so peak RSS is the stage's own; a child's ``ru_maxrss`` would otherwise start
at its parent's):

- ``generate``: ``goodput generate --gpus N --days D`` (``generate_scale_fleet``);
- ``ingest_sacct``, ``ingest_state``, ``ingest_dcgm_hourly``, ``ingest_dcgm_5min``:
  ``pipelines.ingest.ingest_file`` of every file of that kind into a fresh warehouse;
- ``rebuild``: ``pipelines.analytics.build.rebuild(full=True)`` (core + analytics + views);
- ``publish``: ``publish_serving_copy``;
- ``queries``: dashboard query functions of ``dashboards/queries.py`` on the serving copy;
- ``new_day`` (after ``rebuild`` with ``--hold-last-day``, which keeps the ingest stages off the
  window's last day): that day's sacct and hourly DCGM files loaded and an incremental rebuild,
  with the days and rows it rewrote (the full ``rebuild`` stage of the same command is its
  baseline);
- ``rerun_day`` (after ``rebuild``): one already-built day's sacct and hourly DCGM files loaded
  again and an incremental rebuild, with the days and rows it rewrote (the full ``rebuild``
  stage is its baseline);
- baselines: ``floor_sacct`` (DuckDB ``read_csv(all_varchar)`` of the same sacct files into a
  table), ``floor_hourly`` (DuckDB ``read_parquet`` of the hourly DCGM aggregates into a table,
  then a scan of the files for GPU-hours and mean activity, allocated vs free), and
  ``pandas_occupancy`` (what users write today: pandas reads every
  sacct file, keeps each job's last row, explodes jobs into clock hours and sums GPU-seconds per
  hour and team → hourly occupancy).

Then it fits the growth exponent of each stage's time over the 30-day sizes (least squares on
log time vs log GPUs; 1.0 = linear). Prints one JSON object; ``--markdown`` also prints a table.
Generated data lives under ``--root`` (default ``/tmp/goodput-scale``), never in the repository.

Usage: ``flock /tmp/goodput-big.lock .venv/bin/python bench/bench_scale.py --sizes 1000x30``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._harness import last_json, write_bench_config  # noqa: E402 (after sys.path above)

CLUSTER = "scale-a"


def _ingest(db: Path, data: Path, kind: str, pattern: str) -> dict[str, Any]:
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    opts = IngestOptions(cluster=CLUSTER, tz="UTC")
    loaded = rejected = files = 0
    with connect(db) as con:
        init_warehouse(con)
        held = os.environ.get("GOODPUT_BENCH_HOLD_DAY")
        for f in sorted((data / "inputs" / CLUSTER).glob(pattern)):
            if held and held in str(f.relative_to(data)):
                continue  # the held day is loaded by the ``new_day`` stage
            st = ingest_file(con, kind, f, opts)
            loaded += st.rows_loaded
            rejected += st.rows_rejected
            files += 1
    return {"files": files, "rows": loaded, "rejected": rejected}


def _stage(name: str, data: Path, work: Path, gpus: int, days: int) -> dict[str, Any]:
    """Run one stage in this process; returns its own figures."""
    db = work / "warehouse.duckdb"
    if name == "generate":
        from pipelines.sample_fleet._scale import ScaleConfig, generate_scale_fleet

        five = int(os.environ.get("GOODPUT_BENCH_5MIN_DAYS", "30"))
        s = generate_scale_fleet(
            data, ScaleConfig(gpus=gpus, days=days, dcgm_5min_days=five), progress=False
        )
        return {"jobs": s.jobs, "sacct_rows": s.attempts_in_window, "files": s.files_written}
    if name == "ingest_sacct":
        return _ingest(db, data, "sacct", "sacct/*.psv")
    if name == "ingest_state":
        return _ingest(db, data, "slurm-state", "slurm_state/*.psv")
    if name == "ingest_dcgm_5min":
        return _ingest(db, data, "dcgm", "dcgm/*.prom.gz")
    if name == "ingest_dcgm_hourly":
        return _ingest(db, data, "dcgm-hourly", "dcgm_hourly/date=*/*.parquet")
    if name == "rebuild":
        from pipelines.analytics.build import rebuild
        from pipelines.config import load_config
        from pipelines.warehouse import connect

        cfg = load_config(write_bench_config(work, data, CLUSTER, "2025-01-01"))
        with connect(db) as con:
            counts = rebuild(con, cfg, full=True)
        return {"tables": len(counts), "rows": sum(counts.values())}
    if name == "rerun_day":
        return _rerun_day(db, data, work)
    if name == "new_day":
        held = os.environ.get("GOODPUT_BENCH_HOLD_DAY")
        if not held:
            raise ValueError("new_day needs --hold-last-day (the ingest stages kept off a day)")
        return _rerun_day(db, data, work, held)
    if name == "publish":
        from pipelines.warehouse import publish_serving_copy

        publish_serving_copy(db, work / "serving.duckdb")
        return {"bytes": (work / "serving.duckdb").stat().st_size}
    if name == "queries":
        from dashboards import queries as q

        path = str(work / "serving.duckdb")
        f = q.Filters()
        times: dict[str, float] = {}
        for fn, call in (
            ("headline", lambda: q.headline(path, f)),
            ("waterfall_daily", lambda: q.waterfall_daily(path, f)),
            ("trends_daily", lambda: q.trends_daily(path, f)),
            ("wait_percentiles", lambda: q.wait_percentiles(path, f)),
            ("fairness_teams", lambda: q.fairness_teams(path, f)),
            ("lemon_nodes", lambda: q.lemon_nodes(path, f, 10)),
            ("failures_daily", lambda: q.failures_daily(path, f)),
        ):
            t = time.perf_counter()
            try:
                call()
                times[fn] = round(time.perf_counter() - t, 3)
            except Exception as exc:
                times[fn] = -1.0
                times[f"{fn}_error"] = str(exc)[:120]  # type: ignore[assignment]
        return {
            "per_query_s": times,
            "max_query_s": max(v for v in times.values() if isinstance(v, float)),
        }
    if name == "floor_sacct":
        import duckdb

        con = duckdb.connect(str(work / "floor.duckdb"))
        con.execute(
            "create or replace table t as select * from read_csv(?, delim='|', header=true, "
            "all_varchar=true, union_by_name=true)",
            [str(data / "inputs" / CLUSTER / "sacct" / "*.psv")],
        )
        n = con.sql("select count(*) from t").fetchall()[0][0]
        con.close()
        (work / "floor.duckdb").unlink()
        return {"rows": n}
    if name == "floor_hourly":
        import duckdb

        glob = str(data / "inputs" / CLUSTER / "dcgm_hourly" / "*" / "*.parquet")
        con = duckdb.connect(str(work / "floor.duckdb"))
        t = time.perf_counter()
        con.execute(
            "create or replace table h as select * from read_parquet(?, hive_partitioning=true)",
            [glob],
        )
        load_s = round(time.perf_counter() - t, 2)
        rows = con.sql("select count(*), sum(samples) from h").fetchall()[0]
        con.close()
        (work / "floor.duckdb").unlink()
        con = duckdb.connect()
        t = time.perf_counter()
        teams = con.sql(
            "select hpc_job is null as free, sum(samples) * 300 / 3600.0 as gpu_hours, "
            "sum(samples * gr_engine_active_avg) / sum(samples) as activity "
            "from read_parquet(?, hive_partitioning=true) group by all",
            params=[str(data / "inputs" / CLUSTER / "dcgm_hourly" / "*" / "*.parquet")],
        ).fetchall()
        return {
            "rows": rows[0],
            "groups": len(teams),
            "load_s": load_s,
            "scan_aggregate_s": round(time.perf_counter() - t, 2),
        }
    if name == "pandas_occupancy":
        return _pandas_occupancy(data, gpus)
    raise ValueError(name)


def _rerun_day(db: Path, data: Path, work: Path, day: str | None = None) -> dict[str, Any]:
    """Re-load one day that is already built (its sacct file and its hourly DCGM aggregates;
    ``GOODPUT_BENCH_RERUN_DAY``, default the window's middle day) into the built warehouse and
    rebuild incrementally: the re-run of issue 9's acceptance. Returns the ingest and rebuild
    seconds, the days the build rewrote, and per table the rows deleted and inserted (from
    ``analytics.build_log``) beside the table's size. Run after ``rebuild``; it changes the
    warehouse (the re-loaded files replace their earlier loads with the same rows). With ``day``
    (the ``new_day`` stage), that day is loaded for the first time instead."""
    import json as _json

    from pipelines.analytics.build import rebuild
    from pipelines.config import load_config
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect

    inputs = data / "inputs" / CLUSTER
    sacct_files = sorted((inputs / "sacct").glob("*.psv"))
    day = (
        day
        or os.environ.get("GOODPUT_BENCH_RERUN_DAY")
        or sacct_files[len(sacct_files) // 2].stem[-10:]
    )
    files = [("sacct", f) for f in sacct_files if f.stem.endswith(day)]
    files += [("dcgm-hourly", f) for f in sorted((inputs / "dcgm_hourly").glob(f"date={day}/*"))]
    if not files:
        raise ValueError(f"no sacct or dcgm-hourly file for {day} under {inputs}")
    cfg = load_config(write_bench_config(work, data, CLUSTER, "2025-01-01"))
    opts = IngestOptions(cluster=CLUSTER, tz="UTC")
    with connect(db) as con:
        t = time.perf_counter()
        for kind, f in files:
            ingest_file(con, kind, f, opts)
        ingest_s = time.perf_counter() - t
        t = time.perf_counter()
        rebuild(con, cfg)
        rebuild_s = time.perf_counter() - t
        build_id, mode = con.execute(
            "SELECT build_id, mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchone() or (None, None)
        log = con.execute(
            "SELECT table_name, mode, rows_deleted, rows_inserted, days FROM analytics.build_log"
            " WHERE build_id = ? ORDER BY table_name", [build_id],
        ).fetchall()  # fmt: skip
        tables = {}
        days: Any = None
        for table, tmode, deleted, inserted, tdays in log:
            total = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
            tables[table] = {"mode": tmode, "deleted": deleted, "inserted": inserted,
                             "rows": total}  # fmt: skip
            if tdays:
                days = _json.loads(tdays)
    return {"day": day, "files": [f.name for _, f in files], "build_mode": mode,
            "ingest_s": round(ingest_s, 2), "rebuild_s": round(rebuild_s, 2),
            "days_rewritten": days, "tables": tables}  # fmt: skip


def _pandas_occupancy(data: Path, gpus: int) -> dict[str, Any]:
    """Hourly occupancy and GPU-hours per team from the sacct files, the way a user would in
    pandas: read every daily file, keep each job's last row, parse times, explode into hours."""
    import numpy as np
    import pandas as pd  # type: ignore[import-untyped]

    frames = [
        pd.read_csv(f, sep="|", dtype=str, keep_default_na=False)
        for f in sorted((data / "inputs" / CLUSTER / "sacct").glob("*.psv"))
    ]
    df = pd.concat(frames, ignore_index=True).drop_duplicates("JobIDRaw", keep="last")
    df = df[~df["Start"].isin(["Unknown", "None"])].copy()
    df["g"] = df["AllocTRES"].str.extract(r"gres/gpu=(\d+)")[0].fillna("0").astype(int)
    last = df["Submit"].max()
    df["s"] = pd.to_datetime(df["Start"])
    df["e"] = pd.to_datetime(df["End"].where(df["End"] != "Unknown", last))
    df["h"] = df.apply(lambda r: list(pd.date_range(r["s"].floor("h"), r["e"], freq="h")), axis=1)
    x = df[["Account", "g", "s", "e", "h"]].explode("h").dropna(subset=["h"])
    seg = np.minimum(x["e"], x["h"] + pd.Timedelta(hours=1)) - np.maximum(x["s"], x["h"])
    x["gs"] = seg.dt.total_seconds().clip(lower=0) * x["g"]
    hourly = x.groupby("h")["gs"].sum() / (gpus * 3600)
    teams = x.groupby("Account")["gs"].sum() / 3600
    return {
        "jobs": len(df),
        "hours": len(hourly),
        "teams": len(teams),
        "mean_occupancy": round(float(hourly.mean()), 4),
    }


STAGES = (
    "generate",
    "ingest_sacct",
    "ingest_state",
    "ingest_dcgm_hourly",
    "ingest_dcgm_5min",
    "rebuild",
    "publish",
    "queries",
    "floor_sacct",
    "floor_hourly",
    "pandas_occupancy",
    "rerun_day",
    "new_day",
)


def _child(stage: str, data: Path, work: Path, gpus: int, days: int) -> dict[str, Any]:
    t = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            stage,
            "--data",
            str(data),
            "--work",
            str(work),
            "--gpus",
            str(gpus),
            "--days",
            str(days),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        return {"stage": stage, "error": proc.stderr[-2000:], "wall_s": round(wall, 2)}
    out: dict[str, Any] = last_json(proc.stdout)
    out["stage"] = stage
    return out


def _fit(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log y on log x (None for fewer than two points)."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return round(sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx, 3)


def main() -> None:
    """Parse arguments, run sizes, print JSON (and a markdown table with ``--markdown``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000x30,10000x30")
    ap.add_argument("--root", default="/tmp/goodput-scale")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument(
        "--dcgm-5min-days",
        type=int,
        default=30,
        help="last days that also get 5-minute DCGM text (default 30)",
    )
    ap.add_argument(
        "--hold-last-day",
        action="store_true",
        help="keep the ingest stages off the window's last day (for ``new_day``)",
    )
    ap.add_argument("--child")
    ap.add_argument("--data")
    ap.add_argument("--work")
    ap.add_argument("--gpus", type=int)
    ap.add_argument("--days", type=int)
    a = ap.parse_args()
    if a.child:
        t = time.perf_counter()
        res = _stage(a.child, Path(a.data), Path(a.work), a.gpus, a.days)
        res["wall_s"] = round(time.perf_counter() - t, 2)
        res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(res))
        return
    os.environ["GOODPUT_BENCH_5MIN_DAYS"] = str(a.dcgm_5min_days)
    stages = [s for s in a.stages.split(",") if s]
    results: dict[str, list[dict[str, Any]]] = {}
    for size in a.sizes.split(","):
        gpus, days = (int(x) for x in size.split("x"))
        data = Path(a.root) / f"{gpus}x{days}" / "data"
        work = Path(a.root) / f"{gpus}x{days}" / "work"
        if "generate" in stages and data.exists():
            shutil.rmtree(data)
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        data.mkdir(parents=True, exist_ok=True)
        if a.hold_last_day:
            last = sorted((data / "inputs" / CLUSTER / "sacct").glob("*.psv"))[-1]
            os.environ["GOODPUT_BENCH_HOLD_DAY"] = last.stem[-10:]
        rows = []
        for stage in stages:
            r = _child(stage, data, work, gpus, days)
            print(json.dumps({"size": size, **r}), file=sys.stderr, flush=True)
            rows.append(r)
        results[size] = rows
        if not a.keep:
            shutil.rmtree(Path(a.root) / f"{gpus}x{days}")
    fits: dict[str, float | None] = {}
    for stage in stages:
        pts = []
        for size, rows in results.items():
            g, d = (int(x) for x in size.split("x"))
            for r in rows:
                if r["stage"] == stage and d == 30 and "error" not in r:
                    pts.append((float(g), float(r["wall_s"])))
        fits[stage] = _fit(pts)
    print(json.dumps({"results": results, "exponent_30_days": fits}))
    if a.markdown:
        for size, rows in results.items():
            print(f"\n| {size} stage | wall s | peak RSS MB | detail |\n|---|---:|---:|---|")
            for r in rows:
                detail = {k: v for k, v in r.items() if k not in ("stage", "wall_s", "peak_rss_mb")}
                print(
                    f"| {r['stage']} | {r.get('wall_s')} | {r.get('peak_rss_mb')} | "
                    f"{json.dumps(detail)[:160]} |"
                )


if __name__ == "__main__":
    main()
