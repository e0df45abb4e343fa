"""Real Slurm through the pipeline: what it publishes agrees with sreport and with sacct.

Two clusters go through the code path the pipeline uses — ``ingest_file`` into a fresh warehouse,
then ``rebuild`` — and the published views are compared with Slurm's own numbers
(METRICS.md "Reconciliation"):

* the ``slurm_cluster`` fixture's live cluster, read through the LIVE sources
  (:class:`~pipelines.slurm.resources.SacctCliSource` and
  :class:`~pipelines.slurm.resources.SlurmStateCliSource`, run with the cluster's environment);
  its goodput.toml puts it in America/New_York, as a real site might, so the test also shows
  that the spooled files do not depend on the zone they are read in;
* the shared lab capture in ``tests/fixtures/slurm-22.05-lab/`` (no cluster needed).

For the hour sreport rolled up: Σ ``allocated_gpu_s`` = sreport *Allocated*; capacity = sreport
*Reported*, from the cluster's TRES registration events and (where the cluster was up all hour)
from the inventory built out of ``scontrol show nodes``; held + idle of the waterfall = sreport
*Idle* + *Planned* (sreport's GPU Planned is always 0: see that test); job, attempt and state
counts = what sacct printed; the requeued job has two attempts. Each sreport comparison applies
the named rules of METRICS.md "Comparison with Slurm" (``tests/integration/slurm/reconcile.py``)
and holds within 0.1 % of sreport's figure.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines._parse_result import ParseResult
from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.core.node_states import registered_gpu_seconds_hourly
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.slurm._sacctmgr_events import parse_sacctmgr_events
from pipelines.slurm._scontrol_nodes import inventory_from_nodes, parse_scontrol_nodes
from pipelines.slurm._sdiag import parse_sdiag
from pipelines.slurm._sprio import parse_sprio
from pipelines.slurm._sshare import parse_sshare
from pipelines.slurm.resources import SacctCliSource, SlurmStateCliSource
from pipelines.warehouse import IngestStats, connect, init_warehouse
from tests.conftest import FIXTURES, write_config
from tests.integration.slurm import (
    CLUSTER_NAME,
    GPUS_PER_NODE,
    NODE_NAMES,
    ClusterRun,
    slurm_time,
)
from tests.integration.slurm.reconcile import (
    assert_reconciles,
    assert_seconds_header,
    before_registration_gpu_s,
    running_at_rollup_gpu_s,
)

LAB = FIXTURES / "slurm-22.05-lab"
LAB_CLUSTER = "lab"
#: The live cluster's zone in its goodput.toml: not UTC on purpose (see the module docstring).
LIVE_TZ = "America/New_York"

Row = dict[str, str]


# --------------------------------------------------------------------------- helpers


def write_cluster_config(folder: Path, cluster: str, timezone: str) -> Path:
    """A goodput.toml in ``folder`` for one Slurm cluster in ``timezone``."""
    return write_config(folder, clusters=((cluster, "slurm", timezone),))


@dataclass(frozen=True)
class Published:
    """What the pipeline published for one cluster, read back from the warehouse views."""

    cfg: Config
    stats: IngestStats
    occupancy: pl.DataFrame
    slurm_jobs: pl.DataFrame
    jobs: pl.DataFrame
    waterfall: pl.DataFrame


def run_pipeline(
    work: Path, cluster: str, timezone: str, sacct: Path, nodes: ParseResult
) -> Published:
    """Ingest one sacct file and the node inventory into a fresh warehouse, rebuild, read back."""
    cfg = load_config(write_cluster_config(work, cluster, timezone))
    cfg.inventory_dir.mkdir(parents=True, exist_ok=True)
    inventory_from_nodes(nodes.rows).write_csv(cfg.inventory_dir / f"{cluster}.csv")
    # the options the raw asset uses: the cluster's configured zone for naive times
    opts = IngestOptions(cluster=cluster, tz=cfg.cluster(cluster).timezone)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        stats = ingest_file(con, "sacct", sacct, opts)
        rebuild(con, cfg)

        def view(name: str) -> pl.DataFrame:
            frame: pl.DataFrame = con.sql(
                f"SELECT * FROM {name} WHERE cluster = ?", params=[cluster]
            ).pl()
            return frame

        return Published(
            cfg, stats, view("occupancy_hourly"), view("slurm_jobs"), view("jobs"),
            view("gpu_waterfall_hourly"),
        )  # fmt: skip


def sacct_rows(text: str) -> list[Row]:
    """sacct ``--parsable2`` text → one dict per line, keyed by the header."""
    header, *lines = text.splitlines()
    names = header.split("|")
    return [dict(zip(names, line.split("|"), strict=True)) for line in lines if line]


def allocation_rows(text: str) -> list[Row]:
    """Allocation rows (one per job attempt, or the pending row), not steps (``12.batch``)."""
    return [row for row in sacct_rows(text) if "." not in row["JobID"]]


def started(row: Row) -> bool:
    """Whether sacct printed a start time (``None``/``Unknown`` when the job never ran)."""
    return row["Start"] not in ("None", "Unknown", "")


def hour_row(published: Published, hour: datetime) -> dict[str, Any]:
    """The ``occupancy_hourly`` row of ``hour``."""
    rows = published.occupancy.filter(pl.col("hour") == hour)
    assert rows.height == 1, published.occupancy
    return rows.row(0, named=True)


def allocation_state_counts(published: Published) -> Counter[str]:
    """Allocation rows of ``slurm_jobs`` by state."""
    states = published.slurm_jobs.filter(pl.col("is_allocation"))["state"].to_list()
    return Counter(states)


def sreport_file(path: Path) -> tuple[datetime, dict[str, int]]:
    """The hour and ``gres/gpu`` numbers of a saved ``sreport -P cluster utilization``.

    The capture must be in seconds (rule "whole rolled-up hours, in seconds").
    """
    hour = None
    text = path.read_text(encoding="utf-8")
    assert_seconds_header(text)
    for line in text.splitlines():
        if line.startswith("Cluster Utilization "):
            start = line.removeprefix("Cluster Utilization ").split(" - ")[0]
            hour = datetime.fromisoformat(start).replace(tzinfo=UTC)
        fields = line.split("|")
        if len(fields) == 8 and fields[1] == "gres/gpu":
            keys = ("Allocated", "Down", "PlannedDown", "Idle", "Planned", "Reported")
            assert hour is not None
            return hour, {key: int(value) for key, value in zip(keys, fields[2:], strict=True)}
    raise AssertionError(f"no gres/gpu line in {path}")


# --------------------------------------------------------------------------- the live cluster


@dataclass(frozen=True)
class LiveRun:
    """The live cluster's hour, fetched by the live sources and run through the pipeline."""

    run: ClusterRun
    sacct_text: str
    state: dict[str, Path]
    nodes: ParseResult
    events: ParseResult
    published: Published


@pytest.fixture(scope="module")
def live(slurm_cluster: ClusterRun, tmp_path_factory: pytest.TempPathFactory) -> LiveRun:
    """Fetch the fixture's day through the live sources, then ingest and rebuild.

    The day is the one of the rolled-up hour on the cluster's clock (its daemons run up to an
    hour behind the host's, so the host's date can be the next day just after midnight).
    """
    cluster = slurm_cluster.cluster
    day = slurm_cluster.hour_start.date().isoformat()
    work = tmp_path_factory.mktemp("live-pipeline")
    spool = str(work / "inputs")
    env, conf = cluster.env(), str(cluster.slurm_conf)
    (sacct_file,) = SacctCliSource(spool_dir=spool, slurm_conf=conf, env=env).fetch(
        CLUSTER_NAME, day
    )
    state_files = SlurmStateCliSource(spool_dir=spool, slurm_conf=conf, env=env).fetch(
        CLUSTER_NAME, day
    )
    state = {path.name.split("_")[0]: path for path in state_files}
    nodes = parse_scontrol_nodes(state["nodes"], cluster=CLUSTER_NAME)
    events = parse_sacctmgr_events(state["events"], cluster=CLUSTER_NAME)
    published = run_pipeline(work, CLUSTER_NAME, LIVE_TZ, sacct_file, nodes)
    return LiveRun(
        run=slurm_cluster,
        sacct_text=sacct_file.read_text(encoding="utf-8"),
        state=state,
        nodes=nodes,
        events=events,
        published=published,
    )


@pytest.mark.slurm
def test_live_sources_spool_where_the_pipeline_reads(live: LiveRun) -> None:
    """sacct goes to ``<inputs>/<cluster>/sacct/sacct_<day>.psv``, state to ``slurm_state/``."""
    day = live.run.hour_start.date().isoformat()
    inputs = live.published.cfg.inputs_dir / CLUSTER_NAME
    assert live.published.stats.file == str(inputs / "sacct" / f"sacct_{day}.psv")
    assert sorted(live.state) == [
        "events", "nodes", "scontrol", "sdiag", "sprio", "sshare", "transactions", "tres",
    ]  # fmt: skip
    assert live.state["scontrol"] == inputs / "slurm_state" / f"scontrol_config_{day}.txt"
    assert live.state["events"] == inputs / "slurm_state" / f"events_{day}.txt"


@pytest.mark.slurm
def test_live_day_window_holds_every_job_of_the_hour(live: LiveRun) -> None:
    """The UTC day sacct was asked for holds every allocation the hour's own capture holds."""
    assert live.published.stats.rows_rejected == 0
    day_ids = Counter(row["JobID"] for row in allocation_rows(live.sacct_text))
    hour_ids = Counter(row["JobID"] for row in allocation_rows(live.run.sacct_text))
    assert day_ids == hour_ids
    assert set(day_ids) == {job.job_id for job in live.run.mix.jobs}


def live_registered_gpu_s(live: LiveRun) -> float:
    """GPUs × registered seconds in the rolled-up hour, from the live registration events.

    sreport counts the rolled-up hour as complete (slurmdbd rolled it up with its clock an hour
    ahead); on the rest of the cluster's clock it is still under way, so the open registration
    event is counted to the hour's end, not to ``cluster.now()``.
    """
    registered = registered_gpu_seconds_hourly(
        live.events.rows.lazy(), live.run.hour_start, live.run.hour_end,
        as_of=live.run.hour_end,
    ).collect()  # fmt: skip
    ((cluster, hour, capacity),) = registered.rows()
    assert (cluster, hour) == (CLUSTER_NAME, live.run.hour_start)
    value: float = capacity
    return value


def live_running_at_rollup_gpu_s(live: LiveRun) -> float:
    """Rule "running at the rollup" for the live hour, from sacct's capture right after it."""
    as_of = hour_row(live.published, live.run.hour_start)["as_of"]
    rows = allocation_rows(live.run.sacct_text)
    return running_at_rollup_gpu_s(rows, live.run.hour_end, as_of)


@pytest.mark.slurm
def test_live_allocated_matches_sreport(live: LiveRun) -> None:
    """Σ ``allocated_gpu_s`` of the hour = sreport's Allocated GPU-seconds, within 0.1 %.

    Rule "running at the rollup" is applied; it is 0 here, because the fixture rolls the hour up
    only once every job has ended and slurmctld has handed slurmdbd every record. One run
    measured ours 728 GPU-s = sreport 728 (residual 0).
    """
    row = hour_row(live.published, live.run.hour_start)
    assert live.run.sreport["Allocated"] > 0
    running = live_running_at_rollup_gpu_s(live)
    assert_reconciles("Allocated", row["allocated_gpu_s"], live.run.sreport["Allocated"], running)
    # the whole mix ran inside the hour: no other hour holds allocated time
    assert live.published.occupancy["allocated_gpu_s"].sum() == row["allocated_gpu_s"]


@pytest.mark.slurm
def test_live_capacity_matches_sreport_reported(live: LiveRun) -> None:
    """Capacity = sreport's Reported (32 GPUs × 3600 s), from the events and from the inventory."""
    reported = live.run.sreport["Reported"]
    assert reported == len(NODE_NAMES) * GPUS_PER_NODE * 3600
    assert live.events.rejected.height == 0
    # the hour is still under way on the cluster's clock (see live_registered_gpu_s)
    assert live.run.cluster.now() < live.run.hour_end
    assert live_registered_gpu_s(live) == float(reported)
    row = hour_row(live.published, live.run.hour_start)
    assert (row["capacity_gpu_s"], row["capacity_source"]) == (float(reported), "inventory")
    # both capacity sources see the same GPUs
    (registered_gpus,) = live.events.rows.filter(pl.col("event") == "cluster")["gpus"].to_list()
    assert registered_gpus == live.nodes.rows["gpus"].sum() == len(NODE_NAMES) * GPUS_PER_NODE


@pytest.mark.slurm
def test_live_held_plus_idle_matches_sreport_idle_plus_planned(live: LiveRun) -> None:
    """held + idle of the hour (``gpu_waterfall_hourly``) = sreport's Idle + Planned, within 0.1 %.

    Both sides are the hour's capacity that was neither allocated nor down: ours = capacity −
    down − planned_down − allocated (leaves 10 and 11), sreport's = Reported − Allocated − Down −
    PLND Down (its Idle and Planned). The split between the two differs by construction:
    slurmdbd's hourly rollup (``_add_planned_time`` in ``as_mysql_rollup.c``) adds planned time
    for the CPU TRES only (CPUs requested × eligible-pending seconds), so sreport's GPU *Planned*
    is always 0 and every idle GPU-second is its *Idle*. Our ``held`` = min(unallocated, eligible
    pending GPU demand) is not 0: the whole-cluster job of the mix pended for resources (32 GPUs
    × its wait) while GPUs stood idle. So only the sum reconciles, leaf for leaf it cannot: held
    > 0 = sreport GPU Planned (0) is the documented difference (METRICS.md "Comparison with
    Slurm"). The same hour's CPU Planned is > 0, which shows the rule on the real cluster.

    Rules "registration" and "running at the rollup" are applied (both 0 here: the cluster
    registered before the hour began and every job had ended before the rollup). One run
    measured held 2288 + idle 112184 = 114472 GPU-s = sreport Idle 114472 + Planned 0.
    """
    hour = live.run.hour_start
    rows = live.published.waterfall.filter(pl.col("hour") == hour)
    by_leaf = dict(zip(rows["bucket"].to_list(), rows["gpu_s"].to_list(), strict=True))
    sreport = live.run.sreport
    assert (sreport["Down"], sreport["PlannedDown"]) == (0, 0)
    assert sreport["Planned"] == 0  # GPU planned time: never counted by slurmdbd (docstring)
    unallocated = sreport["Idle"] + sreport["Planned"]
    assert unallocated == sreport["Reported"] - sreport["Allocated"]
    # shown with `pytest -rP`: the figures the reconciliation compares
    print(f"held {by_leaf['held']:.0f} + idle {by_leaf['idle']:.0f} GPU-s vs sreport {sreport}")
    assert by_leaf["held"] > 0  # the whole-cluster job waited for resources
    row = hour_row(live.published, hour)
    before = before_registration_gpu_s(row["capacity_gpu_s"], live_registered_gpu_s(live))
    rules = -before - live_running_at_rollup_gpu_s(live)
    assert_reconciles("held + idle", by_leaf["held"] + by_leaf["idle"], unallocated, rules)
    # and the waterfall's down leaves are sreport's (none this hour: exactly 0 on both sides)
    assert_reconciles("Down", by_leaf["down"], sreport["Down"])
    assert_reconciles("PlannedDown", by_leaf["planned_down"], sreport["PlannedDown"])
    # sreport does count planned time, for CPUs: the same hour's CPU Planned is not 0
    argv = [
        "sreport", "-P", "-n", "cluster", "utilization", "-T", "cpu", "-t", "seconds",
        f"start={slurm_time(hour)}", f"end={slurm_time(live.run.hour_end)}",
    ]  # fmt: skip
    cpu = [
        line.split("|")
        for line in live.run.cluster.run(argv).stdout.splitlines()
        if line.startswith(f"{CLUSTER_NAME}|cpu|")
    ]
    assert len(cpu) == 1 and int(cpu[0][6]) > 0, cpu


@pytest.mark.slurm
def test_live_inventory_is_the_cluster_nodes(live: LiveRun) -> None:
    """``scontrol show nodes`` through the live source: 4 idle nodes × 8 GPUs, partitions."""
    assert live.nodes.rejected.height == 0
    rows = live.nodes.rows.select("host", "gpus", "partition", "partitions", "base_state")
    assert rows.rows() == [
        ("gpu-001", 8.0, "gpu", ["gpu", "debug"], "IDLE"),
        ("gpu-002", 8.0, "gpu", ["gpu", "debug"], "IDLE"),
        ("gpu-003", 8.0, "gpu", ["gpu"], "IDLE"),
        ("gpu-004", 8.0, "gpu", ["gpu"], "IDLE"),
    ]


@pytest.mark.slurm
def test_live_counts_match_sacct(live: LiveRun) -> None:
    """Jobs, attempts and allocation states in ``slurm_jobs``/``jobs`` = sacct's own lines."""
    allocations = allocation_rows(live.sacct_text)
    published = live.published
    assert allocation_state_counts(published) == Counter(
        row["State"].split()[0] for row in allocations
    )
    alloc_jobs = published.slurm_jobs.filter(pl.col("is_allocation"))
    assert set(alloc_jobs["job_id"].to_list()) == {row["JobID"] for row in allocations}
    assert published.jobs.height == sum(1 for row in allocations if started(row))
    assert published.jobs["job_id"].n_unique() == len(
        {r["JobID"] for r in allocations if started(r)}
    )
    assert published.slurm_jobs.height == len(sacct_rows(live.sacct_text))


@pytest.mark.slurm
def test_live_requeued_job_has_two_attempts(live: LiveRun) -> None:
    """The requeued job: attempt 0 REQUEUED, attempt 1 COMPLETED, each holding its GPUs."""
    job = live.run.mix.by_key("requeue")
    attempts = live.published.jobs.filter(pl.col("job_id") == job.job_id).sort("attempt")
    assert attempts.select("attempt", "state", "gpus").rows() == [
        (0, "REQUEUED", float(job.gpus)),
        (1, "COMPLETED", float(job.gpus)),
    ]
    first_end, second_start = attempts["end_at"][0], attempts["start_at"][1]
    assert second_start >= first_end


@pytest.mark.slurm
def test_live_times_do_not_depend_on_the_configured_zone(live: LiveRun) -> None:
    """Read as America/New_York, the epoch times still put every start inside the UTC hour."""
    starts = live.published.jobs["start_at"]
    assert starts.min() >= live.run.hour_start
    assert starts.max() < live.run.hour_end


@pytest.mark.slurm
def test_live_snapshots_parse_cleanly(live: LiveRun) -> None:
    """sshare, sprio and sdiag from the live source parse without a rejected line."""
    sshare = parse_sshare(live.state["sshare"], cluster="unnamed")
    assert sshare.rejected.height == 0
    assert set(sshare.rows["cluster"].to_list()) == {CLUSTER_NAME}  # from its CLUSTER: line
    accounts = sshare.rows.filter(pl.col("user_name").is_null() & (pl.col("depth") == 1))
    assert sorted(accounts["account"].to_list()) == ["team-a", "team-b", "team-c"]
    assert accounts.filter(pl.col("account") == "team-a")["raw_shares"].to_list() == [50]
    sprio = parse_sprio(live.state["sprio"], cluster=CLUSTER_NAME)
    assert (sprio.rows.height, sprio.rejected.height) == (0, 0)  # nothing pending after the mix
    sdiag = parse_sdiag(live.state["sdiag"], cluster=CLUSTER_NAME)
    assert sdiag.rejected.height == 0
    backfill = sdiag.rows.filter(pl.col("section") == "backfill")
    assert "total_backfilled_jobs_since_last_slurm_start" in backfill["key"].to_list()
    submitted = sdiag.rows.filter(pl.col("key") == "jobs_submitted")["value"].to_list()
    assert submitted and submitted[0] >= len(
        {job.job_id.split("_")[0] for job in live.run.mix.jobs}
    )


@pytest.mark.slurm
def test_live_drain_becomes_a_node_event(live: LiveRun, tmp_path: Path) -> None:
    """A drained node shows in ``scontrol show nodes`` and as an open DRAIN event (then resumed)."""
    cluster = live.run.cluster
    node, reason = NODE_NAMES[-1], "goodput pipeline test"
    cluster.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"])
    try:
        source = SlurmStateCliSource(
            spool_dir=str(tmp_path), env=cluster.env(), kinds=["nodes", "events"]
        )
        day = cluster.now().date().isoformat()  # the event is stamped on the cluster's clock
        deadline = time.monotonic() + 30
        while True:
            files = source.fetch(CLUSTER_NAME, day)
            events = parse_sacctmgr_events(files[1], cluster=CLUSTER_NAME).rows
            drains = events.filter((pl.col("node") == node) & pl.col("end_at").is_null())
            if drains.height or time.monotonic() > deadline:
                break
            time.sleep(1)  # slurmctld hands the event to slurmdbd asynchronously
    finally:
        cluster.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
    nodes = parse_scontrol_nodes(files[0], cluster=CLUSTER_NAME).rows
    drained = nodes.filter(pl.col("host") == node).row(0, named=True)
    assert (drained["state"], drained["reason"], drained["reason_user"]) == (
        "IDLE+DRAIN",
        reason,
        "root",
    )
    assert drains.select("event", "state", "reason", "gpus").rows() == [
        ("node", "DRAIN", reason, float(GPUS_PER_NODE))
    ]
    assert abs(drains["start_at"][0] - cluster.now()) < timedelta(minutes=5)


# --------------------------------------------------------------------------- the lab capture


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Published:
    """The lab capture's sacct and nodes through ingest and rebuild (its clients ran in UTC)."""
    nodes = parse_scontrol_nodes(LAB / "scontrol_show_nodes.txt", cluster=LAB_CLUSTER)
    work = tmp_path_factory.mktemp("lab-pipeline")
    return run_pipeline(work, LAB_CLUSTER, "UTC", LAB / "sacct_all.psv", nodes)


LAB_SREPORT = LAB / "sreport_cluster_utilization_cpu_gpu_seconds.psv"


def lab_registered(lab: Published, hour: datetime) -> pl.DataFrame:
    """The lab hour's registered GPU-seconds (``cluster, hour, capacity_gpu_s``).

    The lab's event export has no TRES column, so the registered GPUs are the inventory's.
    """
    events = parse_sacctmgr_events(LAB / "sacctmgr_events.psv").rows
    inventory_gpus = pl.read_csv(lab.cfg.inventory_dir / f"{LAB_CLUSTER}.csv")["gpus"].sum()
    filled = events.with_columns(pl.col("gpus").fill_null(float(inventory_gpus)))
    return registered_gpu_seconds_hourly(
        filled.lazy(), hour, hour + timedelta(hours=1), as_of=hour + timedelta(hours=1)
    ).collect()


def test_lab_allocated_matches_sreport(lab: Published) -> None:
    """The lab hour: Σ ``allocated_gpu_s`` = sreport's Allocated (4838 GPU-s) within 0.1 %.

    Rule "running at the rollup" is applied: no job of the capture was still running (0).
    """
    hour, sreport = sreport_file(LAB_SREPORT)
    assert (hour, sreport["Allocated"]) == (datetime(2026, 11, 30, 2, tzinfo=UTC), 4838)
    row = hour_row(lab, hour)
    rows = allocation_rows((LAB / "sacct_all.psv").read_text(encoding="utf-8"))
    running = running_at_rollup_gpu_s(rows, hour + timedelta(hours=1), row["as_of"])
    assert_reconciles("Allocated", row["allocated_gpu_s"], sreport["Allocated"], running)


def test_lab_capacity_from_registration_matches_reported(lab: Published) -> None:
    """Registered at 02:38:23: 32 GPUs × 1297 s = 41504 GPU-s = sreport's Reported.

    The inventory alone counts the whole hour (115200 GPU-s): it cannot know the cluster came up
    mid-hour, which is why METRICS.md prefers the registration events.
    """
    hour, sreport = sreport_file(LAB_SREPORT)
    assert hour_row(lab, hour)["capacity_gpu_s"] == 32 * 3600.0  # the inventory's view
    registered = lab_registered(lab, hour)
    assert registered.rows() == [(LAB_CLUSTER, hour, float(sreport["Reported"]))]
    assert sreport["Reported"] == 41504


def test_lab_held_plus_idle_matches_sreport_after_registration(lab: Published) -> None:
    """held + idle, less the time before the cluster registered, = sreport's Idle + Planned.

    Rule "registration": the waterfall's capacity here is the inventory's whole hour, sreport's
    starts at the TRES registration (02:38:23), so our unallocated time holds 32 GPUs × 2303 s =
    73696 GPU-s that sreport never counted: held + idle 110362 − 73696 = 36666 = Idle + Planned.
    """
    hour, sreport = sreport_file(LAB_SREPORT)
    rows = lab.waterfall.filter(pl.col("hour") == hour)
    by_leaf = dict(zip(rows["bucket"].to_list(), rows["gpu_s"].to_list(), strict=True))
    ((_, _, registered),) = lab_registered(lab, hour).rows()
    before = before_registration_gpu_s(hour_row(lab, hour)["capacity_gpu_s"], registered)
    assert before == 32 * (38 * 60 + 23)
    ours = by_leaf["held"] + by_leaf["idle"]
    assert_reconciles("held + idle", ours, sreport["Idle"] + sreport["Planned"], -before)
    assert_reconciles("Down", by_leaf["down"], sreport["Down"])
    assert_reconciles("PlannedDown", by_leaf["planned_down"], sreport["PlannedDown"])


def test_lab_counts_match_sacct(lab: Published) -> None:
    """Jobs, attempts and allocation states in ``slurm_jobs``/``jobs`` = the lab's sacct lines."""
    text = (LAB / "sacct_all.psv").read_text(encoding="utf-8")
    allocations = allocation_rows(text)
    assert lab.stats.rows_rejected == 0
    assert allocation_state_counts(lab) == Counter(row["State"].split()[0] for row in allocations)
    assert allocation_state_counts(lab) == Counter(
        {"COMPLETED": 37, "FAILED": 4, "TIMEOUT": 1, "CANCELLED": 1, "REQUEUED": 1}
    )
    assert lab.jobs.height == sum(1 for row in allocations if started(row)) == 44
    assert lab.jobs["job_id"].n_unique() == len({row["JobID"] for row in allocations}) == 43


def test_lab_requeued_job_has_two_attempts(lab: Published) -> None:
    """Lab job 3 was requeued: attempt 0 REQUEUED (02:38:32–35), attempt 1 COMPLETED."""
    attempts = lab.jobs.filter(pl.col("job_id") == "3").sort("attempt")
    assert attempts.select("attempt", "state", "gpus", "start_at").rows() == [
        (0, "REQUEUED", 2.0, datetime(2026, 11, 30, 2, 38, 32, tzinfo=UTC)),
        (1, "COMPLETED", 2.0, datetime(2026, 11, 30, 2, 38, 43, tzinfo=UTC)),
    ]
