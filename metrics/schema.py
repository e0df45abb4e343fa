"""Column names shared by the metric functions (one place, so no function guesses positions)."""

from __future__ import annotations

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
