"""Kubernetes workloads → allocation attempts (the unified ``jobs`` model) and their timings.

Literal pods and events (built with the parsers' schemas) plus the hand-written Workload
objects of ``tests/fixtures/kueue-crds/objects``; and, at the end, the bundled sample fleet,
whose simulation is the ground truth for every attempt it wrote as Events and pods.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics import (
    LossPolicy,
    allocated_gpu_seconds_hourly,
    gpu_waterfall_hourly,
    node_reliability,
    node_signals,
)
from metrics.holds import merged_pieces
from pipelines.analytics.build import JOBS_COLUMNS
from pipelines.core.build import _holds as core_holds
from pipelines.core.k8s_attempts import (
    K8S_ATTEMPT_SCHEMA,
    K8sAttempts,
    k8s_attempts,
    pending_workload_attempts,
    pod_attempts,
    workload_attempts,
)
from pipelines.core.k8s_timings import (
    K8S_PENDING_REASON_SCHEMA,
    K8S_WORKLOAD_TIMING_SCHEMA,
    image_pull_seconds,
    k8s_pending_reasons,
    k8s_workload_timings,
)
from pipelines.kubernetes._events_parse import K8S_EVENT_SCHEMA, parse_k8s_events
from pipelines.kubernetes._pods_parse import K8S_POD_SCHEMA, parse_k8s_pods
from pipelines.kubernetes._workloads_parse import parse_k8s_workloads, parse_kueue_local_queues

OBJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "kueue-crds" / "objects"
EMPTY_TEAMS = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
_uid = 0


def _t(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


def _pods(*rows: dict[str, Any]) -> pl.DataFrame:
    """Pod rows with the parser's schema; unnamed columns NULL, cluster ``k1``, 8 GPUs."""
    base = {"cluster": "k1", "gpus": 8.0, "restart_count": 0, "labels": "{}"}
    full = [{**base, **r} for r in rows]
    return pl.DataFrame(full, schema=K8S_POD_SCHEMA)


def _events(*rows: tuple[Any, ...]) -> pl.DataFrame:
    """Events ``(kind, name, reason, first_seen[, message[, count, last_seen, uid]])``."""
    global _uid
    out = []
    for r in rows:
        kind, name, reason, first = r[:4]
        message = r[4] if len(r) > 4 else ""
        count = r[5] if len(r) > 5 else 1
        last = r[6] if len(r) > 6 else first
        involved_uid = r[7] if len(r) > 7 else None
        _uid += 1
        out.append(
            {
                "uid": f"ev-{_uid}",
                "cluster": "k1",
                "namespace": "genomics",
                "involved_kind": kind,
                "involved_name": name,
                "involved_uid": involved_uid,
                "involved_namespace": "genomics",
                "reason": reason,
                "type": "Normal",
                "message": message,
                "count": count,
                "first_seen": first,
                "last_seen": last,
            }
        )
    return pl.DataFrame(out, schema=K8S_EVENT_SCHEMA)


def _workloads() -> pl.DataFrame:
    return parse_k8s_workloads(OBJECTS / "workloads.json", cluster="k1").rows


def _local_queues() -> pl.DataFrame:
    return parse_kueue_local_queues(OBJECTS / "localqueues.json", cluster="k1").rows


ESM = "job-esm-pretrain-m2482-3f703"
JOB = "esm-pretrain-m2482"
PRE = (
    "Preempted to accommodate a workload (UID: x, JobUID: y) due to prioritization in the "
    "ClusterQueue"
)


def _esm_pods() -> pl.DataFrame:
    """Three generations of the twice-preempted gang (as the sample fleet writes them)."""
    common = {"namespace": "genomics", "owner_kind": "Job", "owner_name": JOB, "workload_name": JOB,
              "queue_name": "lq-genomics"}  # fmt: skip
    return _pods(
        {**common, "uid": "p0a", "name": "esm-0-a", "phase": "Failed", "node_name": "n1",
         "created_at": _t(6, 14, 13, 26), "scheduled_at": _t(6, 14, 13, 26),
         "started_at": _t(6, 14, 13, 29), "finished_at": _t(6, 16, 13, 43),
         "deleted_at": _t(6, 16, 13, 43), "exit_code": 143, "termination_reason": "Error"},
        {**common, "uid": "p1a", "name": "esm-1-a", "phase": "Pending",
         "created_at": _t(6, 14, 13, 26), "deleted_at": _t(6, 16, 13, 31)},
        {**common, "uid": "p0b", "name": "esm-0-b", "phase": "Failed", "node_name": "n1",
         "created_at": _t(7, 0, 53, 11), "scheduled_at": _t(7, 0, 53, 11),
         "started_at": _t(7, 0, 53, 14), "finished_at": _t(7, 2, 23, 27),
         "deleted_at": _t(7, 2, 23, 27), "exit_code": 143, "termination_reason": "Error"},
        {**common, "uid": "p1b", "name": "esm-1-b", "phase": "Failed", "node_name": "n2",
         "created_at": _t(7, 0, 53, 11), "scheduled_at": _t(7, 0, 53, 11),
         "started_at": _t(7, 0, 53, 14), "finished_at": _t(7, 2, 23, 17),
         "deleted_at": _t(7, 2, 23, 17), "exit_code": 143, "termination_reason": "Error"},
        {**common, "uid": "p0c", "name": "esm-0-c", "phase": "Running", "node_name": "n3",
         "created_at": _t(7, 4, 23, 36), "scheduled_at": _t(7, 4, 23, 36),
         "started_at": _t(7, 4, 23, 39)},
        {**common, "uid": "p1c", "name": "esm-1-c", "phase": "Running", "node_name": "n4",
         "created_at": _t(7, 4, 23, 36), "scheduled_at": _t(7, 4, 23, 36),
         "started_at": _t(7, 4, 23, 39)},
    )  # fmt: skip


def _esm_events() -> pl.DataFrame:
    qr = "Quota reserved in ClusterQueue cq-research, wait time since queued was {}s"
    return _events(
        ("Job", JOB, "CreatedWorkload", _t(5, 4), f"Created Workload: genomics/{ESM}"),
        ("Workload", ESM, "QuotaReserved", _t(6, 14, 13, 25), qr.format(123205)),
        ("Workload", ESM, "Admitted", _t(6, 14, 13, 25), "Admitted by ClusterQueue cq-research"),
        ("Workload", ESM, "EvictedDueToPreempted", _t(6, 16, 13, 25), PRE),
        ("Workload", ESM, "Preempted", _t(6, 16, 13, 25), PRE),
        ("Workload", ESM, "QuotaReserved", _t(7, 0, 53, 10), qr.format(31167)),
        ("Workload", ESM, "EvictedDueToPreempted", _t(7, 2, 23, 10), PRE),
        ("Workload", ESM, "Preempted", _t(7, 2, 23, 11), PRE),
        ("Workload", ESM, "QuotaReserved", _t(7, 4, 23, 35), qr.format(7208)),
    )


def _esm_attempts(events: pl.DataFrame | None) -> pl.DataFrame:
    att = k8s_attempts(_esm_pods(), events, _workloads(), _local_queues())
    return att.attempts.filter(pl.col("group") == ESM)


def test_preempted_twice_is_three_attempts() -> None:
    """Workload object + Events + pods: two PREEMPTED attempts at the evictions, one running."""
    a = _esm_attempts(_esm_events())
    assert a.schema == pl.Schema(K8S_ATTEMPT_SCHEMA)
    assert a["attempt"].to_list() == [0, 1, 2]
    assert a["attempts"].to_list() == [3, 3, 3]
    assert a["state"].to_list() == ["PREEMPTED", "PREEMPTED", "RUNNING"]
    assert a["end_reason"].to_list() == ["Preempted", "Preempted", None]
    assert a["end_at"].to_list() == [_t(6, 16, 13, 25), _t(7, 2, 23, 10), None]
    assert a["start_at"].to_list() == [_t(6, 14, 13, 26), _t(7, 0, 53, 11), _t(7, 4, 23, 36)]
    assert a["quota_reserved_at"].to_list() == [
        _t(6, 14, 13, 25),
        _t(7, 0, 53, 10),
        _t(7, 4, 23, 35),
    ]
    assert a["workload_uid"].unique().to_list() == ["910f31dc-db75-4297-ad2e-e515e362e956"]
    assert a["cluster_queue"].unique().to_list() == ["cq-research"]


def test_eligible_is_creation_then_each_requeue() -> None:
    """Attempt 0 waits from creation; requeued ones from Kueue's own queued time."""
    a = _esm_attempts(_esm_events())
    assert a["eligible_at"].to_list() == [_t(5, 4), _t(6, 16, 13, 43), _t(7, 2, 23, 27)]
    # attempt 1: re-admission − the reported wait; attempt 2: the Requeued condition
    assert a["eligible_source"].to_list() == ["created", "reported_wait", "requeued_condition"]
    assert a["created_at"].unique().to_list() == [_t(5, 4)]


def test_gpu_seconds_count_per_pod_from_binding_to_termination() -> None:
    """Only the bound pod of attempt 0 counts, to its own end after the eviction's grace."""
    a = _esm_attempts(_esm_events())
    assert a["gpus"].to_list() == [8.0, 16.0, 16.0]
    assert a["req_gpus"].to_list() == [16.0, 16.0, 16.0]
    assert a["pods"].to_list() == [2, 2, 2]
    assert a["pods_bound"].to_list() == [1, 2, 2]
    first = 8 * (16 * 60 + 17 + 7200 - 16 * 60)  # 14:13:26 → 16:13:43
    second = 8 * (2 * 3600 + 23 * 60 + 27 - (53 * 60 + 11)) + 8 * (
        2 * 3600 + 23 * 60 + 17 - (53 * 60 + 11)
    )
    assert a["gpu_s"].to_list() == [float(first), float(second), None]
    assert a["all_pods_scheduled_at"][0] is None  # one pod of the gang never bound


def test_holds_are_the_gpus_the_pods_held_through_the_eviction_s_grace() -> None:
    """The preempted gang's pods held past each eviction (attempt 0: esm-0-a to 16:13:43, 18 s
    after the eviction at 16:13:25; attempt 1: esm-1-b to 02:23:17, esm-0-b to 02:23:27), so
    their holding is not ``gpus`` over ``[start_at, end_at)``: attempt 0 = 8 GPUs 14:13:26 -
    16:13:43; attempt 1 = 16 GPUs 00:53:11 - 02:23:17 and 8 GPUs 02:23:17 - 02:23:27. Σ GPUs ×
    seconds = gpu_s: 8 x 7,217 = 57,736 and 16 x 5,406 + 8 x 10 = 86,576. The running
    attempt 2 (both pods on since 04:23:36) holds its 16 GPUs over its span: no piece."""
    att = k8s_attempts(_esm_pods(), _esm_events(), _workloads(), _local_queues())
    got = att.holds.filter(pl.col("group") == ESM)
    # stored per node: esm-0-a on n1; esm-0-b on n1 to 02:23:27, esm-1-b on n2 to 02:23:17
    assert got.select("attempt", "host", "start_at", "end_at", "gpus").rows() == [
        (0, "n1", _t(6, 14, 13, 26), _t(6, 16, 13, 43), 8.0),
        (1, "n1", _t(7, 0, 53, 11), _t(7, 2, 23, 27), 8.0),
        (1, "n2", _t(7, 0, 53, 11), _t(7, 2, 23, 17), 8.0),
    ]
    assert _merged(got).select("attempt", "start_at", "end_at", "gpus").rows() == [
        (0, _t(6, 14, 13, 26), _t(6, 16, 13, 43), 8.0),
        (1, _t(7, 0, 53, 11), _t(7, 2, 23, 17), 16.0),
        (1, _t(7, 2, 23, 17), _t(7, 2, 23, 27), 8.0),
    ]
    held = got.group_by("attempt").agg(
        (pl.col("gpus") * (pl.col("end_at") - pl.col("start_at")).dt.total_seconds()).sum()
    )
    assert sorted(held.rows()) == [(0, 57_736.0), (1, 86_576.0)]
    assert att.attempts.filter(pl.col("group") == ESM)["gpu_s"].to_list()[:2] == [
        57_736.0,
        86_576.0,
    ]


def _merged(holds: pl.DataFrame) -> pl.DataFrame:
    """``holds`` (per node) added up over the nodes (:func:`metrics.holds.merged_pieces`),
    the group as ``job_id``, sorted by attempt and start."""
    pieces = merged_pieces(holds.drop("namespace").rename({"group": "job_id"}).lazy())
    return pieces.collect().sort("attempt", "start_at")


def _train_gang(worker0_end: datetime) -> pl.DataFrame:
    """A bare Job ``train`` (no Kueue): a CPU launcher bound 08:10 to 10:10, worker-0 (8 GPUs)
    bound 08:10 to ``worker0_end``, worker-1 (8 GPUs) bound 08:20 to 10:10; all Succeeded."""
    common = {"namespace": "team-a", "owner_kind": "Job", "owner_name": "train",
              "workload_name": "train", "phase": "Succeeded", "created_at": _t(2, 8)}  # fmt: skip
    return _pods(
        {**common, "uid": "l", "name": "train-launcher-0", "node_name": "c", "gpus": 0.0,
         "scheduled_at": _t(2, 8, 10), "finished_at": _t(2, 10, 10)},
        {**common, "uid": "w0", "name": "train-worker-0", "node_name": "a",
         "scheduled_at": _t(2, 8, 10), "finished_at": worker0_end},
        {**common, "uid": "w1", "name": "train-worker-1", "node_name": "b",
         "scheduled_at": _t(2, 8, 20), "finished_at": _t(2, 10, 10)},
    )  # fmt: skip


def test_holds_of_a_gang_whose_pods_bound_and_ended_apart() -> None:
    """worker-0 08:10 - 08:40, worker-1 08:20 - 10:10: 8 GPUs 08:10 - 08:20, 16 08:20 - 08:40,
    8 08:40 - 10:10 (600 x 8 + 1,200 x 16 + 5,400 x 8 = 67,200 = gpu_s, where gpus x run_s =
    16 x 7,200 = 115,200). Ending together at 10:10: 8 GPUs 08:10 - 08:20, 16 08:20 - 10:10
    (110,400). All three pods bound together and ending together: 16 GPUs over the attempt's
    span (115,200), but its node list (a, b and the CPU launcher's c) does not hold them
    evenly, so it keeps its pieces per node, 8 GPUs on a and on b 08:10 - 10:10 (before: no
    piece, its GPUs split evenly over a, b, c)."""
    att = k8s_attempts(_train_gang(_t(2, 8, 40)))
    assert att.attempts.select("gpus", "start_at", "end_at", "gpu_s").rows() == [
        (16.0, _t(2, 8, 10), _t(2, 10, 10), 67_200.0)
    ]
    # per node: worker-0's 8 GPUs on a, worker-1's on b, none on the launcher's c
    assert att.holds.select("host", "start_at", "end_at", "gpus").rows() == [
        ("a", _t(2, 8, 10), _t(2, 8, 40), 8.0),
        ("b", _t(2, 8, 20), _t(2, 10, 10), 8.0),
    ]
    assert _merged(att.holds).select("job_id", "attempt", "start_at", "end_at", "gpus").rows() == [
        ("train", 0, _t(2, 8, 10), _t(2, 8, 20), 8.0),
        ("train", 0, _t(2, 8, 20), _t(2, 8, 40), 16.0),
        ("train", 0, _t(2, 8, 40), _t(2, 10, 10), 8.0),
    ]
    together = k8s_attempts(_train_gang(_t(2, 10, 10)))
    assert together.attempts["gpu_s"].to_list() == [110_400.0]
    assert together.holds.select("host", "start_at", "end_at", "gpus").rows() == [
        ("a", _t(2, 8, 10), _t(2, 10, 10), 8.0),
        ("b", _t(2, 8, 20), _t(2, 10, 10), 8.0),
    ]
    assert _merged(together.holds).select("start_at", "end_at", "gpus").rows() == [
        (_t(2, 8, 10), _t(2, 8, 20), 8.0),
        (_t(2, 8, 20), _t(2, 10, 10), 16.0),
    ]
    alike = k8s_attempts(
        _train_gang(_t(2, 10, 10)).with_columns(pl.lit(_t(2, 8, 10)).alias("scheduled_at"))
    )
    assert alike.attempts["gpu_s"].to_list() == [115_200.0]
    assert alike.holds.select("host", "start_at", "end_at", "gpus").rows() == [
        ("a", _t(2, 8, 10), _t(2, 10, 10), 8.0),
        ("b", _t(2, 8, 10), _t(2, 10, 10), 8.0),
    ]
    assert _merged(alike.holds).select("start_at", "end_at", "gpus").rows() == [
        (_t(2, 8, 10), _t(2, 10, 10), 16.0)
    ]
    # the launcher on worker-0's node: a and b hold 8 GPUs each, the even split: no piece
    shared = k8s_attempts(
        _train_gang(_t(2, 10, 10)).with_columns(
            pl.lit(_t(2, 8, 10)).alias("scheduled_at"),
            pl.when(pl.col("uid") == "l")
            .then(pl.lit("a"))
            .otherwise("node_name")
            .alias("node_name"),
        )
    )
    assert shared.attempts["node_list"].to_list() == [["a", "b"]]
    assert shared.holds.height == 0


def _failed_gang() -> K8sAttempts:
    """A bare Job ``mpi`` FAILED 10:00 - 13:00 whose pods all bound at 10:00 and ended at
    13:00: a CPU-only launcher (0 GPUs) on c1, 8-GPU workers on g1 and g2 (worker-1 failed)."""
    common = {"namespace": "team-a", "owner_kind": "Job", "owner_name": "mpi",
              "workload_name": "mpi", "phase": "Succeeded", "created_at": _t(2, 9),
              "scheduled_at": _t(2, 10), "finished_at": _t(2, 13)}  # fmt: skip
    return k8s_attempts(
        _pods(
            {**common, "uid": "l", "name": "mpi-launcher", "node_name": "c1", "gpus": 0.0},
            {**common, "uid": "w0", "name": "mpi-worker-0", "node_name": "g1"},
            {
                **common,
                "uid": "w1",
                "name": "mpi-worker-1",
                "node_name": "g2",
                "phase": "Failed",
                "exit_code": 1,
            },
        )
    )


def test_a_gang_held_alike_loses_its_gpu_seconds_on_its_gpu_pods_nodes() -> None:
    """The gang FAILED 10:00 - 13:00 (10,800 s), all pods bound and ended together, 16 GPUs:
    its pieces per node are 8 GPUs on g1 and on g2 over 10:00 - 13:00, none on the launcher's
    c1, so (whole_attempt, as_of 15:00) node_reliability loses g1 8 x 10,800 = 86,400 GPU-s,
    g2 86,400, c1 0 (before: no piece, 16 x 10,800 = 172,800 split evenly over c1, g1, g2,
    57,600 each); the attempt still counts once on each node. Added up over the nodes the
    pieces are 16 GPUs over 10:00 - 13:00: the allocated GPU-seconds (occupancy) and the
    waterfall's failed_work_user are 16 x 10,800 = 172,800, as without pieces."""
    att = _failed_gang()
    jobs = workload_attempts(att, EMPTY_TEAMS, EMPTY_TEAMS)
    holds = core_holds(att).lazy()
    got = jobs.select("state", "gpus", "start_at", "end_at", "gpu_s", "node_list").collect()
    assert got.rows() == [("FAILED", 16.0, _t(2, 10), _t(2, 13), 172_800.0, ["c1", "g1", "g2"])]
    rel = node_reliability(jobs, _t(2, 15), holds=holds).collect().sort("host")
    assert rel.select("host", "attempts", "lost_gpu_s").rows() == [
        ("c1", 1, 0.0),
        ("g1", 1, 86_400.0),
        ("g2", 1, 86_400.0),
    ]
    daily = node_signals(jobs, _t(2, 15), holds=holds, daily=True).collect().sort("host")
    assert daily["lost_gpu_s"].to_list() == [0.0, 86_400.0, 86_400.0]
    alloc = allocated_gpu_seconds_hourly(jobs, _t(2, 15), holds=holds).collect()
    assert alloc["allocated_gpu_s"].sum() == 172_800.0
    without = allocated_gpu_seconds_hourly(jobs, _t(2, 15)).collect()
    assert_frame_equal(alloc, without)
    cap = pl.LazyFrame(
        {
            "cluster": ["k1"] * 3,
            "hour": [_t(2, 10), _t(2, 11), _t(2, 12)],
            "capacity_gpu_s": [24.0 * 3600] * 3,
            "down_gpu_s": [0.0] * 3,
            "planned_down_gpu_s": [0.0] * 3,
        },
        schema_overrides={"hour": pl.Datetime("us", "UTC")},
    )
    wf = gpu_waterfall_hourly(jobs, cap, _t(2, 15), holds=holds).collect()
    assert wf.filter(pl.col("leaf") == "failed_work_user")["gpu_s"].sum() == 172_800.0


def test_a_gang_held_alike_loses_its_checkpoint_policy_s_part_on_its_gpu_pods_nodes() -> None:
    """checkpoint Δ = 3,600 s, u0 = 300 s: the gang ran 10,800 s and lost min(10,800, 1,800 +
    300) = 2,100 s, from 12:25: g1 8 x 2,100 = 16,800 GPU-s, g2 16,800, c1 0 (before: 16 x
    2,100 = 33,600 split evenly, 11,200 on each of c1, g1, g2)."""
    att = _failed_gang()
    jobs = workload_attempts(att, EMPTY_TEAMS, EMPTY_TEAMS)
    policy = LossPolicy("checkpoint", 3600.0, 300.0)
    rel = node_reliability(jobs, _t(2, 15), holds=core_holds(att).lazy(), policy=policy)
    assert rel.collect().sort("host")["lost_gpu_s"].to_list() == [0.0, 16_800.0, 16_800.0]


def test_evictions_without_events_are_dated_from_pod_generations() -> None:
    """No Events: the object's 2 evictions are placed where a new pod generation began."""
    a = _esm_attempts(None)
    assert a["state"].to_list() == ["PREEMPTED", "PREEMPTED", "RUNNING"]
    # the earliest end of each ended generation
    assert a["end_at"].to_list() == [_t(6, 16, 13, 31), _t(7, 2, 23, 17), None]
    assert a["evictions_inferred"].to_list() == [2, 2, 2]
    assert a["eligible_source"].to_list() == ["created", "previous_end", "requeued_condition"]
    assert a["eligible_at"][1] == _t(6, 16, 13, 43)


def test_events_alone_rebuild_the_workload() -> None:
    """No Workload object (the bundled fleet): the Job's CreatedWorkload event links the pods."""
    att = k8s_attempts(_esm_pods(), _esm_events())
    a = att.attempts.filter(pl.col("group") == ESM)
    assert a["state"].to_list() == ["PREEMPTED", "PREEMPTED", "RUNNING"]
    assert a["cluster_queue"].unique().to_list() == ["cq-research"]  # from the event text
    assert a["eligible_source"].to_list() == ["created", "reported_wait", "reported_wait"]
    assert att.pods.filter(pl.col("group") == ESM).height == 6


def test_kueue_wait_sentinel_is_unknown() -> None:
    """A QuotaReserved event reporting ``9223372037s`` does not date the requeue 292 years back."""
    ev = _esm_events().with_columns(pl.col("message").str.replace(r"was 31167s", "was 9223372037s"))
    a = k8s_attempts(_esm_pods(), ev).attempts.filter(pl.col("group") == ESM)
    assert a["reported_wait_s"].to_list() == [123205.0, None, 7208.0]
    assert (a["eligible_source"][1], a["eligible_at"][1]) == ("previous_end", _t(6, 16, 13, 43))


def test_jobs_rows_have_the_jobs_columns() -> None:
    """``workload_attempts`` gives the build's JOBS_COLUMNS; team from the LocalQueue first."""
    att = k8s_attempts(_esm_pods(), _esm_events(), _workloads(), _local_queues())
    ns = pl.LazyFrame({"key": ["genomics"], "team": ["bio"]})
    lq = pl.LazyFrame({"key": ["lq-genomics"], "team": ["genomics-research"]})
    jobs = workload_attempts(att, ns, lq).collect()
    assert jobs.columns[: len(JOBS_COLUMNS)] == JOBS_COLUMNS
    row = jobs.filter(pl.col("attempt") == 1).row(0, named=True)
    assert row["source"] == "kubernetes"
    assert row["job_id"] == f"genomics/{ESM}"
    assert (row["team"], row["account"], row["partition"], row["qos"]) == (
        "genomics-research",
        "genomics",
        "cq-research",
        "lq-genomics",
    )
    assert row["wait_s"] == (_t(7, 0, 53, 11) - _t(6, 16, 13, 43)).total_seconds()
    assert row["submit_wait_s"] == (_t(7, 0, 53, 11) - _t(5, 4)).total_seconds()
    assert row["run_s"] == (_t(7, 2, 23, 10) - _t(7, 0, 53, 11)).total_seconds()
    assert row["node_list"] == ["n1", "n2"]
    assert jobs.filter(pl.col("attempt") == 2)["team"].item() == "genomics-research"
    no_lq = workload_attempts(att, ns, EMPTY_TEAMS).collect()
    assert no_lq["team"].unique().to_list() == ["bio"]
    nobody = workload_attempts(att, EMPTY_TEAMS, EMPTY_TEAMS).collect()
    assert nobody["team"].unique().to_list() == ["unattributed"]


def test_pods_ready_timeout_is_a_failure_and_requeue_waits_for_backoff() -> None:
    """An eviction for PodsReadyTimeout keeps its reason as a FAILED attempt; next is PENDING."""
    common = {"namespace": "safety", "owner_kind": "Job", "owner_name": "eval-suite",
              "workload_name": "eval-suite", "gpus": 4.0}  # fmt: skip
    pods = _pods(
        {**common, "uid": "e0", "name": "eval-0", "phase": "Failed", "node_name": "n5",
         "created_at": _t(2, 9, 0, 3), "scheduled_at": _t(2, 9, 0, 4),
         "finished_at": _t(2, 9, 10, 20), "deleted_at": _t(2, 9, 10, 5)},
        {**common, "uid": "e1", "name": "eval-1", "phase": "Pending",
         "created_at": _t(2, 9, 0, 3), "deleted_at": _t(2, 9, 10, 5)},
    )  # fmt: skip
    a = k8s_attempts(pods, None, _workloads(), _local_queues()).attempts
    a = a.filter(pl.col("group") == "job-eval-suite-8c1d2")
    assert a["state"].to_list() == ["FAILED", "PENDING"]
    assert a["end_reason"].to_list() == ["PodsReadyTimeout", None]
    assert a["end_at"][0] == _t(2, 9, 10, 2)
    assert (a["eligible_at"][1], a["eligible_source"][1]) == (_t(2, 9, 11, 2), "requeue_at")
    assert a["gpu_s"][0] == 4.0 * (10 * 60 + 16)  # 09:00:04 → 09:10:20
    assert a["cluster_queue"].to_list() == ["cq-research", "cq-research"]  # via the LocalQueue
    assert a["timelimit_s"].to_list() == [14400, 14400]
    jobs = workload_attempts(
        k8s_attempts(pods, None, _workloads(), _local_queues()), EMPTY_TEAMS, EMPTY_TEAMS
    ).collect()
    assert jobs.filter(pl.col("job_id") == "safety/job-eval-suite-8c1d2")["attempt"].to_list() == [
        0
    ]


def test_finished_failed_with_an_oom_pod_is_out_of_memory() -> None:
    """Finished=Failed and a worker OOMKilled → OUT_OF_MEMORY, ended at the Finished time."""
    common = {"namespace": "nlp", "owner_kind": "Job", "owner_name": "llm-sft-q9x2w",
              "workload_name": "llm-sft-q9x2w", "phase": "Failed", "created_at": _t(3, 12, 5, 11),
              "scheduled_at": _t(3, 12, 5, 12)}  # fmt: skip
    pods = _pods(
        {**common, "uid": "s0", "name": "sft-launcher", "gpus": 0.0, "node_name": "c1",
         "finished_at": _t(3, 12, 59, 50), "exit_code": 1, "termination_reason": "Error"},
        {**common, "uid": "s1", "name": "sft-worker-0", "node_name": "n1",
         "finished_at": _t(3, 12, 59, 40), "exit_code": 137, "termination_reason": "OOMKilled"},
        {**common, "uid": "s2", "name": "sft-worker-1", "node_name": "n2",
         "finished_at": _t(3, 12, 59, 45), "exit_code": 143, "termination_reason": "Error"},
    )  # fmt: skip
    a = k8s_attempts(pods, None, _workloads()).attempts
    row = a.filter(pl.col("group") == "job-llm-sft-q9x2w-7a1c4").row(0, named=True)
    assert (row["state"], row["end_reason"], row["end_at"]) == (
        "OUT_OF_MEMORY",
        "OOMKilled",
        _t(3, 13),
    )
    assert row["exit_code"] == 137  # the first pod to fail
    assert row["end_message"] == "Job has reached the specified backoff limit"
    assert (row["gpus"], row["req_gpus"], row["timelimit_s"]) == (16.0, 16.0, 86400)


def test_never_admitted_mig_workload_is_pending_with_its_queue() -> None:
    """No pods, no admission: one PENDING attempt, ClusterQueue from its LocalQueue."""
    a = k8s_attempts(_pods(), None, _workloads(), _local_queues()).attempts
    row = a.filter(pl.col("group") == "job-mig-notebook-4b7e0").row(0, named=True)
    assert (row["state"], row["attempts"], row["cluster_queue"]) == ("PENDING", 1, "cq-prod")
    assert row["req_gpus"] == pytest.approx(6 / 7)
    assert row["start_at"] is None and row["eligible_at"] == _t(2, 10, 15)


def _bare(**kw: Any) -> dict[str, Any]:
    row = {"namespace": "rl", "owner_kind": "Job", "node_name": "n1"}
    row.update(kw)
    return row


def test_bare_pod_groups_without_kueue() -> None:
    """No Kueue: owner Job groups; OOM, BackOff loop, deletion and success map to states."""
    pods = _pods(
        _bare(uid="a", name="ok-1", owner_name="ok", workload_name="ok", phase="Succeeded",
              created_at=_t(2, 1), scheduled_at=_t(2, 1, 0, 5), finished_at=_t(2, 2), exit_code=0,
              termination_reason="Completed"),
        _bare(uid="b", name="oom-1", owner_name="oom", workload_name="oom", phase="Failed",
              created_at=_t(2, 1), scheduled_at=_t(2, 1), finished_at=_t(2, 1, 30), exit_code=137,
              termination_reason="OOMKilled"),
        _bare(uid="c", name="loop-1", owner_name="loop", workload_name="loop", phase="Running",
              created_at=_t(2, 1), scheduled_at=_t(2, 1), started_at=_t(2, 1, 0, 10),
              deleted_at=_t(2, 3), exit_code=2, termination_reason="Error", restart_count=9),
        _bare(uid="d", name="gone-1", owner_name="gone", workload_name="gone", phase="Running",
              created_at=_t(2, 1), scheduled_at=_t(2, 1), started_at=_t(2, 1), deleted_at=_t(2, 4)),
        _bare(uid="e", name="solo", owner_kind=None, phase="Running", created_at=_t(2, 5),
              scheduled_at=_t(2, 5, 0, 1), started_at=_t(2, 5, 0, 30)),
    )  # fmt: skip
    ev = _events(("Pod", "loop-1", "BackOff", _t(2, 1, 1), "Back-off restarting failed container",
                  40, _t(2, 2, 59), "c"))  # fmt: skip
    a = k8s_attempts(pods, ev).attempts.sort("group")
    got = a.select("group", "kueue", "state", "end_reason").rows()
    assert got == [
        ("gone", False, "CANCELLED", "Deleted"),
        ("loop", False, "FAILED", "BackOff"),
        ("ok", False, "COMPLETED", "Succeeded"),
        ("oom", False, "OUT_OF_MEMORY", "OOMKilled"),
        ("solo", False, "RUNNING", None),
    ]
    assert a.filter(pl.col("group") == "solo")["job_id_raw"].item() == "e"  # the pod's uid


def test_kubelet_eviction_splits_a_bare_group_and_is_a_failure() -> None:
    """A node-pressure eviction then a replacement pod: attempt 0 FAILED (Evicted), attempt 1."""
    pods = _pods(
        _bare(uid="x1", name="emb-1", owner_name="emb", workload_name="emb", phase="Failed",
              created_at=_t(2, 1), scheduled_at=_t(2, 1), finished_at=_t(2, 2),
              termination_reason="Evicted", exit_code=137),
        _bare(uid="x2", name="emb-2", owner_name="emb", workload_name="emb", phase="Succeeded",
              created_at=_t(2, 2, 0, 1), scheduled_at=_t(2, 2, 0, 2), finished_at=_t(2, 3),
              exit_code=0, termination_reason="Completed",
              labels='{"batch.kubernetes.io/controller-uid": "job-uid-1", "job-name": "emb"}'),
    )  # fmt: skip
    a = k8s_attempts(pods).attempts
    assert a.select("attempt", "state", "end_reason", "end_at").rows() == [
        (0, "FAILED", "Evicted", _t(2, 2)),
        (1, "COMPLETED", "Succeeded", _t(2, 3)),
    ]
    assert a["eligible_at"][1] == _t(2, 2)
    assert a["job_id_raw"].to_list() == ["job-uid-1", "job-uid-1"]


def test_pod_attempts_keeps_the_old_call() -> None:
    """``pod_attempts(pods, ns, lq)`` still works: the pods-only model."""
    jobs = pod_attempts(_esm_pods().lazy(), EMPTY_TEAMS, EMPTY_TEAMS).collect()
    assert jobs.columns[: len(JOBS_COLUMNS)] == JOBS_COLUMNS
    assert jobs["job_id"].unique().to_list() == [f"genomics/{JOB}"]


def _gang() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The finished 2-pod gang of ``job-train-llm-7b-3f2a1`` with pulls and scheduling retries."""
    common = {"namespace": "nlp", "owner_kind": "Job", "owner_name": "train-llm-7b",
              "workload_name": "train-llm-7b", "phase": "Succeeded", "exit_code": 0,
              "termination_reason": "Completed", "created_at": _t(2, 8, 0, 5)}  # fmt: skip
    pods = _pods(
        {**common, "uid": "g0", "name": "train-0", "node_name": "n1",
         "scheduled_at": _t(2, 8, 0, 5),
         "started_at": _t(2, 8, 1), "finished_at": _t(2, 11, 40)},
        {**common, "uid": "g1", "name": "train-1", "node_name": "n2",
         "scheduled_at": _t(2, 8, 0, 35), "started_at": _t(2, 8, 3, 21),
         "finished_at": _t(2, 11, 40, 2)},
    )  # fmt: skip
    sched = (
        "0/8 nodes are available: 5 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint "
        "{node.kubernetes.io/unreachable: }. preemption: 0/8 nodes are available: 5 No preemption "
        "victims found for incoming pod, 3 Preemption is not helpful for scheduling."
    )
    ev = _events(
        ("Pod", "train-0", "Pulling", _t(2, 8, 0, 7), 'Pulling image "x"', 1, _t(2, 8, 0, 7), "g0"),
        (
            "Pod",
            "train-0",
            "Pulled",
            _t(2, 8, 1),
            'Successfully pulled image "x" in 52.5s (52.5s '
            "including waiting). Image size: 9 bytes.",
            1,
            _t(2, 8, 1),
            "g0",
        ),
        ("Pod", "train-1", "FailedScheduling", _t(2, 8, 0, 5), sched, 3, _t(2, 8, 0, 25), "g1"),
        (
            "Pod",
            "train-1",
            "Pulled",
            _t(2, 8, 3, 20),
            'Successfully pulled image "x" in 1m2.25s (1m2.25s including waiting)',
            1,
            _t(2, 8, 3, 20),
            "g1",
        ),
        (
            "Workload",
            "job-train-llm-7b-3f2a1",
            "Pending",
            _t(2, 8, 0, 1),
            "couldn't assign "
            "flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "h100-research, 8 more needed",
            2,
            _t(2, 8, 0, 3),
        ),
    ).with_columns(pl.lit("nlp").alias("namespace"), pl.lit("nlp").alias("involved_namespace"))
    return pods, ev


def test_stage_timestamps_and_gang_spread() -> None:
    """created → quota reserved → admitted → all scheduled → all running, and the spread."""
    pods, ev = _gang()
    att = k8s_attempts(pods, ev, _workloads())
    t = k8s_workload_timings(att, ev).collect()
    assert t.schema == pl.Schema(K8S_WORKLOAD_TIMING_SCHEMA)
    row = t.filter(pl.col("job_id") == "nlp/job-train-llm-7b-3f2a1").row(0, named=True)
    assert (row["state"], row["end_at"]) == ("COMPLETED", _t(2, 11, 40, 5))
    assert row["quota_reserved_at"] == row["admitted_at"] == _t(2, 8, 0, 4)
    assert row["all_pods_scheduled_at"] == _t(2, 8, 0, 35)
    assert (row["first_pod_running_at"], row["all_pods_running_at"]) == (
        _t(2, 8, 1),
        _t(2, 8, 3, 21),
    )
    assert (row["quota_wait_s"], row["admission_check_s"], row["scheduling_s"]) == (4.0, 0.0, 31.0)
    assert (row["pod_startup_s"], row["time_to_running_s"]) == (166.0, 201.0)
    assert row["gang_start_spread_s"] == 141.0
    assert (row["image_pull_s"], row["image_pulls"]) == (62.25, 2)
    assert (row["scheduler_pending_events"], row["kueue_pending_events"]) == (3, 2)
    assert row["top_pending_reason"] == "kube-scheduler:insufficient_gpu"
    assert row["team"] == "unattributed"
    teams = pl.LazyFrame({"key": ["nlp"], "team": ["language"]})
    with_team = k8s_workload_timings(att, ev, teams).collect()
    by_ns = dict(with_team.group_by("namespace").agg(pl.col("team").first()).iter_rows())
    assert (by_ns["nlp"], by_ns["genomics"]) == ("language", "unattributed")


def test_pending_reasons_are_counted_per_reason() -> None:
    """A FailedScheduling series naming GPUs and a taint counts for both; Kueue's quota reason."""
    pods, ev = _gang()
    pr = k8s_pending_reasons(k8s_attempts(pods, ev, _workloads()), ev).collect()
    assert pr.schema == pl.Schema(K8S_PENDING_REASON_SCHEMA)
    got = pr.select("job_id", "attempt", "component", "reason", "events", "objects", "max_nodes")
    job = "nlp/job-train-llm-7b-3f2a1"
    assert got.rows() == [
        (job, 0, "kube-scheduler", "insufficient_gpu", 3, 1, 5),
        (job, 0, "kube-scheduler", "taint", 3, 1, 3),
        (job, 0, "kueue", "quota_gpu", 2, 1, None),
    ]


def test_image_pull_falls_back_to_event_times() -> None:
    """Without a duration in the message, last Pulled − first Pulling; present images are 0."""
    ev = _events(
        ("Pod", "p", "Pulling", _t(2, 1), 'Pulling image "y"', 1, _t(2, 1), "u1"),
        ("Pod", "p", "Pulled", _t(2, 1, 0, 45), 'Successfully pulled image "y"', 1,
         _t(2, 1, 0, 45), "u1"),
        ("Pod", "q", "Pulled", _t(2, 1), 'Container image "y" already present on machine', 1,
         _t(2, 1), "u2"),
    )  # fmt: skip
    got = (
        image_pull_seconds(ev).collect().sort("uid").select("uid", "image_pull_s", "pulled").rows()
    )
    assert got == [("u1", 45.0, True), ("u2", 0.0, False)]


# -- the bundled sample fleet: its simulation is the ground truth --------------------------------


@pytest.fixture(scope="module")
def fleet_attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from pipelines.sample_fleet._generate import simulate_fleet
    from pipelines.sample_fleet._k8s_writers import build_events, write_events_day, write_pods_day

    fleet = simulate_fleet(days=6)
    out = tmp_path_factory.mktemp("k8s")
    events = build_events(fleet.k8s.workloads, fleet.k8s.pools, len(fleet.k8s_cluster.nodes),
                          fleet.k8s_window[1])  # fmt: skip
    ev_frames, pod_frames = [], []
    for i, (d, a, b) in enumerate(fleet.k8s_days):
        write_events_day(out / f"events_{d}.json", events, a, b)
        write_pods_day(out / f"pods_{d}.json", fleet.k8s.workloads, fleet.k8s.pools, a, b)
        ev_frames.append(parse_k8s_events(out / f"events_{d}.json", cluster="k8s-b").rows)
        pod_frames.append(
            parse_k8s_pods(out / f"pods_{d}.json", cluster="k8s-b").rows.with_columns(
                pl.lit(i).alias("ingest_id")
            )
        )
    pods = pl.concat(pod_frames).sort("ingest_id").unique(["cluster", "uid"], keep="last")
    ev = pl.concat(ev_frames).sort("count", "last_seen").unique(["cluster", "uid"], keep="last")
    return {"fleet": fleet, "attempts": k8s_attempts(pods, ev), "events": ev}


def test_sample_fleet_planted_preemption(fleet_attempts: dict[str, Any]) -> None:
    """The planted 16-GPU genomics workload: preempted twice, finished on its third admission."""
    fleet = fleet_attempts["fleet"]
    wl = next(w for w in fleet.k8s.workloads if w.planted)
    a = fleet_attempts["attempts"].attempts.filter(pl.col("group") == wl.wl_name)
    assert a["state"].to_list() == ["PREEMPTED", "PREEMPTED", "COMPLETED"]
    evicted = [datetime.fromtimestamp(x.end, UTC) for x in wl.attempts if x.outcome == "Evicted"]
    assert a["end_at"].to_list()[:2] == evicted
    queued = [datetime.fromtimestamp(x.queued, UTC) for x in wl.attempts]
    assert a["eligible_at"].to_list()[1:] == queued[1:]


def test_sample_fleet_attempts_match_the_simulation(fleet_attempts: dict[str, Any]) -> None:
    """Every simulated admission whose pods were bound in the window is one started attempt,
    with the simulation's outcome, start and per-pod GPU-seconds."""
    fleet = fleet_attempts["fleet"]
    win_start, win_end = fleet.k8s_window
    got = fleet_attempts["attempts"].attempts.filter(pl.col("start_at").is_not_null())
    expected = []
    for wl in fleet.k8s.workloads:
        for att in wl.attempts:
            bound = [p for p in att.pods if p.bound is not None]
            ends = [p.deleted if p.deleted is not None else p.finished for p in bound]
            if not bound or max(e or win_end for e in ends) < win_start:
                continue  # ended before the first snapshot: not in any pods file
            state = {"Evicted": "PREEMPTED", "Succeeded": "COMPLETED", "": "RUNNING"}.get(
                att.outcome, "OUT_OF_MEMORY" if wl.outcome == "OOMKilled" else "FAILED"
            )
            if att.end is not None and att.end > win_end:
                state = "RUNNING"
            done = state != "RUNNING"
            gpu_s = sum(
                wl.gpus_per_pod * ((e or 0) - p.bound) for p, e in zip(bound, ends, strict=True)
            )  # type: ignore[operator]
            expected.append((wl.wl_name, att.index, state,
                             datetime.fromtimestamp(min(p.bound for p in bound), UTC),  # type: ignore[type-var]
                             float(gpu_s) if done else None))  # fmt: skip
    # A workload created before the window has no Kueue event in it: its pods form a bare group
    # named after their Job.
    wl_of_job = {w.job_name: w.wl_name for w in fleet.k8s.workloads}
    rows = [
        (wl_of_job.get(g, g), *rest)
        for g, *rest in got.select("group", "attempt", "state", "start_at", "gpu_s").rows()
    ]
    assert sorted(rows) == sorted(expected)
    assert len(rows) > 300


def test_sample_fleet_pending_reasons(fleet_attempts: dict[str, Any]) -> None:
    """The fleet waits for GPU quota (Kueue) and GPUs/node selector (scheduler), all attributed."""
    pr = k8s_pending_reasons(fleet_attempts["attempts"], fleet_attempts["events"]).collect()
    assert set(pr["reason"]) == {"quota_gpu", "insufficient_gpu", "node_affinity"}
    assert pr["job_id"].null_count() == 0
    reported = fleet_attempts["events"].filter(pl.col("reason") == "Pending")["count"].sum()
    assert pr.filter(pl.col("component") == "kueue")["events"].sum() == reported


def test_generated_times_are_not_before_creation(fleet_attempts: dict[str, Any]) -> None:
    """Sanity of the reconstruction: created ≤ eligible ≤ start ≤ end for every attempt."""
    a = fleet_attempts["attempts"].attempts
    assert a.filter(pl.col("eligible_at") < pl.col("created_at")).height == 0
    assert a.filter(pl.col("start_at") < pl.col("eligible_at")).height == 0
    assert a.filter(pl.col("end_at") < pl.col("start_at")).height == 0
    assert timedelta(0) <= (a["eligible_at"] - a["created_at"]).max()  # type: ignore[operator]
    assert json.dumps(a["state"].value_counts().rows())  # serialisable summary


def test_admitted_workload_without_loaded_pods_reads_admitted() -> None:
    """The real Kueue Workload of the ESM gang (admitted, fixture ``kueue-crds``) with none of
    its pods loaded is ADMITTED (quota reserved, pods not observed), not PENDING, and it adds
    no GPU-seconds; the never-admitted MIG notebook stays PENDING."""
    a = k8s_attempts(_pods(), None, _workloads(), _local_queues()).attempts
    esm = a.filter(pl.col("group") == ESM).row(0, named=True)
    assert esm["state"] == "ADMITTED"
    assert esm["start_at"] is None and esm["admitted_at"] == _t(7, 4, 23, 35)
    assert not esm["gpu_s"]
    mig = a.filter(pl.col("group") == "job-mig-notebook-4b7e0").row(0, named=True)
    assert mig["state"] == "PENDING"


def test_admitted_without_pods_stops_waiting_at_admission() -> None:
    """As a never-started attempt the ADMITTED gang's wait ends at its admission (censored
    there, out of pending demand after it); the queued MIG notebook's wait stays open."""
    att = k8s_attempts(_pods(), None, _workloads(), _local_queues())
    empty = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
    pending = pending_workload_attempts(att, empty, empty).collect()
    esm = pending.filter(pl.col("job_id").str.ends_with(ESM)).row(0, named=True)
    assert (esm["state"], esm["end_at"]) == ("ADMITTED", _t(7, 4, 23, 35))
    mig = pending.filter(pl.col("job_id").str.ends_with("job-mig-notebook-4b7e0")).row(
        0, named=True
    )
    assert (mig["state"], mig["end_at"]) == ("PENDING", None)


def test_exit_code_of_a_multi_pod_group_is_deterministic() -> None:
    """Two pods of one Job fail in the same second with exit codes 3 and 7: the attempt's exit
    code is the same whatever order the pods arrive in (the tie goes to the pod whose name sorts
    first, ``w-a`` → 3), as re-running materialize on unchanged input must give."""
    rows = [
        _bare(uid=u, name=n, owner_name="w", workload_name="w", phase="Failed",
              created_at=_t(2, 1), scheduled_at=_t(2, 1), finished_at=_t(2, 2), exit_code=x,
              termination_reason="Error")
        for u, n, x in (("u2", "w-b", 7), ("u1", "w-a", 3))
    ]  # fmt: skip
    codes = set()
    for order in (rows, rows[::-1]):
        jobs = workload_attempts(k8s_attempts(_pods(*order)), *_no_teams()).collect()
        codes.add(jobs["exit_code"].item())
    assert codes == {3}


def _no_teams() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    empty = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
    return empty, empty


def test_partial_admission_expects_the_admitted_pods(tmp_path: Path) -> None:
    """Kueue partial admission (``spec.podSets[].minCount``): the ``train-llm-7b`` Workload asks
    ``count: 4`` with ``minCount: 2`` and Kueue admits ``podSetAssignments[].count: 2`` (16
    GPUs), so its Job runs 2 pods, the gang of :func:`_gang`. The stages that wait for every
    expected pod end with the second pod: all pods running at 08:03:21 (not NULL, as when the
    spec's 4 were expected), time to running = 08:03:21 − eligible (created 08:00:00) = 201 s,
    pod startup = 08:03:21 − 08:00:35 = 166 s."""
    doc = json.loads((OBJECTS / "workloads.json").read_text("utf-8"))
    item = next(i for i in doc["items"] if i["metadata"]["name"] == "job-train-llm-7b-3f2a1")
    item["spec"]["podSets"][0].update(count=4, minCount=2)
    item["status"]["admission"]["podSetAssignments"][0]["count"] = 2
    path = tmp_path / "workloads.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [item]}), "utf-8")
    wl = parse_k8s_workloads(path, cluster="k1").rows
    assert (wl["pods"].item(), wl["pods_admitted"].item()) == (4, 2)
    pods, ev = _gang()
    att = k8s_attempts(pods, ev, wl)
    row = k8s_workload_timings(att, ev).collect().row(0, named=True)
    assert (row["pods_expected"], row["pods"]) == (2, 2)
    assert row["all_pods_scheduled_at"] == _t(2, 8, 0, 35)
    assert row["all_pods_running_at"] == _t(2, 8, 3, 21)
    assert (row["time_to_running_s"], row["pod_startup_s"]) == (201.0, 166.0)
    assert row["req_gpus"] == 32.0  # the request stays the spec's: 4 pods × 8 GPUs
