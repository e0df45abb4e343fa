"""The topology map: node → domain per level, with the interval each map was in force.

Three sources, in this order of trust per cluster:

* Slurm ``topology.conf`` loads (``raw.topology``: one snapshot per file, from its day);
* Kubernetes node labels in the Node snapshots (``raw.k8s_nodes.labels``, from each
  ``snapshot_at``): ``nvidia.com/gpu.clique`` (level ``nvlink``, the NVLink clique GPU feature
  discovery labels), ``accelerator.topograph.run/domain`` (level ``accelerator``) and
  ``fabric.topograph.run/tier-N`` (level ``tier-N``), and every label a Kueue ``Topology``
  of the cluster names as a level (``spec.levels[].nodeLabel``, the level named by the label
  key; ``kubernetes.io/hostname``, one node per domain, is left out);
* where a cluster has neither, the inventory's ``rack`` column, one level ``rack`` in force
  since ever.

Per cluster and source each snapshot is the whole map from its ``valid_from`` until the next
snapshot's (``valid_to``; NULL: still in force): a tray that fails and leaves a clique shows as
a node missing from the next map.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from metrics.schema import UTC_DATETIME

__all__ = [
    "LABEL_LEVELS",
    "TOPOLOGY_COLUMNS",
    "k8s_label_topology",
    "topology_intervals",
]

#: Columns of the ``core.topology`` frame, in order.
TOPOLOGY_COLUMNS: Final = ["cluster", "level", "domain", "node", "valid_from", "valid_to", "source"]

#: Node label → topology level (``fabric.topograph.run/tier-N`` → ``tier-N`` besides).
LABEL_LEVELS: Final = {
    "nvidia.com/gpu.clique": "nvlink",
    "accelerator.topograph.run/domain": "accelerator",
}
_TIER: Final = r"fabric\.topograph\.run/tier-\d+"
_LABEL: Final = (
    r'"(' + "|".join(k.replace(".", r"\.") for k in LABEL_LEVELS) + f"|{_TIER}" + r')": '
    r'"((?:[^"\\]|\\.)*)"'
)
_SNAPSHOT: Final[dict[str, pl.DataType]] = {
    "cluster": pl.String(), "level": pl.String(), "domain": pl.String(), "node": pl.String(),
    "valid_from": UTC_DATETIME,
}  # fmt: skip


#: A Kueue level that is no topology domain (one node each).
_HOSTNAME: Final = "kubernetes.io/hostname"


def _kueue_label_rows(k8s_nodes: pl.DataFrame, kueue_levels: pl.DataFrame) -> pl.DataFrame:
    """Rows for the Node labels the cluster's Kueue Topologies name as levels."""
    labels = (
        kueue_levels.filter(
            (pl.col("node_label") != _HOSTNAME)
            & ~pl.col("node_label").is_in(list(LABEL_LEVELS))
            & ~pl.col("node_label").str.contains(f"^{_TIER}$")
        )
        .select("cluster", "node_label")
        .unique()
        .sort("cluster", "node_label")
    )
    parts = [pl.DataFrame(schema=_SNAPSHOT)]
    for cluster, label in labels.iter_rows():
        escaped = label.replace("\\", "\\\\").replace("'", "\\'")
        parts.append(
            k8s_nodes.filter((pl.col("cluster") == cluster) & pl.col("labels").is_not_null())
            .select(
                "cluster",
                pl.lit(label).alias("level"),
                pl.col("labels").str.json_path_match(f"$['{escaped}']").alias("domain"),
                pl.col("name").alias("node"),
                pl.col("snapshot_at").cast(UTC_DATETIME).alias("valid_from"),
            )
            .filter(pl.col("domain").is_not_null() & (pl.col("domain") != ""))
        )
    return pl.concat(parts)


def k8s_label_topology(
    k8s_nodes: pl.DataFrame, kueue_levels: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Topology rows from Kubernetes Node snapshots' labels.

    Args:
        k8s_nodes: ``cluster, name, labels`` (a JSON object as text) and ``snapshot_at``.
        kueue_levels: ``cluster, node_label``: the levels of the cluster's Kueue Topologies.

    Returns:
        ``cluster, level, domain, node, valid_from`` (the snapshot time), one row per node and
        topology label it carries.
    """
    if k8s_nodes.height == 0:
        return pl.DataFrame(schema=_SNAPSHOT)
    kueue = (
        _kueue_label_rows(k8s_nodes, kueue_levels)
        if kueue_levels is not None
        else pl.DataFrame(schema=_SNAPSHOT)
    )
    pairs = (
        k8s_nodes.filter(pl.col("labels").is_not_null())
        .select(
            "cluster",
            pl.col("name").alias("node"),
            pl.col("snapshot_at").cast(UTC_DATETIME).alias("valid_from"),
            pl.col("labels").str.extract_all(_LABEL).alias("_pair"),
        )
        .explode("_pair")
        .filter(pl.col("_pair").is_not_null())
        .with_columns(pl.col("_pair").str.extract_groups(_LABEL).alias("_kv"))
    )
    key = pl.col("_kv").struct.field("1")
    level = (
        pl.when(key.str.starts_with("fabric.topograph.run/"))
        .then(key.str.extract(r"(tier-\d+)$"))
        .otherwise(key.replace_strict(LABEL_LEVELS, default=None, return_dtype=pl.String()))
    )
    known = pairs.select(
        "cluster",
        level.alias("level"),
        pl.col("_kv").struct.field("2").alias("domain"),
        "node",
        "valid_from",
    ).filter(pl.col("domain") != "")
    return pl.concat([known, kueue]).unique(maintain_order=True)


def _intervals(snapshots: pl.DataFrame) -> pl.DataFrame:
    """``valid_to`` of each row: the next snapshot's ``valid_from`` of its cluster and source
    (a ``topology.conf`` is the whole map, every level; so is a Node snapshot's labels)."""
    keys = ["cluster", "source", "valid_from"]
    starts = (
        snapshots.select(keys)
        .unique()
        .sort(keys)
        .with_columns(pl.col("valid_from").shift(-1).over("cluster", "source").alias("valid_to"))
    )
    return snapshots.join(starts, on=keys, how="left")


def topology_intervals(
    conf: pl.DataFrame, labels: pl.DataFrame, inventory: pl.DataFrame
) -> pl.DataFrame:
    """The ``core.topology`` frame (:data:`TOPOLOGY_COLUMNS`).

    Args:
        conf: ``raw.topology`` rows (``cluster, level, domain, node, valid_from``).
        labels: :func:`k8s_label_topology` rows.
        inventory: ``cluster, host, rack`` (the inventory; NULL racks are left out).

    Returns:
        One row per level, domain, node and map, with ``valid_to`` and ``source``
        (``topology.conf``, ``k8s-labels`` or ``inventory``). A cluster's label levels are
        kept only where it has no ``topology.conf``; the inventory's racks only where it has
        neither.
    """
    cols = list(_SNAPSHOT)
    conf_rows = conf.select(cols).cast(pl.Schema(_SNAPSHOT)).unique().with_columns(
        pl.lit("topology.conf").alias("source")
    )  # fmt: skip
    label_rows = (
        labels.select(cols)
        .cast(pl.Schema(_SNAPSHOT))
        .join(conf_rows.select("cluster").unique(), on="cluster", how="anti")
        .with_columns(pl.lit("k8s-labels").alias("source"))
    )
    mapped = pl.concat([conf_rows, label_rows])
    racks = (
        inventory.filter(pl.col("rack").is_not_null())
        .select(
            "cluster",
            pl.lit("rack").alias("level"),
            pl.col("rack").alias("domain"),
            pl.col("host").alias("node"),
            pl.lit(None, dtype=UTC_DATETIME).alias("valid_from"),
            pl.lit(None, dtype=UTC_DATETIME).alias("valid_to"),
            pl.lit("inventory").alias("source"),
        )
        .join(mapped.select("cluster").unique(), on="cluster", how="anti")
    )
    return pl.concat([_intervals(mapped).select(TOPOLOGY_COLUMNS), racks]).sort(
        "cluster", "level", "valid_from", "domain", "node", nulls_last=False
    )
