"""Kubernetes object snapshots (``goodput ingest k8s-objects``): Kueue Workloads, ClusterQueues,
LocalQueues and core/v1 Nodes, split by kind into their raw tables.

One file may hold one kind (``kubectl get workloads -A -o json``, ``kubectl get nodes -o json``)
or several (``kubectl get workloads,clusterqueues,localqueues,nodes -A -o json`` prints one
``List`` of mixed items): each item goes to the parser of its ``kind`` (a watch event
``{"type": ..., "object": {...}}`` by its object's kind), and an item of any other kind is a
rejected row (field ``kind``), never dropped silently.

Every row carries ``snapshot_at``: when the dump was taken, which is the file's modification time
(UTC) unless the caller says otherwise; ``kubectl get`` prints no time of its own. The newest
snapshot of an object is its row with the greatest ``snapshot_at`` (views ``kueue_cluster_queues``,
``kueue_local_queues``; the latest Workloads feed :func:`pipelines.core.k8s_attempts.
k8s_attempts`).

The Node parser (:func:`node_rows`) reads per node: the GPU product and rack labels, GPU
``capacity`` and ``allocatable`` (``nvidia.com/gpu``, ``amd.com/gpu`` and MIG resources in GPUs, as
:func:`pipelines.kubernetes._pods_parse.gpu_worth`), the ``Ready`` condition, ``unschedulable``
(cordoned), taints and the creation time; and the accelerator resources its capacity or
allocatable names that count no GPU (``uncounted_resources``: ``habana.ai/gaudi``,
:func:`pipelines.kubernetes._pods_parse.uncounted_accelerators`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import polars as pl

from metrics.mig import mig_fraction
from metrics.schema import UTC_DATETIME
from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.kubernetes._json_items import (
    BadItem,
    JsonItem,
    RowsRead,
    get_path,
    iter_rows,
    parse_k8s_time,
    read_json_items,
    rows_from_items,
    text_or_none,
)
from pipelines.kubernetes._pods_parse import MIG_PREFIX, gpu_worth, uncounted_accelerators
from pipelines.kubernetes._workload_topology import WORKLOAD_TOPOLOGY_SCHEMA, workload_topology_rows
from pipelines.kubernetes._workloads_parse import (
    K8S_WORKLOAD_SCHEMA,
    KUEUE_CLUSTER_QUEUE_SCHEMA,
    KUEUE_LOCAL_QUEUE_SCHEMA,
    _check_kind,
    _cluster_queue_rows,
    _local_queue_row,
    _meta,
    _unwrap,
    _workload_row,
    keep_last,
    parse_quantity,
)

__all__ = [
    "K8S_NODE_SCHEMA",
    "KUEUE_TOPOLOGY_SCHEMA",
    "OBJECT_KINDS",
    "OBJECT_SOURCES",
    "SNAPSHOT_COLUMN",
    "WORKLOAD_TOPOLOGY_SOURCE",
    "node_rows",
    "object_schema",
    "parse_k8s_nodes",
    "parse_k8s_objects",
]

_UTC = UTC_DATETIME

#: The column every object row gains: when the snapshot was taken (UTC).
SNAPSHOT_COLUMN: Final = "snapshot_at"

#: Columns of one Node, in this order.
K8S_NODE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "name": pl.String(),
    "uid": pl.String(),
    "gpu_product": pl.String(),
    "rack": pl.String(),
    "gpu_resource": pl.String(),
    "gpu_capacity": pl.Float64(),
    "gpu_allocatable": pl.Float64(),
    "uncounted_resources": pl.String(),
    "ready": pl.Boolean(),
    "ready_reason": pl.String(),
    "ready_since": _UTC,
    "unschedulable": pl.Boolean(),
    "taints": pl.String(),
    "created_at": _UTC,
    "deleted_at": _UTC,
    "labels": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: One row per level of a Kueue ``Topology`` (topology-aware scheduling): ``level_index`` 0 is
#: the outermost level, ``node_label`` the Node label whose value is a node's domain there.
KUEUE_TOPOLOGY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "name": pl.String(),
    "uid": pl.String(),
    "level_index": pl.Int64(),
    "node_label": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: Label keys that name a node's GPU product, in order of trust (NVIDIA GPU feature discovery
#: first, then the AMD GPU node labeller's product name and its legacy ``beta.`` key).
GPU_PRODUCT_LABELS: Final = ("nvidia.com/gpu.product", "amd.com/gpu.product-name",
                             "beta.amd.com/gpu.product-name", "cloud.google.com/gke-accelerator",
                             "node.kubernetes.io/instance-type")  # fmt: skip
#: Label keys that name a node's rack (no standard key exists; these are common ones).
RACK_LABELS: Final = ("topology.kubernetes.io/rack", "topology.example.com/rack",
                      "node.kubernetes.io/rack", "rack")  # fmt: skip


def _topology_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ``spec.levels[]`` of a Kueue Topology (cluster-scoped)."""
    _check_kind(obj, "Topology")
    meta = _meta(obj, namespaced=False)
    levels = get_path(obj, "spec", "levels")
    if not isinstance(levels, list) or not levels:
        raise BadItem("spec.levels", "a Topology without levels")
    rows = []
    for i, level in enumerate(levels):
        label = text_or_none(level.get("nodeLabel")) if isinstance(level, dict) else None
        if label is None:
            raise BadItem(f"spec.levels[{i}].nodeLabel", "a level without a nodeLabel")
        rows.append({"name": str(meta["name"]), "uid": str(meta["uid"]), "level_index": i,
                     "node_label": label})  # fmt: skip
    return rows


def _node_row(obj: dict[str, Any]) -> list[dict[str, Any]]:
    obj = _unwrap(obj)
    kind, api = obj.get("kind"), str(obj.get("apiVersion") or "v1")
    if kind is not None and kind != "Node":
        raise BadItem("kind", f"not a Node (kind {kind!r})")
    if api != "v1":
        raise BadItem("apiVersion", f"not a core/v1 Node (apiVersion {api!r})")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name") or not meta.get("uid"):
        raise BadItem("metadata.name", "node has no name or uid")
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        raise BadItem("metadata.labels", "not an object")
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}

    def gpus(key: str) -> tuple[float | None, set[str]]:
        amounts = status.get(key) or {}
        if not isinstance(amounts, dict):
            raise BadItem(f"status.{key}", "not an object")
        total, used = None, set()
        for res, value in amounts.items():
            worth = gpu_worth(str(res))
            if worth is None:
                continue
            # GFD's product label of a MIG resource (``<resource>.product``) names the GPU too,
            # which the resource name does not: an RTX PRO 6000's 1g.24gb is 1/4, an H100 NVL's
            # 1/7 (metrics/mig.py)
            product = labels.get(f"{str(res).removesuffix('.shared')}.product")
            if product and str(res).startswith(MIG_PREFIX):
                worth = mig_fraction(str(product)) or worth
            total = (total or 0.0) + parse_quantity(value, f"status.{key}.{res}") * worth
            used.add(str(res))
        return total, used

    cap, res_cap = gpus("capacity")
    alloc, res_alloc = gpus("allocatable")
    uncounted = uncounted_accelerators(
        {**(status.get("allocatable") or {}), **(status.get("capacity") or {})}
    )
    ready = next(
        (
            c
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") == "Ready"
        ),
        None,
    )
    taints = []
    for i, t in enumerate(spec.get("taints") or []):
        if not isinstance(t, dict) or not t.get("key"):
            raise BadItem(f"spec.taints[{i}]", "taint without a key")
        value = f"={t['value']}" if t.get("value") else ""
        taints.append(f"{t['key']}{value}:{t.get('effect') or ''}")
    return [
        {
            "name": str(meta["name"]),
            "uid": str(meta["uid"]),
            "gpu_product": next(
                (str(labels[k]) for k in GPU_PRODUCT_LABELS if labels.get(k)), None
            ),
            "rack": next((str(labels[k]) for k in RACK_LABELS if labels.get(k)), None),
            "gpu_resource": ",".join(sorted(res_cap | res_alloc)) or None,
            "gpu_capacity": cap,
            "gpu_allocatable": alloc,
            "uncounted_resources": ",".join(sorted(uncounted)) or None,
            "ready": None if ready is None else ready.get("status") == "True",
            "ready_reason": None if ready is None else text_or_none(ready.get("reason")),
            "ready_since": None
            if ready is None
            else parse_k8s_time(ready.get("lastTransitionTime"), "Ready.lastTransitionTime"),
            "unschedulable": bool(spec.get("unschedulable")),
            "taints": json.dumps(taints) if taints else None,
            "created_at": parse_k8s_time(meta.get("creationTimestamp"), "creationTimestamp"),
            "deleted_at": parse_k8s_time(meta.get("deletionTimestamp"), "deletionTimestamp"),
            "labels": json.dumps(labels, sort_keys=True) if labels else None,
        }
    ]


def node_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The row of one core/v1 Node object (see :data:`K8S_NODE_SCHEMA`), without ``cluster``,
    ``file`` and ``line_no``.

    Raises:
        BadItem: not a Node, no name/uid, or a malformed quantity, time or taint.
    """
    return _node_row(obj)


#: Object kind → (the ``goodput`` source its rows load as, its row builder, schema, unique key).
OBJECT_KINDS: Final[
    dict[
        str,
        tuple[str, Callable[[dict[str, Any]], list[dict[str, Any]]], dict[str, pl.DataType],
              list[str]],
    ]
] = {
    "Workload": ("k8s-workloads", lambda o: [_workload_row(_unwrap(o))], K8S_WORKLOAD_SCHEMA,
                 ["uid"]),
    "ClusterQueue": ("kueue-cluster-queues", _cluster_queue_rows, KUEUE_CLUSTER_QUEUE_SCHEMA,
                     ["uid", "flavor", "resource"]),
    "LocalQueue": ("kueue-local-queues", _local_queue_row, KUEUE_LOCAL_QUEUE_SCHEMA, ["uid"]),
    "Node": ("k8s-nodes", _node_row, K8S_NODE_SCHEMA, ["uid"]),
    "Topology": ("kueue-topologies", lambda o: _topology_rows(_unwrap(o)),
                 KUEUE_TOPOLOGY_SCHEMA, ["uid", "level_index"]),
}  # fmt: skip

#: The raw source of Workloads' topology requests and assignments (a second table from the
#: Workload items, :mod:`._workload_topology`).
WORKLOAD_TOPOLOGY_SOURCE: Final = "kueue-workload-topology"

#: The raw sources ``k8s-objects`` splits into, in load order.
OBJECT_SOURCES: Final = (*(v[0] for v in OBJECT_KINDS.values()), WORKLOAD_TOPOLOGY_SOURCE)


def object_schema(source: str) -> dict[str, pl.DataType]:
    """The row schema of an object source (:data:`OBJECT_SOURCES`), ``snapshot_at`` included.

    Raises:
        KeyError: not an object source.
    """
    for src, _build, schema, _key in OBJECT_KINDS.values():
        if src == source:
            return {**schema, SNAPSHOT_COLUMN: _UTC}
    if source == WORKLOAD_TOPOLOGY_SOURCE:
        return {**WORKLOAD_TOPOLOGY_SCHEMA, SNAPSHOT_COLUMN: _UTC}
    raise KeyError(source)


def _workload_topology(
    file: str, items: list[JsonItem], framing: str, cluster: str, when: dt.datetime
) -> ParseResult:
    """The ``kueue-workload-topology`` rows of the Workload items (the last item of a uid wins);
    an item whose request or assignment is malformed is rejected here (its Workload row may
    still load)."""
    rows: list[dict[str, Any]] = []
    rejects: list[tuple[int, str, str, str]] = []
    for item, built, err in iter_rows(
        items, lambda o: {"rows": workload_topology_rows(_unwrap(o))}
    ):
        if built is not None:
            rows.extend({**r, "line_no": item.line_no} for r in built["rows"])
        elif err is not None and item.obj is not None:
            rejects.append((item.line_no, err[0], item.text(), err[1]))
    read = RowsRead(file, items, framing, rows, rejects)
    res = keep_last(read, schema=WORKLOAD_TOPOLOGY_SCHEMA, key=["uid", "pod_set", "domain_index"],
                    cluster=cluster)  # fmt: skip
    return ParseResult(
        rows=res.rows.with_columns(pl.lit(when, dtype=_UTC).alias(SNAPSHOT_COLUMN)),
        rejected=res.rejected,
        info={**res.info, "kind": "Workload"},
    )


_LIST_KINDS: Final = frozenset(
    {"List", "WorkloadList", "ClusterQueueList", "LocalQueueList", "NodeList", "TopologyList"}
)


def _kind_of(obj: Mapping[str, Any] | None) -> str | None:
    if obj is None:
        return None
    inner = obj.get("object")
    if isinstance(inner, dict) and "metadata" not in obj:
        return text_or_none(inner.get("kind"))
    kind = text_or_none(obj.get("kind"))
    if (
        kind is None
        and str(obj.get("apiVersion") or "") == "v1"
        and get_path(obj, "status", "nodeInfo")
    ):
        return "Node"
    return kind


def snapshot_time(path: str | Path) -> dt.datetime:
    """When a dump was taken: the file's modification time, UTC."""
    return dt.datetime.fromtimestamp(Path(path).stat().st_mtime, dt.UTC)


def parse_k8s_objects(
    path: str | Path,
    *,
    cluster: str = "default",
    snapshot_at: dt.datetime | None = None,
    list_kind: str | None = None,
) -> dict[str, ParseResult]:
    """Parse a dump of Kueue/Node objects, split by kind.

    Args:
        path: a ``List`` (or ``WorkloadList``, ``ClusterQueueList``, ``LocalQueueList``,
            ``NodeList``), a bare array, one object, or JSON lines of objects or watch events
            (gzip detected); items may be of mixed kinds.
        cluster: the value of the ``cluster`` column.
        snapshot_at: the snapshot's time (UTC); default the file's modification time.
        list_kind: only for error messages.

    Returns:
        Source (:data:`OBJECT_SOURCES`: ``k8s-workloads``, ``kueue-cluster-queues``,
        ``kueue-local-queues``, ``k8s-nodes``) → its :class:`ParseResult`, for the kinds present
        in the file only. Rows have the kind's schema (:data:`K8S_WORKLOAD_SCHEMA`,
        :data:`KUEUE_CLUSTER_QUEUE_SCHEMA`, :data:`KUEUE_LOCAL_QUEUE_SCHEMA`,
        :data:`K8S_NODE_SCHEMA`) plus ``snapshot_at``; the last item of a uid wins. Items of
        another kind (or not objects) are rejected rows, filed with the first kind present.

    Raises:
        InputFormatError: not JSON, a list of another kind, or no item of a known kind.
    """
    file = str(path)
    items, framing = read_json_items(path, list_kinds=_LIST_KINDS)
    when = snapshot_at or snapshot_time(path)
    by_kind: dict[str, list[JsonItem]] = {}
    foreign: list[JsonItem] = []
    for item in items:
        kind = _kind_of(item.obj)
        if kind in OBJECT_KINDS:
            by_kind.setdefault(kind, []).append(item)
        else:
            foreign.append(item)
    if not by_kind:
        raise InputFormatError(
            file,
            f"no item is a {', '.join(OBJECT_KINDS)}" + (f" ({list_kind})" if list_kind else ""),
        )
    out: dict[str, ParseResult] = {}
    for n, (kind, (source, build, schema, key)) in enumerate(
        (k, v) for k, v in OBJECT_KINDS.items() if k in by_kind
    ):
        mine = by_kind[kind] + (foreign if n == 0 else [])
        read = rows_from_items(file, mine, framing, build=build, what=kind)
        res = keep_last(read, schema=schema, key=key, cluster=cluster)
        rejected = res.rejected
        if n == 0 and foreign:
            # rows_from_items rejected them through ``build`` ("not a Workload" ...); say why.
            lines = {i.line_no for i in foreign}
            rejected = rejected.with_columns(
                pl.when(pl.col("line_no").is_in(list(lines)))
                .then(pl.lit("kind"))
                .otherwise(pl.col("field"))
                .alias("field"),
                pl.when(pl.col("line_no").is_in(list(lines)))
                .then(pl.lit(f"kind not loaded by k8s-objects (expects {', '.join(OBJECT_KINDS)})"))
                .otherwise(pl.col("reason"))
                .alias("reason"),
            )
        out[source] = ParseResult(
            rows=res.rows.with_columns(pl.lit(when, dtype=_UTC).alias(SNAPSHOT_COLUMN)),
            rejected=rejected,
            info={**res.info, "kind": kind},
        )
    if "Workload" in by_kind:
        topo = _workload_topology(file, by_kind["Workload"], framing, cluster, when)
        if topo.rows.height or topo.rejected.height:
            out[WORKLOAD_TOPOLOGY_SOURCE] = topo
    return out


def parse_k8s_nodes(
    path: str | Path, *, cluster: str = "default", snapshot_at: dt.datetime | None = None
) -> ParseResult:
    """Parse ``kubectl get nodes -o json`` into one row per Node (:data:`K8S_NODE_SCHEMA` plus
    ``snapshot_at``); see :func:`parse_k8s_objects`.

    Raises:
        InputFormatError: not JSON, or no Node in it.
    """
    found = parse_k8s_objects(path, cluster=cluster, snapshot_at=snapshot_at, list_kind="Node")
    if "k8s-nodes" not in found:
        raise InputFormatError(str(path), "no item is a Node")
    return found["k8s-nodes"]
