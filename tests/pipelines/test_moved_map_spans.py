"""The slurmd map rule of the incremental plan, by hand: where a changed map moves XID events,
and the samples of the pods that enter or leave it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl

from pipelines.analytics.incremental import (
    SLURMD_MAP_TABLE,
    _map_pod_spans,
    _map_telemetry_days,
    _moved_map_spans,
    _record_pod_days,
    _xid_attempt_days,
)
from pipelines.core.slurm_on_k8s import NODE_MAP_SCHEMA
from pipelines.warehouse import connect, init_warehouse, read_table
from pipelines.warehouse.tables import replace_table


def _t(month: int, day: int, h: int = 0) -> dt.datetime:
    return dt.datetime(2026, month, day, h, tzinfo=dt.UTC)


#: A missing end, as the spans give it.
_LATEST = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)


def _map(
    *rows: tuple[str, str, dt.datetime | None, dt.datetime | None], gpus: float = 8.0
) -> pl.DataFrame:
    """Map rows of slurm-x: ``(slurm_node, pod, valid_from, valid_to)``, pod ``p`` on k8s node
    ``k-<p>``, ``gpus`` GPUs."""
    return pl.DataFrame(
        [
            ("slurm-x", node, start, end, "slurm", pod, f"k-{pod}", "gpu", gpus, "pod")
            for node, pod, start, end in rows
        ],
        schema=NODE_MAP_SCHEMA,
        orient="row",
    )


def test_a_changed_map_gives_the_times_it_moves_xids_at() -> None:
    """Old map: n1 in p1 from 03-01, open; n2 in p2 02-20 → 02-25; n4 in p4 02-10 → 02-12. New
    map: n1's pod seen ending at 03-03 (its end alone differs: the span is 03-03 to the old open
    end, 9999-01-01); n2 the same (no span); n3 in p3 from 03-03 06:00, open (new: its whole
    interval); n4 gone (its whole interval, 02-10 → 02-12)."""
    old = _map(("n1", "p1", _t(3, 1), None), ("n2", "p2", _t(2, 20), _t(2, 25)),
               ("n4", "p4", _t(2, 10), _t(2, 12)))  # fmt: skip
    new = _map(("n1", "p1", _t(3, 1), _t(3, 3)), ("n2", "p2", _t(2, 20), _t(2, 25)),
               ("n3", "p3", _t(3, 3, 6), None))  # fmt: skip
    spans = _moved_map_spans(old, new)
    assert spans.rows() == [
        ("slurm-x", _t(2, 10), _t(2, 12)),
        ("slurm-x", _t(3, 3), _LATEST),
        ("slurm-x", _t(3, 3, 6), _LATEST),
    ]
    # the same map: nothing moves; nor where only a column that places no event changed
    assert _moved_map_spans(new, new.sample(fraction=1.0, shuffle=True, seed=3)).height == 0
    assert _moved_map_spans(_map(("n2", "p2", _t(2, 20), _t(2, 25)), gpus=4.0),
                            _map(("n2", "p2", _t(2, 20), _t(2, 25)))).height == 0  # fmt: skip
    # the Kubernetes cluster whose slurmd pods run slurm-x has the same spans: an event the
    # map no longer places stays on its Kubernetes node
    pairs = pl.DataFrame({"cluster": ["slurm-x"], "k8s_cluster": ["k8s-x"]})
    both = _moved_map_spans(old, new, pairs)
    assert both.filter(pl.col("cluster") == "k8s-x").drop("cluster").rows() == [
        r[1:] for r in spans.rows()
    ]
    assert both.filter(pl.col("cluster") == "slurm-x").equals(spans)
    # a start or a node changed: each version's whole interval; two versions of one interval on
    # one side are not paired (each whole)
    moved_start = _moved_map_spans(_map(("n2", "p2", _t(2, 20), _t(2, 25))),
                                   _map(("n2", "p2", _t(2, 21), _t(2, 25))))  # fmt: skip
    assert moved_start.rows() == [
        ("slurm-x", _t(2, 20), _t(2, 25)),
        ("slurm-x", _t(2, 21), _t(2, 25)),
    ]
    other_node = _moved_map_spans(_map(("n2", "p2", _t(2, 20), _t(2, 25))),
                                  _map(("n6", "p2", _t(2, 20), _t(2, 25))))  # fmt: skip
    assert other_node.rows() == [("slurm-x", _t(2, 20), _t(2, 25))]
    twice = _moved_map_spans(_map(("n2", "p2", _t(2, 20), None)),
                             _map(("n2", "p2", _t(2, 20), _t(2, 22)),
                                  ("n2", "p2", _t(2, 20), _t(2, 23))))  # fmt: skip
    assert twice.rows() == [("slurm-x", _t(2, 20), _t(2, 22)), ("slurm-x", _t(2, 20), _t(2, 23)),
                            ("slurm-x", _t(2, 20), _LATEST)]  # fmt: skip
    # no stored map: every interval of the new one, a missing start from 1970
    first = _moved_map_spans(pl.DataFrame(), _map(("n5", "p5", None, _t(3, 2))))
    assert first.rows() == [("slurm-x", dt.datetime(1970, 1, 1, tzinfo=dt.UTC), _t(3, 2))]


def test_the_spans_plan_the_failed_attempts_an_xid_there_may_decide() -> None:
    """The spans above, through the XID rule (FAILED attempts ending in [lo, hi + 1 day + the
    XID window]; their days from start to end): FAILED 02-09 20:00 → 02-11 08:00 ends in n4's
    span (02-09, 02-10, 02-11); FAILED 02-28 → 03-04 01:00 ends after 03-03 (02-28 to 03-04);
    FAILED 02-20 → 02-21 ends after n4's span, its day and the window (02-13 00:10) and before
    03-03: not planned; COMPLETED 03-05 → 03-06 is not FAILED."""
    old = _map(("n1", "p1", _t(3, 1), None), ("n4", "p4", _t(2, 10), _t(2, 12)))
    new = _map(("n1", "p1", _t(3, 1), _t(3, 3)))
    jobs = pl.DataFrame(
        {"cluster": ["slurm-x"] * 4, "state": ["FAILED", "FAILED", "FAILED", "COMPLETED"],
         "start_at": [_t(2, 9, 20), _t(2, 28), _t(2, 20), _t(3, 5)],
         "end_at": [_t(2, 11, 8), _t(3, 4, 1), _t(2, 21), _t(3, 6)]}
    )  # fmt: skip
    days = _xid_attempt_days(jobs, _moved_map_spans(old, new))
    assert days == {
        "slurm-x": {
            dt.date(2026, 2, 9), dt.date(2026, 2, 10), dt.date(2026, 2, 11),
            dt.date(2026, 2, 28), dt.date(2026, 3, 1), dt.date(2026, 3, 2),
            dt.date(2026, 3, 3), dt.date(2026, 3, 4),
        }
    }  # fmt: skip


def test_a_stored_map_read_back_equals_the_one_written(tmp_path: Path) -> None:
    """The map as the build writes it and reads it back from DuckDB, read in another session
    time zone (zoned times, a NULL start and NULL ends, a time with microseconds), is the same
    map: no span, so an unchanged map plans no day."""
    new = pl.concat(
        [
            _map(("n1", "p1", _t(3, 1), None), ("n2", "p2", None, _t(2, 25))),
            _map(("n3", "p3", _t(3, 2) + dt.timedelta(microseconds=123_457), None), gpus=1 / 3),
        ]
    ).with_columns(pl.when(pl.col("slurm_node") == "n2").then(None).otherwise("gpus").alias("gpus"))
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        replace_table(con, SLURMD_MAP_TABLE, new)
        con.execute("SET TimeZone = 'America/Los_Angeles'")
        stored = read_table(con, SLURMD_MAP_TABLE)
    assert stored.height == 3
    assert _moved_map_spans(stored, new).height == 0


def test_a_moved_span_plans_the_days_the_pairs_telemetry_covers_in_it() -> None:
    """Telemetry loads of k8s-x: 02-27 06:00 → 02-28 23:00 and 03-02 00:00 → 12:00 (nothing on
    03-01), one with NULL ends; of another cluster: all of January. slurm-x runs in k8s-x's
    slurmd pods. Spans: slurm-x 02-28 18:00 → open (9999-01-01): cut to each k8s-x load, days
    02-28 and 03-02 (not 03-01, which no load covers, nor the cut-off's day); k8s-x 02-20 →
    02-27 07:00: 02-27; slurm-x 01-10 → 01-12: only the other cluster's load covers it, no
    day; lone (no pair, no load) 02-27 → 02-28: no day. Without the pairs, slurm-x's spans meet
    no load of its own: k8s-x's day alone. No span, or no telemetry: no day."""
    telemetry = pl.DataFrame(
        {"ingest_id": [1, 2, 3, 4], "cluster": ["k8s-x", "k8s-x", "other", "k8s-x"],
         "lo": [_t(2, 27, 6), _t(3, 2), _t(1, 1), None],
         "hi": [_t(2, 28, 23), _t(3, 2, 12), _t(1, 31), None]},
        schema_overrides={"lo": pl.Datetime("us", "UTC"), "hi": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    spans = pl.DataFrame(
        {"cluster": ["slurm-x", "k8s-x", "slurm-x", "lone"],
         "lo": [_t(2, 28, 18), _t(2, 20), _t(1, 10), _t(2, 27)],
         "hi": [_LATEST, _t(2, 27, 7), _t(1, 12), _t(2, 28)]}
    )  # fmt: skip
    pairs = pl.DataFrame({"cluster": ["slurm-x"], "k8s_cluster": ["k8s-x"]})
    assert _map_telemetry_days(spans, telemetry, pairs) == {
        "slurm-x": {dt.date(2026, 2, 28), dt.date(2026, 3, 2)},
        "k8s-x": {dt.date(2026, 2, 27)},
    }
    assert _map_telemetry_days(spans, telemetry) == {"k8s-x": {dt.date(2026, 2, 27)}}
    assert _map_telemetry_days(spans.clear(), telemetry, pairs) == {}
    assert _map_telemetry_days(spans, telemetry.clear(), pairs) == {}


def test_the_samples_of_a_pod_entering_or_leaving_the_map_plan_their_days() -> None:
    """Stored samples of k8s-x: slurm/p1 at 02-27 10:00 and 02-27 11:00 and at 03-01 02:00;
    slurm/p2 at 02-26 05:00; slurm/p3 at 02-25 01:00; ns2/p1 (another namespace) at 02-24;
    slurm/p1 of k8s-y (another cluster) at 02-23; one sample without a pod at 02-22. The old map
    names p2 and p3; the new map names p1 (entered: its two days, each from its first to its
    last sample there) and p3 (kept), not p2 (left: its day). A pod of slurm-y (no pair), a
    NULL pod, and the same maps with the pods only reordered: nothing. The days are read from
    the loads' pod days (``analytics.build_pod_days``, written from the samples as a full build
    writes it); without that table: no span."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE SCHEMA analytics")
    con.execute(
        "CREATE TABLE raw.dcgm_samples (ts TIMESTAMPTZ, cluster VARCHAR, namespace VARCHAR,"
        " pod VARCHAR, ingest_id BIGINT DEFAULT 1)"
    )
    con.executemany(
        "INSERT INTO raw.dcgm_samples (ts, cluster, namespace, pod) VALUES (?, ?, ?, ?)",
        [(_t(2, 27, 10), "k8s-x", "slurm", "p1"), (_t(2, 27, 11), "k8s-x", "slurm", "p1"),
         (_t(3, 1, 2), "k8s-x", "slurm", "p1"), (_t(2, 26, 5), "k8s-x", "slurm", "p2"),
         (_t(2, 25, 1), "k8s-x", "slurm", "p3"), (_t(2, 24), "k8s-x", "ns2", "p1"),
         (_t(2, 23), "k8s-y", "slurm", "p1"), (_t(2, 22), "k8s-x", None, None)],
    )  # fmt: skip
    _record_pod_days(con, None)  # as a full build writes it
    pairs = pl.DataFrame({"cluster": ["slurm-x"], "k8s_cluster": ["k8s-x"]})
    old = _map(("n2", "p2", _t(2, 1), None), ("n3", "p3", _t(2, 1), None))
    new = _map(("n1", "p1", _t(3, 5), None), ("n3", "p3", _t(2, 1), None))
    spans = _map_pod_spans(con, old, new, pairs)
    assert spans.rows() == [
        ("k8s-x", _t(2, 26, 5), _t(2, 26, 5)),
        ("k8s-x", _t(2, 27, 10), _t(2, 27, 11)),
        ("k8s-x", _t(3, 1, 2), _t(3, 1, 2)),
    ]
    assert spans.schema == {"cluster": pl.String(), "lo": pl.Datetime("us", "UTC"),
                            "hi": pl.Datetime("us", "UTC")}  # fmt: skip
    # a pod of a Slurm cluster without a pair, a NULL pod, the pods reordered: no change
    other = new.with_columns(pl.lit("slurm-y").alias("cluster"))
    assert _map_pod_spans(con, new, pl.concat([new, other]), pairs).height == 0
    nulled = new.with_columns(pl.lit(None, pl.String()).alias("pod"))
    assert _map_pod_spans(con, nulled.head(1), nulled, pairs).height == 0
    assert _map_pod_spans(con, new, new.reverse(), pairs).height == 0
    # no earlier map: every pod of the new one has entered (p1: its two days)
    assert _map_pod_spans(con, pl.DataFrame(), new.head(1), pairs)["lo"].to_list() == [
        _t(2, 27, 10),
        _t(3, 1, 2),
    ]
    con.execute("DROP TABLE analytics.build_pod_days")
    assert _map_pod_spans(con, old, new, pairs).height == 0
