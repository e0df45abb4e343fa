"""The CRD validator used on the Kueue patches accepts real objects and rejects bad ones."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from metrics.recommendations import apply_merge_patch, parse_quantity
from tests.recommendations._crd import CRD_DIR, validate_object, validate_patch

ITEMS = json.loads(Path(CRD_DIR / "objects" / "clusterqueues.json").read_text())["items"]


@pytest.mark.parametrize("obj", ITEMS, ids=lambda o: o["metadata"]["name"])
def test_fixture_clusterqueues_are_valid(obj: dict[str, object]) -> None:
    """The hand-written ClusterQueues (v1beta1 and v1beta2) pass schema and CEL rules."""
    assert validate_object(obj) == []


def test_validator_rejects_bad_patches() -> None:
    """A quota that is not a quantity, an unknown enum value, a borrowing limit without a
    cohort and a lending limit above the quota are all caught."""
    research = ITEMS[0]
    bad_type = {"apiVersion": research["apiVersion"], "kind": "ClusterQueue",
                "metadata": {"name": "cq-research"},
                "spec": {"queueingStrategy": "Random"}}  # fmt: skip
    assert validate_patch(research, bad_type)
    no_cohort = {**bad_type, "spec": {"cohort": None}}
    assert any("cohort is empty" in e for e in validate_patch(research, no_cohort))
    groups = copy.deepcopy(research["spec"]["resourceGroups"])
    groups[1]["flavors"][0]["resources"][0]["lendingLimit"] = 100
    too_much = {**bad_type, "spec": {"resourceGroups": groups}}
    assert any("lendingLimit" in e for e in validate_patch(research, too_much))
    groups[1]["flavors"][0]["resources"][0]["nominalQuota"] = "forty"
    assert validate_patch(research, {**bad_type, "spec": {"resourceGroups": groups}})


def test_merge_patch_follows_rfc_7386() -> None:
    """Maps merge, null deletes, lists are replaced whole."""
    target = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    patch = {"a": {"c": [3], "e": 2}, "d": None}
    assert apply_merge_patch(target, patch) == {"a": {"b": 1, "c": [3], "e": 2}}


def test_quantities() -> None:
    """Kubernetes quantities as numbers."""
    assert parse_quantity(64) == 64.0
    assert parse_quantity("500m") == 0.5
    assert parse_quantity("8Ti") == 8 * 2**40
    assert parse_quantity(None) is None
    with pytest.raises(ValueError):
        parse_quantity("lots")
