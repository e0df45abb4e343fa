"""Real Slurm 22.05: the live ``reservations`` and ``reservation_history`` state kinds.

Two reservations are created with ``scontrol create reservation``: ``maint-now``, a MAINT
reservation on 2 nodes starting now (2 hours), and ``alice-later``, a user reservation of alice
(account team-a) on one node starting in an hour (1 hour). 22.05 refuses ``TRES=gres/gpu=…`` on
a reservation ("TRES type 'gres/gpu' not supported with reservations"), so the user reservation
names its node. The live source (:class:`~pipelines.slurm.resources.SlurmStateCliSource`,
``kinds=["reservations", "reservation_history"]``) is fetched before and after both are
deleted, and the spooled files are parsed.

What was seen on 22.05.8 and is asserted: slurmdbd records both at creation; deleting a
reservation that has not started removes its record, while one deleted while active keeps it,
its end set to the deletion time.

The module starts a cluster of its own (about 30 s) instead of the session's ``slurm_cluster``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines._parse_result import ParseResult
from pipelines.slurm._reservations import (
    parse_sacctmgr_reservations,
    parse_scontrol_reservations,
)
from pipelines.slurm.resources import SlurmStateCliSource
from tests.integration.slurm import (
    CLUSTER_NAME,
    SlurmTestCluster,
    slurm_time,
)
from tests.integration.slurm.private import private_cluster

pytestmark = pytest.mark.slurm

KINDS = ["reservations", "reservation_history"]


@dataclass(frozen=True)
class Reservations:
    """What the live source said before and after the reservations were deleted.

    Attributes:
        created_from: the cluster clock just before ``maint-now`` was created (whole second).
        created_to: the cluster clock just after it was created.
        later_start: ``alice-later``'s start as asked for.
        deleted_at: the cluster clock just after both were deleted.
        idle: ``reservations`` before anything was created.
        live: ``reservations`` with both.
        history: ``reservation_history`` with both.
        live_after: ``reservations`` after deletion.
        history_after: ``reservation_history`` after deletion.
    """

    created_from: datetime
    created_to: datetime
    later_start: datetime
    deleted_at: datetime
    idle: ParseResult
    live: ParseResult
    history: ParseResult
    live_after: ParseResult
    history_after: ParseResult


@pytest.fixture(scope="module")
def resv_cluster() -> Iterator[SlurmTestCluster]:
    """A started cluster of this module's own, stopped when the module ends."""
    with private_cluster("goodput-slurm-resv-") as cluster:
        yield cluster


def _fetch(cluster: SlurmTestCluster, spool: Path) -> tuple[ParseResult, ParseResult]:
    """Fetch both kinds for the cluster's current day; parse the spooled files."""
    source = SlurmStateCliSource(
        spool_dir=str(spool), slurm_conf=str(cluster.slurm_conf), env=cluster.env(), kinds=KINDS
    )
    now = cluster.now()
    live, history = source.fetch(CLUSTER_NAME, now.date().isoformat())
    assert (live.name.split("_")[0], history.name.split("_")[1]) == ("reservations", "history")
    return (
        parse_scontrol_reservations(live, cluster=CLUSTER_NAME, snapshot_at=now),
        parse_sacctmgr_reservations(history, cluster=CLUSTER_NAME, snapshot_at=now),
    )


def _later_start(cluster: SlurmTestCluster) -> datetime:
    """A start for ``alice-later``: an hour from now, but inside the cluster's current UTC day,
    since the history is fetched for one day (``sacctmgr show reservation Start=<day>
    End=<next day>``) and a reservation starting the next day is not in it. Within three
    minutes of midnight, it waits for the new day first."""
    now = cluster.now().replace(microsecond=0)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), now.tzinfo)
    if midnight - now < timedelta(minutes=3):
        time.sleep((midnight - now).total_seconds() + 1)
        now = cluster.now().replace(microsecond=0)
        midnight += timedelta(days=1)
    return min(now + timedelta(hours=1), midnight - timedelta(minutes=1))


@pytest.fixture(scope="module")
def reservations(
    resv_cluster: SlurmTestCluster, tmp_path_factory: pytest.TempPathFactory
) -> Reservations:
    """Create the two reservations, fetch, delete them, fetch again."""
    cluster = resv_cluster
    spool = tmp_path_factory.mktemp("resv-spool")
    idle, _ = _fetch(cluster, spool / "idle")
    later_start = _later_start(cluster)
    created_from = cluster.now().replace(microsecond=0)
    cluster.run([
        "scontrol", "create", "reservation", "ReservationName=maint-now", "StartTime=now",
        "Duration=120", "Nodes=gpu-[001-002]", "Flags=MAINT,IGNORE_JOBS", "Users=root",
    ])  # fmt: skip
    created_to = cluster.now()
    cluster.run([
        "scontrol", "create", "reservation", "ReservationName=alice-later",
        f"StartTime={slurm_time(later_start)}", "Duration=60", "Nodes=gpu-003", "Users=alice",
        "Accounts=team-a",
    ])  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:  # slurmdbd records reservations as slurmctld sends them
            live, history = _fetch(cluster, spool / "created")
            if history.rows.height >= 2 or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        for name in ("maint-now", "alice-later"):
            cluster.run(["scontrol", "delete", f"ReservationName={name}"], check=False)
    deleted_at = cluster.now()
    deadline = time.monotonic() + 20
    while True:
        live_after, history_after = _fetch(cluster, spool / "deleted")
        if history_after.rows.height <= 1 or time.monotonic() > deadline:
            break
        time.sleep(1)
    return Reservations(
        created_from, created_to, later_start, deleted_at, idle, live, history, live_after,
        history_after,
    )  # fmt: skip


def _by_name(result: ParseResult) -> dict[str, dict[str, object]]:
    assert result.rejected.is_empty(), result.rejected.to_dicts()
    return {row["name"]: row for row in result.rows.to_dicts()}


def test_idle_cluster_has_no_reservation(reservations: Reservations) -> None:
    """'No reservations in the system' parses to no row."""
    assert reservations.idle.rows.is_empty()
    assert reservations.idle.rejected.is_empty()


def test_live_rows_match_what_was_created(reservations: Reservations) -> None:
    """Names, nodes, flags, state, users and times are those the test asked for."""
    rows = _by_name(reservations.live)
    assert set(rows) == {"maint-now", "alice-later"}
    maint, later = rows["maint-now"], rows["alice-later"]
    assert (maint["nodes"], maint["node_count"], maint["maint"]) == (
        ["gpu-001", "gpu-002"], 2, True)  # fmt: skip
    flags = maint["flags"]
    assert isinstance(flags, list) and {"MAINT", "IGNORE_JOBS"} <= set(flags)
    assert maint["state"] == "ACTIVE"
    assert maint["users"] == ["root"]
    start = maint["start_at"]
    assert isinstance(start, datetime)
    assert reservations.created_from <= start <= reservations.created_to
    assert maint["duration_s"] == 7200
    assert maint["end_at"] == start + timedelta(hours=2)
    assert (later["nodes"], later["node_count"], later["maint"]) == (["gpu-003"], 1, False)
    assert "MAINT" not in later["flags"]  # type: ignore[operator]
    assert (later["state"], later["users"], later["accounts"]) == (
        "INACTIVE", ["alice"], ["team-a"])  # fmt: skip
    assert later["start_at"] == reservations.later_start
    assert later["end_at"] == reservations.later_start + timedelta(hours=1)
    assert later["duration_s"] == 3600
    assert {row["cluster"] for row in rows.values()} == {CLUSTER_NAME}


def test_history_records_both_with_the_same_bounds(reservations: Reservations) -> None:
    """slurmdbd's record of each matches the live row (times, nodes, flags)."""
    live, history = _by_name(reservations.live), _by_name(reservations.history)
    assert set(history) == {"maint-now", "alice-later"}
    for name, row in history.items():
        for key in ("start_at", "end_at", "nodes", "maint"):
            assert row[key] == live[name][key], (name, key)
        assert row["cluster"] == CLUSTER_NAME
        assert row["unused_s"] is not None
        assert row["reservation_id"] is not None


def test_after_deletion(reservations: Reservations) -> None:
    """Live: none left. History: only the reservation that had started, ended at deletion."""
    assert reservations.live_after.rows.is_empty()
    live, history = _by_name(reservations.live), _by_name(reservations.history_after)
    assert set(history) == {"maint-now"}
    row = history["maint-now"]
    assert row["start_at"] == live["maint-now"]["start_at"]
    end = row["end_at"]
    assert isinstance(end, datetime)
    assert reservations.created_from <= end <= reservations.deleted_at + timedelta(seconds=1)
    assert (row["nodes"], row["maint"]) == (["gpu-001", "gpu-002"], True)


def test_later_start_stays_inside_the_day() -> None:
    """The history is one day's: an hour from 23:00:01 would start the next day (the CI run of
    2026-12-03 23:00 UTC lost ``alice-later`` so), so the start is held at 23:59:00; at 10:00
    it is an hour on. (A stand-in clock: only ``now`` is read.)"""

    class Clock:
        def __init__(self, at: datetime) -> None:
            self.at = at

        def now(self) -> datetime:
            return self.at

    late = datetime(2026, 12, 3, 23, 0, 1, 500, tzinfo=UTC)
    assert _later_start(Clock(late)) == datetime(2026, 12, 3, 23, 59, tzinfo=UTC)  # type: ignore[arg-type]
    morning = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
    assert _later_start(Clock(morning)) == datetime(2026, 12, 3, 11, 0, tzinfo=UTC)  # type: ignore[arg-type]
