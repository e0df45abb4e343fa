"""Kubernetes workloads as allocation attempts in the unified ``jobs`` model (pure polars).

The unit is a **workload**: a Kueue ``Workload`` and the pods it admits, or, where Kueue is not
in play, a bare pod group (the pods of one owner Job, or one pod alone). A workload has one
attempt per admission; an eviction ends an attempt, and the pods created after it belong to the
next one (METRICS.md "Attempt": a workload preempted twice is three attempts, numbered 0, 1, 2).

Where the facts come from, in order of trust:

- **Identity.** Workload objects (``parse_k8s_workloads``); else the Workload Events and the Job
  event ``CreatedWorkload`` (``Created Workload: <ns>/<name>``) that link a Job to its Workload;
  else Kueue's naming convention ``job-<job name>-<5 hex>``. A pod belongs to the workload named
  by its Kueue annotation/label, else to the workload of its owner Job, else its owner (or the
  pod alone) is a bare group.
- **Attempt boundaries (evictions).** Workload Events ``EvictedDueTo<Reason>`` (and the
  ``Preempted`` event Kueue sends beside it) at their timestamps; the Workload's ``Evicted``
  condition while it holds; for bare groups, a pod that ended ``Evicted``/``Preempted`` and was
  followed by a newer pod. Kueue keeps only the latest transition of a condition and Events
  expire (one hour by default), so when the object reports more evictions
  (``schedulingStats.evictions``, ``requeueState.count``) than have a time, the missing ones are
  inferred from pod generations (a pod created after every earlier pod of the workload had
  ended starts a new generation; the eviction is dated at the earliest end in the previous one).
  Boundaries less than 5 s apart are one eviction.
- **Admission.** ``QuotaReserved``/``Admitted`` conditions and Events (their timestamps, never
  their text); the ClusterQueue from ``status.admission``, else the LocalQueue object, else (the
  only text read) the ``QuotaReserved`` message ``Quota reserved in ClusterQueue <cq>``.

Per attempt (times UTC):

- submit = the workload's creation; eligible = creation for attempt 0, for a requeued attempt
  the ``Requeued`` condition (latest attempt only), else the backoff deadline
  ``requeueState.requeueAt``, else re-admission − the wait Kueue reports in the ``QuotaReserved``
  event (``wait time since queued was Ns``; the sentinel ``9223372037s`` = unknown), else the
  later of the eviction and the end of the previous attempt's last pod (Kueue requeues once the
  pods are gone);
- start = the first pod bound to a node (``PodScheduled``); end = the eviction, else the
  ``Finished`` condition, else the Job's terminal event (``Completed``, ``BackoffLimitExceeded``,
  ``DeadlineExceeded``), else the last pod's end once every pod has ended; NULL while running;
- state: eviction by preemption → ``PREEMPTED``; eviction for ``MaximumExecutionTimeExceeded``
  or Job ``DeadlineExceeded`` → ``TIMEOUT``; any other eviction (``PodsReadyTimeout``,
  ``AdmissionCheck``, ``Deactivated``, kubelet ``Evicted``, …) → ``FAILED`` with its reason
  kept in ``end_reason``; finished: succeeded → ``COMPLETED``, failed → ``OUT_OF_MEMORY`` when a
  pod was ``OOMKilled``, else ``FAILED``; pods deleted without finishing → ``CANCELLED``, or
  ``FAILED`` (reason ``BackOff``) when they were in a restart/pull ``BackOff`` loop; else
  ``RUNNING`` once started, ``ADMITTED`` when Kueue reserved quota or admitted it but none of
  its pods was loaded, ``PENDING`` before;
- gpus = Σ GPUs of the pods bound in the attempt (fractional for MIG/milli-GPUs); req_gpus = the
  Workload's requested GPUs (else Σ over its pods); **gpu_s = Σ per pod of its GPUs × (its end −
  its binding)**, a pod's end being :func:`pod_end` (its containers' finish; for a pod that
  is over without one, its ``DisruptionTarget``/``Ready=False`` time, else its last known
  time; for a pod rejected at kubelet admission its binding: 0 GPU-s), else its deletion,
  else the attempt's end: so a gang whose pods bind at different times, or that is evicted
  with a grace period, is counted per pod, and ``gpu_s`` is not ``gpus × run_s``; the same
  pod spans give the attempt's **GPU holding** (:attr:`K8sAttempts.holds`): the GPUs it held
  at each instant, a step function whose pieces the hourly tables spread over hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import polars as pl

from metrics import seconds_between
from metrics.schema import UTC_DATETIME
from pipelines.core.registry import UNATTRIBUTED
from pipelines.kubernetes import (
    K8S_EVENT_SCHEMA,
    K8S_POD_SCHEMA,
    K8S_WORKLOAD_SCHEMA,
    KUEUE_LOCAL_QUEUE_SCHEMA,
    KUEUE_WAIT_SENTINEL_S,
)

__all__ = [
    "K8S_ATTEMPT_SCHEMA",
    "K8S_HOLD_SCHEMA",
    "K8sAttempts",
    "k8s_attempts",
    "pending_workload_attempts",
    "pod_attempts",
    "pod_end",
    "pod_end_unknown",
    "workload_attempts",
]

_TS = UTC_DATETIME
#: The key of a workload (a Kueue Workload's name, or a bare group's owner / pod name).
G: Final = ["cluster", "namespace", "group"]
_MERGE_S: Final = 5
_INFER_CLEAR_S: Final = 60
_PREEMPTION_POD_REASONS: Final = ("Preempted", "PreemptionByScheduler", "PreemptionByKubeScheduler")
_EVICTION_POD_REASONS: Final = ("Evicted", *_PREEMPTION_POD_REASONS)
_JOB_DONE: Final = ("Completed", "SuccessCriteriaMet")
_JOB_FAILED: Final = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "PodFailurePolicy",
)
_WORKLOAD_NAME_RE: Final = r"^job-(.+)-[0-9a-f]{5}$"
_CONTROLLER_UID_RE: Final = r'"(?:batch\.kubernetes\.io/)?controller-uid":\s*"([^"]+)"'

#: Columns of one workload attempt (:attr:`K8sAttempts.attempts`), in this order.
K8S_ATTEMPT_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "group": pl.String(),
    "attempt": pl.Int64(),
    "attempts": pl.Int64(),
    "kueue": pl.Boolean(),
    "workload_uid": pl.String(),
    "job_id_raw": pl.String(),
    "queue_name": pl.String(),
    "cluster_queue": pl.String(),
    "priority": pl.Int64(),
    "pods_expected": pl.Int64(),
    "pods": pl.Int64(),
    "pods_bound": pl.Int64(),
    "gpus": pl.Float64(),
    "req_gpus": pl.Float64(),
    "created_at": _TS,
    "eligible_at": _TS,
    "eligible_source": pl.String(),
    "quota_reserved_at": _TS,
    "admitted_at": _TS,
    "reported_wait_s": pl.Float64(),
    "start_at": _TS,
    "all_pods_scheduled_at": _TS,
    "first_pod_running_at": _TS,
    "all_pods_running_at": _TS,
    "end_at": _TS,
    "state": pl.String(),
    "end_reason": pl.String(),
    "end_message": pl.String(),
    "gpu_s": pl.Float64(),
    "node_list": pl.List(pl.String()),
    "exit_code": pl.Int64(),
    "timelimit_s": pl.Int64(),
    "requeue_count": pl.Int64(),
    "evictions_inferred": pl.Int64(),
}


#: Columns of :attr:`K8sAttempts.holds`, in this order.
K8S_HOLD_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "group": pl.String(),
    "attempt": pl.Int64(),
    "start_at": _TS,
    "end_at": _TS,
    "gpus": pl.Float64(),
    "host": pl.String(),
}


@dataclass(frozen=True)
class K8sAttempts:
    """Every workload attempt, and which attempt each pod belongs to.

    Attributes:
        attempts: one row per workload attempt, started or not, with
            :data:`K8S_ATTEMPT_SCHEMA` (see :func:`k8s_attempts`).
        pods: the input pods (``cluster``, ``uid``, ``name``, ``namespace``) with ``group``
            and ``attempt``: the join key from pod-level facts (events, images) to attempts.
        holds: the GPUs held over time by the started attempts whose pods did not all hold
            theirs over the attempt's ``[start_at, end_at)`` (pods bound or ended at different
            times, a grace period after an eviction, a pod rejected at admission), or did but
            not evenly over its ``node_list`` (a CPU-only pod's node, nodes holding different
            GPUs), as pieces of constant GPUs per node (:data:`K8S_HOLD_SCHEMA`); the other
            attempts hold ``gpus`` over their span, ``gpus ÷ nodes`` on each node of their
            ``node_list``, and have no row here.
    """

    attempts: pl.DataFrame
    pods: pl.DataFrame
    holds: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=K8S_HOLD_SCHEMA))


def _frame(
    frame: pl.LazyFrame | pl.DataFrame | None, schema: dict[str, pl.DataType]
) -> pl.LazyFrame:
    """``frame`` as a LazyFrame with at least ``schema``'s columns (an empty one for None)."""
    if frame is None:
        return pl.LazyFrame(schema=schema)
    lf = frame.lazy()
    have = lf.collect_schema().names()
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in schema.items() if c not in have]
    return lf.with_columns(missing) if missing else lf


def pod_end_unknown() -> pl.Expr:
    """Whether a pod is over (phase ``Succeeded``/``Failed``) but its object gives no end: no
    container finish, no ``DisruptionTarget``/``Ready=False`` time (``finished_at`` NULL), as
    for an evicted pod of an older kubelet (``reason: Evicted``, no container statuses) or one
    whose container reads ``ContainerStatusUnknown`` with null times. Over ``K8S_POD_SCHEMA``
    columns; a data-quality finding counts these pods (``metrics.data_quality``)."""
    return pl.col("finished_at").is_null() & pl.col("phase").is_in(
        ["Succeeded", "Failed"]
    ).fill_null(value=False)


def pod_end() -> pl.Expr:
    """When a pod stopped holding its node's GPUs (UTC; NULL while it runs): its containers'
    finish (``finished_at``: for a terminal pod also its ``DisruptionTarget``/``Ready=False``
    time, and for one rejected at kubelet admission its binding, see ``parse_k8s_pods``); else,
    for a pod that is over but gives no end (:func:`pod_end_unknown`), its last known time
    (the latest of creation, binding and ``startTime``): it is not running, and nothing says it
    held its GPUs any longer, so no GPU-hour runs on to the cut-off; else its deletion."""
    last_known = pl.max_horizontal("created_at", "scheduled_at", "started_at")
    return pl.coalesce("finished_at", pl.when(pod_end_unknown()).then(last_known), "deleted_at")


def _first(col: str) -> pl.Expr:
    return pl.col(col).drop_nulls().first().alias(col)


def _workloads(workloads: pl.LazyFrame, events: pl.LazyFrame) -> pl.LazyFrame:
    """One row per known Kueue workload ``G``, from objects, then Events."""
    objs = workloads.select(
        "cluster",
        "namespace",
        pl.col("name").alias("group"),
        pl.col("uid").alias("workload_uid"),
        pl.col("owner_name").alias("job_name"),
        "created_at",
        "queue_name",
        "cluster_queue",
        "priority",
        # Kueue launches the admitted count (partial admission: ``minCount`` ≤ admitted <
        # ``count``), else the spec's while the Workload is not admitted.
        pl.coalesce("pods_admitted", "pods").alias("pods_expected"),
        pl.col("gpus").alias("req_gpus"),
        pl.col("max_execution_s").alias("timelimit_s"),
        "quota_reserved_at",
        "admitted_at",
        "evicted_at",
        "evicted_reason",
        "evicted_message",
        "requeued_at",
        "requeue_at",
        "finished_at",
        "finished_reason",
        "finished_message",
        "active",
        "deleted_at",
        "requeue_count",
        pl.max_horizontal(
            pl.col("evictions").fill_null(0), pl.col("requeue_count").fill_null(0)
        ).alias("evictions_reported"),
        "eviction_reasons",
        pl.lit(0).alias("_prio"),
    )
    wl_events = (
        events.filter(pl.col("involved_kind") == "Workload")
        .group_by("cluster", "ev_ns", "involved_name")
        .agg(
            pl.col("involved_uid").drop_nulls().first().alias("workload_uid"),
            pl.col("first_seen").min().alias("created_at"),
            pl.col("message")
            .filter(pl.col("reason").is_in(["QuotaReserved", "Admitted"]))
            .str.extract(r"ClusterQueue ([^\s,;]+)", 1)
            .drop_nulls()
            .last()
            .alias("cluster_queue"),
        )
        .select(
            "cluster",
            pl.col("ev_ns").alias("namespace"),
            pl.col("involved_name").alias("group"),
            "workload_uid",
            "created_at",
            "cluster_queue",
            pl.lit(2).alias("_prio"),
        )
    )
    created = (
        events.filter((pl.col("involved_kind") == "Job") & (pl.col("reason") == "CreatedWorkload"))
        .with_columns(pl.col("message").str.extract(r"Created Workload: (\S+)", 1).alias("_wl"))
        .filter(pl.col("_wl").is_not_null())
        .select(
            "cluster",
            pl.when(pl.col("_wl").str.contains("/"))
            .then(pl.col("_wl").str.split("/").list.first())
            .otherwise(pl.col("ev_ns"))
            .alias("namespace"),
            pl.col("_wl").str.split("/").list.last().alias("group"),
            pl.col("involved_name").alias("job_name"),
            pl.col("first_seen").alias("created_at"),
            pl.lit(1).alias("_prio"),
        )
    )
    both = pl.concat([objs, created, wl_events], how="diagonal_relaxed").sort("_prio")
    return (
        both.group_by(G, maintain_order=True)
        .agg(_first(c) for c in both.collect_schema().names() if c not in (*G, "_prio"))
        .with_columns(pl.col("evictions_reported").fill_null(0))
    )


def _job_links(wl: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, namespace, job_name → group``: the Workload of each owner Job."""
    named = wl.filter(pl.col("job_name").is_not_null()).select(
        *G, "job_name", pl.lit(0).alias("_p")
    )
    by_convention = wl.select(
        *G,
        pl.col("group").str.extract(_WORKLOAD_NAME_RE, 1).alias("job_name"),
        pl.lit(1).alias("_p"),
    ).filter(pl.col("job_name").is_not_null())
    return (
        pl.concat([named, by_convention])
        .sort("_p")
        .unique(["cluster", "namespace", "job_name"], keep="first", maintain_order=True)
        .select("cluster", "namespace", "job_name", pl.col("group").alias("_linked"))
    )


def _pod_groups(pods: pl.LazyFrame, wl: pl.LazyFrame, links: pl.LazyFrame) -> pl.LazyFrame:
    """Pods with their workload ``group`` and whether Kueue manages it."""
    direct = wl.select(
        "cluster",
        "namespace",
        pl.col("group").alias("workload_name"),
        pl.lit(True).alias("_direct"),
    )
    linked = links.rename({"job_name": "owner_name"})
    return (
        pods.join(direct, on=["cluster", "namespace", "workload_name"], how="left")
        .join(linked, on=["cluster", "namespace", "owner_name"], how="left")
        .with_columns(
            pl.when(pl.col("_direct"))
            .then(pl.col("workload_name"))
            .otherwise(pl.coalesce("_linked", "workload_name", "name"))
            .alias("group"),
            (pl.col("_direct").fill_null(False) | pl.col("_linked").is_not_null()).alias("kueue"),
            pl.coalesce(
                "scheduled_at", pl.when(pl.col("node_name").is_not_null()).then("started_at")
            ).alias("_bound"),
            pod_end().alias("_term"),
        )
        .drop("_direct", "_linked")
    )


def _merge_close(bounds: pl.LazyFrame) -> pl.LazyFrame:
    """Boundaries of a group under :data:`_MERGE_S` apart are one (earliest time, best reason)."""
    gap = pl.col("t") - pl.col("t").shift(1).over(G)
    return (
        bounds.sort(*G, "t", "_prio")
        .with_columns(
            (gap.is_null() | (gap > pl.duration(seconds=_MERGE_S))).cum_sum().over(G).alias("_cid")
        )
        .group_by(*G, "_cid")
        .agg(
            pl.col("t").min(),
            pl.col("reason").sort_by("_prio").drop_nulls().first(),
            pl.col("message").sort_by("_prio").drop_nulls().first(),
            pl.col("_prio").min(),
        )
        .drop("_cid")
    )


def _boundaries(events: pl.LazyFrame, wl: pl.LazyFrame, pods: pl.LazyFrame) -> pl.LazyFrame:
    """Every eviction that ended an attempt: ``G, t, reason, message, inferred, k`` (1, 2, …)."""
    wl_ev = events.filter(
        (pl.col("involved_kind") == "Workload")
        & (
            pl.col("reason").str.starts_with("EvictedDueTo")
            | pl.col("reason").is_in(["Evicted", "Preempted"])
        )
    )
    reason = (
        pl.when(pl.col("reason").str.starts_with("EvictedDueTo"))
        .then(pl.col("reason").str.strip_prefix("EvictedDueTo"))
        .when(pl.col("reason") == "Preempted")
        .then(pl.lit("Preempted"))
        .otherwise(pl.lit(None, dtype=pl.String()))
    )
    prio = pl.when(pl.col("reason").str.starts_with("EvictedDueTo")).then(0).otherwise(2)
    ev_cols: list[str | pl.Expr] = [
        "cluster",
        pl.col("ev_ns").alias("namespace"),
        pl.col("involved_name").alias("group"),
        reason.alias("reason"),
        "message",
        prio.alias("_prio"),
    ]
    from_events = pl.concat(
        [
            wl_ev.select(*ev_cols, pl.col("first_seen").alias("t")),
            # An aggregated series (count > 1) says at least when the last one happened.
            wl_ev.filter(
                (pl.col("count") > 1) & (pl.col("last_seen") > pl.col("first_seen"))
            ).select(*ev_cols, pl.col("last_seen").alias("t")),
        ]
    )
    from_cond = wl.filter(pl.col("evicted_at").is_not_null()).select(
        *G,
        pl.col("evicted_reason").alias("reason"),
        pl.col("evicted_message").alias("message"),
        pl.lit(1).alias("_prio"),
        pl.col("evicted_at").alias("t"),
    )
    bare = pods.filter(~pl.col("kueue"))
    later = bare.group_by(G).agg(pl.col("created_at").max().alias("_last_created"))
    from_pods = (
        bare.filter(
            pl.col("termination_reason").is_in(_EVICTION_POD_REASONS)
            & pl.col("_term").is_not_null()
        )
        .join(later, on=G, how="left")
        # Only an eviction after which the group went on is a boundary between attempts.
        .filter(pl.col("_last_created") > pl.col("_term"))
        .select(
            *G,
            pl.when(pl.col("termination_reason").is_in(_PREEMPTION_POD_REASONS))
            .then(pl.lit("Preempted"))
            .otherwise(pl.col("termination_reason"))
            .alias("reason"),
            pl.lit(None, dtype=pl.String()).alias("message"),
            pl.lit(3).alias("_prio"),
            pl.col("_term").alias("t"),
        )
    )
    known = _merge_close(
        pl.concat([from_events, from_cond, from_pods], how="diagonal_relaxed")
    ).with_columns(pl.lit(False).alias("inferred"))
    return (
        pl.concat([known, _inferred(known, wl, pods)], how="diagonal_relaxed")
        .sort(*G, "t")
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64()).over(G).alias("k"))
    )


def _inferred(known: pl.LazyFrame, wl: pl.LazyFrame, pods: pl.LazyFrame) -> pl.LazyFrame:
    """Evictions a Workload reports without a time, dated from its pods' generations."""
    n_known = known.group_by(G).agg(pl.len().alias("_known"))
    missing = (
        wl.select(*G, "evictions_reported", "eviction_reasons")
        .join(n_known, on=G, how="left")
        .with_columns(
            (pl.col("evictions_reported") - pl.col("_known").fill_null(0)).alias("_missing")
        )
        .filter(pl.col("_missing") > 0)
    )
    term_known = pl.col("_term").is_not_null()
    gens = (
        pods.join(missing.select(G), on=G, how="semi")
        .sort(*G, "created_at")
        .with_columns(
            pl.col("_term").cum_max().shift(1).over(G).alias("_prev_max"),
            term_known.cast(pl.Int8).cum_min().shift(1).over(G).alias("_prev_all"),
        )
        .with_columns(
            ((pl.col("_prev_all") == 1) & (pl.col("created_at") >= pl.col("_prev_max")))
            .fill_null(False)
            .cum_sum()
            .over(G)
            .alias("_gen")
        )
        .group_by(*G, "_gen")
        .agg(pl.col("_term").min().alias("_min_term"))
        .sort(*G, "_gen")
        .with_columns(pl.col("_min_term").shift(1).over(G).alias("t"))
        .filter((pl.col("_gen") > 0) & pl.col("t").is_not_null())
    )
    clear = (
        gens.join(known.select(*G, pl.col("t").alias("_kt")), on=G, how="left")
        .with_columns((pl.col("t") - pl.col("_kt")).abs().alias("_d"))
        .group_by(*G, "t")
        .agg(
            (pl.col("_d").is_null() | (pl.col("_d") > pl.duration(seconds=_INFER_CLEAR_S)))
            .all()
            .alias("_clear")
        )
        .filter(pl.col("_clear"))
    )
    one_reason = pl.col("eviction_reasons").str.extract(r'^\{"([^"/]+)(?:/[^"]*)?": \d+\}$', 1)
    return (
        clear.join(missing, on=G, how="inner")
        .sort(*G, "t")
        .filter(pl.int_range(1, pl.len() + 1).over(G) <= pl.col("_missing"))
        .select(
            *G,
            "t",
            pl.coalesce(one_reason, pl.lit("Evicted")).alias("reason"),
            pl.lit(None, dtype=pl.String()).alias("message"),
            pl.lit(9).alias("_prio"),
            pl.lit(True).alias("inferred"),
        )
    )


def _index(
    frame: pl.LazyFrame, bounds: pl.LazyFrame, time_col: str, key: list[str]
) -> pl.LazyFrame:
    """``frame`` with ``attempt`` = how many of its group's boundaries are ≤ ``time_col``."""
    counted = (
        frame.select(*key, time_col)
        .unique()
        .join(bounds.select(*G, pl.col("t").alias("_bt")), on=G, how="left")
        .group_by(*key, time_col)
        .agg((pl.col("_bt") <= pl.col(time_col)).sum().cast(pl.Int64).alias("attempt"))
    )
    return frame.join(counted, on=[*key, time_col], how="left", nulls_equal=True).with_columns(
        pl.col("attempt").fill_null(0)
    )


def _admissions(events: pl.LazyFrame, wl: pl.LazyFrame, bounds: pl.LazyFrame) -> pl.LazyFrame:
    """Per attempt: first QuotaReserved and Admitted time, and the wait Kueue reported."""
    ev = events.filter(
        (pl.col("involved_kind") == "Workload")
        & pl.col("reason").is_in(["QuotaReserved", "Admitted"])
    ).select(
        "cluster",
        pl.col("ev_ns").alias("namespace"),
        pl.col("involved_name").alias("group"),
        "reason",
        pl.col("first_seen").alias("t"),
        pl.col("message")
        .str.extract(r"wait time since (?:queued|reservation) was (\d+)s", 1)
        .cast(pl.Float64)
        .alias("_wait"),
        "count",
    )
    ev = pl.concat(
        [
            ev,
            ev.filter(pl.col("count") > 1).with_columns(
                pl.lit(None, dtype=pl.Float64()).alias("_wait")
            ),
        ]
    ).with_columns(
        pl.when(pl.col("_wait") >= KUEUE_WAIT_SENTINEL_S)
        .then(None)
        .otherwise(pl.col("_wait"))
        .alias("_wait")
    )
    cond = pl.concat(
        [
            wl.select(
                *G, pl.lit("QuotaReserved").alias("reason"), pl.col("quota_reserved_at").alias("t")
            ),
            wl.select(*G, pl.lit("Admitted").alias("reason"), pl.col("admitted_at").alias("t")),
        ]
    ).filter(pl.col("t").is_not_null())
    both = pl.concat([ev.drop("count"), cond], how="diagonal_relaxed")
    indexed = _index(both, bounds, "t", [*G, "reason", "_wait"]).sort("t")
    qr = pl.col("reason") == "QuotaReserved"
    return indexed.group_by(*G, "attempt").agg(
        pl.col("t").filter(qr).min().alias("quota_reserved_at"),
        pl.col("t").filter(pl.col("reason") == "Admitted").min().alias("admitted_at"),
        pl.col("_wait").filter(qr).drop_nulls().first().alias("reported_wait_s"),
    )


def _pod_facts(pods: pl.LazyFrame, events: pl.LazyFrame) -> pl.LazyFrame:
    """Per attempt: pod counts, binding/running times, ends, GPUs and outcome flags."""
    backoff = (
        events.filter((pl.col("involved_kind") == "Pod") & (pl.col("reason") == "BackOff"))
        .group_by("cluster", pl.col("involved_uid").alias("uid"))
        .agg(pl.col("count").sum().alias("_backoffs"))
    )
    # Sorted by end, so the first non-zero exit is the pod that failed first; ties (pods ending
    # in the same second, or not ended) by name and uid, so every ``first()`` below is the same
    # pod on every build (a join does not keep row order).
    p = pods.join(backoff, on=["cluster", "uid"], how="left").sort(
        "_term", "name", "uid", nulls_last=True
    )
    bound = pl.col("_bound").is_not_null()
    nonzero = pl.col("exit_code").fill_null(0) != 0
    return p.group_by(*G, "attempt").agg(
        pl.len().cast(pl.Int64).alias("pods"),
        bound.sum().cast(pl.Int64).alias("pods_bound"),
        pl.col("_bound").min().alias("start_at"),
        pl.col("_bound").max().alias("_last_bound"),
        pl.col("started_at").min().alias("first_pod_running_at"),
        pl.col("started_at").max().alias("_last_running"),
        pl.col("started_at").is_not_null().sum().alias("_n_running"),
        pl.col("_term").max().alias("_pods_end"),
        (pl.col("_term").is_not_null() | pl.col("phase").is_in(["Succeeded", "Failed"]))
        .all()
        .alias("_all_ended"),
        pl.col("gpus").fill_null(0.0).filter(bound).sum().alias("gpus"),
        pl.col("gpus").fill_null(0.0).sum().alias("_gpus_all"),
        (pl.col("termination_reason") == "OOMKilled").any().alias("_oom"),
        (pl.col("phase") == "Failed").any().alias("_failed"),
        (pl.col("phase") == "Succeeded").all().alias("_succeeded"),
        pl.col("_backoffs").fill_null(0).sum().alias("_backoffs"),
        pl.col("termination_reason")
        .filter(pl.col("phase") == "Failed")
        .drop_nulls()
        .first()
        .alias("_fail_reason"),
        pl.col("exit_code").filter(nonzero).first().alias("_bad_exit"),
        pl.col("exit_code").drop_nulls().first().alias("_any_exit"),
        pl.col("node_name").drop_nulls().unique().sort().alias("node_list"),
        pl.col("created_at").min().alias("_first_created"),
        pl.col("queue_name").drop_nulls().first().alias("_pod_queue"),
        pl.col("labels")
        .str.extract(_CONTROLLER_UID_RE, 1)
        .drop_nulls()
        .first()
        .alias("_owner_uid"),
        pl.col("uid").first().alias("_first_pod_uid"),
        pl.col("kueue").any().alias("_kueue_pods"),
    )


def _job_ends(events: pl.LazyFrame, links: pl.LazyFrame) -> pl.LazyFrame:
    """The latest terminal Job event per group: ``G, _job_end_at, _job_end_reason``."""
    return (
        events.filter(
            (pl.col("involved_kind") == "Job") & pl.col("reason").is_in([*_JOB_DONE, *_JOB_FAILED])
        )
        .select(
            "cluster",
            pl.col("ev_ns").alias("namespace"),
            pl.col("involved_name").alias("job_name"),
            "first_seen",
            "reason",
            "message",
        )
        .join(links, on=["cluster", "namespace", "job_name"], how="left")
        .with_columns(pl.coalesce("_linked", "job_name").alias("group"))
        .sort("first_seen")
        .group_by(G)
        .agg(
            pl.col("first_seen").last().alias("_job_end_at"),
            pl.col("reason").last().alias("_job_end_reason"),
            pl.col("message").last().alias("_job_end_message"),
        )
    )


def k8s_attempts(
    pods: pl.LazyFrame | pl.DataFrame,
    events: pl.LazyFrame | pl.DataFrame | None = None,
    workloads: pl.LazyFrame | pl.DataFrame | None = None,
    local_queues: pl.LazyFrame | pl.DataFrame | None = None,
) -> K8sAttempts:
    """Reconstruct every workload attempt from pods, Events and Kueue objects.

    Args:
        pods: ``K8S_POD_SCHEMA`` rows, one per ``(cluster, uid)``.
        events: ``K8S_EVENT_SCHEMA`` rows, one per ``(cluster, uid)``; None = no Events.
        workloads: ``K8S_WORKLOAD_SCHEMA`` rows; None = no Workload objects (the bundled fleet).
        local_queues: ``KUEUE_LOCAL_QUEUE_SCHEMA`` rows (LocalQueue → ClusterQueue); optional.

    Returns:
        :class:`K8sAttempts`. ``attempts`` has :data:`K8S_ATTEMPT_SCHEMA`, one row per attempt
        of every workload (attempts that never started included, e.g. one evicted before its
        pods were bound, or one still queued): ``group`` = the Workload name (bare group: the
        owner or pod name), ``attempt`` 0, 1, … and ``attempts`` (the workload's count),
        ``kueue``, ``workload_uid``, ``job_id_raw`` (Workload uid, else owner Job uid, else the
        pod uid), ``queue_name`` (LocalQueue), ``cluster_queue``, ``priority``,
        ``pods_expected`` (Σ of ``status.admission.podSetAssignments[].count``, which under
        partial admission is below the spec's, else Σ ``spec.podSets[].count``, else the
        attempt's pods), ``pods`` / ``pods_bound`` (this attempt's),
        ``gpus`` (bound, GPUs) and ``req_gpus`` (requested: the Workload's pod sets, else Σ over
        the attempt's pods; NULL when neither is known, as for a never-admitted workload seen
        only in Events), the stage times (UTC) ``created_at``,
        ``eligible_at`` (+ ``eligible_source``: ``created``, ``requeued_condition``,
        ``requeue_at``, ``reported_wait``, ``previous_end``), ``quota_reserved_at``,
        ``admitted_at``, ``reported_wait_s`` (s, from the QuotaReserved event; NULL for
        Kueue's sentinel), ``start_at`` (first pod bound), ``all_pods_scheduled_at`` /
        ``all_pods_running_at`` (last pod bound / running, NULL until every expected pod is),
        ``first_pod_running_at``, ``end_at``; ``state`` (Slurm names plus ``PENDING``),
        ``end_reason`` / ``end_message``, ``gpu_s`` (GPU-s per pod, binding → end; NULL while
        running), ``node_list``, ``exit_code``, ``timelimit_s``
        (``maximumExecutionTimeSeconds``), ``requeue_count`` (object) and
        ``evictions_inferred`` (boundaries dated from pod generations).
    """
    p = _frame(pods, K8S_POD_SCHEMA)
    ev = _frame(events, K8S_EVENT_SCHEMA).with_columns(
        pl.coalesce("involved_namespace", "namespace").alias("ev_ns")
    )
    wl = _workloads(_frame(workloads, K8S_WORKLOAD_SCHEMA), ev)
    lq = (
        _frame(local_queues, KUEUE_LOCAL_QUEUE_SCHEMA)
        .select(
            "cluster",
            "namespace",
            pl.col("name").alias("queue_name"),
            pl.col("cluster_queue").alias("_lq_cq"),
        )
        .unique(["cluster", "namespace", "queue_name"])
    )
    links = _job_links(wl)
    grouped = _pod_groups(p, wl, links)
    bounds = _boundaries(ev, wl, grouped).collect().lazy()
    pod_map = _index(grouped, bounds, "created_at", ["uid", *G]).collect()
    facts = _pod_facts(pod_map.lazy(), ev)
    adm = _admissions(ev, wl, bounds)
    n_b = bounds.group_by(G).agg(
        pl.len().cast(pl.Int64).alias("_nb"),
        pl.col("inferred").sum().cast(pl.Int64).alias("evictions_inferred"),
    )
    groups = (
        pl.concat(
            [
                wl.select(*G, pl.lit(True).alias("kueue")),
                pod_map.lazy().group_by(G).agg(pl.col("kueue").any()),
            ]
        )
        .group_by(G)
        .agg(pl.col("kueue").any())
        .join(n_b, on=G, how="left")
        .with_columns(pl.col("_nb").fill_null(0), pl.col("evictions_inferred").fill_null(0))
        .with_columns(pl.int_ranges(0, pl.col("_nb") + 1, dtype=pl.Int64()).alias("attempt"))
        .explode("attempt")
    )
    end_b = bounds.select(
        *G,
        (pl.col("k") - 1).alias("attempt"),
        pl.col("t").alias("_evict_at"),
        pl.col("reason").alias("_evict_reason"),
        pl.col("message").alias("_evict_message"),
    )
    start_b = bounds.select(*G, pl.col("k").alias("attempt"), pl.col("t").alias("_prev_evict_at"))
    prev_end = facts.select(
        *G, (pl.col("attempt") + 1).alias("attempt"), pl.col("_pods_end").alias("_prev_pods_end")
    )
    a = (
        # The object's QuotaReserved/Admitted conditions are already in ``adm``, per attempt.
        groups.join(wl.drop("quota_reserved_at", "admitted_at"), on=G, how="left")
        .join(facts, on=[*G, "attempt"], how="left")
        .join(adm, on=[*G, "attempt"], how="left")
        .join(end_b, on=[*G, "attempt"], how="left")
        .join(start_b, on=[*G, "attempt"], how="left")
        .join(prev_end, on=[*G, "attempt"], how="left")
        .join(_job_ends(ev, links), on=G, how="left")
        .with_columns(pl.coalesce("queue_name", "_pod_queue").alias("queue_name"))
        .join(lq, on=["cluster", "namespace", "queue_name"], how="left")
    )
    a = _decide(a)
    spans = (
        pod_map.lazy()
        .filter(pl.col("_bound").is_not_null())
        .join(a.select(*G, "attempt", "end_at"), on=[*G, "attempt"], how="inner")
        .group_by(*G, "attempt")
        .agg(
            pl.when(pl.col("end_at").is_not_null().all())
            .then(
                (
                    pl.col("gpus").fill_null(0.0)
                    * seconds_between(pl.coalesce("_term", "end_at"), pl.col("_bound")).clip(0.0)
                ).sum()
            )
            .alias("gpu_s")
        )
    )
    done = a.join(spans, on=[*G, "attempt"], how="left").collect()
    order = [*G, "attempt"]
    return K8sAttempts(
        attempts=done.select([pl.col(c).cast(t) for c, t in K8S_ATTEMPT_SCHEMA.items()]).sort(
            order
        ),
        pods=pod_map.select("cluster", "namespace", "uid", "name", "group", "attempt").sort(order),
        holds=_holds(pod_map.lazy(), done.lazy()).collect(),
    )


#: A held-GPU level at or below this is no hold (the residue of summing fractional GPUs).
_NO_GPUS: Final = 1e-9


def _steps(spans: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """The step function of ``spans`` (``*by, gpus, _from, _to``; ``_to`` NULL: held at the
    cut-off) per ``by``: ``*by, start_at, end_at, gpus``, consecutive pieces of constant Σ GPUs
    (``end_at`` NULL: still held at the cut-off; no piece where none was held)."""
    return (
        pl.concat(
            [
                spans.select(*by, pl.col("_from").alias("_t"), pl.col("gpus").alias("_d")),
                spans.filter(pl.col("_to").is_not_null()).select(
                    *by, pl.col("_to").alias("_t"), (-pl.col("gpus")).alias("_d")
                ),
            ]
        )
        .group_by(*by, "_t")
        .agg(pl.col("_d").sum())
        .sort(*by, "_t")
        .select(
            *by,
            pl.col("_t").alias("start_at"),
            pl.col("_t").shift(-1).over(by).alias("end_at"),
            pl.col("_d").cum_sum().over(by).alias("gpus"),
        )
        .filter(pl.col("gpus") > _NO_GPUS)
    )


def _holds(pod_map: pl.LazyFrame, attempts: pl.LazyFrame) -> pl.LazyFrame:
    """The GPUs each started attempt held over time on each node, as step functions: ``G,
    attempt, start_at, end_at, gpus, host`` (:data:`K8S_HOLD_SCHEMA`), per node ``host`` (the
    pods' ``node_name``) consecutive pieces of constant GPUs held on it (``end_at`` NULL: still
    held at the cut-off; no piece where none was held), only for the attempts whose holding,
    all nodes together, is not the one piece ``gpus`` over ``[start_at, end_at)``, or is but
    not evenly over the attempt's ``node_list`` (a node of it held none, as a CPU-only
    launcher's, or nodes held different GPUs): an even split over the node list would give
    each node other GPU-seconds than its own (METRICS.md "GPU holding").

    A pod holds its GPUs over the span ``gpu_s`` counts (see the module docstring): its binding
    to its end, else the attempt's end; the pieces' GPU-seconds sum to the attempt's ``gpu_s``.
    """
    key = [*G, "attempt"]
    spans = (
        pod_map.filter(pl.col("_bound").is_not_null() & (pl.col("gpus").fill_null(0.0) > 0))
        .join(attempts.select(*key, "end_at"), on=key, how="inner")
        .select(
            *key,
            pl.col("node_name").cast(pl.String()).alias("host"),
            pl.col("gpus").cast(pl.Float64),
            pl.col("_bound").cast(_TS).alias("_from"),
            pl.coalesce("_term", "end_at").cast(_TS).alias("_to"),
        )
        .filter(pl.col("_to").is_null() | (pl.col("_to") > pl.col("_from")))
    )
    # all nodes together decide whether the attempt held alike (no pieces), or held nothing
    steps = _steps(spans, key)
    one = attempts.select(*key, pl.col("start_at").alias("_s"), pl.col("end_at").alias("_e"),
                          pl.col("gpus").alias("_g"))  # fmt: skip
    trivial = (
        steps.group_by(key)
        .agg(
            pl.len().alias("_n"),
            pl.col("start_at").first().alias("_ps"),
            pl.col("end_at").first().alias("_pe"),
            pl.col("gpus").first().alias("_pg"),
        )
        .join(one, on=key, how="inner")
        .filter(
            (pl.col("_n") == 1)
            & (pl.col("_ps") == pl.col("_s"))
            & pl.col("_pe").eq_missing(pl.col("_e"))
            & ((pl.col("_pg") - pl.col("_g")).abs() <= _NO_GPUS)
        )
        .select(key)
    )
    # a started attempt with GPUs whose pods held none (each rejected at kubelet admission)
    # holds nothing: one empty piece, on no node, says so
    empty = (
        attempts.filter(pl.col("start_at").is_not_null() & (pl.col("gpus") > 0))
        .join(steps.select(key).unique(), on=key, how="anti")
        .select(
            *key,
            "start_at",
            pl.col("start_at").alias("end_at"),
            pl.lit(0.0).alias("gpus"),
            pl.lit(None, dtype=pl.String()).alias("host"),
        )
    )
    # an attempt that held alike keeps no piece only where every node of its node list held
    # the same GPUs (no CPU-only pod's node, no uneven nodes): the even split is then each
    # node's own
    nodes = _steps(spans, [*key, "host"])
    even = (
        nodes.group_by(key)
        .agg(
            pl.col("host").n_unique().alias("_nh"),
            pl.col("host").null_count().alias("_nn"),
            (pl.col("gpus").max() - pl.col("gpus").min()).alias("_dg"),
        )
        .join(attempts.select(*key, pl.col("node_list").list.len().alias("_nl")), on=key)
        .filter(
            (pl.col("_nn") == 0) & (pl.col("_nh") == pl.col("_nl")) & (pl.col("_dg") <= _NO_GPUS)
        )
        .select(key)
    )
    per_node = nodes.join(trivial.join(even, on=key, how="semi"), on=key, how="anti")
    return (
        pl.concat([per_node, empty], how="diagonal_relaxed")
        .select([pl.col(c).cast(t) for c, t in K8S_HOLD_SCHEMA.items()])
        .sort(*key, "start_at", "host", nulls_last=True)
    )


def _decide(a: pl.LazyFrame) -> pl.LazyFrame:
    """Eligible time, end, state and GPU-seconds of each attempt (see the module docstring)."""
    last = pl.col("attempt") == pl.col("_nb")
    evicted = pl.col("_evict_at").is_not_null()
    requeued = pl.col("attempt") > 0
    after_prev = pl.col("_prev_evict_at")
    req_cond = pl.when(last & requeued & (pl.col("requeued_at") >= after_prev)).then(
        pl.col("requeued_at")
    )
    req_at = pl.when(last & requeued & (pl.col("requeue_at") >= after_prev)).then(
        pl.col("requeue_at")
    )
    by_wait = pl.when(requeued).then(
        pl.col("quota_reserved_at") - pl.duration(seconds=pl.col("reported_wait_s").cast(pl.Int64))
    )
    prev_end = pl.when(requeued).then(pl.max_horizontal(after_prev, pl.col("_prev_pods_end")))
    created = pl.coalesce("created_at", "_first_created")
    eligible_src = (
        pl.when(~requeued).then(pl.lit("created"))
        .when(req_cond.is_not_null()).then(pl.lit("requeued_condition"))
        .when(req_at.is_not_null()).then(pl.lit("requeue_at"))
        .when(by_wait.is_not_null()).then(pl.lit("reported_wait"))
        .otherwise(pl.lit("previous_end"))
    )  # fmt: skip
    eligible = (
        pl.when(~requeued).then(created).otherwise(pl.coalesce(req_cond, req_at, by_wait, prev_end))
    )

    fin = pl.col("finished_reason")
    job_end = pl.col("_job_end_reason")
    pods_done = (pl.col("pods") > 0) & pl.col("_all_ended")
    has_pods = pl.col("pods").fill_null(0) > 0
    # A Job's terminal event ends the attempt only if it came after the last eviction.
    job_end_after_prev = pl.col("_job_end_at").is_not_null() & (
        pl.col("_job_end_at") >= pl.coalesce(after_prev, pl.col("_job_end_at"))
    )
    fail_state = pl.when(pl.col("_oom")).then(pl.lit("OUT_OF_MEMORY")).otherwise(pl.lit("FAILED"))
    evict_state = (
        pl.when(pl.col("_evict_reason").str.contains("Preempt")).then(pl.lit("PREEMPTED"))
        .when(pl.col("_evict_reason").str.contains("MaximumExecutionTime")).then(pl.lit("TIMEOUT"))
        .otherwise(pl.lit("FAILED"))
    )  # fmt: skip
    ended_by = (
        pl.when(evicted).then(pl.lit("evicted"))
        .when(pl.col("finished_at").is_not_null()).then(pl.lit("finished"))
        .when(job_end_after_prev).then(pl.lit("job"))
        .when(pods_done).then(pl.lit("pods"))
        .when(pl.col("deleted_at").is_not_null() & ~has_pods).then(pl.lit("deleted"))
        .otherwise(pl.lit(None, dtype=pl.String()))
    )  # fmt: skip
    state = (
        pl.when(pl.col("_ended_by") == "evicted").then(evict_state)
        .when(pl.col("_ended_by") == "finished").then(
            pl.when(fin == "Succeeded").then(pl.lit("COMPLETED")).otherwise(fail_state)
        )
        .when(pl.col("_ended_by") == "job").then(
            pl.when(job_end.is_in(_JOB_DONE)).then(pl.lit("COMPLETED"))
            .when(job_end == "DeadlineExceeded").then(pl.lit("TIMEOUT"))
            .otherwise(fail_state)
        )
        .when(pl.col("_ended_by") == "pods").then(
            pl.when(pl.col("_succeeded")).then(pl.lit("COMPLETED"))
            .when(pl.col("_oom")).then(pl.lit("OUT_OF_MEMORY"))
            .when(pl.col("_failed") | (pl.col("_backoffs") > 0)).then(pl.lit("FAILED"))
            .otherwise(pl.lit("CANCELLED"))
        )
        .when(pl.col("_ended_by") == "deleted").then(pl.lit("CANCELLED"))
        .when(pl.col("start_at").is_not_null()).then(pl.lit("RUNNING"))
        # Kueue reserved quota (or admitted) but no pod of the attempt was loaded: not waiting
        # in the queue any more, not known to run (a data-quality finding, not PENDING)
        .when(~has_pods & pl.coalesce("admitted_at", "quota_reserved_at").is_not_null())
        .then(pl.lit("ADMITTED"))
        .otherwise(pl.lit("PENDING"))
    )  # fmt: skip
    end_at = (
        pl.when(pl.col("_ended_by") == "evicted").then(pl.col("_evict_at"))
        .when(pl.col("_ended_by") == "finished").then(pl.col("finished_at"))
        .when(pl.col("_ended_by") == "job").then(pl.col("_job_end_at"))
        .when(pl.col("_ended_by") == "pods").then(pl.col("_pods_end"))
        .when(pl.col("_ended_by") == "deleted").then(pl.col("deleted_at"))
    )  # fmt: skip
    end_reason = (
        pl.when(pl.col("_ended_by") == "evicted")
        .then(pl.coalesce("_evict_reason", pl.lit("Evicted")))
        .when(pl.col("state") == "OUT_OF_MEMORY").then(pl.lit("OOMKilled"))
        .when(pl.col("state").is_in(["FAILED", "CANCELLED"]) & (pl.col("_backoffs") > 0))
        .then(pl.lit("BackOff"))
        .when(pl.col("_ended_by") == "finished").then(fin)
        .when(pl.col("_ended_by") == "job").then(job_end)
        .when(pl.col("_ended_by") == "pods").then(
            pl.when(pl.col("_succeeded")).then(pl.lit("Succeeded"))
            .when(pl.col("_failed")).then(pl.coalesce("_fail_reason", pl.lit("Failed")))
            .otherwise(pl.lit("Deleted"))
        )
        .when(pl.col("_ended_by") == "deleted").then(pl.lit("Deleted"))
    )  # fmt: skip
    end_message = (
        pl.when(pl.col("_ended_by") == "evicted").then(pl.col("_evict_message"))
        .when(pl.col("_ended_by") == "finished").then(pl.col("finished_message"))
        .when(pl.col("_ended_by") == "job").then(pl.col("_job_end_message"))
    )  # fmt: skip
    expected = pl.coalesce("pods_expected", "pods")
    all_bound = pl.col("pods_bound").fill_null(0) >= expected
    all_running = pl.col("_n_running").fill_null(0) >= expected
    exit_code = (
        pl.when(pl.col("state") == "COMPLETED").then(pl.lit(0, dtype=pl.Int64()))
        .otherwise(pl.coalesce("_bad_exit", "_any_exit"))
    )  # fmt: skip
    trailing = (
        last & requeued & ~has_pods & pl.col("quota_reserved_at").is_null()
        & (
            pl.col("active").not_().fill_null(False)
            | pl.col("finished_at").is_not_null()
            | pl.col("deleted_at").is_not_null()
        )
    )  # fmt: skip
    return (
        a.filter(~trailing.fill_null(False))
        .with_columns(ended_by.alias("_ended_by"))
        .with_columns(state.alias("state"), end_at.alias("end_at"))
        .with_columns(
            end_reason.alias("end_reason"),
            end_message.alias("end_message"),
            eligible.alias("eligible_at"),
            eligible_src.alias("eligible_source"),
            created.alias("created_at"),
            pl.coalesce("cluster_queue", "_lq_cq").alias("cluster_queue"),
            pl.coalesce("req_gpus", "_gpus_all").alias("req_gpus"),
            pl.col("gpus").fill_null(0.0),
            pl.col("pods").fill_null(0),
            pl.col("pods_bound").fill_null(0),
            pl.when(all_bound & has_pods)
            .then(pl.col("_last_bound"))
            .alias("all_pods_scheduled_at"),
            pl.when(all_running & has_pods)
            .then(pl.col("_last_running"))
            .alias("all_pods_running_at"),
            pl.coalesce(
                "workload_uid",
                pl.col("_owner_uid").sort_by("attempt").drop_nulls().first().over(G),
                pl.col("_first_pod_uid").sort_by("attempt").drop_nulls().first().over(G),
                "group",
            ).alias("job_id_raw"),
            exit_code.alias("exit_code"),
            (pl.col("attempt").max().over(G) + 1).alias("attempts"),
            expected.alias("pods_expected"),
        )
    )


def _jobs_rows(
    frame: pl.LazyFrame, namespace_teams: pl.LazyFrame, queue_teams: pl.LazyFrame
) -> pl.LazyFrame:
    ns = namespace_teams.select(pl.col("key").alias("namespace"), pl.col("team").alias("_ns_team"))
    lq = queue_teams.select(pl.col("key").alias("qos"), pl.col("team").alias("_lq_team"))
    return (
        frame.rename({"queue_name": "qos", "cluster_queue": "partition"})
        .join(ns.unique("namespace"), on="namespace", how="left")
        .join(lq.unique("qos"), on="qos", how="left")
        .select(
            pl.lit("kubernetes").alias("source"),
            "cluster",
            pl.format("{}/{}", pl.col("namespace"), pl.col("group")).alias("job_id"),
            "job_id_raw",
            "attempt",
            pl.coalesce("_lq_team", "_ns_team", pl.lit(UNATTRIBUTED)).alias("team"),
            pl.col("namespace").alias("account"),
            pl.lit(None, dtype=pl.String()).alias("user_name"),
            "partition",
            "qos",
            "state",
            "gpus",
            "req_gpus",
            pl.lit(None, dtype=pl.String()).alias("gpu_type"),
            pl.col("created_at").alias("submit_at"),
            "eligible_at",
            "start_at",
            "end_at",
            seconds_between(pl.col("start_at"), pl.col("eligible_at")).alias("wait_s"),
            seconds_between(pl.col("start_at"), pl.col("created_at")).alias("submit_wait_s"),
            seconds_between(pl.col("end_at"), pl.col("start_at")).alias("run_s"),
            "gpu_s",
            "node_list",
            "timelimit_s",
            "exit_code",
            "workload_uid",
            "end_reason",
            "kueue",
        )
    )


def workload_attempts(
    attempts: K8sAttempts, namespace_teams: pl.LazyFrame, queue_teams: pl.LazyFrame
) -> pl.LazyFrame:
    """One ``jobs`` row per started workload attempt (METRICS.md "Attempt").

    Args:
        attempts: the result of :func:`k8s_attempts`.
        namespace_teams: ``key`` (namespace) → ``team`` (registry ``k8s_namespace``).
        queue_teams: ``key`` (LocalQueue) → ``team`` (registry ``k8s_local_queue``); wins.

    Returns:
        The ``JOBS_COLUMNS`` of ``pipelines.analytics.build`` (source ``kubernetes``; ``job_id``
        = ``<namespace>/<workload>``; ``job_id_raw`` = the Workload uid, else the owner Job's
        uid, else the pod uid; ``account`` = namespace; ``partition`` = ClusterQueue; ``qos`` =
        LocalQueue; ``gpu_s`` per pod, see the module docstring), followed by ``workload_uid``,
        ``end_reason`` and ``kueue``. Attempts that never started are not here: see
        :func:`pending_workload_attempts`.
    """
    started = attempts.attempts.lazy().filter(pl.col("start_at").is_not_null())
    return _jobs_rows(started, namespace_teams, queue_teams)


def pending_workload_attempts(
    attempts: K8sAttempts, namespace_teams: pl.LazyFrame, queue_teams: pl.LazyFrame
) -> pl.LazyFrame:
    """The attempts that never started, in the same columns: the censored waits.

    This is the ``pending`` input of ``metrics.wait_spells``: ``eligible_at``; ``end_at`` = when
    the wait ended without a start (the workload deleted or evicted while pending, a pod deleted
    while Pending), NULL while still queued (censored at ``as_of``); ``req_gpus`` = requested
    GPUs; ``state`` ``PENDING`` (still waiting), ``CANCELLED`` or the eviction's state, or
    ``ADMITTED`` (admitted, pods not loaded), whose wait ends at the admission (``admitted_at``,
    else ``quota_reserved_at``): censored there, no longer pending demand.

    Args:
        attempts: the result of :func:`k8s_attempts`.
        namespace_teams: as for :func:`workload_attempts`.
        queue_teams: as for :func:`workload_attempts`.
    """
    waiting = (
        attempts.attempts.lazy()
        .filter(pl.col("start_at").is_null())
        .with_columns(
            end_at=pl.when(pl.col("state") == "ADMITTED")
            .then(pl.coalesce("end_at", "admitted_at", "quota_reserved_at"))
            .otherwise(pl.col("end_at"))
        )
    )
    return _jobs_rows(waiting, namespace_teams, queue_teams)


def pod_attempts(
    pods: pl.LazyFrame, namespace_teams: pl.LazyFrame, queue_teams: pl.LazyFrame
) -> pl.LazyFrame:
    """``jobs`` rows from pods alone (no Events, no Workload objects): bare pod groups.

    Kept for callers that have only pods; :func:`k8s_attempts` + :func:`workload_attempts`
    with Events and Workloads is the full model.
    """
    return workload_attempts(k8s_attempts(pods), namespace_teams, queue_teams)
