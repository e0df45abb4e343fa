"""Ends of pods that failed without a container finish time: rejected at kubelet admission
(``UnexpectedAdmissionError``: never held a device) and evicted (``Evicted``, Kubernetes
>= 1.27's ``DisruptionTarget`` condition). Fixtures: ``tests/fixtures/k8s-pods/SOURCE.md``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.kubernetes._pods_parse import parse_k8s_pods

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-pods"


def _rows(name: str) -> dict[str, dict[str, object]]:
    rows = parse_k8s_pods(FIXTURES / name, cluster="k").rows
    return {r["name"]: r for r in rows.iter_rows(named=True)}


@pytest.mark.parametrize(
    "file", ["pods_admission_2024-05-02.json", "pods_admission_sched_2024-05-02.json"]
)
def test_a_pod_rejected_at_admission_ends_where_it_was_bound(file: str) -> None:
    """infer-7c9f-i was rejected (UnexpectedAdmissionError) at 09:0i, its startTime (and, in the
    second file, its PodScheduled time): it ends there, so its hold (bound 09:0i) is empty; it
    is still Failed, on node-11, with its 1 GPU requested. train-0 runs (no end)."""
    rows = _rows(file)
    for i in range(5):
        r = rows[f"infer-7c9f-{i}"]
        t = datetime(2024, 5, 2, 9, i, tzinfo=UTC)
        assert (r["phase"], r["termination_reason"], r["node_name"]) == (
            "Failed",
            "UnexpectedAdmissionError",
            "node-11",
        )
        assert (r["started_at"], r["finished_at"], r["gpus"]) == (t, t, 1.0)
    assert rows["train-0"]["finished_at"] is None


def test_an_evicted_pod_ends_at_its_disruption_condition() -> None:
    """evicted-105467 (no status.reason, container ContainerStatusUnknown with null times) ends
    at its DisruptionTarget / Ready=False transition, 10:30:02, with the DisruptionTarget's
    reason TerminationByKubelet (not the container's ContainerStatusUnknown)."""
    r = _rows("pods_evicted_2024-05-01.json")["evicted-105467"]
    assert r["finished_at"] == datetime(2024, 5, 1, 10, 30, 2, tzinfo=UTC)
    assert r["started_at"] == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert r["termination_reason"] == "TerminationByKubelet"


def test_an_evicted_pod_without_any_end_time_keeps_none() -> None:
    """evicted (no container statuses) and evicted-new (ContainerStatusUnknown, null times)
    give no end of their own: NULL in the row (the build then ends them at their last known
    time and counts them as a data-quality finding); still Failed, reason Evicted."""
    rows = _rows("pods_evicted_2024-05-01.json")
    for name in ("evicted", "evicted-new"):
        assert rows[name]["finished_at"] is None
        assert (rows[name]["phase"], rows[name]["termination_reason"]) == ("Failed", "Evicted")
    assert rows["two-ctr"]["finished_at"] == datetime(2024, 5, 1, 11, tzinfo=UTC)


def test_a_pod_that_ran_before_an_admission_rejection_keeps_its_containers_end(
    tmp_path: Path,
) -> None:
    """A pod rejected with OutOfnvidia.com/gpu after a node restart, whose container had run
    (10:00 - 10:20), ran: it ends at its container's finish, 10:20, not at its binding."""
    pod = {
        "kind": "Pod",
        "metadata": {"uid": "u", "name": "p", "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "resources": {
            "limits": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Failed", "reason": "OutOfnvidia.com/gpu",
                   "startTime": "2024-05-01T10:00:00Z",
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": "2024-05-01T10:00:00Z"}],
                   "containerStatuses": [{"name": "c", "restartCount": 0, "state": {
                       "terminated": {"exitCode": 137, "reason": "Error",
                                      "startedAt": "2024-05-01T10:00:00Z",
                                      "finishedAt": "2024-05-01T10:20:00Z"}}}]},
    }  # fmt: skip
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"kind": "List", "items": [pod]}))
    row = parse_k8s_pods(path).rows.row(0, named=True)
    assert row["finished_at"] == datetime(2024, 5, 1, 10, 20, tzinfo=UTC)


def test_admission_rejection_reasons() -> None:
    """The kubelet's admission reasons on a Failed pod; not Evicted, not another phase."""
    from pipelines.kubernetes._pods_parse import is_admission_rejection

    assert is_admission_rejection("Failed", "UnexpectedAdmissionError")
    assert is_admission_rejection("Failed", "OutOfnvidia.com/gpu")
    assert is_admission_rejection("Failed", "NodeAffinity")
    assert not is_admission_rejection("Failed", "Evicted")
    assert not is_admission_rejection("Pending", "UnexpectedAdmissionError")
    assert not is_admission_rejection("Failed", None)
