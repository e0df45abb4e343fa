"""The bundled fleet's planted change closes the loop: the proposal record the generator
writes for slurm-p (a run on the data before the change) is matched by the ledger's
bf_min_age_reserve change, which ``policy_change_impact`` measures as improved."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from metrics.recommendations import recommendation_id
from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.recommendations import (
    proposal_record,
    read_inputs,
    recommendations_frame,
    write_proposals,
    write_recommendations_table,
)
from pipelines.sample_fleet._policy_plant import plant_bundled
from pipelines.sample_fleet._writers import write_registry
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

REC_ID = recommendation_id("backfill_tuning", "cluster=slurm-p/partition=gpu")


def test_the_planted_change_applies_the_earlier_proposal(tmp_path: Path) -> None:
    """Seed 7, window 2026-11-02 + 14 days (the bundled defaults): the generator writes
    proposals_2026-11-04.json (as_of 2026-11-04 00:00 UTC, patch bf_min_age_reserve=30960);
    the ledger's change 57600 → 30960 (seen between the 2026-11-04 and 2026-11-05 snapshots)
    comes after it, so the recommendation is applied by that change; its ITS row on
    wait_p90_h[64-255] says improved (test_policy_plant pins −6.48 h), so the status is
    confirmed (applied → measured → confirmed). Run again on the same data: the proposal
    record is unchanged (one row, first proposed 2026-11-04)."""
    data = tmp_path / "data"
    _, finding = plant_bundled(data, seed=7, start=dt.date(2026, 11, 2), days=14)
    assert finding is not None
    write_registry(data / "registry.yaml")
    history = data / "inputs" / "slurm-p" / "recommendations" / "proposals_2026-11-04.json"
    doc = json.loads(history.read_text())
    assert doc["as_of"] == "2026-11-04T00:00:00Z"
    assert [r["id"] for r in doc["recommendations"]] == [REC_ID]
    assert doc["recommendations"][0]["patch"]["content"].endswith("bf_min_age_reserve=30960")

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
        ((change_id,),) = con.sql(
            "SELECT change_id FROM policy_changes "
            "WHERE key = 'SchedulerParameters:bf_min_age_reserve' AND new = '30960'"
        ).fetchall()
        records = []
        for _ in range(2):
            inputs = read_inputs(con, cfg)
            frame = recommendations_frame(inputs, large_job_gpus=cfg.large_job_gpus)
            write_recommendations_table(con, frame)
            write_proposals(con, proposal_record(inputs, frame))
            records.append(
                con.sql(
                    "SELECT id, proposed_at, last_seen_at FROM analytics.recommendation_proposals "
                    "WHERE cluster = 'slurm-p' ORDER BY id"
                ).fetchall()
            )
        rows = con.execute(
            "SELECT status, change_id, proposed_at, is_current, patch_content "
            "FROM recommendations WHERE id = ?",
            [REC_ID],
        ).fetchall()
        verdict = con.execute(
            "SELECT verdict FROM policy_change_impact "
            "WHERE change_id = ? AND kpi = 'wait_p90_h[64-255]' AND method = 'its'",
            [change_id],
        ).fetchall()
    assert verdict == [("improved",)]
    ((status, cid, proposed_at, is_current, patch),) = rows
    assert (status, cid) == ("confirmed", change_id)
    assert proposed_at == dt.datetime(2026, 11, 4, tzinfo=dt.UTC)
    assert patch.endswith("bf_min_age_reserve=30960")
    assert is_current is False
    assert records[0] == records[1]
    assert [r for r in records[0] if r[0] == REC_ID] == [
        (REC_ID, dt.datetime(2026, 11, 4, tzinfo=dt.UTC), dt.datetime(2026, 11, 4, tzinfo=dt.UTC))
    ]
