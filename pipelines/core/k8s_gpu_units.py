"""What one advertised GPU resource unit is worth on a Kubernetes node: a whole GPU, a MIG
slice, or a time-slicing / MPS replica of either.

The NVIDIA device plugin advertises, and GPU Feature Discovery (GFD) labels, a node's GPUs in
these ways (NVIDIA GPU Operator documentation, "GPU Operator with MIG", "Time-Slicing GPUs in
Kubernetes", "Multi-Process Service in Kubernetes"; NVIDIA/k8s-device-plugin, GFD labels
``<resource>.product``, ``<resource>.count``, ``<resource>.replicas``):

* plain ``nvidia.com/gpu``: one unit is one physical GPU;
* MIG **single** strategy (label ``nvidia.com/mig.strategy: single``): every MIG device of the
  node's one profile is one ``nvidia.com/gpu``, and ``nvidia.com/gpu.product`` names the profile
  (``NVIDIA-A100-SXM4-40GB-MIG-1g.5gb``): one unit is the profile's fraction of a GPU
  (:func:`metrics.mig.mig_fraction_expr`: ``1g.5gb`` = 1/7);
* MIG **mixed** strategy (``nvidia.com/mig.strategy: mixed``): each profile is its own resource
  ``nvidia.com/mig-<profile>``, which the parser already counts as the profile's fraction per
  unit (``mig-1g.10gb`` = 1/7, ``mig-3g.40gb`` = 3/7);
* **time-slicing** or **MPS** with ``R`` replicas: every device is advertised ``R`` times, under
  its own name or, renamed (``renameByDefault``), with the suffix ``.shared``
  (``nvidia.com/gpu.shared``, ``nvidia.com/mig-1g.10gb.shared``); GFD labels ``R`` per
  resource (``nvidia.com/gpu.replicas: "R"``, ``nvidia.com/mig-1g.10gb.replicas: "R"``) and
  suffixes the product ``-SHARED`` where the name is kept. One unit is ``1/R`` of the device.

The AMD GPU device plugin's ``amd.com/gpu`` is one whole GPU per unit: it is in neither
:data:`SHARED_RESOURCES` nor the MIG resources, so no NVIDIA label scales it (a node or pod of
only ``amd.com/gpu`` keeps its count), and a row naming both vendors' resources keeps its count
as any row of mixed kinds does.

So a node's GPUs are physical GPUs (7 slices × 1/7 = 1; 32 replicas × 1/4 = 8; 14 replicas of
1g.10gb slices in 2 replicas × 1/7 ÷ 2 = 1) and a pod bound to such a node holds that fraction
per unit it asks for (METRICS.md "Units"). A row (node or pod) counts one total over its GPU
resources (``gpu_resource``, comma-separated): it is scaled where its resources are all
``nvidia.com/gpu[.shared]`` (:func:`gpu_unit_expr`) or all MIG resources whose replicas agree
(``1/R``); a row naming both kinds, or MIG resources in different replicas, keeps its count
(the total cannot be split back per resource).

A Kueue ClusterQueue's ``nominalQuota`` of ``nvidia.com/gpu`` counts advertised units too, but
names no node: its flavors' nodes are not known (ResourceFlavor objects are not loaded), so the
quota takes the unit every node of its cluster agrees on (:func:`cluster_gpu_units`,
:func:`cluster_queues_in_gpus`), and stays in advertised units, a data-quality finding, when
the nodes disagree.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from metrics.mig import MIG_DOTTED_ATTRIBUTE, mig_fraction_expr
from pipelines.core.k8s_labels import k8s_label

__all__ = [
    "MIG_RESOURCE_PREFIX",
    "SHARED_RESOURCES",
    "cluster_gpu_units",
    "cluster_queues_in_gpus",
    "gpu_unit_expr",
    "mig_product_factor",
    "mig_replicas",
    "nodes_in_gpus",
    "pods_in_gpus",
]

#: The resources whose unit a node's labels decide (:func:`gpu_unit_expr`).
SHARED_RESOURCES: Final = ("nvidia.com/gpu", "nvidia.com/gpu.shared")
#: Prefix of the MIG "mixed" strategy's resources (``nvidia.com/mig-1g.10gb[.shared]``).
MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"
#: GFD's replicas label of a MIG resource inside a ``labels`` JSON object
#: (``"nvidia.com/mig-1g.10gb.replicas": "2"``): groups 1 the resource, 2 the replicas.
_MIG_REPLICAS: Final = r'"(nvidia\.com/mig-[^"]+)\.replicas"\s*:\s*"\s*(\d+)\s*"'
#: GFD's product label of a MIG resource inside a ``labels`` JSON object
#: (``"nvidia.com/mig-1g.24gb.product": "NVIDIA-RTX-PRO-6000-...-MIG-1g.24gb"``): groups 1 the
#: resource, 2 the product.
_MIG_PRODUCT: Final = r'"(nvidia\.com/mig-[^"]+)\.product"\s*:\s*"([^"]*)"'

_UTC: Final = pl.Datetime("us", "UTC")


def gpu_unit_expr() -> pl.Expr:
    """GPUs that one advertised ``nvidia.com/gpu`` (or ``nvidia.com/gpu.shared``) unit is worth,
    from a Node row's ``labels`` (JSON object) and ``gpu_product``, Float64 in (0, 1]:

    ``(mig_fraction(gpu_product) if nvidia.com/mig.strategy == "single" else 1) / R``, with
    ``R`` = ``nvidia.com/gpu.replicas`` where it is an integer above 1, else 1. A profile that
    is no MIG profile (a node of the single strategy whose GPUs are not in MIG mode) counts 1.
    """
    single = k8s_label("nvidia.com/mig.strategy").str.to_lowercase() == "single"
    slice_ = (
        pl.when(single.fill_null(value=False))
        .then(mig_fraction_expr(pl.col("gpu_product")))
        .otherwise(None)
        .fill_null(1.0)
    )
    replicas = k8s_label("nvidia.com/gpu.replicas").str.strip_chars().cast(pl.Int64, strict=False)
    r = pl.when(replicas > 1).then(replicas).otherwise(1).fill_null(1).cast(pl.Float64)
    return slice_ / r


def _scaled(resource: pl.Expr) -> pl.Expr:
    """True where every GPU resource a row names (``gpu_resource``, comma-separated) is one
    whose unit the node decides (:data:`SHARED_RESOURCES`)."""
    names = resource.str.split(",")
    return (
        names.list.eval(pl.element().is_in(list(SHARED_RESOURCES)))
        .list.all()
        .fill_null(value=False)
    )


def _mig_only(resource: pl.Expr) -> pl.Expr:
    """True where every GPU resource a row names is a MIG resource (renamed or not)."""
    return (
        resource.str.split(",")
        .list.eval(pl.element().str.starts_with(MIG_RESOURCE_PREFIX))
        .list.all()
        .fill_null(value=False)
    )


def mig_replicas(frame: pl.DataFrame, labels: str, resource: str) -> pl.Series:
    """Per row of ``frame``, the time-slicing / MPS replicas ``R`` its MIG resources share.

    Args:
        frame: any rows with a node's ``labels`` (JSON object) and a ``resource`` column (GPU
            resource names, comma-separated).
        labels: the column of the node's labels.
        resource: the column of the row's GPU resources.

    Returns:
        Float64, one value per row in order: for a row naming only ``nvidia.com/mig-<profile>``
        resources (``.shared`` read as the profile's own), the ``R`` of GFD's label
        ``nvidia.com/mig-<profile>.replicas`` where every profile has the same (a label absent,
        not an integer or below 2 counts 1); NULL where the profiles differ or the row names
        another resource (or none).
    """
    out = pl.Series("_r", [None] * frame.height, dtype=pl.Float64)
    rows = frame.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        pl.col(labels).alias("_labels"),
        pl.col(resource).alias("_res"),
    ).filter(_mig_only(pl.col("_res")))
    if rows.height == 0:  # most rows ask plain nvidia.com/gpu: nothing to look up
        return out
    wanted = rows.select(
        "_row",
        pl.col("_res").str.split(",").list.eval(pl.element().str.strip_suffix(".shared")),
    ).explode("_res")
    pairs = rows.select("_row", pl.col("_labels").str.extract_all(_MIG_REPLICAS)).explode("_labels")
    known = pairs.select(
        "_row",
        pl.col("_labels").str.extract(_MIG_REPLICAS, 1).alias("_res"),
        pl.col("_labels").str.extract(_MIG_REPLICAS, 2).cast(pl.Int64, strict=False).alias("_r"),
    ).filter(pl.col("_res").is_not_null())
    per_row = (
        wanted.join(known, on=["_row", "_res"], how="left")
        .with_columns(pl.when(pl.col("_r") > 1).then(pl.col("_r")).otherwise(1).fill_null(1))
        .group_by("_row")
        .agg(pl.when(pl.col("_r").n_unique() == 1).then(pl.col("_r").first()).alias("_r"))
    )
    return out.scatter(per_row["_row"], per_row["_r"].cast(pl.Float64))


def mig_product_factor(frame: pl.DataFrame, labels: str, resource: str) -> pl.Series:
    """Per row of ``frame``, how many times its MIG slice's share of a GPU the node's product
    label makes what its resource name says: the product can name a GPU whose profile differs
    from the 7-slice reading of the name (an RTX PRO 6000's ``1g.24gb`` is 1/4, not 1/7:
    :mod:`metrics.mig`).

    Args:
        frame: rows with a node's ``labels`` (JSON object, or GFD's product pairs alone) and a
            ``resource`` column (GPU resource names, comma-separated).
        labels: the column of the node's labels.
        resource: the column of the row's GPU resources.

    Returns:
        Float64, one value per row in order: for a row naming one ``nvidia.com/mig-<profile>``
        resource (``.shared`` read as the profile's own) whose GFD label
        ``nvidia.com/mig-<profile>.product`` is there, ``mig_fraction(product) ÷
        mig_fraction(profile)`` (1 where both read alike); NULL for any other row, or where
        either fraction is unknown.
    """
    base = pl.col(resource).str.strip_suffix(".shared")
    one_mig = base.str.starts_with(MIG_RESOURCE_PREFIX) & ~pl.col(resource).str.contains(",")
    pairs = pl.col(labels).str.extract_all(_MIG_PRODUCT)
    rows = frame.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        base.alias("_res"),
        one_mig.fill_null(value=False).alias("_one"),
        pairs.alias("_pairs"),
    ).filter(pl.col("_one"))
    out = pl.Series("_f", [None] * frame.height, dtype=pl.Float64)
    if rows.height == 0:
        return out
    known = (
        rows.select("_row", "_res", "_pairs")
        .explode("_pairs")
        .with_columns(
            pl.col("_pairs").str.extract(_MIG_PRODUCT, 1).alias("_key"),
            pl.col("_pairs").str.extract(_MIG_PRODUCT, 2).alias("_product"),
        )
        .filter(pl.col("_key") == pl.col("_res"))
        .unique("_row", keep="first")
        .with_columns(
            (
                mig_fraction_expr(pl.col("_product"))
                / mig_fraction_expr(
                    pl.col("_res")
                    .str.strip_prefix(MIG_RESOURCE_PREFIX)
                    # the device plugin writes a profile's "+me" as ".me" (metrics/mig.py)
                    .str.replace(MIG_DOTTED_ATTRIBUTE, "${1}+${2}")
                )
            ).alias("_f")
        )
        .filter(pl.col("_f").is_not_null())
    )
    return out.scatter(known["_row"], known["_f"])


def nodes_in_gpus(nodes: pl.DataFrame) -> pl.DataFrame:
    """``nodes`` (``raw.k8s_nodes`` rows: ``labels, gpu_product, gpu_resource, gpu_capacity,
    gpu_allocatable``, any other columns) with ``gpu_capacity`` and ``gpu_allocatable`` in
    physical GPUs: multiplied by the row's own :func:`gpu_unit_expr` where the node advertises
    only ``nvidia.com/gpu`` / ``nvidia.com/gpu.shared``, divided by the replicas of its MIG
    resources (:func:`mig_replicas`) where it advertises only those (already in GPUs per
    slice). Same rows, order and columns."""
    if nodes.height == 0:
        return nodes
    unit = (
        pl.when(_scaled(pl.col("gpu_resource")))
        .then(gpu_unit_expr())
        .otherwise(1.0 / pl.col("_reps").fill_null(1.0))
    )
    return (
        nodes.with_columns(mig_replicas(nodes, "labels", "gpu_resource").alias("_reps"))
        .with_columns(
            (pl.col("gpu_capacity") * unit).alias("gpu_capacity"),
            (pl.col("gpu_allocatable") * unit).alias("gpu_allocatable"),
        )
        .select(nodes.columns)
    )


def pods_in_gpus(pods: pl.DataFrame, nodes: pl.DataFrame | None) -> pl.DataFrame:
    """``pods`` (``cluster, node_name, gpus, gpu_resource, scheduled_at, started_at,
    created_at``, any other columns) with ``gpus`` in GPUs of the node each pod is bound to.

    A pod on a node (``spec.nodeName``) meets that node's snapshot last taken at or before the
    pod was bound (``scheduled_at``, else ``started_at``, else ``created_at``), else its first
    snapshot after (a snapshot taken at the export). Asking only ``nvidia.com/gpu`` /
    ``nvidia.com/gpu.shared`` it counts ``gpus × unit``, the snapshot's unit
    (:func:`gpu_unit_expr`); asking only MIG resources of the mixed strategy (``gpus`` already
    the slices' fractions) ``gpus ÷ R``, the replicas those resources have in the snapshot's
    labels (:func:`mig_replicas`: ``mig-1g.10gb: 1`` in 2 replicas = 1/14). A pod with no node
    (pending: its request stays the demand), on a node without snapshot, or asking both kinds
    keeps its ``gpus``.

    Args:
        pods: the pods, one row each.
        nodes: ``raw.k8s_nodes`` rows (``cluster, name, snapshot_at, labels, gpu_product``; of
            two loads of one snapshot time the last ``ingest_id`` counts), or None.

    Returns:
        ``pods`` with ``gpus`` replaced; same rows, order and columns.
    """
    if nodes is None or nodes.height == 0 or pods.height == 0:
        return pods
    order = [c for c in ("snapshot_at", "ingest_id") if c in nodes.columns]
    units = (
        nodes.sort(order, nulls_last=False)
        .select(
            "cluster",
            pl.col("name").alias("_node"),
            pl.col("snapshot_at").cast(_UTC).alias("_at"),
            gpu_unit_expr().alias("_unit"),
            # only the MIG replicas and product labels travel to the pods (the whole labels
            # are large)
            pl.concat_list(
                pl.col("labels").str.extract_all(_MIG_REPLICAS),
                pl.col("labels").str.extract_all(_MIG_PRODUCT),
            )
            .list.join(", ")
            .alias("_labels"),
            pl.lit(value=True).alias("_hit"),
        )
        .filter(pl.col("_at").is_not_null())
        .unique(["cluster", "_node", "_at"], keep="last", maintain_order=True)
        .sort("_at")
    )
    bound = pl.coalesce("scheduled_at", "started_at", "created_at").cast(_UTC)
    keyed = pods.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        pl.col("node_name").alias("_node"),
        bound.fill_null(pl.lit(0).cast(_UTC)).alias("_at"),
    ).sort("_at")
    before = keyed.join_asof(
        units, on="_at", by=["cluster", "_node"], strategy="backward", check_sortedness=False
    )
    after = keyed.select("_row", "cluster", "_node", "_at").join_asof(
        units, on="_at", by=["cluster", "_node"], strategy="forward", check_sortedness=False
    )
    out = (
        before.join(
            after.select(
                "_row",
                pl.col("_unit").alias("_unit_after"),
                pl.col("_labels").alias("_labels_after"),
            ),
            on="_row",
        )
        .sort("_row")
        .with_columns(
            pl.when(pl.col("_hit"))
            .then(pl.col("_labels"))
            .otherwise(pl.col("_labels_after"))
            .alias("_labels")
        )
    )
    on_node = pl.col("node_name").is_not_null()
    out = out.with_columns(
        mig_replicas(out, "_labels", "gpu_resource").alias("_reps"),
        mig_product_factor(out, "_labels", "gpu_resource").alias("_product_f"),
    )
    out = out.with_columns(
        pl.when(_scaled(pl.col("gpu_resource")) & on_node)
        .then(pl.col("gpus") * pl.coalesce("_unit", "_unit_after", pl.lit(1.0)))
        .when(on_node)
        .then(pl.col("gpus") * pl.col("_product_f").fill_null(1.0) / pl.col("_reps").fill_null(1.0))
        .otherwise(pl.col("gpus"))
        .alias("gpus")
    )
    return out.select(pods.columns)


def cluster_gpu_units(nodes: pl.DataFrame | None) -> pl.DataFrame:
    """Per cluster, the GPUs one advertised ``nvidia.com/gpu`` (``nvidia.com/gpu.shared``) is
    worth on its nodes, where they agree.

    Over each node's latest snapshot (greatest ``snapshot_at``, then ``ingest_id``; a node with
    a ``deletionTimestamp`` left out) that advertises a resource of :data:`SHARED_RESOURCES`:
    the node's unit is :func:`gpu_unit_expr` where it advertises only those, else 1 (a node of
    the MIG mixed strategy advertises its non-MIG GPUs whole).

    Args:
        nodes: ``raw.k8s_nodes`` rows (``cluster, name, snapshot_at, labels, gpu_product,
            gpu_resource``, optionally ``ingest_id``, ``deleted_at``), or None.

    Returns:
        ``cluster, gpu_unit, units``: ``units`` the distinct units of its nodes (ascending,
        rounded to 12 digits), ``gpu_unit`` the one unit (not rounded) when there is one, NULL
        when the nodes disagree (a quota in advertised units is then no number of GPUs). A
        cluster without such a node has no row.
    """
    schema = {"cluster": pl.String(), "gpu_unit": pl.Float64(), "units": pl.List(pl.Float64())}
    if nodes is None or nodes.height == 0:
        return pl.DataFrame(schema=schema)
    order = [c for c in ("snapshot_at", "ingest_id") if c in nodes.columns]
    latest = nodes.sort(order, nulls_last=False).unique(
        ["cluster", "name"], keep="last", maintain_order=True
    )
    if "deleted_at" in latest.columns:
        latest = latest.filter(pl.col("deleted_at").is_null())
    shared = (
        pl.col("gpu_resource").str.split(",").list.eval(pl.element().is_in(list(SHARED_RESOURCES)))
    )
    unit = pl.when(_scaled(pl.col("gpu_resource"))).then(gpu_unit_expr()).otherwise(1.0)
    return (
        latest.filter(shared.list.any().fill_null(value=False))
        .group_by("cluster")
        .agg(unit.round(12).unique().sort().alias("units"), unit.first().alias("_unit"))
        .with_columns(
            # the exact unit (7 × 1/7 is 1), the rounded ones only to tell units apart
            pl.when(pl.col("units").list.len() == 1).then(pl.col("_unit")).alias("gpu_unit")
        )
        .select(list(schema))
        .sort("cluster")
    )


def cluster_queues_in_gpus(
    cluster_queues: pl.DataFrame, nodes: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """ClusterQueue GPU quota rows with ``nominal_gpus``, ``usage_gpus`` and ``borrowed_gpus``
    in physical GPUs, and the rows that could not be converted.

    A row of a resource in :data:`SHARED_RESOURCES` counts advertised units (``nominalQuota:
    28`` of ``nvidia.com/gpu`` on nodes of four time-slicing replicas is 7 GPUs): its three GPU
    columns are multiplied by its cluster's :func:`cluster_gpu_units` ``gpu_unit``. Where the
    cluster's nodes disagree (``gpu_unit`` NULL: a flavor's nodes are not known, so which unit
    its quota counts is not) the row keeps its figures and is returned in the second frame. A
    cluster without node snapshots keeps them (as a pod on a node without snapshot does).
    ``nominal_quota``, ``borrowing_limit`` and ``lending_limit`` stay as the object writes them
    (advertised units: the values a patch of the ClusterQueue sets).

    Args:
        cluster_queues: ``KUEUE_CLUSTER_QUEUE_SCHEMA`` rows (``cluster, resource, nominal_gpus,
            usage_gpus, borrowed_gpus``, any other columns).
        nodes: ``raw.k8s_nodes`` rows, or None.

    Returns:
        ``(converted, ambiguous)``: ``converted`` has the same rows, order and columns;
        ``ambiguous`` is ``cluster, name, flavor, resource, units`` of the rows kept in
        advertised units (``units``: the cluster's distinct units, :func:`cluster_gpu_units`).
    """
    units = cluster_gpu_units(nodes)
    keyed = cluster_queues.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row")).join(
        units, on="cluster", how="left"
    )
    shared = pl.col("resource").is_in(list(SHARED_RESOURCES)).fill_null(value=False)
    factor = pl.when(shared).then(pl.col("gpu_unit")).fill_null(1.0)
    cols = [c for c in ("nominal_gpus", "usage_gpus", "borrowed_gpus") if c in keyed.columns]
    converted = (
        keyed.sort("_row")
        .with_columns([(pl.col(c) * factor).alias(c) for c in cols])
        .select(cluster_queues.columns)
    )
    ambiguous = (
        keyed.filter(shared & pl.col("units").is_not_null() & pl.col("gpu_unit").is_null())
        .sort("_row")
        .select("cluster", "name", "flavor", "resource", "units")
    )
    return converted, ambiguous
