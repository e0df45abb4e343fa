"""The replay counterfactual of a policy change (METRICS.md "Policy change impact", method
``replay``) and the scheduler model's ``bf_min_age_reserve``, on a hand-worked workload."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from metrics.policy_replay import replay_impact, scheduler_settings
from metrics.scheduler_model import Node, SchedulerSettings, SimJob, simulate

H = 3600.0
NODES = [Node("n1", "gpu", 8), Node("n2", "gpu", 8)]
#: A: one node for 10 h from 0; B: both nodes (16 GPUs) for 5 h, eligible at 1 h; C: one node
#: for 20 h, eligible at 2 h.
JOBS = [
    SimJob("A", "gpu", 8, 0.0, 10 * H, 10 * H),
    SimJob("B", "gpu", 16, 1 * H, 5 * H, 5 * H),
    SimJob("C", "gpu", 8, 2 * H, 20 * H, 20 * H),
]


def test_bf_min_age_reserve_0_reserves_for_the_large_job_at_once() -> None:
    """Age 0 (Slurm's default): A starts at 0 on n1. B (16 GPUs) is blocked at 1 h and gets
    its reservation on n1 + n2 at A's limit end, 10 h. C (ends 2 + 20 = 22 h > 10 h) may not
    use the reserved nodes, so it waits: A ends at 10 h, B runs 10–15 h, C starts at 15 h."""
    out = simulate(NODES, JOBS, SchedulerSettings(bf_resolution_s=1), horizon_s=48 * H).outcomes
    assert [out[j].start_s for j in "ABC"] == [0.0, 10 * H, 15 * H]
    assert out["C"].backfilled is False


def test_bf_min_age_reserve_lets_later_jobs_pass_a_young_large_job() -> None:
    """Age 6 h: B blocked at 1 h is too young for a reservation, so at 2 h C starts on the free
    n2 (backfilled) and runs to 22 h. At 7 h B comes of age (the model runs a pass then): its
    shadow is max(A's end 10 h, C's 22 h) = 22 h. B starts at 22 h: it waits 21 h instead of
    9 h, and C 0 h instead of 13 h."""
    settings = SchedulerSettings(bf_resolution_s=1, bf_min_age_reserve_s=6 * H)
    res = simulate(NODES, JOBS, settings, horizon_s=48 * H)
    out = res.outcomes
    assert [out[j].start_s for j in "ABC"] == [0.0, 22 * H, 2 * H]
    assert out["C"].backfilled is True
    first = res.reservations[0]
    assert (first.at_s, first.job_id, first.shadow_s) == (7 * H, "B", 22 * H)


def test_scheduler_settings_read_the_config_then_the_ledger_values() -> None:
    """``bf_window=2880`` minutes → 172,800 s; ``bf_min_age_reserve`` 57600 from the config is
    overridden by the ledger's 30960; an unset value (None) is Slurm's default."""
    conf = {"SchedulerParameters": "bf_interval=30,bf_window=2880,bf_min_age_reserve=57600"}
    s = scheduler_settings(conf, {"SchedulerParameters:bf_min_age_reserve": "30960"})
    assert (s.bf_window_s, s.bf_min_age_reserve_s, s.bf_max_job_test) == (172800.0, 30960.0, 500)
    d = scheduler_settings(conf, {"SchedulerParameters:bf_window": None})
    assert d.bf_window_s == 1440 * 60.0
    with pytest.raises(ValueError, match="bf_max_job_test"):
        scheduler_settings({}, {"SchedulerParameters:bf_max_job_test": "lots"})


def _at(hours: float) -> dt.datetime:
    return dt.datetime(2026, 1, 2, tzinfo=dt.UTC) + dt.timedelta(hours=hours)


def _change(key: str, old: str, new: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "change_id": ["ch1"], "cluster": ["c"], "scope": ["cluster=c"], "key": [key],
            "old": [old], "new": [new], "changed_at": [_at(-14)], "changed_after": [None],
        },
        schema_overrides={"changed_after": pl.Datetime("us", "UTC")},
    )  # fmt: skip


def _recorded() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The workload as recorded on Jan 2 after the change (age 6 h → 0): the schedule of the
    age-0 test (A 0–10 h, B 10–15 h, C 15–35 h), cut-off Jan 3 12:00 (36 h)."""
    ts = pl.Datetime("us", "UTC")
    jobs = pl.DataFrame(
        {
            "cluster": ["c"] * 3, "job_id": ["1", "2", "3"], "attempt": [0, 0, 0],
            "partition": ["gpu"] * 3, "qos": ["normal"] * 3, "gpus": [8.0, 16.0, 8.0],
            "req_gpus": [8.0, 16.0, 8.0], "eligible_at": [_at(0), _at(1), _at(2)],
            "start_at": [_at(0), _at(10), _at(15)], "end_at": [_at(10), _at(15), _at(35)],
            "timelimit_s": [10 * 3600, 5 * 3600, 20 * 3600],
        },
        schema_overrides={"eligible_at": ts, "start_at": ts, "end_at": ts},
    )  # fmt: skip
    nodes = pl.DataFrame(
        {"cluster": ["c", "c"], "host": ["n1", "n2"], "partition": ["gpu", "gpu"],
         "gpus": [8.0, 8.0]}
    )  # fmt: skip
    as_of = pl.DataFrame({"cluster": ["c"], "as_of": [_at(36)]})
    return jobs, nodes, as_of


def test_the_replay_row_is_observed_minus_replayed_under_the_old_setting() -> None:
    """Change at Jan 1 10:00 (bf_min_age_reserve 21600 → 0); post window Jan 2 00:00 to the
    cut-off Jan 3 12:00. Replayed under the old 6 h (the age-6 h test): B waits 21 h, A and C
    0 h; under the new 0 it reproduces the record (model check 0). Per KPI of Jan 2 (one
    spell in 9-63, two in 2-8; Kaplan–Meier with no censoring = nearest rank):

    - wait_p90_h[9-63]: observed 9 − replayed 21 = −12 h, ± max(floor 183.3 min = 3.055 h,
      |check| 0) → [−15.055, −8.945]: improved;
    - wait_p90_h[2-8]: observed {0, 13} → 13; replayed {0, 0} → 0: +13 h ± max(12.4 min, the
      1 h tolerance) = 1 h → [12, 14]: regressed (the small jobs pay for it);
    - wait_p50_h[2-8]: 0 − 0 = 0 ± 1 h: no detectable effect.
    """
    jobs, nodes, as_of = _recorded()
    rows = replay_impact(
        _change("SchedulerParameters:bf_min_age_reserve", "21600", "0"), jobs, nodes, as_of,
        configs={"c": {"SchedulerParameters": "bf_resolution=1"}},
    ).filter(pl.col("method") == "replay")  # fmt: skip
    got = {
        r["kpi"]: (r["after"], r["before"], r["estimate"], r["ci_low"], r["ci_high"],
                   r["verdict"], r["n_post"])
        for r in rows.iter_rows(named=True)
    }  # fmt: skip
    assert got["wait_p90_h[9-63]"] == pytest.approx(
        (9.0, 21.0, -12.0, -15.055, -8.945, "improved", 1), abs=1e-3
    )
    assert got["wait_p90_h[2-8]"] == pytest.approx(
        (13.0, 0.0, 13.0, 12.0, 14.0, "regressed", 1), abs=1e-3
    )
    assert got["wait_p50_h[2-8]"] == pytest.approx(
        (0.0, 0.0, 0.0, -1.0, 1.0, "no detectable effect", 1), abs=1e-3
    )
    first = rows.row(0, named=True)
    assert (first["change_id"], first["window_start"], first["window_end"]) == (
        "ch1", _at(0), _at(36),
    )  # fmt: skip


def test_a_job_listed_twice_is_replayed_once() -> None:
    """The same attempt twice in the input (job 2, attempt 0): replayed once, so the large
    bucket's row is the one of the hand-worked case (−12 h)."""
    jobs, nodes, as_of = _recorded()
    twice = pl.concat([jobs, jobs.filter(pl.col("job_id") == "2")])
    rows = replay_impact(
        _change("SchedulerParameters:bf_min_age_reserve", "21600", "0"), twice, nodes, as_of,
        configs={"c": {"SchedulerParameters": "bf_resolution=1"}},
    )  # fmt: skip
    row = rows.filter(pl.col("kpi") == "wait_p90_h[9-63]").row(0, named=True)
    assert row["estimate"] == pytest.approx(-12.0)


def test_a_change_the_model_cannot_represent_gets_no_replay_row() -> None:
    """PriorityWeightFairShare: the model orders jobs by QOS only, so no row."""
    jobs, nodes, as_of = _recorded()
    rows = replay_impact(_change("PriorityWeightFairShare", "10000", "5000"), jobs, nodes, as_of)
    assert rows.height == 0


def test_the_floor_is_the_documented_start_error_at_least_an_hour() -> None:
    """START_ERROR_FLOOR_H = max(median |start error| of the bucket in docs/scheduler-model.md's
    ``generator`` rows, 1 h): 1 → max(0.0 min, 60) = 1 h, 2-8 → max(12.4, 60) = 1 h, 9-63 →
    183.3 / 60 = 3.055 h, 64-255 → 256.8 / 60 = 4.28 h; read from the table, so a rerun of the
    validation that changes it shows here."""
    from metrics.policy_replay import START_ERROR_FLOOR_H
    from tests.conftest import REPO

    table = {}
    for line in (REPO / "docs" / "scheduler-model.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 5 and cells[0] == "generator" and cells[1] != "all":
            table[cells[1]] = float(cells[4])  # settings, GPUs, jobs, started, median
    assert table == {"1": 0.0, "2-8": 12.4, "9-63": 183.3, "64-255": 256.8}
    for bucket, minutes in table.items():
        assert START_ERROR_FLOOR_H[bucket] == pytest.approx(max(minutes, 60.0) / 60)
    assert START_ERROR_FLOOR_H["64-255"] == pytest.approx(4.28)


def test_a_het_job_is_replayed_and_measured_as_one_job() -> None:
    """The workload of the hand-worked case with job 2 recorded as het job 2 (2+0 and 2+1, 8
    GPUs each, both eligible 1 h, started 10 h, ended 15 h). Slurm allocates them at once, so
    they are one 16-GPU job: the replay and the KPIs are the hand-worked case's, wait_p90_h
    [9-63] observed 9 − replayed 21 = −12 h, improved. Before: two 8-GPU jobs, replayed apart
    (2+0 started at 1 h on the free n2 under the old setting), and no 9-63 row at all."""
    jobs, nodes, as_of = _recorded()
    het = jobs.filter(pl.col("job_id") == "2").with_columns(gpus=8.0, req_gpus=8.0)
    jobs = pl.concat([
        jobs.filter(pl.col("job_id") != "2"),
        het.with_columns(job_id=pl.lit("2+0")), het.with_columns(job_id=pl.lit("2+1")),
    ])  # fmt: skip
    rows = replay_impact(
        _change("SchedulerParameters:bf_min_age_reserve", "21600", "0"), jobs, nodes, as_of,
        configs={"c": {"SchedulerParameters": "bf_resolution=1"}},
    )  # fmt: skip
    got = {r["kpi"]: (r["after"], r["before"], r["estimate"], r["verdict"])
           for r in rows.iter_rows(named=True)}  # fmt: skip
    assert got["wait_p90_h[9-63]"] == pytest.approx((9.0, 21.0, -12.0, "improved"), abs=1e-3)
