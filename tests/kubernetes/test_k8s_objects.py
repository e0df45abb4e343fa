"""``goodput ingest k8s-objects``: Kueue Workload/ClusterQueue/LocalQueue and Node snapshots.

Hand-written dumps for the parser and the loader; the bundled sample fleet for the snapshots it
writes and for the attempts rebuilt with and without its Workload objects.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines._file_source import files_for_day
from pipelines._parse_result import InputFormatError
from pipelines.cli import app
from pipelines.core.k8s_attempts import k8s_attempts
from pipelines.core.k8s_gpu_units import nodes_in_gpus
from pipelines.ingest import IngestOptions, ingest_file, parse_file
from pipelines.kubernetes._events_parse import parse_k8s_events
from pipelines.kubernetes._objects import parse_k8s_nodes, parse_k8s_objects
from pipelines.kubernetes._pods_parse import parse_k8s_pods
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.sql import SQL_DIR

UTC = dt.UTC
SNAP = dt.datetime(2026, 11, 3, 23, 59, 59, tzinfo=UTC)


def _node(name: str, *, gpus: str = "8", ready: str = "True", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-10-01T08:00:00Z",
            "labels": {
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "topology.kubernetes.io/rack": "r7",
            },
        },
        "spec": extra.get("spec", {}),
        "status": {
            "capacity": {"cpu": "112", "nvidia.com/gpu": gpus, "nvidia.com/mig-3g.40gb": "0"},
            "allocatable": extra.get("allocatable", {"cpu": "110", "nvidia.com/gpu": gpus}),
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": "KubeletReady",
                    "lastTransitionTime": "2026-11-03T10:00:00Z",
                }
            ],
        },
    }


def _cq(name: str, quota: Any, **gpu: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": "2026-10-01T08Z"},
        "spec": {"cohort": "all", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                 "flavors": [{"name": "h100", "resources": [
                     {"name": "nvidia.com/gpu", "nominalQuota": quota, **gpu}]}]}]},
        "status": {"flavorsUsage": [{"name": "h100", "resources": [
            {"name": "nvidia.com/gpu", "total": "6", "borrowed": "0"}]}]},
    }  # fmt: skip


def _lq(ns: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": f"lq-{ns}", "namespace": ns, "uid": f"uid-lq-{ns}"},
        "spec": {"clusterQueue": cq},
        "status": {"pendingWorkloads": 2, "admittedWorkloads": 1},
    }


def _workload() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job-a-1f2e3", "namespace": "nlp", "uid": "uid-wl",
                     "creationTimestamp": "2026-11-03T09:00:00Z"},
        "spec": {"queueName": "lq-nlp", "podSets": [{"name": "main", "count": 2, "template": {
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"nvidia.com/gpu": "4"}}}]}}}]},
        "status": {"conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "lastTransitionTime": "2026-11-03T09:05:00Z", "message": "Quota reserved in "
             "ClusterQueue cq-a, wait time since queued was 300s"},
            {"type": "Admitted", "status": "True", "reason": "Admitted",
             "lastTransitionTime": "2026-11-03T09:05:00Z", "message": "admitted"}],
            "admission": {"clusterQueue": "cq-a", "podSetAssignments": [
                {"name": "main", "count": 2, "resourceUsage": {"nvidia.com/gpu": "8"}}]}},
    }  # fmt: skip


def _write(path: Path, items: list[Any], *, mtime: dt.datetime = SNAP) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def test_a_mixed_list_splits_by_kind_and_rejects_other_kinds(tmp_path: Path) -> None:
    """``kubectl get workloads,clusterqueues,localqueues,nodes`` as one List: each item to its
    table; a Pod in it is a rejected row (field ``kind``) of the file, not dropped."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}}
    f = _write(tmp_path / "objects.json",
               [_workload(), _cq("cq-a", 16), _lq("nlp", "cq-a"), _node("n1"), pod])  # fmt: skip
    got = parse_k8s_objects(f, cluster="k8s-x")
    assert set(got) == {"k8s-workloads", "kueue-cluster-queues", "kueue-local-queues", "k8s-nodes"}
    assert {k: v.rows.height for k, v in got.items()} == dict.fromkeys(got, 1)
    rejected = pl.concat([v.rejected for v in got.values()])
    assert rejected.select("line_no", "field").rows() == [(5, "kind")]
    assert "Pod" in rejected["raw"][0] and "kind not loaded" in rejected["reason"][0]
    # every row carries the snapshot time (the file's modification time) and the cluster
    for v in got.values():
        assert v.rows["snapshot_at"].to_list() == [SNAP]
        assert v.rows["cluster"].to_list() == ["k8s-x"]
    wl = got["k8s-workloads"].rows.row(0, named=True)
    # 2 pods × 4 GPUs requested; admitted usage 8; conditions give the stage times
    assert (wl["gpus"], wl["gpus_admitted"], wl["cluster_queue"]) == (8.0, 8.0, "cq-a")
    assert wl["quota_reserved_at"] == dt.datetime(2026, 11, 3, 9, 5, tzinfo=UTC)


def test_node_row(tmp_path: Path) -> None:
    """Node: GPU product and rack labels, GPU capacity/allocatable, Ready, cordon and taints.
    MIG capacity ``mig-3g.40gb: 0`` adds 0 × 3/7 GPUs; a cordoned node that is not Ready keeps
    both facts; a taint is ``key=value:effect``."""
    bad = _node("n2", gpus="8", ready="False",
                spec={"unschedulable": True,
                      "taints": [{"key": "nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]},
                allocatable={"nvidia.com/gpu": "7"})  # fmt: skip
    broken = _node("n3")
    broken["status"]["capacity"]["nvidia.com/gpu"] = "eight"
    f = _write(tmp_path / "nodes_2026-11-03.json", [_node("n1"), bad, broken])
    res = parse_k8s_nodes(f, cluster="k8s-x")
    rows = {r["name"]: r for r in res.rows.to_dicts()}
    assert rows["n1"]["gpu_product"] == "NVIDIA-H100-80GB-HBM3" and rows["n1"]["rack"] == "r7"
    assert (rows["n1"]["gpu_capacity"], rows["n1"]["gpu_allocatable"]) == (8.0, 8.0)
    assert rows["n1"]["ready"] is True and rows["n1"]["unschedulable"] is False
    assert (rows["n2"]["gpu_allocatable"], rows["n2"]["ready"], rows["n2"]["unschedulable"]) == (
        7.0, False, True)  # fmt: skip
    assert json.loads(rows["n2"]["taints"]) == ["nvidia.com/xid=79:NoSchedule"]
    assert rows["n2"]["ready_since"] == dt.datetime(2026, 11, 3, 10, tzinfo=UTC)
    assert res.rejected.select("line_no", "field").rows() == [(3, "status.capacity.nvidia.com/gpu")]
    with pytest.raises(InputFormatError, match="no item is a Node"):
        parse_k8s_nodes(_write(tmp_path / "cq.json", [_cq("cq-a", 8)]))


def test_ingest_is_idempotent_per_file_and_kind(tmp_path: Path) -> None:
    """Loading the same file twice keeps one copy per table; a kind that left the file is
    replaced by nothing; rejected rows carry file, line, field and reason."""
    f = _write(tmp_path / "objects.json", [_cq("cq-a", 16), _cq("cq-b", "bad"), _node("n1")])
    opts = IngestOptions(cluster="k8s-x")
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        first = ingest_file(con, "k8s-objects", f, opts)
        again = ingest_file(con, "k8s-objects", f, opts)

        def counts() -> list[int]:
            return [
                int(con.execute(f"SELECT count(*) FROM raw.{t}").fetchall()[0][0])
                for t in ("kueue_cluster_queues", "k8s_nodes")
            ]

        assert (first.rows_loaded, first.rows_rejected) == (2, 1)
        assert (again.rows_loaded, again.replaced_ingests) == (2, 2)
        assert counts() == [1, 1]
        rej = con.execute("SELECT source, line_no, field, reason FROM raw.rejected_rows").fetchall()
        assert rej == [("kueue-cluster-queues", 2,
                        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
                        "not a quantity: 'bad'")]  # fmt: skip
        _write(f, [_cq("cq-a", 16)])  # the nodes left the dump
        ingest_file(con, "k8s-objects", f, opts)
        assert counts() == [1, 0]
        # one sub-kind through parse_file, as the Dagster asset test does for the others
        assert parse_file("kueue-cluster-queues", f, opts).rows["name"].to_list() == ["cq-a"]


def test_cli_ingest_k8s_objects(tmp_path: Path, isolated_config: Path) -> None:
    """``goodput ingest k8s-objects FILE --db DB`` loads the four tables and the views."""
    f = _write(tmp_path / "objects.json", [_workload(), _cq("cq-a", 16), _lq("nlp", "cq-a")])
    db = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(
        app, ["ingest", "k8s-objects", str(f), "--db", str(db), "--cluster", "k8s-x"]
    )
    assert result.exit_code == 0, result.output
    assert "3 rows loaded, 0 rejected" in result.output
    with connect(db, read_only=True) as con:
        cq = con.sql("SELECT name, nominal_gpus, usage_gpus, snapshot_at, as_of "
                     "FROM kueue_cluster_queues").fetchall()  # fmt: skip
        assert cq == [("cq-a", 16.0, 6.0, SNAP, SNAP)]
        assert con.sql("SELECT name, cluster_queue FROM kueue_local_queues").fetchall() == [
            ("lq-nlp", "cq-a")
        ]


def test_views_keep_the_latest_snapshot_per_queue(tmp_path: Path) -> None:
    """Two snapshots: the queue's rows come from the newer; a queue only in the older one keeps
    its old row with ``snapshot_at`` < ``as_of``."""
    old = SNAP - dt.timedelta(days=1)
    f1 = _write(tmp_path / "clusterqueues_2026-11-02.json", [_cq("cq-a", 16), _cq("cq-gone", 8)],
                mtime=old)  # fmt: skip
    f2 = _write(tmp_path / "clusterqueues_2026-11-03.json", [_cq("cq-a", 24)])
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        for f in (f2, f1):  # load order does not matter
            ingest_file(con, "k8s-objects", f, IngestOptions(cluster="k8s-x"))
        for view in ("kueue_cluster_queues", "kueue_local_queues"):
            con.execute((SQL_DIR / "views" / f"{view}.sql").read_text())
        got = con.sql("SELECT name, nominal_quota, snapshot_at, as_of FROM kueue_cluster_queues "
                      "ORDER BY name").fetchall()  # fmt: skip
    assert got == [("cq-a", 24.0, SNAP, SNAP), ("cq-gone", 8.0, old, SNAP)]


def test_file_source_globs_the_object_snapshots(tmp_path: Path) -> None:
    """``<inputs>/<cluster>/k8s/{workloads,clusterqueues,localqueues,nodes}_<day>.json`` are the
    ``k8s-objects`` files of that day; events and pods are not."""
    k8s = tmp_path / "c" / "k8s"
    k8s.mkdir(parents=True)
    for stem in ("workloads", "clusterqueues", "localqueues", "nodes", "events", "pods"):
        (k8s / f"{stem}_2026-11-03.json").write_text("{}")
    got = [p.name for p in files_for_day(tmp_path / "c", "k8s-objects", "2026-11-03")]
    assert got == ["clusterqueues_2026-11-03.json", "localqueues_2026-11-03.json",
                   "nodes_2026-11-03.json", "workloads_2026-11-03.json"]  # fmt: skip


# -- the bundled sample fleet ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet_k8s(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Six days of the fleet (the planted preemptions included) with every Kubernetes file."""
    from pipelines.sample_fleet._generate import simulate_fleet
    from pipelines.sample_fleet._k8s_writers import (
        build_events,
        write_cluster_queues_day,
        write_events_day,
        write_local_queues_day,
        write_pods_day,
        write_workloads_day,
    )
    from pipelines.sample_fleet._model import TEAMS

    fleet = simulate_fleet(days=6)
    out = tmp_path_factory.mktemp("k8s-objects")
    events = build_events(fleet.k8s.workloads, fleet.k8s.pools, len(fleet.k8s_cluster.nodes),
                          fleet.k8s_window[1])  # fmt: skip
    ev, pods, wls = [], [], []
    for i, (d, a, b) in enumerate(fleet.k8s_days):
        write_events_day(out / f"events_{d}.json", events, a, b)
        write_pods_day(out / f"pods_{d}.json", fleet.k8s.workloads, fleet.k8s.pools, a, b)
        write_workloads_day(out / f"workloads_{d}.json", fleet.k8s.workloads, a, b)
        ev.append(parse_k8s_events(out / f"events_{d}.json", cluster="k8s-b").rows)
        pods.append(parse_k8s_pods(out / f"pods_{d}.json", cluster="k8s-b").rows
                    .with_columns(pl.lit(i).alias("ingest_id")))  # fmt: skip
        wls.append(parse_k8s_objects(out / f"workloads_{d}.json", cluster="k8s-b")["k8s-workloads"]
                   .rows)  # fmt: skip
    a, b = fleet.k8s_days[-1][1:]
    write_cluster_queues_day(out / "cq.json", fleet.k8s.workloads, fleet.k8s.quotas, a - 86400, b)
    write_local_queues_day(out / "lq.json", fleet.k8s.workloads, TEAMS, a - 86400, b)
    return {
        "fleet": fleet,
        "out": out,
        "pods": pl.concat(pods).sort("ingest_id").unique(["cluster", "uid"], keep="last"),
        "events": pl.concat(ev).sort("count", "last_seen").unique(["cluster", "uid"], keep="last"),
        "workloads": pl.concat(wls).sort("snapshot_at").unique(["cluster", "uid"], keep="last"),
    }


def test_fleet_attempts_are_the_same_with_workload_objects(fleet_k8s: dict[str, Any]) -> None:
    """The pods+events rebuild and the rebuild that also reads the Workload snapshots give the
    same attempts: group, attempt number, state, start, end, GPUs and per-pod GPU-seconds. (A
    workload created before the window is a bare group named after its Job without the object,
    and its Workload's name with it: compared under the Workload's name.)"""
    fleet = fleet_k8s["fleet"]
    wl_of_job = {w.job_name: w.wl_name for w in fleet.k8s.workloads}
    cols = ["group", "attempt", "state", "start_at", "end_at", "gpus", "gpu_s"]

    def rows(workloads: pl.DataFrame | None) -> list[tuple[Any, ...]]:
        a = k8s_attempts(fleet_k8s["pods"], fleet_k8s["events"], workloads).attempts
        return sorted(a.with_columns(pl.col("group").replace(wl_of_job)).select(cols).rows())

    without, with_objects = rows(None), rows(fleet_k8s["workloads"])
    assert len(without) > 300
    assert with_objects == without
    # the planted workload: preempted twice, three attempts, in both
    planted = next(w for w in fleet.k8s.workloads if w.planted)
    states = [r[2] for r in with_objects if r[0] == planted.wl_name]
    assert states == ["PREEMPTED", "PREEMPTED", "COMPLETED"]


def test_fleet_workload_conditions_follow_the_simulation(fleet_k8s: dict[str, Any]) -> None:
    """The planted workload's last snapshot: admitted at its third admission, Finished
    Succeeded at the simulated end, two evictions counted, Evicted no longer holding."""
    fleet = fleet_k8s["fleet"]
    planted = next(w for w in fleet.k8s.workloads if w.planted)
    row = fleet_k8s["workloads"].filter(pl.col("uid") == planted.wl_uid).row(0, named=True)
    third = planted.attempts[2]
    assert third.reserved is not None and third.end is not None
    assert row["admitted_at"] == dt.datetime.fromtimestamp(third.reserved, UTC)
    assert row["finished_at"] == dt.datetime.fromtimestamp(third.end, UTC)
    assert (row["finished_reason"], row["evictions"], row["evicted_at"]) == ("Succeeded", 2, None)
    assert row["requeued_at"] == dt.datetime.fromtimestamp(third.queued, UTC)


def test_fleet_cluster_queues_hold_the_simulated_quotas(fleet_k8s: dict[str, Any]) -> None:
    """ClusterQueues: the quotas the simulation admitted by (5 and 3 nodes × 8 GPUs), one
    cohort, ``cq-prod`` lending nothing; LocalQueues map each team to ``cq-<group>``."""
    out = fleet_k8s["out"]
    cq = parse_k8s_objects(out / "cq.json", cluster="k8s-b")["kueue-cluster-queues"].rows
    got = cq.sort("name").select("name", "cohort", "nominal_gpus", "lending_limit").rows()
    assert got == [("cq-prod", "gpu-fleet", 24.0, 0.0), ("cq-research", "gpu-fleet", 40.0, None)]
    lq = parse_k8s_objects(out / "lq.json", cluster="k8s-b")["kueue-local-queues"].rows
    from pipelines.sample_fleet._model import TEAMS

    assert dict(lq.select("namespace", "cluster_queue").rows()) == {
        t.name: f"cq-{t.group}" for t in TEAMS
    }


def test_renamed_time_sliced_mig_slices_are_gpus(tmp_path: Path) -> None:
    """MIG "mixed" strategy, one H100 cut into 7 × 1g.10gb slices time-sliced in 2 replicas,
    renamed (``renameByDefault``): the node advertises ``nvidia.com/mig-1g.10gb.shared: 14``
    and GFD labels ``nvidia.com/mig-1g.10gb.replicas: "2"``. Parsed: 14 × 1/7 = 2 (before: no
    GPU resource, 0 GPUs); in physical GPUs (core): 2 ÷ 2 = 1."""
    node = _node("n1", allocatable={"nvidia.com/mig-1g.10gb.shared": "14"})
    node["status"]["capacity"] = {"nvidia.com/mig-1g.10gb.shared": "14"}
    node["metadata"]["labels"] |= {"nvidia.com/mig.strategy": "mixed",
                                   "nvidia.com/mig-1g.10gb.replicas": "2",
                                   "nvidia.com/mig-1g.10gb.product":
                                   "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"}  # fmt: skip
    rows = parse_k8s_nodes(_write(tmp_path / "nodes.json", [node]), cluster="k8s-x").rows
    ((cap, alloc, res),) = rows.select("gpu_capacity", "gpu_allocatable", "gpu_resource").rows()
    assert (cap, alloc, res) == (pytest.approx(2.0), pytest.approx(2.0),
                                 "nvidia.com/mig-1g.10gb.shared")  # fmt: skip
    physical = nodes_in_gpus(rows)
    assert physical.select("gpu_capacity", "gpu_allocatable").row(0) == pytest.approx((1.0, 1.0))
