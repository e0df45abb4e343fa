"""dcgm-exporter series that read wrong before, end to end (ingest of scrape files, a build):

- ``DCGM_EXP_XID_ERRORS_COUNT`` is the number of XIDs within the exporter's window (5 minutes by
  default), one series per code (label shape of NVIDIA/dcgm-exporter PR #239:
  ``window_size_in_ms="300000",xid="42"``); it is not one event per non-zero scrape;
- a MIG GPU's XID series are one per GPU instance (``GPU_I_ID``), each compared with its own
  previous sample;
- ``DCGM_FI_DEV_GPU_UTIL`` is not supported on a MIG GPU instance (dcgm-exporter writes 0 for
  it, NVIDIA/dcgm-exporter#216): no activity reading, so the slices' time is unobserved goodput,
  not idle.

The scrapes are 30 s apart from 2026-11-02 10:00 UTC, one file each (dcgm-YYYYmmddTHHMMSSZ.prom).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

X = "slurm-x"
T0 = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.UTC)
_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)
_T400 = (
    'gpu="0",UUID="GPU-b9f9e81b-bee7-34bc-af17-132ef6592740",device="nvidia0",'
    'modelName="NVIDIA T400 4GB",Hostname="workstation",DCGM_FI_DRIVER_VERSION="545.29.02"'
)
_A100 = (
    'gpu="0",UUID="GPU-d6dd33b9-e50e-997c-f303-c8f7312fa498",device="nvidia0",'
    'modelName="NVIDIA A100 80GB PCIe"'
)


def _job(job: str, end: str, state: str, node: str, tres: str) -> str:
    return "|".join([
        job, job, X, "gpu", "normal", "nlp", "nlp", "u1", "1001", "2026-11-02T09:59:00",
        "2026-11-02T09:59:00", "2026-11-02T10:00:00", end, "00:17:00", "0:0", state, "1", "8",
        f"billing=8,cpu=8,{tres},mem=1000M,node=1", f"billing=8,cpu=8,{tres},mem=1000M,node=1",
        "2-00:00:00", node, "job",
    ])  # fmt: skip


def _scrapes(folder: Path, lines_at: Callable[[dt.datetime], list[str]], n: int = 60) -> Path:
    folder.mkdir(parents=True)
    for k in range(n):
        ts = T0 + dt.timedelta(seconds=30 * k)
        (folder / f"dcgm-{ts:%Y%m%dT%H%M%S}Z.prom").write_text("\n".join(lines_at(ts)) + "\n")
    return folder


@contextmanager
def _build(
    tmp_path: Path, host: str, jobs: list[str], scrapes: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{X}.csv").write_text(
        f"host,gpus,gpu_type,partition,rack\n{host},1,a100,gpu,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=((X, "slurm", "UTC"),)))
    sacct = tmp_path / "inputs" / "sacct.txt"
    sacct.write_text(_HEADER + "\n" + "\n".join(jobs) + "\n")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=X, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm", scrapes, opts)
        rebuild(con, cfg)
        yield con


#: DCGM's int64 blank sentinel (no value): DCGM_FI_DEV_XID_ERRORS where the field is unsupported.
_INT64_BLANK = "9223372036854775794"


def _xid_count_scrape(
    with_last_xid: bool, blank: bool = False
) -> Callable[[dt.datetime], list[str]]:
    """XID 42 at 10:05: the last-XID field holds 42 from then on (``blank``: DCGM's blank at
    every scrape instead); the windowed count is 1 for the 10 scrapes of 10:05:00 … 10:09:30,
    then 0 (its series without an xid label)."""

    def lines(ts: dt.datetime) -> list[str]:
        xid = ts >= T0 + dt.timedelta(minutes=5)
        out = [
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
            f"DCGM_FI_DEV_GPU_UTIL{{{_T400}}} {100 if ts < T0 + dt.timedelta(minutes=17) else 0}",
        ]
        if blank:
            out.append(f"DCGM_FI_DEV_XID_ERRORS{{{_T400}}} {_INT64_BLANK}")
        elif with_last_xid:
            out.append(
                f'DCGM_FI_DEV_XID_ERRORS{{{_T400},err_code="42"}} 42'
                if xid
                else f'DCGM_FI_DEV_XID_ERRORS{{{_T400},err_code="0"}} 0'
            )
        out.append("# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge")
        if xid and ts < T0 + dt.timedelta(minutes=10):
            out.append(
                f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000",xid="42"}} 1'
            )
        else:
            out.append(f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000"}} 0')
        return out

    return lines


@pytest.mark.parametrize(
    ("with_last_xid", "blank"),
    [(True, False), (False, False), (False, True)],
    ids=["both-fields", "count-only", "last-xid-blank"],
)
def test_one_xid_in_the_windowed_count_is_one_event(
    tmp_path: Path, with_last_xid: bool, blank: bool
) -> None:
    """Job 1 holds the GPU 10:00–10:17 and FAILS; its XID window is [10:07, 10:17]. The XID
    came at 10:05, outside it: 1 event, the job a user failure (1 GPU × 1,020 s). Before, each
    of the ten non-zero count scrapes was an event (11 with the last-XID field), and the ones
    from 10:07 on made the job an infrastructure failure. A last-XID field scraped blank (no
    value) leaves the count to say it: still 1 event."""
    scrapes = _scrapes(tmp_path / "dcgm", _xid_count_scrape(with_last_xid, blank))
    jobs = [_job("1", "2026-11-02T10:17:00", "FAILED", "workstation", "gres/gpu=1")]
    with _build(tmp_path, "workstation", jobs, scrapes) as con:
        rel = con.execute(
            "SELECT host, xid_events, infra_failed_attempts FROM analytics.node_reliability"
        ).fetchall()
        assert rel == [("workstation", 1, 0)]
        leaves = dict(
            con.execute(
                "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
                " WHERE bucket IN ('failed_work_user', 'failed_work_infra') GROUP BY bucket"
            ).fetchall()
        )
        assert leaves == {"failed_work_user": 1020.0, "failed_work_infra": 0.0}


def test_windowed_counts_rise_by_code_and_restart_after_a_gap(tmp_path: Path) -> None:
    """Only the windowed count (two codes' series summed per scrape): XID 42 at 10:00 (1 for
    ten scrapes), XIDs 13 and 31 together at 10:10 (a rise of 2), and after no scrape from
    10:14:30 a scrape at 10:25 with 1 (more than 5 minutes on: a rise from 0) = 4 events."""

    def lines(ts: dt.datetime) -> list[str]:
        minute = (ts - T0).total_seconds() / 60
        codes = []
        if minute < 5:
            codes.append("42")
        if 10 <= minute < 15:
            codes += ["13", "31"]
        if minute >= 25:
            codes.append("79")
        out = [f"DCGM_FI_DEV_GPU_UTIL{{{_T400}}} 50"]
        out += [
            f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000",xid="{c}"}} 1'
            for c in codes
        ]
        if not codes:
            out.append(f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000"}} 0')
        return out

    folder = _scrapes(tmp_path / "dcgm", lines, n=30)  # 10:00:00 … 10:14:30
    late = T0 + dt.timedelta(minutes=25)
    (folder / f"dcgm-{late:%Y%m%dT%H%M%S}Z.prom").write_text("\n".join(lines(late)) + "\n")
    jobs = [_job("1", "2026-11-02T10:30:00", "COMPLETED", "workstation", "gres/gpu=1")]
    with _build(tmp_path, "workstation", jobs, folder) as con:
        assert con.execute(
            "SELECT host, xid_events FROM analytics.node_reliability"
        ).fetchall() == [("workstation", 4)]


def test_windowed_counts_are_the_jobs_xid_events(tmp_path: Path) -> None:
    """Only the windowed count (the last-XID field switched off): XID 79 from 10:12:30 and XID
    48 from 10:13:00, each 1 for its 5-minute window (bucket 10:10-10:15, matched at 10:12:15).
    Job 1 holds the GPU 10:00-10:17 and FAILS: its job_gpu_summary.xid_events = 2 (a rise of 1
    at each, both while it runs), as node_reliability counts them, and both lie in its last 10
    minutes: an infrastructure failure. Before, the job's count read DCGM_FI_DEV_XID_ERRORS
    alone: 0."""

    def lines(ts: dt.datetime) -> list[str]:
        codes = [
            c for c, at in (("79", 750), ("48", 780)) if at <= (ts - T0).total_seconds() < at + 300
        ]
        out = [f"DCGM_FI_DEV_GPU_UTIL{{{_T400}}} 50"]
        out += [
            f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000",xid="{c}"}} 1'
            for c in codes
        ]
        if not codes:
            out.append(f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000"}} 0')
        return out

    scrapes = _scrapes(tmp_path / "dcgm", lines)
    jobs = [_job("1", "2026-11-02T10:17:00", "FAILED", "workstation", "gres/gpu=1")]
    with _build(tmp_path, "workstation", jobs, scrapes) as con:
        assert con.execute(
            "SELECT job_id, xid_events FROM analytics.job_gpu_summary"
        ).fetchall() == [("1", 2)]
        assert con.execute(
            "SELECT host, xid_events, xid_codes, infra_failed_attempts"
            " FROM analytics.node_reliability"
        ).fetchall() == [("workstation", 2, [48, 79], 1)]


def test_a_code_entering_the_window_as_another_leaves_it_is_an_event(tmp_path: Path) -> None:
    """XID 42 at 10:00 (1 for 10 scrapes, to 10:04:30), XID 13 at 10:05:00, the scrape where 42
    has left the window: the codes' sum stays 1, yet 13's series rises from 0 (absent at
    10:04:30): 2 events, codes [13, 42]. Read by the sum, 13 was no event."""

    def lines(ts: dt.datetime) -> list[str]:
        minute = (ts - T0).total_seconds() / 60
        code = "42" if minute < 5 else "13" if minute < 10 else None
        out = [f"DCGM_FI_DEV_GPU_UTIL{{{_T400}}} 50"]
        if code:
            out.append(
                f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000",xid="{code}"}} 1'
            )
        else:
            out.append(f'DCGM_EXP_XID_ERRORS_COUNT{{{_T400},window_size_in_ms="300000"}} 0')
        return out

    jobs = [_job("1", "2026-11-02T10:30:00", "COMPLETED", "workstation", "gres/gpu=1")]
    with _build(tmp_path, "workstation", jobs, _scrapes(tmp_path / "dcgm", lines)) as con:
        assert con.execute(
            "SELECT host, xid_events, xid_codes FROM analytics.node_reliability"
        ).fetchall() == [("workstation", 2, [13, 42])]
        assert con.execute(
            "SELECT job_id, xid_events FROM analytics.job_gpu_summary"
        ).fetchall() == [("1", 2)]


def _mig_scrape(
    activity_metric: str, value: str, xid_on_first: bool, xid_on_every: bool = False
) -> Callable[[dt.datetime], list[str]]:
    def lines(ts: dt.datetime) -> list[str]:
        out = []
        for gi, job in ((1, "201"), (2, "202")):
            labels = (
                f'{_A100},GPU_I_PROFILE="3g.40gb",GPU_I_ID="{gi}",Hostname="mig-node",'
                f'hpc_job="{job}"'
            )
            out.append(f"{activity_metric}{{{labels}}} {value}")
            on = xid_on_every or (xid_on_first and gi == 1)
            xid = 31 if on and ts >= T0 + dt.timedelta(minutes=5) else 0
            out.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid}")
        return out

    return lines


_MIG_JOBS = [
    _job(j, "2026-11-02T10:30:00", "COMPLETED", "mig-node", "gres/gpu:3g.40gb=1,gres/gpu=1")
    for j in ("201", "202")
]


@pytest.mark.parametrize("every", [False, True], ids=["one-instance", "every-instance"])
def test_an_xid_on_a_mig_gpu_is_one_event(tmp_path: Path, every: bool) -> None:
    """XID 31 from 10:05 on GPU instance 1 only, or on both instances (dcgm-exporter writes a
    device field on every instance's series, NVIDIA/dcgm-exporter#317): 1 event on the node
    either way (before: 50 with one instance, the instances' samples compared with each other
    at every scrape; then 2 with both, one per instance); in the jobs' summaries 1 for each
    instance that shows it; activity 0.5 on both (6 buckets × 3/7 × 300 s = 771.43 GPU-s)."""
    scrapes = _scrapes(
        tmp_path / "dcgm",
        _mig_scrape("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0.5", xid_on_first=True, xid_on_every=every),
    )
    with _build(tmp_path, "mig-node", _MIG_JOBS, scrapes) as con:
        assert con.execute(
            "SELECT host, xid_events, xid_codes FROM analytics.node_reliability"
        ).fetchall() == [("mig-node", 1, [31])]
        rows = con.execute(
            "SELECT job_id, observed_gpu_s, mean_activity, xid_events"
            " FROM analytics.job_gpu_summary ORDER BY job_id"
        ).fetchall()
        assert [(j, round(o, 2), m, x) for j, o, m, x in rows] == [
            ("201", 771.43, 0.5, 1),
            ("202", 771.43, 0.5, 1 if every else 0),
        ]


def test_gpu_util_on_a_mig_instance_is_no_activity_reading(tmp_path: Path) -> None:
    """Two 3g.40gb slices (3/7 GPU each) held 10:00–10:30 with only DCGM_FI_DEV_GPU_UTIL (0, as
    dcgm-exporter writes it on MIG): 2 × 3/7 × 1,800 s = 1,542.86 GPU-s of goodput, none
    observed, none idle; the jobs' mean activity NULL (before: all of it allocated_idle, mean
    0.0)."""
    scrapes = _scrapes(tmp_path / "dcgm", _mig_scrape("DCGM_FI_DEV_GPU_UTIL", "0", False))
    with _build(tmp_path, "mig-node", _MIG_JOBS, scrapes) as con:
        leaves = dict(
            con.execute(
                "SELECT bucket, round(sum(gpu_s), 2) FROM analytics.gpu_waterfall_hourly"
                " WHERE bucket IN ('goodput', 'allocated_idle') GROUP BY bucket"
            ).fetchall()
        )
        assert leaves == {"goodput": round(2 * 3 / 7 * 1800, 2), "allocated_idle": 0.0}
        assert con.execute(
            "SELECT job_id, observed_gpu_s, mean_activity FROM analytics.job_gpu_summary"
            " ORDER BY job_id"
        ).fetchall() == [("201", 0.0, None), ("202", 0.0, None)]


K = "k8s-x"


def _k8s_inputs(tmp_path: Path, hostname: str) -> tuple[Path, Path, Path]:
    """Kubernetes cluster k8s-x, node gpu-node-1 (8 TITAN V): pod nlp/train-0 (Job train, 4
    GPUs) runs 10:00–10:15 and fails. dcgm-exporter with the pod mapping (label shape of
    NVIDIA/dcgm-exporter#58): GPUs 0–3 carry the pod until 10:15; XID 79 on GPU 0 from 10:10;
    its ``Hostname`` is ``hostname``."""
    import json

    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{K}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\ngpu-node-1,8,titanv,cq-a,r1\n"
    )
    (tmp_path / "registry.yaml").write_text(
        "teams:\n  - team: nlp\n    share: 1.0\n    k8s_namespaces: [nlp]\n"
    )
    (tmp_path / "goodput.toml").write_text(
        f'default_cluster = "{K}"\n[warehouse]\npath = "{tmp_path / "w.duckdb"}"\n'
        f'serving_path = "{tmp_path / "s.duckdb"}"\ninputs = "{tmp_path / "inputs"}"\n'
        f'inventory = "{tmp_path / "inventory"}"\nregistry = "{tmp_path / "registry.yaml"}"\n'
        f'partitions_start = "2026-01-01"\n[[clusters]]\nname = "{K}"\n'
        'scheduler = "kubernetes"\ntimezone = "UTC"\n'
    )
    start, end = "2026-11-02T10:00:00Z", "2026-11-02T10:15:00Z"
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "train-0", "namespace": "nlp", "uid": "uid-train-0",
                     "creationTimestamp": start, "labels": {},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                          "name": "train", "uid": "juid", "controller": True}]},
        "spec": {"nodeName": "gpu-node-1",
                 "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Failed", "startTime": start,
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": start}],
                   "containerStatuses": [{"name": "c", "ready": False, "restartCount": 0,
                                          "state": {"terminated": {"exitCode": 1,
                                                                   "reason": "Error",
                                                                   "startedAt": start,
                                                                   "finishedAt": end}}}]},
    }  # fmt: skip
    (tmp_path / "inputs").mkdir()
    pods = tmp_path / "inputs" / "pods_2026-11-02.json"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}))
    # another pod on the node's other four GPUs, 11-01 20:00 → 11-02 10:15, failed: loaded
    # apart (a file of its own), so that a build can see it before train-0
    other = json.loads(json.dumps(pod).replace("train", "other"))
    begin = "2026-11-01T20:00:00Z"
    other["metadata"]["creationTimestamp"] = begin
    other["status"]["startTime"] = begin
    other["status"]["conditions"][0]["lastTransitionTime"] = begin
    other["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"] = begin
    (tmp_path / "inputs" / "early_pods_2026-11-02.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [other]})
    )

    def lines(ts: dt.datetime) -> list[str]:
        out = []
        for g in range(8):
            held = g < 4 and ts < T0 + dt.timedelta(minutes=15)
            labels = (
                f'gpu="{g}",UUID="GPU-0000000{g}-9033-f166-7723-77088b0ff94d",'
                f'device="nvidia{g}",modelName="NVIDIA TITAN V",Hostname="{hostname}",'
                + ('container="c",namespace="nlp",pod="train-0"' if held
                   else 'container="",namespace="",pod=""')
            )  # fmt: skip
            out.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {90 if held else 0}")
            xid = 79 if g == 0 and ts >= T0 + dt.timedelta(minutes=10) else 0
            out.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid}")
        return out

    return tmp_path / "goodput.toml", pods, _scrapes(tmp_path / "dcgm", lines, n=40)


def _k8s_outcome(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple[object, ...]], dict]:
    rel = con.execute(
        "SELECT host, xid_events, infra_failed_attempts FROM analytics.node_reliability"
        " ORDER BY host"
    ).fetchall()
    leaves = dict(
        con.execute(
            "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE bucket IN ('failed_work_user', 'failed_work_infra') GROUP BY bucket"
        ).fetchall()
    )
    return rel, leaves


@pytest.mark.parametrize("hostname", ["dcgm-exporter-lcxpl", "gpu-node-1"])
def test_an_xid_named_by_the_exporters_pod_is_its_gpus_pods_node(
    tmp_path: Path, hostname: str
) -> None:
    """gpu-operator's exporter labels its series with its own pod's name as ``Hostname``
    (dcgm-exporter#58, #188). XID 79 at 10:10 on a GPU pod nlp/train-0 holds is on the pod's
    node gpu-node-1, inside the failed pod's last 10 minutes: one event on gpu-node-1, the
    attempt an infrastructure failure, 4 GPUs × 900 s = 3,600 GPU-s (before: the event on a
    node ``dcgm-exporter-lcxpl`` that does not exist, the attempt a user failure). The same
    with the node name as ``Hostname``."""
    toml, pods, scrapes = _k8s_inputs(tmp_path, hostname)
    cfg = load_config(toml)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=K, tz="UTC")
        ingest_file(con, "k8s-pods", pods, opts)
        ingest_file(con, "dcgm", scrapes, opts)
        rebuild(con, cfg)
        rel, leaves = _k8s_outcome(con)
    assert rel == [("gpu-node-1", 1, 1)]
    assert leaves == {"failed_work_user": 0.0, "failed_work_infra": 3600.0}


def test_pods_loaded_after_the_telemetry_move_the_xid_as_a_full_build_does(
    tmp_path: Path,
) -> None:
    """The telemetry and pod nlp/other-0 first (4 GPUs of gpu-node-1, 11-01 20:00 → 11-02
    10:15, failed): no pod holds the XID's GPU, so the event stays on the exporter's name and
    other-0 is a user failure. Then train-0: the event moves to gpu-node-1, where it decides
    both attempts ending within 10 minutes after it; other-0's every hour, 11-01's too, turns
    infrastructure failure: 4 × 51,300 + 3,600 = 208,800 GPU-s, as a full rebuild of the same
    warehouse has it (without the plan's rule, 11-01 was not rebuilt)."""
    import shutil

    toml, pods, scrapes = _k8s_inputs(tmp_path, "dcgm-exporter-lcxpl")
    cfg = load_config(toml)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=K, tz="UTC")
        ingest_file(con, "k8s-pods", tmp_path / "inputs" / "early_pods_2026-11-02.json", opts)
        ingest_file(con, "dcgm", scrapes, opts)
        rebuild(con, cfg)
        assert _k8s_outcome(con) == (
            [("dcgm-exporter-lcxpl", 1, 0), ("gpu-node-1", 0, 0)],
            {"failed_work_user": 4 * 51300.0, "failed_work_infra": 0.0},
        )
        ingest_file(con, "k8s-pods", pods, opts)
        rebuild(con, cfg)
        mode = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
        incremental = _k8s_outcome(con)
    full_path = tmp_path / "full.duckdb"
    shutil.copyfile(cfg.warehouse_path, full_path)
    with connect(full_path) as con:
        rebuild(con, cfg, full=True)
        full = _k8s_outcome(con)
    assert mode == [("incremental",)]
    assert (
        incremental
        == full
        == (
            [("gpu-node-1", 1, 2)],
            {"failed_work_user": 0.0, "failed_work_infra": 4 * 51300.0 + 3600.0},
        )
    )


def _minutely(
    path: Path, t0: dt.datetime, t1: dt.datetime, xid: Callable[[dt.datetime], int]
) -> Path:
    """One scrape a minute in [t0, t1): activity 0.5 and the last-XID value ``xid(ts)``."""
    lines, ts = [], t0
    while ts < t1:
        ms = int(ts.timestamp() * 1000)
        lines += [
            f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{_A100},Hostname="x-001"}} 0.5 {ms}',
            f'DCGM_FI_DEV_XID_ERRORS{{{_A100},Hostname="x-001"}} {xid(ts)} {ms}',
        ]
        ts += dt.timedelta(minutes=1)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("change", ["day-3-added", "day-1-deleted"])
def test_a_held_last_xid_after_days_without_scrapes_is_no_new_xid(
    tmp_path: Path, change: str
) -> None:
    """The GPU's last-XID field reads 0, then 79 from 2026-11-02 10:30 (scrapes stop at 12:00);
    it is next scraped 2026-11-04 00:00–01:00, still 79 (the value never resets,
    NVIDIA/dcgm-exporter#500): no XID then. Job 1 FAILED 11-02 10:00–10:35 (XID 79 at 10:30 in
    its window: 35 min = 2,100 GPU-s infrastructure), job 2 FAILED 11-04 00:00–00:08 (480 GPU-s,
    the user's). Built full on day 1, then incrementally with 11-04 loaded: the 11-04 samples
    compare with the sample of 11-02 12:00, a day and a half before (the window's one-day margin
    read them as a new XID: job 2 infrastructure, 2 XIDs). Or built with both days, then the
    11-02 load deleted: 11-04's first 79 is then an XID (nothing before it), so job 2 is the
    infrastructure's 480 GPU-s and job 1 the user's 2,100, though the changed samples lie more
    than a day before it. Either way the incremental build equals a full rebuild, row for row."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild, delete_load

    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{X}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nx-001,1,a100,gpu,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=((X, "slurm", "UTC"),)))
    on = dt.datetime(2026, 11, 2, 10, 30, tzinfo=dt.UTC)
    day1 = _minutely(tmp_path / "dcgm_2026-11-02.prom", T0, T0 + dt.timedelta(hours=2),
                     lambda ts: 79 if ts >= on else 0)  # fmt: skip
    t3 = dt.datetime(2026, 11, 4, tzinfo=dt.UTC)
    day3 = _minutely(tmp_path / "dcgm_2026-11-04.prom", t3, t3 + dt.timedelta(hours=1),
                     lambda ts: 79)  # fmt: skip
    tres = "gres/gpu=1"
    one = _job("1", "2026-11-02T10:35:00", "FAILED", "x-001", tres).replace("00:17:00", "00:35:00")
    two = (
        _job("2", "2026-11-04T00:08:00", "FAILED", "x-001", tres)
        .replace("2026-11-02T09:59:00", "2026-11-04T00:00:00")
        .replace("2026-11-02T10:00:00", "2026-11-04T00:00:00")
        .replace("00:17:00", "00:08:00")
    )
    jobs = [one, two]
    sacct = tmp_path / "inputs" / "sacct.txt"
    sacct.write_text(_HEADER + "\n" + "\n".join(jobs) + "\n")
    opts = IngestOptions(cluster=X, tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        first = ingest_file(con, "dcgm", day1, opts)
        if change == "day-3-added":
            rebuild(con, cfg)
            ingest_file(con, "dcgm", day3, opts)
        else:
            ingest_file(con, "dcgm", day3, opts)
            rebuild(con, cfg)
            delete_load(con, first.ingest_id)
        rebuild(con, cfg)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        leaves = con.execute(
            "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE bucket LIKE 'failed%' GROUP BY 1 ORDER BY 1"
        ).fetchall()
        xids = con.execute(
            "SELECT job_id, xid_events FROM analytics.job_gpu_summary ORDER BY 1"
        ).fetchall()
    assert modes[-1] == ("incremental",)
    if change == "day-3-added":
        assert leaves == [("failed_work_infra", 2100.0), ("failed_work_user", 480.0)]
        assert xids == [("1", 1), ("2", 0)]
    else:
        assert leaves == [("failed_work_infra", 480.0), ("failed_work_user", 2100.0)]
        assert xids == [("1", 0), ("2", 1)]
    assert_equals_full_rebuild(cfg, tmp_path)
