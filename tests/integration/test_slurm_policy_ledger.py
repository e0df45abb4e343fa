"""Real Slurm 22.05: the policy-change ledger reads back changes made on a live cluster.

On a cluster of this module's own (about 30 s to start; the session's ``slurm_cluster`` has
slurmdbd's clock shifted an hour by its rollup, which would skew transaction times against the
configuration snapshots), the live state source
(:class:`~pipelines.slurm.resources.SlurmStateCliSource`) spools ``scontrol show config``,
``sshare`` and ``sacctmgr show tres``; then team-b's fairshare goes 30 → 45
(``sacctmgr -i modify account team-b set fairshare=45``), QOS normal gets
``GrpTRES=gres/gpu=4``, and ``PriorityWeightFairshare`` goes 10000 → 20000 in ``slurm.conf``
followed by ``scontrol reconfigure``; the source spools again, with the day's
``sacctmgr list transactions``. Every file is ingested and the warehouse rebuilt as
``goodput ingest slurm-state`` does, and the ``policy_changes`` view read back.

What Slurm records, and the ledger says: the two sacctmgr changes with actor ``root`` and
slurmdbd's time; the reconfigure with no actor, dated between the two snapshots; the share
change also from the two sshare snapshots (dated by their loads).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.slurm.resources import SlurmStateCliSource
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.integration.slurm import CLUSTER_NAME, SlurmTestCluster
from tests.integration.slurm.private import private_cluster

pytestmark = pytest.mark.slurm

BEFORE_KINDS = ["scontrol_config", "sshare", "tres"]
AFTER_KINDS = ["scontrol_config", "sshare", "tres", "transactions"]


@dataclass(frozen=True)
class Ledger:
    """The ledger after the changes, with the cluster clock around them.

    Attributes:
        changed_from: the cluster clock (whole second) before the first change.
        changed_to: the cluster clock after ``scontrol reconfigure`` returned.
        reconfigured_from: the cluster clock (whole second) before ``scontrol reconfigure``.
        fetched_to: the cluster clock after the second snapshot was spooled.
        rows: the ``policy_changes`` view.
        rejected: rejected rows of every ingested file.
    """

    changed_from: datetime
    changed_to: datetime
    reconfigured_from: datetime
    fetched_to: datetime
    rows: pl.DataFrame
    rejected: int


@pytest.fixture(scope="module")
def ledger_cluster() -> Iterator[SlurmTestCluster]:
    """A started cluster of this module's own, stopped when the module ends."""
    with private_cluster("goodput-slurm-ledger-") as cluster:
        yield cluster


def _fetch(cluster: SlurmTestCluster, spool: Path, kinds: list[str], day: str) -> list[Path]:
    source = SlurmStateCliSource(
        spool_dir=str(spool), slurm_conf=str(cluster.slurm_conf), env=cluster.env(), kinds=kinds
    )
    return source.fetch(CLUSTER_NAME, day)


@pytest.fixture(scope="module")
def ledger(ledger_cluster: SlurmTestCluster, tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    """Snapshot, change the three settings, snapshot again, ingest, compute the ledger."""
    cluster = ledger_cluster
    work = tmp_path_factory.mktemp("ledger")
    files = _fetch(cluster, work / "before", BEFORE_KINDS, cluster.now().date().isoformat())
    changed_from = cluster.now().replace(microsecond=0)
    conf = cluster.slurm_conf.read_text()
    try:
        cluster.run(["sacctmgr", "-i", "modify", "account", "team-b", "set", "fairshare=45"])
        cluster.run(["sacctmgr", "-i", "modify", "qos", "normal", "set", "GrpTRES=gres/gpu=4"])
        assert "PriorityWeightFairshare=10000\n" in conf
        cluster.slurm_conf.write_text(
            conf.replace("PriorityWeightFairshare=10000\n", "PriorityWeightFairshare=20000\n")
        )
        reconfigured_from = cluster.now().replace(microsecond=0)
        cluster.run(["scontrol", "reconfigure"])
        changed_to = cluster.now()
        # the transactions of the set-up day too, when the cluster started before midnight
        days = sorted({(cluster.hour_start - timedelta(hours=1)).date(), changed_to.date()})
        for day in days:
            files += _fetch(cluster, work / f"after-{day}", AFTER_KINDS, day.isoformat())
        fetched_to = cluster.now()
    finally:
        cluster.slurm_conf.write_text(conf)
    rejected = 0
    cfg = load_config(write_config(work, clusters=((CLUSTER_NAME, "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for path in files:
            stats = ingest_file(con, "slurm-state", path, IngestOptions(cluster=CLUSTER_NAME))
            rejected += stats.rows_rejected
        rebuild(con, cfg)
        rows = con.sql("SELECT * FROM policy_changes").pl()
    return Ledger(changed_from, changed_to, reconfigured_from, fetched_to, rows, rejected)


def _changes(ledger: Ledger, source: str) -> list[dict[str, object]]:
    rows = ledger.rows.filter(
        (pl.col("source") == source) & (pl.col("changed_at") >= ledger.changed_from)
    )
    return rows.select("object", "key", "old", "new", "actor", "scope").to_dicts()


def test_every_spooled_line_is_read(ledger: Ledger) -> None:
    """No line of the spooled configuration, sshare, TRES or transactions is rejected."""
    assert ledger.rejected == 0


def test_sacctmgr_changes_have_old_new_actor_and_time(ledger: Ledger) -> None:
    """team-b's ``shares`` 30 → 45 (its Add gave 30) and QOS normal's GrpTRES on gres/gpu
    unset → 4 (named through ``show tres``), both by root, at slurmdbd's time of the change."""
    assert _changes(ledger, "sacctmgr list transactions") == [
        {"object": "account=team-b", "key": "shares", "old": "30", "new": "45",
         "actor": "root", "scope": "association"},
        {"object": "qos=normal", "key": "grp_tres[gres/gpu]", "old": None, "new": "4",
         "actor": "root", "scope": "qos"},
    ]  # fmt: skip
    tx = ledger.rows.filter(
        (pl.col("source") == "sacctmgr list transactions")
        & (pl.col("changed_at") >= ledger.changed_from)
    )
    assert tx["changed_at"].max() <= ledger.changed_to  # type: ignore[operator]
    assert tx["changed_after"].null_count() == tx.height


def test_reconfigure_is_dated_between_the_snapshots_without_an_actor(ledger: Ledger) -> None:
    """PriorityWeightFairShare 10000 → 20000 is the only configuration change; Slurm records
    no actor. ``Configuration data as of`` is when each snapshot was taken (seen on 22.05.8),
    so the change is dated after the reconfigure, by the second snapshot, and no later than
    its spooling, and its interval starts before the reconfigure."""
    assert _changes(ledger, "scontrol show config") == [
        {"object": "slurm.conf", "key": "PriorityWeightFairShare", "old": "10000",
         "new": "20000", "actor": None, "scope": "config"},
    ]  # fmt: skip
    row = ledger.rows.filter(pl.col("source") == "scontrol show config").row(0, named=True)
    assert row["changed_after"] <= ledger.reconfigured_from
    assert ledger.reconfigured_from <= row["changed_at"] <= ledger.fetched_to


def test_share_change_is_also_seen_in_sshare_snapshots(ledger: Ledger) -> None:
    """RawShares of team-b 30 → 45 between the two sshare snapshots; nothing else moved."""
    shares = ledger.rows.filter(pl.col("source") == "sshare")
    assert shares.select("object", "key", "old", "new", "actor").rows() == [
        ("account=team-b", "RawShares", "30", "45", None)
    ]
