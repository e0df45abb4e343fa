"""The hosts a cluster's Slurm attempts were seen on (``pipelines.core.build._observed_hosts``),
on hand-made attempts: per host the most GPUs one attempt held there and the first GPU type and
partition named; the clusters with an inventory left out. And the GPUs held on a host at once
(``_concurrent_gpus``), the capacity of a node without an inventory."""

from __future__ import annotations

import datetime as dt

import polars as pl

from pipelines.core.build import _concurrent_gpus, _observed_hosts, _observed_nodes, _pod_holds

ATTEMPTS = pl.DataFrame(
    {
        "cluster": ["a", "a", "a", "b", None],
        "node_list": [["n1", "n2"], ["n1"], [], ["m1"], ["x1"]],
        "gpus": [8.0, 6.0, 4.0, 2.0, 1.0],
        "gpu_type": [None, "h100", "h100", "a100", None],
        "partition": ["gpu", "debug", "gpu", "gpu", "p"],
        "state": ["COMPLETED"] * 5,
    }
)


def test_most_gpus_per_host_and_first_type_and_partition() -> None:
    """n1: max(8/2, 6) = 6 GPUs, type h100 (the first named), partition gpu (the first); n2: 4;
    the attempt without nodes counts nowhere; b and the cluster-less attempt keep their host."""
    got = _observed_hosts(ATTEMPTS)
    assert got.columns == ["cluster", "host", "gpus", "gpu_type", "partition"]
    assert got.rows() == [
        ("a", "n1", 6.0, "h100", "gpu"),
        ("a", "n2", 4.0, None, "gpu"),
        ("b", "m1", 2.0, "a100", "gpu"),
        (None, "x1", 1.0, None, "p"),
    ]


def test_clusters_with_an_inventory_are_left_out() -> None:
    """Skipping a keeps b and the cluster-less row exactly as without the skip."""
    got = _observed_hosts(ATTEMPTS, skip={"a"})
    assert got.rows() == [("b", "m1", 2.0, "a100", "gpu"), (None, "x1", 1.0, None, "p")]
    assert _observed_hosts(ATTEMPTS, skip={"a", "b"}).rows() == [(None, "x1", 1.0, None, "p")]


def _at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2025, 12, 1, hour, minute, tzinfo=dt.UTC)


def test_the_gpus_held_at_once_on_a_shared_node() -> None:
    """By hand: n1 holds two 4-GPU jobs 05:00–06:00 at once (8), n2 two back to back (4: the end
    at 06:00 before the start at 06:00); n3 half of an 8-GPU job on [n3, n4] (4) plus a 2-GPU job
    05:30–05:45 (6), n4 4; n5 a job running at the cut-off 06:00 (4) and one that starts after it
    (counts nowhere); cluster b is left out (it has an inventory)."""
    cut = _at(6)
    rows = [
        ("a", ["n1"], 4.0, _at(5), _at(6)),
        ("a", ["n1"], 4.0, _at(5), _at(6)),
        ("a", ["n2"], 4.0, _at(5), _at(6)),
        ("a", ["n2"], 4.0, _at(6), _at(7)),
        ("a", ["n3", "n4"], 8.0, _at(5), _at(6)),
        ("a", ["n3"], 2.0, _at(5, 30), _at(5, 45)),
        ("a", ["n5"], 4.0, _at(5), None),
        ("a", ["n5"], 4.0, _at(7), _at(8)),
        ("b", ["m1"], 4.0, _at(5), _at(6)),
        ("b", ["m1"], 4.0, _at(5), _at(6)),
    ]
    jobs = pl.DataFrame(
        rows,
        schema={"cluster": pl.String(), "node_list": pl.List(pl.String()), "gpus": pl.Float64(),
                "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
        orient="row",
    ).with_columns(pl.lit(cut).dt.cast_time_unit("us").alias("as_of"))  # fmt: skip
    got = _concurrent_gpus(jobs, skip={"b"}).sort("host")
    assert got.rows() == [
        ("a", "n1", 8.0),
        ("a", "n2", 4.0),
        ("a", "n3", 6.0),
        ("a", "n4", 4.0),
        ("a", "n5", 4.0),
    ]
    # without an inventory the node's capacity is what was held at once, never less than the
    # most one attempt held (n1: 8, not 4)
    hosts = _observed_hosts(
        jobs.with_columns(
            pl.lit(None, dtype=pl.String()).alias("gpu_type"), pl.lit("gpu").alias("partition")
        ),
        skip={"b"},
    )
    nodes = _observed_nodes(hosts, PODS, _concurrent_gpus(jobs, skip={"b"})).sort("host")
    assert nodes.select("host", "gpus", "partition").rows() == [
        ("n1", 8.0, "gpu"),
        ("n2", 4.0, "gpu"),
        ("n3", 6.0, "gpu"),
        ("n4", 4.0, "gpu"),
        ("n5", 4.0, "gpu"),
    ]


PODS = pl.DataFrame(schema={"cluster": pl.String(), "node_name": pl.String(), "gpus": pl.Float64()})


def test_kubernetes_nodes_hold_what_their_pods_held_at_once() -> None:
    """A workload of three 1-GPU pods, two bound on node a and one on b, 00:00–02:00 (its
    attempt spreads 3 GPUs evenly: 1.5 and 1.5), and a pod bound on b 03:00 still running at the
    cut-off 05:00, with 2 GPUs: the pods say a held 2 at once and b 2."""
    pods = pl.DataFrame(
        {
            "cluster": ["k"] * 4,
            "node_name": ["a", "a", "b", "b"],
            "gpus": [1.0, 1.0, 1.0, 2.0],
            "phase": ["Succeeded", "Succeeded", "Succeeded", "Running"],
            "created_at": [_at(0), _at(0), _at(0), _at(3)],
            "scheduled_at": [_at(0), _at(0), _at(0), _at(3)],
            "started_at": [_at(0, 1), _at(0, 1), _at(0, 1), _at(3, 1)],
            "finished_at": [_at(2), _at(2), _at(2), None],
            "deleted_at": [None, None, None, None],
        },
        schema_overrides={c: pl.Datetime("us", "UTC") for c in
                          ("created_at", "scheduled_at", "started_at", "finished_at",
                           "deleted_at")},
    )  # fmt: skip
    cuts = pl.DataFrame({"cluster": ["k"], "as_of": [_at(5)]}).with_columns(
        pl.col("as_of").dt.cast_time_unit("us")
    )
    got = _concurrent_gpus(_pod_holds(pods, cuts)).sort("host")
    assert got.rows() == [("k", "a", 2.0), ("k", "b", 2.0)]
