"""Fairness drift: teams far above or below their fair allocation, week after week.

Input is METRICS.md's weekly entitlement ratio e = U ÷ F (usage over the water-filled fair
allocation). A team with e ≥ ``high`` or e ≤ ``low`` (with unmet demand: F > U) in each of the
last ``min_weeks`` weeks of a Slurm cluster means the fair-share factor is not steering the queue:
the multifactor priority is Σ weightᵢ × factorᵢ, so a fair-share weight that is small next to
the other weights (age, QOS, job size …) barely reorders jobs [Slurm "Multifactor Priority
Plugin"]. The change is relative to the configuration in force (``scontrol show config``, loaded
from ``<inputs>/<cluster>/slurm_state/scontrol_config_<day>.txt``): it raises
``PriorityWeightFairshare`` to at least twice the largest other weight and, when the usage
half-life is shorter than the window fairness is judged over (a week), lengthens
``PriorityDecayHalfLife`` to 7 days so that last week's heavy use still counts (slurm.conf(5),
default 7-0). When the weights in force are unknown no number is proposed: the finding is
``info``, says what to collect, and its patch is a comment (``# needs input: …``).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from metrics.periods import WEEK, is_complete
from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    scope_key,
    to_frame,
)

__all__ = ["RULE", "fairness_drift"]

RULE = "fairness_drift"
_WEEK_S = 7 * 86400.0


def fairness_drift(
    fairness_weekly: pl.LazyFrame | pl.DataFrame,
    window: Window,
    schedulers: Mapping[str, str],
    *,
    high: float = 1.5,
    low: float = 0.67,
    min_weeks: int = 2,
    min_fair_gpu_h: float = 10.0,
    current_weight_fairshare: int | None = None,
    current_other_weights: Mapping[str, int] | None = None,
    current_decay_half_life_s: float | None = None,
) -> pl.DataFrame:
    """PriorityWeightFairshare / PriorityDecayHalfLife changes per Slurm cluster.

    Args:
        fairness_weekly: the ``fairness_weekly`` view (``week, window, cluster, team, share,
            demand_gpu_s, fair_gpu_s, used_gpu_s, entitlement_ratio,
            fair_share_debt_gpu_h``); rows with ``window = 'week'`` and a cluster are used.
        window: the period considered; its end is the data cut-off, and only the weeks that
            end by it (complete weeks, :func:`metrics.periods.is_complete`) are judged.
        schedulers: cluster → ``slurm`` | ``kubernetes`` (only Slurm clusters get the change).
        high: e at or above which a team is over its fair allocation.
        low: e at or below which a team is under it (with debt > 0).
        min_weeks: consecutive most recent complete weeks a team must drift.
        min_fair_gpu_h: weeks where the team's fair allocation is below this are not judged.
        current_weight_fairshare: the cluster's PriorityWeightFairshare, if known.
        current_other_weights: the other PriorityWeight* values, if known (both are needed
            to propose a weight).
        current_decay_half_life_s: PriorityDecayHalfLife, if known (a change is proposed only
            when it is known to be shorter than a week).

    Returns:
        One recommendation per Slurm cluster with drifting teams; gain = the mean weekly
        GPU-hours owed to under-served teams (Σ positive debt) over the drifting weeks;
        confidence = min(1, weeks seen ÷ 4); severity critical when a team's e ≥ 2·high,
        ``info`` when the weights in force are unknown (``evidence.needs_input``).
    """
    frame = (
        fairness_weekly.lazy()
        .collect()
        .filter(
            (pl.col("window") == "week")
            & pl.col("cluster").is_not_null()
            & pl.col("cluster").is_in([c for c, s in schedulers.items() if s == "slurm"])
        )
    )
    recs = []
    for (cluster,), grp in frame.sort("cluster").group_by("cluster", maintain_order=True):
        # Only weeks the data cover whole are judged (a partial week is never compared as if
        # whole: metrics.periods).
        weeks = sorted(
            w for w in set(grp["week"].to_list()) if is_complete(w, w + WEEK, as_of=window.end)
        )[-min_weeks:]
        if len(weeks) < min_weeks:
            continue
        last = grp.filter(pl.col("week").is_in(weeks))
        judged = last.with_columns(
            (pl.col("fair_gpu_s") / 3600 >= min_fair_gpu_h).alias("_judged"),
            (pl.col("entitlement_ratio") >= high).alias("_over"),
            ((pl.col("entitlement_ratio") <= low) & (pl.col("fair_share_debt_gpu_h") > 0)).alias(
                "_under"
            ),
        )
        per_team = (
            judged.group_by("team")
            .agg(
                (pl.col("_judged") & pl.col("_over")).sum().alias("over_weeks"),
                (pl.col("_judged") & pl.col("_under")).sum().alias("under_weeks"),
                pl.col("entitlement_ratio").sort_by("week").alias("ratios"),
                pl.col("share").last().alias("share"),
                pl.col("used_gpu_s").sum().alias("used_gpu_s"),
                pl.col("fair_gpu_s").sum().alias("fair_gpu_s"),
                pl.col("fair_share_debt_gpu_h").sum().alias("debt_gpu_h"),
            )
            .sort("team")
        )
        over = per_team.filter(pl.col("over_weeks") >= min_weeks)
        under = per_team.filter(pl.col("under_weeks") >= min_weeks)
        if over.height == 0 and under.height == 0:
            continue
        owed = float(
            judged.filter(pl.col("fair_share_debt_gpu_h") > 0)["fair_share_debt_gpu_h"].sum()
        ) / len(weeks)
        others = dict(current_other_weights or {})
        known = current_weight_fairshare is not None and current_other_weights is not None
        lines, needs = [], []
        if known:
            target = max(10000, 2 * max(others.values(), default=0))
            if current_weight_fairshare is not None and current_weight_fairshare < target:
                lines.append(f"PriorityWeightFairshare={target}")
        else:
            needs.append(
                f"the PriorityWeight* settings in force on {cluster}: run `scontrol show config` "
                f"on {cluster} and save it as <inputs>/{cluster}/slurm_state/"
                "scontrol_config_<YYYY-MM-DD>.txt; the rule then proposes PriorityWeightFairshare "
                "= twice the largest other PriorityWeight*"
            )
        if current_decay_half_life_s is not None and current_decay_half_life_s < _WEEK_S:
            lines.append(f"PriorityDecayHalfLife={_half_life(_WEEK_S)}")
        if not lines and not needs:
            continue
        patch = "\n".join([*(f"# needs input: {n}" for n in needs), *lines])

        def teams(f: pl.DataFrame) -> list[dict[str, object]]:
            return [
                {
                    "team": r["team"],
                    "share": r["share"],
                    "entitlement_ratio_by_week": r["ratios"],
                    "used_gpu_h": float(r["used_gpu_s"]) / 3600,
                    "fair_gpu_h": float(r["fair_gpu_s"]) / 3600,
                    "debt_gpu_h": r["debt_gpu_h"],
                }
                for r in f.iter_rows(named=True)
            ]

        worst = max((max(r) for r in over["ratios"].to_list() if r), default=0.0)
        names_over = ", ".join(
            f"{r['team']} (e = {min(r['ratios']):.1f}–{max(r['ratios']):.1f})"
            for r in over.iter_rows(named=True)
        )
        names_under = ", ".join(str(t) for t in under["team"].to_list())
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=str(cluster),
                scope=scope_key(cluster=str(cluster)),
                severity="info"
                if needs
                else (grade(worst, high, 2 * high) if over.height else "warning"),
                window=window,
                evidence={
                    "weeks": list(weeks),
                    "high": high,
                    "low": low,
                    "over_teams": teams(over),
                    "under_teams": teams(under),
                    "owed_gpu_h_per_week": owed,
                    "current_weight_fairshare": current_weight_fairshare,
                    "current_other_weights": others,
                    "current_decay_half_life_s": current_decay_half_life_s,
                    "needs_input": needs,
                },
                change_text=(
                    f"For {len(weeks)} weeks "
                    + (
                        f"{names_over} used far more than their fair allocation"
                        if names_over
                        else ""
                    )
                    + (" and " if names_over and names_under else "")
                    + (f"{names_under} got far less while asking for more" if names_under else "")
                    + f"; under-served teams were owed {owed:.0f} GPU-h a week. "
                    + (
                        f"Make fair share decisive in the multifactor priority: {' '.join(lines)}."
                        if not needs
                        else "Fair share should be decisive in the multifactor priority, but the "
                        "priority weights in force are not loaded, so no weight is proposed"
                        + (f" ({' '.join(lines)} stands on its own)" if lines else "")
                        + ". Collect "
                        + "; ".join(needs)
                        + "."
                    )
                ),
                confidence=min(1.0, grp["week"].n_unique() / 4),
                expected_gain_gpu_h_per_week=owed,
                patch_kind="slurm.conf",
                patch_content=patch,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()


def _half_life(seconds: float) -> str:
    """PriorityDecayHalfLife in ``days-hours`` form (``7-0``)."""
    days, rest = divmod(int(seconds), 86400)
    return f"{days}-{rest // 3600}" if rest else f"{days}-0"
