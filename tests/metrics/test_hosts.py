"""DCGM host names matched to node names (metrics.hosts)."""

from __future__ import annotations

import polars as pl

from metrics.hosts import host_matches, with_node_hosts

_NODES = pl.LazyFrame(
    {
        "cluster": ["c"] * 6 + ["d"],
        "host": ["n1", "n2", "n4.hpc.example.edu", "n3.a.example.org", "n3.b.example.org", "10",
                 "n1"],
    }
)  # fmt: skip


def test_exact_first_then_the_one_node_of_that_short_name() -> None:
    """n2 is its node; n1.hpc.example.edu is n1 (its first label); n4 is n4.hpc.example.edu
    (that node's first label); n3 is the first label of two nodes: ambiguous; spare.x and
    10.0.0.1 (an address, never cut to "10") match none; e1.x is of cluster e, which has no node
    n1 of its own."""
    hosts = pl.LazyFrame(
        {
            "cluster": ["c"] * 6 + ["e"],
            "host": ["n2", "n1.hpc.example.edu", "n4", "n3", "spare.x", "10.0.0.1", "n1.x"],
        }
    )
    got = host_matches(hosts, _NODES).collect()
    assert got.rows() == [
        ("c", "10.0.0.1", None, "none", 0),
        ("c", "n1.hpc.example.edu", "n1", "short_name", 1),
        ("c", "n2", "n2", "exact", 1),
        ("c", "n3", None, "ambiguous", 2),
        ("c", "n4", "n4.hpc.example.edu", "short_name", 1),
        ("c", "spare.x", None, "none", 0),
        ("e", "n1.x", None, "none", 0),
    ]


def test_rows_keep_their_order_and_columns_with_matched_hosts_renamed() -> None:
    rows = pl.LazyFrame(
        {
            "cluster": ["c", "c", "c", "d"],
            "host": ["n3", "n1.a.b", "n4", "n1.a.b"],
            "v": [1, 2, 3, 4],
        }
    )
    got = with_node_hosts(rows, _NODES).collect()
    assert got.rows() == [
        ("c", "n3", 1),
        ("c", "n1", 2),
        ("c", "n4.hpc.example.edu", 3),
        ("d", "n1", 4),
    ]
