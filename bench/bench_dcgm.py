"""Benchmark: a day of DCGM telemetry through the file source and through Prometheus, against a
plain DuckDB scan of the same samples.

A fleet of H hosts × 8 GPUs scraped every 30 s for one UTC day (2026-11-02), M metrics
(default the four of :data:`METRICS`: H = 512 gives 4,096 GPUs × 2,880 samples × 4 = 47.2 M
samples). Values are a deterministic function of (GPU, sample index), so both sources hold the
same samples. Each side runs in a process of its own (peak memory = its own ``VmHWM``; the
files are written by a process of their own too, because on Linux a child's ``ru_maxrss``
starts at its parent's peak):

- ``file``: dcgm-exporter text files, one per host and hour (gzip, Prometheus text with
  millisecond timestamps, ``# HELP``/``# TYPE`` per family), each loaded by ``ingest_file``
  (``parse_dcgm``: label normalisation, blank sentinels, then the load into
  ``raw.dcgm_samples``, one transaction per file);
- ``prom``: the same series backfilled into a real Prometheus (``promtool tsdb
  create-blocks-from openmetrics``, 24 h blocks; not timed as part of the source), started on
  127.0.0.1, then ``PrometheusDcgmSource.fetch`` for the day (5-minute step, one server-side
  ``*_over_time`` query per metric, in parallel, spooled to a gzip file) and ``ingest_file`` of
  the spool file (288 rows per series instead of 2,880; parsed and loaded in blocks of
  ``DCGM_CHUNK_BYTES`` of text). Peak memory is reported for the fetch (``fetch_peak_mb``) and
  for the load alone (``load_peak_mb``: ``VmHWM`` reset through ``/proc/self/clear_refs`` after
  the fetch; ``rss_before_load_mb`` is what the fetch left resident);
- ``floor``: DuckDB alone: ``read_csv`` of the same gzip files as one text column, the value and
  ``UUID`` cut out with ``regexp_extract``, ``count`` and ``avg`` per GPU and metric.

Usage: ``python bench/bench_dcgm.py [--hosts 512] [--hours 24] [--keep DIR]``. Needs
``prometheus`` and ``promtool`` on PATH for the ``prom`` side (skipped, and said so, without).
Prints one JSON line. ``--spool-load FILE`` (e.g. ``DIR/spool/bench/dcgm/dcgm_2026-11-02.prom.gz``
kept by ``--keep``) only loads that file, whole-file parse against block-wise ``ingest_file``,
twice each, one process each, one JSON line each.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import peak_rss_mb, run_side

#: The metric subset measured (the issue's nine are too heavy for a 2-core benchmark machine).
METRICS = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_XID_ERRORS",
)
GPUS_PER_HOST = 8
INTERVAL_S = 30
DAY = "2026-11-02"
DAY_START_S = 1_793_577_600  # 2026-11-02T00:00:00Z
_MODEL = "NVIDIA H100 80GB HBM3"
_BUS = ("07", "0F", "47", "4E", "87", "90", "B7", "BD")


def _gpus(hosts: int) -> pl.DataFrame:
    """One row per GPU: ``gpu_key, host, labels`` (dcgm-exporter's label set)."""
    g = pl.DataFrame({"gpu_key": pl.int_range(0, hosts * GPUS_PER_HOST, eager=True)})
    return g.with_columns(
        pl.concat_str(
            [pl.lit("node-"), (pl.col("gpu_key") // GPUS_PER_HOST).cast(pl.String).str.zfill(4)]
        ).alias("host"),
        (pl.col("gpu_key") % GPUS_PER_HOST).alias("gpu"),
    ).with_columns(
        pl.concat_str(
            [
                pl.lit('{gpu="'), pl.col("gpu").cast(pl.String),
                pl.lit('",UUID="GPU-'), pl.col("gpu_key").cast(pl.String).str.zfill(8),
                pl.lit("-0000-4000-8000-"), pl.col("gpu_key").cast(pl.String).str.zfill(12),
                pl.lit('",pci_bus_id="00000000:'),
                pl.col("gpu").replace_strict(list(range(8)), list(_BUS), return_dtype=pl.String),
                pl.lit(':00.0",device="nvidia'), pl.col("gpu").cast(pl.String),
                pl.lit(f'",modelName="{_MODEL}",Hostname="'), pl.col("host"), pl.lit('"}'),
            ]
        ).alias("labels")
    )  # fmt: skip


def _values(frame: pl.DataFrame, metric: str) -> pl.Expr:
    """The value text of ``metric`` at sample index ``k`` of GPU ``gpu_key``."""
    act = ((pl.col("gpu_key") * 7919 + pl.col("k") * 104_729) % 1000).cast(pl.Float64) / 1000
    if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
        return act.round(3).cast(pl.String)
    if metric == "DCGM_FI_DEV_GPU_UTIL":
        return (act * 100).round(0).cast(pl.Int64).cast(pl.String)
    if metric == "DCGM_FI_DEV_FB_USED":
        return (1000 + (pl.col("gpu_key") * 13 + pl.col("k")) % 70_000).cast(pl.String)
    # XID 79 on one GPU in 997 from noon on
    half = 86_400 // INTERVAL_S // 2
    xid = pl.when((pl.col("gpu_key") % 997 == 0) & (pl.col("k") >= half)).then(79).otherwise(0)
    return xid.cast(pl.String)


def _hour(gpus: pl.DataFrame, hour: int) -> pl.DataFrame:
    per = 3600 // INTERVAL_S
    k = pl.DataFrame({"k": pl.int_range(hour * per, (hour + 1) * per, eager=True)})
    return gpus.join(k, how="cross")


def write_inputs(base: Path, hosts: int, hours: int, with_om: bool) -> dict[str, float]:
    """Write the per-host-hour files under ``base/files/`` (unless there already) and
    (``with_om``, unless there already) one OpenMetrics file ``base/day.om`` for promtool
    (families contiguous, each series in time order)."""
    gpus = _gpus(hosts)
    files = base / "files"
    n = hosts * GPUS_PER_HOST * hours * (3600 // INTERVAL_S) * len(METRICS)
    out = {"samples": float(n), "files": float(hosts * hours)}
    if not files.is_dir():
        _write_files(files, gpus, hours)
    if with_om and not (base / "day.om").exists():
        _write_om(base / "day.om", gpus, hours)
    return out


def _write_files(files: Path, gpus: pl.DataFrame, hours: int) -> None:
    files.mkdir(parents=True)
    for hour in range(hours):
        grid = _hour(gpus, hour).sort("host", "gpu_key", "k")
        parts = []
        for metric in METRICS:
            parts.append(
                grid.select(
                    "host",
                    pl.lit(METRICS.index(metric)).alias("m"),
                    pl.concat_str(
                        [pl.lit(metric), pl.col("labels"), pl.lit(" "), _values(grid, metric),
                         pl.lit(" "), ((DAY_START_S + pl.col("k") * INTERVAL_S) * 1000)
                         .cast(pl.String)]
                    ).alias("line"),
                )
            )  # fmt: skip
        lines = pl.concat(parts).sort("host", "m", maintain_order=True)
        for (host,), part in lines.group_by("host", maintain_order=True):
            chunks = []
            for m, metric in enumerate(METRICS):
                body = part.filter(pl.col("m") == m)["line"].str.join("\n").item()
                chunks.append(f"# HELP {metric} {metric}\n# TYPE {metric} gauge\n{body}\n")
            path = files / f"dcgm_{host}_{DAY}T{hour:02d}0000Z.prom.gz"
            path.write_bytes(gzip.compress("".join(chunks).encode(), compresslevel=1, mtime=0))


def _write_om(path: Path, gpus: pl.DataFrame, hours: int) -> None:
    with path.open("w", encoding="utf-8") as om:
        for metric in METRICS:
            om.write(f"# HELP {metric} {metric}\n# TYPE {metric} gauge\n")
            for hour in range(hours):
                grid = _hour(gpus, hour).sort("gpu_key", "k")
                text = grid.select(
                    pl.concat_str(
                        [pl.lit(metric), pl.col("labels"), pl.lit(" "), _values(grid, metric),
                         pl.lit(" "), (DAY_START_S + pl.col("k") * INTERVAL_S).cast(pl.String)]
                    )
                ).to_series().str.join("\n").item()  # fmt: skip
                om.write(text)
                om.write("\n")
        om.write("# EOF\n")


def _rss_mb() -> float:
    """This process's resident memory now in MB (``VmRSS``; 0 where there is no ``/proc``)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak() -> bool:
    """Reset this process's ``VmHWM`` to its current resident memory (Linux: ``5`` written to
    ``/proc/self/clear_refs``); False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _child_floor(base: Path) -> dict[str, object]:
    import duckdb

    t0 = time.perf_counter()
    with duckdb.connect() as con:
        con.execute("SET threads = 2")
        rows = con.execute(
            "SELECT count(*), sum(n) FROM ("
            " SELECT regexp_extract(line, '^([A-Z_]+)\\{', 1) AS metric,"
            '  regexp_extract(line, \'UUID="([^"]+)"\', 1) AS uuid, count(*) AS n,'
            "  avg(CAST(regexp_extract(line, '\\} (\\S+) \\d+$', 1) AS DOUBLE)) AS mean"
            " FROM read_csv(?, columns={'line': 'VARCHAR'}, delim='\t', header=false,"
            "  quote='', escape='', compression='gzip', auto_detect=false)"
            " WHERE NOT starts_with(line, '#') GROUP BY ALL)",
            [str(base / "files" / "*.prom.gz")],
        ).fetchall()
    groups, samples = rows[0]
    return {"seconds": time.perf_counter() - t0, "samples": int(samples), "groups": int(groups)}


def _child_file(base: Path, db: str) -> dict[str, object]:
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    files = sorted((base / "files").glob("*.prom.gz"))
    t0 = time.perf_counter()
    loaded = rejected = 0
    with connect(db) as con:
        init_warehouse(con)
        for f in files:
            stats = ingest_file(con, "dcgm", f, IngestOptions(cluster="bench"))
            loaded += stats.rows_loaded
            rejected += stats.rows_rejected
    return {"seconds": time.perf_counter() - t0, "samples": loaded, "rejected": rejected,
            "files": len(files)}  # fmt: skip


def _child_prom(base: Path, db: str, hosts_per_query: int = 0) -> dict[str, object]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pipelines.dcgm.resources import PrometheusDcgmSource
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse
    from tests.integration.prometheus.server import PrometheusTestServer

    tsdb = base / "tsdb"
    out: dict[str, object] = {}
    if not tsdb.is_dir():  # a kept folder's blocks are reused (``--keep``)
        t0 = time.perf_counter()
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "--max-block-duration=24h", "--quiet",
             "openmetrics", str(base / "day.om"), str(tsdb)],
            check=True, capture_output=True,
        )  # fmt: skip
        out["backfill_s"] = time.perf_counter() - t0
        (base / "day.om").unlink()
    hosts = sorted({p.name.split("_")[1] for p in (base / "files").glob("*.prom.gz")})
    out["hosts_per_query"] = hosts_per_query or None
    with PrometheusTestServer(tsdb) as server:
        source = PrometheusDcgmSource(
            url=server.url, spool_dir=str(base / "spool"), step_s=300, metrics=list(METRICS),
            timeout_s=600.0, max_workers=4, hosts=hosts if hosts_per_query else None,
            hosts_per_query=hosts_per_query or 50,
        )  # fmt: skip
        t1 = time.perf_counter()
        (path,) = source.fetch("bench", DAY)
        fetch_s = time.perf_counter() - t1
        assert server._proc is not None
        out["server_peak_mb"] = peak_rss_mb(str(server._proc.pid))
        fetch_peak = peak_rss_mb()
        out["fetch_peak_mb"] = fetch_peak  # this process's peak before the spool is loaded
    rss_before_load = _rss_mb()
    reset = _reset_peak()  # so that the load's own peak can be read
    t2 = time.perf_counter()
    with connect(db) as con:
        init_warehouse(con)
        stats = ingest_file(con, "dcgm", path, IngestOptions(cluster="bench"))
    load_s = time.perf_counter() - t2
    out.update(
        fetch_s=fetch_s, load_s=load_s, seconds=fetch_s + load_s, rows=stats.rows_loaded,
        spool_mb=path.stat().st_size / 1e6, rss_before_load_mb=rss_before_load,
        load_peak_mb=peak_rss_mb() if reset else None,
    )  # fmt: skip
    if reset:  # the process's peak over both phases
        out["peak_mb"] = max(fetch_peak, peak_rss_mb())
    return out


def _child_spool_load(path: Path, mode: str) -> dict[str, object]:
    """Load one DCGM file into a fresh warehouse: ``whole`` (``parse_dcgm`` of the whole file,
    then ``load_parse_result``: how ``ingest_file`` loaded it before the block-wise parse) or
    ``blocks`` (``ingest_file``); seconds, rows and this process's peak memory."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pipelines.dcgm import DCGM_CHUNK_BYTES
    from pipelines.dcgm._dcgm_parse import parse_dcgm
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse, load_parse_result

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with connect(Path(tmp) / "w.duckdb") as con:
            init_warehouse(con)
            if mode == "whole":
                result = parse_dcgm(path, cluster="bench")
                stats = load_parse_result(
                    con, source="dcgm", cluster="bench", file=path, result=result
                )
                del result
            else:
                stats = ingest_file(con, "dcgm", path, IngestOptions(cluster="bench"))
        seconds = time.perf_counter() - t0
    return {"mode": mode, "seconds": seconds, "rows": stats.rows_loaded,
            "rejected": stats.rows_rejected, "peak_mb": peak_rss_mb(),
            "chunk_bytes": DCGM_CHUNK_BYTES if mode == "blocks" else None}  # fmt: skip


def main() -> None:
    """Generate, measure each side in a subprocess, print the figures and ratios as JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=512)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and leave the files there")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "BASE", "DB"))
    ap.add_argument("--generate", metavar="BASE")
    ap.add_argument("--sides", default="floor,file,prom")
    ap.add_argument(
        "--hosts-per-query", type=int, default=0,
        help="prom: query the hosts in slices of N (0: one query per metric for all hosts)",
    )  # fmt: skip
    ap.add_argument(
        "--spool-load", metavar="FILE",
        help="only load this DCGM file (e.g. a kept spool) into fresh warehouses, twice each way:"
        " whole-file parse_dcgm + load_parse_result, and block-wise ingest_file",
    )  # fmt: skip
    ap.add_argument("--spool-load-mode", choices=("whole", "blocks"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.spool_load:
        if args.spool_load_mode:
            print(json.dumps(_child_spool_load(Path(args.spool_load), args.spool_load_mode)))
        else:
            for mode in ("whole", "blocks", "whole", "blocks"):
                proc = subprocess.run(
                    [sys.executable, __file__, "--spool-load", args.spool_load,
                     "--spool-load-mode", mode],
                    check=True, capture_output=True, text=True,
                )  # fmt: skip
                print(proc.stdout.strip().splitlines()[-1], flush=True)
        return
    if args.child:
        kind, base, db = args.child
        if kind == "floor":
            result = _child_floor(Path(base))
        elif kind == "file":
            result = _child_file(Path(base), db)
        else:
            result = _child_prom(Path(base), db, args.hosts_per_query)
        result.setdefault("peak_mb", peak_rss_mb())
        print(json.dumps(result))
        return
    sides = args.sides.split(",")
    has_prom = all(shutil.which(b) for b in ("prometheus", "promtool"))
    if args.generate:
        # the OpenMetrics file is only needed while the TSDB blocks are not built yet
        with_om = "prom" in sides and has_prom and not (Path(args.generate) / "tsdb").is_dir()
        print(json.dumps(write_inputs(Path(args.generate), args.hosts, args.hours, with_om)))
        return
    tmp = tempfile.TemporaryDirectory() if not args.keep else None
    base = Path(args.keep) if args.keep else Path(tmp.name)  # type: ignore[union-attr]
    try:
        t0 = time.perf_counter()
        written = run_side(
            __file__, "--hosts", str(args.hosts), "--hours", str(args.hours),
            "--sides", args.sides, "--generate", str(base),
        )  # fmt: skip
        files_mb = sum(f.stat().st_size for f in (base / "files").iterdir()) / 1e6
        out: dict[str, object] = {
            "hosts": args.hosts, "gpus": args.hosts * GPUS_PER_HOST, "hours": args.hours,
            "interval_s": INTERVAL_S, "metrics": list(METRICS), "samples": int(written["samples"]),
            "files": int(written["files"]), "files_mb_gz": files_mb,
            "generate_s": time.perf_counter() - t0,
        }  # fmt: skip
        for kind in sides:
            if kind == "prom" and not has_prom:
                out["prom"] = "skipped: prometheus/promtool not on PATH"
                continue
            db = str(base / f"{kind}.duckdb")
            out[kind] = run_side(
                __file__, "--child", kind, str(base), db,
                "--hosts-per-query", str(args.hosts_per_query), env=os.environ,
            )  # fmt: skip
            print(json.dumps({kind: out[kind]}), file=sys.stderr, flush=True)
        floor = out.get("floor")
        samples = int(written["samples"])
        for kind in ("file", "prom"):
            res = out.get(kind)
            if isinstance(res, dict):
                res["samples_per_s"] = samples / float(res["seconds"])
                if isinstance(floor, dict):
                    res["ratio_to_floor"] = float(res["seconds"]) / float(floor["seconds"])
        if isinstance(floor, dict):
            floor["samples_per_s"] = samples / float(floor["seconds"])
        print(json.dumps(out))
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
