"""Alibaba GPU cluster trace 2023 (``openb_pod_list_*.csv``) as Kubernetes pods and attempts.

The trace (github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2023``, CC BY 4.0; Weng et al.,
USENIX ATC 2023) lists 8,152 pods of a production GPU-sharing Kubernetes cluster::

    name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time

Choices, so that the trace reads like a ``kubectl get pods`` export (``K8S_POD_SCHEMA``) and
flows through the same Workload model (``_attempts.py``) as any cluster:

- **Epoch.** Times are seconds from the trace start, with no calendar date. We place the start
  at :data:`ALIBABA_EPOCH` = 2023-01-01T00:00:00Z (the trace's year); only differences matter.
- **GPUs.** ``gpus`` = ``num_gpu × gpu_milli / 1000``: a pod with ``gpu_milli`` 460 holds 0.46
  of one GPU (METRICS.md: a 500-milli pod counts 0.5); ``num_gpu`` 0 is a CPU-only pod (0 GPUs,
  kept in the data, outside GPU metrics). ``gpu_spec`` (allowed GPU models) goes to the labels.
- **Identity.** The trace has no uid, namespace, node or owner: ``uid`` = ``name``, namespace
  :data:`ALIBABA_NAMESPACE` (a stand-in), each pod is its own bare workload (one attempt), team
  ``unattributed`` unless a registry maps the namespace. ``qos`` (LS, BE, Burstable, Guaranteed)
  is the ``priority_class`` and a label.
- **Phases and ends.** ``pod_phase`` is the pod's last phase; ``deletion_time`` is set for
  every pod. Succeeded/Failed: finished at deletion (→ COMPLETED / FAILED). Pending: never
  scheduled and deleted while pending: no attempt, and its wait is **right-censored at its
  deletion** (METRICS.md: "a job cancelled while pending is censored at its cancel time").
  Running:

  * deleted at the trace's last timestamp (34 pods): **still running when the trace ends** —
    the deletion time there is the end of the observation, not an event. Such a pod has no
    ``deleted_at``, its attempt has ``end_at`` NULL (state RUNNING, GPU time counted up to
    ``as_of``), and ``as_of`` = the trace's last timestamp;
  * deleted earlier: it was removed while running (a scale-down or a user's delete; the trace
    does not say which) → ``CANCELLED`` (reason ``Deleted``): its GPU time is allocated and, by
    METRICS.md's waterfall, neutral cancelled work, not loss.
- **Start.** ``scheduled_time`` (bound to a node) is the start; the trace has no container
  start, so ``started_at`` = ``scheduled_at``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult
from pipelines.core.k8s_attempts import (
    k8s_attempts,
    pending_workload_attempts,
    workload_attempts,
)
from pipelines.kubernetes._pods_parse import K8S_POD_SCHEMA

__all__ = [
    "ALIBABA_CLUSTER",
    "ALIBABA_COLUMNS",
    "ALIBABA_EPOCH",
    "ALIBABA_NAMESPACE",
    "alibaba_attempts",
    "read_alibaba_pods",
]

#: Where trace second 0 is placed (the trace has no calendar date).
ALIBABA_EPOCH: Final = datetime(2023, 1, 1, tzinfo=UTC)
ALIBABA_CLUSTER: Final = "alibaba-openb"
ALIBABA_NAMESPACE: Final = "openb"
#: The trace's columns, in file order.
ALIBABA_COLUMNS: Final = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
)  # fmt: skip
_INTS: Final = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time",
                "deletion_time", "scheduled_time")  # fmt: skip
_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed")


def _seconds(col: str, epoch: datetime) -> pl.Expr:
    return (pl.lit(epoch) + pl.duration(seconds=pl.col(col))).dt.cast_time_unit("us")


def read_alibaba_pods(
    path: str | Path, *, cluster: str = ALIBABA_CLUSTER, epoch: datetime = ALIBABA_EPOCH
) -> ParseResult:
    """Read an ``openb_pod_list_*.csv`` into pod rows.

    Args:
        path: the trace CSV (header row as in :data:`ALIBABA_COLUMNS`).
        cluster: the value of the ``cluster`` column.
        epoch: the UTC time of trace second 0 (see the module docstring).

    Returns:
        ``rows`` with ``K8S_POD_SCHEMA`` followed by ``cpu_milli``, ``memory_mib``, ``num_gpu``,
        ``gpu_milli`` (as in the trace) and ``qos``; one row per pod (see the module docstring
        for every mapping). ``rejected``: rows with a missing name, a non-integer number, an
        unknown phase, a Pending pod with a scheduled time (or another without one), or times
        out of order (``raw`` = the CSV line). ``info``: ``epoch``, ``trace_end_s`` and ``as_of``
        (the last timestamp in the trace, ISO), ``phases`` (counts), ``censored_running`` (Running
        pods still running at the trace's end), ``fractional_gpu_pods``.

    Raises:
        InputFormatError: unreadable, or the header lacks a trace column.
    """
    file = str(path)
    try:
        raw = pl.read_csv(path, infer_schema=False)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputFormatError(file, f"cannot read the trace CSV: {exc}") from exc
    missing = [c for c in ALIBABA_COLUMNS if c not in raw.columns]
    if missing:
        raise InputFormatError(file, f"not an Alibaba openb pod list (missing {missing})", line=1)
    raw = raw.with_row_index("line_no", offset=2)
    casted = raw.with_columns(pl.col(c).cast(pl.Int64, strict=False).alias(f"_{c}") for c in _INTS)
    why = (
        pl.when(pl.col("name").is_null())
        .then(pl.lit("name|pod has no name"))
        .otherwise(pl.lit(None, dtype=pl.String()))
    )
    for c in reversed(_INTS):
        bad = pl.col(c).is_not_null() & pl.col(f"_{c}").is_null()
        required = c != "scheduled_time"
        bad = bad | (pl.col(f"_{c}").is_null() if required else pl.lit(False))
        why = pl.when(bad).then(pl.lit(f"{c}|not an integer")).otherwise(why)
    pending = pl.col("pod_phase") == "Pending"
    checks = [
        (~pl.col("pod_phase").is_in(_PHASES), "pod_phase|unknown phase"),
        (pending & pl.col("_scheduled_time").is_not_null(), "scheduled_time|Pending but scheduled"),
        (
            ~pending & pl.col("_scheduled_time").is_null(),
            "scheduled_time|not Pending, never scheduled",
        ),
        (pl.col("_deletion_time") < pl.col("_creation_time"), "deletion_time|before creation"),
        (pl.col("_scheduled_time") < pl.col("_creation_time"), "scheduled_time|before creation"),
        (pl.col("_deletion_time") < pl.col("_scheduled_time"), "deletion_time|before scheduling"),
    ]
    for cond, reason in reversed(checks):
        why = pl.when(cond.fill_null(False)).then(pl.lit(reason)).otherwise(why)
    casted = casted.with_columns(why.alias("_why"))
    bad_rows = casted.filter(pl.col("_why").is_not_null())
    rejected = bad_rows.select(
        pl.lit(file).alias("file"),
        pl.col("line_no").cast(pl.Int64),
        pl.col("line_no").cast(pl.Int64).alias("line_end"),
        pl.col("_why").str.split("|").list.first().alias("field"),
        pl.concat_str([pl.col(c).fill_null("") for c in ALIBABA_COLUMNS], separator=",").alias(
            "raw"
        ),
        pl.col("_why").str.split("|").list.last().alias("reason"),
    ).cast(pl.Schema(REJECTED_SCHEMA))
    good = casted.filter(pl.col("_why").is_null())
    trace_end = good.select(
        pl.max_horizontal(
            pl.col("_creation_time").max(),
            pl.col("_deletion_time").max(),
            pl.col("_scheduled_time").max(),
        )
    ).item()
    end_s = int(trace_end) if trace_end is not None else 0
    running = pl.col("pod_phase") == "Running"
    censored = running & (pl.col("_deletion_time") == end_s)
    deleted = _seconds("_deletion_time", epoch)
    scheduled = _seconds("_scheduled_time", epoch)
    gpus = (pl.col("_num_gpu") * pl.col("_gpu_milli") / 1000.0).cast(pl.Float64)
    labels = pl.struct(
        pl.col("qos"), pl.col("gpu_spec"), pl.col("_cpu_milli").alias("cpu_milli"),
        pl.col("_memory_mib").alias("memory_mib"), pl.col("_gpu_milli").alias("gpu_milli"),
    ).struct.json_encode()  # fmt: skip
    rows = good.select(
        pl.col("name").alias("uid"),
        pl.lit(cluster).alias("cluster"),
        pl.lit(ALIBABA_NAMESPACE).alias("namespace"),
        "name",
        pl.lit(None, dtype=pl.String()).alias("node_name"),
        pl.col("pod_phase").alias("phase"),
        _seconds("_creation_time", epoch).alias("created_at"),
        scheduled.alias("scheduled_at"),
        scheduled.alias("started_at"),
        pl.when(pl.col("pod_phase").is_in(["Succeeded", "Failed"]))
        .then(deleted)
        .alias("finished_at"),
        pl.when(censored).then(None).otherwise(deleted).alias("deleted_at"),
        gpus.alias("gpus"),
        pl.when(pl.col("_num_gpu") > 0).then(pl.lit("nvidia.com/gpu")).alias("gpu_resource"),
        pl.lit(None, dtype=pl.String()).alias("uncounted_resources"),
        pl.lit(None, dtype=pl.String()).alias("queue_name"),
        pl.lit(None, dtype=pl.String()).alias("workload_name"),
        pl.lit(None, dtype=pl.String()).alias("owner_kind"),
        pl.lit(None, dtype=pl.String()).alias("owner_name"),
        pl.col("qos").alias("priority_class"),
        pl.lit(None, dtype=pl.Int64()).alias("exit_code"),
        pl.lit(None, dtype=pl.String()).alias("termination_reason"),
        pl.lit(0, dtype=pl.Int64()).alias("restart_count"),
        labels.alias("labels"),
        pl.lit(file).alias("file"),
        pl.col("line_no").cast(pl.Int64),
        pl.col("_cpu_milli").alias("cpu_milli"),
        pl.col("_memory_mib").alias("memory_mib"),
        pl.col("_num_gpu").alias("num_gpu"),
        pl.col("_gpu_milli").alias("gpu_milli"),
        "qos",
    ).cast(pl.Schema(K8S_POD_SCHEMA))
    phases = dict(good.group_by("pod_phase").len().sort("pod_phase").iter_rows())
    info: dict[str, object] = {
        "epoch": epoch.isoformat(),
        "trace_end_s": end_s,
        "as_of": (epoch + timedelta(seconds=end_s)).isoformat(),
        "phases": {str(k): int(v) for k, v in phases.items()},
        "censored_running": good.filter(censored).height,
        "fractional_gpu_pods": good.filter(
            (pl.col("_num_gpu") > 0) & (pl.col("_gpu_milli") < 1000)
        ).height,
    }
    return ParseResult(rows=rows, rejected=rejected, info=info)


def alibaba_attempts(pods: pl.DataFrame | pl.LazyFrame, *, started: bool = True) -> pl.LazyFrame:
    """The ``jobs`` rows of the trace's pods, through the Workload model.

    Args:
        pods: rows of :func:`read_alibaba_pods` (one bare workload per pod).
        started: True: the attempts (one per scheduled pod); False: the pods that never started
            (``pending_workload_attempts``: ``eligible_at`` = creation, ``end_at`` = the
            deletion that ended the wait, ``req_gpus``): the censored spells of
            ``metrics.wait_spells(..., pending=...)``, so no Pending pod is dropped.

    Returns:
        ``workload_attempts`` / ``pending_workload_attempts`` rows (``JOBS_COLUMNS`` first);
        team ``unattributed`` (the trace names no team).
    """
    teams = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
    attempts = k8s_attempts(pods.lazy().select(list(K8S_POD_SCHEMA)))
    if started:
        return workload_attempts(attempts, teams, teams)
    return pending_workload_attempts(attempts, teams, teams)
