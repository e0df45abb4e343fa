"""Benchmark: does the build's cost follow the history's length? 1, 3 and 12 months of one fleet.

On the files of one generated fleet (``bench/bench_scale.py --stages generate --keep``), for each
history length N (``--days 30,91,364``: the N days that end the day before the window's last
day) it makes a warehouse of its own and runs, each step in a process of its own (so each peak
memory is that step's own, ``VmHWM``):

- ``ingest``: ``ingest_file`` of the N days' sacct and hourly DCGM files and the Slurm state file
  into a fresh warehouse (rows loaded and rejected; the state file is written once for the whole
  window and loaded whole at every length). With ``--reuse-ingested DB`` the longest history
  copies that ingested warehouse instead (it must hold the same N days, e.g. ``bench_scale.py
  --hold-last-day``'s ``work/warehouse.duckdb``) and loads the Slurm state files into it (that
  option holds them too: they are named for the last day); then the warehouse is checkpointed
  until DuckDB's vacuum has merged the under-full row groups that loading a history in one go
  leaves (``bench._harness.settle_vacuum``: ``settle``), as loading it day by day would have;
- ``full``: ``rebuild(full=True)``: wall and CPU seconds, peak memory, rows written;
- ``new_day``: the ``goodput ingest`` of the window's last day (the same new day at every
  length): its sacct file and its hourly DCGM file loaded with ``ingest_file`` (seconds, rows
  loaded and rejected, peak memory once loaded), then the incremental ``rebuild`` that
  ``goodput ingest`` runs after loading, then ``publish_serving_copy`` as it publishes (detail
  of ``serving_detail_days``, 35 by default); each part timed, the
  peak memory after the load and after the rebuild, and the incremental rebuild as a ratio to
  the ``full`` step of the same length (the baseline, same command, wall and CPU seconds).

Disk use of the warehouse after each step and of the serving copy is reported. Prints one JSON
object; ``--markdown`` also prints tables. Working files live under ``--work``, never in the
repository.

Usage: ``flock /tmp/goodput-big.lock .venv/bin/python bench/bench_history.py --data
ROOT/10000x365/data --work /tmp/goodput-history --days 30,91,364 --markdown``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
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

from bench._harness import (  # noqa: E402
    last_json,
    peak_rss_mb,
    settle_vacuum,
    write_bench_config,
)

CLUSTER = "scale-a"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _mb(path: Path) -> float:
    """Size of a file plus its ``.wal`` in MB (0 when absent)."""
    total = 0
    for p in (path, path.with_name(path.name + ".wal")):
        if p.exists():
            total += p.stat().st_size
    return round(total / 1e6, 1)


def _days(data: Path) -> list[str]:
    """The window's days (YYYY-MM-DD), from the daily sacct files' names, in order."""
    return sorted(f.stem[-10:] for f in (data / "inputs" / CLUSTER / "sacct").glob("*.psv"))


def _subset(data: Path, dest: Path, days: list[str]) -> None:
    """A data folder of symlinks: inventory, registry, the Slurm state files, and the sacct and
    hourly DCGM files of ``days`` only."""
    if dest.exists():
        shutil.rmtree(dest)
    src = data / "inputs" / CLUSTER
    out = dest / "inputs" / CLUSTER
    for sub in ("sacct", "slurm_state", "dcgm_hourly"):
        (out / sub).mkdir(parents=True)
    for name in ("inventory", "registry.yaml"):
        if (data / name).exists():
            (dest / name).symlink_to(data / name)
    keep = set(days)
    for f in (src / "sacct").glob("*.psv"):
        if f.stem[-10:] in keep:
            (out / "sacct" / f.name).symlink_to(f)
    for f in (src / "slurm_state").glob("*"):
        (out / "slurm_state" / f.name).symlink_to(f)
    for d in (src / "dcgm_hourly").glob("date=*"):
        if d.name[5:] in keep:
            (out / "dcgm_hourly" / d.name).symlink_to(d)


def _load(con: Any, kind: str, files: list[Path]) -> dict[str, Any]:
    from pipelines.ingest import IngestOptions, ingest_file

    opts = IngestOptions(cluster=CLUSTER, tz="UTC")
    t = time.perf_counter()
    loaded = rejected = 0
    for f in files:
        st = ingest_file(con, kind, f, opts)
        loaded += st.rows_loaded
        rejected += st.rows_rejected
    return {"files": len(files), "rows": loaded, "rejected": rejected,
            "s": round(time.perf_counter() - t, 2)}  # fmt: skip


def _step(step: str, data: Path, work: Path, new_day: str, reuse: str | None) -> dict[str, Any]:
    """Run one step in this process; returns its figures."""
    from pipelines.analytics.build import rebuild
    from pipelines.config import load_config
    from pipelines.warehouse import connect, init_warehouse, publish_serving_copy

    db = work / "warehouse.duckdb"
    inputs = data / "inputs" / CLUSTER
    out: dict[str, Any] = {"load_avg_start": round(os.getloadavg()[0], 1)}
    if step == "ingest":
        if reuse:
            t = time.perf_counter()
            shutil.copyfile(reuse, db)
            out.update(copied_from=reuse, s=round(time.perf_counter() - t, 2))
            with connect(db) as con:
                (n,) = con.execute("SELECT count(*) FROM raw.slurm_rows").fetchone() or (0,)
                # bench_scale's --hold-last-day also holds the state files (named for that day)
                out["slurm_state"] = _load(
                    con, "slurm-state", sorted((inputs / "slurm_state").glob("*.psv"))
                )
            out["sacct_rows"] = n
        else:
            # The N days only: the new day's files are loaded by the ``new_day`` step (the
            # subset folder holds them too, so that step finds them).
            sacct = [f for f in (inputs / "sacct").glob("*.psv") if f.stem[-10:] != new_day]
            hourly = [
                f
                for f in (inputs / "dcgm_hourly").glob("date=*/*.parquet")
                if f.parent.name != f"date={new_day}"
            ]
            with connect(db) as con:
                init_warehouse(con)
                out["sacct"] = _load(con, "sacct", sorted(sacct))
                out["slurm_state"] = _load(
                    con, "slurm-state", sorted((inputs / "slurm_state").glob("*.psv"))
                )
                out["dcgm_hourly"] = _load(con, "dcgm-hourly", sorted(hourly))
        # A history loaded in one go leaves its vacuum to the later checkpoints (2-3 s each on
        # the year, whatever they wrote); settled here, as a day-by-day load keeps it.
        out["settle"] = settle_vacuum(db)
    elif step == "full":
        cfg = load_config(write_bench_config(work, data, CLUSTER, "2025-01-01"))
        with connect(db) as con:
            t, c = time.perf_counter(), _cpu()
            counts = rebuild(con, cfg, full=True)
            out.update(wall_s=round(time.perf_counter() - t, 2), cpu_s=round(_cpu() - c, 2),
                       tables=len(counts), rows=sum(counts.values()))  # fmt: skip
    elif step == "new_day":
        cfg = load_config(write_bench_config(work, data, CLUSTER, "2025-01-01"))
        with connect(db) as con:
            out["sacct"] = _load(con, "sacct", sorted(inputs.glob(f"sacct/*{new_day}.psv")))
            out["dcgm_hourly"] = _load(
                con, "dcgm-hourly", sorted(inputs.glob(f"dcgm_hourly/date={new_day}/*.parquet"))
            )
            out["peak_after_load_mb"] = round(peak_rss_mb(), 1)
            t, c = time.perf_counter(), _cpu()
            counts = rebuild(con, cfg)
            out.update(rebuild_wall_s=round(time.perf_counter() - t, 2),
                       rebuild_cpu_s=round(_cpu() - c, 2), rows=sum(counts.values()))  # fmt: skip
            (mode,) = con.execute(
                "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
            ).fetchone() or (None,)
            out["build_mode"] = mode
        out["peak_after_rebuild_mb"] = round(peak_rss_mb(), 1)
        t = time.perf_counter()
        # as ``goodput ingest`` publishes: aggregates whole, detail of the configured window
        publish_serving_copy(db, work / "serving.duckdb", detail_days=cfg.serving_detail_days)
        out["publish_s"] = round(time.perf_counter() - t, 2)
        out["serving_mb"] = _mb(work / "serving.duckdb")
    else:
        raise ValueError(step)
    out["warehouse_mb"] = _mb(db)
    return out


def _child(step: str, data: Path, work: Path, new_day: str, reuse: str | None) -> dict[str, Any]:
    t = time.perf_counter()
    args = [sys.executable, __file__, "--child", step, "--data", str(data), "--work", str(work),
            "--new-day", new_day] + (["--reuse-ingested", reuse] if reuse else [])  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"step": step, "error": proc.stderr[-2000:],
                "wall_s": round(time.perf_counter() - t, 2)}  # fmt: skip
    res: dict[str, Any] = last_json(proc.stdout)
    res["step"] = step
    res["process_s"] = round(time.perf_counter() - t, 2)
    return res


def main() -> None:
    """Parse arguments, run each history length's steps, print JSON (and markdown tables)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, required=True, help="a generated fleet's data folder")
    ap.add_argument("--work", type=Path, default=Path("/tmp/goodput-history"))
    ap.add_argument("--days", default="30,91,364", help="history lengths in days")
    ap.add_argument("--reuse-ingested", help="ingested warehouse to copy for the longest history")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--new-day")
    a = ap.parse_args()
    if a.child:
        res = _step(a.child, a.data, a.work, a.new_day, a.reuse_ingested)
        res["peak_rss_mb"] = round(peak_rss_mb(), 1)
        print(json.dumps(res))
        return
    window = _days(a.data)
    new_day = window[-1]
    lengths = sorted(int(x) for x in a.days.split(","))
    results: dict[int, dict[str, Any]] = {}
    for n in lengths:
        hist = window[-1 - n : -1]
        if len(hist) < n:
            raise SystemExit(f"the window has {len(window) - 1} days before {new_day}, not {n}")
        base = a.work / f"{n}d"
        shutil.rmtree(base, ignore_errors=True)
        data, work = base / "data", base / "work"
        work.mkdir(parents=True)
        _subset(a.data, data, [*hist, new_day])
        reuse = a.reuse_ingested if a.reuse_ingested and n == lengths[-1] else None
        steps = {s: _child(s, data, work, new_day, reuse) for s in ("ingest", "full", "new_day")}
        results[n] = {"first_day": hist[0], "last_day": hist[-1], "added_day": new_day, **steps}
        print(json.dumps({"days": n, **results[n]}), file=sys.stderr, flush=True)
        shutil.rmtree(base / "data")
    print(json.dumps({"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                      "results": results}))  # fmt: skip
    if a.markdown:
        _markdown(results)


def _markdown(results: dict[int, dict[str, Any]]) -> None:
    print(
        "\n| history | full rebuild: wall / CPU s | peak MB | warehouse MB | new day: load s "
        "| peak after load MB | incremental rebuild: wall / CPU s | ÷ full (wall / CPU) "
        "| peak MB | publish s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for n, r in results.items():
        f, d = r["full"], r["new_day"]
        if "error" in f or "error" in d:
            print(f"| {n} d | error: {(f.get('error') or d.get('error'))[-200:]!r} |")
            continue
        load_s = d["sacct"]["s"] + d["dcgm_hourly"]["s"]
        print(
            f"| {n} d ({r['first_day']} … {r['last_day']}) | {f['wall_s']} / {f['cpu_s']} | "
            f"{f['peak_rss_mb']:,.0f} | {f['warehouse_mb']:,.0f} | {load_s:.2f} | "
            f"{d['peak_after_load_mb']:,.0f} | {d['rebuild_wall_s']} / {d['rebuild_cpu_s']} | "
            f"{d['rebuild_wall_s'] / f['wall_s']:.2f}× / {d['rebuild_cpu_s'] / f['cpu_s']:.2f}× | "
            f"{d['peak_after_rebuild_mb']:,.0f} | {d['publish_s']} |"
        )


if __name__ == "__main__":
    main()
