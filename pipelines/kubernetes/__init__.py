"""Kubernetes inputs: events, pods, Kueue objects and nodes, parsed without Dagster.

:data:`KINDS` is this package's rows of the input-kind registry (:mod:`pipelines.kinds`); the
Dagster edge is :mod:`pipelines.kubernetes.resources`; the live Event watch (:func:`watch_events`
and its :class:`EventSpool`) runs as ``goodput watch k8s`` (:mod:`pipelines.cli.k8s_watch`).
"""

from __future__ import annotations

from pathlib import Path

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.kinds import IngestOptions, InputKind, RawSource
from pipelines.kubernetes._events_parse import K8S_EVENT_SCHEMA, parse_k8s_events
from pipelines.kubernetes._objects import OBJECT_SOURCES, object_schema, parse_k8s_objects
from pipelines.kubernetes._pods_parse import K8S_POD_SCHEMA, parse_k8s_pods
from pipelines.kubernetes._watch import EventSpool, WatchStats, core_v1_api, watch_events
from pipelines.kubernetes._workloads_parse import (
    K8S_WORKLOAD_SCHEMA,
    KUEUE_LOCAL_QUEUE_SCHEMA,
    KUEUE_WAIT_SENTINEL_S,
)

__all__ = [
    "K8S_EVENTS",
    "K8S_EVENT_SCHEMA",
    "K8S_OBJECTS",
    "K8S_PODS",
    "K8S_POD_SCHEMA",
    "K8S_WORKLOAD_SCHEMA",
    "KINDS",
    "KUEUE_LOCAL_QUEUE_SCHEMA",
    "KUEUE_WAIT_SENTINEL_S",
    "EventSpool",
    "WatchStats",
    "core_v1_api",
    "watch_events",
]


def _objects(path: Path, o: IngestOptions) -> dict[str, ParseResult]:
    return parse_k8s_objects(path, cluster=o.cluster)


def _object_source(source: str) -> RawSource:
    def parse(path: Path, o: IngestOptions) -> ParseResult:
        found = _objects(path, o)
        if source not in found:
            raise InputFormatError(str(path), f"no {source} object in it")
        return found[source]

    return RawSource(
        source, "raw." + source.replace("-", "_"), object_schema(source), parse, freshness="k8s"
    )


K8S_EVENTS = InputKind(
    name="k8s-events",
    sources=(
        RawSource(
            "k8s-events",
            "raw.k8s_events",
            K8S_EVENT_SCHEMA,
            lambda p, o: parse_k8s_events(p, cluster=o.cluster),
            freshness="k8s",
        ),
    ),
    folder="k8s",
    globs=("events*.json", "events*.jsonl"),
    asset="k8s_events",
    group="kubernetes",
    scheduler="kubernetes",
    source_key="k8s_events_source",
    description=(
        "One row per Kubernetes event uid per load, from `kubectl get events -A -o json` "
        "dumps, one partition per cluster and day."
    ),
    help="kubectl get events -o json, events.k8s.io/v1, exporter JSON lines",
)

_PODS = "k8s-pods"

K8S_PODS = InputKind(
    name=_PODS,
    sources=(
        RawSource(
            _PODS,
            "raw.k8s_pods",
            K8S_POD_SCHEMA,
            lambda p, o: parse_k8s_pods(p, cluster=o.cluster),
            freshness="k8s",
        ),
    ),
    folder="k8s",
    globs=("pods*.json",),
    asset="k8s_pods",
    group="kubernetes",
    scheduler="kubernetes",
    source_key="k8s_pods_source",
    description=(
        "One row per pod per snapshot, from `kubectl get pods -A -o json`, one partition "
        "per cluster and day."
    ),
    help="kubectl get pods -o json",
)

K8S_OBJECTS = InputKind(
    name="k8s-objects",
    sources=tuple(_object_source(s) for s in OBJECT_SOURCES),
    folder="k8s",
    globs=(
        "workloads*.json",
        "workloads*.jsonl",
        "clusterqueues*.json",
        "localqueues*.json",
        "nodes*.json",
        "topologies*.json",
    ),
    asset="k8s_objects",
    group="kubernetes",
    scheduler="kubernetes",
    source_key="k8s_objects_source",
    description=(
        "Kueue Workload, ClusterQueue, LocalQueue and Topology and core/v1 Node snapshots "
        "(`kubectl get workloads|clusterqueues|localqueues|topologies|nodes -o json`), split "
        "by kind into raw.k8s_workloads, raw.kueue_cluster_queues, raw.kueue_local_queues, "
        "raw.kueue_topologies and raw.k8s_nodes (and the Workloads' topology requests and "
        "assignments into raw.kueue_workload_topology), one partition per cluster and day."
    ),
    help="Kueue Workload/ClusterQueue/LocalQueue/Topology and nodes JSON",
    split=_objects,
)

#: This package's input kinds, in registry order.
KINDS: tuple[InputKind, ...] = (K8S_EVENTS, K8S_PODS, K8S_OBJECTS)
