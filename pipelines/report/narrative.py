"""What changed since the previous period and what drove it: one narrative for the Overview page
and the weekly report's summary (pure Python and polars, no Streamlit, no database).

A **driver** is a component (team, cluster, waterfall leaf) of a headline ratio's change, with
its contribution in ratio points. For a ratio ``R = Σᵢ partᵢ / whole`` the change splits exactly
into ``contributionᵢ = partᵢ(now) / whole(now) − partᵢ(before) / whole(before)``: the
contributions sum to ``R(now) − R(before)`` (a component absent in one period counts 0 there),
so the driver named is the one with the largest absolute contribution (METRICS.md "Dashboard
and report figures").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from pipelines.report._common import fmt_hours, fmt_number, fmt_pct

__all__ = [
    "Driver",
    "Facts",
    "MostOwed",
    "contributions",
    "most_owed",
    "narrative",
    "top_drivers",
]

#: Contributions smaller than this (ratio points, 0.05 percentage points) are not named.
_NEGLIGIBLE = 0.0005


@dataclass(frozen=True)
class Driver:
    """One component's contribution to a ratio's change.

    Attributes:
        kind: ``team``, ``cluster`` or ``leaf``.
        name: the component.
        contribution: part(now)/whole(now) − part(before)/whole(before), ratio points.
    """

    kind: str
    name: str
    contribution: float


@dataclass(frozen=True)
class MostOwed:
    """The team with the largest positive fair-share debt of the period."""

    team: str
    debt_gpu_h: float
    entitlement_ratio: float | None


@dataclass(frozen=True)
class Facts:
    """The numbers a narrative is written from; ``None`` = not known (the sentence is left out
    or says why).

    Attributes:
        period: how the period is named (``2026-W45``, ``2026-11-09 – 2026-11-15``).
        unit: ``week`` or ``window`` (the partial-period sentence).
        previous: how the previous period is named in changes (``last week``).
        scope: whose GPUs (``the fleet's``, ``cluster slurm-a's``).
        complete: the data cover the whole period (else nothing is compared).
        covered_h: hours of the period the data cover; period_h: its length in hours.
        as_of: the data cut-off as text.
        occupancy, allocated_gpu_h, available_gpu_h: the occupancy tile's numbers.
        occupancy_delta: occupancy − the previous period's (ratio points).
        occupancy_drivers: contributions to ``occupancy_delta`` (teams and clusters).
        goodput_ratio, goodput_delta, telemetry_coverage: goodput ÷ capacity and its coverage.
        waste_gpu_h, waste_share, waste_delta: avoidable waste, its share of capacity and change.
        waste_leaf, waste_leaf_gpu_h: the largest avoidable leaf.
        waste_drivers: contributions of the leaves to ``waste_delta``.
        large_job_gpus, large_spells, large_p90_s, large_p90_reason: large-job time to start;
            wait_scope: its scope when narrower than the rest (`` of team nlp``).
        jain_index, unmet_entitlement, most_owed: fairness.
        recommendations_total, top_recommendation: open recommendations, most severe first.
    """

    period: str
    unit: str = "week"
    previous: str = "last week"
    scope: str = "the fleet's"
    complete: bool = True
    covered_h: float | None = None
    period_h: float = 168.0
    as_of: str | None = None
    occupancy: float | None = None
    allocated_gpu_h: float | None = None
    available_gpu_h: float | None = None
    occupancy_delta: float | None = None
    occupancy_drivers: Sequence[Driver] = field(default_factory=tuple)
    goodput_ratio: float | None = None
    goodput_delta: float | None = None
    telemetry_coverage: float | None = None
    waste_gpu_h: float | None = None
    waste_share: float | None = None
    waste_delta: float | None = None
    waste_leaf: str | None = None
    waste_leaf_gpu_h: float | None = None
    waste_drivers: Sequence[Driver] = field(default_factory=tuple)
    large_job_gpus: float = 64.0
    wait_scope: str = ""
    large_spells: int = 0
    large_p90_s: float | None = None
    large_p90_reason: str | None = None
    jain_index: float | None = None
    unmet_entitlement: float | None = None
    most_owed: MostOwed | None = None
    recommendations_total: int = 0
    top_recommendation: str | None = None


def contributions(
    now: pl.DataFrame,
    before: pl.DataFrame,
    *,
    key: str,
    part: str,
    whole_now: float,
    whole_before: float,
    kind: str | None = None,
) -> list[Driver]:
    """Each component's contribution to the change of ``Σ part / whole``, largest |·| first.

    Args:
        now: rows ``key, part`` of the period (one row per component; more are summed).
        before: the same for the previous period.
        key: the component column (``team``, ``cluster``, ``leaf``).
        part: the numerator column (e.g. allocated GPU-hours).
        whole_now: the denominator of the period (e.g. available GPU-hours), > 0.
        whole_before: the previous period's, > 0.
        kind: the drivers' kind (default: ``key``).

    Returns:
        One :class:`Driver` per component of either period: part(now)/whole_now −
        part(before)/whole_before; ties broken by name.

    Raises:
        ValueError: a denominator ≤ 0.
    """
    if whole_now <= 0 or whole_before <= 0:
        raise ValueError("the ratio's denominators must be positive")

    def sums(df: pl.DataFrame, alias: str) -> pl.DataFrame:
        if df.height == 0:
            return pl.DataFrame(schema={key: pl.String, alias: pl.Float64})
        return df.group_by(pl.col(key).cast(pl.String)).agg(
            pl.col(part).cast(pl.Float64).sum().alias(alias)
        )

    joined = (
        sums(now, "_now")
        .join(sums(before, "_before"), on=key, how="full", coalesce=True)
        .with_columns(pl.col("_now", "_before").fill_null(0.0))
        .with_columns((pl.col("_now") / whole_now - pl.col("_before") / whole_before).alias("_c"))
        .sort(pl.col("_c").abs(), key, descending=[True, False])
    )
    return [
        Driver(kind or key, str(name), float(c)) for name, c in joined.select(key, "_c").iter_rows()
    ]


def top_drivers(drivers: Sequence[Driver], kind: str, n: int = 2) -> list[Driver]:
    """The ``n`` largest non-negligible drivers of one kind (|contribution| ≥ 0.05 points)."""
    of_kind = [d for d in drivers if d.kind == kind and abs(d.contribution) >= _NEGLIGIBLE]
    return sorted(of_kind, key=lambda d: (-abs(d.contribution), d.name))[:n]


def _points(delta: float | None, what: str) -> str:
    if delta is None:
        return ""
    if abs(delta) < _NEGLIGIBLE:
        return f", unchanged from {what}"
    word = "up" if delta > 0 else "down"
    return f", {word} {abs(delta) * 100:.1f} points from {what}"


def _signed(d: Driver) -> str:
    return f"{d.name} ({d.contribution * 100:+.1f} points)"


def _drivers_sentence(what: str, drivers: Sequence[Driver], kinds: Sequence[str]) -> str | None:
    plural = {"team": "teams", "cluster": "clusters", "leaf": "waterfall leaves"}
    parts = []
    for kind in kinds:
        top = top_drivers(drivers, kind)
        if top:
            parts.append(f"the {plural.get(kind, kind)} {', '.join(_signed(d) for d in top)}")
    if not parts:
        return None
    return f"What moved {what} most: " + "; ".join(parts) + "."


def narrative(facts: Facts) -> list[str]:
    """Templated sentences built from the numbers (no external service), in a fixed order:
    partial period, occupancy and its drivers, goodput, waste and its drivers, large-job time to
    start, fairness, recommendations."""
    f = facts
    out = []
    compared = f.complete
    if not f.complete:
        out.append(
            f"The {f.unit} is partial: the data cover {f.covered_h or 0.0:,.1f} of its "
            f"{f.period_h:g} hours (they reach {f.as_of or 'an unknown time'}), so every figure "
            f"covers only that part and is not compared with the {f.unit} before."
        )
    if f.occupancy is not None:
        delta = f.occupancy_delta if compared else None
        out.append(
            f"In {f.period} {f.scope} GPUs were {fmt_pct(f.occupancy)} occupied "
            f"({fmt_number(f.allocated_gpu_h, 0)} of {fmt_number(f.available_gpu_h, 0)} "
            f"available GPU-hours allocated){_points(delta, f.previous)}."
        )
        if delta is not None:
            why = _drivers_sentence("occupancy", f.occupancy_drivers, ("team", "cluster"))
            if why:
                out.append(why)
    if f.goodput_ratio is not None:
        out.append(
            f"Goodput was {fmt_pct(f.goodput_ratio)} of capacity"
            f"{_points(f.goodput_delta if compared else None, f.previous)}; telemetry verifies "
            f"{fmt_pct(f.telemetry_coverage, 0)} of the allocated GPU-time."
        )
    if f.waste_gpu_h is not None:
        delta = f.waste_delta if compared else None
        text = (
            f"Avoidable waste (lost work, allocated-idle and held GPU-time) was "
            f"{fmt_number(f.waste_gpu_h, 0)} GPU-hours, {fmt_pct(f.waste_share)} of capacity"
            f"{_points(delta, f.previous)}"
        )
        if f.waste_leaf is not None and f.waste_leaf_gpu_h:
            text += f"; the largest part: {f.waste_leaf} ({fmt_number(f.waste_leaf_gpu_h, 0)} h)"
        out.append(text + ".")
        if delta is not None:
            why = _drivers_sentence("waste", f.waste_drivers, ("leaf",))
            if why:
                out.append(why)
    gpus = f"{f.large_job_gpus:g}"
    if f.large_spells:
        if f.large_p90_s is not None:
            out.append(
                f"Large jobs{f.wait_scope} (≥ {gpus} GPUs, {f.large_spells} waits) started within "
                f"{fmt_hours(f.large_p90_s)} in 9 cases out of 10."
            )
        else:
            out.append(
                f"Large jobs{f.wait_scope} (≥ {gpus} GPUs) have no p90 wait yet: "
                f"{f.large_p90_reason}."
            )
    else:
        out.append(f"No large job{f.wait_scope} (≥ {gpus} GPUs) became eligible this {f.unit}.")
    if f.jain_index is not None:
        text = (
            f"Jain's fairness index was {f.jain_index:.2f} (1 = every team that asked got its "
            f"fair share) and {fmt_pct(f.unmet_entitlement)} of the fair GPU-time went unmet"
        )
        if f.most_owed is not None:
            ratio = f.most_owed.entitlement_ratio
            text += (
                f"; team {f.most_owed.team} is owed the most, "
                f"{fmt_number(f.most_owed.debt_gpu_h, 0)} GPU-hours"
                + (f" (it received {ratio:.2f} of its fair share)" if ratio is not None else "")
            )
        out.append(text + ".")
    if f.recommendations_total:
        n = f.recommendations_total
        out.append(
            f"{n} recommendation{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} open; "
            f"the most severe: {f.top_recommendation}"
        )
    return out


def most_owed(teams: Sequence[Mapping[str, object]]) -> MostOwed | None:
    """The team with the largest fair-share debt above 0.05 GPU-hours, or ``None``.

    Args:
        teams: rows with ``team``, ``fair_share_debt_gpu_h`` and ``entitlement_ratio``.
    """
    owed = [t for t in teams if float(t.get("fair_share_debt_gpu_h") or 0.0) > 0.05]  # type: ignore[arg-type]
    if not owed:
        return None
    worst = max(owed, key=lambda t: float(t["fair_share_debt_gpu_h"]))  # type: ignore[arg-type]
    ratio = worst.get("entitlement_ratio")
    return MostOwed(
        team=str(worst["team"]),
        debt_gpu_h=float(worst["fair_share_debt_gpu_h"]),  # type: ignore[arg-type]
        entitlement_ratio=float(ratio) if ratio is not None else None,  # type: ignore[arg-type]
    )
