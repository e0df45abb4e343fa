"""Which jobs' wait spells an incremental build recomputes (``wait_keys``): a spell reads its
own row and its cluster's cut-off alone, so only changed rows and rows that read a cut-off
that moved are named. Hand-built rows, each case named by its job id."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.survival import wait_spells
from pipelines.analytics.incremental import wait_keys

UTC = dt.UTC
OLD_CUT = dt.datetime(2026, 1, 5, 4, tzinfo=UTC)
NEW_CUT = dt.datetime(2026, 1, 6, tzinfo=UTC)
_T = pl.Datetime("us", "UTC")


def _at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, day, hour, tzinfo=UTC)


def _cuts(**cuts: dt.datetime) -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": list(cuts), "as_of": list(cuts.values())}, schema={"cluster": pl.String(),
                                                                       "as_of": _T}
    )  # fmt: skip


ATTEMPTS = pl.DataFrame(
    {
        "cluster": ["a", "a", "a", "a", "b"],
        "job_id": ["done", "late_start", "late_eligible", "changed", "new_cluster"],
        "eligible_at": [_at(1), _at(4), _at(5, 6), _at(2), _at(1)],
        "start_at": [_at(2), _at(5, 3), _at(5, 7), _at(3), _at(2)],
        "end_at": [_at(3), None, None, _at(4), _at(3)],
        "gpus": [8, 8, 8, 8, 8],
        "req_gpus": [8, 8, 8, 8, 8],
    },
    schema_overrides={"eligible_at": _T, "start_at": _T, "end_at": _T},
)
PENDING = pl.DataFrame(
    {
        "cluster": ["a", "a"],
        "job_id": ["waiting", "cancelled"],
        "eligible_at": [_at(3), _at(1)],
        "end_at": [None, _at(2)],
        "req_gpus": [4, 4],
    },
    schema_overrides={"eligible_at": _T, "end_at": _T},
)


def test_only_changed_rows_and_rows_reading_a_moved_cut_off_are_named() -> None:
    """Cluster ``a`` moved its cut-off from 5 January 04:00 to 6 January 00:00; cluster ``b``
    had none before. ``done`` (eligible, started and ended by the 3rd) and ``cancelled``
    (cancelled while pending on the 2nd) read no cut-off: not named. ``late_start`` (eligible
    on the 4th, started 5 Jan 03:00, before both cut-offs) is not named either.
    ``late_eligible`` became eligible after the earlier cut-off (5 Jan 06:00): under it the
    job had no spell, so it is named.
    ``waiting`` has no end: censored at the cut-off, which moved. ``changed`` is named because
    its row changed. ``new_cluster``: its cluster had no cut-off in the stored build."""
    changed = ATTEMPTS.filter(pl.col("job_id") == "changed").select("cluster", "job_id")
    got = wait_keys((changed,), (ATTEMPTS, PENDING), _cuts(a=NEW_CUT, b=NEW_CUT), _cuts(a=OLD_CUT))
    assert sorted(got.iter_rows()) == [
        ("a", "changed"), ("a", "late_eligible"), ("a", "waiting"), ("b", "new_cluster"),
    ]  # fmt: skip


def test_the_spells_not_named_are_the_same_under_either_cut_off() -> None:
    """The rule checked against :func:`metrics.wait_spells` itself: every spell whose job is
    not named is the same under the stored cut-off and the new one, and the named ones that
    did not change differ (so none is named without cause). Cluster ``a`` only: ``b`` has no
    cut-off in either build, and all its rows are named."""
    got = wait_keys((), (ATTEMPTS, PENDING), _cuts(a=NEW_CUT), _cuts(a=OLD_CUT))
    a_att, a_pend = (f.filter(pl.col("cluster") == "a").lazy() for f in (ATTEMPTS, PENDING))
    old = wait_spells(a_att, OLD_CUT, pending=a_pend).collect().sort("job_id")
    new = wait_spells(a_att, NEW_CUT, pending=a_pend).collect().sort("job_id")
    same = {j for j, o, n in zip(old["job_id"], old.rows(), new.rows(), strict=True) if o == n}
    named = set(got.filter(pl.col("cluster") == "a")["job_id"])
    assert same == {"done", "late_start", "cancelled", "changed"}
    assert named == {"late_eligible", "waiting"} and not (same & named)
    assert got.filter(pl.col("cluster") == "b")["job_id"].to_list() == ["new_cluster"]
