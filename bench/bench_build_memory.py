"""Benchmark: the full rebuild's peak memory against the history's length, this tree against a
baseline tree, in one command.

For each ingested warehouse given (``--warehouse N=PATH``: N days of one generated fleet, e.g.
``bench_history.py``'s ``work/warehouse.duckdb`` of that length, with ``--data`` the fleet's
data folder for its configuration), the warehouse is copied under ``--work`` and rebuilt in
full (``rebuild(full=True)``) by ``bench/bench_history.py --child full`` of the baseline tree
(``--baseline-src``, a checkout of the earlier commit) and of this tree, alternately (baseline
first, ``--rounds`` times), each in a fresh process: wall and CPU seconds, peak resident memory
(``VmHWM``) and the tables and rows written. The two sides rebuild the same copy, so they do
equal work on equal rows; the ratios are this tree ÷ baseline. Each process imports its own
tree's ``pipelines`` first (so each gets its own allocator setting), and nothing else runs in
it.

Usage: ``flock /tmp/goodput-big.lock .venv/bin/python bench/bench_build_memory.py --data
ROOT/10000x365/data --baseline-src /tmp/goodput-base --warehouse 30=A.duckdb --warehouse
91=B.duckdb --warehouse 364=C.duckdb --work /tmp/goodput-build-memory --markdown``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._harness import last_json  # noqa: E402


def _full(tree: Path, data: Path, work: Path) -> dict[str, Any]:
    """One full rebuild of ``work/warehouse.duckdb`` by ``tree``'s code, in a fresh process."""
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(tree / "bench" / "bench_history.py"), "--child", "full",
         "--data", str(data), "--work", str(work)],
        capture_output=True, text=True, check=False, cwd=tree,
    )  # fmt: skip
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:], "process_s": round(time.perf_counter() - t, 2)}
    res: dict[str, Any] = last_json(proc.stdout)
    res["process_s"] = round(time.perf_counter() - t, 2)
    return res


def main() -> None:
    """Parse arguments, run the paired rebuilds, print JSON (and a markdown table)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, required=True, help="the fleet's data folder")
    ap.add_argument("--baseline-src", type=Path, required=True, help="the baseline checkout")
    ap.add_argument("--warehouse", action="append", required=True, help="N=PATH (N days)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/goodput-build-memory"))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    results: dict[int, dict[str, Any]] = {}
    for spec in a.warehouse:
        n_s, path = spec.split("=", 1)
        n = int(n_s)
        work = a.work / f"{n}d"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        shutil.copyfile(path, work / "warehouse.duckdb")
        runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
        for _ in range(a.rounds):
            for side, tree in (("baseline", a.baseline_src), ("this", REPO)):
                res = _full(tree, a.data, work)
                res["load_avg_end"] = round(os.getloadavg()[0], 1)
                runs[side].append(res)
                print(json.dumps({"days": n, "side": side, **res}), file=sys.stderr, flush=True)
        results[n] = runs
        shutil.rmtree(work)
    print(json.dumps({"results": results}))
    if a.markdown:
        _markdown(results)


def _med(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def _markdown(results: dict[int, dict[str, Any]]) -> None:
    print(
        "\n| history | baseline: wall / CPU s, peak MB | this tree: wall / CPU s, peak MB "
        "| peak ÷ baseline | wall ÷ baseline | tables, rows (both) |\n|---|---:|---:|---:|---:|---|"
    )
    for n, runs in results.items():
        b, t = runs["baseline"], runs["this"]
        if any("error" in r for r in b + t):
            err = next(r["error"] for r in b + t if "error" in r)
            print(f"| {n} d | error: {err[-200:]!r} |")
            continue
        print(
            f"| {n} d | {_med(b, 'wall_s'):.1f} / {_med(b, 'cpu_s'):.1f}, "
            f"{_med(b, 'peak_rss_mb'):,.0f} | {_med(t, 'wall_s'):.1f} / {_med(t, 'cpu_s'):.1f}, "
            f"{_med(t, 'peak_rss_mb'):,.0f} | "
            f"**{_med(t, 'peak_rss_mb') / _med(b, 'peak_rss_mb'):.2f}×** | "
            f"{_med(t, 'wall_s') / _med(b, 'wall_s'):.2f}× | "
            f"{b[0]['tables']}, {b[0]['rows']:,} / {t[0]['tables']}, {t[0]['rows']:,} |"
        )


if __name__ == "__main__":
    main()
