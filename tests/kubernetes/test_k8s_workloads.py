"""Kueue object parsers: Workloads (v1beta1/v1beta2), ClusterQueues, LocalQueues.

The fixtures in ``tests/fixtures/kueue-crds/objects/`` are hand-written in the shape of real
Kueue objects and are first checked against the Kueue CRDs' ``openAPIV3Schema`` (the CRDs are
copied from kubernetes-sigs/kueue, see ``SOURCE.md``). Items of ``workloads.json``:

1. ``job-train-llm-7b-3f2a1`` (v1beta1): 2 × 8 GPUs, admitted, finished ``Succeeded``.
2. ``job-esm-pretrain-m2482-3f703`` (v1beta2): preempted twice, admitted a third time and
   running; ``Evicted``/``Preempted`` are False with ``Previously: …``; 2 evictions in
   ``schedulingStats``; ``priorityClassRef``.
3. ``job-eval-suite-8c1d2`` (v1beta1): evicted for ``PodsReadyTimeout``, waiting for its
   requeue backoff (``requeueState``).
4. ``job-mig-notebook-4b7e0`` (v1beta2): 2 pods × one MIG ``3g.40gb`` slice, never admitted.
5. ``job-llm-sft-q9x2w-7a1c4`` (v1beta1): a CPU launcher pod set and 2 × 8-GPU workers,
   finished ``Failed``.
6. a Workload without uid (rejected); 7. a Pod (rejected as another kind).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import polars as pl
import pytest
import yaml

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError
from pipelines.kubernetes._workloads_parse import (
    K8S_WORKLOAD_SCHEMA,
    KUEUE_CLUSTER_QUEUE_SCHEMA,
    KUEUE_LOCAL_QUEUE_SCHEMA,
    parse_k8s_workloads,
    parse_kueue_cluster_queues,
    parse_kueue_local_queues,
    parse_quantity,
    reported_wait_s,
)

CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "kueue-crds"
OBJECTS = CRDS / "objects"


def _t(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


@cache
def _schemas(plural: str) -> dict[str, dict[str, Any]]:
    path = CRDS / f"kueue.x-k8s.io_{plural}.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as fh:
        crd = yaml.load(fh, Loader=loader)
    return {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}


def _schema_errors(obj: dict[str, Any], plural: str) -> list[str]:
    version = obj["apiVersion"].split("/")[1]
    validator = jsonschema.Draft7Validator(_schemas(plural)[version])
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(obj)]


def _row(name: str) -> dict[str, Any]:
    rows = parse_k8s_workloads(OBJECTS / "workloads.json", cluster="k1").rows
    return rows.filter(pl.col("name") == name).row(0, named=True)


@pytest.mark.parametrize(
    ("fixture", "plural", "kind"),
    [
        ("workloads.json", "workloads", "Workload"),
        ("clusterqueues.json", "clusterqueues", "ClusterQueue"),
        ("localqueues.json", "localqueues", "LocalQueue"),
    ],
)
def test_fixtures_validate_against_the_kueue_crds(fixture: str, plural: str, kind: str) -> None:
    """Every hand-written Kueue object is valid under the CRD schema of the version it names."""
    items = json.loads((OBJECTS / fixture).read_text())["items"]
    checked = [i for i in items if i.get("kind") == kind]
    assert checked
    for obj in checked:
        assert _schema_errors(obj, plural) == [], obj["metadata"]["name"]


def test_schema_check_catches_a_wrong_object() -> None:
    """The validation has teeth: a bad condition status and a string count are reported."""
    obj = copy.deepcopy(json.loads((OBJECTS / "workloads.json").read_text())["items"][0])
    obj["status"]["conditions"][0]["status"] = "Maybe"
    obj["spec"]["podSets"][0]["count"] = "2"
    errors = " ".join(_schema_errors(obj, "workloads"))
    assert "'Maybe' is not one of" in errors
    assert "'2' is not of type 'integer'" in errors


def test_one_row_per_workload_and_rejects() -> None:
    """Five Workloads parse with the schema; the uid-less item and the Pod are rejected."""
    res = parse_k8s_workloads(OBJECTS / "workloads.json", cluster="k1")
    assert res.rows.schema == pl.Schema(K8S_WORKLOAD_SCHEMA)
    assert res.rows["line_no"].to_list() == [1, 2, 3, 4, 5]
    assert res.rejected.schema == pl.Schema(REJECTED_SCHEMA)
    got = res.rejected.select("line_no", "field", "reason").rows()
    assert got == [
        (6, "metadata.uid", "object has no uid"),
        (7, "kind", "not a Workload (kind 'Pod')"),
    ]
    assert res.info == {"framing": "list", "items": 7, "duplicates": 0}


def test_finished_workload_conditions_and_gpus() -> None:
    """Queue, ClusterQueue, priority, 2 × 8 GPUs, and the condition times of a finished run."""
    row = _row("job-train-llm-7b-3f2a1")
    assert (row["queue_name"], row["cluster_queue"], row["priority"], row["priority_class"]) == (
        "lq-nlp",
        "cq-research",
        100,
        "research-normal",
    )
    assert (row["pods"], row["gpus"], row["pods_admitted"], row["gpus_admitted"]) == (
        2,
        16.0,
        2,
        16.0,
    )
    assert (row["gpu_resource"], row["gpu_flavors"]) == ("nvidia.com/gpu", "h100-research")
    assert row["created_at"] == _t(2, 8)
    assert row["quota_reserved_at"] == row["admitted_at"] == _t(2, 8, 0, 4)
    assert row["pods_ready_at"] == _t(2, 8, 3, 30)
    assert (row["finished_at"], row["finished_reason"]) == (_t(2, 11, 40, 5), "Succeeded")
    assert row["evicted_at"] is None
    assert (row["owner_kind"], row["owner_name"]) == ("Job", "train-llm-7b")


def test_readmitted_workload_keeps_only_its_latest_transitions() -> None:
    """Evicted/Preempted False ("Previously: …") give no eviction time; counts come from stats."""
    row = _row("job-esm-pretrain-m2482-3f703")
    assert row["api_version"] == "kueue.x-k8s.io/v1beta2"
    assert row["priority_class"] == "research-low"  # v1beta2 priorityClassRef.name
    assert row["quota_reserved_at"] == _t(7, 4, 23, 35)
    assert row["evicted_at"] is None and row["preempted_at"] is None
    assert (row["requeued_at"], row["requeued_reason"]) == (_t(7, 2, 23, 27), "Preempted")
    assert (row["evictions"], json.loads(row["eviction_reasons"])) == (2, {"Preempted": 2})
    conditions = {c["type"]: c for c in json.loads(row["conditions"])}
    assert conditions["Evicted"]["status"] == "False"
    assert conditions["Evicted"]["message"].startswith("Previously: Preempted to accommodate")


def test_evicted_for_pods_ready_timeout_waits_for_backoff() -> None:
    """The Evicted condition's reason, the requeue count and its backoff deadline."""
    row = _row("job-eval-suite-8c1d2")
    assert (row["evicted_at"], row["evicted_reason"]) == (_t(2, 9, 10, 2), "PodsReadyTimeout")
    assert row["quota_reserved_at"] is None and row["admitted_at"] is None
    assert (row["requeue_count"], row["requeue_at"]) == (1, _t(2, 9, 11, 2))
    assert row["cluster_queue"] is None  # no admission while evicted
    assert (row["gpus"], row["max_execution_s"]) == (8.0, 14400)


def test_mig_slices_count_as_fractions() -> None:
    """Two pods with one ``mig-3g.40gb`` each request 6/7 of a GPU; never admitted."""
    row = _row("job-mig-notebook-4b7e0")
    assert row["gpus"] == pytest.approx(6 / 7)
    assert row["gpu_resource"] == "nvidia.com/mig-3g.40gb"
    assert row["pods_admitted"] is None and row["gpus_admitted"] is None
    assert row["quota_reserved_at"] is None


def test_several_pod_sets_and_failed_finish() -> None:
    """A 0-GPU launcher plus 2 × 8-GPU workers = 3 pods, 16 GPUs; Finished with reason Failed."""
    row = _row("job-llm-sft-q9x2w-7a1c4")
    assert (row["pod_sets"], row["pods"], row["gpus"], row["gpus_admitted"]) == (2, 3, 16.0, 16.0)
    assert (row["finished_reason"], row["finished_message"]) == (
        "Failed",
        "Job has reached the specified backoff limit",
    )
    assert row["admitted_at"] == _t(3, 12, 5, 10)


def test_watch_stream_keeps_the_last_version(tmp_path: Path) -> None:
    """JSON lines of watch events: the later version of a uid wins; ERROR events are rejected."""
    items = json.loads((OBJECTS / "workloads.json").read_text())["items"]
    first = copy.deepcopy(items[2])
    later = copy.deepcopy(items[2])
    later["status"]["requeueState"]["count"] = 2
    lines = [
        {"type": "ADDED", "object": first},
        {"type": "MODIFIED", "object": later},
        {"type": "ERROR", "object": {"kind": "Status", "code": 410}},
    ]
    path = tmp_path / "wl.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = parse_k8s_workloads(path)
    assert res.rows["requeue_count"].to_list() == [2]
    assert res.info["duplicates"] == 1
    assert res.rejected["field"].to_list() == ["type"]


def test_a_list_of_pods_is_not_a_workload_file(tmp_path: Path) -> None:
    """A file with no Workload at all is an input error, not a pile of rejected rows."""
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"kind": "List", "items": [{"kind": "Pod", "metadata": {}}]}))
    with pytest.raises(InputFormatError, match="no item is a Kueue Workload"):
        parse_k8s_workloads(path)
    path.write_text(json.dumps({"kind": "PodList", "items": []}))
    with pytest.raises(InputFormatError, match="a PodList"):
        parse_k8s_workloads(path)


def test_cluster_queue_quota_rows() -> None:
    """One row per ClusterQueue × flavor × GPU resource; cohort from v1beta1 and v1beta2."""
    res = parse_kueue_cluster_queues(OBJECTS / "clusterqueues.json", cluster="k1")
    assert res.rows.schema == pl.Schema(KUEUE_CLUSTER_QUEUE_SCHEMA)
    got = res.rows.select(
        "name", "cohort", "flavor", "resource", "nominal_quota", "borrowing_limit", "lending_limit"
    ).rows()
    assert got == [
        ("cq-research", "gpu-pool", "h100-research", "nvidia.com/gpu", 40.0, 16.0, 8.0),
        ("cq-research", "gpu-pool", "a100-mig", "nvidia.com/gpu", 0.0, None, None),
        ("cq-prod", "gpu-pool", "h100-prod", "nvidia.com/gpu", 24.0, None, None),
        ("cq-prod", "gpu-pool", "a100-mig", "nvidia.com/mig-3g.40gb", 14.0, None, 7.0),
        ("cq-cpu", None, None, None, None, None, None),
    ]


def test_cluster_queue_gpus_weigh_mig_slices() -> None:
    """14 ``mig-3g.40gb`` slices are 6 GPUs of quota; usage and borrowing come from status."""
    rows = parse_kueue_cluster_queues(OBJECTS / "clusterqueues.json").rows
    mig = rows.filter(pl.col("resource") == "nvidia.com/mig-3g.40gb").row(0, named=True)
    assert (mig["nominal_gpus"], mig["usage_gpus"]) == (pytest.approx(6.0), pytest.approx(3.0))
    h100 = rows.filter(pl.col("flavor") == "h100-research").row(0, named=True)
    assert (h100["usage_gpus"], h100["borrowed_gpus"], h100["queueing_strategy"]) == (
        48.0,
        8.0,
        "BestEffortFIFO",
    )


def test_local_queues() -> None:
    """Each LocalQueue with the ClusterQueue it feeds and its stop policy."""
    res = parse_kueue_local_queues(OBJECTS / "localqueues.json", cluster="k1")
    assert res.rows.schema == pl.Schema(KUEUE_LOCAL_QUEUE_SCHEMA)
    got = res.rows.select("namespace", "name", "cluster_queue", "stop_policy").rows()
    assert got == [
        ("nlp", "lq-nlp", "cq-research", None),
        ("genomics", "lq-genomics", "cq-research", None),
        ("safety", "lq-safety", "cq-research", None),
        ("vision", "lq-vision", "cq-prod", "Hold"),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8, 8.0), ("16", 16.0), ("500m", 0.5), ("1.5", 1.5), ("2k", 2000.0), ("4Gi", 4 * 2**30)],
)
def test_quantities(value: object, expected: float) -> None:
    """Kubernetes quantities: plain, milli, decimal and binary suffixes."""
    assert parse_quantity(value, "q") == expected


def test_reported_wait_and_kueue_sentinel() -> None:
    """Kueue's ``9223372037s`` (MaxInt64 ns) is unknown, never 292 years of waiting."""
    msg = "Quota reserved in ClusterQueue cq, wait time since queued was {}s"
    assert reported_wait_s(msg.format(41)) == 41
    assert reported_wait_s(msg.format(9223372037)) is None
    sentinel_with_tail = msg.format(9223372037) + "; Flavors considered: one: default(NoFit;…)"
    assert reported_wait_s(sentinel_with_tail) is None
    assert reported_wait_s("Admitted by ClusterQueue cq, wait time since reservation was 0s") == 0
    assert reported_wait_s("The workload is admitted") is None
