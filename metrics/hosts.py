"""DCGM host names matched to the cluster's node names (METRICS.md "Telemetry attribution",
host names).

dcgm-exporter labels a series ``Hostname`` with the machine's host name (the OS host name, or
the pod's ``NODE_NAME``), often a fully qualified name (``n1.hpc.example.edu``), while Slurm's
``NodeName`` (sacct's ``NodeList``, the inventory) is usually the short name (``n1``). A DCGM
host is matched to a node of its cluster by, in order:

1. ``exact``: the node of the same name;
2. ``short_name``: else the one node whose name is the host's first DNS label (the text before
   the first dot), or whose first DNS label is the host (a node named ``n1.hpc.example.edu``,
   a host ``n1``);
3. ``ambiguous``: more than one node so named — the host is left as it is (never guessed);
4. ``none``: no node.

An IPv4 address is never cut to its first label. Pure polars: no Dagster, no DuckDB.
"""

from __future__ import annotations

from typing import Final

import polars as pl

__all__ = ["HOST_MATCHES", "host_matches", "with_node_hosts"]

#: The ``match`` values of :func:`host_matches`.
HOST_MATCHES: Final = ("exact", "short_name", "ambiguous", "none")

_IPV4: Final = r"^\d{1,3}(\.\d{1,3}){3}$"


def _first_label(col: str) -> pl.Expr:
    name = pl.col(col)
    return pl.when(name.str.contains(_IPV4)).then(name).otherwise(name.str.split(".").list.first())


def host_matches(hosts: pl.LazyFrame, nodes: pl.LazyFrame) -> pl.LazyFrame:
    """Each distinct DCGM host of ``hosts`` and the node of its cluster it is (module rules).

    Args:
        hosts: ``cluster, host`` (any other columns ignored; repeats and NULL hosts dropped).
        nodes: ``cluster, host`` of the cluster's nodes (``core.nodes``).

    Returns:
        ``cluster, host, node, match, candidates``: ``node`` the node's name for ``exact`` and
        ``short_name``, NULL for ``ambiguous`` and ``none``; ``match`` one of
        :data:`HOST_MATCHES`; ``candidates`` the number of nodes so named (0 for ``none``).
    """
    h = hosts.select("cluster", "host").drop_nulls().unique()
    n = nodes.select("cluster", pl.col("host").alias("node")).drop_nulls().unique()
    exact = h.join(n, left_on=["cluster", "host"], right_on=["cluster", "node"], how="semi")
    short = (
        h.join(exact, on=["cluster", "host"], how="anti")
        .with_columns(_first_label("host").alias("_key"))
        .join(n.with_columns(_first_label("node").alias("_key")), on=["cluster", "_key"])
        .filter((pl.col("_key") == pl.col("node")) | (pl.col("_key") == pl.col("host")))
        .group_by("cluster", "host")
        .agg(pl.col("node").first(), pl.col("node").n_unique().alias("candidates"))
    )
    return (
        h.join(short, on=["cluster", "host"], how="left")
        .join(exact.with_columns(pl.lit(True).alias("_exact")), on=["cluster", "host"], how="left")
        .select(
            "cluster",
            "host",
            pl.when(pl.col("_exact"))
            .then(pl.col("host"))
            .when(pl.col("candidates") == 1)
            .then(pl.col("node"))
            .alias("node"),
            pl.when(pl.col("_exact"))
            .then(pl.lit("exact"))
            .when(pl.col("candidates") == 1)
            .then(pl.lit("short_name"))
            .when(pl.col("candidates") > 1)
            .then(pl.lit("ambiguous"))
            .otherwise(pl.lit("none"))
            .alias("match"),
            pl.when(pl.col("_exact"))
            .then(pl.lit(1, pl.UInt32))
            .otherwise(pl.col("candidates").fill_null(0).cast(pl.UInt32))
            .alias("candidates"),
        )
        .sort("cluster", "host")
    )


def with_node_hosts(frame: pl.LazyFrame, nodes: pl.LazyFrame) -> pl.LazyFrame:
    """``frame`` with each ``host`` matched by short name (:func:`host_matches`) renamed to its
    node; every other row, column and the row order unchanged.

    Args:
        frame: DCGM rows (samples, 5-minute buckets, XID events): ``cluster, host`` and any
            other columns.
        nodes: ``cluster, host`` of the nodes (``core.nodes``).

    Returns:
        ``frame``'s columns and rows, ``host`` renamed where a short-name match holds.
    """
    renames = (
        host_matches(frame, nodes)
        .filter(pl.col("match") == "short_name")
        .select("cluster", "host", pl.col("node").alias("_node"))
    )
    cols = frame.collect_schema().names()
    return (
        frame.join(renames, on=["cluster", "host"], how="left", maintain_order="left")
        .with_columns(pl.coalesce("_node", "host").alias("host"))
        .select(cols)
    )
