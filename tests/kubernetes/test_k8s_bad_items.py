"""Kubernetes inputs that must be rejected item by item, or refused as a file: implausible times,
integers past 64 bits, truncated JSON documents and streams. Built on the real kspan events and
the pods sample (``tests/fixtures/*/SOURCE.md``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pipelines._json import LONE_SURROGATE
from pipelines._parse_result import InputFormatError
from pipelines.kubernetes._events_parse import parse_k8s_events
from pipelines.kubernetes._pods_parse import parse_k8s_pods

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EVENTS = FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json"
PODS = FIXTURES / "k8s-pods" / "pods_sample.json"


def _doc(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return out


def _write(tmp_path: Path, name: str, doc: object, *, indent: int | None = None) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    return path


def test_pod_created_in_year_9999_is_rejected_alone(tmp_path: Path) -> None:
    """A year-9999 creationTimestamp would stretch the data cut-off (and every hourly table) to
    9999: that pod is rejected, naming the field. The sample's 9 items are 8 good pods and one
    without a uid (rejected as before), so 7 pods load and 2 are rejected."""
    doc = _doc(PODS)
    doc["items"][0]["metadata"]["creationTimestamp"] = "9999-01-01T00:00:00Z"
    result = parse_k8s_pods(_write(tmp_path, "pods.json", doc), cluster="k1")
    assert result.rows.height == 7
    reject, no_uid = result.rejected.sort("line_no").to_dicts()
    assert (no_uid["line_no"], no_uid["field"]) == (9, "metadata.uid")
    assert reject["line_no"] == 1
    assert reject["field"] == "metadata.creationTimestamp"
    assert "implausible time 9999-01-01T00:00:00Z" in reject["reason"]


def test_event_before_1990_is_rejected_alone(tmp_path: Path) -> None:
    """An event whose lastTimestamp is the zeroed clock (1970) is rejected; the other 8 load."""
    doc = _doc(EVENTS)
    doc["items"][3]["lastTimestamp"] = "1970-01-01T00:00:00Z"
    result = parse_k8s_events(_write(tmp_path, "events.json", doc), cluster="k1")
    assert result.rows.height == 8
    (reject,) = result.rejected.to_dicts()
    assert (reject["line_no"], reject["field"]) == (4, "lastTimestamp")
    assert "implausible time" in reject["reason"]


@pytest.mark.parametrize("count", [2**63, 10**30])
def test_event_count_past_64_bits_is_rejected_alone(tmp_path: Path, count: int) -> None:
    """``count`` 2^63 or 10^30 cannot be stored: that event is rejected (a clear reason, not
    a crash of the whole batch), 2^63 − 1 still loads."""
    doc = _doc(EVENTS)
    doc["items"][2]["count"] = count
    doc["items"][5]["count"] = 2**63 - 1
    result = parse_k8s_events(_write(tmp_path, "events.json", doc), cluster="k1")
    assert result.rows.height == 8
    (reject,) = result.rejected.to_dicts()
    assert (reject["line_no"], reject["field"]) == (3, "count")
    assert reject["reason"] == f"integer out of the 64-bit range: {count}"
    assert 2**63 - 1 in result.rows["count"].to_list()


def test_truncated_list_document_is_a_file_error(tmp_path: Path) -> None:
    """``kubectl get pods -o json`` cut off mid-way is one broken document: refused naming the
    file, instead of loading fragments decoded line by line."""
    text = json.dumps(_doc(PODS), indent=4)
    path = tmp_path / "pods.json"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"pods\.json.*invalid JSON document.*truncated"):
        parse_k8s_pods(path, cluster="k1")


def test_truncated_bare_array_is_a_file_error(tmp_path: Path) -> None:
    """A bare JSON array broken off, even on one line, is refused as a whole."""
    text = json.dumps(_doc(EVENTS)["items"])
    path = tmp_path / "events.json"
    path.write_text(text[:-40], encoding="utf-8")
    with pytest.raises(InputFormatError, match="invalid JSON document"):
        parse_k8s_events(path, cluster="k1")


def test_jsonl_with_a_broken_line_keeps_the_others(tmp_path: Path) -> None:
    """JSON lines: a broken line is one rejected item; the lines after it still load."""
    items = _doc(EVENTS)["items"]
    lines = [json.dumps(item) for item in items]
    lines[4] = lines[4][:30]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = parse_k8s_events(path, cluster="k1")
    assert result.rows.height == 8
    (reject,) = result.rejected.to_dicts()
    assert reject["line_no"] == 5 and reject["raw"] == lines[4]


def test_pretty_printed_stream_cut_in_its_last_object(tmp_path: Path) -> None:
    """A ``kubectl get -w -o json`` stream (pretty-printed objects one after another) whose last
    object is cut off: the complete objects load and the broken tail is one rejected item."""
    items = _doc(EVENTS)["items"]
    last = copy.deepcopy(items[-1])
    blocks = [json.dumps(item, indent=2) for item in items[:-1]]
    tail = json.dumps(last, indent=2)
    path = tmp_path / "watch.json"
    path.write_text("\n".join([*blocks, tail[: len(tail) // 2]]), encoding="utf-8")
    result = parse_k8s_events(path, cluster="k1")
    assert result.rows.height == 8
    (reject,) = result.rejected.to_dicts()
    assert reject["raw"] == tail[: len(tail) // 2].rstrip()
    assert reject["reason"].startswith("not JSON")


@pytest.mark.parametrize("framing", ["list", "jsonl"])
def test_surrogate_and_deep_items_are_rejected_alone(tmp_path: Path, framing: str) -> None:
    """In the real pods sample, a pod whose name holds a lone surrogate (``\\ud800``: valid
    JSON, not text) and a pod nested 5,000 levels deep (past Python's recursion limit) are
    rejected with their reasons; the other 6 good pods load (the sample's no-uid pod is
    rejected as before), as a list document and as JSON lines."""
    doc = _doc(PODS)
    doc["items"][0]["metadata"]["name"] = "MARK-SURROGATE"
    doc["items"][1]["metadata"]["annotations"] = "MARK-DEEP"
    deep = "[" * 5000 + "]" * 5000
    if framing == "list":
        text = json.dumps(doc)
    else:
        text = "\n".join(json.dumps(item) for item in doc["items"]) + "\n"
    text = text.replace('"MARK-SURROGATE"', '"pod-\\ud800"').replace('"MARK-DEEP"', deep)
    path = tmp_path / "pods.json"
    path.write_text(text, encoding="utf-8")
    result = parse_k8s_pods(path, cluster="k1")
    assert result.rows.height == 6
    got = result.rejected.sort("line_no").select("line_no", "reason").rows()
    assert [line for line, _ in got] == [1, 2, 9]
    assert got[0][1] == LONE_SURROGATE
    assert got[1][1] == "nested deeper than 64 levels"
    assert "\\ud800" in result.rejected.sort("line_no")["raw"][0]
