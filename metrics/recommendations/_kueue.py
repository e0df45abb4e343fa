"""Kueue ClusterQueue helpers: GPU quotas out of the objects, and merge patches back into them.

A JSON merge patch (RFC 7386) replaces lists whole, and ``spec.resourceGroups`` is a list, so a
patch that changes one ``nominalQuota`` must carry the ClusterQueue's complete
``resourceGroups`` (every flavor and resource, CPU and memory included) with that one value
changed. The helpers here therefore work on the objects as read from ``kubectl get
clusterqueues -o json``, not on a GPU-only projection.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl
import yaml

__all__ = [
    "GPU_RESOURCES",
    "QUOTA_SCHEMA",
    "apply_merge_patch",
    "cohort_of",
    "cohort_patch",
    "format_quantity",
    "gpu_quotas",
    "merge_patch_document",
    "merge_patches",
    "parse_quantity",
    "resource_groups_patch",
]

#: Resource names counted as GPUs (whole devices).
GPU_RESOURCES: tuple[str, ...] = ("nvidia.com/gpu",)

_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")

QUOTA_SCHEMA: dict[str, pl.DataType] = {
    "cluster_queue": pl.String(),
    "api_version": pl.String(),
    "cohort": pl.String(),
    "flavor": pl.String(),
    "resource": pl.String(),
    "nominal_quota": pl.Float64(),
    "borrowing_limit": pl.Float64(),
    "lending_limit": pl.Float64(),
}


def parse_quantity(value: object) -> float | None:
    """A Kubernetes quantity (``64``, ``"64"``, ``"500m"``, ``"8Ti"``) as a number; None if
    absent.

    Raises:
        ValueError: not a quantity.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY.match(str(value).strip())
    if m is None:
        raise ValueError(f"not a quantity: {value!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2) or ""]


def format_quantity(value: float) -> int | str:
    """A GPU count for a patch: whole numbers as integers (the CRD accepts integer or string),
    fractions as milli-units (``"500m"``)."""
    if abs(value - round(value)) < 1e-9:
        return round(value)
    return f"{math.ceil(value * 1000 - 1e-9)}m"


def cohort_of(obj: Mapping[str, Any]) -> str | None:
    """The cohort of a ClusterQueue: ``spec.cohort`` (v1beta1) or ``spec.cohortName`` (v1beta2)."""
    spec = obj.get("spec") or {}
    value = spec.get("cohort") or spec.get("cohortName")
    return str(value) if value else None


def _resources(obj: Mapping[str, Any]) -> Iterable[tuple[int, int, int, str, Mapping[str, Any]]]:
    spec = obj.get("spec") or {}
    for g, group in enumerate(spec.get("resourceGroups") or []):
        for f, flavor in enumerate(group.get("flavors") or []):
            for r, res in enumerate(flavor.get("resources") or []):
                yield g, f, r, str(flavor.get("name")), res


def gpu_quotas(
    cluster_queues: Sequence[Mapping[str, Any]], gpu_resources: Sequence[str] = GPU_RESOURCES
) -> pl.DataFrame:
    """One row per ClusterQueue × flavor × GPU resource (:data:`QUOTA_SCHEMA`).

    ``borrowing_limit``/``lending_limit`` NULL mean "no limit" (Kueue's default).
    """
    rows = []
    for obj in cluster_queues:
        name = str((obj.get("metadata") or {}).get("name"))
        for _, _, _, flavor, res in _resources(obj):
            if str(res.get("name")) not in gpu_resources:
                continue
            rows.append(
                {
                    "cluster_queue": name,
                    "api_version": str(obj.get("apiVersion", "")),
                    "cohort": cohort_of(obj),
                    "flavor": flavor,
                    "resource": str(res.get("name")),
                    "nominal_quota": parse_quantity(res.get("nominalQuota")) or 0.0,
                    "borrowing_limit": parse_quantity(res.get("borrowingLimit")),
                    "lending_limit": parse_quantity(res.get("lendingLimit")),
                }
            )
    return pl.DataFrame(rows, schema=QUOTA_SCHEMA)


def resource_groups_patch(
    obj: Mapping[str, Any],
    changes: Mapping[tuple[str, str], Mapping[str, float | None]],
) -> dict[str, Any]:
    """A merge patch that sets quota fields of some (flavor, resource) pairs of ``obj``.

    Args:
        obj: the ClusterQueue as read from the API server.
        changes: ``(flavor, resource)`` → ``{field: value}`` with fields ``nominalQuota``,
            ``borrowingLimit``, ``lendingLimit``; a None value removes the field (no limit).
            A ``lendingLimit`` above the new ``nominalQuota`` is lowered to it (Kueue rejects
            it otherwise).

    Returns:
        ``{"apiVersion", "kind", "metadata": {"name"}, "spec": {"resourceGroups": [...]}}``:
        the complete resource groups with the changes applied.
    """
    groups = copy.deepcopy((obj.get("spec") or {}).get("resourceGroups") or [])
    for group in groups:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                key = (str(flavor.get("name")), str(res.get("name")))
                if key not in changes:
                    continue
                for fld, value in changes[key].items():
                    if value is None:
                        res.pop(fld, None)
                    else:
                        res[fld] = format_quantity(value)
                nominal = parse_quantity(res.get("nominalQuota"))
                lending = parse_quantity(res.get("lendingLimit"))
                if nominal is not None and lending is not None and lending > nominal:
                    res["lendingLimit"] = format_quantity(nominal)
    return _envelope(obj, {"resourceGroups": groups})


def cohort_patch(obj: Mapping[str, Any], cohort: str) -> dict[str, Any]:
    """A merge patch that puts ``obj`` in ``cohort`` (``spec.cohort`` in v1beta1,
    ``spec.cohortName`` in v1beta2)."""
    version = str(obj.get("apiVersion", ""))
    key = "cohort" if version.endswith("/v1beta1") else "cohortName"
    return _envelope(obj, {key: cohort})


def _envelope(obj: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
        "kind": obj.get("kind", "ClusterQueue"),
        "metadata": {"name": (obj.get("metadata") or {}).get("name")},
        "spec": spec,
    }


def merge_patches(patches: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several merge patches of one object combined (later keys win, maps merge)."""
    out: dict[str, Any] = {}
    for p in patches:
        out = apply_merge_patch(out, p)
    return out


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge recursively, ``null`` deletes, anything else
    (lists included) replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


def merge_patch_document(patch: Mapping[str, Any], *, comment: str) -> str:
    """A merge patch as one YAML document, preceded by ``# kubectl patch …`` and ``comment``."""
    kind = str(patch.get("kind", "ClusterQueue")).lower()
    name = (patch.get("metadata") or {}).get("name")
    lines = [
        f"# kubectl patch {kind} {name} --type merge --patch-file <this document>",
        *(f"# {line}" for line in comment.splitlines()),
    ]
    body = yaml.safe_dump(dict(patch), sort_keys=False, default_flow_style=False)
    return "\n".join(lines) + "\n" + body
