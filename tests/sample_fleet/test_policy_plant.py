"""The planted policy change (``goodput generate --plant-change``): a real scheduling change of
known effect that the ledger sees and the ``policy_change_impact`` estimate recovers."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from metrics.policy_impact import its_estimate
from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.sample_fleet import (
    PLANTED_CHANGE_KEY,
    PlantSpec,
    generate_planted_fleet,
    plant_kpis,
    planted_effect,
    simulate_plant,
)
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

START = dt.date(2026, 9, 1)


def test_the_spec_is_read_and_sets_the_new_bf_min_age_reserve() -> None:
    """backfill:large_p90_wait=-0.4@day30: A = 16 h = 57,600 s, D = 2.5 h = 9,000 s, so
    A' = 0.6 × 66,600 − 9,000 = 30,960 s (8.6 h): the wait A + D = 18.5 h becomes 11.1 h."""
    spec = PlantSpec.parse("backfill:large_p90_wait=-0.4@day30")
    assert (spec.setting, spec.kpi, spec.fraction, spec.day) == (
        "backfill", "large_p90_wait", -0.4, 30,
    )  # fmt: skip
    assert spec.age_after == 30960
    assert str(spec) == "backfill:large_p90_wait=-0.4@day30"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("backfill:large_p90_wait=-0.4", "expected SETTING:KPI=FRACTION@dayN"),
        ("backfill:occupancy=-0.4@day30", "unknown KPI"),
        ("backfill:large_p90_wait=0.3@day30", "not in (-1, 0)"),
    ],
)
def test_a_bad_spec_is_refused_with_the_reason(text: str, why: str) -> None:
    """Each malformed spec raises ValueError naming what is wrong."""
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        PlantSpec.parse(text)


def test_the_twin_shares_the_jobs_and_differs_only_after_the_change() -> None:
    """Same seed with and without the change: the same jobs (ids, eligible times); every
    attempt that started before the change day starts at the same time in both."""
    spec = PlantSpec.parse("backfill:large_p90_wait=-0.4@day6")
    run = simulate_plant(spec, seed=3, start=START, days=10)
    twin = simulate_plant(spec, seed=3, start=START, days=10, apply=False)
    assert [j.job_id for j in run.jobs] == [j.job_id for j in twin.jobs]
    assert run.change_at is not None
    before = [
        (a.start, b.start)
        for j, k in zip(run.jobs, twin.jobs, strict=True)
        for a, b in zip(j.attempts, k.attempts, strict=False)
        if a.start is not None and a.start < run.change_at
    ]
    assert before and all(x == y for x, y in before)
    changed = sum(
        1
        for j, k in zip(run.jobs, twin.jobs, strict=True)
        if j.attempts[0].start != k.attempts[0].start
    )
    assert changed > 0


def test_a_second_seed_is_covered_and_its_twin_is_no_placebo_hit() -> None:
    """Seed 11, 60 days, change on day 30: the 95 % interval of the ITS estimate on the large
    jobs' daily p90 wait holds the realised effect (planted − twin over the post days, about
    −40 % of the twin's level), and the same estimate on the twin (no change) is not
    significant."""
    spec = PlantSpec.parse("backfill:large_p90_wait=-0.4@day30")
    run = simulate_plant(spec, seed=11, start=START, days=60)
    twin = simulate_plant(spec, seed=11, start=START, days=60, apply=False)
    change = dt.datetime.combine(START, dt.time(), dt.UTC) + dt.timedelta(days=30)
    post = change + dt.timedelta(days=1)
    kpi = "wait_p90_h[64-255]"
    run_kpis, twin_kpis = plant_kpis(run), plant_kpis(twin)
    est = its_estimate(run_kpis.filter(pl.col("kpi") == kpi), change, transition_end=post)
    placebo = its_estimate(twin_kpis.filter(pl.col("kpi") == kpi), change, transition_end=post)
    truth = planted_effect(run_kpis, twin_kpis, kpi, post)
    assert est is not None and placebo is not None and truth is not None
    assert est.ci_low <= truth[0] <= est.ci_high
    assert -0.5 < truth[1] < -0.3
    assert placebo.p_value >= 0.05


def _build(tmp_path: Path, data: Path) -> tuple[list[tuple[object, ...]], pl.DataFrame]:
    """Ingest slurm-p's sacct and scontrol files under ``data``, rebuild; the ledger's
    ``key, old, new, actor`` and the ITS rows of ``policy_change_impact``."""
    clusters = (("slurm-p", "slurm", "UTC"),)
    cfg = load_config(write_config(tmp_path, days_dir=data, clusters=clusters))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster="slurm-p")
        for f in sorted((data / "inputs" / "slurm-p" / "sacct").glob("*.psv")):
            ingest_file(con, "sacct", f, opts)
        for f in sorted((data / "inputs" / "slurm-p" / "slurm_state").glob("*.txt")):
            ingest_file(con, "slurm-state", f, opts)
        rebuild(con, cfg)
        ledger = con.sql("SELECT key, old, new, actor FROM policy_changes").fetchall()
        impact = con.sql("SELECT * FROM policy_change_impact WHERE method = 'its'").pl()
    return ledger, impact


def test_the_bundled_fleet_shows_its_planted_change_improved(tmp_path: Path) -> None:
    """The bundled fleet's plant (seed 7, window 2026-11-02 + 14 days; slurm-p from 28 days
    before): the view's large-job p90 row says the bf_min_age_reserve cut of 2026-11-04 took
    −6.48 h off the daily p90 wait (18.11 h before, 11.00 h after; 17 and 8 days with large
    jobs), 95 % interval [−10.24, −2.71] holding the realised −7.26 h (−39.9 %) of
    planted.json, verdict ``improved``; the other KPIs show no detectable effect."""
    from pipelines.sample_fleet._policy_plant import plant_bundled
    from pipelines.sample_fleet._writers import write_registry

    data = tmp_path / "data"
    _, finding = plant_bundled(data, seed=7, start=dt.date(2026, 11, 2), days=14)
    write_registry(data / "registry.yaml")
    assert finding is not None
    assert (finding["realised_effect_h"], finding["realised_fraction"]) == (-7.258, -0.399)
    _, impact = _build(tmp_path, data)
    row = impact.filter(pl.col("kpi") == "wait_p90_h[64-255]").row(0, named=True)
    assert (row["n_pre"], row["n_post"], row["verdict"]) == (17, 8, "improved")
    assert (row["before"], row["after"], row["estimate"], row["ci_low"], row["ci_high"]) == (
        pytest.approx((18.107, 11.001, -6.478, -10.241, -2.714), abs=1e-3)
    )
    assert row["ci_low"] <= finding["realised_effect_h"] <= row["ci_high"]
    others = impact.filter(pl.col("kpi") != "wait_p90_h[64-255]")
    assert set(others["verdict"]) == {"no detectable effect"}


def test_the_pipeline_finds_the_planted_change(tmp_path: Path) -> None:
    """Seed 7 through ``goodput generate --plant-change``'s files, ingest and the rebuild: the
    ledger has the bf_min_age_reserve change 57600 → 30960 between the two snapshots (no
    actor), and ``policy_change_impact`` has its ITS row for the large jobs' p90 wait with a
    95 % interval holding the realised effect of ``planted.json`` and verdict ``improved``."""
    spec = PlantSpec.parse("backfill:large_p90_wait=-0.4@day30")
    data = tmp_path / "data"
    planted = generate_planted_fleet(data, spec, seed=7, start=START, days=60)
    assert json.loads((data / "planted.json").read_text())[PLANTED_CHANGE_KEY]["kpi"] == (
        "wait_p90_h[64-255]"
    )
    ledger, impact = _build(tmp_path, data)
    impact = impact.filter(pl.col("kpi") == "wait_p90_h[64-255]")
    assert ledger == [("SchedulerParameters:bf_min_age_reserve", "57600", "30960", None)]
    assert impact.height == 1
    row = impact.row(0, named=True)
    finding = planted[PLANTED_CHANGE_KEY]
    assert isinstance(finding, dict)
    assert row["ci_low"] <= finding["realised_effect_h"] <= row["ci_high"]
    assert row["verdict"] == "improved"
    # the first day with data: attempts of the simulation's warm-up that ran into the window
    # are in the first sacct file, from their start on 2026-08-31
    assert row["window_start"] == dt.datetime(2026, 8, 31, tzinfo=dt.UTC)
    assert row["window_end"] == dt.datetime(2026, 10, 31, tzinfo=dt.UTC)


def test_the_bundled_plant_leaves_the_other_clusters_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """7 days (the shortest window that gets the plant): every slurm-a and k8s-b file and
    every other planted finding is byte for byte what the generator writes with the plant
    switched off; the plant adds ``planted_change_backfill`` on slurm-p, cut on the window's
    third day (2026-11-04 10:00 UTC), bf_min_age_reserve 57600 → 30960."""
    from pipelines.sample_fleet import _generate, generate_sample_fleet

    start = dt.date(2026, 11, 2)
    generate_sample_fleet(tmp_path / "with", seed=7, start=start, days=7)
    monkeypatch.setattr(_generate, "plant_bundled", lambda out, **_: (0, None))
    generate_sample_fleet(tmp_path / "without", seed=7, start=start, days=7)

    def files(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and "slurm-p" not in str(p) and p.name != "planted.json"
        }

    assert files(tmp_path / "with") == files(tmp_path / "without")
    with_p = json.loads((tmp_path / "with" / "planted.json").read_text())
    without_p = json.loads((tmp_path / "without" / "planted.json").read_text())
    change = with_p.pop(PLANTED_CHANGE_KEY)
    assert with_p == without_p
    assert (change["cluster"], change["key"], change["old"], change["new"]) == (
        "slurm-p", "SchedulerParameters:bf_min_age_reserve", "57600", "30960",
    )  # fmt: skip
    assert change["changed_at_utc"] == "2026-11-04T10:00:00+00:00"
    assert change["kpi"] == "wait_p90_h[64-255]"


def test_goodput_generate_plant_change(tmp_path: Path) -> None:
    """``goodput generate --plant-change …@day5 --days 10`` writes slurm-p's 10 sacct days,
    the scontrol pair, the inventory, the registry and planted.json naming the change; a
    malformed spec exits 2 with the reason."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    runner = CliRunner()
    out = tmp_path / "p"
    spec = "backfill:large_p90_wait=-0.4@day5"
    res = runner.invoke(
        app, ["generate", "--plant-change", spec, "--days", "10", "--start", "2026-09-01",
              "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "planted_change_backfill" in res.output
    assert len(list((out / "inputs" / "slurm-p" / "sacct").glob("sacct_*.psv"))) == 10
    assert sorted(p.name for p in (out / "inputs" / "slurm-p" / "slurm_state").iterdir()) == [
        "scontrol_config_2026-09-06.txt", "scontrol_config_2026-09-07.txt",
    ]  # fmt: skip
    planted = json.loads((out / "planted.json").read_text())
    assert planted[PLANTED_CHANGE_KEY]["spec"] == spec
    assert (out / "inventory" / "slurm-p.csv").is_file() and (out / "registry.yaml").is_file()
    bad = runner.invoke(app, ["generate", "--plant-change", "backfill:x=1", "--out", str(out)])
    assert bad.exit_code == 2
    assert "expected SETTING:KPI=FRACTION@dayN" in bad.output
