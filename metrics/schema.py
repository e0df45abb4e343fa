"""Column names shared by the metric functions (one place, so no function guesses positions)."""

from __future__ import annotations

import polars as pl

SOURCE = "source"
CLUSTER = "cluster"
JOB_ID = "job_id"
ATTEMPT = "attempt"
TEAM = "team"
PARTITION = "partition"
STATE = "state"
GPUS = "gpus"
REQ_GPUS = "req_gpus"
SUBMIT_AT = "submit_at"
ELIGIBLE_AT = "eligible_at"
START_AT = "start_at"
END_AT = "end_at"
WAIT_S = "wait_s"
RUN_S = "run_s"
GPU_S = "gpu_s"
HOUR = "hour"
BUCKET = "bucket"
HOST = "host"

#: Size buckets by GPUs (METRICS.md "Time to start"), as (label, lower bound inclusive, upper
#: bound exclusive). Fractional GPU counts (< 1) have their own bucket.
SIZE_BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("<1", 0.0, 1.0),
    ("1", 1.0, 2.0),
    ("2-8", 2.0, 9.0),
    ("9-63", 9.0, 64.0),
    ("64-255", 64.0, 256.0),
    ("256-1023", 256.0, 1024.0),
    (">=1024", 1024.0, float("inf")),
)

UTC_US = "us"
#: The dtype of every instant: microseconds, UTC (the one definition; others import it).
UTC_DATETIME = pl.Datetime("us", "UTC")

# --- metric engine: waterfall, survival, fairness, reliability -------------------------------

NODE_LIST = "node_list"
RACK = "rack"
POOL = "pool"
SHARE = "share"
VALID_FROM = "valid_from"
TS = "ts"
XID = "xid"
ACTIVITY = "activity"
PLANNED = "planned"
WEEK = "week"
LEAF = "leaf"
CAPACITY_GPU_S = "capacity_gpu_s"
DOWN_GPU_S = "down_gpu_s"
PLANNED_DOWN_GPU_S = "planned_down_gpu_s"
OBSERVED_GPU_S = "observed_gpu_s"
ACTIVE_GPU_S = "active_gpu_s"
GANG_GPU_S = "gang_gpu_s"
WINDOW_START = "window_start"
WINDOW_END = "window_end"

#: The leaf buckets of the GPU-time waterfall, in METRICS.md order (first rule that applies wins).
WATERFALL_LEAVES: tuple[str, ...] = (
    "down",
    "planned_down",
    "failed_work_infra",
    "failed_work_user",
    "preempted_work",
    "timeout_work",
    "cancelled_work",
    "allocated_idle",
    "goodput",
    "held",
    "idle",
)

#: Leaves 3–9: the allocated part of the waterfall (= sreport Allocated).
ALLOCATED_LEAVES: tuple[str, ...] = WATERFALL_LEAVES[2:9]

#: Leaves 3–6: lost work (failures, preemption, timeouts); cancelled work is neutral.
LOSS_LEAVES: tuple[str, ...] = WATERFALL_LEAVES[2:6]

#: Slurm base end states per loss leaf (METRICS.md waterfall rules 3–7). FAILED is infra only with
#: an XID / health event on one of its nodes in its last 10 minutes; otherwise it is user.
INFRA_STATES: tuple[str, ...] = ("NODE_FAIL", "BOOT_FAIL")
USER_FAIL_STATES: tuple[str, ...] = ("FAILED", "OUT_OF_MEMORY")
PREEMPTED_STATES: tuple[str, ...] = ("PREEMPTED", "REQUEUED")
TIMEOUT_STATES: tuple[str, ...] = ("TIMEOUT", "DEADLINE")
CANCELLED_STATES: tuple[str, ...] = ("CANCELLED", "REVOKED")
