"""Real Slurm 22.05: the live ``jobs`` state source maps running jobs to their nodes' GPU indices.

Two jobs that sleep — a 2-node 16-GPU job and a 3-GPU job — are submitted, and once they run the
live source's ``jobs`` command (:class:`~pipelines.slurm.resources.SlurmStateCliSource`,
``kinds=["jobs"]``, run with the cluster's environment) is spooled and parsed with
:func:`~pipelines.slurm._scontrol_jobs.parse_scontrol_jobs`. The rows are checked against
``scontrol show job -d`` (printed by the test; run ``pytest -s`` to see it), read here with a
plain regular expression and python-hostlist, and against what the jobs asked for: 8 GPUs on
each of 2 nodes, 3 distinct GPUs on one node.

The module starts a cluster of its own (about 30 s) instead of using the session's
``slurm_cluster``: any job submitted there after its job mix would enter sacct's record of the
fixture's day, which ``test_slurm_pipeline.py`` compares with the mix and with sreport. This
cluster is stopped (its jobs cancelled) when the module ends.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import hostlist
import polars as pl
import pytest

from pipelines._parse_result import ParseResult
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.slurm._scontrol_jobs import parse_scontrol_jobs
from pipelines.slurm.resources import SlurmStateCliSource
from pipelines.warehouse import connect, init_warehouse
from tests.integration.slurm import (
    CLUSTER_NAME,
    GPUS_PER_NODE,
    NODE_NAMES,
    SlurmTestCluster,
)
from tests.integration.slurm.private import private_cluster

pytestmark = pytest.mark.slurm


#: A ``Nodes=… GRES=gpu…(IDX:…)`` entry as ``scontrol show job -d`` prints it (the test's own
#: reading, independent of the parser).
_DETAIL = re.compile(r"^\s*Nodes=(?P<nodes>\S+) CPU_IDs=\S* Mem=\S* GRES=(?P<gres>\S*)\s*$")
_IDX = re.compile(r"^gpu(?::[^:(]+)?:(?P<count>\d+)\(IDX:(?P<idx>[0-9,\-]+)\)$")


@dataclass(frozen=True)
class GresMap:
    """The two running jobs and what the live source and ``scontrol show job -d`` said.

    Attributes:
        cluster: the module's cluster (running until the module ends).
        two_node: job id of the 2-node, 16-GPU job.
        three_gpu: job id of the 3-GPU job.
        idle_text: the ``jobs`` output before anything was submitted.
        idle: that output parsed.
        spooled: the file the live source wrote while both jobs ran.
        live: that file parsed.
        shown: ``scontrol show job -d`` (every job, multi-line, ISO times in UTC) taken right
            after.
        after_cancel: the ``jobs`` output parsed once both jobs were cancelled and gone.
        queue_after: ``squeue -h`` once both jobs were cancelled (empty: the cluster is idle).
        fetched_at: when the live source ran (cluster clock).
    """

    cluster: SlurmTestCluster
    two_node: str
    three_gpu: str
    idle_text: str
    idle: ParseResult
    spooled: Path
    live: ParseResult
    shown: str
    after_cancel: ParseResult
    queue_after: str
    fetched_at: datetime


@pytest.fixture(scope="module")
def gres_cluster() -> Iterator[SlurmTestCluster]:
    """A started 4-node, 32-GPU cluster of this module's own, stopped when the module ends."""
    with private_cluster("goodput-slurm-gres-") as cluster:
        yield cluster


def _fetch(cluster: SlurmTestCluster, spool: Path) -> tuple[Path, ParseResult]:
    """Run the live source's ``jobs`` command once, spooling under ``spool``; parse the file."""
    source = SlurmStateCliSource(
        spool_dir=str(spool), slurm_conf=str(cluster.slurm_conf), env=cluster.env(),
        kinds=["jobs"],
    )  # fmt: skip
    now = cluster.now()
    (path,) = source.fetch(CLUSTER_NAME, now.date().isoformat())
    return path, parse_scontrol_jobs(path, cluster=CLUSTER_NAME, snapshot_at=now)


@pytest.fixture(scope="module")
def gres_map(gres_cluster: SlurmTestCluster, tmp_path_factory: pytest.TempPathFactory) -> GresMap:
    """Submit the two jobs, fetch the map while they run, then cancel them and fetch again."""
    cluster = gres_cluster
    spool = tmp_path_factory.mktemp("gres-map-spool")
    idle_path, idle = _fetch(cluster, spool / "idle")
    two_node = cluster.sbatch(
        "sleep 300", user="bob", job_name="gres-two-node", nodes=2,
        gpus_per_node=GPUS_PER_NODE, extra=["--ntasks-per-node=1"],
    )  # fmt: skip
    three_gpu = cluster.sbatch("sleep 300", user="alice", job_name="gres-three", gpus_per_node=3)
    try:
        for job in (two_node, three_gpu):
            cluster.wait_for_state(job, ["RUNNING"], timeout=60)
        deadline = time.monotonic() + 30
        while True:  # the GRES detail is set at allocation; poll in case it lags
            fetched_at = cluster.now()
            spooled, live = _fetch(cluster, spool / "running")
            if {two_node, three_gpu} <= set(live.rows["job_id"]) or time.monotonic() > deadline:
                break
            time.sleep(1)
        shown = cluster.run(["scontrol", "show", "job", "-d"]).stdout  # every job: these two
    finally:
        cluster.run(["scancel", two_node, three_gpu], check=False)
        cluster.wait_all_done(timeout=60)
    _path, after_cancel = _fetch(cluster, spool / "cancelled")
    queue_after = cluster.run(["squeue", "-h"]).stdout
    return GresMap(
        cluster=cluster,
        two_node=two_node,
        three_gpu=three_gpu,
        idle_text=idle_path.read_text(encoding="utf-8"),
        idle=idle,
        spooled=spooled,
        live=live,
        shown=shown,
        after_cancel=after_cancel,
        queue_after=queue_after,
        fetched_at=fetched_at,
    )


def shown_gpus(text: str) -> dict[str, dict[str, list[int]]]:
    """``scontrol show job -d`` text → job id → host → GPU indices, read without the parser."""
    out: dict[str, dict[str, list[int]]] = {}
    job = ""
    for line in text.splitlines():
        if line.startswith("JobId="):
            job = line.split()[0].removeprefix("JobId=")
            out[job] = {}
        elif m := _DETAIL.match(line):
            g = _IDX.match(m.group("gres"))
            assert g, f"unexpected GRES entry in: {line!r}"
            indices = [int(i) for i in hostlist.expand_hostlist(f"[{g.group('idx')}]")]
            assert len(indices) == int(g.group("count")), line
            for host in hostlist.expand_hostlist(m.group("nodes")):
                out[job][host] = indices
    return out


def live_gpus(rows: pl.DataFrame, job: str) -> dict[str, list[int]]:
    """The parsed rows of ``job`` as host → GPU indices."""
    frame = rows.filter(pl.col("job_id") == job).sort("node")
    return dict(zip(frame["node"], frame["gpu_indices"].to_list(), strict=True))


def test_idle_cluster_has_an_empty_map(gres_map: GresMap) -> None:
    """Before any job: scontrol's "No jobs in the system" parses to no row and no reject."""
    assert gres_map.idle_text.strip() == "No jobs in the system"
    assert (gres_map.idle.rows.height, gres_map.idle.rejected.height) == (0, 0)


def test_live_file_is_spooled_and_parses_cleanly(gres_map: GresMap) -> None:
    """``<spool>/<cluster>/slurm_state/jobs_<day>.txt``: one-liners, nothing rejected."""
    path = gres_map.spooled
    assert path.name == f"jobs_{gres_map.fetched_at.date().isoformat()}.txt"
    assert path.parent.parts[-2:] == (CLUSTER_NAME, "slurm_state")
    assert gres_map.live.rejected.height == 0, gres_map.live.rejected.to_dicts()
    text = path.read_text(encoding="utf-8")
    assert all(line.startswith("JobId=") for line in text.splitlines() if line.strip())
    assert set(gres_map.live.rows["job_id"]) == {gres_map.two_node, gres_map.three_gpu}


def test_two_node_job_holds_eight_gpus_on_each_node(gres_map: GresMap) -> None:
    """The 16-GPU job: 2 nodes, each with all 8 GPUs (indices 0-7), as scontrol shows them."""
    print(f"\n--- scontrol show job -d ---\n{gres_map.shown}")
    shown = shown_gpus(gres_map.shown)
    live = live_gpus(gres_map.live.rows, gres_map.two_node)
    assert live == shown[gres_map.two_node], gres_map.shown
    assert len(live) == 2 and set(live) <= set(NODE_NAMES)
    assert all(indices == list(range(GPUS_PER_NODE)) for indices in live.values())
    rows = gres_map.live.rows.filter(pl.col("job_id") == gres_map.two_node)
    assert rows["gpus"].to_list() == [GPUS_PER_NODE, GPUS_PER_NODE]


def test_three_gpu_job_holds_three_distinct_indices(gres_map: GresMap) -> None:
    """The 3-GPU job: one node, 3 distinct indices in 0-7, as scontrol shows them."""
    shown = shown_gpus(gres_map.shown)
    live = live_gpus(gres_map.live.rows, gres_map.three_gpu)
    assert live == shown[gres_map.three_gpu], gres_map.shown
    ((node, indices),) = live.items()
    assert node in NODE_NAMES
    assert len(set(indices)) == 3 and set(indices) <= set(range(GPUS_PER_NODE))
    # the 2-node job holds every GPU of its nodes, so this one runs elsewhere
    assert node not in live_gpus(gres_map.live.rows, gres_map.two_node)


def test_rows_carry_state_start_and_snapshot(gres_map: GresMap) -> None:
    """RUNNING, untyped GRES, start times (epoch in the spooled file) near the snapshot."""
    rows = gres_map.live.rows
    assert set(rows["job_state"]) == {"RUNNING"}
    assert rows["gpu_type"].null_count() == rows.height
    assert rows["array_job_id"].null_count() == rows.height
    assert set(rows["cluster"]) == {CLUSTER_NAME}
    for start, snap in zip(rows["start_at"], rows["snapshot_at"], strict=True):
        assert timedelta(0) <= snap - start < timedelta(minutes=2)


def test_multiline_output_gives_the_same_rows(gres_map: GresMap) -> None:
    """The printed multi-line form (ISO times, TZ=UTC) parses to the spooled one-liners' rows."""
    shown = parse_scontrol_jobs("shown.txt", cluster=CLUSTER_NAME, text=gres_map.shown)
    assert shown.rejected.height == 0
    columns = ["job_id", "node", "gpu_indices", "gpus", "start_at", "job_state"]
    assert (
        shown.rows.select(columns)
        .sort("job_id", "node")
        .equals(gres_map.live.rows.select(columns).sort("job_id", "node"))
    )


def test_spooled_file_loads_into_the_warehouse(gres_map: GresMap, tmp_path: Path) -> None:
    """``goodput ingest``'s path: the ``slurm-state`` file lands in raw.slurm_job_gres."""
    with connect(tmp_path / "warehouse.duckdb") as con:
        init_warehouse(con)
        stats = ingest_file(
            con, "slurm-state", gres_map.spooled, IngestOptions(cluster=CLUSTER_NAME)
        )
        loaded = con.sql("SELECT count(*), sum(gpus) FROM raw.slurm_job_gres").fetchall()
    assert (stats.source, stats.rows_loaded, stats.rows_rejected) == ("slurm-jobs-gres", 3, 0)
    assert loaded == [(3, 2 * GPUS_PER_NODE + 3)]


def test_cancelled_jobs_leave_the_map_and_the_cluster_idle(gres_map: GresMap) -> None:
    """Once cancelled (slurmctld still lists them, ``GRES=`` empty) they hold no GPU."""
    assert (gres_map.after_cancel.rows.height, gres_map.after_cancel.rejected.height) == (0, 0)
    assert gres_map.queue_after.strip() == ""
