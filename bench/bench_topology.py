"""Benchmark: what the topology metrics cost inside one full rebuild.

Runs ``pipelines.analytics.build.rebuild(full=True)`` on a warehouse the scale benchmark has
ingested (``bench/bench_scale.py --keep --stages ingest_sacct,ingest_state,ingest_dcgm_hourly``)
with timers around the two topology steps of the build: ``_placement`` (``job_placement``) and
``_domain_tables`` (``domain_capacity_hourly``, ``segment_capacity_hourly``,
``topology_stranded_hourly``, ``topology_fragmentation_hourly``, ``large_job_wait_causes``).
Prints one JSON object: the rebuild's wall time, each step's, the topology total and its ratio
to the rest of the same rebuild, and the peak RSS.

Usage: ``flock /tmp/goodput-big.lock .venv/bin/python bench/bench_topology.py --root
/tmp/goodput-scale --size 1000x365``, or ``--config goodput.toml`` for the warehouse a
configuration names (the bundled fleet after ``goodput materialize``).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._harness import peak_rss_mb, write_bench_config  # noqa: E402 (after sys.path above)

CLUSTER = "scale-a"
STEPS = ("_placement", "_domain_tables")


def _timed(fn: Callable[..., Any], into: dict[str, float], name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into[name] = into.get(name, 0.0) + time.perf_counter() - t0

    return wrapper


def main() -> None:
    """Parse arguments, run the timed rebuild, print the JSON line."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default="/tmp/goodput-scale")
    ap.add_argument("--size", default="1000x365")
    ap.add_argument("--config", help="a goodput.toml whose warehouse to rebuild instead")
    a = ap.parse_args()
    from pipelines.analytics import build
    from pipelines.config import load_config
    from pipelines.warehouse import connect

    base = Path(a.root) / a.size
    work, data = base / "work", base / "data"
    times: dict[str, float] = {}
    for step in STEPS:
        setattr(build, step, _timed(getattr(build, step), times, step))
    cfg = load_config(a.config or write_bench_config(work, data, CLUSTER, "2025-01-01"))
    t0 = time.perf_counter()
    with connect(cfg.warehouse_path) as con:
        counts = build.rebuild(con, cfg, full=True)
        rows = {
            t: counts.get(t)
            for t in (
                "analytics.job_placement",
                "analytics.topology_fragmentation_hourly",
                "analytics.domain_capacity_hourly",
                "analytics.segment_capacity_hourly",
                "analytics.topology_stranded_hourly",
                "analytics.large_job_wait_causes",
            )
        }
    total = time.perf_counter() - t0
    topo = sum(times.values())
    print(
        json.dumps(
            {
                "size": a.config or a.size,
                "rebuild_s": round(total, 2),
                "steps_s": {k: round(v, 2) for k, v in times.items()},
                "topology_s": round(topo, 2),
                "rest_s": round(total - topo, 2),
                "topology_to_rest": round(topo / (total - topo), 3) if total > topo else None,
                "rows": rows,
                "peak_rss_mb": round(peak_rss_mb(), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
