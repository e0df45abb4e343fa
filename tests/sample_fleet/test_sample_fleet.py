"""The bundled sample fleet generator: determinism, layout, scheduling invariants, planted findings.

The 14-day fleet (seed 7) is generated once per module; determinism is checked on 2-day runs.
Written files are re-read here with small independent readers, so the invariants are checked
on what other code will actually read, not only on the generator's own model.
"""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl
import pytest
import yaml

from pipelines.sample_fleet import FleetSummary, generate_sample_fleet
from pipelines.sample_fleet._generate import SampleFleet, simulate_fleet
from pipelines.sample_fleet._model import TEAMS
from pipelines.sample_fleet._writers import SACCT_FIELDS, compress_hostlist, fmt_duration

NY = ZoneInfo("America/New_York")
START = dt.date(2026, 11, 2)
DAYS = 14
WIN_START = dt.datetime.combine(START, dt.time(), NY)
WIN_END = dt.datetime.combine(START + dt.timedelta(days=DAYS), dt.time(), NY)
GPUS_PER_NODE = 8
AMBIGUOUS_HOUR = "2026-11-01T01:"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FleetSummary]:
    """The default 14-day fleet (seed 7), written once for this module."""
    out = tmp_path_factory.mktemp("fleet14")
    return out, generate_sample_fleet(out, seed=7, start=START, days=DAYS)


@pytest.fixture(scope="module")
def model() -> SampleFleet:
    """The simulated default fleet (same seed, nothing written)."""
    return simulate_fleet(7, START, DAYS)


# ----------------------------------------------------------------------------------------------
# Small independent readers of the written files
# ----------------------------------------------------------------------------------------------


def expand_hostlist(text: str) -> list[str]:
    """``a100-[001-003,007]`` → the four host names (one bracket group per prefix)."""
    hosts: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", text):
        prefix, ranges = m.group(1), m.group(2)
        if not ranges:
            hosts.append(prefix)
            continue
        for part in ranges.split(","):
            a, _, b = part.partition("-")
            for n in range(int(a), int(b or a) + 1):
                hosts.append(f"{prefix}{n:0{len(a)}d}")
    return hosts


def local_ts(text: str) -> int:
    """Epoch seconds of a naive local sacct time (America/New_York)."""
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=NY).timestamp())


def read_sacct(folder: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(file name, row) for every row of every daily sacct file, in file order."""
    for path in sorted(folder.glob("sacct_*.psv")):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0] == "|".join(SACCT_FIELDS)
        for line in lines[1:]:
            values = line.split("|")
            assert len(values) == len(SACCT_FIELDS), line
            yield path.name, dict(zip(SACCT_FIELDS, values, strict=True))


def gres_gpus(tres: str) -> int:
    """GPUs in a TRES string (the untyped ``gres/gpu=N`` entry)."""
    m = re.search(r"(?:^|,)gres/gpu=(\d+)", tres)
    return int(m.group(1)) if m else 0


def final_allocations(out: Path) -> list[dict[str, str]]:
    """Allocation rows of started attempts, each once, as the latest daily file shows it."""
    latest: dict[tuple[str, str], dict[str, str]] = {}
    for _, row in read_sacct(out / "inputs" / "slurm-a" / "sacct"):
        if "." in row["JobID"] or row["Start"] in ("Unknown", "None"):
            continue
        latest[(row["JobIDRaw"], row["Start"])] = row
    return list(latest.values())


def dcgm_activity(path: Path) -> pl.DataFrame:
    """``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` samples of one file: host, job, namespace, value."""
    text = gzip.decompress(path.read_bytes()).decode()
    lines = pl.Series("line", text.splitlines())
    return (
        pl.DataFrame([lines])
        .filter(pl.col("line").str.starts_with("DCGM_FI_PROF_GR_ENGINE_ACTIVE{"))
        .select(
            pl.col("line").str.extract(r'Hostname="([^"]*)"').alias("host"),
            pl.col("line").str.extract(r'hpc_job="([^"]*)"').alias("job"),
            pl.col("line").str.extract(r'namespace="([^"]*)"').alias("namespace"),
            pl.col("line").str.extract(r"\} (\S+) \d+$").cast(pl.Float64).alias("value"),
        )
    )


# ----------------------------------------------------------------------------------------------
# Determinism and layout
# ----------------------------------------------------------------------------------------------


def _all_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_same_seed_writes_identical_bytes(tmp_path: Path) -> None:
    """Two runs with the same seed write the same files, byte for byte."""
    a = _all_files_after(tmp_path / "a", seed=11)
    b = _all_files_after(tmp_path / "b", seed=11)
    assert a.keys() == b.keys()
    assert "inputs/slurm-a/sacct/sacct_2026-11-03.psv" in a
    assert "inputs/k8s-b/dcgm/dcgm_2026-11-02.prom.gz" in a
    for name, data in a.items():
        assert data == b[name], name


def _all_files_after(out: Path, *, seed: int) -> dict[str, bytes]:
    generate_sample_fleet(out, seed=seed, start=START, days=2)
    return _all_files(out)


def test_other_seed_writes_other_data(tmp_path: Path) -> None:
    """A different seed gives a different job mix."""
    generate_sample_fleet(tmp_path / "a", seed=1, start=START, days=1)
    generate_sample_fleet(tmp_path / "b", seed=2, start=START, days=1)
    name = "inputs/slurm-a/sacct/sacct_2026-11-02.psv"
    assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "b" / name).read_bytes()


def test_regenerating_shorter_window_removes_stale_days(tmp_path: Path) -> None:
    """Generating 1 day over a 2-day folder leaves only that day's input files."""
    generate_sample_fleet(tmp_path, seed=3, start=START, days=2)
    generate_sample_fleet(tmp_path, seed=3, start=START, days=1)
    assert len(list((tmp_path / "inputs" / "slurm-a" / "sacct").glob("*.psv"))) == 1
    assert len(list((tmp_path / "inputs" / "k8s-b" / "dcgm").glob("*.gz"))) == 1


def test_layout_and_summary(fleet: tuple[Path, FleetSummary]) -> None:
    """Every file of the documented layout exists and the summary counts them."""
    out, summary = fleet
    days = [(START + dt.timedelta(days=i)).isoformat() for i in range(DAYS)]
    expected = {
        "registry.yaml",
        "planted.json",
        "inventory/slurm-a.csv",
        "inventory/k8s-b.csv",
        f"inputs/slurm-a/slurm_state/sshare_{days[-1]}.psv",
        f"inputs/slurm-a/slurm_state/events_{days[-1]}.psv",
        f"inputs/slurm-a/slurm_state/reservation_history_{days[-1]}.psv",
        f"inputs/slurm-a/slurm_state/transactions_{days[-1]}.psv",
        f"inputs/slurm-a/slurm_state/tres_{days[-1]}.psv",
        # the rack-scale cluster (pipelines/sample_fleet/_rackscale.py)
        "inventory/slurm-nvl.csv",
        "planted_slurm-nvl.json",
        f"inputs/slurm-nvl/slurm_state/events_{days[-1]}.psv",
        f"inputs/slurm-nvl/topology/topology_{START - dt.timedelta(days=30)}.conf",
    }
    for d in days:
        expected |= {
            f"inputs/slurm-nvl/sacct/sacct_{d}.psv",
            f"inputs/slurm-nvl/dcgm_hourly/date={d}/dcgm_hourly_{d}.parquet",
        }
        expected |= {
            f"inputs/slurm-a/sacct/sacct_{d}.psv",
            f"inputs/slurm-a/dcgm/dcgm_{d}.prom.gz",
            f"inputs/k8s-b/k8s/events_{d}.json",
            f"inputs/k8s-b/k8s/pods_{d}.json",
            f"inputs/k8s-b/k8s/workloads_{d}.json",
            f"inputs/k8s-b/k8s/clusterqueues_{d}.json",
            f"inputs/k8s-b/k8s/localqueues_{d}.json",
            f"inputs/k8s-b/k8s/nodes_{d}.json",
            f"inputs/k8s-b/dcgm/dcgm_{d}.prom.gz",
        }
    # the planted policy change's cluster: 28 days of history before the window, the change
    # on its third day (tests/sample_fleet/test_policy_plant.py)
    history = [(START + dt.timedelta(days=i)).isoformat() for i in range(-28, DAYS)]
    expected |= {"inventory/slurm-p.csv"} | {f"inputs/slurm-p/sacct/sacct_{d}.psv" for d in history}
    # and the proposal an earlier run made before the change (test_policy_plant_recommendation.py)
    expected |= {"inputs/slurm-p/recommendations/proposals_2026-11-04.json"}
    expected |= {
        f"inputs/slurm-p/slurm_state/scontrol_config_{d}.txt"
        for d in ((START + dt.timedelta(days=i)).isoformat() for i in (2, 3))
    }
    # the Slurm-on-Kubernetes pair (sok-c on k8s-c) covers the window's DAYS UTC days
    sok_days = [(START + dt.timedelta(days=i)).isoformat() for i in range(DAYS)]
    expected |= {"planted_slurm_on_k8s.json", "inventory/k8s-c.csv"}
    for d in sok_days:
        expected |= {f"inputs/k8s-c/k8s/pods_{d}.json", f"inputs/sok-c/sacct/sacct_{d}.psv"}
        expected |= {f"inputs/sok-c/slurm_state/node_comments_{d}T{h:02d}0000Z.txt"
                     for h in (0, 6, 12, 18)}  # fmt: skip
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert written == expected
    # slurm-a, k8s-b and slurm-nvl: 13 + 11 per day; slurm-p: 3 + 28 days of history + DAYS
    # + its earlier proposal; the Slurm-on-Kubernetes pair: 2 + 6 per day
    plant_files = 3 + 28 + DAYS + 1
    assert summary.files_written == len(expected) == 13 + 11 * DAYS + plant_files + 2 + 6 * DAYS
    assert summary.gpus == {"slurm-a": 192, "k8s-b": 64, "slurm-nvl": 288}
    assert summary.jobs["slurm-a"] > 1500
    assert summary.jobs["k8s-b"] > 400
    assert summary.planted == json.loads((out / "planted.json").read_text())
    assert str(summary).startswith("14 days from 2026-11-02 (seed 7): slurm-a: ")


def test_inventory_files(fleet: tuple[Path, FleetSummary]) -> None:
    """Inventories list 24 Slurm nodes (16 a100 in gpu, 8 h100) and 8 Kubernetes nodes."""
    out, _ = fleet
    slurm = pl.read_csv(out / "inventory" / "slurm-a.csv")
    assert slurm.columns == ["host", "gpus", "gpu_type", "partition", "rack"]
    assert slurm.height == 24
    assert slurm["gpus"].sum() == 192
    by_part = dict(slurm.group_by("partition").len().iter_rows())
    assert by_part == {"gpu": 16, "h100": 8}
    row = slurm.filter(pl.col("host") == "a100-013").row(0, named=True)
    assert row == {
        "host": "a100-013",
        "gpus": 8,
        "gpu_type": "a100",
        "partition": "gpu",
        "rack": "r02",
    }
    k8s = pl.read_csv(out / "inventory" / "k8s-b.csv")
    assert k8s["host"].to_list() == [f"gpu-node-{i:02d}" for i in range(1, 9)]
    assert set(k8s["partition"]) == {"cq-research", "cq-prod"}


def test_registry_file(fleet: tuple[Path, FleetSummary]) -> None:
    """The registry names 12 teams whose shares sum to 1, each with its account and queue."""
    out, _ = fleet
    text = (out / "registry.yaml").read_text()
    assert text.startswith("# Allocation registry: the central allocation system's export")
    teams = yaml.safe_load(text)["teams"]
    assert len(teams) == 12
    assert math.isclose(sum(t["share"] for t in teams), 1.0)
    vision = teams[0]
    assert vision == {
        "team": "vision",
        "share": 0.12,
        "slurm_accounts": ["vision"],
        "k8s_namespaces": ["vision"],
        "k8s_local_queues": ["lq-vision"],
    }
    assert all(2 <= len(t.users) <= 5 for t in TEAMS)


def test_hostlist_and_duration_notation() -> None:
    """Hostlists compress like Slurm's and durations use ``[D-]HH:MM:SS``."""
    assert (
        compress_hostlist(["a100-001", "a100-002", "a100-003", "a100-007"]) == "a100-[001-003,007]"
    )
    assert compress_hostlist(["h100-004"]) == "h100-004"
    assert expand_hostlist("a100-[001-003,007]") == ["a100-001", "a100-002", "a100-003", "a100-007"]
    assert fmt_duration(59) == "00:00:59"
    assert fmt_duration(86400 + 3 * 3600 + 4) == "1-03:00:04"


# ----------------------------------------------------------------------------------------------
# Scheduling invariants
# ----------------------------------------------------------------------------------------------


def test_model_never_gives_one_gpu_to_two_jobs(model: SampleFleet) -> None:
    """No GPU of either cluster is held by two allocations at the same instant."""
    by_gpu: dict[tuple[str, str, int], list[tuple[int, int, str]]] = defaultdict(list)
    for a in model.allocations:
        assert a.end > a.start
        by_gpu[(a.cluster, a.host, a.gpu)].append((a.start, a.end, a.job_key))
    assert len(by_gpu) > 200
    for key, spans in by_gpu.items():
        spans.sort()
        for (_, end1, job1), (start2, _, job2) in itertools.pairwise(spans):
            assert start2 >= end1, (key, job1, job2)


def test_model_times_are_ordered(model: SampleFleet) -> None:
    """Every attempt has submit ≤ eligible ≤ start ≤ end; pods are bound before they start."""
    n = 0
    for job in model.slurm.jobs:
        for att in job.attempts:
            if att.start is None:
                continue
            assert att.eligible is not None
            assert att.submit <= att.eligible <= att.start, job.job_id
            assert att.end is not None and att.end >= att.start, job.job_id
            n += 1
    assert n > 2000
    for wl in model.k8s.workloads:
        for k8s_att in wl.attempts:
            assert k8s_att.reserved is None or k8s_att.reserved >= k8s_att.queued
            for pod in k8s_att.pods:
                if pod.bound is not None:
                    assert pod.bound >= pod.created
                if pod.started is not None:
                    assert pod.bound is not None and pod.started > pod.bound
                if pod.finished is not None and pod.started is not None:
                    assert pod.finished >= pod.started


def test_sacct_never_overcommits_a_node(fleet: tuple[Path, FleetSummary]) -> None:
    """From the written sacct files: GPUs allocated on a node never exceed its 8 at any instant."""
    out, _ = fleet
    w0, w1 = int(WIN_START.timestamp()), int(WIN_END.timestamp())
    deltas: dict[str, list[tuple[int, int]]] = defaultdict(list)
    rows = final_allocations(out)
    for row in rows:
        gpus = gres_gpus(row["AllocTRES"])
        if not gpus:
            continue
        hosts = expand_hostlist(row["NodeList"])
        assert len(hosts) == int(row["NNodes"])
        # Times before the window may fall in the DST-ambiguous hour of 2026-11-01: clip.
        start = max(local_ts(row["Start"]), w0)
        end = w1 if row["End"] == "Unknown" else min(local_ts(row["End"]), w1)
        if end <= start:
            continue
        for host in hosts:
            deltas[host].append((start, gpus // len(hosts)))
            deltas[host].append((end, -(gpus // len(hosts))))
    assert len(deltas) == 24
    peak = 0
    for host, events in deltas.items():
        held = 0
        for _, d in sorted(events, key=lambda e: (e[0], e[1])):
            held += d
            assert 0 <= held <= GPUS_PER_NODE, host
            peak = max(peak, held)
    assert peak == GPUS_PER_NODE


def test_sacct_rows_are_ordered_in_time(fleet: tuple[Path, FleetSummary]) -> None:
    """Written rows keep Submit ≤ Eligible ≤ Start ≤ End and steps follow their allocation."""
    out, _ = fleet
    previous = ""
    for _, row in read_sacct(out / "inputs" / "slurm-a" / "sacct"):
        if "." in row["JobID"]:
            assert row["JobID"].split(".")[0] == previous
            continue
        previous = row["JobID"]
        if row["Start"] in ("Unknown", "None") or row["Eligible"] == "Unknown":
            continue
        if any(row[k].startswith(AMBIGUOUS_HOUR) for k in ("Submit", "Eligible", "Start", "End")):
            continue  # 01:xx on 2026-11-01 happens twice: string order is not time order
        assert row["Submit"] <= row["Eligible"] <= row["Start"], row["JobID"]
        if row["End"] != "Unknown":
            assert row["End"] >= row["Start"], row["JobID"]


def test_sacct_shows_the_whole_state_mix(fleet: tuple[Path, FleetSummary]) -> None:
    """The exports hold every outcome the pipeline must handle, in sacct's own notation."""
    out, _ = fleet
    states: set[str] = set()
    seen: dict[str, bool] = defaultdict(bool)
    last_day = f"sacct_{(START + dt.timedelta(days=DAYS - 1)).isoformat()}.psv"
    for name, row in read_sacct(out / "inputs" / "slurm-a" / "sacct"):
        if "." in row["JobID"]:
            continue
        state = row["State"]
        states.add(state.split(" ")[0])
        seen["cancelled_by"] |= state.startswith("CANCELLED by ")
        seen["cancelled_pending"] |= state.startswith("CANCELLED") and row["Start"] == "None"
        seen["failed_1"] |= state == "FAILED" and row["ExitCode"] == "1:0"
        seen["cpu_only"] |= "gres/gpu" not in row["ReqTRES"]
        seen["array_task"] |= bool(re.fullmatch(r"\d+_\d+", row["JobID"]))
        seen["array_pending"] |= bool(re.fullmatch(r"\d+_\[[\d,\-]+%2\]", row["JobID"]))
        seen["never_eligible"] |= row["Eligible"] == "Unknown"
        seen["typed_gres"] |= "gres/gpu:a100=" in row["AllocTRES"]
        seen["large"] |= gres_gpus(row["ReqTRES"]) >= 64
        seen["multi_node_list"] |= "[" in row["NodeList"]
        if name == last_day:
            seen["running_at_end"] |= state == "RUNNING" and row["End"] == "Unknown"
            seen["pending_at_end"] |= (
                state == "PENDING"
                and row["Start"] == "Unknown"
                and row["NodeList"] == "None assigned"
            )
    assert {
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "CANCELLED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "RUNNING",
        "PENDING",
    } <= states
    assert states & {"REQUEUED", "PREEMPTED"}
    assert all(
        seen[k]
        for k in (
            "cancelled_by",
            "cancelled_pending",
            "failed_1",
            "cpu_only",
            "array_task",
            "array_pending",
            "never_eligible",
            "typed_gres",
            "large",
            "multi_node_list",
            "running_at_end",
            "pending_at_end",
        )
    ), dict(seen)


def test_requeued_job_repeats_its_job_id(fleet: tuple[Path, FleetSummary]) -> None:
    """A requeued job has one allocation row per attempt under the same JobID (``sacct -D``)."""
    out, _ = fleet
    attempts: dict[str, list[str]] = defaultdict(list)
    for row in final_allocations(out):
        attempts[row["JobIDRaw"]].append(row["State"])
    requeued = [s for s in attempts.values() if len(s) > 1]
    assert requeued
    assert any(set(s) & {"REQUEUED", "PREEMPTED", "NODE_FAIL"} for s in requeued)


# ----------------------------------------------------------------------------------------------
# Planted findings
# ----------------------------------------------------------------------------------------------


def test_planted_idle_team_in_dcgm(fleet: tuple[Path, FleetSummary]) -> None:
    """recsys's GPUs report activity ≈ 0.01–0.03 (mean < 0.05); other teams are busy."""
    out, summary = fleet
    account = {r["JobIDRaw"]: r["Account"] for r in final_allocations(out)}
    frames = [
        dcgm_activity(out / "inputs" / "slurm-a" / "dcgm" / f"dcgm_{d}.prom.gz")
        for d in ("2026-11-03", "2026-11-09")
    ]
    slurm = (
        pl.concat(frames)
        .filter(pl.col("job").is_not_null())
        .with_columns(pl.col("job").replace_strict(account, default=None).alias("team"))
    )
    by_team = dict(slurm.group_by("team").agg(pl.col("value").mean()).iter_rows())
    assert by_team["recsys"] < 0.05
    assert min(v for t, v in by_team.items() if t != "recsys") > 0.3
    k8s = dcgm_activity(out / "inputs" / "k8s-b" / "dcgm" / "dcgm_2026-11-04.prom.gz")
    recsys_pods = k8s.filter(pl.col("namespace") == "recsys")
    assert recsys_pods.height > 0
    assert recsys_pods["value"].mean() < 0.05  # type: ignore[operator]
    planted = summary.planted["idle_team"]
    assert planted["team"] == "recsys"
    assert planted["mean_activity"] < 0.05
    assert planted["share_of_samples_between_0_01_and_0_03"] > 0.5


def test_unallocated_gpus_report_zero(fleet: tuple[Path, FleetSummary]) -> None:
    """Every GPU has a sample every 5 minutes; GPUs without a job show 0 and no job label."""
    out, _ = fleet
    df = dcgm_activity(out / "inputs" / "slurm-a" / "dcgm" / "dcgm_2026-11-05.prom.gz")
    assert df.height == 192 * 288
    free = df.filter(pl.col("job").is_null())
    assert free.height > 0
    assert free["value"].max() == 0.0
    assert df["value"].min() >= 0.0  # type: ignore[operator]
    assert df["value"].max() <= 1.0  # type: ignore[operator]
    k8s = dcgm_activity(out / "inputs" / "k8s-b" / "dcgm" / "dcgm_2026-11-05.prom.gz")
    assert k8s.height == 64 * 288
    assert (k8s.filter(pl.col("namespace") == "")["value"] == 0.0).all()


def test_dcgm_file_format(fleet: tuple[Path, FleetSummary]) -> None:
    """HELP/TYPE once per family, dcgm-exporter label order, millisecond timestamps."""
    out, _ = fleet
    text = gzip.decompress(
        (out / "inputs" / "k8s-b" / "dcgm" / "dcgm_2026-11-02.prom.gz").read_bytes()
    ).decode()
    lines = text.splitlines()
    helps = [line for line in lines if line.startswith("# HELP")]
    assert [h.split()[2] for h in helps] == [
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_XID_ERRORS",
    ]
    sample = lines[2]
    m = re.fullmatch(
        r'DCGM_FI_PROF_GR_ENGINE_ACTIVE\{gpu="0",UUID="GPU-[0-9a-f]{8}-[0-9a-f]{4}-'
        r'[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",pci_bus_id="00000000:07:00.0",'
        r'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-01",'
        r'container="[^"]*",namespace="[^"]*",pod="[^"]*"\} \d\.\d{6} (\d+)',
        sample,
    )
    assert m is not None, sample
    first_ms = int(m.group(1))
    assert first_ms == int(dt.datetime(2026, 11, 2, tzinfo=dt.UTC).timestamp()) * 1000


def test_planted_starved_large_jobs(fleet: tuple[Path, FleetSummary]) -> None:
    """≥ 64-GPU jobs on ``gpu`` wait many hours (p90 > 12 h) while the partition has idle GPUs."""
    out, summary = fleet
    w1 = int(WIN_END.timestamp())
    waits: list[float] = []
    latest: dict[tuple[str, str], dict[str, str]] = {}
    for _, row in read_sacct(out / "inputs" / "slurm-a" / "sacct"):
        if "." in row["JobID"] or row["Partition"] != "gpu" or gres_gpus(row["ReqTRES"]) < 64:
            continue
        latest[(row["JobIDRaw"], row["Submit"])] = row
    for row in latest.values():
        eligible = local_ts(row["Eligible"])
        if eligible < int(WIN_START.timestamp()):
            continue
        start = w1 if row["Start"] in ("Unknown", "None") else local_ts(row["Start"])
        waits.append((start - eligible) / 3600)
    waits.sort()
    assert len(waits) >= 8
    p90 = waits[math.ceil(0.9 * len(waits)) - 1]
    assert p90 > 12
    planted = summary.planted["starved_large_jobs"]
    assert planted["p90_wait_hours"] == pytest.approx(p90, abs=0.01)
    # Idle GPUs held for them: while a large job waits, whole gpu-partition nodes sit idle.
    allocs = [r for r in final_allocations(out) if r["Partition"] == "gpu"]
    longest = max(
        latest.values(),
        key=lambda r: (
            (local_ts(r["Start"]) if r["Start"] not in ("Unknown", "None") else w1)
            - local_ts(r["Eligible"])
        ),
    )
    t0 = local_ts(longest["Eligible"])
    t1 = w1 if longest["Start"] in ("Unknown", "None") else local_ts(longest["Start"])
    max_idle = 0
    for t in range(t0, t1, 900):
        used = sum(
            gres_gpus(r["AllocTRES"])
            for r in allocs
            if local_ts(r["Start"]) <= t < (w1 if r["End"] == "Unknown" else local_ts(r["End"]))
        )
        max_idle = max(max_idle, 128 - used)
    assert max_idle >= 16
    assert planted["held_idle_gpu_hours"] > 500


def test_planted_lemon_node(fleet: tuple[Path, FleetSummary]) -> None:
    """a100-013 ends ≥ 4 attempts NODE_FAIL, has DOWN intervals and raises XID 79 in DCGM."""
    out, summary = fleet
    node_fail = [
        r
        for r in final_allocations(out)
        if r["State"] == "NODE_FAIL" and "a100-013" in expand_hostlist(r["NodeList"])
    ]
    assert len(node_fail) >= 4
    last = (START + dt.timedelta(days=DAYS - 1)).isoformat()
    events = (out / "inputs" / "slurm-a" / "slurm_state" / f"events_{last}.psv").read_text()
    events = events.splitlines()
    assert events[0] == "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|TRES"
    downs = [e for e in events if e.startswith("slurm-a|a100-013|") and "|DOWN|" in e]
    assert len(downs) >= 4
    xid_hosts: set[str] = set()
    for path in sorted((out / "inputs" / "slurm-a" / "dcgm").glob("*.gz")):
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            if line.startswith("DCGM_FI_DEV_XID_ERRORS{") and "} 79 " in line:
                xid_hosts.add(re.findall(r'Hostname="([^"]+)"', line)[0])
    assert xid_hosts == {"a100-013"}
    planted = summary.planted["lemon_node"]
    assert planted["host"] == "a100-013"
    assert planted["node_fail_attempts"] == len(node_fail)
    assert len(planted["xid_times_utc"]) == len(downs)


def test_planted_team_over_share(fleet: tuple[Path, FleetSummary], model: SampleFleet) -> None:
    """nlp's allocated GPU-time is at least twice its registry share, in sacct and fleet-wide."""
    out, summary = fleet
    w0, w1 = int(WIN_START.timestamp()), int(WIN_END.timestamp())
    usage: dict[str, float] = defaultdict(float)
    for row in final_allocations(out):
        start = max(local_ts(row["Start"]), w0)
        end = w1 if row["End"] == "Unknown" else min(local_ts(row["End"]), w1)
        if end > start:
            usage[row["Account"]] += gres_gpus(row["AllocTRES"]) * (end - start)
    share = {t.name: t.share for t in TEAMS}
    assert usage["nlp"] / sum(usage.values()) >= 2 * share["nlp"]
    planted = summary.planted["over_share_team"]
    assert planted["team"] == "nlp"
    assert planted["ratio_to_share"] >= 2.0
    windows = {"slurm-a": model.slurm_window, "k8s-b": model.k8s_window}
    fleet_usage: dict[str, float] = defaultdict(float)
    for a in model.allocations:
        lo, hi = windows[a.cluster]
        fleet_usage[a.team] += max(0, min(a.end, hi) - max(a.start, lo))
    frac = fleet_usage["nlp"] / sum(fleet_usage.values())
    assert frac == pytest.approx(planted["usage_share_of_allocated_gpu_seconds"], abs=1e-3)


def test_planted_registry_drift_in_sshare(fleet: tuple[Path, FleetSummary]) -> None:
    """sshare gives speech a fair-share far from its registry share; other teams match closely."""
    out, summary = fleet
    last = (START + dt.timedelta(days=DAYS - 1)).isoformat()
    lines = (out / "inputs" / "slurm-a" / "slurm_state" / f"sshare_{last}.psv").read_text()
    lines = lines.splitlines()
    assert lines[0] == (
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS"
    )
    accounts = {}
    for line in lines[1:]:
        f = line.split("|")
        if f[1] == "" and f[0].strip() != "root":
            accounts[f[0].strip()] = (int(f[2]), float(f[3]))
    share = {t.name: t.share for t in TEAMS}
    assert set(accounts) == set(share)
    assert abs(accounts["speech"][1] - share["speech"]) > 0.03
    assert all(abs(norm - share[a]) < 0.01 for a, (_, norm) in accounts.items() if a != "speech")
    assert summary.planted["registry_drift"]["sshare_norm_shares"] == accounts["speech"][1]


def test_planted_twice_preempted_workload(fleet: tuple[Path, FleetSummary]) -> None:
    """One Kueue workload is evicted twice by preemption and runs a third time."""
    out, summary = fleet
    planted = summary.planted["preempted_workload"]
    assert planted["evictions"] == 2 and planted["attempts"] == 3
    k8s = out / "inputs" / "k8s-b" / "k8s"
    evicted = []
    for path in sorted(k8s.glob("events_*.json")):
        for item in json.loads(path.read_text())["items"]:
            obj = item["involvedObject"]
            if item["reason"] == "EvictedDueToPreempted" and obj["name"] == planted["workload"]:
                assert obj["kind"] == "Workload"
                assert item["message"].startswith("Preempted to accommodate a workload")
                evicted.append(item)
    assert len(evicted) == 2
    pods: dict[str, dict[str, Any]] = {}
    for path in sorted(k8s.glob("pods_*.json")):
        for item in json.loads(path.read_text())["items"]:
            if item["metadata"]["ownerReferences"][0]["name"] == planted["job"]:
                pods[item["metadata"]["uid"]] = item
    assert len(pods) == 3 * 2
    deleted = [p for p in pods.values() if "deletionTimestamp" in p["metadata"]]
    assert len(deleted) == 2 * 2


def test_k8s_events_shape(fleet: tuple[Path, FleetSummary]) -> None:
    """Events are a kubectl List of core/v1 Events with the pod and Kueue reasons expected."""
    out, _ = fleet
    reasons: set[tuple[str, str]] = set()
    repeated_failed_scheduling = False
    for path in sorted((out / "inputs" / "k8s-b" / "k8s").glob("events_*.json")):
        doc = json.loads(path.read_text())
        assert doc["kind"] == "List" and doc["apiVersion"] == "v1"
        day = path.stem.split("_")[1]
        for item in doc["items"]:
            assert item["kind"] == "Event"
            assert item["lastTimestamp"].startswith(day) and item["lastTimestamp"].endswith("Z")
            assert item["firstTimestamp"] <= item["lastTimestamp"]
            assert item["metadata"]["uid"] and item["metadata"]["namespace"]
            reasons.add((item["involvedObject"]["kind"], item["reason"]))
            if item["reason"] == "FailedScheduling" and item["count"] > 1:
                repeated_failed_scheduling = True
                assert "Insufficient nvidia.com/gpu" in item["message"]
    assert repeated_failed_scheduling
    for kind, reason in [
        ("Pod", "Scheduled"),
        ("Pod", "Pulling"),
        ("Pod", "Pulled"),
        ("Pod", "Created"),
        ("Pod", "Started"),
        ("Pod", "Killing"),
        ("Workload", "QuotaReserved"),
        ("Workload", "Admitted"),
        ("Workload", "Pending"),
        ("Workload", "Preempted"),
        ("Workload", "EvictedDueToPreempted"),
    ]:
        assert (kind, reason) in reasons, (kind, reason)


def test_k8s_pods_snapshot(fleet: tuple[Path, FleetSummary]) -> None:
    """Pod snapshots carry the queue label, GPU limits, node and container states."""
    out, _ = fleet
    doc = json.loads((out / "inputs" / "k8s-b" / "k8s" / "pods_2026-11-15.json").read_text())
    assert doc["kind"] == "List"
    phases = {p["status"]["phase"] for p in doc["items"]}
    assert {"Running", "Succeeded"} <= phases
    for pod in doc["items"]:
        labels = pod["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == f"lq-{pod['metadata']['namespace']}"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        assert int(limits["nvidia.com/gpu"]) in (1, 2, 4, 8)
        if pod["status"]["phase"] == "Running":
            assert pod["spec"]["nodeName"].startswith("gpu-node-")
            state = pod["status"]["containerStatuses"][0]["state"]
            assert "startedAt" in state["running"]


# ----------------------------------------------------------------------------------------------
# The project's own parsers accept every generated file
# ----------------------------------------------------------------------------------------------


def test_parsers_accept_sacct_and_k8s_files(fleet: tuple[Path, FleetSummary]) -> None:
    """Every sacct, events and pods file parses with zero rejected rows."""
    from pipelines.kubernetes._events_parse import parse_k8s_events
    from pipelines.kubernetes._pods_parse import parse_k8s_pods
    from pipelines.slurm._sacct_parse import parse_sacct

    out, _ = fleet
    for path in sorted((out / "inputs" / "slurm-a" / "sacct").glob("*.psv")):
        result = parse_sacct(path, cluster="slurm-a", tz="America/New_York")
        assert result.rejected.height == 0, result.rejected.head(3)
        assert result.rows.height > 0
    k8s = out / "inputs" / "k8s-b" / "k8s"
    for path in sorted(k8s.glob("events_*.json")):
        result = parse_k8s_events(path, cluster="k8s-b")
        assert result.rejected.height == 0, result.rejected.head(3)
        assert result.rows.height > 0
    for path in sorted(k8s.glob("pods_*.json")):
        result = parse_k8s_pods(path, cluster="k8s-b")
        assert result.rejected.height == 0, result.rejected.head(3)
        assert result.rows.height > 0


def test_parser_accepts_dcgm_files(fleet: tuple[Path, FleetSummary]) -> None:
    """A Slurm and a Kubernetes DCGM day file parse with zero rejected rows."""
    from pipelines.dcgm._dcgm_parse import parse_dcgm

    out, _ = fleet
    for cluster, gpus in (("slurm-a", 192), ("k8s-b", 64)):
        path = out / "inputs" / cluster / "dcgm" / "dcgm_2026-11-09.prom.gz"
        result = parse_dcgm(path, cluster=cluster)
        assert result.rejected.height == 0, result.rejected.head(3)
        assert result.rows.height >= gpus * 288
