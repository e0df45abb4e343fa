"""Large jobs waiting long while GPUs sit ``held``: backfill settings, or a recurring reservation.

Slurm's backfill plans only ``bf_window`` minutes ahead (default 1440); a large job whose start
lies beyond it gets no reservation, so smaller jobs keep taking the nodes it waits for while
GPUs idle in ``held``. slurm.conf(5): "a value at least as long as the highest allowed time limit
is generally advisable to prevent job starvation … if the value of bf_window is increased, then
it is generally advisable to also increase bf_resolution". Per Slurm partition the rule fires when
the nearest-rank p50 wait of large jobs (≥ ``large_gpus``; jobs still pending count with their
wait so far, a lower bound) is at least ``min_p50_wait_s`` and the cluster's ``held`` share of
capacity is at least ``min_held_share``. A het job's components (``H+O``) are one job there
and in the replay, asking their GPUs together (Slurm allocates them at once,
:func:`metrics.het_jobs.het_wait_units`). It proposes

- ``bf_window`` = the longest time limit seen in the partition, in minutes (never shorter than now);
- ``bf_resolution`` = bf_window ÷ 1440 slots, rounded up to a minute (the default's ratio);
- ``bf_max_job_test`` = the most jobs pending at once, rounded up to 100 (never lower than now;
  a het job's components each, as each is a job record the backfill loop tests);
- ``bf_continue``;

and checks the gain by replaying the recorded jobs (:mod:`metrics.scheduler_model`) under the
current and the proposed settings: expected wait reduction = the drop in the large jobs' mean
wait; expected gain = the drop in held GPU-hours a week (None when reservations hold more GPUs
idle than before: that cost is stated in the text). When a recurring reservation sized from the
data (the median large job's nodes, at most half the partition; the p90 large-job runtime, at
most 12 h; daily, from the UTC hour when the partition's smaller jobs hold the fewest GPUs) saves
a further ``min_gain_s`` of mean large-job wait in the replay without raising the smaller jobs'
mean wait by more than ``max_other_wait_increase_s``, it is recommended as well (``scontrol
create reservation``).

Severity follows the replay's net effect, not only the large jobs' gain: the trade-off (each
class's mean and p90 wait, and held GPU-hours a week, current → proposed) is stated in the
evidence (``trade_off``) and the text, and a change that makes another class worse beyond the
tolerance (a wait up by more than ``harm_rel`` *and* ``harm_abs_s``; held GPU-hours a week up by
more than ``harm_rel`` and 1 GPU-h) is never ranked critical: it is capped at ``warning`` and the
text says why.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from zoneinfo import ZoneInfo

import polars as pl

from metrics._helpers import seconds_between
from metrics.het_jobs import het_wait_units
from metrics.policy_replay import replay_wait_kpis
from metrics.recommendations._model import (
    Recommendation,
    Window,
    ceil_to,
    empty_recommendations,
    grade,
    ladder_ceil,
    nearest_rank_value,
    scope_key,
    slurm_duration,
    to_frame,
)
from metrics.recommendations.life import kpi_matches
from metrics.recommendations.slurm_config import scheduler_parameters_line
from metrics.scheduler_model import (
    Node,
    RecurringReservation,
    SchedulerSettings,
    SimJob,
    jobs_from_frame,
    nodes_from_frame,
    simulate,
    wait_summary,
)
from metrics.waterfall import _hour_pieces, _utc_lit

__all__ = [
    "BACKFILL_RULE",
    "RESERVATION_RULE",
    "backfill_tuning",
    "max_queue_depth",
    "replay_workload",
    "target_kpi_forecast",
]

BACKFILL_RULE = "backfill_tuning"
RESERVATION_RULE = "large_job_reservation"


def max_queue_depth(spells: pl.DataFrame) -> int:
    """The most spells (``_from``, ``_to``) open at once (a spell ending at t is closed at t)."""
    if spells.height == 0:
        return 0
    ev = pl.concat(
        [
            spells.select(pl.col("_from").alias("t"), pl.lit(1).alias("d")),
            spells.select(pl.col("_to").alias("t"), pl.lit(-1).alias("d")),
        ]
    ).sort(["t", "d"])
    return int(ev["d"].cum_sum().max() or 0)  # type: ignore[arg-type]


def _pending_spells(attempts: pl.DataFrame, pending: pl.DataFrame, window: Window) -> pl.DataFrame:
    cut = _utc_lit(window.end)
    a = attempts.select(
        pl.col("eligible_at").dt.cast_time_unit("us").alias("_from"),
        pl.min_horizontal(pl.col("start_at").dt.cast_time_unit("us"), cut).alias("_to"),
    )
    p = pending.select(
        pl.col("eligible_at").dt.cast_time_unit("us").alias("_from"),
        pl.min_horizontal(pl.col("cancel_at").dt.cast_time_unit("us").fill_null(cut), cut).alias(
            "_to"
        ),
    )
    return pl.concat([a, p]).drop_nulls().filter(pl.col("_to") > pl.col("_from"))


def _wait_units(att: pl.DataFrame, pend: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``att`` and ``pend`` with each het job's components as one job
    (:func:`metrics.het_jobs.het_wait_units`: Slurm allocates them at once, so the het job asks
    their GPUs together and waits from the earliest eligible time to the latest start; a
    never-started one is cancelled at its components' latest ``cancel_at``, NULL while one
    pends); the frames themselves when neither holds a het component."""
    het = pl.col("job_id").cast(pl.String).str.contains("+", literal=True).any()
    if not (att.select(het).item() or pend.select(het).item()):
        return att, pend
    units, never = het_wait_units(att.lazy(), pend.rename({"cancel_at": "end_at"}).lazy())
    assert never is not None
    return units.collect(), never.collect().rename({"end_at": "cancel_at"})


def _large_waits(
    attempts: pl.DataFrame, pending: pl.DataFrame, window: Window, large_gpus: float
) -> list[float]:
    cut = _utc_lit(window.end)
    started = attempts.filter(pl.col("gpus") >= large_gpus)["wait_s"].drop_nulls().to_list()
    waiting = (
        pending.filter(pl.col("req_gpus") >= large_gpus)
        .select(
            seconds_between(
                pl.min_horizontal(pl.col("cancel_at").fill_null(cut), cut), pl.col("eligible_at")
            )
        )
        .to_series()
        .drop_nulls()
        .to_list()
    )
    return [max(0.0, float(w)) for w in [*started, *waiting]]


def _quiet_hour(attempts: pl.DataFrame, window: Window, large_gpus: float) -> int:
    """The UTC hour of day when jobs below ``large_gpus`` held the fewest GPU-seconds."""
    small = attempts.filter((pl.col("gpus") > 0) & (pl.col("gpus") < large_gpus)).with_columns(
        pl.col("start_at").dt.cast_time_unit("us").alias("_s"),
        pl.min_horizontal(
            pl.col("end_at").dt.cast_time_unit("us").fill_null(_utc_lit(window.end)),
            _utc_lit(window.end),
        ).alias("_e"),
    )
    if small.height == 0:
        return 0
    by_hour = (
        _hour_pieces(small.lazy(), "_s", "_e")
        .group_by(pl.col("hour").dt.hour().alias("h"))
        .agg((pl.col("_sec") * pl.col("gpus")).sum().alias("g"))
        .collect()
    )
    load = {int(r["h"]): float(r["g"]) for r in by_hour.iter_rows(named=True)}
    return min(range(24), key=lambda h: (load.get(h, 0.0), h))


def backfill_tuning(
    attempts: pl.LazyFrame | pl.DataFrame,
    pending: pl.LazyFrame | pl.DataFrame,
    waterfall: pl.LazyFrame | pl.DataFrame,
    nodes: pl.DataFrame,
    window: Window,
    *,
    current: SchedulerSettings | None = None,
    cluster_config: Mapping[str, str] | None = None,
    large_gpus: float = 64,
    min_p50_wait_s: float = 6 * 3600.0,
    min_held_share: float = 0.05,
    min_gain_s: float = 600.0,
    max_other_wait_increase_s: float = 1800.0,
    timezones: Mapping[str, str] | None = None,
    harm_rel: float = 0.10,
    harm_abs_s: float = 600.0,
) -> pl.DataFrame:
    """Backfill (and reservation) recommendations per Slurm partition with starved large jobs.

    Args:
        attempts: the ``jobs`` view (``source, cluster, job_id, attempt, partition, qos, account,
            gpus, eligible_at, start_at, end_at, wait_s, timelimit_s``).
        pending: Slurm jobs that never started: ``cluster, job_id, partition, qos, account,
            req_gpus, eligible_at, cancel_at`` (NULL: still pending), ``timelimit_s``.
        waterfall: ``gpu_waterfall_hourly`` (``cluster, hour, bucket, gpu_s``).
        nodes: ``cluster, host, partition, gpus`` (the replay's machine).
        window: the period considered (its end is the replay horizon).
        current: the cluster's current scheduler settings (default Slurm's defaults).
        cluster_config: the cluster's parsed ``scontrol show config``: the patch is then its
            whole ``SchedulerParameters`` line with the proposed items set (slurm.conf takes
            the option whole); None: the items alone, to merge.
        large_gpus: "large" job threshold (METRICS.md: 64).
        min_p50_wait_s: p50 large-job wait at or above which the rule fires.
        min_held_share: held ÷ capacity of the cluster at or above which the rule fires.
        min_gain_s: a change is recommended only if the replay saves this much mean wait.
        max_other_wait_increase_s: a reservation is recommended only if it raises the mean
            wait of the smaller jobs by at most this much (against the better of the current
            and the tuned settings).
        timezones: cluster → IANA zone of slurmctld, for the reservation's StartTime.
        harm_rel: relative worsening of another class's wait (or of held GPU-hours) beyond
            which the change is not ranked critical.
        harm_abs_s: and the absolute worsening of a wait (s) beyond which it counts.

    Returns:
        ``backfill_tuning`` (patch ``slurm.conf`` SchedulerParameters) and/or
        ``large_job_reservation`` (patch ``scontrol``) per flagged partition. Confidence =
        min(1, large jobs ÷ 10); severity critical when the p50 wait is 4× the threshold,
        capped at warning when the replay makes another class worse (``trade_off``).
    """
    cur = current or SchedulerSettings()
    # each component is a job record of its own in slurmctld's queue (bf_max_job_test counts
    # them); everything else reads a het job as one job, as Slurm allocates it
    parts_att = attempts.lazy().collect().filter(pl.col("source") == "slurm")
    parts_pend = pending.lazy().collect()
    att, pend = _wait_units(parts_att, parts_pend)
    wf = waterfall.lazy().collect()
    held = wf.group_by("cluster").agg(
        pl.col("gpu_s").filter(pl.col("bucket") == "held").sum().alias("held_gpu_s"),
        pl.col("gpu_s").sum().alias("capacity_gpu_s"),
    )
    held_by = {
        str(r["cluster"]): (float(r["held_gpu_s"]), float(r["capacity_gpu_s"]))
        for r in held.iter_rows(named=True)
    }
    recs: list[Recommendation] = []
    parts = (
        att.filter(pl.col("gpus") >= large_gpus)
        .select("cluster", "partition")
        .vstack(pend.filter(pl.col("req_gpus") >= large_gpus).select("cluster", "partition"))
        .unique()
        .sort("cluster", "partition")
    )
    for cluster, partition in parts.iter_rows():
        h, cap = held_by.get(str(cluster), (0.0, 0.0))
        held_share = h / cap if cap > 0 else 0.0
        a = att.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition))
        p = pend.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition))
        waits = _large_waits(a, p, window, large_gpus)
        here = (pl.col("cluster") == cluster) & (pl.col("partition") == partition)
        depth = max_queue_depth(
            _pending_spells(parts_att.filter(here), parts_pend.filter(here), window)
        )
        p50 = nearest_rank_value(waits, 0.5) or 0.0
        if p50 < min_p50_wait_s or held_share < min_held_share:
            continue
        recs.extend(
            _propose(
                str(cluster),
                str(partition),
                a,
                p,
                nodes,
                window,
                cur,
                large_gpus=large_gpus,
                waits=waits,
                depth=depth,
                held_share=held_share,
                min_p50_wait_s=min_p50_wait_s,
                min_gain_s=min_gain_s,
                max_other_wait_increase_s=max_other_wait_increase_s,
                tz=(timezones or {}).get(str(cluster), "UTC"),
                harm=(harm_rel, harm_abs_s),
                config=cluster_config,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()


def _scheduler_parameters(s: SchedulerSettings, config: Mapping[str, str] | None = None) -> str:
    """The proposed backfill items; with the cluster's config, the whole ``SchedulerParameters``
    line in force with them set (:func:`~metrics.recommendations.slurm_config.
    scheduler_parameters_line`), else the items alone (to merge into the line in force)."""
    items = {
        "bf_window": str(math.ceil(s.bf_window_s / 60)),
        "bf_resolution": str(math.ceil(s.bf_resolution_s)),
        "bf_max_job_test": str(s.bf_max_job_test),
    }
    if s.bf_continue:
        items["bf_continue"] = "true"
    return scheduler_parameters_line(config or {}, items)


def replay_workload(
    att: pl.DataFrame,
    pend: pl.DataFrame,
    nodes: pl.DataFrame,
    cluster: str,
    partition: str,
    end: dt.datetime,
) -> tuple[list[Node], list[SimJob]]:
    """The scheduler model's input for one partition's replay: its nodes, and its GPU attempts
    plus the never-started jobs (ids prefixed ``pending:``, their GPUs from the request, no
    start or end), all as :func:`metrics.scheduler_model.jobs_from_frame` reads them up to
    ``end``.

    Args:
        att: attempts (``core.jobs`` columns the model reads; ``gpus`` null or 0 are left out).
        pend: never-started jobs (``core.pending`` columns).
        nodes: ``core.nodes`` (``cluster, host, partition, gpus``).
        cluster: the cluster.
        partition: the partition whose nodes are replayed.
        end: the replay's horizon (running jobs end there at the latest).

    Returns:
        ``(nodes, jobs)`` for :func:`metrics.scheduler_model.simulate`.
    """
    sim_nodes = nodes_from_frame(
        nodes.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition))
    )
    gpu_att = att.filter(pl.col("gpus").fill_null(0) > 0)
    jobs = jobs_from_frame(gpu_att, end) + [
        replace(j, job_id=f"pending:{j.job_id}")
        for j in jobs_from_frame(
            pend.with_columns(
                pl.lit(None, dtype=pl.Float64).alias("gpus"),
                pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("start_at"),
                pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("end_at"),
            ),
            end,
        )
    ]
    return sim_nodes, jobs


def _propose(
    cluster: str,
    partition: str,
    att: pl.DataFrame,
    pend: pl.DataFrame,
    nodes: pl.DataFrame,
    window: Window,
    cur: SchedulerSettings,
    *,
    large_gpus: float,
    waits: list[float],
    depth: int,
    held_share: float,
    min_p50_wait_s: float,
    min_gain_s: float,
    max_other_wait_increase_s: float,
    tz: str,
    harm: tuple[float, float] = (0.10, 600.0),
    config: Mapping[str, str] | None = None,
) -> list[Recommendation]:
    limits = pl.concat([att["timelimit_s"], pend["timelimit_s"]]).drop_nulls()
    longest = float(limits.max() or cur.bf_window_s)  # type: ignore[arg-type]
    window_s = max(cur.bf_window_s, ceil_to(longest, 60))
    proposed = replace(
        cur,
        bf_window_s=window_s,
        bf_resolution_s=max(cur.bf_resolution_s, ceil_to(window_s / 1440, 60)),
        bf_max_job_test=max(cur.bf_max_job_test, int(ceil_to(max(depth, 1), 100))),
        bf_continue=True,
    )
    sim_nodes, jobs = replay_workload(att, pend, nodes, cluster, partition, window.end)
    gpu_att = att.filter(pl.col("gpus").fill_null(0) > 0)
    if not sim_nodes or not jobs:
        return []
    large = int(large_gpus)
    horizon = window.end.timestamp()
    base = _replay(sim_nodes, jobs, cur, horizon, large)
    tuned = _replay(sim_nodes, jobs, proposed, horizon, large)
    check = _model_check(gpu_att, base)
    p50 = nearest_rank_value(waits, 0.5) or 0.0
    common = {
        "partition": partition,
        "large_gpus": large_gpus,
        "large_jobs": len(waits),
        "p50_wait_s": p50,
        "p90_wait_s": nearest_rank_value(waits, 0.9),
        "max_wait_s": max(waits) if waits else None,
        "held_share_of_capacity": held_share,
        "longest_time_limit_s": longest,
        "max_jobs_pending_at_once": depth,
        "model_check": check,
    }
    severity = grade(p50, min_p50_wait_s, 4 * min_p50_wait_s)
    confidence = min(1.0, len(waits) / 10)
    out: list[Recommendation] = []
    bf_gain = base.large["mean_wait_s"] - tuned.large["mean_wait_s"]
    if bf_gain >= min_gain_s:
        line = _scheduler_parameters(proposed, config)
        trade, harmed = trade_off(base, tuned, window, large_gpus, *harm)
        forecast = target_kpi_forecast(jobs, base, tuned, cluster, window, large_gpus)
        out.append(
            Recommendation(
                rule=BACKFILL_RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, partition=partition),
                severity=_capped(severity, harmed),
                window=window,
                evidence={
                    **common,
                    "current": _settings_dict(cur),
                    "proposed": _settings_dict(proposed),
                    "replay": _replay_dict(base, tuned, window),
                    "trade_off": {**trade, "severity_uncapped": severity},
                    "target_kpi": forecast,
                },
                change_text=(
                    f"Large jobs (≥ {large_gpus:g} GPUs) in partition {partition} waited a median "
                    f"{p50 / 3600:.1f} h while {held_share:.0%} of the cluster's GPU time was "
                    f"held idle for pending work. Time limits reach {longest / 60:.0f} min but "
                    f"backfill plans only {cur.bf_window_s / 60:.0f} min ahead. Set {line} "
                    + (
                        "(the SchedulerParameters in force with the backfill items set). "
                        if config is not None
                        else "(merge into the existing SchedulerParameters). "
                    )
                    + _replay_text(base, tuned, window)
                    + _trade_text(trade, severity, harmed)
                    + _target_text(forecast)
                    + _check_text(check)
                ),
                confidence=confidence,
                expected_gain_gpu_h_per_week=_held_gain(base, tuned, window),
                expected_wait_reduction_s=bf_gain,
                patch_kind="slurm.conf",
                patch_content=line,
            )
        )
    reservation = _size_reservation(
        att,
        pend,
        sim_nodes_count=len(sim_nodes),
        gpn=max(n.gpus for n in sim_nodes),
        partition=partition,
        window=window,
        large_gpus=large_gpus,
    )
    if reservation is None:
        return out
    reserved = _replay(
        sim_nodes, jobs, replace(proposed, reservations=(reservation,)), horizon, large
    )
    best = min(base, tuned, key=lambda r: r.large["mean_wait_s"])
    gain = best.large["mean_wait_s"] - reserved.large["mean_wait_s"]
    others_cost = reserved.others["mean_wait_s"] - best.others["mean_wait_s"]
    if gain >= min_gain_s and others_cost <= max_other_wait_increase_s:
        accounts = sorted(
            {
                str(x)
                for x in pl.concat(
                    [
                        att.filter(pl.col("gpus") >= large_gpus)["account"],
                        pend.filter(pl.col("req_gpus") >= large_gpus)["account"],
                    ]
                )
                .drop_nulls()
                .to_list()
            }
        )
        out.append(
            _reservation_rec(
                cluster,
                partition,
                reservation,
                accounts,
                window,
                tz,
                common,
                severity,
                confidence,
                base,
                reserved,
                harm,
            )
        )
    return out


@dataclass(frozen=True)
class _Replay:
    """One replay: held GPU-seconds and the wait summaries of large and other jobs."""

    held_gpu_s: float
    large: dict[str, float]
    others: dict[str, float]
    starts: dict[str, float | None] = field(default_factory=dict)


def _replay(
    nodes: list[Node], jobs: list[SimJob], settings: SchedulerSettings, horizon: float, large: int
) -> _Replay:
    result = simulate(nodes, jobs, settings, horizon_s=horizon)
    return _Replay(
        held_gpu_s=result.held_gpu_s,
        large=wait_summary(result, jobs, min_gpus=large),
        others=wait_summary(result, [j for j in jobs if j.gpus < large]),
        starts={j.job_id: result.outcomes[j.job_id].start_s for j in jobs},
    )


def _model_check(att: pl.DataFrame, base: _Replay) -> dict[str, float | None]:
    """How closely the replay under the current settings reproduces the recorded starts
    (docs/scheduler-model.md): over attempts started in the data and in the replay, ``jobs``,
    the nearest-rank median |simulated − recorded start| in minutes, and the share within 1 h."""
    has_attempt = "attempt" in att.columns
    errs: list[float] = []
    rows = att.filter(pl.col("start_at").is_not_null() & pl.col("eligible_at").is_not_null())
    for r in rows.iter_rows(named=True):
        n = r["attempt"] if has_attempt else 0
        sim = base.starts.get(str(r["job_id"]) if not n else f"{r['job_id']}#{n}")
        if sim is not None:
            errs.append(abs(sim - r["start_at"].timestamp()))
    median = nearest_rank_value(errs, 0.5)
    return {
        "jobs": float(len(errs)),
        "median_abs_start_error_min": None if median is None else median / 60,
        "within_1h_share": sum(1 for e in errs if e <= 3600) / len(errs) if errs else None,
    }


def _check_text(check: Mapping[str, float | None]) -> str:
    if not check["jobs"] or check["median_abs_start_error_min"] is None:
        return ""
    return (
        f" Model check: under the current settings the replay starts the {check['jobs']:.0f} "
        f"recorded jobs a median {check['median_abs_start_error_min']:.0f} min from their "
        f"recorded start ({check['within_1h_share']:.0%} within 1 h)."
    )


def _sim_frame(
    jobs: list[SimJob], starts: Mapping[str, float | None], cluster: str
) -> pl.DataFrame:
    """The replayed jobs as ``jobs`` rows (``cluster, eligible_at, start_at, end_at, gpus,
    req_gpus``): a job never started ends at its cancel time (NULL: still waiting)."""

    def ts(v: float | None) -> dt.datetime | None:
        return None if v is None else dt.datetime.fromtimestamp(v, dt.UTC)

    rows = []
    for j in jobs:
        start = starts.get(j.job_id)
        end = j.cancel_s if start is None else start + min(j.runtime_s, j.limit_s)
        rows.append((cluster, ts(j.eligible_s), ts(start), ts(end), float(j.gpus), float(j.gpus)))
    utc = pl.Datetime("us", "UTC")
    return pl.DataFrame(
        rows,
        schema={"cluster": pl.String(), "eligible_at": utc, "start_at": utc, "end_at": utc,
                "gpus": pl.Float64(), "req_gpus": pl.Float64()},
        orient="row",
    )  # fmt: skip


def target_kpi_forecast(
    jobs: list[SimJob],
    before: _Replay,
    after: _Replay,
    cluster: str,
    window: Window,
    large_gpus: float,
) -> list[dict[str, object]]:
    """The replay's forecast in the terms the change will be measured by.

    ``policy_change_impact`` judges a backfill change by ``wait_p90_h[<bucket>]`` of the
    buckets holding large jobs: per UTC day of eligibility, the Kaplan–Meier p90 time to start
    of that day's spells, averaged over the days (:func:`metrics.policy_replay.
    replay_wait_kpis`, METRICS.md "Policy change impact"). The rules' own "p90 wait" pools every
    large job's wait over the window (nearest rank); with about one large job a day the daily
    p90 is close to the jobs' mean wait, so the two differ. This gives the daily one for both
    replays, so a prediction and its measurement compare like with like.

    Returns:
        One entry per such bucket with a value in both replays: ``kpi``, ``current_h`` and
        ``proposed_h`` (mean over the days with a value in both), ``change_h``, ``days``.
    """
    daily = []
    for r in (before, after):
        k = replay_wait_kpis(_sim_frame(jobs, r.starts, cluster), window.end)
        daily.append(
            k.filter(
                pl.col("kpi").map_elements(
                    lambda x: kpi_matches(x, "wait_p90_h", large_gpus), return_dtype=pl.Boolean
                )
                & (pl.col("day") >= window.start)
            ).select("kpi", "day", "value")
        )
    both = daily[0].join(daily[1], on=["kpi", "day"], suffix="_proposed")
    out = []
    for (kpi,), g in both.sort("kpi", "day").group_by("kpi", maintain_order=True):
        cur = float(g["value"].mean())  # type: ignore[arg-type]
        new = float(g["value_proposed"].mean())  # type: ignore[arg-type]
        out.append(
            {"kpi": kpi, "current_h": cur, "proposed_h": new, "change_h": new - cur,
             "days": g.height}
        )  # fmt: skip
    return out


def _target_text(forecast: list[dict[str, object]]) -> str:
    """The forecast on the measured KPI, in words (empty without one)."""
    if not forecast:
        return ""
    parts = [
        f"{f['kpi']} {float(f['current_h']):.1f} h → {float(f['proposed_h']):.1f} h "  # type: ignore[arg-type]
        f"({float(f['change_h']):+.1f} h)"  # type: ignore[arg-type]
        for f in forecast
    ]
    return (
        " On the measure the change will be judged by (the daily Kaplan–Meier p90 time to "
        "start averaged over days, not the pooled p90 above): " + "; ".join(parts) + "."
    )


def _held_gain(before: _Replay, after: _Replay, window: Window) -> float | None:
    """Held GPU-hours a week saved; None when the change holds more (the cost is in the text)."""
    saved = (before.held_gpu_s - after.held_gpu_s) / 3600 / window.weeks
    return saved if saved > 0 else None


def _replay_text(before: _Replay, after: _Replay, window: Window) -> str:
    text = (
        "Replaying the recorded jobs cuts the large jobs' mean wait from "
        f"{before.large['mean_wait_s'] / 3600:.1f} h to {after.large['mean_wait_s'] / 3600:.1f} h "
        f"(smaller jobs: {before.others['mean_wait_s'] / 3600:.1f} h → "
        f"{after.others['mean_wait_s'] / 3600:.1f} h)"
    )
    extra = (after.held_gpu_s - before.held_gpu_s) / 3600 / window.weeks
    if extra > 0:
        text += f", at a cost of {extra:.0f} GPU-h a week more held for the reservations"
    return text + "."


def _size_reservation(
    att: pl.DataFrame,
    pend: pl.DataFrame,
    *,
    sim_nodes_count: int,
    gpn: int,
    partition: str,
    window: Window,
    large_gpus: float,
) -> RecurringReservation | None:
    sizes = [
        *att.filter(pl.col("gpus") >= large_gpus)["gpus"].to_list(),
        *pend.filter(pl.col("req_gpus") >= large_gpus)["req_gpus"].to_list(),
    ]
    runs = att.filter(pl.col("gpus") >= large_gpus)["run_s"].drop_nulls().to_list()
    if not sizes or gpn <= 0 or sim_nodes_count < 2:
        return None
    # The median large job's nodes, at most half the partition: the rest stays open to all.
    nodes = min(sim_nodes_count // 2, math.ceil((nearest_rank_value(sizes, 0.5) or 0) / gpn))
    run = nearest_rank_value(runs, 0.9) or 3600.0
    duration = min(float(ladder_ceil(run)), 12 * 3600.0)
    hour = _quiet_hour(att, window, large_gpus)
    day0 = window.start.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = day0 + dt.timedelta(hours=hour)
    if first < window.start:
        first += dt.timedelta(days=1)
    return RecurringReservation(
        partition=partition,
        nodes=max(1, nodes),
        first_start_s=first.timestamp(),
        duration_s=duration,
        min_gpus=int(large_gpus),
    )


def _reservation_rec(
    cluster: str,
    partition: str,
    res: RecurringReservation,
    accounts: list[str],
    window: Window,
    tz: str,
    common: dict[str, object],
    severity: str,
    confidence: float,
    before: _Replay,
    after: _Replay,
    harm: tuple[float, float] = (0.10, 600.0),
) -> Recommendation:
    trade, harmed = trade_off(before, after, window, float(res.min_gpus), *harm)
    # The next occurrence after the window, written in slurmctld's local time.
    first = dt.datetime.fromtimestamp(res.first_start_s, dt.UTC)
    periods = max(0, math.ceil((window.end - first).total_seconds() / res.period_s))
    nxt = (first + dt.timedelta(seconds=periods * res.period_s)).astimezone(ZoneInfo(tz))
    name = f"goodput-large-{partition}"
    cmd = (
        f"scontrol create reservation ReservationName={name} PartitionName={partition} "
        f"NodeCnt={res.nodes} StartTime={nxt.strftime('%Y-%m-%dT%H:%M:%S')} "
        f"Duration={slurm_duration(res.duration_s)} Flags=DAILY "
        f"Accounts={','.join(accounts) or 'root'}"
    )
    return Recommendation(
        rule=RESERVATION_RULE,
        cluster=cluster,
        scope=scope_key(cluster=cluster, partition=partition),
        severity=_capped(severity, harmed),
        window=window,
        evidence={
            **common,
            "trade_off": {**trade, "severity_uncapped": severity},
            "reservation": {
                "nodes": res.nodes,
                "duration_s": res.duration_s,
                "start_hour_utc": first.hour,
                "timezone": tz,
                "accounts": accounts,
            },
            "replay": _replay_dict(before, after, window),
        },
        change_text=(
            f"Reserve {res.nodes} nodes of partition {partition} daily for "
            f"{slurm_duration(res.duration_s)} from {nxt.strftime('%H:%M')} ({tz}) for jobs of "
            f"≥ {res.min_gpus} GPUs (accounts {', '.join(accounts)}; they submit with "
            f"--reservation={name}), on top of the backfill settings. "
            + _replay_text(before, after, window)
            + _trade_text(trade, severity, harmed)
        ),
        confidence=confidence,
        expected_gain_gpu_h_per_week=_held_gain(before, after, window),
        expected_wait_reduction_s=before.large["mean_wait_s"] - after.large["mean_wait_s"],
        patch_kind="scontrol",
        patch_content=cmd,
    )


def trade_off(
    before: _Replay,
    after: _Replay,
    window: Window,
    large_gpus: float,
    harm_rel: float = 0.10,
    harm_abs_s: float = 600.0,
) -> tuple[dict[str, object], list[str]]:
    """Who gains and who loses in the replay: per class (large jobs, smaller jobs) the mean
    and p90 wait current → proposed (and their change: seconds and ratio), held GPU-hours a
    week; and the list of harms beyond the tolerance (``"smaller jobs' p90 wait"`` …)."""
    classes: dict[str, object] = {}
    harmed: list[str] = []
    for name, cur, new in (
        ("large jobs", before.large, after.large),
        ("smaller jobs", before.others, after.others),
    ):
        row: dict[str, object] = {"jobs": cur["jobs"]}
        for stat, label in (("mean_wait_s", "mean wait"), ("p90_wait_s", "p90 wait")):
            a, b = float(cur[stat]), float(new[stat])
            row[stat] = {
                "current": a,
                "proposed": b,
                "change_s": b - a,
                "ratio": b / a if a > 0 else None,
            }
            if b - a > harm_abs_s and b > a * (1 + harm_rel):
                harmed.append(f"{name}' {label}")
        classes[name] = row
    held_a = before.held_gpu_s / 3600 / window.weeks
    held_b = after.held_gpu_s / 3600 / window.weeks
    if held_b - held_a > 1.0 and held_b > held_a * (1 + harm_rel):
        harmed.append("held GPU-hours a week")
    return (
        {
            "large_gpus": large_gpus,
            "classes": classes,
            "held_gpu_h_per_week": {"current": held_a, "proposed": held_b},
            "tolerance": {
                "relative": harm_rel,
                "absolute_wait_s": harm_abs_s,
                "absolute_gpu_h_per_week": 1.0,
            },
            "harmed": harmed,
        },
        harmed,
    )


def _capped(severity: str, harmed: list[str]) -> str:
    """Never critical when another class is worse off: capped at warning."""
    return "warning" if harmed and severity == "critical" else severity


def _fmt_change(stat: Mapping[str, object]) -> str:
    a, b = float(stat["current"]), float(stat["proposed"])  # type: ignore[arg-type]
    ratio = stat.get("ratio")
    rel = f", ×{ratio:.1f}" if isinstance(ratio, float) and ratio >= 1.5 else ""
    return f"{a / 3600:.1f} h → {b / 3600:.1f} h ({(b - a) / 3600:+.1f} h{rel})"


def _trade_text(trade: Mapping[str, object], severity: str, harmed: list[str]) -> str:
    classes = trade["classes"]
    assert isinstance(classes, Mapping)
    parts = [f"{name}' p90 wait {_fmt_change(row['p90_wait_s'])}" for name, row in classes.items()]
    text = " Trade-off: " + "; ".join(parts) + "."
    tol = trade["tolerance"]
    assert isinstance(tol, Mapping)
    if harmed and severity == "critical":
        text += (
            " Ranked warning, not critical: "
            + ", ".join(harmed)
            + f" get worse beyond the tolerance ({tol['relative']:.0%} and "
            f"{tol['absolute_wait_s'] / 60:.0f} min of wait; {tol['relative']:.0%} and "
            f"{tol['absolute_gpu_h_per_week']:g} GPU-h a week held)."
        )
    return text


def _settings_dict(s: SchedulerSettings) -> dict[str, object]:
    return {
        "bf_window_min": math.ceil(s.bf_window_s / 60),
        "bf_resolution_s": s.bf_resolution_s,
        "bf_max_job_test": s.bf_max_job_test,
        "bf_continue": s.bf_continue,
    }


def _replay_dict(before: _Replay, after: _Replay, window: Window) -> dict[str, object]:
    return {
        "large_jobs": before.large["jobs"],
        "mean_wait_s_current": before.large["mean_wait_s"],
        "mean_wait_s_proposed": after.large["mean_wait_s"],
        "p50_wait_s_current": before.large["p50_wait_s"],
        "p50_wait_s_proposed": after.large["p50_wait_s"],
        "p90_wait_s_current": before.large["p90_wait_s"],
        "p90_wait_s_proposed": after.large["p90_wait_s"],
        "other_jobs": before.others["jobs"],
        "other_mean_wait_s_current": before.others["mean_wait_s"],
        "other_mean_wait_s_proposed": after.others["mean_wait_s"],
        "held_gpu_h_per_week_current": before.held_gpu_s / 3600 / window.weeks,
        "held_gpu_h_per_week_proposed": after.held_gpu_s / 3600 / window.weeks,
        "note": "waits of jobs not started by the window end are censored there",
    }
