"""Real Slurm 22.05 with ``topology/tree``: placements read back through the topology map, and a
gang held by ``--switches`` seen pending in the polled reasons.

The test cluster runs ``TopologyPlugin=topology/tree`` with leaf switches ``leaf1`` =
gpu-001, gpu-002 and ``leaf2`` = gpu-003, gpu-004 under ``spine``
(``tests/integration/slurm/templates/topology.conf.tmpl``). The map is read the way a site
without the file at hand would: ``scontrol show topology`` parsed by the ``topology`` kind.

Placements (one job at a time on an idle cluster, each ``sleep 5``, 8 GPUs per node):

* ``free2``: 2 nodes, no constraint: topology/tree puts it under one leaf switch:
  switch-1 used 1, min ceil(2/2) = 1, spread 0;
* ``cross2``: 2 nodes pinned to gpu-002 and gpu-003 (``--nodelist``), one per leaf:
  switch-1 used 2, min 1, spread 1;
* ``three``: 3 nodes: switch-1 used 2, min ceil(3/2) = 2, spread 0; at switch-2 (the spine)
  every job uses 1 domain of 1 needed.

Pending gang: ``hold1`` and ``hold3`` take gpu-001 and gpu-003 (8 GPUs each); the gang asks for
2 nodes × 8 GPUs with ``--switches=1``: 16 GPUs are free (gpu-002 and gpu-004) but one per
leaf, so it waits. The live source polls ``squeue`` (``SlurmStateCliSource``,
``kinds=["squeue"]``) while it waits and after the holders are cancelled; Slurm 22.05 gives the
reason ``Resources`` (it states no topology reason) with ``ReqSwitch`` 1, and the spells hold
it ``Resources`` from the first poll to the first poll that sees it running, after which it
runs under one leaf. The first of the four polls is ``goodput poll slurm`` (the command cron
runs), appending to the same spool file.

Wait causes: the day's sacct (live source), the ``scontrol show topology`` capture and the
squeue spool are ingested into a fresh warehouse and rebuilt with ``large_job_gpus = 16``;
``large_job_wait_causes`` gives the gang fragmentation = start − first poll (counterfactual:
the ``Resources`` spell's seconds take the rules at the poll, when 16 GPUs were free but one
node per leaf), METRICS.md "Why a large job waits".

Seen on 22.05.8: a 2-node job that ended within about a second of starting was recorded by
slurmdbd with NNodes 2 but a NodeList of one node; the jobs here sleep 5 s, and the test checks
NNodes against the expanded NodeList.

The module starts a cluster of its own (about 30 s; jobs submitted on the session's cluster
would enter the day ``test_slurm_pipeline.py`` compares with sreport). In all it took 88 s on
the 2-core machine (cluster start and hour alignment ~35 s, the jobs and polls ~45 s, the
ingest and rebuild a few seconds).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from metrics import job_placement
from pipelines.analytics.build import rebuild
from pipelines.cli.goodput import app
from pipelines.config import Config, load_config
from pipelines.core.pending_spells import pending_reason_spells
from pipelines.ingest import ingest_file
from pipelines.kinds import IngestOptions, input_kind
from pipelines.slurm._sacct_parse import parse_sacct
from pipelines.slurm._scontrol_nodes import inventory_from_nodes, parse_scontrol_nodes
from pipelines.slurm._squeue import parse_squeue
from pipelines.slurm.resources import SacctCliSource, SlurmStateCliSource
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.integration.slurm import CLUSTER_NAME, GPUS_PER_NODE, SlurmTestCluster, slurm_time
from tests.integration.slurm.cluster import LEAF_SWITCHES
from tests.integration.slurm.private import private_cluster

pytestmark = pytest.mark.slurm

#: ``[thresholds] large_job_gpus`` of the module's warehouse: the gang's 2 × 8 GPUs are large.
LARGE_GPUS = 16


@dataclass(frozen=True)
class TopologyRun:
    """What the module's cluster did.

    Attributes:
        topology: the ``topology`` kind's rows from ``scontrol show topology``.
        placed: job key → (JobID, sacct NodeList expanded, Start).
        free_nodes: idle nodes while the gang waited (``sinfo``).
        gang: the gang's JobID.
        polls: the spooled squeue file, parsed.
        gang_nodes: the gang's NodeList (expanded) once it ran.
        cli_poll: what ``goodput poll slurm`` printed (the first poll).
        causes: the ``large_job_wait_causes`` view after ingesting the spooled sacct,
            topology and squeue and rebuilding with ``large_job_gpus = 16``.
    """

    topology: pl.DataFrame
    placed: dict[str, tuple[str, list[str], datetime]]
    free_nodes: list[str]
    gang: str
    polls: pl.DataFrame
    gang_nodes: list[str]
    cli_poll: str
    causes: pl.DataFrame


@pytest.fixture(scope="module")
def topo_cluster() -> Iterator[SlurmTestCluster]:
    """A started cluster of this module's own, stopped when the module ends."""
    with private_cluster("goodput-slurm-topo-") as cluster:
        yield cluster


def _sacct_row(cluster: SlurmTestCluster, job_id: str) -> tuple[list[str], datetime]:
    """(NodeList expanded, Start) of a job's allocation row, read with the pipeline's sacct
    parser (NodeList expanded by its host-list code); NNodes must agree with it."""
    text = cluster.sacct_text(
        ["--allusers", "--parsable2", "-X", "-j", job_id, "--format",
         "JobID,NodeList,NNodes,Start,State"]
    )  # fmt: skip
    rows = parse_sacct("sacct.psv", text=text, cluster=CLUSTER_NAME).rows
    row = rows.filter(pl.col("job_id") == job_id).row(0, named=True)
    assert row["nnodes"] == len(row["node_list"]), text
    return list(row["node_list"]), row["start_at"]


def _run_one(cluster: SlurmTestCluster, key: str, nodes: int, extra: list[str]) -> str:
    job = cluster.sbatch(
        "sleep 5", user="alice", job_name=key, nodes=nodes, gpus_per_node=GPUS_PER_NODE,
        extra=extra,
    )  # fmt: skip
    cluster.wait_all_done(timeout=90)
    return job


@pytest.fixture(scope="module")
def run(topo_cluster: SlurmTestCluster, tmp_path_factory: pytest.TempPathFactory) -> TopologyRun:
    """Run the placements, then the pending gang with its squeue polls."""
    cluster = topo_cluster
    work = tmp_path_factory.mktemp("topo")
    config = write_config(work, clusters=((CLUSTER_NAME, "slurm", "UTC"),))
    config.write_text(config.read_text() + f"[thresholds]\nlarge_job_gpus = {LARGE_GPUS}\n")
    cfg = load_config(config)
    spool = cfg.inputs_dir
    day = cluster.now().date().isoformat()
    text = cluster.run(["scontrol", "show", "topology"]).stdout
    path = spool / CLUSTER_NAME / "topology" / f"topology_{day}.txt"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    parse = input_kind("topology").source_of(path).parse
    assert parse is not None
    topology = parse(path, IngestOptions(cluster=CLUSTER_NAME)).rows

    placed = {}
    for key, nodes, extra in (
        ("free2", 2, []),
        ("cross2", 2, ["--nodelist=gpu-002,gpu-003"]),
        ("three", 3, []),
    ):
        job = _run_one(cluster, key, nodes, extra)
        placed[key] = (job, *_sacct_row(cluster, job))

    holders = [
        cluster.sbatch(
            "sleep 300",
            user="bob",
            job_name=f"hold{n}",
            gpus_per_node=GPUS_PER_NODE,
            extra=[f"--nodelist=gpu-00{n}"],
        )
        for n in (1, 3)
    ]
    for job in holders:
        cluster.wait_for_state(job, ["RUNNING"], timeout=60)
    # -p gpu: with -N sinfo lists a node once per partition (gpu-00[1-2] are in debug too)
    free = cluster.run(["sinfo", "-h", "-N", "-p", "gpu", "-t", "idle", "-o", "%N"]).stdout.split()
    gang = cluster.sbatch(
        "sleep 5", user="carol", job_name="gang", nodes=2, gpus_per_node=GPUS_PER_NODE,
        extra=["--switches=1"],
    )  # fmt: skip
    source = SlurmStateCliSource(
        spool_dir=str(spool), slurm_conf=str(cluster.slurm_conf), env=cluster.env(),
        kinds=["squeue"], clock_offset_s=cluster.clock_offset_s,
    )  # fmt: skip
    for i in range(3):  # the backfill scheduler (expected start times) runs every 5 s
        time.sleep(5.5)
        if i == 0:  # the first poll through the CLI, as cron runs it (in process: Python must
            # not run under the faked clock, only the Slurm clients it starts)
            cli = CliRunner().invoke(
                app,
                ["poll", "slurm", "--cluster", CLUSTER_NAME, "--kinds", "squeue",
                 "--slurm-conf", str(cluster.slurm_conf),
                 "--clock-offset-s", str(cluster.clock_offset_s)],
                env={**cluster.env(), "GOODPUT_CONFIG": str(config)},
            )  # fmt: skip
            assert cli.exit_code == 0, cli.output
            continue
        (spooled,) = source.fetch(CLUSTER_NAME, day)
    cluster.run(["scancel", *holders])
    cluster.wait_for_state(gang, ["RUNNING", "COMPLETING", "COMPLETED"], timeout=60)
    time.sleep(1.1)  # a poll time of its own (polls are stamped to the second)
    (spooled,) = source.fetch(CLUSTER_NAME, day)
    cluster.wait_all_done(timeout=90)
    gang_nodes, _ = _sacct_row(cluster, gang)
    polls = parse_squeue(spooled, cluster=CLUSTER_NAME).rows
    causes = _rebuild(cluster, cfg, day, path, spooled)
    return TopologyRun(topology, placed, free, gang, polls, gang_nodes, cli.output, causes)


def _rebuild(
    cluster: SlurmTestCluster, cfg: Config, day: str, topology: Path, squeue: Path
) -> pl.DataFrame:
    """The day's sacct and node inventory fetched live, ingested with the topology and squeue
    spools into a fresh warehouse, rebuilt; the ``large_job_wait_causes`` view read back."""
    env, conf = cluster.env(), str(cluster.slurm_conf)
    spool = str(cfg.inputs_dir)
    (sacct,) = SacctCliSource(spool_dir=spool, slurm_conf=conf, env=env).fetch(CLUSTER_NAME, day)
    (nodes,) = SlurmStateCliSource(
        spool_dir=spool, slurm_conf=conf, env=env, kinds=["nodes"]
    ).fetch(CLUSTER_NAME, day)
    cfg.inventory_dir.mkdir(parents=True, exist_ok=True)
    inventory_from_nodes(parse_scontrol_nodes(nodes, cluster=CLUSTER_NAME).rows).write_csv(
        cfg.inventory_dir / f"{CLUSTER_NAME}.csv"
    )
    opts = IngestOptions(cluster=CLUSTER_NAME, tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, file in (("sacct", sacct), ("topology", topology), ("slurm-squeue", squeue)):
            ingest_file(con, kind, file, opts)
        rebuild(con, cfg)
        causes: pl.DataFrame = con.sql(
            "SELECT * FROM large_job_wait_causes WHERE cluster = ?", params=[CLUSTER_NAME]
        ).pl()
    return causes


def test_scontrol_show_topology_gives_the_configured_leaves(run: TopologyRun) -> None:
    """slurmctld's own map: leaf1 = gpu-001,002 and leaf2 = gpu-003,004 at switch-1, the spine
    over all 4 at switch-2."""
    got = {
        (r["level"], r["domain"]): sorted(r["node"])
        for r in run.topology.group_by("level", "domain").agg(pl.col("node")).iter_rows(named=True)
    }
    assert got == {
        ("switch-1", "leaf1"): list(LEAF_SWITCHES["leaf1"]),
        ("switch-1", "leaf2"): list(LEAF_SWITCHES["leaf2"]),
        ("switch-2", "spine"): ["gpu-001", "gpu-002", "gpu-003", "gpu-004"],
    }


def test_placements_read_back_through_the_map_give_the_hand_computed_spread(
    run: TopologyRun,
) -> None:
    """sacct's NodeList of each job, expanded and joined to the map in force at its start:
    free2 under one leaf (used 1, min 1, spread 0), cross2 over both (2, 1, 1), three over
    both (2, ceil(3/2) = 2, 0); at the spine every job 1, 1, 0."""
    jobs = pl.DataFrame(
        {
            "cluster": [CLUSTER_NAME] * 3,
            "job_id": [run.placed[k][0] for k in ("free2", "cross2", "three")],
            "attempt": [0, 0, 0],
            "start_at": [run.placed[k][2] for k in ("free2", "cross2", "three")],
            "node_list": [run.placed[k][1] for k in ("free2", "cross2", "three")],
        }
    )
    assert [len(n) for n in jobs["node_list"]] == [2, 2, 3]
    # the map as parsed: valid from the capture's day (00:00, cluster clock), before every start
    topo = run.topology.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("valid_to"))
    placed = job_placement(jobs.lazy(), topo.lazy()).collect()
    by = {
        (r["job_id"], r["level"]): (r["nodes"], r["domain_size"], r["domains_used"],
                                    r["domains_min"], r["spread"])
        for r in placed.iter_rows(named=True)
    }  # fmt: skip
    free2, cross2, three = (run.placed[k][0] for k in ("free2", "cross2", "three"))
    assert by[(free2, "switch-1")] == (2, 2, 1, math.ceil(2 / 2), 0)
    assert by[(cross2, "switch-1")] == (2, 2, 2, 1, 1)
    assert by[(three, "switch-1")] == (3, 2, 2, math.ceil(3 / 2), 0)
    for job in (free2, cross2, three):
        assert by[(job, "switch-2")][2:] == (1, 1, 0)


def test_the_switch_bound_gang_waits_with_enough_gpus_free_by_count(run: TopologyRun) -> None:
    """While it waited, gpu-002 and gpu-004 were idle: 2 × 8 = 16 GPUs, what the gang asks
    for, but one node under each leaf; every poll before the holders left saw it PENDING for
    Resources with ReqSwitch 1 (22.05 states no topology reason)."""
    assert sorted(run.free_nodes) == ["gpu-002", "gpu-004"]
    assert len(run.free_nodes) * GPUS_PER_NODE == 2 * GPUS_PER_NODE
    leaves = {leaf for n in run.free_nodes for leaf, ns in LEAF_SWITCHES.items() if n in ns}
    assert leaves == {"leaf1", "leaf2"}
    gang = run.polls.filter(pl.col("job_id") == run.gang).sort("poll_at")
    assert gang["state"].to_list() == ["PENDING", "PENDING", "PENDING", "RUNNING"]
    pending = gang.filter(pl.col("state") == "PENDING")
    assert pending["reason"].unique().to_list() == ["Resources"]
    assert pending["req_switch"].unique().to_list() == [1]


def test_the_spells_record_the_wait_and_the_gang_runs_under_one_leaf(run: TopologyRun) -> None:
    """One spell: Resources from the first poll to the fourth (where it ran), 3 polls,
    seconds = poll₄ − poll₁ (each gap under the 600-s cap); then it ran on one leaf."""
    times = run.polls.select("poll_at").unique().sort("poll_at")["poll_at"].to_list()
    assert len(times) == 4
    spells = pending_reason_spells(run.polls.lazy()).collect().filter(pl.col("job_id") == run.gang)
    assert spells.height == 1
    spell = spells.row(0, named=True)
    assert (spell["reason"], spell["polls"], spell["req_switch"]) == ("Resources", 3, 1)
    assert (spell["spell_start"], spell["spell_end"]) == (times[0], times[3])
    assert spell["seconds"] == int((times[3] - times[0]).total_seconds())
    assert 8 <= spell["seconds"] <= 120
    nodes = run.gang_nodes
    assert any(sorted(nodes) == list(ns) for ns in LEAF_SWITCHES.values()), nodes


def test_poll_times_are_on_the_cluster_clock(run: TopologyRun) -> None:
    """The live source stamps polls on the cluster's (faked) clock, so a pending job's expected
    start is after its poll, not an hour away from it."""
    pending = run.polls.filter(pl.col("state") == "PENDING")
    gaps = (pending["expected_start"] - pending["poll_at"]).dt.total_seconds().to_list()
    assert all(0 <= g <= 600 for g in gaps), (gaps, slurm_time(pending["poll_at"][0]))


def test_the_cli_poll_spools_where_the_live_source_appends(run: TopologyRun) -> None:
    """``goodput poll slurm`` wrote the first of the four polls into the file the live source
    then appended to (``<inputs>/<cluster>/squeue/squeue_<day>.txt``), stamped on the cluster's
    clock (the faked clock reaches the CLI too): its poll saw the gang pending."""
    (line,) = run.cli_poll.splitlines()
    assert line.startswith("spooled ") and line.endswith(".txt")
    assert f"/{CLUSTER_NAME}/squeue/squeue_" in line
    first = run.polls.filter(pl.col("poll_at") == run.polls["poll_at"].min())
    assert first.filter(pl.col("job_id") == run.gang)["state"].to_list() == ["PENDING"]


def test_the_switch_bound_gang_gets_fragmentation_delay_from_the_polled_reasons(
    run: TopologyRun,
) -> None:
    """``large_job_wait_causes`` with ``large_job_gpus = 16``: the gang (16 GPUs, n = 2 nodes of
    8, H = 2 per leaf, k = 1) was seen pending for ``Resources`` (no cause stated) from the first
    poll P₁ to its start S. At P₁ the holders ran on gpu-001 and gpu-003: 32 − 16 = 16 free GPUs
    ≥ 16, but each leaf has 1 whole free node < 2 → fragmentation = S − P₁ (counterfactual,
    METRICS.md), idle while blocked 16 × (S − P₁). Before P₁ ([E, P₁)) the hour-start rule:
    at the hour start nothing ran, a leaf had 2 free nodes → other = P₁ − E."""
    gang = run.causes.filter(pl.col("job_id") == run.gang)
    assert gang.height == 1
    row = gang.row(0, named=True)
    first_poll = run.polls["poll_at"].min()
    eligible, start = row["eligible_at"], row["start_at"]
    assert eligible <= first_poll < start
    frag = (start - first_poll).total_seconds()
    before = (first_poll - eligible).total_seconds()
    assert 8 <= frag <= 120
    assert (row["req_gpus"], row["req_nodes"], row["basis"]) == (16.0, 2, "counterfactual")
    assert (row["wait_s"], row["quota_s"], row["priority_s"]) == (frag + before, 0.0, 0.0)
    assert (row["fragmentation_s"], row["other_s"]) == (frag, before)
    assert row["blocked_idle_gpu_s"] == 16 * frag
    # the jobs placed on an idle cluster waited for no topology
    others = run.causes.filter(pl.col("job_id") != run.gang)
    assert others["fragmentation_s"].to_list() == [0.0] * others.height
