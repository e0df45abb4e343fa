"""Benchmark: what the incremental plan's slurmd map comparison costs on a fleet-sized map.

A new day's plan compares the build's slurmd node map (``analytics.slurm_node_map``: one row
per slurmd pod's running interval) with the stored one
(:func:`pipelines.analytics.incremental._moved_map_spans`), after reading the stored map back.
This measures both on a synthetic map of a Slinky cluster: ``--nodes`` Slurm nodes, each run by
one slurmd pod at a time that is replaced every ``--restart-days`` days, over ``--days`` days
(the last pods still running at the cut-off), against the baseline every build already pays in
the same process: :func:`pipelines.core.slurm_on_k8s.slurm_node_map` building the map from the
slurmd pods.

Three comparisons, each the median of ``--repeat`` runs:

- ``unchanged``: the same map on both sides (a new day with no slurmd change);
- ``new_day``: the stored map is the map of the day before (its open intervals' pods replaced
  on the new day end there, and the new day's pods are new): a day's change;
- ``all_new``: no stored map (every interval of the new map is a span).

Prints one JSON line: rows of the map, each step's seconds, each step's ratio to the baseline,
the spans found and the cluster-days they plan (:func:`pipelines.analytics.incremental.
_map_telemetry_days`, the telemetry covering the whole history).

With ``--samples N``, ``raw.dcgm_samples`` also holds N stored 5-minute samples of the slurmd
pods (each a random GPU of a random node at a random time of the history, labelled with the pod
running there then; the columns the plan's bookkeeping reads, one load), the loads' pod days
are written from them as a full build writes them (``analytics.build_pod_days``:
``pod_days_index_s``, once), and each comparison also times
:func:`pipelines.analytics.incremental._map_pod_spans`: the read of those pod days for the days
of the pods that entered or left the map (``*_pod_scan_s``, ``*_pod_days``).

Usage: ``.venv/bin/python bench/bench_map_spans.py --nodes 1250 --days 365 --restart-days 1``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._harness import peak_rss_mb  # noqa: E402 (after sys.path above)

SLURM = "sok-bench"
K8S = "k8s-bench"
START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def slurmd_pods(nodes: int, days: int, restart_days: int, as_of: dt.datetime) -> pl.DataFrame:
    """:func:`pipelines.core.slurm_on_k8s.slurmd_pods` rows: for each Slurm node ``sok-i`` a pod
    per ``restart_days`` days on Kubernetes node ``kn-i`` (8 GPUs), each starting one minute
    after the last ended; a pod running at ``as_of`` ends there (open)."""
    per = max(1, -(-days // restart_days))
    node = pl.int_range(0, nodes, eager=True).alias("i")
    k = pl.int_range(0, per, eager=True).alias("k")
    frame = pl.DataFrame(node).join(pl.DataFrame(k), how="cross")
    start = pl.lit(START) + pl.duration(days=pl.col("k") * restart_days, minutes=1)
    end = pl.min_horizontal(
        pl.lit(START) + pl.duration(days=(pl.col("k") + 1) * restart_days), pl.lit(as_of)
    )
    return frame.select(
        pl.lit("slurm").alias("namespace"),
        pl.format("slurm-worker-sok-{}-{}", "i", "k").alias("pod"),
        pl.format("sok-{}", "i").alias("slurm_node"),
        pl.format("kn-{}", "i").alias("k8s_node"),
        pl.lit("sok").alias("nodeset"),
        pl.lit(8.0).alias("gpus"),
        start.alias("start_at"),
        end.alias("end_at"),
    ).filter(pl.col("start_at") < pl.col("end_at"))


def pod_samples(n: int, nodes: int, days: int, restart_days: int, seed: int = 1) -> pl.DataFrame:
    """``ts, ingest_id, cluster, namespace, pod``: ``n`` samples of :func:`slurmd_pods`' pods
    (one load), each at a random second of the history on a random node, labelled with the pod
    running there then (pod ``k`` of a node runs from day ``k × restart_days``)."""
    rng = pl.int_range(0, n, eager=True)
    secs = days * 86_400
    frame = pl.DataFrame({"r": rng}).select(
        (pl.col("r").hash(seed) % nodes).alias("i"),
        (pl.col("r").hash(seed + 1) % secs).cast(pl.Int64).alias("s"),
    )
    return frame.select(
        (pl.lit(START) + pl.duration(seconds=pl.col("s"))).alias("ts"),
        pl.lit(1, pl.Int64()).alias("ingest_id"),
        pl.lit(K8S).alias("cluster"),
        pl.lit("slurm").alias("namespace"),
        pl.format("slurm-worker-sok-{}-{}", "i", pl.col("s") // (86_400 * restart_days)).alias(
            "pod"
        ),
    ).sort("ts")


def _median(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    """Parse arguments, build and compare the maps, print the JSON line."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=1250)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--restart-days", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--samples", type=int, default=0, help="stored 5-minute samples of the pods")
    a = ap.parse_args()
    from pipelines.analytics.incremental import (
        _map_pod_spans,
        _map_telemetry_days,
        _moved_map_spans,
        _record_pod_days,
    )
    from pipelines.core.slurm_on_k8s import NODE_MAP_SCHEMA, slurm_node_map
    from pipelines.warehouse import connect, init_warehouse, read_table, replace_table

    as_of = START + dt.timedelta(days=a.days)
    comments = pl.DataFrame(
        schema={"cluster": pl.String(), "slurm_node": pl.String(),
                "polled_at": pl.Datetime("us", "UTC"), "namespace": pl.String(),
                "pod": pl.String(), "k8s_node": pl.String(), "nodeset": pl.String()}
    )  # fmt: skip
    pods = slurmd_pods(a.nodes, a.days, a.restart_days, as_of)
    build_s, new = _median(lambda: slurm_node_map(pods, comments, SLURM, as_of), a.repeat)
    # the map the day before: the pods of the new day not yet seen, the ones running then open
    before = as_of - dt.timedelta(days=1)
    old = slurm_node_map(pods.filter(pl.col("start_at") < before), comments, SLURM, before)
    pairs = pl.DataFrame({"cluster": [SLURM], "k8s_cluster": [K8S]})
    with tempfile.TemporaryDirectory() as tmp, connect(Path(tmp) / "w.duckdb") as con:
        init_warehouse(con)
        replace_table(con, "analytics.slurm_node_map", new)
        read_s, stored = _median(lambda: read_table(con, "analytics.slurm_node_map"), a.repeat)
        if a.samples:
            replace_table(
                con, "raw.dcgm_samples", pod_samples(a.samples, a.nodes, a.days, a.restart_days)
            )
            started = time.perf_counter()
            _record_pod_days(con, None)  # as a full build writes it
            index_s = time.perf_counter() - started
        assert stored.height == new.height and set(stored.columns) == set(NODE_MAP_SCHEMA)
        runs = {
            "unchanged": (stored, new),
            "new_day": (old, new),
            "all_new": (pl.DataFrame(), new),
        }
        out: dict[str, Any] = {
            "nodes": a.nodes, "days": a.days, "restart_days": a.restart_days,
            "map_rows": new.height, "samples": a.samples,
            "baseline_slurm_node_map_s": round(build_s, 4),
            "read_stored_map_s": round(read_s, 4), "read_ratio": round(read_s / build_s, 3),
        }  # fmt: skip
        if a.samples:
            out["pod_days_index_s"] = round(index_s, 4)
        # telemetry over the whole history, as the plan reads the loads' spans
        telemetry = pl.DataFrame({"cluster": [K8S], "lo": [START], "hi": [as_of]})
        for name, (o, n) in runs.items():
            secs, spans = _median(lambda o=o, n=n: _moved_map_spans(o, n, pairs), a.repeat)  # type: ignore[misc]
            out[f"{name}_s"] = round(secs, 4)
            out[f"{name}_ratio"] = round(secs / build_s, 3)
            out[f"{name}_spans"] = spans.height
            days = _map_telemetry_days(spans, telemetry, pairs)
            out[f"{name}_cluster_days"] = sum(len(d) for d in days.values())
            if a.samples:
                secs, found = _median(
                    lambda o=o, n=n: _map_pod_spans(con, o, n, pairs),  # type: ignore[misc]
                    a.repeat,
                )
                out[f"{name}_pod_scan_s"] = round(secs, 4)
                out[f"{name}_pod_scan_ratio"] = round(secs / build_s, 3)
                out[f"{name}_pod_days"] = found.height
    out["peak_rss_mb"] = round(peak_rss_mb())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
