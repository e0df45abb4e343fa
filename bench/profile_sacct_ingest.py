"""Where ``ingest_file``'s time goes on a generated sacct file: parse, DuckDB insert, the close
(DuckDB's checkpoint and file sync), the file's sha256, the bookkeeping.

Generates the file of ``bench_sacct_ingest.py`` (N allocations, 3N lines, every time in the
past), then loads it into an empty warehouse under ``cProfile`` (serial: no parse-ahead) and
prints the functions that took the most time of their own, with polars' string read of the same
file first, for scale. Reading the figures: ``_iter_blocks`` (cumulative) is the parse; the own
time of ``load_parse_results`` plus polars' ``to_arrow`` is DuckDB's insert (DuckDB's C calls
are not profiled apart); ``connect`` (own time) is the close; ``update`` of ``_hashlib.HASH``
is the sha256.

Usage: ``python bench/profile_sacct_ingest.py [--allocations 250000] [--top 25]``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_sacct_ingest import write_file


def main() -> None:
    """Generate, time polars' read, profile the load; prints to standard output."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--allocations", type=int, default=250_000)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    from pipelines.kinds import IngestOptions, input_kind
    from pipelines.warehouse import connect, init_warehouse, load_parse_results

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sacct.psv"
        write_file(path, args.allocations)
        t0 = time.perf_counter()
        lines = pl.read_csv(path, separator="|", infer_schema=False, quote_char=None).height
        print(f"polars string read: {time.perf_counter() - t0:.2f} s, {lines} rows")
        chunked = input_kind("sacct").chunked
        assert chunked is not None
        db = Path(tmp) / "w.duckdb"

        def load() -> None:
            with connect(db) as con:
                init_warehouse(con)
                stats = load_parse_results(
                    con, source="sacct", cluster="bench", file=path,
                    results=chunked(path, IngestOptions(cluster="bench", tz="UTC")),
                )  # fmt: skip
            print(f"loaded {stats.rows_loaded} rows, rejected {stats.rows_rejected}")

        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.runcall(load)
        print(f"ingest (profiled): {time.perf_counter() - t0:.2f} s")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
