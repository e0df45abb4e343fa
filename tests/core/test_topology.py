"""The topology map: Node labels to rows, snapshots to intervals, inventory racks by default."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from pipelines.core.topology import k8s_label_topology, topology_intervals

T0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(days=1)
_TS = pl.Datetime("us", "UTC")
_CONF = {"cluster": pl.String(), "level": pl.String(), "domain": pl.String(),
         "node": pl.String(), "valid_from": _TS}  # fmt: skip


def _labels(**labels: str) -> str:
    return json.dumps(labels, sort_keys=True)


def _k8s_nodes() -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": ["k"] * 3, "name": ["a", "b", "a"], "snapshot_at": [T0, T0, T1],
         "labels": [
             _labels(**{"nvidia.com/gpu.clique": "uuid.1", "fabric.topograph.run/tier-1": "sw1",
                        "kubernetes.io/hostname": "a"}),
             _labels(**{"nvidia.com/gpu.clique": "uuid.1",
                        "accelerator.topograph.run/domain": "nvl72-1"}),
             _labels(**{"nvidia.com/gpu.clique": "uuid.2"}),
         ]},
        schema_overrides={"snapshot_at": _TS},
    )  # fmt: skip


def test_node_labels_become_one_row_per_topology_label() -> None:
    """gpu.clique → level nvlink, topograph's accelerator domain → accelerator, fabric tier-1
    → tier-1; other labels are ignored; each row is valid from its snapshot."""
    got = k8s_label_topology(_k8s_nodes()).sort("valid_from", "node", "level")
    assert got.select("level", "domain", "node", "valid_from").rows() == [
        ("nvlink", "uuid.1", "a", T0), ("tier-1", "sw1", "a", T0),
        ("accelerator", "nvl72-1", "b", T0), ("nvlink", "uuid.1", "b", T0),
        ("nvlink", "uuid.2", "a", T1),
    ]  # fmt: skip


def test_each_snapshot_holds_until_the_next_of_its_cluster() -> None:
    """The labels of T0 hold until T1 (the next Node snapshot), those of T1 stay open; node b,
    missing from T1's snapshot, leaves the map at T1."""
    got = topology_intervals(
        pl.DataFrame(schema=_CONF), k8s_label_topology(_k8s_nodes()),
        pl.DataFrame(schema={"cluster": pl.String(), "host": pl.String(), "rack": pl.String()}),
    )  # fmt: skip
    nv = got.filter(pl.col("level") == "nvlink").sort("valid_from", "node")
    assert nv.select("domain", "node", "valid_from", "valid_to", "source").rows() == [
        ("uuid.1", "a", T0, T1, "k8s-labels"), ("uuid.1", "b", T0, T1, "k8s-labels"),
        ("uuid.2", "a", T1, None, "k8s-labels"),
    ]  # fmt: skip


def test_inventory_racks_are_the_map_only_where_no_other_is_given() -> None:
    """Cluster s has a topology.conf, so its inventory racks are not used; cluster r has
    none: its racks are level ``rack`` in force since ever (NULL valid_from and valid_to)."""
    conf = pl.DataFrame(
        {"cluster": ["s"], "level": ["block"], "domain": ["b1"], "node": ["x1"],
         "valid_from": [T0]}, schema=_CONF,
    )  # fmt: skip
    inventory = pl.DataFrame(
        {"cluster": ["s", "r", "r", "r"], "host": ["x1", "h1", "h2", "h3"],
         "rack": ["q", "r1", "r1", None]}
    )  # fmt: skip
    got = topology_intervals(conf, pl.DataFrame(schema=_CONF), inventory)
    assert got.rows() == [
        ("r", "rack", "r1", "h1", None, None, "inventory"),
        ("r", "rack", "r1", "h2", None, None, "inventory"),
        ("s", "block", "b1", "x1", T0, None, "topology.conf"),
    ]  # fmt: skip


def test_kueue_topology_levels_name_the_labels_to_read() -> None:
    """k's Kueue Topology has levels topology-rack and hostname: node a's rack label becomes
    level ``cloud.provider.com/topology-rack`` (hostname is left out, one node per domain);
    a Kueue level that is a known label (gpu.clique) keeps its own level name only."""
    nodes = pl.DataFrame(
        {"cluster": ["k"], "name": ["a"], "snapshot_at": [T0],
         "labels": [_labels(**{"cloud.provider.com/topology-rack": "r7",
                               "nvidia.com/gpu.clique": "uuid.1",
                               "kubernetes.io/hostname": "a"})]},
        schema_overrides={"snapshot_at": _TS},
    )  # fmt: skip
    levels = pl.DataFrame(
        {"cluster": ["k"] * 3,
         "node_label": ["cloud.provider.com/topology-rack", "nvidia.com/gpu.clique",
                        "kubernetes.io/hostname"]}
    )  # fmt: skip
    got = k8s_label_topology(nodes, levels).sort("level")
    assert got.select("level", "domain", "node").rows() == [
        ("cloud.provider.com/topology-rack", "r7", "a"), ("nvlink", "uuid.1", "a"),
    ]  # fmt: skip
