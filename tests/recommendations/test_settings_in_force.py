"""The replaying rules replay the cluster's settings in force (``scontrol show config``), not
Slurm's defaults."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.recommendations import RecommendationInputs, read_inputs, recommendations_frame
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.recommendations._frames import H, pending
from tests.recommendations.test_backfill import NODES, W, _recorded, _waterfall

IN_FORCE = "bf_interval=30,bf_window=2880,bf_min_age_reserve=57600"


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> RecommendationInputs:
    """The inputs of an empty warehouse (every frame empty, with its columns)."""
    cfg = load_config(write_config(tmp_path_factory.mktemp("empty")))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        rebuild(con, cfg)
        return read_inputs(con, cfg)


def _inputs(empty: RecommendationInputs, config: dict[str, dict[str, str]]) -> RecommendationInputs:
    """test_backfill's starved 32-GPU job (small jobs asking 48 h, 20 % held) on slurm-a."""
    jobs = pl.concat([empty.jobs, _recorded(48 * H)], how="diagonal_relaxed")
    return dataclasses.replace(
        empty, as_of=W.end, window=W, schedulers={"slurm-a": "slurm"},
        jobs=jobs.select(empty.jobs.columns), pending=pending(), waterfall=_waterfall(0.2),
        nodes=NODES, slurm_config=config,
    )  # fmt: skip


def _rule(frame: pl.DataFrame, rule: str) -> dict[str, object]:
    rows = frame.filter(pl.col("rule") == rule)
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def test_settings_in_force_read_from_the_config_and_given_ones_win() -> None:
    """bf_window 2880 min, bf_min_age_reserve 57600 s from the config, the rest Slurm's
    defaults; bf_continue is a flag; settings given for a cluster replace its config's."""
    from metrics.scheduler_model import SchedulerSettings
    from pipelines.recommendations import settings_in_force

    got = settings_in_force(
        {"a": {"SchedulerParameters": IN_FORCE + ",bf_continue"}, "b": {}},
        {"b": SchedulerSettings(bf_window_s=60.0)},
    )
    assert got["a"] == SchedulerSettings(
        bf_window_s=172800.0, bf_min_age_reserve_s=57600.0, bf_continue=True
    )
    assert got["b"] == SchedulerSettings(bf_window_s=60.0)


def test_backfill_replays_the_settings_in_force(empty: RecommendationInputs) -> None:
    """With ``bf_window=2880,bf_min_age_reserve=57600`` in force the replay of "current" is that
    scheduler: the 32-GPU job (eligible at 1 h) is reserved at 17 h (16 h old), nothing starts
    after, the last of the 10 h small jobs running then (started 15 h) ends at 25 h and it
    starts: wait 24 h, not the 66.5 h of Slurm's 1440-min default. bf_window=2880 is already in
    force, so the backfill change gains nothing and is not proposed (it was, from 66.5 h to
    9 h, against the defaults); with the gain threshold off its text says 2880 min."""
    loaded = _inputs(empty, {"slurm-a": {"SchedulerParameters": IN_FORCE}})
    frame = recommendations_frame(loaded, large_job_gpus=32)
    assert "backfill_tuning" not in frame["rule"].to_list()
    forced = recommendations_frame(
        loaded, large_job_gpus=32, options={"backfill_tuning": {"min_gain_s": -1e9}}
    )
    rec = _rule(forced, "backfill_tuning")
    ev = json.loads(str(rec["evidence"]))
    assert ev["current"]["bf_window_min"] == 2880
    assert ev["replay"]["mean_wait_s_current"] == 24 * H
    assert "backfill plans only 2880 min ahead" in str(rec["change_text"])
    # The whole line in force with the backfill items set (bf_interval and the age kept).
    assert rec["patch_content"] == (
        "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=57600,"
        "bf_resolution=120,bf_max_job_test=500,bf_continue"
    )
    # The time-limit rule's replay of the recorded limits is the same scheduler: the big job's
    # 24 h and the small jobs' mean 15,225 s over 25 jobs = (86,400 + 24 × 15,225) / 25.
    tl = json.loads(str(_rule(frame, "time_limits")["evidence"]))["replay"]
    assert tl["settings"]["bf_window_s"] == 172800.0
    assert tl["settings"]["bf_min_age_reserve_s"] == 57600.0
    assert ev["replay"]["other_mean_wait_s_current"] == 15225.0
    assert tl["mean_wait_s_recorded_limits"] == (86400 + 24 * 15225) / 25


def test_without_a_config_the_defaults_are_replayed(empty: RecommendationInputs) -> None:
    """Control: no config loaded, Slurm's defaults: the big job waits 66.5 h in the replay and
    bf_window=2880 is proposed."""
    rec = _rule(recommendations_frame(_inputs(empty, {}), large_job_gpus=32), "backfill_tuning")
    assert json.loads(str(rec["evidence"]))["replay"]["mean_wait_s_current"] == 66.5 * H


def test_a_rollback_through_the_pipeline_is_the_whole_line_in_force(
    empty: RecommendationInputs,
) -> None:
    """A past proposal set bf_min_age_reserve 57600 → 84240 on slurm-a (its ledger change
    ``c1``), and the large jobs' p90 regressed. The config in force is
    ``bf_interval=30,bf_window=2880,bf_min_age_reserve=84240``: the rollback patch is that
    line with 57600 back, not ``SchedulerParameters=bf_min_age_reserve=57600`` (which, pasted,
    drops bf_interval and bf_window). No longer proposed, it would be ``info``; a rollback is
    ranked ``warning``."""
    import datetime as dt

    from pipelines.recommendations import PROPOSAL_SCHEMA

    line = "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=84240"
    t0 = W.start - dt.timedelta(days=30)
    proposals = pl.DataFrame(
        [("rec-1", "backfill_min_age_reserve", "slurm-a", "cluster=slurm-a/partition=gpu",
          "slurm.conf", line, "cut bf_min_age_reserve", t0, t0)],
        schema=PROPOSAL_SCHEMA, orient="row",
    )  # fmt: skip
    changes = pl.DataFrame(
        [("c1", "slurm-a", "slurm.conf", "SchedulerParameters:bf_min_age_reserve", "57600",
          "84240", t0 + dt.timedelta(days=1))],
        schema=dict(empty.policy_changes.schema), orient="row",
    )  # fmt: skip
    impact = pl.DataFrame(
        {"change_id": ["c1"], "kpi": ["wait_p90_h[64-255]"], "method": ["its"],
         "verdict": ["regressed"]}
    )  # fmt: skip
    inputs = dataclasses.replace(
        _inputs(empty, {"slurm-a": {"SchedulerParameters": line[len("SchedulerParameters=") :]}}),
        proposals=proposals, policy_changes=changes, impact=impact,
    )  # fmt: skip
    frame = recommendations_frame(inputs, large_job_gpus=32)
    rec = frame.filter(pl.col("id") == "rec-1").row(0, named=True)
    assert (rec["status"], rec["severity"]) == ("regressed", "warning")
    assert rec["patch_content"] == (
        "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=57600"
    )


def _preempted(empty: RecommendationInputs, config: dict[str, str]) -> RecommendationInputs:
    """40 GPU attempts on slurm-a preempted after 600 + 30 i s (i = 0…39)."""
    from tests.recommendations._frames import job, jobs

    rows = [
        job(f"p{i}", eligible=i * H, start=i * H, run=600.0 + 30 * i, state="PREEMPTED",
            qos="low")
        for i in range(40)
    ]  # fmt: skip
    frame = pl.concat([empty.jobs, jobs(rows)], how="diagonal_relaxed").select(empty.jobs.columns)
    return dataclasses.replace(
        empty, as_of=W.end, window=W, schedulers={"slurm-a": "slurm"}, jobs=frame,
        slurm_config={"slurm-a": config},
    )  # fmt: skip


def _exempt_patches(inputs: RecommendationInputs) -> list[str]:
    """The PreemptExemptTime patches proposed: the exempt finding is folded into the grace-time
    finding of the same preempted attempts (one evidence basis), as a companion patch."""
    rec = _rule(recommendations_frame(inputs), "preemption_grace_time")
    ev = json.loads(str(rec["evidence"]))
    return [c["content"] for c in ev.get("companion_patches") or []]


def test_the_preemption_rule_reads_the_exempt_time_in_force(empty: RecommendationInputs) -> None:
    """p75 run before preemption = the 30th of 40 = 600 + 30 × 29 = 1,470 s → 1,500 s
    (PreemptExemptTime=00:25:00). With 02:00:00 in force nothing is proposed (it would lower
    it); with 00:00:00 in force it is proposed and says none is set now."""
    assert _exempt_patches(_preempted(empty, {"PreemptExemptTime": "02:00:00"})) == []
    none = _preempted(empty, {"PreemptExemptTime": "00:00:00"})
    assert _exempt_patches(none) == ["PreemptExemptTime=00:25:00"]
    rec = _rule(recommendations_frame(none), "preemption_grace_time")
    views = json.loads(str(rec["evidence"]))["views"]
    exempt = next(v for v in views if v["rule"] == "preempt_exempt_time")
    assert "(PreemptExemptTime=00:25:00 (none now))" in exempt["change_text"]
