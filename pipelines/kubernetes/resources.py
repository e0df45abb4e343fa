"""Kubernetes sources: exported ``kubectl get ... -o json`` files (a live watch spools to them)."""

from __future__ import annotations

from pipelines._sources import FileSource
from pipelines.kubernetes import K8S_EVENTS, K8S_OBJECTS, K8S_PODS

__all__ = ["K8sEventsFileSource", "K8sObjectsFileSource", "K8sPodsFileSource"]


class K8sEventsFileSource(FileSource):
    """``kubectl get events -A -o json`` dumps and JSON-lines streams under ``<cluster>/k8s/``."""

    kind: str = K8S_EVENTS.name


class K8sPodsFileSource(FileSource):
    """``kubectl get pods -A -o json`` snapshots under ``<cluster>/k8s/``."""

    kind: str = K8S_PODS.name


class K8sObjectsFileSource(FileSource):
    """Kueue ``Workload``/``ClusterQueue``/``LocalQueue`` and ``Node`` snapshots under
    ``<cluster>/k8s/`` (``workloads*``, ``clusterqueues*``, ``localqueues*``, ``nodes*``)."""

    kind: str = K8S_OBJECTS.name
