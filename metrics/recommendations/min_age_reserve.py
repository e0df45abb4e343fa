"""Large jobs passed by young smaller jobs: shorten ``bf_min_age_reserve``.

Slurm's backfill gives a blocked pending job no reservation until it has been eligible for
``bf_min_age_reserve`` seconds (slurm.conf(5), SchedulerParameters: "The backfill and main
scheduling logic will not reserve resources for pending jobs until they have been pending and
runnable for at least the specified number of seconds"). Until then every smaller job that fits
starts on the nodes the large job waits for, so a large job's wait is at least that age plus
the time to drain the nodes it then reserves. The rule reads the age in force from ``scontrol
show config`` (``SchedulerParameters`` item ``bf_min_age_reserve``; absent: Slurm's default 0,
nothing to shorten). A het job's components (``H+O``) are one job, large or smaller by their
summed GPUs, in the waits, the passes and the replay (Slurm allocates them at once,
:func:`metrics.het_jobs.het_wait_units`). Per Slurm partition it fires when

- the nearest-rank p90 wait of large jobs (≥ ``large_gpus``; jobs still pending count with their
  wait so far, a lower bound) is at least ``min_p90_wait_s``, and
- smaller jobs passed them while they were too young for a reservation: *passes* = smaller jobs
  (0 < GPUs < ``large_gpus``) that started while a large job of the partition was pending and
  had been eligible less than the age in force; the rule needs at least
  ``min_passes_per_large_job`` passes per large job.

It replays the recorded jobs (:mod:`metrics.scheduler_model`, which honours
``bf_min_age_reserve_s``) under the setting in force and under each candidate age — ¾, ½ and ¼
of it, rounded down to a minute, and 0 — and proposes the candidate whose replay cuts the large
jobs' p90 wait the most without harming another class (the backfill rule's tolerance:
:func:`metrics.recommendations.backfill.trade_off`; ties: the larger age, the smaller change);
if every candidate that helps harms the smaller jobs, the best of them, with the harm stated.
A candidate must cut the large jobs' p90 wait by at least ``min_gain_s`` in the replay, or
nothing is proposed. Severity is the replay's net effect: ``critical`` when it cuts the large
jobs' p90 wait by ≥ 30 %, ``warning`` ≥ 10 %, else ``info``; never ``critical`` when another class
is harmed (capped at ``warning``, the text says why).

When the configuration in force is unknown (no ``scontrol show config`` loaded) and the large
jobs' p90 wait is high, the finding is ``info`` with ``needs_input``: collect ``scontrol show
config`` into ``<inputs>/<cluster>/slurm_state/scontrol_config_<day>.txt``; nothing is proposed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    nearest_rank_value,
    scope_key,
    to_frame,
)
from metrics.recommendations.backfill import (
    _capped,
    _check_text,
    _held_gain,
    _large_waits,
    _model_check,
    _Replay,
    _replay,
    _replay_dict,
    _target_text,
    _trade_text,
    _wait_units,
    replay_workload,
    target_kpi_forecast,
    trade_off,
)
from metrics.scheduler_model import SchedulerSettings

__all__ = ["MIN_AGE_RESERVE_RULE", "age_reserve_passes", "min_age_reserve", "parse_age_reserve"]

MIN_AGE_RESERVE_RULE = "backfill_min_age_reserve"
#: Candidate ages as fractions of the age in force (then 0).
CANDIDATE_FRACTIONS: tuple[float, ...] = (0.75, 0.5, 0.25, 0.0)


def parse_age_reserve(config: Mapping[str, str] | None) -> float | None:
    """``bf_min_age_reserve`` (s) in force from parsed ``scontrol show config``; None when no
    config is loaded, 0 when ``SchedulerParameters`` does not set it (Slurm's default).

    Raises:
        ValueError: the item's value is not a number.
    """
    if config is None:
        return None
    for item in (config.get("SchedulerParameters") or "").split(","):
        name, _, text = item.strip().partition("=")
        if name == "bf_min_age_reserve" and text:
            try:
                return float(text)
            except ValueError as exc:
                raise ValueError(f"SchedulerParameters bf_min_age_reserve={text!r}") from exc
    return 0.0


def _large_spells(
    att: pl.DataFrame, pend: pl.DataFrame, window: Window, large_gpus: float
) -> list[tuple[float, float]]:
    """(eligible, end of pending) in epoch seconds of the large jobs (end: start, cancel or
    the window end)."""
    cut = window.end.timestamp()
    out: list[tuple[float, float]] = []
    for r in att.filter(pl.col("gpus") >= large_gpus).iter_rows(named=True):
        if r["eligible_at"] is not None and r["start_at"] is not None:
            out.append((r["eligible_at"].timestamp(), min(r["start_at"].timestamp(), cut)))
    for r in pend.filter(pl.col("req_gpus") >= large_gpus).iter_rows(named=True):
        if r["eligible_at"] is not None:
            end = r["cancel_at"].timestamp() if r.get("cancel_at") is not None else cut
            out.append((r["eligible_at"].timestamp(), min(end, cut)))
    return out


def age_reserve_passes(
    att: pl.DataFrame, pend: pl.DataFrame, window: Window, large_gpus: float, age_s: float
) -> int:
    """Smaller jobs (0 < GPUs < ``large_gpus``) started while a large job was pending and had
    been eligible less than ``age_s``: ``eligible ≤ start < min(end of pending, eligible +
    age_s)`` for some large job (each smaller job counts once)."""
    spells = [(e, min(end, e + age_s)) for e, end in _large_spells(att, pend, window, large_gpus)]
    spells = [s for s in spells if s[1] > s[0]]
    if not spells:
        return 0
    starts = (
        att.filter((pl.col("gpus") > 0) & (pl.col("gpus") < large_gpus))["start_at"]
        .drop_nulls()
        .to_list()
    )
    return sum(1 for s in starts if any(a <= s.timestamp() < b for a, b in spells))


def min_age_reserve(
    attempts: pl.LazyFrame | pl.DataFrame,
    pending: pl.LazyFrame | pl.DataFrame,
    nodes: pl.DataFrame,
    window: Window,
    *,
    cluster_config: Mapping[str, str] | None,
    current: SchedulerSettings | None = None,
    large_gpus: float = 64,
    min_p90_wait_s: float = 6 * 3600.0,
    min_passes_per_large_job: float = 1.0,
    min_gain_s: float = 600.0,
    harm_rel: float = 0.10,
    harm_abs_s: float = 600.0,
) -> pl.DataFrame:
    """``bf_min_age_reserve`` recommendations per Slurm partition (module docstring).

    Args:
        attempts: the ``jobs`` view of one Slurm cluster (``source, cluster, job_id, attempt,
            partition, qos, gpus, eligible_at, start_at, end_at, wait_s, timelimit_s``).
        pending: its never-started jobs (``cluster, job_id, partition, qos, req_gpus,
            eligible_at, cancel_at, timelimit_s``).
        nodes: ``cluster, host, partition, gpus`` (the replay's machine).
        window: the evidence period (its end is the replay horizon).
        cluster_config: the cluster's parsed ``scontrol show config``; None: not collected.
        current: the other scheduler settings in force (default Slurm's); its
            ``bf_min_age_reserve_s`` is replaced by the one read from ``cluster_config``.
        large_gpus: "large" job threshold (METRICS.md: 64).
        min_p90_wait_s: large jobs' p90 wait (s) at or above which the rule looks.
        min_passes_per_large_job: passes per large job at or above which it fires.
        min_gain_s: the replay must cut the large jobs' p90 wait by this much (s).
        harm_rel, harm_abs_s: the harm tolerance of
            :func:`metrics.recommendations.backfill.trade_off`.

    Returns:
        :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` rows of rule
        ``backfill_min_age_reserve``: a ``slurm.conf`` patch (the ``SchedulerParameters`` in
        force with ``bf_min_age_reserve`` replaced), or an ``info`` needs-input finding without
        patch. Confidence = min(1, large jobs ÷ 10). Expected wait reduction = the replay's cut
        of the large jobs' mean wait (s).

    Raises:
        ValueError: ``bf_min_age_reserve`` in the config is not a number.
    """
    age = parse_age_reserve(cluster_config)
    # a het job is one job asking its components' GPUs together (Slurm allocates them at once)
    att, pend = _wait_units(
        attempts.lazy().collect().filter(pl.col("source") == "slurm"), pending.lazy().collect()
    )
    parts = (
        att.filter(pl.col("gpus") >= large_gpus)
        .select("cluster", "partition")
        .vstack(pend.filter(pl.col("req_gpus") >= large_gpus).select("cluster", "partition"))
        .unique()
        .sort("cluster", "partition")
    )
    recs: list[Recommendation] = []
    for cluster, partition in parts.iter_rows():
        a = att.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition))
        p = pend.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition))
        waits = _large_waits(a, p, window, large_gpus)
        p90 = nearest_rank_value(waits, 0.9) or 0.0
        if p90 < min_p90_wait_s:
            continue
        scope = scope_key(cluster=str(cluster), partition=str(partition))
        if age is None:
            recs.append(_needs_input(str(cluster), str(partition), scope, window, waits, p90))
            continue
        if age <= 0:
            continue
        passes = age_reserve_passes(a, p, window, large_gpus, age)
        if passes < min_passes_per_large_job * len(waits):
            continue
        cur = replace(current or SchedulerSettings(), bf_min_age_reserve_s=age)
        rec = _propose(
            str(cluster), str(partition), scope, a, p, nodes, window, cur,
            config=cluster_config or {}, large_gpus=large_gpus, waits=waits, passes=passes,
            min_gain_s=min_gain_s, harm=(harm_rel, harm_abs_s),
        )  # fmt: skip
        if rec is not None:
            recs.append(rec)
    return to_frame(recs) if recs else empty_recommendations()


def _needs_input(
    cluster: str, partition: str, scope: str, window: Window, waits: list[float], p90: float
) -> Recommendation:
    what = (
        f"scontrol show config on {cluster}, saved as "
        f"<inputs>/{cluster}/slurm_state/scontrol_config_<day>.txt"
    )
    return Recommendation(
        rule=MIN_AGE_RESERVE_RULE,
        cluster=cluster,
        scope=scope,
        severity="info",
        window=window,
        evidence={
            "partition": partition,
            "large_jobs": len(waits),
            "p90_wait_s": p90,
            "needs_input": what,
        },
        change_text=(
            f"Large jobs in partition {partition} waited a p90 {p90 / 3600:.1f} h, but the "
            "backfill settings in force (SchedulerParameters bf_min_age_reserve) are unknown, "
            f"so no change is proposed. Collect {what}."
        ),
        confidence=min(1.0, len(waits) / 10),
    )


def _candidates(age: float) -> list[float]:
    out: list[float] = []
    for f in CANDIDATE_FRACTIONS:
        c = float(math.floor(age * f / 60) * 60)
        if c < age and c not in out:
            out.append(c)
    return out


def _parameters_line(config: Mapping[str, str], age: float) -> str:
    """The ``SchedulerParameters`` in force with ``bf_min_age_reserve`` set to ``age``."""
    items = [i.strip() for i in (config.get("SchedulerParameters") or "").split(",") if i.strip()]
    value = f"bf_min_age_reserve={int(age)}"
    out = [value if i.partition("=")[0] == "bf_min_age_reserve" else i for i in items]
    if value not in out:
        out.append(value)
    return "SchedulerParameters=" + ",".join(out)


def _propose(
    cluster: str,
    partition: str,
    scope: str,
    att: pl.DataFrame,
    pend: pl.DataFrame,
    nodes: pl.DataFrame,
    window: Window,
    cur: SchedulerSettings,
    *,
    config: Mapping[str, str],
    large_gpus: float,
    waits: list[float],
    passes: int,
    min_gain_s: float,
    harm: tuple[float, float],
) -> Recommendation | None:
    sim_nodes, jobs = replay_workload(att, pend, nodes, cluster, partition, window.end)
    gpu_att = att.filter(pl.col("gpus").fill_null(0) > 0)
    if not sim_nodes or not jobs:
        return None
    large = int(large_gpus)
    horizon = window.end.timestamp()
    base = _replay(sim_nodes, jobs, cur, horizon, large)
    tried: list[tuple[float, _Replay, dict[str, object], list[str]]] = []
    for c in _candidates(cur.bf_min_age_reserve_s):
        r = _replay(sim_nodes, jobs, replace(cur, bf_min_age_reserve_s=c), horizon, large)
        trade, harmed = trade_off(base, r, window, large_gpus, *harm)
        tried.append((c, r, trade, harmed))
    cut_of = base.large["p90_wait_s"]
    helping = [t for t in tried if cut_of - t[1].large["p90_wait_s"] >= min_gain_s]
    if not helping:
        return None
    pool = [t for t in helping if not t[3]] or helping
    new_age, tuned, trade, harmed = min(pool, key=lambda t: (t[1].large["p90_wait_s"], -t[0]))
    p90_cut = base.large["p90_wait_s"] - tuned.large["p90_wait_s"]
    rel_cut = p90_cut / base.large["p90_wait_s"] if base.large["p90_wait_s"] > 0 else 0.0
    severity = grade(rel_cut, 0.10, 0.30)
    line = _parameters_line(config, new_age)
    check = _model_check(gpu_att, base)
    forecast = target_kpi_forecast(jobs, base, tuned, cluster, window, large_gpus)
    p90 = nearest_rank_value(waits, 0.9) or 0.0
    old = cur.bf_min_age_reserve_s
    return Recommendation(
        rule=MIN_AGE_RESERVE_RULE,
        cluster=cluster,
        scope=scope,
        severity=_capped(severity, harmed),
        window=window,
        evidence={
            "partition": partition,
            "large_gpus": large_gpus,
            "large_jobs": len(waits),
            "p50_wait_s": nearest_rank_value(waits, 0.5),
            "p90_wait_s": p90,
            "passes": passes,
            "passes_per_large_job": passes / len(waits),
            "current_bf_min_age_reserve_s": old,
            "proposed_bf_min_age_reserve_s": new_age,
            "candidates": [
                {
                    "bf_min_age_reserve_s": c,
                    "large_p90_wait_s": r.large["p90_wait_s"],
                    "smaller_p90_wait_s": r.others["p90_wait_s"],
                    "harmed": h,
                }
                for c, r, _, h in tried
            ],
            "replay": _replay_dict(base, tuned, window),
            "trade_off": {**trade, "severity_uncapped": severity},
            "target_kpi": forecast,
            "model_check": check,
        },
        change_text=(
            f"Large jobs (≥ {large_gpus:g} GPUs) in partition {partition} waited a pooled p90 "
            f"{p90 / 3600:.1f} h; backfill reserves nothing for them until they have been "
            f"eligible bf_min_age_reserve = {old:.0f} s ({old / 3600:.1f} h), and {passes} smaller "
            f"jobs started while a large job was pending and younger than that "
            f"({passes / len(waits):.1f} per large job). Set {line} (the SchedulerParameters in "
            f"force with bf_min_age_reserve {old:.0f} → {new_age:.0f}). Replaying the recorded "
            f"jobs cuts the large jobs' p90 wait from {base.large['p90_wait_s'] / 3600:.1f} h to "
            f"{tuned.large['p90_wait_s'] / 3600:.1f} h ({rel_cut:.0%})."
            + _trade_text(trade, severity, harmed)
            + _target_text(forecast)
            + _check_text(check)
        ),
        confidence=min(1.0, len(waits) / 10),
        expected_gain_gpu_h_per_week=_held_gain(base, tuned, window),
        expected_wait_reduction_s=base.large["mean_wait_s"] - tuned.large["mean_wait_s"],
        patch_kind="slurm.conf",
        patch_content=line,
    )
