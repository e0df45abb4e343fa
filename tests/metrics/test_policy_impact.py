"""Policy change impact (METRICS.md "Policy change impact") on literal frames, hand-computed."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy import stats

from metrics.policy_impact import (
    KPI_DIRECTION,
    MDE_FACTOR,
    bundle_changes,
    change_impact,
    daily_kpis,
    did_estimate,
    its_estimate,
    newey_west_lags,
    placebo_p_value,
    slurm_duration_days,
)

UTC = dt.UTC
D0 = dt.datetime(2026, 1, 1, tzinfo=UTC)


def _day(i: int) -> dt.datetime:
    return D0 + dt.timedelta(days=i)


def _series(values: list[float], **cols: list[float]) -> pl.DataFrame:
    return pl.DataFrame(
        {"day": [_day(i) for i in range(len(values))], "value": values, **cols}
    ).with_columns(pl.col("day").dt.cast_time_unit("us"))


#: A fixed noisy series (20 days) for the pinned standard error.
NOISY = [2.1, 1.7, 2.6, 2.2, 1.5, 2.9, 2.4, 1.8, 2.0, 2.7,
         4.4, 5.3, 4.9, 4.1, 5.6, 5.0, 4.6, 5.2, 4.3, 5.5]  # fmt: skip


def test_a_step_without_noise_is_estimated_exactly() -> None:
    """y = 2 for days 0–9 and 5 for days 10–19, change on day 10 (no transition day): the
    level shift is 5 − 2 = 3 exactly, the trend 0, the standard error 0, so the MDE is 0."""
    s = _series([2.0] * 10 + [5.0] * 10)
    e = its_estimate(s, _day(10), transition_end=_day(10))
    assert e is not None
    assert e.estimate == pytest.approx(3.0, abs=1e-9)
    assert (e.n_pre, e.n_post, e.before, e.after) == (10, 10, 2.0, 5.0)
    assert e.se == 0.0 and e.mde == 0.0 and e.p_value == 0.0


def test_transition_and_washout_days_are_left_out() -> None:
    """Change on day 10 with transition to day 11 and a 2-day washout: days 10, 11, 12 are
    left out (the 99s there do not count), so the post-period is days 13–19 (7 days) and the
    step is still 3."""
    s = _series([2.0] * 10 + [99.0, 99.0, 99.0] + [5.0] * 7)
    e = its_estimate(s, _day(10), transition_end=_day(11), washout_days=2)
    assert e is not None
    assert (e.n_pre, e.n_post) == (10, 7)
    assert e.estimate == pytest.approx(3.0, abs=1e-9)


def test_too_few_days_on_a_side_gives_no_estimate() -> None:
    """6 days after the change (< MIN_DAYS = 7, a week): no estimate; 7 days: one."""
    assert its_estimate(_series([1.0] * 10 + [2.0] * 6), _day(10), transition_end=_day(10)) is None
    assert its_estimate(_series([1.0] * 10 + [2.0] * 7), _day(10), transition_end=_day(10))


def test_newey_west_lags() -> None:
    """⌊4·(60/100)^(2/9)⌋ = ⌊4·0.8925⌋ = ⌊3.57⌋ = 3; n = 100 → ⌊4⌋ = 4; n = 20 → ⌊2.8⌋ = 2."""
    assert (newey_west_lags(60), newey_west_lags(100), newey_west_lags(20)) == (3, 4, 2)


def _hand_hac_se(x: np.ndarray, y: np.ndarray, lags: int) -> float:
    """Newey–West by hand: V = (X'X)⁻¹ S (X'X)⁻¹ · n/(n−k), S = Σ_t u_t u_t' +
    Σ_l (1 − l/(L+1)) Σ_t (u_t u_{t−l}' + u_{t−l} u_t'), u_t = x_t e_t."""
    n, k = x.shape
    beta = np.linalg.solve(x.T @ x, x.T @ y)
    u = x * (y - x @ beta)[:, None]
    s = u.T @ u
    for lag in range(1, lags + 1):
        w = 1 - lag / (lags + 1)
        g = u[lag:].T @ u[:-lag]
        s += w * (g + g.T)
    inv = np.linalg.inv(x.T @ x)
    v = inv @ s @ inv * n / (n - k)
    return float(np.sqrt(v[2, 2]))


def test_hac_standard_error_matches_newey_west_by_hand_and_statsmodels() -> None:
    """The fixed 20-day series, model const + t + post: the Newey–West SE of the level shift
    by hand (2 lags, Bartlett weights, n/(n−k) correction) equals statsmodels' HAC fit; the SE
    used is the larger of it and the conventional one; the interval is estimate ±
    t(0.975, 17)·SE and MDE = 2.8·SE."""
    s = _series(NOISY)
    e = its_estimate(s, _day(10), transition_end=_day(10))
    assert e is not None
    t = np.arange(20.0)
    x = np.column_stack([np.ones(20), t, (t >= 10).astype(float)])
    y = np.array(NOISY)
    ref = sm.OLS(y, x).fit(cov_type="HAC", cov_kwds={"maxlags": 2, "use_correction": True})
    hac = _hand_hac_se(x, y, 2)
    assert hac == pytest.approx(float(ref.bse[2]), rel=1e-9)
    # conventional: sqrt(s² (X'X)⁻¹[2,2]), s² = RSS/(n − k)
    resid = y - x @ np.linalg.solve(x.T @ x, x.T @ y)
    conventional = float(np.sqrt(resid @ resid / 17 * np.linalg.inv(x.T @ x)[2, 2]))
    assert e.se == pytest.approx(max(hac, conventional), rel=1e-9)
    assert e.estimate == pytest.approx(float(ref.params[2]), rel=1e-9)
    half = stats.t.ppf(0.975, 17) * e.se
    assert (e.ci_low, e.ci_high) == pytest.approx((e.estimate - half, e.estimate + half))
    assert e.mde == pytest.approx(MDE_FACTOR * e.se)
    assert (hac, conventional) == pytest.approx((0.21679, 0.44419), abs=1e-5)


def test_covariate_explains_the_series() -> None:
    """y = 1 + 2·load exactly, no change: with the covariate the level shift is 0."""
    load = [0.1, 0.5, 0.3, 0.9, 0.2, 0.7, 0.4, 0.8, 0.6, 0.35, 0.15, 0.55, 0.25, 0.65, 0.45, 0.05]
    s = _series([1 + 2 * v for v in load], offered_load=load)
    e = its_estimate(s, _day(8), transition_end=_day(8))
    assert e is not None
    assert e.estimate == pytest.approx(0.0, abs=1e-9)


def test_a_constant_covariate_is_left_out() -> None:
    """A constant capacity is collinear with the intercept: left out, the step still 3."""
    s = _series([2.0] * 10 + [5.0] * 10, capacity_gpu_h=[64.0] * 20)
    e = its_estimate(s, _day(10), transition_end=_day(10))
    assert e is not None and e.estimate == pytest.approx(3.0, abs=1e-9)


def test_placebo_p_value_is_the_share_of_fake_dates_at_least_as_large() -> None:
    """Pre-period (16 days) nine 0s then seven 1s; without trend the fake estimate at day d
    is mean(after) − mean(before). Fake dates with 7 days each side: d = 7 → 7/9 = 0.778,
    d = 8 → 7/8 = 0.875, d = 9 → 1.0. An estimate of 0.8: 2 of 3 are ≥ 0.8 → 2/3."""
    s = _series([0.0] * 9 + [1.0] * 7 + [9.0] * 7)
    p = placebo_p_value(s, _day(16), 0.8, covariates=(), trend=False)
    assert p == pytest.approx(2 / 3)
    assert placebo_p_value(s, _day(16), 1.5, covariates=(), trend=False) == 0.0


def test_did_is_the_shift_of_the_treated_minus_the_controls() -> None:
    """Controls: two clusters 1,2,3,… and 3,4,5,… (mean 2,3,4,…); treated = control mean + 0
    before day 21 and + 4 from day 21: DiD = 4 exactly. Leads: the pre-period difference is
    all 0, so the joint test of 3 weekly leads has no variation: its p-value is undefined."""
    n = 30
    ctrl = pl.concat(
        [
            _series([float(i + 1) for i in range(n)]),
            _series([float(i + 3) for i in range(n)]),
        ]
    )
    treated = _series([float(i + 2) + (4.0 if i >= 21 else 0.0) for i in range(n)])
    res = did_estimate(treated, ctrl, _day(21), transition_end=_day(21))
    assert res is not None
    est, _leads = res
    assert est.estimate == pytest.approx(4.0, abs=1e-9)
    assert (est.n_pre, est.n_post) == (21, 9)


def test_slurm_durations() -> None:
    """7-00:00:00 = 7 days; 14:00:00 = 14/24; 30 (minutes) = 30/1440; 1-12 = 1.5 days."""
    assert slurm_duration_days("7-00:00:00") == 7.0
    assert slurm_duration_days("14:00:00") == pytest.approx(14 / 24)
    assert slurm_duration_days("30") == pytest.approx(30 / 1440)
    assert slurm_duration_days("1-12") == pytest.approx(1.5)
    assert slurm_duration_days("forever") is None


def _changes(rows: list[tuple[str, str, str, dt.datetime, dt.datetime | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        [(cid, c, "config", key, t, a) for cid, c, key, t, a in rows],
        schema={
            "change_id": pl.String(), "cluster": pl.String(), "scope": pl.String(),
            "key": pl.String(), "changed_at": pl.Datetime("us", "UTC"),
            "changed_after": pl.Datetime("us", "UTC"),
        },
        orient="row",
    )  # fmt: skip


def test_changes_less_than_a_week_apart_on_one_cluster_are_one_bundle() -> None:
    """c1 on day 10 12:00 and c2 on day 12 are 2 days apart (< 7): one bundle from day 10 to
    day 13 (the midnight after c2); c3 on day 30 is its own; c4 on another cluster its own.
    c1 is a RawShares change: its bundle acts through fair share."""
    ch = _changes(
        [
            ("c1", "a", "RawShares", _day(10) + dt.timedelta(hours=12), None),
            ("c2", "a", "SchedulerParameters:bf_window", _day(12), _day(11)),
            ("c3", "a", "SchedulerParameters:bf_window", _day(30), None),
            ("c4", "b", "PriorityWeightAge", _day(12), None),
        ]
    )
    b = bundle_changes(ch).sort("change_id")
    ids = b["bundle_id"].to_list()
    assert ids[0] == ids[1] and len(set(ids)) == 3
    assert b["bundle_from"][0] == _day(10) and b["bundle_to"][0] == _day(13)
    assert b["fair_share"].to_list() == [True, True, False, False]


def test_change_impact_finds_a_planted_wait_cut_as_improved() -> None:
    """Cluster a: large-job p90 wait 10 h for 20 days, 6 h from day 21 (change on day 20,
    transition to day 21). Cluster b (untouched) stays at 8 h. ITS: −4 h, improved; DiD:
    (6 − 8) − (10 − 8) = −4 h."""
    rows = []
    for i in range(40):
        va = 10.0 if i < 20 else (6.0 if i >= 21 else 8.0)
        rows.append(("a", _day(i), "wait_p90_h[9-63]", "h", va, 0.5, 1536.0))
        rows.append(("b", _day(i), "wait_p90_h[9-63]", "h", 8.0 + (i % 2) * 0.0, 0.5, 1536.0))
    kpis = pl.DataFrame(
        rows,
        schema=["cluster", "day", "kpi", "unit", "value", "offered_load", "capacity_gpu_h"],
        orient="row",
    ).with_columns(pl.col("day").dt.cast_time_unit("us"))
    ch = _changes(
        [("c1", "a", "SchedulerParameters:bf_window", _day(20) + dt.timedelta(hours=9), None)]
    )
    out = change_impact(ch, kpis)
    its = out.filter(pl.col("method") == "its").row(0, named=True)
    assert its["estimate"] == pytest.approx(-4.0, abs=1e-9)
    assert (its["n_pre"], its["n_post"], its["verdict"]) == (20, 19, "improved")
    assert its["before"] == 10.0 and its["after"] == 6.0


def test_daily_kpis_wait_percentiles_occupancy_and_offered_load() -> None:
    """Day 1: three 4-GPU attempts eligible 00:00, started after 1, 2 and 3 h, each running
    1 h: KM p50 = 2 h, p90 = 3 h (nothing censored, bucket 2-8). Occupancy: 2 hours of 64
    GPUs (460,800 GPU-s available) with 3·4·3600 = 43,200 allocated → 0.09375. Offered load:
    3·4 GPU-h = 12 GPU-h of work ÷ 128 available GPU-h = 0.09375."""
    t = D0
    jobs = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "team": ["x"] * 3,
            "gpus": [4.0] * 3,
            "req_gpus": [4.0] * 3,
            "eligible_at": [t] * 3,
            "start_at": [t + dt.timedelta(hours=h) for h in (1, 2, 3)],
            "end_at": [t + dt.timedelta(hours=h + 1) for h in (1, 2, 3)],
            "run_s": [3600.0] * 3,
            "timelimit_s": [7200.0] * 3,
        }
    ).with_columns(pl.col(c).dt.cast_time_unit("us") for c in ("eligible_at", "start_at", "end_at"))
    occ = pl.DataFrame(
        {
            "cluster": ["c", "c"], "hour": [t, t + dt.timedelta(hours=1)],
            "capacity_gpu_s": [230400.0] * 2, "down_gpu_s": [0.0] * 2,
            "planned_down_gpu_s": [0.0] * 2, "allocated_gpu_s": [14400.0, 28800.0],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [t + dt.timedelta(days=1)]})
    out = daily_kpis(jobs, occ, as_of)
    got = dict(zip(out["kpi"], out["value"], strict=True))
    assert got == {
        "occupancy": pytest.approx(0.09375),
        "wait_p50_h[2-8]": pytest.approx(2.0),
        "wait_p90_h[2-8]": pytest.approx(3.0),
    }
    assert out["offered_load"].unique().to_list() == [pytest.approx(0.09375)]
    assert out["capacity_gpu_h"].unique().to_list() == [128.0]


def _no_jobs() -> pl.DataFrame:
    """An empty ``jobs`` frame with the columns daily_kpis reads."""
    return pl.DataFrame(
        schema={
            "cluster": pl.String(), "team": pl.String(), "gpus": pl.Float64(),
            "req_gpus": pl.Float64(), "eligible_at": pl.Datetime("us", "UTC"),
            "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC"),
            "run_s": pl.Float64(), "timelimit_s": pl.Float64(),
        }
    )  # fmt: skip


def test_daily_kpis_of_no_jobs_is_an_empty_frame() -> None:
    """No jobs and no occupancy hours: no KPI rows (not an error)."""
    jobs = _no_jobs()
    occ = pl.DataFrame(
        schema={
            "cluster": pl.String(), "hour": pl.Datetime("us", "UTC"),
            "capacity_gpu_s": pl.Float64(), "down_gpu_s": pl.Float64(),
            "planned_down_gpu_s": pl.Float64(), "allocated_gpu_s": pl.Float64(),
        }
    )  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [D0]})
    assert daily_kpis(jobs, occ, as_of).height == 0


def test_change_impact_publishes_did_when_the_leads_show_no_pre_trend() -> None:
    """Cluster b (untouched) runs 5, 6, 5, 6, …; cluster a = b + d with d = +0.5, −0.5, …
    for days 0–27 and 4 ± 0.5 from day 29 (change on day 28 at 09:00, transition to day 29).
    DiD without trend is mean(d after) − mean(d before) = 4 − 0 = 4 h exactly (14 post days,
    an even number of ±0.5). The three weekly leads before the change each average 0, so the
    F-test finds no pre-trend and the ``did`` row is published (a wait up: regressed)."""
    rows = []
    for i in range(43):
        wiggle = 0.5 if i % 2 == 0 else -0.5
        vb = 5.0 + (i % 2)
        da = wiggle + (4.0 if i >= 29 else 0.0)
        rows.append(("a", _day(i), "wait_p90_h[9-63]", "h", vb + da, 0.5, 1536.0))
        rows.append(("b", _day(i), "wait_p90_h[9-63]", "h", vb, 0.5, 1536.0))
    kpis = pl.DataFrame(
        rows,
        schema=["cluster", "day", "kpi", "unit", "value", "offered_load", "capacity_gpu_h"],
        orient="row",
    ).with_columns(pl.col("day").dt.cast_time_unit("us"))
    at = _day(28) + dt.timedelta(hours=9)
    out = change_impact(_changes([("c1", "a", "SchedulerParameters:bf_window", at, None)]), kpis)
    did = out.filter(pl.col("method") == "did").row(0, named=True)
    assert did["estimate"] == pytest.approx(4.0, abs=1e-9)
    assert (did["n_pre"], did["n_post"], did["verdict"]) == (28, 14, "regressed")
    assert did["placebo_p"] is None


def test_daily_kpis_from_the_waterfall_the_stranded_split_and_fair_shares() -> None:
    """One day of cluster c, two hours (GPU-seconds):

    - waterfall h0: goodput 7,200, preempted_work 3,600, allocated_idle 1,800,
      failed_work_user 1,800, held 7,200, idle 1,000; h1: goodput 3,600, held 3,600.
    - held for gangs (the ``held`` rows' ``gang_gpu_s``, on the time axis): h0 5,400, h1
      3,600; both hours have a gang level (a stranded row).
    - fair shares: team a U 3,600 + 3,600, F 7,200 + 1,800; team b U 7,200, F 3,600; team z
      no demand.

    held_for_gangs = 5,400 + 3,600 = 9,000 GPU-s = 2.5 GPU-h;
    preemption loss = 3,600 GPU-s = 1.0 GPU-h; goodput ratio = (7,200 + 3,600) ÷ (7,200 +
    3,600 + 1,800 + 1,800 + 3,600) = 10,800 ÷ 18,000 = 0.6; entitlement ratios a = 7,200 ÷
    9,000 = 0.8, b = 7,200 ÷ 3,600 = 2.0 (z left out: no demand) → min 0.8."""
    h0, h1 = D0, D0 + dt.timedelta(hours=1)
    leaves = [
        (h0, "goodput", 7200.0), (h0, "preempted_work", 3600.0), (h0, "allocated_idle", 1800.0),
        (h0, "failed_work_user", 1800.0), (h0, "held", 7200.0), (h0, "idle", 1000.0),
        (h1, "goodput", 3600.0), (h1, "held", 3600.0),
    ]  # fmt: skip
    waterfall = pl.DataFrame(
        {
            "cluster": ["c"] * len(leaves),
            "hour": [x[0] for x in leaves],
            "bucket": [x[1] for x in leaves],
            "gpu_s": [x[2] for x in leaves],
            "gang_gpu_s": [
                {(h0, "held"): 5400.0, (h1, "held"): 3600.0}.get((x[0], x[1]), 0.0) for x in leaves
            ],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    stranded = pl.DataFrame({"cluster": ["c", "c"], "hour": [h0, h1]}).with_columns(
        pl.col("hour").dt.cast_time_unit("us")
    )
    fair = pl.DataFrame(
        {
            "pool": ["c"] * 4, "hour": [h0, h0, h0, h1], "team": ["a", "b", "z", "a"],
            "usage_gpu_s": [3600.0, 7200.0, 0.0, 3600.0],
            "demand_gpu_s": [7200.0, 7200.0, 0.0, 3600.0],
            "fair_gpu_s": [7200.0, 3600.0, 0.0, 1800.0],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    jobs = _no_jobs()
    occ = pl.DataFrame(
        {
            "cluster": ["c", "c"], "hour": [h0, h1], "capacity_gpu_s": [14400.0, 14400.0],
            "down_gpu_s": [0.0, 0.0], "planned_down_gpu_s": [0.0, 0.0],
            "allocated_gpu_s": [14400.0, 3600.0],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [D0 + dt.timedelta(days=1)]})
    out = daily_kpis(jobs, occ, as_of, waterfall=waterfall, stranded=stranded, fair_hourly=fair)
    got = {k: (u, v) for k, u, v in out.select("kpi", "unit", "value").iter_rows()}
    assert got == {
        "occupancy": ("ratio", pytest.approx(18000 / 28800)),
        "held_for_gangs_gpu_h": ("GPU-h", pytest.approx(2.5)),
        "preemption_loss_gpu_h": ("GPU-h", pytest.approx(1.0)),
        "goodput_ratio": ("ratio", pytest.approx(0.6)),
        "entitlement_ratio_min": ("ratio", pytest.approx(0.8)),
    }
    # Without a gang level (no stranded rows) there is no held-for-gangs figure, not a 0.
    bare = daily_kpis(jobs, occ, as_of, waterfall=waterfall)
    assert "held_for_gangs_gpu_h" not in bare["kpi"].to_list()


def test_new_kpis_have_a_direction() -> None:
    """Lower held-for-gangs GPU-hours and preemption loss are better; a higher worst-served
    team's entitlement ratio and goodput ratio are better."""
    assert {k: KPI_DIRECTION[k] for k in (
        "held_for_gangs_gpu_h", "preemption_loss_gpu_h", "entitlement_ratio_min", "goodput_ratio"
    )} == {
        "held_for_gangs_gpu_h": -1, "preemption_loss_gpu_h": -1,
        "entitlement_ratio_min": 1, "goodput_ratio": 1,
    }  # fmt: skip


def test_a_kpi_that_never_varies_on_a_cluster_is_left_out() -> None:
    """Two days, goodput 3,600 GPU-s each day and no preempted work: the goodput ratio is 1.0 on
    both days and preemption loss 0.0 on both, so neither has rows; occupancy (3,600 ÷ 14,400 =
    0.25 on day 0, 7,200 ÷ 14,400 = 0.5 on day 1) varies and stays."""
    days = [D0, D0 + dt.timedelta(days=1)]
    waterfall = pl.DataFrame(
        {"cluster": ["c", "c"], "hour": days, "bucket": ["goodput"] * 2, "gpu_s": [3600.0] * 2}
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    occ = pl.DataFrame(
        {
            "cluster": ["c", "c"], "hour": days, "capacity_gpu_s": [14400.0] * 2,
            "down_gpu_s": [0.0] * 2, "planned_down_gpu_s": [0.0] * 2,
            "allocated_gpu_s": [3600.0, 7200.0],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [D0 + dt.timedelta(days=2)]})
    out = daily_kpis(_no_jobs(), occ, as_of, waterfall=waterfall)
    assert out.select("kpi", "value").rows() == [("occupancy", 0.25), ("occupancy", 0.5)]


def _did_kpis(shift_q: float) -> pl.DataFrame:
    """Clusters c and q run 5, 6, 5, 6, …, q lower by ``shift_q`` from day 29 (an unrecorded
    change of its own); a = c + d with d = −0.5, +0.5, … (no change of its own)."""
    rows = []
    for i in range(43):
        vb = 5.0 + (i % 2)
        d = -0.5 if i % 2 == 0 else 0.5
        rows.append(("a", _day(i), "wait_p90_h[9-63]", "h", vb + d, 0.5, 1536.0))
        rows.append(("c", _day(i), "wait_p90_h[9-63]", "h", vb, 0.5, 1536.0))
        q = vb - (shift_q if i >= 29 else 0.0)
        rows.append(("q", _day(i), "wait_p90_h[9-63]", "h", q, 0.5, 1536.0))
    return pl.DataFrame(
        rows,
        schema=["cluster", "day", "kpi", "unit", "value", "offered_load", "capacity_gpu_h"],
        orient="row",
    ).with_columns(pl.col("day").dt.cast_time_unit("us"))


def test_a_control_with_a_shift_of_its_own_is_left_out_of_the_did() -> None:
    """Cluster a's recorded change on day 28 did nothing; control q's waits fell 4 h from day
    29 (unrecorded). Against the mean of c and q the difference would rise 4 ÷ 2 = 2 h
    ("regressed", q's cut with its sign flipped). q's own ITS at day 28 is a −4 h step (p far
    below 0.05), so q is no control: against c alone d = ∓0.5 before and after, DiD =
    mean(d after) − mean(d before) = 0 − 0 = 0 (14 and 28 days, even counts)."""
    kpis = _did_kpis(4.0)
    at = _day(28) + dt.timedelta(hours=9)
    out = change_impact(_changes([("c1", "a", "SchedulerParameters:bf_window", at, None)]), kpis)
    did = out.filter(pl.col("method") == "did").row(0, named=True)
    assert did["estimate"] == pytest.approx(0.0, abs=1e-9)
    assert did["verdict"] == "no detectable effect"
    from metrics.policy_impact import clean_controls

    ctrl = kpis.filter(pl.col("cluster") != "a")
    kept = clean_controls(ctrl, _day(28), transition_end=_day(29))
    assert kept["cluster"].unique().to_list() == ["c"]
    # Control: with q unshifted both controls are kept and the DiD is still 0.
    same = change_impact(
        _changes([("c1", "a", "SchedulerParameters:bf_window", at, None)]), _did_kpis(0.0)
    )
    assert same.filter(pl.col("method") == "did")["estimate"][0] == pytest.approx(0.0, abs=1e-9)


def test_holm_adjusted_p_values_by_hand() -> None:
    """Holm 1979: p sorted 0.01, 0.03, 0.04 → × 3, × 2, × 1 = 0.03, 0.06, 0.04, made
    non-decreasing → 0.03, 0.06, 0.06, back in the input order."""
    from metrics.policy_impact import holm_adjust

    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjust([]) == []


#: A weekly pattern for the multiplicity test.
WEEK = [0.3, -0.2, 0.5, -0.4, 0.1, -0.3, 0.2]


def _three_kpis(kpis: tuple[str, ...]) -> pl.DataFrame:
    """Cluster a, 42 days of :data:`WEEK`; ``wait_p90_h[1]`` 0.4 higher from day 21."""
    rows = []
    for i in range(42):
        for k in kpis:
            v = WEEK[i % 7] + (0.4 if k == "wait_p90_h[1]" and i >= 21 else 0.0)
            rows.append(("a", _day(i), k, "h", v, 0.5, 1536.0))
    return pl.DataFrame(
        rows,
        schema=["cluster", "day", "kpi", "unit", "value", "offered_load", "capacity_gpu_h"],
        orient="row",
    ).with_columns(pl.col("day").dt.cast_time_unit("us"))


def test_verdicts_are_holm_adjusted_over_the_bundles_kpis() -> None:
    """One KPI of three moves (p = 0.0184 alone, "regressed" at 5 %); the bundle tests three
    KPIs, so its Holm-adjusted p is 3 × 0.0184 = 0.0552 ≥ 0.05: no detectable effect. Alone
    (a bundle with that one KPI) it stays regressed. ``p_value`` is the unadjusted one."""
    ch = _changes([("c1", "a", "SchedulerParameters:bf_window", _day(20), None)])
    three = change_impact(ch, _three_kpis(("jain", "occupancy", "wait_p90_h[1]")))
    row = three.filter(pl.col("kpi") == "wait_p90_h[1]").row(0, named=True)
    assert row["p_value"] == pytest.approx(0.0184, abs=5e-5)
    assert row["verdict"] == "no detectable effect"
    alone = change_impact(ch, _three_kpis(("wait_p90_h[1]",))).row(0, named=True)
    assert alone["p_value"] == pytest.approx(0.0184, abs=5e-5)
    assert alone["verdict"] == "regressed"


def test_daily_kpis_count_a_het_job_once_with_its_summed_gpus() -> None:
    """Day 1, every job eligible 00:00 and running 1 h: job 7 asks 64 GPUs and starts at 01:00;
    het job 5 (components 5+0 and 5+1, 48 GPUs each) starts both at 02:00. The het job is one
    spell of 96 GPUs (64-255) of 2 h, so 64-255 holds 1 h and 2 h (no censoring): KM S(1 h) =
    1/2, p50 = 1 h, p90 = 2 h. Before: two spells of 48 GPUs in 9-63 (p50 = p90 = 2 h) and
    job 7 alone in 64-255 (p50 = p90 = 1 h)."""
    t = D0
    jobs = pl.DataFrame(
        {
            "cluster": ["c"] * 3, "job_id": ["7", "5+0", "5+1"], "team": ["x"] * 3,
            "gpus": [64.0, 48.0, 48.0], "req_gpus": [64.0, 48.0, 48.0],
            "eligible_at": [t] * 3,
            "start_at": [t + dt.timedelta(hours=h) for h in (1, 2, 2)],
            "end_at": [t + dt.timedelta(hours=h + 1) for h in (1, 2, 2)],
            "run_s": [3600.0] * 3, "timelimit_s": [7200.0] * 3,
        }
    ).with_columns(pl.col("eligible_at", "start_at", "end_at").dt.cast_time_unit("us"))  # fmt: skip
    occ = pl.DataFrame(
        {"cluster": ["c"], "hour": [t], "capacity_gpu_s": [512 * 3600.0], "down_gpu_s": [0.0],
         "planned_down_gpu_s": [0.0], "allocated_gpu_s": [0.0]}
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [t + dt.timedelta(days=1)]})
    out = daily_kpis(jobs, occ, as_of).filter(pl.col("kpi").str.starts_with("wait_"))
    assert dict(zip(out["kpi"], out["value"], strict=True)) == {
        "wait_p50_h[64-255]": pytest.approx(1.0),
        "wait_p90_h[64-255]": pytest.approx(2.0),
    }


def test_daily_kpis_count_a_pending_het_job_once() -> None:
    """Day 1: job 7 (64 GPUs) eligible 00:00, started 01:00; het job 5 (48 + 48 GPUs) pending
    since 00:00 with the cut-off at 04:00: one censored spell of 96 GPUs at 4 h beside job 7's
    1 h start in 64-255: S(1 h) = 1/2, p50 = 1 h; p90 never reached (left out). Before: two
    censored 48-GPU spells in 9-63 (no percentile) and job 7 alone: p50 = p90 = 1 h."""
    t = D0
    us = pl.Datetime("us", "UTC")
    jobs = pl.DataFrame(
        {"cluster": ["c"], "job_id": ["7"], "team": ["x"], "gpus": [64.0], "req_gpus": [64.0],
         "eligible_at": [t], "start_at": [t + dt.timedelta(hours=1)],
         "end_at": [t + dt.timedelta(hours=2)], "run_s": [3600.0], "timelimit_s": [7200.0]},
        schema_overrides={"eligible_at": us, "start_at": us, "end_at": us},
    )  # fmt: skip
    pending = pl.DataFrame(
        {"cluster": ["c", "c"], "job_id": ["5+0", "5+1"], "req_gpus": [48.0, 48.0],
         "eligible_at": [t, t], "end_at": [None, None]},
        schema_overrides={"eligible_at": us, "end_at": us},
    )  # fmt: skip
    occ = pl.DataFrame(
        {"cluster": ["c"], "hour": [t], "capacity_gpu_s": [512 * 3600.0], "down_gpu_s": [0.0],
         "planned_down_gpu_s": [0.0], "allocated_gpu_s": [0.0]}
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [t + dt.timedelta(hours=4)]})
    out = daily_kpis(jobs, occ, as_of, pending=pending)
    out = out.filter(pl.col("kpi").str.starts_with("wait_"))
    assert dict(zip(out["kpi"], out["value"], strict=True)) == {
        "wait_p50_h[64-255]": pytest.approx(1.0)
    }
