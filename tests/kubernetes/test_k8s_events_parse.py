"""Kubernetes Events parser: the real kspan export, events.k8s.io/v1, JSON lines, rejects."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError
from pipelines.kubernetes._events_parse import K8S_EVENT_SCHEMA, parse_k8s_events

KSPAN = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "k8s-events"
    / ("kspan_deploymentUpdateEvents.json")
)


def _core_event(uid: str, count: int, last: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"train-0.{uid}", "namespace": "team-a", "uid": uid},
        "involvedObject": {"kind": "Pod", "name": "train-0", "namespace": "team-a", "uid": "p-1"},
        "reason": "BackOff",
        "type": "Warning",
        "message": "Back-off restarting failed container",
        "count": count,
        "firstTimestamp": "2026-11-02T10:00:00Z",
        "lastTimestamp": last,
        "source": {"component": "kubelet", "host": "gpu-node-07"},
        "reportingComponent": "",
        **extra,
    }


def test_real_export_has_nine_events() -> None:
    """The kspan EventList gives 9 rows in file order with the schema and nothing rejected."""
    res = parse_k8s_events(KSPAN, cluster="kind")
    assert res.rows.schema == pl.Schema(K8S_EVENT_SCHEMA)
    assert res.rows.height == 9
    assert res.rejected.height == 0
    assert res.rows["line_no"].to_list() == list(range(1, 10))
    assert res.rows["reason"].to_list() == [
        "ScalingReplicaSet",
        "SuccessfulCreate",
        "Scheduled",
        "Pulled",
        "Created",
        "Started",
        "ScalingReplicaSet",
        "Killing",
        "SuccessfulDelete",
    ]
    assert res.rows["cluster"].unique().to_list() == ["kind"]
    assert res.info["framing"] == "list"


def test_real_scaling_event_counts_two_over_three_days() -> None:
    """ScalingReplicaSet: count 2, first 2020-11-24T18:37:54Z, last 2020-11-27T12:04:05Z."""
    row = parse_k8s_events(KSPAN).rows.row(0, named=True)
    assert row["uid"] == "44f4b5cd-9bce-49da-8d14-4a8334e5eca2"
    assert row["count"] == 2
    assert row["first_seen"] == datetime(2020, 11, 24, 18, 37, 54, tzinfo=UTC)
    assert row["last_seen"] == datetime(2020, 11, 27, 12, 4, 5, tzinfo=UTC)
    assert row["last_seen"] - row["first_seen"] == timedelta(
        days=2, hours=17, minutes=26, seconds=11
    )
    assert (row["last_seen"].date() - row["first_seen"].date()).days == 3
    assert (row["involved_kind"], row["involved_name"]) == ("Deployment", "hello-world")
    assert row["involved_uid"] == "4ecf82fc-0f0a-44e0-9469-cebbb07f7a31"
    assert row["source_component"] == "deployment-controller"
    assert row["reporting_controller"] is None
    assert row["message"] == "Scaled up replica set hello-world-6b9d85fbd6 to 1"


def test_real_pod_event_fields() -> None:
    """The Scheduled event names the pod it is about and the scheduler as its source."""
    row = parse_k8s_events(KSPAN).rows.row(2, named=True)
    assert (row["reason"], row["type"], row["namespace"]) == ("Scheduled", "Normal", "default")
    assert (row["involved_kind"], row["involved_name"]) == ("Pod", "hello-world-6b9d85fbd6-klpv2")
    assert row["involved_namespace"] == "default"
    assert row["source_component"] == "default-scheduler"
    assert row["count"] == 1


def test_events_k8s_io_v1_shape(tmp_path: Path) -> None:
    """events.k8s.io/v1: regarding, note, eventTime, series.count and series.lastObservedTime."""
    item = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": "wl.1",
            "namespace": "team-a",
            "uid": "e-1",
            "creationTimestamp": "2026-11-02T09:59:59Z",
        },
        "eventTime": "2026-11-02T10:00:00.250000Z",
        "series": {"count": 5, "lastObservedTime": "2026-11-02T10:20:00.500000Z"},
        "regarding": {
            "kind": "Workload",
            "name": "job-train-a1b2",
            "namespace": "team-a",
            "uid": "w-1",
            "apiVersion": "kueue.x-k8s.io/v1beta1",
        },
        "reason": "Pending",
        "type": "Normal",
        "note": "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu",
        "action": "Admission",
        "reportingController": "kueue-admission",
        "reportingInstance": "kueue-admission-kueue-controller-manager-7f9",
        "deprecatedCount": 1,
    }
    p = tmp_path / "ev.json"
    p.write_text(
        json.dumps({"kind": "EventList", "apiVersion": "events.k8s.io/v1", "items": [item]})
    )
    row = parse_k8s_events(p).rows.row(0, named=True)
    assert (row["involved_kind"], row["involved_name"], row["involved_uid"]) == (
        "Workload",
        "job-train-a1b2",
        "w-1",
    )
    assert row["message"].startswith("couldn't assign flavors")
    assert row["count"] == 5
    assert row["first_seen"] == datetime(2026, 11, 2, 10, 0, 0, 250000, tzinfo=UTC)
    assert row["last_seen"] == datetime(2026, 11, 2, 10, 20, 0, 500000, tzinfo=UTC)
    assert row["reporting_controller"] == "kueue-admission"
    assert row["source_component"] is None


def test_json_lines_keep_the_latest_version_of_a_uid(tmp_path: Path) -> None:
    """JSON lines with watch wrappers: a uid seen again at a higher count replaces the row."""
    lines = [
        {"type": "ADDED", "object": _core_event("u-1", 1, "2026-11-02T10:00:00Z")},
        _core_event("u-2", 1, "2026-11-02T10:01:00Z", reason="Pulling"),
        {"type": "MODIFIED", "object": _core_event("u-1", 4, "2026-11-02T10:06:00Z")},
    ]
    p = tmp_path / "events.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = parse_k8s_events(p)
    assert res.info["framing"] == "jsonl"
    assert res.info["duplicates"] == 1
    got = res.rows.select("uid", "count", "last_seen", "line_no").rows()
    assert got == [
        ("u-2", 1, datetime(2026, 11, 2, 10, 1, tzinfo=UTC), 2),
        ("u-1", 4, datetime(2026, 11, 2, 10, 6, tzinfo=UTC), 3),
    ]
    first = res.rows.filter(pl.col("uid") == "u-1")["first_seen"].item()
    assert first == datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def test_pretty_printed_watch_stream(tmp_path: Path) -> None:
    """Concatenated pretty-printed objects (kubectl get -w -o json) are read with start lines."""
    p = tmp_path / "watch.json"
    p.write_text(
        json.dumps(_core_event("u-1", 1, "2026-11-02T10:00:00Z"), indent=2)
        + "\n"
        + json.dumps(_core_event("u-2", 2, "2026-11-02T10:05:00Z"), indent=2)
        + "\n"
    )
    res = parse_k8s_events(p)
    first_len = len(json.dumps(_core_event("u-1", 1, "2026-11-02T10:00:00Z"), indent=2).split("\n"))
    assert res.rows.select("uid", "line_no").rows() == [("u-1", 1), ("u-2", first_len + 1)]


def test_bad_items_are_rejected_and_the_rest_kept(tmp_path: Path) -> None:
    """Items without uid, without any time, with a bad time or not JSON go to rejected."""
    no_uid = _core_event("x", 1, "2026-11-02T10:00:00Z")
    del no_uid["metadata"]["uid"]
    no_time = _core_event("u-3", 1, "")
    no_time["firstTimestamp"] = None
    bad_time = _core_event("u-4", 1, "yesterday")
    lines = [
        json.dumps(_core_event("u-1", 1, "2026-11-02T10:00:00Z")),
        json.dumps(no_uid),
        json.dumps(no_time),
        json.dumps(bad_time),
        '{"kind": "Event", "metadata": {',
    ]
    p = tmp_path / "events.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = parse_k8s_events(p)
    assert res.rows["uid"].to_list() == ["u-1"]
    assert res.rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert res.rejected.select("line_no", "field").rows() == [
        (2, "metadata.uid"),
        (3, "lastTimestamp"),
        (4, "lastTimestamp"),
        (5, "item"),
    ]
    assert json.loads(res.rejected["raw"][0]) == no_uid
    assert res.rejected["reason"][2] == "not an RFC 3339 time: 'yesterday'"


def test_bad_item_in_a_list_is_rejected_by_index(tmp_path: Path) -> None:
    """In an EventList the rejected item's line_no is its 1-based index and raw its JSON."""
    bad = _core_event("u-2", 1, "2026-11-02T10:00:00Z")
    bad["count"] = "many"
    doc = {"kind": "List", "items": [_core_event("u-1", 1, "2026-11-02T10:00:00Z"), bad]}
    p = tmp_path / "events.json"
    p.write_text(json.dumps(doc, indent=2))
    res = parse_k8s_events(p)
    assert res.rows["uid"].to_list() == ["u-1"]
    rej = res.rejected.row(0, named=True)
    assert (rej["line_no"], rej["line_end"], rej["field"]) == (2, 2, "count")
    assert json.loads(rej["raw"]) == bad


def test_not_json_raises(tmp_path: Path) -> None:
    """A YAML export is not JSON: InputFormatError naming the file, and saying it reads as
    YAML and how to export JSON; other text is "not JSON" alone."""
    p = tmp_path / "events.yaml"
    p.write_text("apiVersion: v1\nkind: EventList\nitems: []\n")
    with pytest.raises(InputFormatError, match=r"events\.yaml") as err:
        parse_k8s_events(p)
    assert "reads as YAML" in str(err.value) and "-o json" in str(err.value)
    other = tmp_path / "events.txt"
    other.write_text("LAST SEEN   TYPE     REASON\n5m          Normal   Scheduled\n")
    with pytest.raises(InputFormatError, match="not JSON") as err:
        parse_k8s_events(other)
    assert "YAML" not in str(err.value)


def test_other_list_kind_raises(tmp_path: Path) -> None:
    """A PodList is not an event list; a List of pods has no Event in it: both raise."""
    p = tmp_path / "pods.json"
    p.write_text(json.dumps({"kind": "PodList", "items": []}))
    with pytest.raises(InputFormatError, match="PodList"):
        parse_k8s_events(p)
    pod = {"kind": "Pod", "metadata": {"uid": "p-1", "name": "x"}}
    p.write_text(json.dumps({"kind": "List", "items": [pod]}))
    with pytest.raises(InputFormatError, match="no item is a Kubernetes Event"):
        parse_k8s_events(p)


def test_event_without_involved_object_or_with_negative_count_is_rejected(
    tmp_path: Path,
) -> None:
    """An Event that names no involvedObject, or counts -5 occurrences, is rejected by field."""
    no_inv = _core_event("u-2", 1, "2026-11-02T10:00:00Z")
    del no_inv["involvedObject"]
    neg = _core_event("u-3", -5, "2026-11-02T10:00:00Z")
    doc = {
        "kind": "EventList",
        "items": [_core_event("u-1", 2, "2026-11-02T10:00:00Z"), no_inv, neg],
    }
    p = tmp_path / "events.json"
    p.write_text(json.dumps(doc))
    res = parse_k8s_events(p)
    assert res.rows["uid"].to_list() == ["u-1"]
    assert res.rows["count"].to_list() == [2]
    assert res.rejected.select("line_no", "field").rows() == [(2, "involvedObject"), (3, "count")]
    assert res.rejected["reason"][1] == "count -5 is negative"


def test_empty_file_raises(tmp_path: Path) -> None:
    """A 0-byte file is not JSON: a file-level InputFormatError, not a silent 0-row load."""
    p = tmp_path / "events.json"
    p.write_bytes(b"")
    with pytest.raises(InputFormatError, match="empty file"):
        parse_k8s_events(p)
