"""The bundled fleet's planted change measured by the replay counterfactual
(``policy_change_impact`` method ``replay``, METRICS.md "Policy change impact")."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config


def test_the_planted_change_gets_a_replay_row_covering_its_effect(tmp_path: Path) -> None:
    """Seed 7, window 2026-11-02 + 14 days, slurm-p from 28 days before; bf_min_age_reserve
    57600 → 30960 between the snapshots of 2026-11-04 and -05 00:05, so the post window runs
    from 2026-11-06 00:00 to the cut-off. The post window's jobs replayed under the old
    57600 s give the large jobs (64 GPUs) a mean daily p90 wait of 18.18 h over the 7 days
    with large jobs, against 10.92 h observed: estimate 10.92 − 18.18 = −7.26 h, interval
    ± max(floor 256.8 min = 4.28 h, |model check|) = [−11.54, −2.98], verdict ``improved``;
    it holds planted.json's realised −7.258 h. The small jobs' p90 (2-8 GPUs) shows the price,
    +0.45 h, inside the 1 h floor: no detectable effect."""
    from pipelines.sample_fleet._policy_plant import plant_bundled
    from pipelines.sample_fleet._writers import write_registry

    data = tmp_path / "data"
    _, finding = plant_bundled(data, seed=7, start=dt.date(2026, 11, 2), days=14)
    write_registry(data / "registry.yaml")
    assert finding is not None
    cfg = load_config(
        write_config(tmp_path, days_dir=data, clusters=(("slurm-p", "slurm", "UTC"),))
    )
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster="slurm-p")
        for f in sorted((data / "inputs" / "slurm-p" / "sacct").glob("*.psv")):
            ingest_file(con, "sacct", f, opts)
        for f in sorted((data / "inputs" / "slurm-p" / "slurm_state").glob("*.txt")):
            ingest_file(con, "slurm-state", f, opts)
        rebuild(con, cfg)
        replay = con.sql("SELECT * FROM policy_change_impact WHERE method = 'replay'").pl()
        its = con.sql("SELECT kpi FROM policy_change_impact WHERE method = 'its'").pl()
    assert set(replay["kpi"]) <= set(its["kpi"])
    row = replay.filter(pl.col("kpi") == "wait_p90_h[64-255]").row(0, named=True)
    assert (row["window_start"], row["n_post"], row["verdict"]) == (
        dt.datetime(2026, 11, 6, tzinfo=dt.UTC), 7, "improved",
    )  # fmt: skip
    assert (row["before"], row["after"], row["estimate"], row["ci_low"], row["ci_high"]) == (
        pytest.approx((18.178, 10.921, -7.258, -11.538, -2.978), abs=1e-3)
    )
    assert row["ci_high"] - row["estimate"] == pytest.approx(256.8 / 60)
    assert row["ci_low"] <= finding["realised_effect_h"] <= row["ci_high"] < 0
    small = replay.filter(pl.col("kpi") == "wait_p90_h[2-8]").row(0, named=True)
    assert (small["estimate"], small["verdict"]) == (
        pytest.approx(0.446, abs=1e-3), "no detectable effect",
    )  # fmt: skip


def _generator_starts(steps: list[tuple[int, int]]) -> list[float]:
    """The sample fleet's Slurm scheduler on two 8-GPU nodes: A (8 GPUs, 10 h) at 0, B (16
    GPUs, 5 h) at 1 h, C (8 GPUs, 20 h) at 2 h, each with a limit of its run + 60 s (the job
    factory cuts a run to limit − 60 s); the attempts' starts in hours from 0."""
    import random

    from pipelines.sample_fleet._model import TEAMS, ClusterSpec, NodeSpec
    from pipelines.sample_fleet._slurm_sim import _JobFactory, _Scheduler

    h = 3600
    nodes = tuple(NodeSpec(f"n{i}", 8, "a100", "gpu", "r1", 128, i - 1) for i in (1, 2))
    rng = random.Random("bf_min_age_reserve")
    uids = {u: 1001 + i for i, u in enumerate(u for t in TEAMS for u in t.users)}
    factory = _JobFactory(rng, uids, first_id=1)
    t0 = 1_800_000_000 // h * h
    done = ("COMPLETED", 0, 0, None, "", 0.0, 0)
    jobs = [
        factory.gpu_job(t0 + at, TEAMS[0], "gpu", gpus, run, qos="normal", limit=run + 60,
                        outcome=(*done[:2], run, *done[3:]))  # type: ignore[arg-type]
        for at, gpus, run in ((0, 8, 10 * h), (h, 16, 5 * h), (2 * h, 8, 20 * h))
    ]  # fmt: skip
    sched = _Scheduler(
        rng, ClusterSpec("t", "slurm", "UTC", nodes), t0, t0 + 3 * 86400,
        bf_min_age_reserve=[(t0 + since, age) for since, age in steps],
    )  # fmt: skip
    sched.run(jobs, [], [])
    return [(j.attempts[0].start - t0) / h for j in jobs if j.attempts[0].start is not None]


def test_the_generators_bf_min_age_reserve_setting_on_a_hand_worked_schedule() -> None:
    """No setting (Slurm's 0): B is blocked at 1 h and reserved at once, C (2 h + 20 h > A's
    end) may not pass it: A 0 h, B 10 h (A ends), C 15 h (B ends). bf_min_age_reserve = 6 h
    from 0: B gets no reservation before 7 h, C starts on the free node at 2 h and B waits for
    both nodes until C ends at 22 h. Set to 6 h only from 3 h on: at 1–2 h the setting is 0,
    so B is reserved when C arrives: the first schedule again (the setting applies from its
    time on, as the planted change uses it)."""
    assert _generator_starts([]) == [0.0, 10.0, 15.0]
    assert _generator_starts([(0, 6 * 3600)]) == [0.0, 22.0, 2.0]
    assert _generator_starts([(0, 0), (3 * 3600, 6 * 3600)]) == [0.0, 10.0, 15.0]
