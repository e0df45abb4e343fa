"""Kueue Workload topology requests and assignments (v1beta1 ``domains``, v1beta2 ``slices``),
from the Workload CRD's own examples and kueue issue #8636, and their nodes fed to placement."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from metrics import assignment_node_lists, job_placement, with_assignment_nodes
from pipelines.kubernetes._objects import WORKLOAD_TOPOLOGY_SOURCE, parse_k8s_objects

FIXTURE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "kueue-tas" / "workloads_topology.json"
)
WHEN = dt.datetime(2026, 11, 2, 9, tzinfo=dt.UTC)
UTC = pl.Datetime("us", "UTC")


def _rows() -> pl.DataFrame:
    res = parse_k8s_objects(FIXTURE, cluster="k", snapshot_at=WHEN)[WORKLOAD_TOPOLOGY_SOURCE]
    return res.rows


def _domains(rows: pl.DataFrame, name: str) -> list[tuple[list[str], int]]:
    one = rows.filter(pl.col("name") == name).sort("domain_index")
    return list(zip(one["values"].to_list(), one["pods"].to_list(), strict=True))


def test_v1beta1_domains_and_v1beta2_slices_give_the_same_placement() -> None:
    """The CRD's v1beta1 example and its v1beta2 "Example 2" (universal block-1, prefix rack-
    with roots 1, 2, pod counts [4, 2]) both read as block-1/rack-1 ×4 and block-1/rack-2 ×2."""
    rows = _rows()
    want = [(["block-1", "rack-1"], 4), (["block-1", "rack-2"], 2)]
    assert _domains(rows, "crd-example-v1beta1") == want
    assert _domains(rows, "crd-example-2") == want
    assert rows.filter(pl.col("name") == "crd-example-2")["levels"].to_list()[0] == [
        "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack",
    ]  # fmt: skip


def test_two_slices_with_prefixes_expand_to_six_nodes() -> None:
    """ "Example 4": slices of 4 and 2 domains with prefixes block-1-rack-1-node- and
    block-1-rack-2-node-, one pod each: 6 hostname domains, 6 pods."""
    got = _domains(_rows(), "crd-example-4")
    assert [v[0] for v, _ in got] == [f"block-1-rack-1-node-{i}" for i in (1, 2, 3, 4)] + [
        f"block-1-rack-2-node-{i}" for i in (1, 2)
    ]
    assert sum(p for _, p in got) == 6


def test_an_empty_root_is_the_prefix_itself() -> None:
    """kueue#8636: prefix kind-worker with roots "", 2, 3, 4 is nodes kind-worker,
    kind-worker2, kind-worker3, kind-worker4."""
    got = _domains(_rows(), "kind-job")
    assert [v[0] for v, _ in got] == ["kind-worker", "kind-worker2", "kind-worker3", "kind-worker4"]


def test_topology_requests_are_kept_and_a_pending_pod_set_has_one_row() -> None:
    """Required / preferred / unconstrained and the slice request (clique, slices of 4 pods on
    one host) are columns; the pending gang has one row with no domain."""
    rows = _rows()
    by = {r["name"]: r for r in rows.unique("name", keep="first").iter_rows(named=True)}
    assert by["crd-example-v1beta1"]["required"] == "cloud.provider.com/topology-block"
    assert by["crd-example-2"]["preferred"] == "cloud.provider.com/topology-rack"
    assert by["kind-job"]["unconstrained"] is True
    pend = rows.filter(pl.col("name") == "gang-pending")
    assert pend.height == 1
    row = pend.row(0, named=True)
    assert (row["required"], row["slice_required"], row["slice_size"], row["pod_set_count"]) == (
        "nvidia.com/gpu.clique", "kubernetes.io/hostname", 4, 16,
    )  # fmt: skip
    assert (row["domain_index"], row["levels"], row["pods"]) == (None, None, None)
    assert rows["snapshot_at"].unique().to_list() == [WHEN]


def test_a_slice_shorter_than_its_domain_count_is_rejected() -> None:
    """bad-slice: 1 root for domainCount 2 is rejected naming the field; its Workload row still
    loads (6 Workloads)."""
    out = parse_k8s_objects(FIXTURE, cluster="k", snapshot_at=WHEN)
    rej = out[WORKLOAD_TOPOLOGY_SOURCE].rejected
    assert rej.height == 1
    assert rej["field"][0].endswith("slices[0].valuesPerLevel[0].individual.roots")
    assert rej["reason"][0] == "1 roots for domainCount 2"
    assert "bad-slice" not in _rows()["name"].to_list()
    assert out["k8s-workloads"].rows.height == 6


def test_assigned_nodes_place_a_job_whose_pods_were_not_seen() -> None:
    """Example 4's six nodes, racks rack-1 = node-1..4 and rack-2 = node-1..2 (4 nodes per
    rack at most): the job used 2 racks, min ceil(6/4) = 2, spread 0. The kind job's nodes
    only fill its latest attempt; a job with nodes keeps its own."""
    assigned = assignment_node_lists(_rows().lazy()).collect()
    assert assigned.filter(pl.col("job_id") == "ml/kind-job")["node_list"].to_list() == [
        ["kind-worker", "kind-worker2", "kind-worker3", "kind-worker4"]
    ]
    start = dt.datetime(2026, 11, 2, 8, 5, tzinfo=dt.UTC)
    jobs = pl.DataFrame(
        {
            "cluster": ["k", "k", "k"],
            "job_id": ["ml/crd-example-4", "ml/kind-job", "ml/kind-job"],
            "attempt": [0, 0, 1],
            "start_at": [start] * 3,
            "node_list": [[], [], ["kind-worker"]],
        }
    )
    filled = with_assignment_nodes(jobs.lazy(), assigned.lazy()).collect().sort("job_id", "attempt")
    assert filled["node_list"].to_list() == [
        [f"block-1-rack-1-node-{i}" for i in (1, 2, 3, 4)]
        + [f"block-1-rack-2-node-{i}" for i in (1, 2)],
        [],
        ["kind-worker"],
    ]
    nodes = [f"block-1-rack-1-node-{i}" for i in (1, 2, 3, 4)] + [
        f"block-1-rack-2-node-{i}" for i in (1, 2)
    ]
    topo = pl.DataFrame(
        {
            "cluster": ["k"] * 6,
            "level": ["cloud.provider.com/topology-rack"] * 6,
            "domain": ["rack-1"] * 4 + ["rack-2"] * 2,
            "node": nodes,
            "valid_from": [None] * 6,
            "valid_to": [None] * 6,
        },
        schema_overrides={
            "valid_from": pl.Datetime("us", "UTC"),
            "valid_to": pl.Datetime("us", "UTC"),
        },
    )
    placed = job_placement(filled.lazy(), topo.lazy()).collect()
    assert placed.select("job_id", "nodes", "domain_size", "domains_used", "domains_min",
                         "spread").rows() == [("ml/crd-example-4", 6, 4, 2, 2, 0)]  # fmt: skip
