"""Kueue Workload topology: what each pod set asked for (``spec.podSets[].topologyRequest``) and
where topology-aware scheduling placed it
(``status.admission.podSetAssignments[].topologyAssignment``), one row per pod set and assigned
domain.

Both API versions of the assignment (``apis/kueue/v1beta1`` and ``v1beta2``
``workload_types.go``; the Workload CRD's own examples):

* **v1beta1**: ``levels`` (node label keys, highest first) and ``domains[]`` with ``values``
  (one per level) and ``count`` (pods in that domain);
* **v1beta2**: ``levels`` and ``slices[]``, each with ``domainCount``, ``valuesPerLevel[]`` (per
  level either ``universal``: one value for every domain of the slice, or ``individual``:
  ``roots`` with an optional common ``prefix``/``suffix``) and ``podCounts`` (``universal`` or
  ``individual``). The slices are expanded into the v1beta1 form (domain *i* of a slice has
  value ``prefix + roots[i] + suffix`` at each level and ``podCounts.individual[i]`` pods); a
  slice whose lists do not have ``domainCount`` entries is rejected.

When the Topology's lowest level is ``kubernetes.io/hostname``, Kueue keeps only that level:
each domain is a node, so the assignment is the Workload's node list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import polars as pl

from pipelines.kubernetes._json_items import BadItem, get_path, int_or_none, text_or_none

__all__ = [
    "HOSTNAME_LABEL",
    "WORKLOAD_TOPOLOGY_SCHEMA",
    "Domain",
    "assignment_domains",
    "workload_topology_rows",
]

#: The node label whose domains are single nodes.
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"

#: One row per Workload pod set and assigned domain (or one per pod set with a topology request
#: and no assignment yet: ``domain_index``, ``levels``, ``values``, ``pods`` NULL).
WORKLOAD_TOPOLOGY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "uid": pl.String(),
    "namespace": pl.String(),
    "name": pl.String(),
    "api_version": pl.String(),
    "pod_set": pl.String(),
    "pod_set_count": pl.Int64(),
    "required": pl.String(),
    "preferred": pl.String(),
    "unconstrained": pl.Boolean(),
    "slice_required": pl.String(),
    "slice_size": pl.Int64(),
    "domain_index": pl.Int64(),
    "levels": pl.List(pl.String()),
    "values": pl.List(pl.String()),
    "pods": pl.Int64(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}


#: One domain: its values (one per level, highest first) and its pod count.
Domain = tuple[list[str], int]


def _list(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadItem(field, f"expected a list, got {type(value).__name__}")
    return value


def _v1beta1_domains(ta: Mapping[str, Any], where: str, n_levels: int) -> list[Domain]:
    out = []
    for i, d in enumerate(_list(ta.get("domains"), f"{where}.domains")):
        values = [str(v) for v in _list(get_path(d, "values"), f"{where}.domains[{i}].values")]
        count = int_or_none(get_path(d, "count"), f"{where}.domains[{i}].count")
        if len(values) != n_levels or count is None:
            raise BadItem(f"{where}.domains[{i}]",
                          f"needs {n_levels} values and a count")  # fmt: skip
        out.append((values, count))
    return out


def _slice_values(level: object, n: int, where: str) -> list[str]:
    if not isinstance(level, dict):
        raise BadItem(where, "not an object")
    if "universal" in level:
        return [str(level["universal"])] * n
    ind = level.get("individual")
    if not isinstance(ind, dict):
        raise BadItem(where, "neither universal nor individual")
    roots = _list(ind.get("roots"), f"{where}.individual.roots")
    if len(roots) != n:
        raise BadItem(f"{where}.individual.roots", f"{len(roots)} roots for domainCount {n}")
    prefix, suffix = str(ind.get("prefix") or ""), str(ind.get("suffix") or "")
    return [f"{prefix}{r}{suffix}" for r in roots]


def _v1beta2_domains(ta: Mapping[str, Any], where: str, n_levels: int) -> list[Domain]:
    out: list[Domain] = []
    for s, sl in enumerate(_list(ta.get("slices"), f"{where}.slices")):
        w = f"{where}.slices[{s}]"
        n = int_or_none(get_path(sl, "domainCount"), f"{w}.domainCount")
        if n is None or n < 1:
            raise BadItem(f"{w}.domainCount", "missing or not positive")
        per_level = _list(get_path(sl, "valuesPerLevel"), f"{w}.valuesPerLevel")
        if len(per_level) != n_levels:
            raise BadItem(f"{w}.valuesPerLevel", f"{len(per_level)} entries for {n_levels} levels")
        columns = [
            _slice_values(lv, n, f"{w}.valuesPerLevel[{i}]") for i, lv in enumerate(per_level)
        ]
        pc = get_path(sl, "podCounts")
        if isinstance(pc, dict) and "universal" in pc:
            counts = [int_or_none(pc["universal"], f"{w}.podCounts.universal") or 0] * n
        elif isinstance(pc, dict) and isinstance(pc.get("individual"), list):
            counts = [int_or_none(c, f"{w}.podCounts.individual") or 0 for c in pc["individual"]]
            if len(counts) != n:
                raise BadItem(
                    f"{w}.podCounts.individual", f"{len(counts)} counts for domainCount {n}"
                )
        else:
            raise BadItem(f"{w}.podCounts", "neither universal nor individual")
        out += [([col[i] for col in columns], counts[i]) for i in range(n)]
    return out


def assignment_domains(ta: Mapping[str, Any], where: str) -> tuple[list[str], list[Domain]]:
    """``(levels, [(values, pods), …])`` of one ``topologyAssignment`` in either API version.

    Raises:
        BadItem: no levels, or domains/slices that do not match them.
    """
    levels = [str(v) for v in _list(ta.get("levels"), f"{where}.levels")]
    if not levels:
        raise BadItem(f"{where}.levels", "a topologyAssignment without levels")
    if "slices" in ta:
        return levels, _v1beta2_domains(ta, where, len(levels))
    return levels, _v1beta1_domains(ta, where, len(levels))


def workload_topology_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The topology rows of one Workload (see :data:`WORKLOAD_TOPOLOGY_SCHEMA`).

    A Workload without uid, name or namespace gives no rows here (its Workload row is rejected
    for it); pod sets with neither a topology request nor an assignment give none.

    Raises:
        BadItem: a malformed request or assignment (field path and reason).
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not all(meta.get(k) for k in ("uid", "name", "namespace")):
        return []
    raw_spec = obj.get("spec")
    spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    listed = _list(get_path(obj, "status", "admission", "podSetAssignments"),
                   "status.admission.podSetAssignments")  # fmt: skip
    assignments = {str(a.get("name") or "main"): a for a in listed if isinstance(a, dict)}
    base = {
        "uid": str(meta["uid"]),
        "namespace": str(meta["namespace"]),
        "name": str(meta["name"]),
        "api_version": text_or_none(obj.get("apiVersion")),
    }
    rows: list[dict[str, Any]] = []
    for i, ps in enumerate(_list(spec.get("podSets"), "spec.podSets")):
        if not isinstance(ps, dict):
            raise BadItem(f"spec.podSets[{i}]", "not an object")
        name = str(ps.get("name") or "main")
        req = ps.get("topologyRequest")
        req = req if isinstance(req, dict) else {}
        unconstrained = req.get("unconstrained")
        row = {
            **base,
            "pod_set": name,
            "pod_set_count": int_or_none(ps.get("count"), f"spec.podSets[{i}].count"),
            "required": text_or_none(req.get("required")),
            "preferred": text_or_none(req.get("preferred")),
            "unconstrained": None if unconstrained is None else bool(unconstrained),
            "slice_required": text_or_none(req.get("podSetSliceRequiredTopology")),
            "slice_size": int_or_none(req.get("podSetSliceSize"),
                                      f"spec.podSets[{i}].topologyRequest.podSetSliceSize"),
        }  # fmt: skip
        ta = get_path(assignments.get(name, {}), "topologyAssignment")
        if not isinstance(ta, dict):
            if req:
                rows.append({**row, "domain_index": None, "levels": None, "values": None,
                             "pods": None})  # fmt: skip
            continue
        where = f"status.admission.podSetAssignments[{name}].topologyAssignment"
        levels, domains = assignment_domains(ta, where)
        for d, (values, pods) in enumerate(domains):
            rows.append({**row, "domain_index": d, "levels": levels, "values": values,
                         "pods": pods})  # fmt: skip
    return rows
