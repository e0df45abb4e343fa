"""Kubernetes pods parser: times, GPU counting (MIG, milli, init max rule), owners, exits."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError
from pipelines.kubernetes._pods_parse import K8S_POD_SCHEMA, gpu_worth, parse_k8s_pods

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-pods" / "pods_sample.json"


def _t(h: int, m: int = 0, s: int = 0, day: int = 2) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


def _pod(name: str) -> dict[str, Any]:
    rows = parse_k8s_pods(SAMPLE, cluster="k1").rows
    return rows.filter(pl.col("name") == name).row(0, named=True)


def _write_pod(tmp_path: Path, spec: dict[str, Any]) -> Path:
    pod = {
        "kind": "Pod",
        "metadata": {"uid": "u-1", "name": "p", "creationTimestamp": "2026-11-02T00:00:00Z"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    p = tmp_path / "pods.json"
    p.write_text(json.dumps({"kind": "PodList", "items": [pod]}))
    return p


def test_sample_gives_one_row_per_pod() -> None:
    """Eight pods parse in item order with the schema; the item without uid is rejected."""
    res = parse_k8s_pods(SAMPLE, cluster="k1")
    assert res.rows.schema == pl.Schema(K8S_POD_SCHEMA)
    assert res.rows["line_no"].to_list() == list(range(1, 9))
    assert res.rows["cluster"].unique().to_list() == ["k1"]
    assert res.rejected.schema == pl.Schema(REJECTED_SCHEMA)
    rej = res.rejected.row(0, named=True)
    assert (rej["line_no"], rej["field"], rej["reason"]) == (9, "metadata.uid", "pod has no uid")
    assert json.loads(rej["raw"])["metadata"]["name"] == "half-written-pod"


def test_completed_training_pod_times() -> None:
    """Created, scheduled (PodScheduled=True), first container start, last container finish."""
    row = _pod("train-llm-7b-0-xk2lp")
    assert row["created_at"] == _t(8)
    assert row["scheduled_at"] == _t(8, 0, 5)
    assert row["started_at"] == _t(8, 3, 21)
    assert row["finished_at"] == _t(11, 40, 2)
    assert row["deleted_at"] is None
    assert (row["phase"], row["node_name"], row["namespace"]) == (
        "Succeeded",
        "dgx-a100-07",
        "team-a",
    )


def test_completed_training_pod_identity() -> None:
    """8 GPUs; Kueue queue and workload; Job owner; the annotated default container's exit."""
    row = _pod("train-llm-7b-0-xk2lp")
    assert (row["gpus"], row["gpu_resource"]) == (8.0, "nvidia.com/gpu")
    assert row["queue_name"] == "team-a-queue"
    assert row["workload_name"] == "job-train-llm-7b-3f2a1"
    assert (row["owner_kind"], row["owner_name"]) == ("Job", "train-llm-7b")
    assert row["priority_class"] == "training-high"
    assert (row["exit_code"], row["termination_reason"], row["restart_count"]) == (
        0,
        "Completed",
        0,
    )
    assert json.loads(row["labels"])["team"] == "nlp"


def test_oom_killed_pod() -> None:
    """The OOMKilled sibling: exit 137, reason OOMKilled, integer GPU quantities."""
    row = _pod("train-llm-7b-1-m8q4z")
    assert (row["exit_code"], row["termination_reason"]) == (137, "OOMKilled")
    assert row["gpus"] == 8.0
    assert row["finished_at"] == _t(9, 12, 44)


def test_mig_slice_counts_three_sevenths() -> None:
    """nvidia.com/mig-3g.40gb: 1 counts 3/7 GPU; a restarted running pod has no exit yet."""
    row = _pod("notebook-alice-0")
    assert row["gpus"] == pytest.approx(3 / 7)
    assert row["gpu_resource"] == "nvidia.com/mig-3g.40gb"
    assert (row["exit_code"], row["termination_reason"], row["restart_count"]) == (None, None, 2)
    assert row["started_at"] == _t(16, 20, 1, day=1)
    assert row["finished_at"] is None
    assert (row["owner_kind"], row["workload_name"]) == ("StatefulSet", "notebook-alice")


def test_milli_gpu_and_deletion() -> None:
    """A 500m GPU limit counts 0.5; deletionTimestamp is deleted_at."""
    row = _pod("infer-llama-7c9d8f-x2kqp")
    assert row["gpus"] == 0.5
    assert row["deleted_at"] == _t(12, 0, 30)
    assert row["started_at"] == _t(6, 1, 15)
    assert (row["owner_kind"], row["owner_name"]) == ("ReplicaSet", "infer-llama-7c9d8f")


def test_init_container_max_rule_and_pending() -> None:
    """Init 8 GPUs vs containers 4 + 2: the pod needs 8; a gated pod is unscheduled."""
    row = _pod("pretrain-big-0")
    assert row["gpus"] == 8.0
    assert (row["node_name"], row["scheduled_at"], row["started_at"]) == (None, None, None)
    assert row["queue_name"] == "team-b-queue"
    assert row["workload_name"] == "pod-pretrain-big-0-77e1c"
    assert (row["owner_kind"], row["owner_name"]) == (None, None)


def test_crash_loop_reports_last_termination() -> None:
    """CrashLoopBackOff: the last termination's exit 2/Error, 5 restarts, start = startTime."""
    row = _pod("eval-suite-0-p7w2c")
    assert (row["exit_code"], row["termination_reason"], row["restart_count"]) == (2, "Error", 5)
    assert row["started_at"] == _t(9, 0, 1)
    assert row["finished_at"] is None


def test_cpu_only_pod_has_zero_gpus() -> None:
    """A pod without GPU resources stays in the data with 0 GPUs and no GPU resource."""
    row = _pod("featurize-h5x9d")
    assert (row["gpus"], row["gpu_resource"]) == (0.0, None)
    assert row["finished_at"] == _t(4, 45)


def test_evicted_pod_reason_wins() -> None:
    """An evicted pod: termination_reason is the pod's Evicted, exit code the container's 137."""
    row = _pod("batch-embed-2")
    assert (row["termination_reason"], row["exit_code"], row["phase"]) == ("Evicted", 137, "Failed")
    assert row["owner_kind"] is None
    assert row["workload_name"] is None


@pytest.mark.parametrize(
    ("resource", "worth"),
    [
        ("nvidia.com/gpu", 1.0),
        ("nvidia.com/mig-1g.10gb", 1 / 7),
        ("nvidia.com/mig-7g.80gb", 1.0),
        ("nvidia.com/mig-1g.5gb+me", 1 / 7),
        ("nvidia.com/mig-2g.12gb", 2 / 4),
        ("nvidia.com/mig-1c.3g.40gb", 1 / 7),
        ("cpu", None),
        ("nvidia.com/gpu.shared", 1.0),  # one replica; the node's labels make it 1/R (core)
        # a time-sliced MIG slice renamed (renameByDefault): one replica of a 1/7 or 3/7 slice;
        # the node's nvidia.com/mig-<profile>.replicas label makes it 1/(7R), 3/(7R) (core)
        ("nvidia.com/mig-1g.10gb.shared", 1 / 7),
        ("nvidia.com/mig-3g.40gb.shared", 3 / 7),
        ("nvidia.com/mig-1g.10gb.other", None),
    ],
)
def test_gpu_worth(resource: str, worth: float | None) -> None:
    """GPU worth of a resource: whole GPUs, MIG profiles of 7 (A30: 4) slices, non-GPU None."""
    assert gpu_worth(resource) == (pytest.approx(worth) if worth is not None else None)


def test_sidecar_init_container_adds_to_main(tmp_path: Path) -> None:
    """A restartable (sidecar) init container's GPUs add to the main containers' sum."""
    spec = {
        "containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
        "initContainers": [
            {
                "name": "s",
                "restartPolicy": "Always",
                "resources": {"limits": {"nvidia.com/gpu": 1}},
            },
            {"name": "i", "resources": {"requests": {"nvidia.com/gpu": "2"}}},
        ],
    }
    assert parse_k8s_pods(_write_pod(tmp_path, spec)).rows["gpus"].to_list() == [3.0]


def test_bad_gpu_quantity_is_rejected(tmp_path: Path) -> None:
    """An unparsable GPU quantity rejects the pod with the field's path."""
    spec = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "two"}}}]}
    res = parse_k8s_pods(_write_pod(tmp_path, spec))
    assert res.rows.height == 0
    rej = res.rejected.row(0, named=True)
    assert rej["field"] == "spec.containers[0].resources.limits.nvidia.com/gpu"
    assert rej["reason"] == "not a quantity: 'two'"


def test_events_file_is_not_a_pod_list() -> None:
    """Feeding an EventList raises InputFormatError naming the kind."""
    events = SAMPLE.parents[1] / "k8s-events" / "kspan_deploymentUpdateEvents.json"
    with pytest.raises(InputFormatError, match="EventList"):
        parse_k8s_pods(events)


def test_malformed_pod_structure_is_rejected_not_fatal(tmp_path: Path) -> None:
    """A pod whose containers are strings instead of objects is rejected; the file still parses."""
    meta = {"name": "ok", "creationTimestamp": "2026-11-02T00:00:00Z"}
    good = {"kind": "Pod", "metadata": {**meta, "uid": "u-1"}, "spec": {"containers": [{}]}}
    bad = {"kind": "Pod", "metadata": {**meta, "uid": "u-2"}, "spec": {"containers": ["a"]}}
    p = tmp_path / "pods.json"
    p.write_text(json.dumps({"kind": "List", "items": [good, bad]}))
    res = parse_k8s_pods(p)
    assert res.rows["uid"].to_list() == ["u-1"]
    rej = res.rejected.row(0, named=True)
    assert (rej["line_no"], rej["field"]) == (2, "item")
    assert rej["reason"].startswith("malformed object (AttributeError")


def test_string_status_is_rejected_naming_status(tmp_path: Path) -> None:
    """``"status": "Running"`` (a string, not the PodStatus object) is rejected on ``status``."""
    meta = {"name": "ok", "creationTimestamp": "2026-11-02T00:00:00Z"}
    good = {"kind": "Pod", "metadata": {**meta, "uid": "u-1"}, "spec": {"containers": [{}]}}
    bad = {**good, "metadata": {**meta, "uid": "u-2"}, "status": "Running"}
    p = tmp_path / "pods.json"
    p.write_text(json.dumps({"kind": "List", "items": [good, bad]}))
    res = parse_k8s_pods(p)
    assert res.rows["uid"].to_list() == ["u-1"]
    rej = res.rejected.row(0, named=True)
    assert (rej["line_no"], rej["field"], rej["reason"]) == (
        2,
        "status",
        "not an object: 'Running'",
    )
