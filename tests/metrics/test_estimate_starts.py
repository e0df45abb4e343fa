"""Estimated starts of the jobs pending at the cut-off (the Queue page's column): the scheduler
model replayed forward from the state at the cut-off, checked against hand-worked schedules."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.scheduler_model import Node, estimate_starts

CUT = dt.datetime(2026, 11, 10, 0, 0, tzinfo=dt.UTC)
NODES = [Node("n1", "gpu", 8), Node("n2", "gpu", 8)]


def _t(hhmm: str, day: int = 10) -> dt.datetime:
    h, m = (int(x) for x in hhmm.split(":"))
    return dt.datetime(2026, 11, day, h, m, tzinfo=dt.UTC)


def _running(*rows: tuple[str, int, dt.datetime, float]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"job_id": j, "partition": "gpu", "gpus": g, "start_at": s, "timelimit_s": lim}
         for j, g, s, lim in rows],
        schema={"job_id": pl.String, "partition": pl.String, "gpus": pl.Float64,
                "start_at": pl.Datetime("us", "UTC"), "timelimit_s": pl.Float64},
    )  # fmt: skip


def _pending(*rows: tuple[str, int, dt.datetime, float, str]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"job_id": j, "partition": p, "gpus": g, "eligible_at": e, "timelimit_s": lim,
          "qos": "normal"} for j, g, e, lim, p in rows],
        schema={"job_id": pl.String, "partition": pl.String, "gpus": pl.Float64,
                "eligible_at": pl.Datetime("us", "UTC"), "timelimit_s": pl.Float64,
                "qos": pl.String},
    )  # fmt: skip


def test_replay_from_the_cut_off_with_remaining_limits() -> None:
    """Two 8-GPU nodes at the cut-off Tue 2026-11-10 00:00 UTC:

    - running A (8 GPUs, started Mon 22:00, limit 4 h: 2 h left, ends 02:00) fills n1;
      running B (4 GPUs, started Mon 23:00, limit 2 h: 1 h left, ends 01:00) holds half of n2;
    - pending P1 (8 GPUs, eligible Mon 20:00, limit 3 h) is the head: no node has 8 free. Its
      shadow time is 01:00 (B's end frees n2), so n2 is reserved for it from then;
    - P2 (4 GPUs, eligible 21:00, limit 2 h) fits n2's 4 free GPUs but would run to 02:00,
      past the shadow time, on the reserved node: it waits;
    - P3 (2 GPUs, eligible 21:30, limit 30 min) ends at 00:30 ≤ 01:00: backfilled at 00:00.

    So P1 starts at 01:00 on n2 (B gone), P2 at 02:00 on n1 (A gone), P3 at 00:00."""
    running = _running(("A", 8, _t("22:00", 9), 4 * 3600.0), ("B", 4, _t("23:00", 9), 7200.0))
    pending = _pending(
        ("P2", 4, _t("21:00", 9), 7200.0, "gpu"),
        ("P1", 8, _t("20:00", 9), 3 * 3600.0, "gpu"),
        ("P3", 2, _t("21:30", 9), 1800.0, "gpu"),
    )
    got = estimate_starts(NODES, running, pending, CUT)
    assert got["job_id"].to_list() == ["P2", "P1", "P3"]  # the input's order
    assert got["estimated_start"].to_list() == [_t("02:00"), _t("01:00"), _t("00:00")]
    assert got["backfilled"].to_list() == [False, False, True]
    assert got["modelled"].all()


def test_past_its_limit_a_running_job_frees_its_gpus_at_the_cut_off() -> None:
    """A (8 GPUs on n1) started Mon 18:00 with a 4 h limit is past it at 00:00: it is taken to
    end at the cut-off, so P1 (8 GPUs) starts at once; n2 is free for P2 (8 GPUs) too."""
    running = _running(("A", 8, _t("18:00", 9), 4 * 3600.0))
    pending = _pending(("P1", 8, _t("20:00", 9), 3600.0, "gpu"),
                       ("P2", 8, _t("20:30", 9), 3600.0, "gpu"))  # fmt: skip
    got = estimate_starts(NODES, running, pending, CUT)
    assert got["estimated_start"].to_list() == [CUT, CUT]


def test_beyond_the_horizon_or_not_modelled_is_null() -> None:
    """Both nodes held for 10 days by running jobs: a pending job gets no start within the
    7-day horizon; one in a partition without nodes, or without GPUs, is not modelled."""
    running = _running(("A", 8, _t("00:00", 9), 11 * 86400.0),
                       ("B", 8, _t("00:00", 9), 11 * 86400.0))  # fmt: skip
    pending = _pending(("P1", 1, _t("20:00", 9), 3600.0, "gpu"),
                       ("P2", 1, _t("20:00", 9), 3600.0, "other"),
                       ("P3", 0, _t("20:00", 9), 3600.0, "gpu"))  # fmt: skip
    got = estimate_starts(NODES, running, pending, CUT)
    assert got["estimated_start"].to_list() == [None, None, None]
    assert got["modelled"].to_list() == [True, False, False]
    assert got["backfilled"].to_list() == [None, None, None]
