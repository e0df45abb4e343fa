"""Benchmark: ingest of a generated sacct file against DuckDB's own read_csv and polars' string
read of the same file.

Writes a ``sacct --parsable2 --duplicates`` file with N allocations, each followed by its
``.batch`` and ``.extern`` steps (3N lines), every time in the past (the last allocation ends at
``--end``, default the start of yesterday, UTC: the product rejects times more than a day past
the ingest, and a generator writing them would make the two sides do unequal work), then
measures in separate processes (so peak memory
is each one's own; the file is written by a process of its own too, because on Linux a child's
``ru_maxrss`` starts at its parent's peak):

- floor: DuckDB ``read_csv(all_varchar)`` of the file into a table of strings;
- polars: ``pl.read_csv(infer_schema=False)`` of the file into a frame of strings, in memory
  (the yardstick of issue 19: parse and load aims at 2× it);
- ours: ``ingest_file``: ``iter_parse_sacct`` (every value typed, identities, GPUs, hostlists;
  the file streamed in blocks of 64 MiB) plus the load of each block into the warehouse's raw
  table, in one transaction (``load_parse_results``), the next block parsed in a worker thread
  while DuckDB stores the current one. Its time includes closing the connection (DuckDB's
  checkpoint);
- serial: the same with ``load_parse_results(prefetch=False)``: each block parsed, then
  stored (what ``ingest_file`` did before the parse-ahead).

Each side states the rows it loaded and rejected: the floor and polars keep every line as
strings (they reject none); ``ingest_file`` reports ``rows_loaded`` and ``rows_rejected``
(rejected rows go to ``raw.rejected_rows``), so equal work means every side loads 3N rows and
ours rejects none.

Usage: ``python bench/bench_sacct_ingest.py [--allocations 1000000] [--end 2026-12-01]
[--sides floor,polars,ours,serial] [--repeat 1]``. Prints one JSON line; with ``--repeat``, each
side's figures are lists (the sides alternate, so a change of the shared machine's load falls on
all of them).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import peak_rss_mb, run_side

FIELDS = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|User|Submit|Eligible|Start|End|Elapsed|"
    "ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)


#: Seconds between two allocations' submit times; each waits 600 s and runs 3,600 s.
_STEP_S, _WAIT_S, _RUN_S = 31, 600, 3600


def default_end() -> dt.datetime:
    """The start of yesterday (UTC, naive): the default end of the last allocation."""
    today = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (today - dt.timedelta(days=1)).replace(tzinfo=None)


def write_file(path: Path, n: int, end: dt.datetime | None = None) -> None:
    """N allocations + 2N steps, built column-wise with polars (seconds for millions of rows).

    Allocation ``i`` is submitted at ``t0 + 31·i`` s, starts 600 s later and ends 3,600 s after
    that, with ``t0`` chosen so the last one ends at ``end`` (naive UTC; default
    :func:`default_end`): no time is in the future."""
    last = end or default_end()
    t0 = last - dt.timedelta(seconds=(n - 1) * _STEP_S + _WAIT_S + _RUN_S)
    i = pl.int_range(0, n, eager=True).alias("i")
    base = pl.DataFrame(i).with_columns(
        (pl.col("i") + 1_000_000).cast(pl.String).alias("id"),
        (pl.col("i") % 64 + 1).alias("node"),
        (pl.col("i") % 8 + 1).alias("g"),
        pl.lit(t0).cast(pl.Datetime("us")).alias("t0"),
    )
    t = base.with_columns(
        (pl.col("t0") + pl.duration(seconds=pl.col("i") * _STEP_S)).alias("submit"),
        (pl.col("t0") + pl.duration(seconds=pl.col("i") * _STEP_S + _WAIT_S)).alias("start"),
        (pl.col("t0") + pl.duration(seconds=pl.col("i") * _STEP_S + _WAIT_S + _RUN_S)).alias("end"),
    ).with_columns(
        pl.col("submit").dt.strftime("%Y-%m-%dT%H:%M:%S").alias("s"),
        pl.col("start").dt.strftime("%Y-%m-%dT%H:%M:%S").alias("st"),
        pl.col("end").dt.strftime("%Y-%m-%dT%H:%M:%S").alias("en"),
        pl.format("gpu-{}", pl.col("node").cast(pl.String).str.zfill(3)).alias("host"),
        pl.format("billing={},cpu={},gres/gpu={},mem=64G,node=1", "g", "g", "g").alias("tres"),
    )

    def rows(suffix: str, name: str) -> pl.DataFrame:
        return t.select(
            pl.concat_str(
                [
                    pl.col("id") + suffix, pl.col("id") + suffix, pl.lit("bench"), pl.lit("gpu"),
                    pl.lit("normal"), pl.format("team{}", pl.col("i") % 12), pl.lit("alice"),
                    "s", "s", "st", "en", pl.lit("01:00:00"), pl.lit("0:0"), pl.lit("COMPLETED"),
                    pl.lit("1"), pl.col("g").cast(pl.String), "tres", "tres",
                    pl.lit("04:00:00"), "host", pl.lit(name),
                ],
                separator="|",
            ).alias("line"),
            pl.col("i"),
            pl.lit({"": 0, ".batch": 1, ".extern": 2}[suffix]).alias("k"),
        )  # fmt: skip

    allrows = pl.concat([rows("", "train"), rows(".batch", "batch"), rows(".extern", "extern")])
    lines = allrows.sort("i", "k")["line"]
    with path.open("w", encoding="utf-8") as fh:
        fh.write(FIELDS + "\n")
        fh.write("\n".join(lines.to_list()))
        fh.write("\n")


def _child(kind: str, path: str, db: str) -> None:
    import duckdb

    t0 = time.perf_counter()
    if kind == "floor":
        with duckdb.connect(db) as con:
            con.execute(
                "CREATE TABLE t AS SELECT * FROM read_csv(?, delim='|', header=true,"
                " all_varchar=true, quote='', escape='')",
                [path],
            )
            rows = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
        rejected = 0  # every line is kept as strings: nothing is checked, nothing rejected
    elif kind == "polars":
        df = pl.read_csv(path, separator="|", infer_schema=False, quote_char=None)
        rows, rejected = df.height, 0  # strings, as read: nothing checked, nothing rejected
    elif kind == "serial":
        from pipelines.kinds import IngestOptions, input_kind
        from pipelines.warehouse import connect, init_warehouse, load_parse_results

        chunked = input_kind("sacct").chunked
        assert chunked is not None
        with connect(db) as con:
            init_warehouse(con)
            stats = load_parse_results(
                con, source="sacct", cluster="bench", file=Path(path), prefetch=False,
                results=chunked(Path(path), IngestOptions(cluster="bench", tz="UTC")),
            )  # fmt: skip
            rows, rejected = stats.rows_loaded, stats.rows_rejected
    else:
        from pipelines.ingest import IngestOptions, ingest_file
        from pipelines.warehouse import connect, init_warehouse

        with connect(db) as con:
            init_warehouse(con)
            stats = ingest_file(con, "sacct", Path(path), IngestOptions(cluster="bench", tz="UTC"))
            rows, rejected = stats.rows_loaded, stats.rows_rejected
    elapsed = time.perf_counter() - t0
    peak_mb = peak_rss_mb()
    print(json.dumps({"kind": kind, "seconds": elapsed, "rows": rows, "rejected": rejected,
                      "peak_mb": peak_mb}))  # fmt: skip


def main() -> None:
    """Generate, measure both in subprocesses, print the figures and ratios as JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--allocations", type=int, default=1_000_000)
    ap.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "DB"))
    ap.add_argument("--generate", metavar="PATH")
    ap.add_argument("--sides", default="floor,polars,ours,serial")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--end", type=dt.datetime.fromisoformat, default=None,
        help="naive UTC end of the last allocation (default: the start of yesterday)",
    )  # fmt: skip
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.generate:
        write_file(Path(args.generate), args.allocations, args.end)
        return
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "sacct.psv"
        t0 = time.perf_counter()
        end = args.end or default_end()
        generate = ["--allocations", str(args.allocations), "--generate", str(f),
                    "--end", end.isoformat()]  # fmt: skip
        subprocess.run([sys.executable, __file__, *generate], check=True)
        gen_s = time.perf_counter() - t0
        out = {"allocations": args.allocations, "lines": 3 * args.allocations,
               "last_end": end.isoformat(), "file_mb": f.stat().st_size / 1e6,
               "generate_s": gen_s}  # fmt: skip
        sides = args.sides.split(",")
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
        for _ in range(args.repeat):
            for kind in sides:
                db = Path(tmp) / f"{kind}.duckdb"
                for old in (db, Path(f"{db}.wal")):
                    old.unlink(missing_ok=True)
                runs[kind].append(run_side(__file__, "--child", kind, str(f), str(db)))
        for kind, got in runs.items():
            out[kind] = got[0] if args.repeat == 1 else {
                k: [g[k] for g in got] for k in got[0] if k != "kind"
            }  # fmt: skip
        # Paired ratios (each round's sides ran one after the other): ours and serial against
        # each baseline, and ours (parse-ahead) against serial.
        for top, base in (("ours", "floor"), ("ours", "polars"), ("serial", "polars"),
                          ("ours", "serial")):  # fmt: skip
            if top in runs and base in runs:
                out[f"{top}_ratio_to_{base}"] = [
                    o["seconds"] / b["seconds"] for o, b in zip(runs[top], runs[base], strict=True)
                ]
        # Equal work: every side holds every line (ours rejects none of the generated rows).
        out["equal_work"] = all(
            g["rows"] == 3 * args.allocations and g["rejected"] == 0
            for got in runs.values() for g in got
        )  # fmt: skip
        print(json.dumps(out))


if __name__ == "__main__":
    main()
