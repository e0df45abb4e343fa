"""Benchmark: a week of Kubernetes Events for 50,000 pods through ``goodput``'s ingest path,
against DuckDB's own ``read_json`` of the same files.

Writes JSON-lines files as an event exporter does (one ``events_<day>.jsonl`` per UTC day, one
Event object per line; an event that repeats is written again each time its count or series
grows, so the same uid appears on several lines). Per pod, a realistic mix:

- ``Scheduled``, then per container (a main container and a sidecar) ``Pulling``, ``Pulled``,
  ``Created``, ``Started`` (core/v1 Events, ``count`` 1);
- 60 % of pods pend first: ``FailedScheduling`` (events.k8s.io/v1, ``series.count`` 1..k, one
  line per update, k = 1..29, ``0/64 nodes are available: ... Insufficient nvidia.com/gpu``);
- 15 % crash-loop: ``BackOff`` (core/v1, ``count`` 1..k, one line per update, k = 1..39);
- 30 % are stopped: ``Killing``.

Then it measures, each in a process of its own (peak memory = the process's own ``VmHWM``; the
files are written by a process of their own too):

- floor: DuckDB ``read_json(format='newline_delimited')`` of every file into a table;
- ours: ``ingest_file(con, "k8s-events", f)`` for each file: ``parse_k8s_events`` (both Event
  APIs, one row per uid with its latest count, times typed) and the load into
  ``raw.k8s_events`` (``load_parse_result``, idempotent per file).

Usage: ``python bench/bench_k8s_events.py [--pods 50000] [--days 7]``. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import peak_rss_mb, run_side

T0 = datetime(2026, 11, 2, tzinfo=UTC)


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _core(pod: dict[str, Any], reason: str, msg: str, t0: datetime, t1: datetime, count: int,
          *, kind: str = "Normal", comp: str = "kubelet", uid: str) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "count": count,
        "eventTime": None,
        "firstTimestamp": _ts(t0),
        "lastTimestamp": _ts(t1),
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod["name"],
                           "namespace": pod["ns"], "uid": pod["uid"]},
        "message": msg,
        "metadata": {"creationTimestamp": _ts(t0), "name": f"{pod['name']}.{uid[:12]}",
                     "namespace": pod["ns"], "resourceVersion": str(pod["rv"]), "uid": uid},
        "reason": reason,
        "reportingComponent": comp,
        "reportingInstance": pod["node"],
        "source": {"component": comp, "host": pod["node"]},
        "type": kind,
    }  # fmt: skip


def _series(
    pod: dict[str, Any], t0: datetime, t1: datetime, count: int, uid: str
) -> dict[str, Any]:
    """A FailedScheduling in the events.k8s.io/v1 shape, with its series."""
    out: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "action": "Scheduling",
        "eventTime": t0.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "metadata": {"creationTimestamp": _ts(t0), "name": f"{pod['name']}.{uid[:12]}",
                     "namespace": pod["ns"], "resourceVersion": str(pod["rv"]), "uid": uid},
        "note": "0/64 nodes are available: 12 node(s) had untolerated taint {nvidia.com/xid: }, "
                "52 Insufficient nvidia.com/gpu. preemption: 0/64 nodes are available: 64 No "
                "preemption victims found for incoming pod.",
        "reason": "FailedScheduling",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": pod["name"],
                      "namespace": pod["ns"], "uid": pod["uid"]},
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-control-plane-1",
        "type": "Warning",
    }  # fmt: skip
    if count > 1:
        out["series"] = {"count": count, "lastObservedTime": t1.strftime(
            "%Y-%m-%dT%H:%M:%S.000000Z")}  # fmt: skip
    return out


def write_files(folder: Path, pods: int, days: int, seed: int = 11) -> dict[str, int]:
    """The exporter files of ``days`` days for ``pods`` pods; returns line and uid counts."""
    rng = random.Random(seed)
    span = days * 86400
    lines: dict[str, list[str]] = {}
    uids = 0

    def emit(obj: dict[str, Any], when: datetime) -> None:
        lines.setdefault(when.date().isoformat(), []).append(json.dumps(obj, separators=(",", ":")))

    for i in range(pods):
        ns = f"team-{i % 24:02d}"
        created = T0 + timedelta(seconds=rng.uniform(0, span - 7200))
        pod_uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        pod = {"name": f"job-{i:06d}-worker-0", "ns": ns, "node": f"gpu-node-{i % 64:02d}",
               "uid": pod_uid, "rv": 1000 + i}  # fmt: skip

        def new_uid() -> str:
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))

        t = created
        if rng.random() < 0.60:
            uid, k = new_uid(), rng.randint(1, 29)
            uids += 1
            first = t
            for c in range(1, k + 1):
                t = first + timedelta(seconds=60 * (c - 1))
                emit(_series(pod, first, t, c, uid), t)
            t += timedelta(seconds=30)
        uids += 1
        assigned = f"Successfully assigned {ns}/{pod['name']} to {pod['node']}"
        emit(_core(pod, "Scheduled", assigned, t, t, 1, comp="default-scheduler", uid=new_uid()), t)
        for container, image in (("trainer", "nvcr.io/nvidia/pytorch:24.10-py3"),
                                 ("sidecar", "registry.example.com/log-shipper:2.1")):  # fmt: skip
            pull = timedelta(seconds=rng.uniform(2, 90))
            for reason, msg, dt_ in (
                ("Pulling", f'Pulling image "{image}"', timedelta(0)),
                ("Pulled", f'Successfully pulled image "{image}" in {pull.total_seconds():.3f}s',
                 pull),
                ("Created", f"Created container {container}", pull),
                ("Started", f"Started container {container}", pull + timedelta(seconds=1)),
            ):  # fmt: skip
                uids += 1
                emit(_core(pod, reason, msg, t + dt_, t + dt_, 1, uid=new_uid()), t + dt_)
            t += pull
        if rng.random() < 0.15:
            uid, k = new_uid(), rng.randint(1, 39)
            uids += 1
            first = t + timedelta(seconds=20)
            for c in range(1, k + 1):
                last = first + timedelta(seconds=min(300, 10 * 2 ** min(c, 5)) * (c - 1))
                emit(_core(pod, "BackOff", "Back-off restarting failed container trainer in "
                           f"pod {pod['name']}_{ns}({pod['uid']})", first, last, c,
                           kind="Warning", uid=uid), last)  # fmt: skip
            t = last
        if rng.random() < 0.30:
            t += timedelta(seconds=rng.uniform(600, 7200))
            uids += 1
            emit(_core(pod, "Killing", "Stopping container trainer", t, t, 1, uid=new_uid()), t)
    total = 0
    for day, day_lines in sorted(lines.items()):
        (folder / f"events_{day}.jsonl").write_text("\n".join(day_lines) + "\n", encoding="utf-8")
        total += len(day_lines)
    return {"lines": total, "event_uids": uids, "files": len(lines)}


def _child(kind: str, folder: str, db: str) -> None:
    import duckdb

    files = sorted(Path(folder).glob("events_*.jsonl"))
    t0 = time.perf_counter()
    if kind == "floor":
        with duckdb.connect(db) as con:
            con.execute(
                "CREATE TABLE t AS SELECT * FROM read_json(?, format='newline_delimited', "
                "union_by_name=true)",
                [[str(f) for f in files]],
            )
            rows = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
            kept = rows
    else:
        from pipelines.ingest import IngestOptions, ingest_file
        from pipelines.warehouse import connect, init_warehouse

        rows = kept = 0
        with connect(db) as con:
            init_warehouse(con)
            for f in files:
                stats = ingest_file(con, "k8s-events", f, IngestOptions(cluster="bench"))
                kept += stats.rows_loaded
            info = con.execute(
                "SELECT sum(json_extract(info, '$.items')::BIGINT) FROM raw.ingests"
            ).fetchall()
            rows = int(info[0][0] or 0)
    elapsed = time.perf_counter() - t0
    print(json.dumps({"kind": kind, "seconds": elapsed, "lines": rows, "rows_kept": kept,
                      "peak_mb": peak_rss_mb()}))  # fmt: skip


def main() -> None:
    """Generate, measure both in subprocesses, print the figures and ratios as JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--child", nargs=3, metavar=("KIND", "FOLDER", "DB"))
    ap.add_argument("--generate", metavar="FOLDER")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.generate:
        print(json.dumps(write_files(Path(args.generate), args.pods, args.days)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "events"
        folder.mkdir()
        t0 = time.perf_counter()
        written = run_side(__file__, "--pods", str(args.pods), "--days", str(args.days),
                           "--generate", str(folder))  # fmt: skip
        out: dict[str, Any] = {"pods": args.pods, "days": args.days, **written,
                               "mb": sum(f.stat().st_size for f in folder.iterdir()) / 1e6,
                               "generate_s": time.perf_counter() - t0}  # fmt: skip
        for kind in ("floor", "ours"):
            db = str(Path(tmp) / f"{kind}.duckdb")
            out[kind] = run_side(__file__, "--child", kind, str(folder), db)
        out["ratio_to_floor"] = out["ours"]["seconds"] / out["floor"]["seconds"]
        out["lines_per_s"] = out["lines"] / out["ours"]["seconds"]
        out["memory_ratio_to_floor"] = out["ours"]["peak_mb"] / out["floor"]["peak_mb"]
        print(json.dumps(out))


if __name__ == "__main__":
    main()
