"""Kueue ``Topology`` objects (topology-aware scheduling) in ``k8s-objects`` dumps: one row per
level, hand-made after Kueue's documented example (levels block, rack, hostname)."""

from __future__ import annotations

import json
from pathlib import Path

from pipelines.kubernetes._objects import parse_k8s_objects


def _topology(name: str, uid: str, levels: list[dict[str, str]]) -> dict[str, object]:
    return {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology",
            "metadata": {"name": name, "uid": uid}, "spec": {"levels": levels}}  # fmt: skip


def test_each_level_of_a_topology_is_a_row_and_a_level_without_label_is_rejected(
    tmp_path: Path,
) -> None:
    """``default`` has three levels (index 0 outermost); ``broken``'s level has no nodeLabel:
    it is rejected (item 2, field ``spec.levels[0].nodeLabel``)."""
    labels = ["cloud.provider.com/topology-block", "cloud.provider.com/topology-rack",
              "kubernetes.io/hostname"]  # fmt: skip
    items = [
        _topology("default", "t-1", [{"nodeLabel": lab} for lab in labels]),
        _topology("broken", "t-2", [{"label": "x"}]),
    ]
    path = tmp_path / "topologies_2026-11-02.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "utf-8")
    found = parse_k8s_objects(path, cluster="k")
    res = found["kueue-topologies"]
    assert res.rows.select("name", "level_index", "node_label").rows() == [
        ("default", 0, labels[0]), ("default", 1, labels[1]), ("default", 2, labels[2]),
    ]  # fmt: skip
    assert res.rejected.select("line_no", "field").rows() == [(2, "spec.levels[0].nodeLabel")]
