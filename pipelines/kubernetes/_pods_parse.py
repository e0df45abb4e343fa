"""Kubernetes Pods (``kubectl get pods -A -o json``) into one row per pod, with its GPU request.

GPU count of a pod (METRICS.md "Units and identities"): per container the ``limits`` value of
each GPU resource, else its ``requests`` value (Kubernetes makes extended-resource requests equal
to limits), then combined as the scheduler does for the pod's effective request: per resource,
``max(sum over containers + restartable (sidecar) init containers, max over the other init
containers of their request + the sidecars started before them)``. Resources and their worth in
GPUs:

- ``nvidia.com/gpu``: 1 per unit; milli-quantities (``500m``) count 0.5 (GPU-sharing schedulers);
- ``amd.com/gpu`` (AMD GPU device plugin, ``resource_naming_strategy: single``): 1 per unit, the
  same quantities; NVIDIA's MIG and replica rules below never apply to it;
- ``nvidia.com/mig-<g>g.<mem>gb`` (MIG "mixed" strategy): ``g`` of the GPU's 7 compute slices
  (A30 profiles ``1g.6gb``/``2g.12gb``/``4g.24gb``: of 4), so ``mig-3g.40gb`` = 3/7; a profile
  with a compute-instance prefix (``mig-1c.3g.40gb``) counts its ``c`` slices; one with an
  attribute, which the device plugin writes with ``.`` for ``+`` (``mig-1g.10gb.me`` =
  ``1g.10gb+me``; ``.me.all``, ``.gfx``), counts as its profile; its
  time-slicing replicas renamed ``nvidia.com/mig-<g>g.<mem>gb.shared`` count the same per unit
  (the node's replicas label divides them in the core layer).

Under the MIG "single" strategy a slice is advertised as ``nvidia.com/gpu`` and counts 1: the
pod alone cannot tell.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import polars as pl

from metrics.mig import MIG_DOTTED_ATTRIBUTE, mig_fraction
from pipelines._parse_result import ParseResult
from pipelines.kubernetes._json_items import (
    BadItem,
    get_path,
    int_or_none,
    parse_k8s_time,
    parse_result,
    read_rows,
    rows_frame,
    stamp,
    text_or_none,
)

__all__ = [
    "ADMISSION_REJECTION_REASONS",
    "K8S_POD_SCHEMA",
    "gpu_worth",
    "is_admission_rejection",
    "is_uncounted_accelerator",
    "parse_k8s_pods",
    "uncounted_accelerators",
]

#: Columns of one Kubernetes pod, in this order.
K8S_POD_SCHEMA: dict[str, pl.DataType] = {
    "uid": pl.String(),
    "cluster": pl.String(),
    "namespace": pl.String(),
    "name": pl.String(),
    "node_name": pl.String(),
    "phase": pl.String(),
    "created_at": pl.Datetime("us", "UTC"),
    "scheduled_at": pl.Datetime("us", "UTC"),
    "started_at": pl.Datetime("us", "UTC"),
    "finished_at": pl.Datetime("us", "UTC"),
    "deleted_at": pl.Datetime("us", "UTC"),
    "gpus": pl.Float64(),
    "gpu_resource": pl.String(),
    "uncounted_resources": pl.String(),
    "queue_name": pl.String(),
    "workload_name": pl.String(),
    "owner_kind": pl.String(),
    "owner_name": pl.String(),
    "priority_class": pl.String(),
    "exit_code": pl.Int64(),
    "termination_reason": pl.String(),
    "restart_count": pl.Int64(),
    "labels": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_LIST_KINDS: Final = frozenset({"List", "PodList"})
_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
# Where Kueue versions and integrations put the Workload's name on a pod, in order of trust.
_WORKLOAD_ANNOTATIONS: Final = ("kueue.x-k8s.io/workload", "kueue.x-k8s.io/workload-name")
_WORKLOAD_LABELS: Final = ("kueue.x-k8s.io/workload-name", "kueue.x-k8s.io/pod-group-name")
_DEFAULT_CONTAINER: Final = "kubectl.kubernetes.io/default-container"
_GPU: Final = "nvidia.com/gpu"
# the AMD GPU device plugin's resource (ROCm/k8s-device-plugin, default naming strategy "single")
_AMD_GPU: Final = "amd.com/gpu"
# time-slicing / MPS replicas renamed (device plugin ``renameByDefault: true``)
_GPU_SHARED: Final = "nvidia.com/gpu.shared"
# the suffix renamed replicas get (``nvidia.com/mig-1g.10gb.shared`` too)
_SHARED_SUFFIX: Final = ".shared"
MIG_PREFIX: Final = "nvidia.com/mig-"
#: A MIG profile with an attribute as the device plugin names it
#: (:data:`metrics.mig.MIG_DOTTED_ATTRIBUTE`).
_MIG_DOTTED_ATTRIBUTE: Final = re.compile(MIG_DOTTED_ATTRIBUTE)
#: Vendor prefixes of accelerator device plugins: Intel GPUs, Habana Gaudi, AWS Inferentia /
#: Trainium (``neuron``, ``neuroncore``, ``neurondevice``), Google TPUs, AMD/Xilinx FPGAs,
#: Qualcomm AI 100 (``qualcomm.com/qaic``), besides NVIDIA's and AMD's own.
_ACCELERATOR_PREFIXES: Final = (
    "nvidia.com/",
    "amd.com/",
    "gpu.intel.com/",
    "habana.ai/",
    "aws.amazon.com/neuron",
    "google.com/tpu",
    "xilinx.com/",
    "qualcomm.com/",
)
#: Words naming a NIC resource of an accelerator vendor (the NVIDIA Network Operator's
#: ``nvidia.com/rdma_shared_device_a``, ``nvidia.com/hostdev``, ``nvidia.com/mlnxnics``,
#: SR-IOV pools): no accelerator.
_NIC_WORDS: Final = ("rdma", "sriov", "hostdev", "mlnx")
_QUANTITY_RE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)(m?)\s*$")
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})
#: ``status.reason`` of a pod the kubelet rejected at admission (``pkg/kubelet/lifecycle``: its
#: admit handlers and the scheduler predicates it reruns; ``OutOf<resource>`` besides). Such a
#: pod never ran a container and never held a device: its GPUs were never allocated. ``Evicted``
#: is not here: the eviction manager also rejects new pods with it, but mostly it ends pods that
#: ran (their end then follows the terminal-pod rule of :func:`_terminal_end`).
ADMISSION_REJECTION_REASONS: Final = frozenset(
    {
        "UnexpectedAdmissionError",
        "UnexpectedPredicateFailureType",
        "NodeAffinity",
        "NodeName",
        "NodePorts",
        "TaintToleration",
        "InvalidNodeInfo",
        "PodOSNotSupported",
        "PodOSSelectorNodeLabelDoesNotMatch",
        "InitContainerRestartPolicyForbidden",
        "SupplementalGroupsPolicyNotSupported",
        "TopologyAffinityError",
        "SMTAlignmentError",
        "SysctlForbidden",
        "AppArmor",
        "NodeShutdown",
    }
)
#: Conditions whose ``lastTransitionTime`` dates a terminal pod's end when no container says it:
#: the kubelet's ``DisruptionTarget=True`` (eviction, preemption, node shutdown, Kubernetes
#: ≥ 1.26) and ``Ready=False`` / ``ContainersReady=False`` (set as the pod fails or completes).
_END_CONDITIONS: Final = (
    ("DisruptionTarget", "True"),
    ("Ready", "False"),
    ("ContainersReady", "False"),
)


def gpu_worth(resource: str) -> float | None:
    """GPUs that one unit of ``resource`` is worth; None when it is not a GPU resource.

    Args:
        resource: an extended-resource name, e.g. ``nvidia.com/gpu`` or ``nvidia.com/mig-3g.40gb``.

    Returns:
        1.0 for ``nvidia.com/gpu`` and ``nvidia.com/gpu.shared`` (one advertised unit: a GPU,
        a MIG slice of the "single" strategy or a time-slicing / MPS replica, which the node's
        labels decide in the core layer, :mod:`pipelines.core.k8s_gpu_units`); for
        ``nvidia.com/mig-<profile>`` the MIG fraction of :func:`metrics.mig.mig_fraction`
        (``mig-3g.40gb`` = 3/7, A30 ``mig-1g.6gb`` = 1/4, a compute instance
        ``mig-1c.3g.40gb`` = 1/7; a profile with an attribute, which the device plugin writes
        with ``.`` for ``+``: ``mig-1g.10gb.me`` = ``1g.10gb+me`` = 1/7, also ``.me.all`` and
        ``.gfx``), and the same for its time-slicing / MPS replicas renamed
        ``nvidia.com/mig-<profile>.shared`` (device plugin ``renameByDefault``; one replica,
        which the node's ``nvidia.com/mig-<profile>.replicas`` label makes ``1/R`` of it in
        the core layer); 1.0 for ``amd.com/gpu`` (the AMD GPU device plugin's whole GPU); None
        for any other resource (``amd.com/cpx_nps4`` and the other partition resources of the
        AMD plugin's "mixed" naming, another vendor's ``gpu.intel.com/i915``) and for an
        impossible profile.
    """
    if resource in (_GPU, _GPU_SHARED, _AMD_GPU):
        return 1.0
    if not resource.startswith(MIG_PREFIX):
        return None
    profile = resource[len(MIG_PREFIX) :].removesuffix(_SHARED_SUFFIX)
    return mig_fraction(_MIG_DOTTED_ATTRIBUTE.sub(r"\1+\2", profile))


def is_uncounted_accelerator(resource: str) -> bool:
    """Whether a pod or node resource names an accelerator that is not counted as GPUs.

    True for an extended resource (a name with a ``/`` whose domain is not ``kubernetes.io``,
    ``k8s.io`` or a subdomain of them: so never ``cpu``, ``memory``, ``ephemeral-storage``,
    ``hugepages-*``, ``pods``) that :func:`gpu_worth` gives None and that either starts with a
    known accelerator vendor's prefix (:data:`_ACCELERATOR_PREFIXES`: ``amd.com/cpx_nps4``,
    ``gpu.intel.com/i915``, ``habana.ai/gaudi``, ``aws.amazon.com/neuroncore``,
    ``google.com/tpu``, an impossible MIG profile ``nvidia.com/mig-8g.80gb``) or contains
    ``gpu`` (``aliyun.com/gpu-mem``); an accelerator vendor's NIC resource (a name with
    ``rdma``, ``sriov``, ``hostdev`` or ``mlnx``: :data:`_NIC_WORDS`) is not one (METRICS.md
    "Accelerators not counted as GPUs").
    """
    if "/" not in resource or gpu_worth(resource) is not None:
        return False
    domain, _, name = resource.partition("/")
    if any(domain == d or domain.endswith(f".{d}") for d in ("kubernetes.io", "k8s.io")):
        return False
    if resource.startswith(_ACCELERATOR_PREFIXES):
        return not any(word in name.lower() for word in _NIC_WORDS)
    return "gpu" in resource.lower()


def _asks(value: object) -> bool:
    """Whether a quantity asks anything: False for a zero (``0``, ``0m``), True for any other
    value, also one this parser cannot read (``1Gi``: a resource it does not count)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    m = _QUANTITY_RE.match(str(value))
    return m is None or float(m[1]) != 0


def uncounted_accelerators(amounts: Mapping[str, object]) -> set[str]:
    """The uncounted accelerator resources (:func:`is_uncounted_accelerator`) of one set of
    amounts (a container's limits and requests, a Node's capacity and allocatable) with a
    non-zero quantity; none where the amounts also name a counted GPU resource: beside
    ``nvidia.com/gpu`` a vendor's other resources are shares of that counted GPU (HAMi's
    ``nvidia.com/gpumem`` / ``nvidia.com/gpucores``), not uncounted devices."""
    if any(gpu_worth(str(k)) is not None and _asks(v) for k, v in amounts.items()):
        return set()
    return {str(k) for k, v in amounts.items() if is_uncounted_accelerator(str(k)) and _asks(v)}


def _uncounted_resources(spec: Mapping[str, Any]) -> str | None:
    """The uncounted accelerator resources (:func:`uncounted_accelerators`) the pod's
    containers and init containers ask (limits or requests, each container on its own), sorted
    and comma-separated; None when there are none."""
    names: set[str] = set()
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = (c.get("resources") if isinstance(c, Mapping) else None) or {}
        names |= uncounted_accelerators(
            {
                k: v
                for part in ("requests", "limits")
                for k, v in (resources.get(part) or {}).items()
            }
        )
    return ",".join(sorted(names)) or None


def _quantity(value: object, field: str) -> float:
    """A Kubernetes quantity of a countable resource: ``8``, ``1.5``, ``500m``."""
    if isinstance(value, bool):
        raise BadItem(field, f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY_RE.match(str(value))
    if m is None:
        raise BadItem(field, f"not a quantity: {value!r}")
    number = float(m[1])
    return number / 1000 if m[2] else number


def _container_gpus(container: Mapping[str, Any], where: str) -> dict[str, float]:
    """Per GPU resource, the container's amount (limits, else requests)."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    out: dict[str, float] = {}
    for key in {*limits, *requests}:
        if gpu_worth(key) is None:
            continue
        source, value = ("limits", limits[key]) if key in limits else ("requests", requests[key])
        out[key] = _quantity(value, f"{where}.resources.{source}.{key}")
    return out


def _pod_gpus(spec: Mapping[str, Any]) -> tuple[float, str | None]:
    """The pod's effective GPU request in GPUs, and the GPU resource names it uses."""
    main: dict[str, float] = {}
    for i, c in enumerate(spec.get("containers") or []):
        for k, v in _container_gpus(c, f"spec.containers[{i}]").items():
            main[k] = main.get(k, 0.0) + v
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for i, c in enumerate(spec.get("initContainers") or []):
        amounts = _container_gpus(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":  # a sidecar: runs beside the main containers
            for k, v in amounts.items():
                sidecars[k] = sidecars.get(k, 0.0) + v
        else:
            for k in {*amounts, *sidecars}:
                need = amounts.get(k, 0.0) + sidecars.get(k, 0.0)
                init_peak[k] = max(init_peak.get(k, 0.0), need)
    keys = sorted({*main, *sidecars, *init_peak})
    total = 0.0
    for k in keys:
        effective = max(main.get(k, 0.0) + sidecars.get(k, 0.0), init_peak.get(k, 0.0))
        worth = gpu_worth(k)
        assert worth is not None
        total += effective * worth
    used = [k for k in keys if max(main.get(k, 0.0), sidecars.get(k, 0.0), init_peak.get(k, 0.0))]
    return total, ",".join(used) or None


def _main_container(pod: Mapping[str, Any]) -> str | None:
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get(_DEFAULT_CONTAINER)
    if annotated:
        return str(annotated)
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0].get("name")) if containers else None


def _time(value: object, field: str) -> datetime | None:
    return parse_k8s_time(value, field)


def is_admission_rejection(phase: str | None, reason: str | None) -> bool:
    """Whether ``phase``/``status.reason`` say the kubelet rejected the pod at admission."""
    if phase != "Failed" or not reason:
        return False
    return reason in ADMISSION_REJECTION_REASONS or reason.startswith("OutOf")


def _terminal_end(
    status: Mapping[str, Any], finishes: list[datetime], all_finished: bool
) -> datetime | None:
    """The end of a pod, as the object gives it: the latest container ``finishedAt`` once every
    main container has terminated with one; else, for a terminal pod (phase ``Succeeded`` /
    ``Failed``: an evicted pod whose containers read ``ContainerStatusUnknown`` with no times),
    the latest of its containers' known finishes and of the ``DisruptionTarget=True``,
    ``Ready=False`` and ``ContainersReady=False`` conditions' ``lastTransitionTime``; else None
    (running, or a terminal pod that says nothing of when it ended)."""
    if all_finished and finishes:
        return max(finishes)
    if status.get("phase") not in _TERMINAL:
        return None
    times = list(finishes)
    for cond in status.get("conditions") or []:
        if not isinstance(cond, Mapping):
            continue
        if (cond.get("type"), cond.get("status")) in _END_CONDITIONS:
            t = _time(cond.get("lastTransitionTime"), f"status.conditions.{cond.get('type')}")
            if t is not None:
                times.append(t)
    return max(times) if times else None


def _disruption_reason(status: Mapping[str, Any]) -> str | None:
    """The ``reason`` of a ``DisruptionTarget=True`` condition (``TerminationByKubelet``,
    ``PreemptionByScheduler``, ``EvictionByEvictionAPI``, ``DeletionByTaintManager``, …)."""
    for cond in status.get("conditions") or []:
        if (
            isinstance(cond, Mapping)
            and cond.get("type") == "DisruptionTarget"
            and cond.get("status") == "True"
            and cond.get("reason")
        ):
            return str(cond["reason"])
    return None


def _pod_row(pod: dict[str, Any]) -> dict[str, Any]:
    """The row of one Pod object."""
    kind = pod.get("kind")
    if kind is not None and kind != "Pod":
        raise BadItem("kind", f"not a Pod (kind {kind!r})")
    meta = pod.get("metadata")
    spec = pod.get("spec")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        raise BadItem("kind" if kind is None else "metadata", "not a Pod (no metadata or spec)")
    raw_status = pod.get("status")
    if raw_status is not None and not isinstance(raw_status, dict):
        raise BadItem("status", f"not an object: {raw_status!r}")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    for key in ("uid", "name"):
        if not meta.get(key):
            raise BadItem(f"metadata.{key}", f"pod has no {key}")
    created = _time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
    if created is None:
        raise BadItem("metadata.creationTimestamp", "pod has no creationTimestamp")

    scheduled = None
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            scheduled = _time(cond.get("lastTransitionTime"), "status.conditions.PodScheduled")

    statuses = status.get("containerStatuses") or []
    run_starts: list[datetime] = []
    finishes: list[datetime] = []
    all_terminated = len(statuses) >= len(spec.get("containers") or []) > 0
    main_name = _main_container(pod)
    main_status: Mapping[str, Any] = {}
    restarts = 0
    for i, cs in enumerate(statuses):
        where = f"status.containerStatuses[{i}]"
        state = cs.get("state") or {}
        last = cs.get("lastState") or {}
        for t in (
            _time(get_path(state, "running", "startedAt"), f"{where}.state.running.startedAt"),
            _time(
                get_path(state, "terminated", "startedAt"), f"{where}.state.terminated.startedAt"
            ),
            _time(
                get_path(last, "terminated", "startedAt"), f"{where}.lastState.terminated.startedAt"
            ),
        ):
            if t is not None:
                run_starts.append(t)
        finished = _time(
            get_path(state, "terminated", "finishedAt"), f"{where}.state.terminated.finishedAt"
        )
        if "terminated" not in state:
            all_terminated = False
        elif finished is not None:
            finishes.append(finished)
        restarts += int_or_none(cs.get("restartCount"), f"{where}.restartCount") or 0
        if cs.get("name") == main_name:
            main_status = cs
    pod_start = _time(status.get("startTime"), "status.startTime")
    ran = bool(run_starts)
    # After a restart the first run's start is lost (lastState keeps only the last run): the
    # pod's startTime, which precedes it, is then the best bound.
    if pod_start is not None and (restarts > 0 or not run_starts):
        run_starts.append(pod_start)
    started = min(run_starts) if run_starts else None

    # The main container's end: its current termination, else (while it waits to restart, as in
    # CrashLoopBackOff) the last one; a running container has none.
    state = main_status.get("state") or {}
    term = state.get("terminated")
    if term is None and "running" not in state:
        term = get_path(main_status, "lastState", "terminated")
    term = term if isinstance(term, Mapping) else {}
    exit_code = int_or_none(term.get("exitCode"), "main container exitCode")
    # A pod-level reason (Evicted, DeadlineExceeded, Shutdown, ...; else, as Kubernetes >= 1.27
    # leaves status.reason empty on eviction, the DisruptionTarget condition's) explains the whole
    # pod's end; the container's own then often says only ContainerStatusUnknown or Error.
    reason = status.get("reason") or _disruption_reason(status) or term.get("reason")
    phase = text_or_none(status.get("phase"))
    finished = _terminal_end(status, finishes, all_terminated)
    if is_admission_rejection(phase, text_or_none(status.get("reason"))) and not ran:
        # Rejected at admission: no container ran, no device was allocated. The pod ends where
        # its hold would begin (its binding, else the kubelet's startTime), so it holds nothing.
        finished = scheduled or pod_start

    gpus, gpu_resource = _pod_gpus(spec)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    workload = next(
        (annotations[k] for k in _WORKLOAD_ANNOTATIONS if annotations.get(k)),
        next((labels[k] for k in _WORKLOAD_LABELS if labels.get(k)), owner.get("name")),
    )
    return {
        "uid": str(meta["uid"]),
        "namespace": text_or_none(meta.get("namespace")),
        "name": str(meta["name"]),
        "node_name": text_or_none(spec.get("nodeName")),
        "phase": phase,
        "created_at": created,
        "scheduled_at": scheduled,
        "started_at": started,
        "finished_at": finished,
        "deleted_at": _time(meta.get("deletionTimestamp"), "metadata.deletionTimestamp"),
        "gpus": gpus,
        "gpu_resource": gpu_resource,
        "uncounted_resources": _uncounted_resources(spec),
        "queue_name": text_or_none(labels.get(_QUEUE_LABEL)),
        "workload_name": text_or_none(workload),
        "owner_kind": text_or_none(owner.get("kind")),
        "owner_name": text_or_none(owner.get("name")),
        "priority_class": text_or_none(spec.get("priorityClassName")),
        "exit_code": exit_code,
        "termination_reason": text_or_none(reason),
        "restart_count": restarts,
        "labels": json.dumps(labels, sort_keys=True, ensure_ascii=False),
    }


def parse_k8s_pods(path: str | Path, *, cluster: str = "default") -> ParseResult:
    """Parse a ``kubectl get pods -A -o json`` export into one row per pod.

    Args:
        path: the file (``kind`` ``List`` or ``PodList``; a bare array or JSON lines of Pods also
            work; gzip is detected by its magic bytes).
        cluster: the value of the ``cluster`` column.

    Returns:
        ``rows`` with :data:`K8S_POD_SCHEMA`:

        - ``uid``, ``namespace``, ``name``, ``node_name`` (``spec.nodeName``; NULL while
          unscheduled), ``phase``;
        - times (UTC, µs): ``created_at`` (``metadata.creationTimestamp``), ``scheduled_at``
          (``PodScheduled=True`` condition's ``lastTransitionTime``), ``started_at`` (earliest
          start of a main container run; ``status.startTime`` when there is none or a
          container restarted, as the first run's start is then lost), ``finished_at`` (latest
          ``terminated.finishedAt`` once every main container has terminated, else NULL),
          ``deleted_at`` (``metadata.deletionTimestamp``);
        - ``gpus``: effective GPU request in GPUs (fractional for MIG and milli-GPUs, 0 for
          CPU-only pods; see the module docstring), ``gpu_resource``: the GPU resource names,
          comma-separated; ``uncounted_resources``: the accelerator resources asked that count
          no GPU (:func:`is_uncounted_accelerator`; ``gpu.intel.com/i915,habana.ai/gaudi``),
          sorted and comma-separated, NULL when none;
        - ``queue_name`` (label ``kueue.x-k8s.io/queue-name``), ``workload_name`` (Kueue
          annotation/label, else the owner's name), ``owner_kind``/``owner_name`` (the
          controller owner reference), ``priority_class``;
        - ``exit_code`` / ``termination_reason`` of the main container (annotation
          ``kubectl.kubernetes.io/default-container``, else the first container): its current
          termination, else its last one while it waits to restart (NULL while it runs); the
          pod's own ``status.reason`` (``Evicted``, ``DeadlineExceeded``), else its
          ``DisruptionTarget`` condition's reason (``TerminationByKubelet``), wins over the
          container's reason (``OOMKilled``, ``Error``, ``Completed``); ``restart_count``: sum
          over the main containers;
        - ``labels``: the pod's labels as a JSON object; ``file``; ``line_no`` (1-based item
          index).

        A uid seen twice keeps its last item. ``rejected``: items that are not Pods or lack
        uid/name/creationTimestamp, or carry a malformed time, count or GPU quantity (``raw`` =
        the item's JSON). ``info``: ``framing``, ``items``, ``duplicates``.

    Raises:
        InputFormatError: the file is not JSON, is a list of another kind, or none of its items
            is a Pod.
    """
    read = read_rows(
        path, list_kinds=_LIST_KINDS, build=lambda o: [_pod_row(o)], what="Kubernetes Pod"
    )
    frame = rows_frame(read.rows, K8S_POD_SCHEMA)
    pods = stamp(
        frame.unique("uid", keep="last", maintain_order=True).sort("line_no"),
        K8S_POD_SCHEMA,
        cluster=cluster,
        file=read.file,
    )
    return parse_result(read, pods, duplicates=frame.height - pods.height)
