"""A ``replay`` effect (METRICS.md "Policy change impact") beside the ITS one in the Changes
page's and the report's effects table (:func:`pipelines.report.changes.effects_table`)."""

from __future__ import annotations

import polars as pl

from pipelines.report.changes import effects_table, kpi_label
from tests.dashboards import changes_db
from tests.report.test_weekly_changes import _IMPACT_COLS, _effects, _ledger


def test_the_replay_row_sits_beside_the_its_row_of_its_kpi() -> None:
    """The bundle c2+c3's large-job p90: ITS −3.00 h improved; the replay −2.50 h with a
    ± 4.28 h model bound ([−6.78, +1.78]), no detectable effect. Sorted by the best verdict of
    the change's rows on that KPI (improved), the replay row follows its ITS row, after c1's
    jain (improved; its "Change" text sorts first) and ahead of the bundle's occupancy (no
    detectable effect); without the grouping it would fall behind them. Its "Enough data?"
    gives the bound: (1.78 − (−6.78)) / 2 = 4.28 h, over the window 03-10 → 03-17 06:00 =
    6.75 days, rounded to 7: "a week"."""
    base = changes_db.IMPACT[2]
    replay = [
        (cid, "b2", "slurm-a", "config", "wait_p90_h[64+]", "replay", base[6], base[7], None, 7,
         "h", 9.5, 7.0, -2.5, -6.78, 1.78, None, None, None, "no detectable effect")
        for cid in ("c2", "c3")
    ]  # fmt: skip
    effects = pl.concat(
        [_effects(), pl.DataFrame([dict(zip(_IMPACT_COLS, r, strict=True)) for r in replay])],
        how="vertical_relaxed",
    )
    got = effects_table(effects, _ledger())
    assert got is not None
    rows = got.select("KPI", "Method", "Effect (95 % CI)", "Verdict", "Enough data?").rows()
    p90 = kpi_label("wait_p90_h[64+]")  # "p90 time to start, 64+ GPUs"
    assert [r[:2] for r in rows] == [
        (kpi_label("jain"), "its"), (p90, "its"), (p90, "replay"), (kpi_label("occupancy"), "its"),
    ]  # fmt: skip
    assert rows[2] == (
        p90, "replay", "-2.50 h (95 % CI -6.78 to +1.78)", "no detectable effect",
        "replay over a week: model error ± 4.28 h",
    )  # fmt: skip
