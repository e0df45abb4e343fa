"""The proposal record (sql/README.md ``recommendation_proposals``, METRICS.md "Recommendation
status"): a recommendation proposed in one run keeps its first proposal time, and a ledger
change in a later run, after the finding is gone, still applies it; hand-written rows."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.config import Config, load_config
from pipelines.recommendations import (
    PROPOSAL_HISTORY_SOURCE,
    PROPOSAL_SCHEMA,
    merge_proposals,
    proposal_history_files,
    proposals_of,
    read_proposal_history,
    record_proposal_rejects,
    with_history,
    write_outputs,
    write_proposals,
)
from pipelines.warehouse import connect, run_named
from tests.conftest import write_config
from tests.recommendations.test_life import _changes, _impact, _recs

UTC = dt.UTC
T1 = dt.datetime(2026, 3, 10, tzinfo=UTC)  # run 1's data cut-off
T2 = dt.datetime(2026, 3, 20, tzinfo=UTC)  # run 2's
T3 = dt.datetime(2026, 3, 30, tzinfo=UTC)  # run 3's
AGE = "SchedulerParameters=bf_min_age_reserve=3600"
KEY = "SchedulerParameters:bf_min_age_reserve"


def _run1() -> pl.DataFrame:
    """Run 1 proposes rec-bf (evidence window from W0 = 2026-03-01) and rec-fs."""
    return _recs(
        ("rec-bf", "backfill_tuning", "c1", "slurm.conf", AGE),
        ("rec-fs", "fairness_drift", "c1", "sacctmgr",
         "sacctmgr -i modify account name=speech set fairshare=8"),
    )  # fmt: skip


def _ledger() -> pl.DataFrame:
    """bf_min_age_reserve set to 3600 twice: on 03-05 (inside run 1's evidence window but
    before its proposal) and on 03-12 (after it)."""
    early, late = dt.datetime(2026, 3, 5, tzinfo=UTC), dt.datetime(2026, 3, 12, tzinfo=UTC)
    return _changes(
        ("chg-early", "c1", "slurm.conf", KEY, "57600", "3600", early),
        ("chg-late", "c1", "slurm.conf", KEY, "7200", "3600", late),
    )


def _stored(tmp_path: Path, record: pl.DataFrame) -> pl.DataFrame:
    """Write ``record`` as analytics.recommendation_proposals and read it back."""
    with connect(tmp_path / "w.duckdb") as con:
        write_proposals(con, record)
        return run_named(con, "recommendations/proposals")


def test_a_proposal_of_run_1_is_applied_by_a_change_seen_in_run_2(tmp_path: Path) -> None:
    """Run 1 (cut-off 03-10) proposes rec-bf; nothing is applied yet (the ledger is empty).
    Run 2 (cut-off 03-20) no longer proposes anything, and the ledger has two changes to the
    proposed 3600: 03-05 (before the first proposal, 03-10, so not it, although after the
    evidence window's start 03-01) and 03-12 (after). rec-bf shows applied by chg-late,
    proposed_at 03-10, not current; rec-fs, never applied, is not shown."""
    run1 = with_history(_run1(), pl.DataFrame(schema=PROPOSAL_SCHEMA), T1, _changes(), None)
    assert run1.select("id", "status", "proposed_at", "is_current").rows() == [
        ("rec-bf", "proposed", T1, True), ("rec-fs", "proposed", T1, True),
    ]  # fmt: skip
    stored = _stored(tmp_path, merge_proposals(proposals_of(_run1(), T1)))
    assert stored.select("id", "proposed_at", "last_seen_at").rows() == [
        ("rec-bf", T1, T1), ("rec-fs", T1, T1),
    ]  # fmt: skip
    run2 = with_history(_run1().clear(), stored, T2, _ledger(), None)
    assert run2.select("id", "status", "change_id", "proposed_at", "is_current").rows() == [
        ("rec-bf", "applied", "chg-late", T1, False)
    ]
    assert run2["patch_content"].to_list() == [AGE]
    assert run2["severity"].to_list() == ["info"]


def test_the_applied_proposal_is_measured_then_confirmed(tmp_path: Path) -> None:
    """With impact rows for chg-late: on occupancy only (not backfill_tuning's target KPI
    wait_p90_h) it is measured; with wait_p90_h[64-255] improved, confirmed."""
    stored = merge_proposals(proposals_of(_run1(), T1))
    measured = with_history(
        _run1().clear(), stored, T2, _ledger(), _impact(("chg-late", "occupancy", "improved"))
    )
    assert measured.select("id", "status", "change_id").rows() == [
        ("rec-bf", "measured", "chg-late")
    ]
    confirmed = with_history(
        _run1().clear(), stored, T2, _ledger(),
        _impact(("chg-late", "occupancy", "no detectable effect"),
                ("chg-late", "wait_p90_h[64-255]", "improved")),
    )  # fmt: skip
    assert confirmed.select("id", "status").rows() == [("rec-bf", "confirmed")]


def test_appending_is_idempotent_and_keeps_the_first_proposal_time(tmp_path: Path) -> None:
    """Run 2's record (run 1's merged with no new proposal) written twice is the same table;
    run 3 (03-30) proposes rec-bf again with another value: proposed_at stays 03-10,
    last_seen_at 03-30, the patch is the latest; rec-fs keeps last_seen 03-10."""
    first = _stored(tmp_path, merge_proposals(proposals_of(_run1(), T1)))
    again = _stored(tmp_path, merge_proposals(first, proposals_of(_run1().clear(), T2)))
    assert again.rows() == first.rows()
    assert _stored(tmp_path, merge_proposals(again, again)).rows() == first.rows()
    run3 = _recs(("rec-bf", "backfill_tuning", "c1", "slurm.conf", AGE.replace("3600", "1800")))
    third = _stored(tmp_path, merge_proposals(again, proposals_of(run3, T3)))
    assert third.select("id", "proposed_at", "last_seen_at", "patch_content").rows() == [
        ("rec-bf", T1, T3, "SchedulerParameters=bf_min_age_reserve=1800"),
        ("rec-fs", T1, T1, "sacctmgr -i modify account name=speech set fairshare=8"),
    ]


def test_past_proposals_stay_out_of_the_patch_files(tmp_path: Path) -> None:
    """Run 2's applied rec-bf is in latest.json (status applied, is_current false, proposed_at)
    but its patch is not written again to slurm.conf.patch."""
    stored = merge_proposals(proposals_of(_run1(), T1))
    frame = with_history(_run1().clear(), stored, T2, _ledger(), None)
    files = write_outputs(frame, tmp_path / "out", T2, show_names=True)
    doc = json.loads(files["latest.json"].read_text())
    (rec,) = doc["recommendations"]
    assert (rec["id"], rec["status"], rec["change_id"], rec["is_current"], rec["proposed_at"]) == (
        "rec-bf", "applied", "chg-late", False, "2026-03-10T00:00:00Z",
    )  # fmt: skip
    assert "bf_min_age_reserve" not in files["slurm.conf.patch"].read_text()


def test_history_files_are_read_as_earlier_proposals(tmp_path: Path) -> None:
    """A latest.json-shaped file under <inputs>/c1/recommendations/ gives its records with
    proposed_at = its as_of (or the record's own proposed_at) and last_seen_at = as_of."""
    cfg = load_config(
        write_config(tmp_path, days_dir=tmp_path / "data", clusters=(("c1", "slurm", "UTC"),))
    )
    folder = cfg.cluster_input_dir("c1") / "recommendations"
    folder.mkdir(parents=True)
    rec = {"id": "rec-bf", "rule": "backfill_tuning", "cluster": "c1", "scope": "cluster=c1",
           "change_text": "t", "patch": {"kind": "slurm.conf", "content": AGE}}  # fmt: skip
    doc = {"as_of": "2026-03-10T00:00:00Z",
           "recommendations": [rec, {**rec, "id": "rec-x", "proposed_at": "2026-03-02T00:00:00Z",
                                     "patch": None}]}  # fmt: skip
    (folder / "proposals_2026-03-10.json").write_text(json.dumps(doc))
    got = read_proposal_history(cfg)
    assert got.select("id", "patch_content", "proposed_at", "last_seen_at").rows() == [
        ("rec-bf", AGE, T1, T1),
        ("rec-x", None, dt.datetime(2026, 3, 2, tzinfo=UTC), T1),
    ]


def _history(tmp_path: Path, doc: object) -> tuple[Config, Path]:
    cfg = load_config(
        write_config(tmp_path, days_dir=tmp_path / "data", clusters=(("c1", "slurm", "UTC"),))
    )
    folder = cfg.cluster_input_dir("c1") / "recommendations"
    folder.mkdir(parents=True)
    path = folder / "proposals_2026-03-10.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return cfg, path


def _bad_history_doc() -> dict[str, object]:
    """Three records: rec-bf good; [1] without its rule; [2] with a proposed_at that is no
    time."""
    rec = {"id": "rec-bf", "rule": "backfill_tuning", "cluster": "c1", "scope": "cluster=c1",
           "change_text": "t", "patch": {"kind": "slurm.conf", "content": AGE}}  # fmt: skip
    no_rule = {k: v for k, v in rec.items() if k != "rule"} | {"id": "rec-x"}
    bad_time = rec | {"id": "rec-y", "proposed_at": "last tuesday"}
    return {"as_of": "2026-03-10T00:00:00Z", "recommendations": [rec, no_rule, bad_time]}


def test_a_bad_history_record_is_rejected_and_the_rest_still_read(tmp_path: Path) -> None:
    """Record [1] lacks its rule and [2]'s proposed_at is no time: both are rejected with the
    file, the record index (line_no = line_end = index), the field, the record's JSON and the
    reason; rec-bf is still read."""
    cfg, path = _history(tmp_path, _bad_history_doc())
    assert read_proposal_history(cfg)["id"].to_list() == ["rec-bf"]
    [(cluster, got_path, result)] = proposal_history_files(cfg)
    assert (cluster, got_path) == ("c1", path)
    rej = result.rejected
    assert rej.select("file", "line_no", "line_end", "field").rows() == [
        (str(path), 1, 1, "recommendations[1].rule"),
        (str(path), 2, 2, "recommendations[2].proposed_at"),
    ]
    assert rej["reason"].to_list() == [
        "recommendations[1].rule: missing",
        "recommendations[2].proposed_at: not an ISO 8601 time: 'last tuesday'",
    ]
    assert json.loads(rej["raw"][0])["id"] == "rec-x"


def test_history_rejects_are_stored_once_per_file_content(tmp_path: Path) -> None:
    """record_proposal_rejects writes the 2 rejected records to raw.rejected_rows under one
    ingest (rows_loaded 1, rows_rejected 2); run again on the same file it adds nothing (same
    ingest id, still 2 rows); after the file is fixed its rejects are replaced (0 rows)."""
    cfg, path = _history(tmp_path, _bad_history_doc())
    with connect(tmp_path / "w.duckdb") as con:
        assert record_proposal_rejects(con, cfg) == 2
        first = con.execute(
            "SELECT ingest_id, source, rows_loaded, rows_rejected FROM raw.ingests"
        ).fetchall()
        assert [r[1:] for r in first] == [(PROPOSAL_HISTORY_SOURCE, 1, 2)]
        assert record_proposal_rejects(con, cfg) == 0
        again = con.execute(
            "SELECT ingest_id, source, rows_loaded, rows_rejected FROM raw.ingests"
        ).fetchall()
        assert again == first
        assert con.execute(
            "SELECT field, source FROM raw.rejected_rows ORDER BY line_no"
        ).fetchall() == [
            ("recommendations[1].rule", PROPOSAL_HISTORY_SOURCE),
            ("recommendations[2].proposed_at", PROPOSAL_HISTORY_SOURCE),
        ]
        doc = _bad_history_doc()
        doc["recommendations"] = doc["recommendations"][:1]  # type: ignore[index]
        path.write_text(json.dumps(doc), encoding="utf-8")
        assert record_proposal_rejects(con, cfg) == 0
        assert con.execute("SELECT count(*) FROM raw.rejected_rows").fetchall() == [(0,)]
        assert con.execute("SELECT rows_loaded, rows_rejected FROM raw.ingests").fetchall() == [
            (1, 0)
        ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", r"proposals_2026-03-10.json: not a JSON proposal record"),
        ("[1, 2]", r"proposals_2026-03-10.json: expected an object with as_of"),
        (
            '{"recommendations": []}',
            r"proposals_2026-03-10.json \(field as_of\): missing or not a time",
        ),
        (
            '{"as_of": "2026-03-10T00:00:00Z", "recommendations": {}}',
            r"proposals_2026-03-10.json \(field recommendations\): not a list",
        ),
    ],
)
def test_a_history_file_of_the_wrong_kind_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    """A file that is not a proposal record at all is refused whole, naming file and field."""
    cfg, _ = _history(tmp_path, text)
    with pytest.raises(InputFormatError, match=message):
        read_proposal_history(cfg)
