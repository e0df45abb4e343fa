"""Kueue's TAS not-fit statement (``tests/fixtures/kueue-tas-notfit``) as pending-reason spells,
and the exact fragmentation delay it gives a large Workload (METRICS.md "Domain capacity,
stranded GPUs and large-job waits")."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import polars as pl

from metrics.domains import large_job_wait_causes, topology_reason
from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.core.kueue_tas import kueue_topology_spells, tas_not_fit
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.kubernetes import parse_k8s_events
from pipelines.kubernetes._workloads_parse import parse_k8s_workloads
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.metrics.test_domains import (
    H0,
    H1,
    _as_of,
    _capacity,
    _inventory,
    _jobs,
    _pending,
    _shares,
    _topology,
)

FIX = Path(__file__).parents[1] / "fixtures" / "kueue-tas-notfit"
M = dt.timedelta(minutes=1)


def test_not_fit_messages_of_every_kueue_version_parse() -> None:
    """Each line of messages.txt: (fit, total, unit); the quota message states none."""
    lines = (FIX / "messages.txt").read_text().splitlines()
    got = pl.select(tas_not_fit(pl.Series(lines)).alias("s")).unnest("s")
    assert got.select("topology", "fit", "total", "unit").rows() == [
        ("tas-single-level", 1, 2, "pod"),
        ("tas-single-level", 0, 1, "pod"),
        ("default", 3, 4, "slice"),
        ("default", 0, 2, "slice"),
        ("default", -3, 2, "pod"),
        (None, None, None, None),
    ]
    assert got["reason"][0] == 'topology "tas-single-level" allows to fit only 1 out of 2 pod(s)'
    assert got["reason"][1] == 'topology "tas-single-level" doesn\'t allow to fit any of 1 pod(s)'
    assert pl.select(topology_reason(got["reason"].drop_nulls())).to_series().all()


def _spells() -> pl.DataFrame:
    events = parse_k8s_events(FIX / "events.json", cluster="c").rows
    snaps = [
        parse_k8s_workloads(FIX / name, cluster="c").rows.with_columns(
            pl.lit(at).cast(pl.Datetime("us", "UTC")).alias("snapshot_at")
        )
        for name, at in (("workloads_0045.json", H0 + 45 * M), ("workloads_0120.json", H1 + 20 * M))
    ]
    return kueue_topology_spells(pl.concat(snaps).lazy(), events.lazy()).collect()


def test_events_and_conditions_merge_into_spells() -> None:
    """Statements of ml/p1: event e1 00:10–00:40 (count 4); event e2 00:50–00:55 (count 2);
    the 01:20 snapshot's QuotaReserved=False topology message, last transition 00:10, but the
    00:45 snapshot said quota, so it holds from 00:45 to 01:20. e2 lies inside it: spells
    00:10–00:40 (1800 s, 4 polls) and 00:45–01:20 (2100 s, 1 + 2 = 3 polls, the latest
    statement's text). The quota event of ml/q and the 00:45 snapshot state no topology."""
    got = _spells()
    assert got.select("cluster", "job_id", "spell_start", "spell_end", "seconds", "polls").rows(
    ) == [
        ("c", "ml/p1", H0 + 10 * M, H0 + 40 * M, 1800, 4),
        ("c", "ml/p1", H0 + 45 * M, H1 + 20 * M, 2100, 3),
    ]  # fmt: skip
    assert got["reason"].to_list() == [
        'topology "rack" allows to fit only 2 out of 3 pod(s)',
        'topology "rack" doesn\'t allow to fit any of 3 pod(s)',
    ]


def test_admitted_snapshot_ends_the_spell_at_quota_reservation() -> None:
    """A third snapshot at 02:00 shows QuotaReserved=True since 01:30: the 01:20 statement
    holds on to 01:30, so the second spell is 00:45–01:30 (2700 s)."""
    snap = parse_k8s_workloads(FIX / "workloads_0120.json", cluster="c").rows
    later = snap.with_columns(
        pl.lit(H1 + 30 * M).cast(pl.Datetime("us", "UTC")).alias("quota_reserved_at"),
        pl.lit(None, pl.String()).alias("conditions"),
        pl.lit(H1 + 60 * M).cast(pl.Datetime("us", "UTC")).alias("snapshot_at"),
    )
    first = snap.with_columns(
        pl.lit(H1 + 20 * M).cast(pl.Datetime("us", "UTC")).alias("snapshot_at")
    )
    got = kueue_topology_spells(pl.concat([first, later]).lazy(), None).collect()
    assert got.select("spell_start", "spell_end", "seconds").rows() == [
        (H0 + 10 * M, H1 + 30 * M, 4800)
    ]


def test_kueue_statement_gives_exact_fragmentation_delay() -> None:
    """The hand-built cluster of tests/metrics/test_domains.py with P1 (team t1, 12 GPUs = 3
    nodes, eligible h0, still pending at the cut-off h1 + 60 min) as the Kueue Workload ml/p1
    and the spells above: h0 piece: 1800 (00:10–00:40) + 900 (00:45–01:00) = 2700 s stated;
    h1 piece: 1200 s (01:00–01:20). Fragmentation 2700 + 1200 = 3900 s. The rest is other
    (a stated reason turns the counterfactual fragmentation of h0 into other): 900 + 2400 =
    3300 s. Idle while blocked: free GPUs at the gang level h0 18 × 2700 + h1 24 × 1200 =
    48,600 + 28,800 = 77,400 GPU-s. basis exact."""
    pending = _pending().with_columns(
        pl.when(pl.col("job_id") == "P1").then(pl.lit("ml/p1")).otherwise("job_id").alias("job_id")
    )
    got = large_job_wait_causes(
        _capacity(), _jobs(), _inventory(), _as_of(), topology=_topology(), pending=pending,
        shares=_shares(), reasons=_spells().lazy(), min_gpus=12,
    ).collect().filter(pl.col("job_id") == "ml/p1")  # fmt: skip
    assert got.select("wait_s", "quota_s", "priority_s", "fragmentation_s", "other_s",
                      "blocked_idle_gpu_s", "basis").rows() == [
        (7200.0, 0.0, 0.0, 3900.0, 3300.0, 77_400.0, "exact")
    ]  # fmt: skip


def test_the_build_publishes_kueue_spells_in_pending_reason_spells(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """End to end for k8s-b: the fixture's events (k8s-events) and the two Workload snapshots
    (k8s-objects, file times 00:45 and 01:20 UTC as their snapshot times) loaded, built: the
    pending_reason_spells view holds ml/p1's two spells as computed above."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    opts = IngestOptions(cluster="k8s-b")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "k8s-events", FIX / "events.json", opts)
        for name, at in (
            ("workloads_0045.json", H0 + 45 * M),
            ("workloads_0120.json", H1 + 20 * M),
        ):
            copy = tmp_path / name
            copy.write_bytes((FIX / name).read_bytes())
            os.utime(copy, (at.timestamp(), at.timestamp()))
            ingest_file(con, "k8s-objects", copy, opts)
        rebuild(con, cfg)
        rows = con.sql(
            "SELECT job_id, spell_start, spell_end, seconds, polls FROM pending_reason_spells"
            " WHERE cluster = 'k8s-b' ORDER BY spell_start"
        ).fetchall()
    assert rows == [
        ("ml/p1", H0 + 10 * M, H0 + 40 * M, 1800, 4),
        ("ml/p1", H0 + 45 * M, H1 + 20 * M, 2100, 3),
    ]
