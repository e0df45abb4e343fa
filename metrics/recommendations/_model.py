"""The shape every recommendation rule returns, and the small helpers the rules share.

A recommendation is one finding and one ready-to-apply change: its ``id`` is a hash of
``(rule, scope)``, so the same finding keeps its id from run to run and a dashboard or ticket can
follow it. Rules return :data:`RECOMMENDATION_SCHEMA` frames (one row per recommendation);
``evidence`` is a JSON object (numbers and the window they were measured over).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import polars as pl

from metrics.schema import UTC_DATETIME

__all__ = [
    "PATCH_KINDS",
    "RECOMMENDATION_SCHEMA",
    "SEVERITIES",
    "Recommendation",
    "Window",
    "ceil_to",
    "empty_recommendations",
    "grade",
    "ladder_ceil",
    "nearest_rank_value",
    "recommendation_id",
    "scope_key",
    "slurm_duration",
    "to_frame",
]

#: Ordered from least to most urgent.
SEVERITIES: tuple[str, ...] = ("info", "warning", "critical")

#: Where a patch is applied: a ``slurm.conf`` fragment, a ``sacctmgr`` or ``scontrol`` command
#: line, or a JSON merge patch (RFC 7386) of a Kubernetes object, as YAML.
PATCH_KINDS: tuple[str, ...] = ("slurm.conf", "sacctmgr", "scontrol", "kubernetes-merge-patch")

_UTC = UTC_DATETIME

#: Columns of a recommendations frame, in this order.
RECOMMENDATION_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "rule": pl.String(),
    "cluster": pl.String(),
    "scope": pl.String(),
    "severity": pl.String(),
    "window_start": _UTC,
    "window_end": _UTC,
    "evidence": pl.String(),
    "expected_gain_gpu_h_per_week": pl.Float64(),
    "expected_wait_reduction_s": pl.Float64(),
    "confidence": pl.Float64(),
    "change_text": pl.String(),
    "patch_kind": pl.String(),
    "patch_content": pl.String(),
}

#: Standard durations (s) that proposed time limits are rounded up to: 1 h … 14 days.
_LADDER_S: tuple[int, ...] = (
    3600,
    2 * 3600,
    4 * 3600,
    8 * 3600,
    12 * 3600,
    86400,
    2 * 86400,
    3 * 86400,
    7 * 86400,
    14 * 86400,
)


class Window(NamedTuple):
    """The period the evidence was measured over (UTC, end exclusive)."""

    start: dt.datetime
    end: dt.datetime

    @property
    def seconds(self) -> float:
        """Length in seconds (at least 1, so per-week rates stay finite)."""
        return max(1.0, (self.end - self.start).total_seconds())

    @property
    def weeks(self) -> float:
        """Length in weeks."""
        return self.seconds / (7 * 86400)

    def as_dict(self) -> dict[str, str]:
        """``{"start": ISO, "end": ISO}`` (UTC, ``Z``)."""
        return {"start": _iso(self.start), "end": _iso(self.end)}


def _iso(ts: dt.datetime) -> str:
    aware = ts if ts.tzinfo else ts.replace(tzinfo=dt.UTC)
    return aware.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scope_key(**parts: str | None) -> str:
    """The scope of a finding as ``key=value`` pairs joined by ``/``, in argument order.

    ``scope_key(cluster="slurm-a", partition="gpu")`` → ``"cluster=slurm-a/partition=gpu"``;
    None values are left out.
    """
    return "/".join(f"{k}={v}" for k, v in parts.items() if v is not None)


def recommendation_id(rule: str, scope: str) -> str:
    """A stable id: ``rec-`` + the first 12 hex digits of SHA-256 of ``rule`` and ``scope``."""
    digest = hashlib.sha256(f"{rule}\x1f{scope}".encode()).hexdigest()
    return f"rec-{digest[:12]}"


def _clean(value: Any) -> Any:
    """JSON-safe evidence: rounded floats, ISO times, NaN/inf → None, tuples → lists."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, 4)
    if isinstance(value, dt.datetime):
        return _iso(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


@dataclass(frozen=True)
class Recommendation:
    """One finding with its change.

    Attributes:
        rule: the rule that found it (``idle_allocations``, ``backfill_tuning`` …).
        cluster: the cluster it applies to.
        scope: what it is about (:func:`scope_key`); with ``rule`` it makes the id.
        severity: one of :data:`SEVERITIES`.
        window: the period measured.
        evidence: numbers behind the finding (the window is added).
        change_text: what to change and why, for a person.
        confidence: 0–1; how much data supports it (each rule documents its formula).
        expected_gain_gpu_h_per_week: GPU-hours a week the change is expected to return.
        expected_wait_reduction_s: seconds of mean wait the change is expected to save.
        patch_kind: one of :data:`PATCH_KINDS`, or None when no scheduler knob applies.
        patch_content: the change itself (config lines, command lines, or merge-patch YAML).
    """

    rule: str
    cluster: str
    scope: str
    severity: str
    window: Window
    evidence: Mapping[str, Any]
    change_text: str
    confidence: float
    expected_gain_gpu_h_per_week: float | None = None
    expected_wait_reduction_s: float | None = None
    patch_kind: str | None = None
    patch_content: str | None = None

    def __post_init__(self) -> None:
        """Reject unknown severities and patch kinds early (they are a contract)."""
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")
        if self.patch_kind is not None and self.patch_kind not in PATCH_KINDS:
            raise ValueError(f"patch kind {self.patch_kind!r} is not one of {PATCH_KINDS}")

    @property
    def id(self) -> str:
        """The stable id (:func:`recommendation_id`)."""
        return recommendation_id(self.rule, self.scope)

    def row(self) -> dict[str, Any]:
        """The frame row (:data:`RECOMMENDATION_SCHEMA`)."""
        evidence = {**_clean(dict(self.evidence)), "window": self.window.as_dict()}
        return {
            "id": self.id,
            "rule": self.rule,
            "cluster": self.cluster,
            "scope": self.scope,
            "severity": self.severity,
            "window_start": _aware(self.window.start),
            "window_end": _aware(self.window.end),
            "evidence": json.dumps(evidence, sort_keys=True),
            "expected_gain_gpu_h_per_week": _round(self.expected_gain_gpu_h_per_week),
            "expected_wait_reduction_s": _round(self.expected_wait_reduction_s),
            "confidence": round(min(1.0, max(0.0, self.confidence)), 3),
            "change_text": self.change_text,
            "patch_kind": self.patch_kind,
            "patch_content": self.patch_content,
        }


def _aware(ts: dt.datetime) -> dt.datetime:
    return ts if ts.tzinfo else ts.replace(tzinfo=dt.UTC)


def _round(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else round(v, 2)


def empty_recommendations() -> pl.DataFrame:
    """An empty frame with :data:`RECOMMENDATION_SCHEMA`."""
    return pl.DataFrame(schema=RECOMMENDATION_SCHEMA)


def to_frame(recs: Iterable[Recommendation]) -> pl.DataFrame:
    """Recommendations → a :data:`RECOMMENDATION_SCHEMA` frame (ids must be unique)."""
    rows = [r.row() for r in recs]
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("two recommendations share (rule, scope)")
    return pl.DataFrame(rows, schema=RECOMMENDATION_SCHEMA)


def grade(value: float, warning: float, critical: float) -> str:
    """``critical`` at or above ``critical``, ``warning`` at or above ``warning``, else ``info``."""
    if value >= critical:
        return "critical"
    if value >= warning:
        return "warning"
    return "info"


def ceil_to(value: float, step: float) -> float:
    """``value`` rounded up to a multiple of ``step`` (``step`` ≤ 0: unchanged)."""
    return math.ceil(value / step - 1e-9) * step if step > 0 else value


def ladder_ceil(seconds: float, ladder: Sequence[int] = _LADDER_S) -> int:
    """The smallest standard duration ≥ ``seconds`` (1 h, 2 h, 4 h, 8 h, 12 h, 1-3 d, 7 d,
    14 d); beyond the ladder, whole days."""
    for step in ladder:
        if seconds <= step:
            return step
    return int(ceil_to(seconds, 86400))


def slurm_duration(seconds: float) -> str:
    """Seconds in Slurm's time format: ``[days-]hours:minutes:seconds`` (rounded up)."""
    s = math.ceil(seconds)
    days, rest = divmod(s, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    hms = f"{h:02d}:{m:02d}:{sec:02d}"
    return f"{days}-{hms}" if days else hms


def nearest_rank_value(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (METRICS.md): the ⌈q·n⌉-th smallest; None if empty."""
    v = sorted(x for x in values if x is not None and math.isfinite(x))
    if not v:
        return None
    return v[max(0, math.ceil(q * len(v) - 1e-9) - 1)]
