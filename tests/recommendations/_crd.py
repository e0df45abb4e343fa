"""Validate Kueue objects and merge patches against the CRDs' ``openAPIV3Schema``.

``jsonschema`` checks the structural schema (types, enums, patterns, ``anyOf`` int-or-string
quantities, ``required``); the ``x-kubernetes-validations`` CEL rules that matter for quota
patches, and Kueue's webhook rule ``lendingLimit ≤ nominalQuota``, are checked by hand.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from metrics.recommendations import apply_merge_patch, parse_quantity

CRD_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "kueue-crds"
_FILES = {
    "ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
    "LocalQueue": "kueue.x-k8s.io_localqueues.yaml",
    "Workload": "kueue.x-k8s.io_workloads.yaml",
}


@cache
def schema(kind: str, version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``kind`` at ``version`` (``v1beta1`` | ``v1beta2``)."""
    crd = yaml.safe_load((CRD_DIR / _FILES[kind]).read_text(encoding="utf-8"))
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return dict(v["schema"]["openAPIV3Schema"])
    raise KeyError(f"{kind} has no version {version}")


def _without_required(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_required(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_without_required(v) for v in node]
    return node


def _cel_errors(obj: Mapping[str, Any]) -> list[str]:
    """The CEL rules of the ClusterQueue CRD that quota patches can break, and Kueue's webhook
    check that a lending limit stays within the nominal quota."""
    errors = []
    spec = obj.get("spec") or {}
    has_cohort = bool(spec.get("cohort") or spec.get("cohortName"))
    for g, group in enumerate(spec.get("resourceGroups") or []):
        covered = group.get("coveredResources") or []
        for flavor in group.get("flavors") or []:
            resources = flavor.get("resources") or []
            if len(resources) != len(covered):
                errors.append(f"resourceGroups[{g}]: flavors must have the same number of "
                              "resources as the coveredResources")  # fmt: skip
            for res in resources:
                if not has_cohort and "borrowingLimit" in res:
                    errors.append("borrowingLimit must be nil when cohort is empty")
                try:
                    nominal = parse_quantity(res.get("nominalQuota"))
                    lending = parse_quantity(res.get("lendingLimit"))
                except ValueError as exc:  # the schema's pattern reports it too
                    errors.append(str(exc))
                    continue
                if nominal is not None and lending is not None and lending > nominal:
                    errors.append(f"{flavor.get('name')}/{res.get('name')}: lendingLimit > "
                                  "nominalQuota")  # fmt: skip
    return errors


def validate_object(obj: Mapping[str, Any]) -> list[str]:
    """Every schema and rule violation of a complete object (empty: valid)."""
    kind = str(obj["kind"])
    version = str(obj["apiVersion"]).rsplit("/", 1)[-1]
    validator = jsonschema.Draft7Validator(schema(kind, version))
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(obj)]
    if kind == "ClusterQueue":
        errors += _cel_errors(obj)
    return errors


def validate_patch(original: Mapping[str, Any], patch: Mapping[str, Any]) -> list[str]:
    """Violations of a merge patch: of the patch alone (types, without ``required``) and of
    the object it produces when applied to ``original``."""
    version = str(patch["apiVersion"]).rsplit("/", 1)[-1]
    loose = jsonschema.Draft7Validator(_without_required(schema(str(patch["kind"]), version)))
    errors = [f"patch {'/'.join(map(str, e.path))}: {e.message}" for e in loose.iter_errors(patch)]
    patched = apply_merge_patch(copy.deepcopy(dict(original)), patch)
    return errors + validate_object(patched)
