"""One patch per scheduler object, and one finding per piece of evidence.

Several rules may change the same object: the registry-drift rule sets a ClusterQueue's
``nominalQuota`` while the borrowing rule raises its ``lendingLimit``; both write the whole
``spec.resourceGroups`` list (a merge patch replaces lists whole), so applying the two patches in
turn would let the second reset the first's field. :func:`merge_patches_by_object` therefore
reduces every recommendation's patch to the keys it *changes* and writes one patch per object with
every key set once:

- ``slurm.conf``: per cluster, one line per parameter (``Key=Value``, keys compared without case);
  ``SchedulerParameters`` is merged option by option (``bf_window=…``, ``bf_continue`` …);
- ``sacctmgr``: per entity (``account``/``qos``/``user`` and its ``name=…``), one ``modify … set``
  command with every ``Key=Value`` once;
- ``scontrol``: per reservation name, one command;
- ``kubernetes-merge-patch``: per (kind, name), the changes each patch makes to the object as read
  from the API server (leaves of ``resourceGroups`` by flavor and resource, other ``spec`` keys),
  applied together to the object's resource groups; a ``lendingLimit`` above the merged
  ``nominalQuota`` is lowered to it (Kueue rejects it otherwise).

Conflicts (two findings set one key to different values) are resolved by precedence: the more
severe finding wins, then the larger expected GPU-hour gain, then the smaller id. Every conflict is
recorded (key, value kept and from which finding, values dropped and from which).

:func:`dedupe_findings` folds findings that rest on the same evidence into one: rows whose
evidence carries the same ``basis`` (a fingerprint of the records counted, e.g. the preempted
attempts) become the row of highest precedence, whose evidence names every rule's view and whose
gain is the largest single gain (the same GPU-hours are not counted twice).
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import yaml

from metrics.recommendations._kueue import format_quantity, parse_quantity

__all__ = [
    "MergedPatch",
    "apply_slurm_conf",
    "dedupe_findings",
    "merge_patches_by_object",
    "precedence",
    "split_yaml_documents",
]

_RANK = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True)
class MergedPatch:
    """The one patch of one scheduler object.

    Attributes:
        kind: the patch kind (``slurm.conf``, ``sacctmgr``, ``scontrol``,
            ``kubernetes-merge-patch``).
        cluster: the cluster.
        target: the object: ``slurm.conf``, ``account name=x``, ``reservation x``,
            ``ClusterQueue/cq-prod`` ….
        content: the merged patch (lines, commands, or one YAML document without comments).
        sources: ids of the recommendations merged, in precedence order.
        source_patches: id → that recommendation's own patch content.
        conflicts: ``{"key", "kept", "kept_from", "dropped": [{"value", "from"}]}`` per key
            two findings set differently, plus ``{"key", "adjusted", "reason"}`` entries for
            values lowered to stay valid.
    """

    kind: str
    cluster: str
    target: str
    content: str
    sources: tuple[str, ...]
    source_patches: dict[str, str] = field(default_factory=dict)
    conflicts: tuple[dict[str, Any], ...] = ()


def precedence(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows ordered by precedence: severity (critical first), then expected gain (largest
    first, none last), then id."""

    def key(r: Mapping[str, Any]) -> tuple[int, float, str]:
        gain = r.get("expected_gain_gpu_h_per_week")
        return (-_RANK.get(str(r.get("severity")), 0), -(gain if gain is not None else -1e18),
                str(r.get("id")))  # fmt: skip

    return sorted(rows, key=key)


class _Keys:
    """Key → value with precedence: the first setter wins, later different values are
    recorded as conflicts."""

    def __init__(self) -> None:
        self.values: dict[Any, Any] = {}
        self.names: dict[Any, str] = {}
        self.origin: dict[Any, str] = {}
        self.conflicts: dict[Any, list[dict[str, Any]]] = {}

    def set(self, key: Any, value: Any, source: str, name: str, same: Any = None) -> None:
        if key not in self.values:
            self.values[key], self.origin[key], self.names[key] = value, source, name
            return
        equal = same(self.values[key], value) if same else self.values[key] == value
        if not equal:
            self.conflicts.setdefault(key, []).append({"value": value, "from": source})

    def report(self) -> list[dict[str, Any]]:
        return [
            {"key": self.names[k], "kept": self.values[k], "kept_from": self.origin[k],
             "dropped": d}
            for k, d in self.conflicts.items()
        ]  # fmt: skip


# --- slurm.conf ------------------------------------------------------------------------------


#: slurm.conf lines that describe one object: ``PartitionName=gpu MaxTime=…`` is merged with
#: other lines of the same partition option by option.
_OBJECT_KEYS = ("partitionname", "nodename", "nodeset", "downnodes", "frontendname")


def _conf_entries(content: str) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """``(group, key, display key, value)`` per setting and the comment lines: ``group`` is the
    line's object (``partitionname=gpu``, ``schedulerparameters``, or ``""`` for plain
    parameters)."""
    entries, comments = [], []
    for raw in content.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#") or "=" not in line:
            comments.append(line if line.startswith("#") else f"# {line}")
            continue
        k, v = line.split("=", 1)
        k, v = k.strip(), v.strip()
        if k.lower() in _OBJECT_KEYS:
            name, *opts = v.split()
            group = f"{k}={name}"
            entries.append((group, "", group, ""))
            for o in opts:
                ok, _, ov = o.partition("=")
                entries.append((group, ok.lower(), ok, ov))
        elif k.lower() == "schedulerparameters":
            for o in (o.strip() for o in v.split(",") if o.strip()):
                ok = o.partition("=")[0]
                entries.append(("SchedulerParameters", ok.lower(), ok, o))
        else:
            entries.append(("", k.lower(), k, v))
    return entries, comments


def _merge_slurm_conf(rows: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    keys = _Keys()
    groups: dict[str, str] = {}
    comments: list[str] = []
    for r in rows:
        entries, notes = _conf_entries(str(r["patch_content"]))
        comments += [c for c in notes if c not in comments]
        for group, key, name, value in entries:
            groups.setdefault(group.lower(), group)
            if key:
                label = f"{group}:{name}" if group else name
                keys.set((group.lower(), key), value, str(r["id"]), label)
    lines = list(comments)
    plain = [(k, v) for k, v in keys.values.items() if k[0] == ""]
    lines += [f"{keys.names[k]}={v}" for k, v in plain]
    for g, display in groups.items():
        if not g:
            continue
        vals = [(k, v) for k, v in keys.values.items() if k[0] == g]
        if g == "schedulerparameters":
            lines.append("SchedulerParameters=" + ",".join(str(v) for _, v in vals))
        else:
            opts = " ".join(f"{keys.names[k].split(':', 1)[1]}={v}" for k, v in vals)
            lines.append(f"{display} {opts}".rstrip())
    return "\n".join(lines), keys.report()


def apply_slurm_conf(state: Mapping[str, str], content: str) -> dict[str, str]:
    """``state`` (setting → value; settings are ``key``, ``partitionname=gpu:key`` or
    ``schedulerparameters``, lower-case) after the lines of ``content``, the last line of a
    setting winning as slurmctld reads slurm.conf (a later ``SchedulerParameters`` line
    replaces the whole list)."""
    out = dict(state)
    for raw in content.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = (x.strip() for x in line.split("=", 1))
        if k.lower() in _OBJECT_KEYS:
            name, *opts = v.split()
            for o in opts:
                ok, _, ov = o.partition("=")
                out[f"{k.lower()}={name}:{ok.lower()}"] = ov
        else:
            out[k.lower()] = v
    return out


# --- sacctmgr / scontrol -----------------------------------------------------------------------


def _sacctmgr_parts(line: str) -> tuple[str, list[tuple[str, str]]] | None:
    """``sacctmgr [-i] modify <entity> <where…> set K=V …`` → (target, [(K, V)])."""
    try:
        tok = shlex.split(line)
    except ValueError:
        return None
    if not tok or tok[0] != "sacctmgr" or "modify" not in tok or "set" not in tok:
        return None
    m, s = tok.index("modify"), tok.index("set")
    if s <= m + 1:
        return None
    target = " ".join(tok[m + 1 : s])
    sets = [tuple(t.split("=", 1)) for t in tok[s + 1 :] if "=" in t]
    return target, [(k, v) for k, v in sets]


def _merge_commands(
    kind: str, rows: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[str, list[str], list[dict[str, Any]]]]:
    """target → (content, source ids, conflicts) for sacctmgr or scontrol lines."""
    keys: dict[str, _Keys] = {}
    whole: dict[str, _Keys] = {}
    sources: dict[str, list[str]] = {}
    for r in rows:
        rid = str(r["id"])
        for line in (x.strip() for x in str(r["patch_content"]).splitlines()):
            if not line or line.startswith("#"):
                continue
            parts = _sacctmgr_parts(line) if kind == "sacctmgr" else None
            if parts is not None:
                target, sets = parts
                for k, v in sets:
                    keys.setdefault(target, _Keys()).set(k.lower(), v, rid, k)
            else:
                name = next(
                    (t.split("=", 1)[1] for t in line.split() if t.lower().startswith(
                        "reservationname=")),
                    None,
                )  # fmt: skip
                target = f"reservation {name}" if name else line
                whole.setdefault(target, _Keys()).set("command", line, rid, "command")
            ids = sources.setdefault(target, [])
            if rid not in ids:
                ids.append(rid)
    out = {}
    for target, acc in keys.items():
        assigned = " ".join(f"{acc.names[x]}={v}" for x, v in acc.values.items())
        out[target] = (
            f"sacctmgr -i modify {target} set {assigned}",
            sources[target],
            acc.report(),
        )
    for target, acc in whole.items():
        out[target] = (str(acc.values["command"]), sources[target], acc.report())
    return out


# --- Kubernetes merge patches ------------------------------------------------------------------


def split_yaml_documents(text: str) -> list[dict[str, Any]]:
    """The YAML mappings of a multi-document text (comments and empty documents dropped)."""
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _same_quantity(a: Any, b: Any) -> bool:
    qa, qb = parse_quantity(a), parse_quantity(b)
    if qa is not None and qb is not None:
        return abs(qa - qb) < 1e-9
    return bool(a == b)


_QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def _rg_leaves(groups: Any) -> dict[tuple[str, str, str], Any]:
    """(flavor, resource, field) → value of the quota fields in ``resourceGroups``
    (absent fields: None)."""
    out: dict[tuple[str, str, str], Any] = {}
    for g in groups or []:
        for f in g.get("flavors") or []:
            for res in f.get("resources") or []:
                for fld in _QUOTA_FIELDS:
                    out[(str(f.get("name")), str(res.get("name")), fld)] = res.get(fld)
    return out


def _kueue_changes(
    patch: Mapping[str, Any], obj: Mapping[str, Any] | None
) -> dict[tuple[str, ...], Any]:
    """The keys ``patch`` changes in ``obj`` (every key of it when ``obj`` is unknown)."""
    spec = dict(patch.get("spec") or {})
    ospec = dict((obj or {}).get("spec") or {})
    out: dict[tuple[str, ...], Any] = {}
    if "resourceGroups" in spec:
        new, old = _rg_leaves(spec.pop("resourceGroups")), _rg_leaves(ospec.get("resourceGroups"))
        for key, value in new.items():
            if obj is None or not _same_quantity(value, old.get(key)):
                out[("resourceGroups", *key)] = value
    for key, value in spec.items():
        if obj is None or ospec.get(key) != value:
            out[("spec", key)] = value
    return out


def _kueue_merged(
    docs: Sequence[tuple[str, Mapping[str, Any]]], obj: Mapping[str, Any] | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    keys = _Keys()
    for rid, patch in docs:
        for path, value in _kueue_changes(patch, obj).items():
            keys.set(path, value, rid, ".".join(path), same=_same_quantity)
    first = docs[0][1]
    base_groups = (
        (obj.get("spec") or {}).get("resourceGroups")
        if obj is not None
        else (first.get("spec") or {}).get("resourceGroups")
    )
    spec: dict[str, Any] = {}
    adjusted: list[dict[str, Any]] = []
    rg = {p[1:]: v for p, v in keys.values.items() if p[0] == "resourceGroups"}
    if rg:
        groups = copy.deepcopy(base_groups or [])
        for g in groups:
            for f in g.get("flavors") or []:
                for res in f.get("resources") or []:
                    for fld in _QUOTA_FIELDS:
                        key = (str(f.get("name")), str(res.get("name")), fld)
                        if key not in rg:
                            continue
                        if rg[key] is None:
                            res.pop(fld, None)
                        else:
                            res[fld] = rg[key]
                    nominal = parse_quantity(res.get("nominalQuota"))
                    lending = parse_quantity(res.get("lendingLimit"))
                    if nominal is not None and lending is not None and lending > nominal:
                        res["lendingLimit"] = format_quantity(nominal)
                        adjusted.append(
                            {"key": f"resourceGroups.{f.get('name')}.{res.get('name')}."
                                    "lendingLimit",
                             "adjusted": res["lendingLimit"],
                             "reason": "lendingLimit may not exceed the merged nominalQuota"}
                        )  # fmt: skip
        spec["resourceGroups"] = groups
    for path, value in keys.values.items():
        if path[0] == "spec":
            spec[path[1]] = value
    merged = {
        "apiVersion": first.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
        "kind": first.get("kind", "ClusterQueue"),
        "metadata": {"name": (first.get("metadata") or {}).get("name")},
        "spec": spec,
    }
    return merged, keys.report() + adjusted


# --- entry points ------------------------------------------------------------------------------


def merge_patches_by_object(
    frame: pl.DataFrame,
    cluster_queues: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[MergedPatch]:
    """Every recommendation's patch, merged into one patch per scheduler object.

    Args:
        frame: a recommendations frame (``id, cluster, severity, expected_gain_gpu_h_per_week,
            patch_kind, patch_content``).
        cluster_queues: cluster → Kueue objects as read from the API server; a merge patch of
            an object not given here is reduced to its keys as written (a whole list of
            resource groups then counts as set by the patch of highest precedence).

    Returns:
        One :class:`MergedPatch` per (kind, cluster, target), sorted by kind, cluster, target.
    """
    rows = precedence(frame.filter(pl.col("patch_kind").is_not_null()).to_dicts())
    objects = {
        (c, str((o.get("metadata") or {}).get("name"))): o
        for c, objs in (cluster_queues or {}).items()
        for o in objs
    }
    out: list[MergedPatch] = []
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((str(r["patch_kind"]), str(r["cluster"])), []).append(r)
    for (kind, cluster), mine in sorted(groups.items()):
        own = {str(r["id"]): str(r["patch_content"]) for r in mine}
        if kind == "slurm.conf":
            content, conflicts = _merge_slurm_conf(mine)
            ids = tuple(str(r["id"]) for r in mine)
            out.append(MergedPatch(kind, cluster, "slurm.conf", content, ids,
                                   {i: own[i] for i in ids}, tuple(conflicts)))  # fmt: skip
        elif kind in ("sacctmgr", "scontrol"):
            for target, (content, cids, conflicts) in sorted(_merge_commands(kind, mine).items()):
                out.append(MergedPatch(kind, cluster, target, content, tuple(cids),
                                       {i: own[i] for i in cids}, tuple(conflicts)))  # fmt: skip
        else:
            docs: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
            for r in mine:
                for d in split_yaml_documents(str(r["patch_content"])):
                    name = str((d.get("metadata") or {}).get("name"))
                    docs.setdefault((str(d.get("kind", "ClusterQueue")), name), []).append(
                        (str(r["id"]), d)
                    )
            for (k, name), ds in sorted(docs.items()):
                merged, conflicts = _kueue_merged(ds, objects.get((cluster, name)))
                ids = tuple(dict.fromkeys(i for i, _ in ds))
                body = yaml.safe_dump(merged, sort_keys=False, default_flow_style=False)
                out.append(MergedPatch(kind, cluster, f"{k}/{name}", body, ids,
                                       {i: own[i] for i in ids}, tuple(conflicts)))  # fmt: skip
    return out


def annotate_merges(frame: pl.DataFrame, merged: Sequence[MergedPatch]) -> pl.DataFrame:
    """``frame`` with ``evidence.patch_merge`` on every recommendation whose patch was merged
    with another's: ``[{"target", "merged_with", "conflicts"}]`` (the conflicts on that object)."""
    notes: dict[str, list[dict[str, Any]]] = {}
    for m in merged:
        if len(m.sources) < 2 and not m.conflicts:
            continue
        for rid in m.sources:
            notes.setdefault(rid, []).append(
                {"target": f"{m.kind} {m.cluster} {m.target}",
                 "merged_with": [s for s in m.sources if s != rid],
                 "conflicts": list(m.conflicts)}
            )  # fmt: skip
    if not notes:
        return frame

    def add(rid: str, evidence: str) -> str:
        if rid not in notes:
            return evidence
        doc = json.loads(evidence)
        doc["patch_merge"] = notes[rid]
        return json.dumps(doc, sort_keys=True)

    return frame.with_columns(
        pl.struct("id", "evidence")
        .map_elements(lambda s: add(s["id"], s["evidence"]), return_dtype=pl.String())
        .alias("evidence")
    )


def dedupe_findings(frame: pl.DataFrame) -> pl.DataFrame:
    """Findings resting on the same evidence folded into one.

    Rows whose evidence has the same ``basis`` (and cluster) are one finding: the row of
    highest precedence (:func:`precedence`) stays, with ``evidence.views`` naming every folded
    row (``id, rule, scope, severity, expected_gain_gpu_h_per_week, change_text, patch``), its
    change text followed by the others', and its gain the largest single gain. The folded rows'
    patches are kept in ``evidence.companion_patches`` (``[{"id", "kind", "content"}]``) and
    written with the merged patches. Rows without a ``basis`` are left alone.
    """
    if frame.height == 0:
        return frame
    rows = frame.to_dicts()
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        basis = json.loads(r["evidence"]).get("basis")
        if basis:
            groups.setdefault((str(r["cluster"]), str(basis)), []).append(r)
    drop: set[str] = set()
    replaced: dict[str, dict[str, Any]] = {}
    for grp in groups.values():
        if len(grp) < 2:
            continue
        ordered = [dict(r) for r in precedence(grp)]
        head, rest = ordered[0], ordered[1:]
        ev = json.loads(head["evidence"])
        ev["views"] = [
            {"id": r["id"], "rule": r["rule"], "scope": r["scope"], "severity": r["severity"],
             "expected_gain_gpu_h_per_week": r["expected_gain_gpu_h_per_week"],
             "change_text": r["change_text"],
             "patch": {"kind": r["patch_kind"], "content": r["patch_content"]}
             if r["patch_kind"] else None}
            for r in ordered
        ]  # fmt: skip
        ev["companion_patches"] = [
            {"id": r["id"], "kind": r["patch_kind"], "content": r["patch_content"]}
            for r in rest
            if r["patch_kind"]
        ]
        gains = [r["expected_gain_gpu_h_per_week"] for r in ordered]
        head["expected_gain_gpu_h_per_week"] = max((g for g in gains if g is not None),
                                                   default=None)  # fmt: skip
        waits = [r["expected_wait_reduction_s"] for r in ordered]
        head["expected_wait_reduction_s"] = max((w for w in waits if w is not None),
                                                default=None)  # fmt: skip
        head["change_text"] = " ".join(
            [str(head["change_text"]), "Same evidence, also:"]
            + [str(r["change_text"]) for r in rest]
        )
        head["evidence"] = json.dumps(ev, sort_keys=True)
        replaced[str(head["id"])] = head
        drop.update(str(r["id"]) for r in rest)
    if not drop:
        return frame
    kept = [replaced.get(str(r["id"]), r) for r in rows if str(r["id"]) not in drop]
    return pl.DataFrame(kept, schema=frame.schema)


def companion_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """The patches folded by :func:`dedupe_findings`, as rows (their own id, rule, scope,
    severity, gain and text from ``evidence.views``; the head's cluster and window), so they
    are merged and written too."""
    out = []
    for r in frame.to_dicts():
        ev = json.loads(r["evidence"])
        views = {v["id"]: v for v in ev.get("views") or []}
        for c in ev.get("companion_patches") or []:
            v = views.get(c["id"], {})
            out.append(
                {**r, "id": c["id"], "patch_kind": c["kind"], "patch_content": c["content"],
                 **{k: v[k] for k in ("rule", "scope", "severity", "change_text",
                                      "expected_gain_gpu_h_per_week") if k in v}}
            )  # fmt: skip
    return pl.DataFrame(out, schema=frame.schema) if out else frame.clear()
