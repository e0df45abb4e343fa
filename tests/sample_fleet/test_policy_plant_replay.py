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
