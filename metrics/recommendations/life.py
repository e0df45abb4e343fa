"""A recommendation's life: proposed → applied → measured → confirmed or regressed.

Pure polars (and the patch parsers of :mod:`metrics.recommendations.merge`). METRICS.md
"Recommendation status" defines the rule; in short:

- :func:`proposed_settings` reduces each recommendation's patch to the settings it proposes, in
  the ledger's terms (``policy_changes``: ``cluster, object, key`` and the value as text):
  ``slurm.conf`` lines are object ``slurm.conf`` (``SchedulerParameters`` item by item, key
  ``SchedulerParameters:bf_window``); ``sacctmgr -i modify account name=A set fairshare=N`` is
  object ``account=A``, key ``shares`` (as slurmdbd records it; ``RawShares`` from ``sshare``
  matches too); ``GrpTRES=gres/gpu=8`` is key ``grp_tres[gres/gpu]``; a Kueue merge patch of a
  ClusterQueue is object ``clusterqueue=<name>``, keys ``nominalQuota[flavor/resource]`` ….
- :func:`recommendation_life` matches them to the ledger and the measured effects: *applied*
  when a ledger row on the same cluster, object and key sets the proposed value at or after the
  proposal time; *measured* when ``policy_change_impact`` has a row for that change;
  *confirmed* / *regressed* from the verdicts on the recommendation's target KPI
  (:data:`RULE_KPIS`).
- :func:`rollback_patch` writes the patch that puts a regressed change's old value back.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any, Final

import polars as pl
import yaml

from metrics.recommendations._kueue import parse_quantity
from metrics.recommendations.slurm_config import scheduler_parameters_line

__all__ = [
    "LARGE_JOB_RULES",
    "LIFE_SCHEMA",
    "RULE_KPIS",
    "STATUSES",
    "kpi_matches",
    "proposed_settings",
    "recommendation_life",
    "rollback_patch",
    "values_equal",
]

#: A recommendation's statuses, in the order of its life.
STATUSES: tuple[str, ...] = ("proposed", "applied", "measured", "confirmed", "regressed")

#: The KPI a rule's change is meant to move, as a ``policy_change_impact.kpi`` name or name
#: prefix before ``[`` (``wait_p90_h`` matches ``wait_p90_h[64+]``). A rule absent here has no
#: target: its applied changes stop at *measured*.
RULE_KPIS: dict[str, str] = {
    "backfill_tuning": "wait_p90_h",
    "backfill_min_age_reserve": "wait_p90_h",
    "large_job_reservation": "wait_p90_h",
    "time_limits": "wait_p50_h",
    "fairness_drift": "jain",
    "registry_drift_slurm": "jain",
    "registry_drift_kueue": "jain",
    "kueue_borrowing": "occupancy",
    "idle_allocations": "occupancy",
    "reservation_idle": "occupancy",
    "preempt_exempt_time": "preemption_loss_gpu_h",
    "preemption_grace_time": "preemption_loss_gpu_h",
}

#: Rules whose change is meant for large jobs: their target KPI counts in the size buckets
#: that hold jobs of ``large_job_gpus`` or more only (a backfill change judged by the waits of
#: 1-GPU jobs was "confirmed" by chance verdicts there, and a harmful one was not "regressed").
LARGE_JOB_RULES: frozenset[str] = frozenset(
    {"backfill_tuning", "backfill_min_age_reserve", "large_job_reservation"}
)

#: Columns :func:`recommendation_life` returns.
LIFE_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "status": pl.String(),
    "change_id": pl.String(),
}

_SETTING_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "cluster": pl.String(),
    "object": pl.String(),
    "key": pl.String(),
    "value": pl.String(),
}

#: ``sacctmgr ... set <Option>=`` → the key slurmdbd writes in a transaction's ``Info``
#: (lower-case option → key; TRES options get ``[tres]`` appended per item).
_SACCTMGR_KEYS: Final = {
    "fairshare": "shares",
    "shares": "shares",
    "gracetime": "grace_time",
    "grptres": "grp_tres",
    "maxtres": "max_tres_pj",
    "maxtresperjob": "max_tres_pj",
    "maxtresperuser": "max_tres_pu",
    "maxtrespu": "max_tres_pu",
    "maxjobs": "max_jobs",
    "maxjobsperuser": "max_jobs_pu",
    "grpjobs": "grp_jobs",
    "maxwall": "max_wall_pj",
    "maxwalldurationperjob": "max_wall_pj",
    "priority": "priority",
}
#: Ledger keys (lower case) that are the same setting as a ``sacctmgr`` key, from another source.
_SAME_KEY: Final = {"shares": ("shares", "rawshares")}
#: Ledger key → the ``sacctmgr`` option that sets it (for rollbacks).
_SACCTMGR_OPTION: Final = {
    "shares": "fairshare",
    "rawshares": "fairshare",
    "grace_time": "GraceTime",
    "grp_tres": "GrpTRES",
    "max_tres_pj": "MaxTRES",
    "max_tres_pu": "MaxTRESPerUser",
    "max_jobs": "MaxJobs",
    "max_jobs_pu": "MaxJobsPerUser",
    "grp_jobs": "GrpJobs",
    "max_wall_pj": "MaxWall",
    "priority": "Priority",
}
_QUOTA_FIELDS: Final = ("nominalQuota", "borrowingLimit", "lendingLimit")
_TRES_KEY: Final = re.compile(r"^(?P<key>[a-z_]+)\[(?P<tres>[^\]]+)\]$")


def values_equal(a: object, b: object) -> bool:
    """Two setting values as text are the same: equal ignoring case and surrounding blanks, or
    both numbers (Kubernetes quantities included: ``8`` = ``8.0``) of equal value."""
    if a is None or b is None:
        return a is None and b is None
    sa, sb = str(a).strip(), str(b).strip()
    if sa.lower() == sb.lower():
        return True
    qa, qb = parse_quantity(sa), parse_quantity(sb)
    return qa is not None and qb is not None and abs(qa - qb) < 1e-9


def _slurm_conf(content: str) -> list[tuple[str, str, str]]:
    out = []
    for raw in content.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = (x.strip() for x in line.split("=", 1))
        if k.lower() == "schedulerparameters":
            for item in (i.strip() for i in v.split(",") if i.strip()):
                name, eq, value = item.partition("=")
                out.append(("slurm.conf", f"SchedulerParameters:{name}", value if eq else "true"))
        elif k.lower() in ("partitionname", "nodename", "nodeset"):
            continue  # per-object lines: scontrol show config does not print them
        else:
            out.append(("slurm.conf", k, v))
    return out


def _sacctmgr(content: str) -> list[tuple[str, str, str]]:
    out = []
    for raw in content.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            tok = shlex.split(line)
        except ValueError:
            continue
        if not tok or tok[0] != "sacctmgr" or "modify" not in tok or "set" not in tok:
            continue
        m, s = tok.index("modify"), tok.index("set")
        where = dict(t.split("=", 1) for t in tok[m + 2 : s] if "=" in t)
        entity = tok[m + 1].lower()
        name = where.get("name") or where.get("names")
        if not name:
            continue
        if entity == "user":
            obj = f"account={where['account']} user={name}" if "account" in where else None
        else:
            obj = f"{entity}={name}"
        if obj is None:
            continue
        for t in tok[s + 1 :]:
            if "=" not in t:
                continue
            opt, value = t.split("=", 1)
            key = _SACCTMGR_KEYS.get(opt.lower(), opt.lower())
            if "tres" in key:
                for item in value.split(","):
                    tres, _, n = item.rpartition("=")
                    if tres:
                        out.append((obj, f"{key}[{tres}]", n))
            else:
                out.append((obj, key, value))
    return out


def _kueue(content: str) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    try:
        docs = [d for d in yaml.safe_load_all(content) if isinstance(d, dict)]
    except yaml.YAMLError:
        return out
    for d in docs:
        if str(d.get("kind", "ClusterQueue")) != "ClusterQueue":
            continue
        obj = f"clusterqueue={(d.get('metadata') or {}).get('name')}"
        spec = d.get("spec") or {}
        for g in spec.get("resourceGroups") or []:
            for f in g.get("flavors") or []:
                for res in f.get("resources") or []:
                    for fld in _QUOTA_FIELDS:
                        if fld in res and res[fld] is not None:
                            key = f"{fld}[{f.get('name')}/{res.get('name')}]"
                            out.append((obj, key, str(res[fld])))
        for key, value in spec.items():
            if key == "resourceGroups":
                continue
            if isinstance(value, dict):
                out += [(obj, f"{key}.{k}", str(v)) for k, v in value.items()]
            else:
                out.append((obj, key, str(value)))
    return out


def proposed_settings(recommendations: pl.DataFrame) -> pl.DataFrame:
    """The settings each recommendation's patch proposes, in the ledger's terms.

    Args:
        recommendations: ``id, cluster, patch_kind, patch_content`` rows.

    Returns:
        ``id, cluster, object, key, value`` (value as text), one row per setting; a patch
        that changes no ledger setting (a drain, a reservation, a partition line) gives none.
    """
    rows = []
    for r in recommendations.iter_rows(named=True):
        content, kind = r.get("patch_content"), r.get("patch_kind")
        if not content or not kind:
            continue
        if kind == "slurm.conf":
            found = _slurm_conf(str(content))
        elif kind == "sacctmgr":
            found = _sacctmgr(str(content))
        elif kind == "kubernetes-merge-patch":
            found = _kueue(str(content))
        else:
            found = []
        rows += [(r["id"], r["cluster"], o, k, v) for o, k, v in found]
    return pl.DataFrame(rows, schema=_SETTING_SCHEMA, orient="row")


def _same_key(proposed: str, ledger: str) -> bool:
    p, g = proposed.lower(), ledger.lower()
    return p == g or g in _SAME_KEY.get(p, ())


def _status_from_verdicts(verdicts: Iterable[str]) -> str:
    v = set(verdicts)
    if "improved" in v and "regressed" not in v:
        return "confirmed"
    if "regressed" in v and "improved" not in v:
        return "regressed"
    return "measured"


def kpi_matches(kpi: str, target: str, large_gpus: float | None = None) -> bool:
    """Whether ``kpi`` (``wait_p90_h[64-255]``) is ``target`` (its name before ``[``); with
    ``large_gpus``, only in a size bucket that holds jobs of that many GPUs or more."""
    if not (kpi == target or kpi.split("[", 1)[0] == target):
        return False
    if large_gpus is None or "[" not in kpi:
        return True
    upper = _bucket_upper(kpi.split("[", 1)[1].rstrip("]"))
    return upper is None or upper > large_gpus


def _bucket_upper(label: str) -> float | None:
    """The exclusive upper bound in GPUs of a size bucket label (``64-255`` → 256, ``1`` → 2,
    ``<1`` → 1, ``>=1024`` and ``64+`` → inf); None for a label that is no size bucket."""
    if label.startswith(">=") or label.endswith("+"):
        return float("inf")
    if label.startswith("<"):
        m = re.fullmatch(r"<(\d+(?:\.\d+)?)", label)
        return float(m[1]) if m else None
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", label)
    if m is None:
        return None
    return float(m[2] or m[1]) + 1


def recommendation_life(
    recommendations: pl.DataFrame,
    changes: pl.DataFrame,
    impact: pl.DataFrame | None = None,
    large_job_gpus: float = 64.0,
) -> pl.DataFrame:
    """Each recommendation's status and the ledger change that applied it.

    A recommendation is **applied** when a ``changes`` row on its cluster, object and key
    (keys compared without case; ``shares`` also matches ``sshare``'s ``RawShares``) sets the
    proposed value (:func:`values_equal`) with ``changed_at`` at or after the proposal time:
    ``proposed_at`` (the data cut-off of the run that first proposed it, from the proposal
    record ``analytics.recommendation_proposals``) where the frame has that column and it is
    set, else ``window_start`` (the start of the evidence). Of several matches the earliest
    counts.
    It is **measured** when ``impact`` has a row for that ``change_id``; **confirmed** when the
    verdicts of those rows on its target KPI (:data:`RULE_KPIS`) include ``improved`` and not
    ``regressed``, **regressed** when the reverse, and stays *measured* when the verdicts are
    mixed, ``no detectable effect``, ``too little data``, or the rule has no target. The
    target of a rule for large jobs (:data:`LARGE_JOB_RULES`) is its KPI in the size buckets
    that hold jobs of ``large_job_gpus`` or more.

    Args:
        recommendations: ``id, rule, cluster, window_start, patch_kind, patch_content`` and
            optionally ``proposed_at``.
        changes: ``policy_changes`` rows (``change_id, cluster, object, key, new,
            changed_at``).
        impact: ``policy_change_impact`` rows (``change_id, kpi, verdict``); None when the
            effects are not measured yet.
        large_job_gpus: the large-job threshold (``[thresholds] large_job_gpus``).

    Returns:
        :data:`LIFE_SCHEMA`, one row per recommendation (``change_id`` NULL while proposed).
    """
    settings = proposed_settings(recommendations)
    when = "proposed_at" if "proposed_at" in recommendations.columns else "window_start"
    cols = ["id", *dict.fromkeys((when, "window_start"))]
    start = {
        str(r["id"]): r[when] if r[when] is not None else r["window_start"]
        for r in recommendations.select(cols).iter_rows(named=True)
    }
    by_place: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in changes.sort("changed_at").iter_rows(named=True):
        by_place.setdefault((str(c["cluster"]), str(c["object"]).lower()), []).append(c)
    applied: dict[str, tuple[dt.datetime, str]] = {}
    for s in settings.iter_rows(named=True):
        since: dt.datetime | None = start.get(str(s["id"]))
        for c in by_place.get((str(s["cluster"]), str(s["object"]).lower()), []):
            if not _same_key(str(s["key"]), str(c["key"])):
                continue
            if since is not None and c["changed_at"] is not None and c["changed_at"] < since:
                continue
            if not values_equal(s["value"], c["new"]):
                continue
            prior = applied.get(str(s["id"]))
            if prior is None or c["changed_at"] < prior[0]:
                applied[str(s["id"])] = (c["changed_at"], str(c["change_id"]))
            break
    effects: dict[str, list[tuple[str, str]]] = {}
    if impact is not None:
        for e in impact.select("change_id", "kpi", "verdict").iter_rows(named=True):
            effects.setdefault(str(e["change_id"]), []).append((str(e["kpi"]), str(e["verdict"])))
    rows: list[tuple[str, str, str | None]] = []
    for r in recommendations.select("id", "rule").iter_rows(named=True):
        cid = applied[str(r["id"])][1] if str(r["id"]) in applied else None
        if cid is None:
            rows.append((r["id"], "proposed", None))
        elif cid not in effects:
            rows.append((r["id"], "applied", cid))
        else:
            target = RULE_KPIS.get(str(r["rule"]))
            large = large_job_gpus if str(r["rule"]) in LARGE_JOB_RULES else None
            verdicts = [v for k, v in effects[cid] if target and kpi_matches(k, target, large)]
            rows.append((r["id"], _status_from_verdicts(verdicts), cid))
    return pl.DataFrame(rows, schema=LIFE_SCHEMA, orient="row")


def rollback_patch(
    change: Mapping[str, Any], config: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """The patch that puts a ledger change's old value back.

    Args:
        change: a ``policy_changes`` row (``object, key, old``).
        config: the cluster's ``scontrol show config`` in force (parsed), None where not
            loaded. A ``SchedulerParameters`` item is written back as the whole line in force
            with that item put back (:func:`~metrics.recommendations.slurm_config.
            scheduler_parameters_line`; an item that was unset is removed from it), since a line
            naming the one item would drop the others when pasted; without a config, the item
            alone (to merge into the line in force).

    Returns:
        ``(patch_kind, patch_content)`` as the rules write them (``slurm.conf`` line,
        ``sacctmgr`` command, Kueue merge patch), or None for an object no patch kind reaches.
        An old value that was unset (NULL) becomes ``-1`` for ``sacctmgr`` (its "clear the
        limit") and ``null`` in a merge patch (RFC 7386 removes the field); a ``slurm.conf``
        setting with no old value cannot be written back and gives None, except a
        ``SchedulerParameters`` item with the config loaded (removed from the line).
    """
    obj, key, old = str(change["object"]), str(change["key"]), change.get("old")
    if obj == "slurm.conf":
        if key.startswith("SchedulerParameters:"):
            name = key.split(":", 1)[1]
            if config is not None:
                value = None if old is None else str(old)
                return "slurm.conf", scheduler_parameters_line(config, {name: value})
            if old is None:
                return None
            item = name if str(old) == "true" else f"{name}={old}"
            return "slurm.conf", f"SchedulerParameters={item}"
        if old is None:
            return None
        return "slurm.conf", f"{key}={old}"
    if obj.startswith("clusterqueue="):
        name = obj.split("=", 1)[1]
        m = re.match(r"^(\w+)\[([^/\]]*)/([^\]]*)\]$", key)
        if m:
            fld, flavor, res = m.groups()
            spec: dict[str, Any] = {
                "resourceGroups": [
                    {"coveredResources": [res],
                     "flavors": [{"name": flavor, "resources": [{"name": res, fld: old}]}]}
                ]
            }  # fmt: skip
        elif "." in key:
            head, _, leaf = key.partition(".")
            spec = {head: {leaf: old}}
        else:
            spec = {key: old}
        doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": name}, "spec": spec}  # fmt: skip
        return "kubernetes-merge-patch", yaml.safe_dump(doc, sort_keys=False)
    parts = dict(p.split("=", 1) for p in obj.split() if "=" in p)
    tres = _TRES_KEY.match(key.lower())
    base = tres.group("key") if tres else key.lower()
    option = _SACCTMGR_OPTION.get(base)
    if option is None:
        return None
    value = "-1" if old is None else str(old)
    assigned = f"{option}={tres.group('tres')}={value}" if tres else f"{option}={value}"
    if "user" in parts and "account" in parts:
        where = f"user name={parts['user']} account={parts['account']}"
    elif "account" in parts:
        where = f"account name={parts['account']}"
    elif "qos" in parts:
        where = f"qos name={parts['qos']}"
    else:
        return None
    return "sacctmgr", f"sacctmgr -i modify {where} set {assigned}"
