"""Kubernetes time to start, stage by stage, and why workloads wait (pure polars).

METRICS.md "Time to start", Kubernetes: created → quota reserved → admitted (Kueue Workload
conditions) → all pods scheduled → all pods running; **gang start spread** = last pod running −
first pod running. Two frames, both over the attempts of :func:`k8s_attempts`:

- :func:`k8s_workload_timings` (the ``k8s_workloads`` frame): one row per workload attempt with
  each stage's timestamp, the stage durations, image pull time and the pending-event counts;
- :func:`k8s_pending_reasons` (the ``k8s_pending_reasons`` frame): "why pending", from the
  scheduler's ``FailedScheduling`` pod events (insufficient ``nvidia.com/gpu`` or ``amd.com/gpu``,
  taints, affinity …) and Kueue's ``Pending`` workload events (no GPU quota, flavor mismatch,
  waiting for preemption …), counted per attempt and reason.

Image pull time of a pod = Σ over its ``Pulled`` events of the duration the kubelet reports
(``Successfully pulled image "x" in 1m2.5s (…)``; ``already present on machine`` = 0), else the
time from its first ``Pulling`` to its last ``Pulled`` event; an attempt's is the slowest pod's
(the gang waits for it).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from metrics import seconds_between
from metrics.schema import UTC_DATETIME
from pipelines.core.k8s_attempts import G, K8sAttempts
from pipelines.core.registry import UNATTRIBUTED
from pipelines.kubernetes import K8S_EVENT_SCHEMA

__all__ = [
    "K8S_PENDING_REASON_SCHEMA",
    "K8S_WORKLOAD_TIMING_SCHEMA",
    "KUEUE_PENDING_REASONS",
    "SCHEDULER_PENDING_REASONS",
    "image_pull_seconds",
    "k8s_pending_reasons",
    "k8s_workload_timings",
]

_TS = UTC_DATETIME

#: kube-scheduler ``FailedScheduling`` reasons: (reason, regex on the part of the message before
#: ``preemption:``; group 1, when present, is the number of nodes that said so).
SCHEDULER_PENDING_REASONS: Final = (
    ("insufficient_gpu", r"(\d+) Insufficient (?:nvidia\.com/(?:gpu|mig-)|amd\.com/gpu)"),
    ("insufficient_cpu", r"(\d+) Insufficient cpu"),
    ("insufficient_memory", r"(\d+) Insufficient memory"),
    ("taint", r"(\d+) node\(s\) had (?:untolerated )?taint"),
    ("node_affinity", r"(\d+) node\(s\) didn't match Pod's node affinity"),
    (
        "pod_affinity",
        r"(\d+) node\(s\) didn't "
        r"(?:match pod (?:anti-)?affinity|satisfy existing pods anti-affinity)",
    ),
    ("node_unschedulable", r"(\d+) node\(s\) were unschedulable"),
    ("topology_spread", r"(\d+) node\(s\) didn't match pod topology spread"),
    ("too_many_pods", r"(\d+) Too many pods"),
    (
        "volume",
        r"(\d+)? ?(?:node\(s\) had volume node affinity conflict|node\(s\) didn't find available "
        r"persistent volumes|unbound immediate PersistentVolumeClaims)",
    ),
)

#: Kueue ``Pending`` reasons: (reason, regex on the message).
KUEUE_PENDING_REASONS: Final = (
    ("quota_gpu", r"insufficient (?:unused )?quota for (?:nvidia\.com/(?:gpu|mig-)|amd\.com/gpu)"),
    ("quota_cpu_memory", r"insufficient (?:unused )?quota for (?:cpu|memory)"),
    ("flavor_mismatch", r"flavor \S+ doesn't match|untolerated taint"),
    ("waiting_for_preemption", r"Pending the preemption of \d+ workload"),
    ("no_fit_after_other", r"no longer fits after processing another workload"),
    ("queue_inactive", r"(?:ClusterQueue|LocalQueue) \S+ (?:is inactive|is stopped|doesn't exist)"),
)

#: Columns of the ``k8s_workloads`` frame (one row per workload attempt), in this order.
K8S_WORKLOAD_TIMING_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "job_id": pl.String(),
    "workload_uid": pl.String(),
    "attempt": pl.Int64(),
    "attempts": pl.Int64(),
    "kueue": pl.Boolean(),
    "team": pl.String(),
    "queue_name": pl.String(),
    "cluster_queue": pl.String(),
    "priority": pl.Int64(),
    "pods_expected": pl.Int64(),
    "pods": pl.Int64(),
    "pods_bound": pl.Int64(),
    "gpus": pl.Float64(),
    "req_gpus": pl.Float64(),
    "state": pl.String(),
    "end_reason": pl.String(),
    "end_message": pl.String(),
    "created_at": _TS,
    "eligible_at": _TS,
    "eligible_source": pl.String(),
    "quota_reserved_at": _TS,
    "admitted_at": _TS,
    "first_pod_scheduled_at": _TS,
    "all_pods_scheduled_at": _TS,
    "first_pod_running_at": _TS,
    "all_pods_running_at": _TS,
    "end_at": _TS,
    "quota_wait_s": pl.Float64(),
    "admission_check_s": pl.Float64(),
    "scheduling_s": pl.Float64(),
    "pod_startup_s": pl.Float64(),
    "time_to_running_s": pl.Float64(),
    "gang_start_spread_s": pl.Float64(),
    "image_pull_s": pl.Float64(),
    "image_pulls": pl.Int64(),
    "reported_wait_s": pl.Float64(),
    "requeue_count": pl.Int64(),
    "evictions_inferred": pl.Int64(),
    "scheduler_pending_events": pl.Int64(),
    "kueue_pending_events": pl.Int64(),
    "top_pending_reason": pl.String(),
}

#: Columns of the ``k8s_pending_reasons`` frame, in this order.
K8S_PENDING_REASON_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "job_id": pl.String(),
    "attempt": pl.Int64(),
    "component": pl.String(),
    "reason": pl.String(),
    "events": pl.Int64(),
    "objects": pl.Int64(),
    "max_nodes": pl.Int64(),
    "first_seen": _TS,
    "last_seen": _TS,
    "example": pl.String(),
}

_GO_UNITS: Final = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
}
_GO_TOKEN: Final = r"\d+(?:\.\d+)?(?:h|ms|m|s|µs|us|ns)"


def _events(events: pl.LazyFrame | pl.DataFrame | None) -> pl.LazyFrame:
    if events is None:
        return pl.LazyFrame(schema=K8S_EVENT_SCHEMA)
    return events.lazy().with_columns(pl.coalesce("involved_namespace", "namespace").alias("ev_ns"))


def _go_duration_s(text: pl.Expr) -> pl.Expr:
    """Seconds of the Go duration after ``in `` in a kubelet message (``1m2.5s``, ``812ms``)."""
    tokens = text.str.extract(rf"in ((?:{_GO_TOKEN})+)", 1).str.extract_all(_GO_TOKEN)
    value = pl.element().str.extract(r"^(\d+(?:\.\d+)?)", 1).cast(pl.Float64)
    unit = pl.element().str.extract(r"([a-zµ]+)$", 1).replace_strict(_GO_UNITS, default=None)
    return pl.when(tokens.list.len() > 0).then(tokens.list.eval(value * unit).list.sum())


def image_pull_seconds(events: pl.LazyFrame | pl.DataFrame | None) -> pl.LazyFrame:
    """Image pull seconds per pod from its ``Pulling``/``Pulled`` events.

    Args:
        events: ``K8S_EVENT_SCHEMA`` rows.

    Returns:
        ``cluster, uid`` (the pod's), ``image_pull_s`` (Σ kubelet-reported durations; 0 when
        every image was already present; else last ``Pulled`` − first ``Pulling``),
        ``pulled`` (True when at least one image was actually pulled).
    """
    ev = _events(events).filter(
        (pl.col("involved_kind") == "Pod") & pl.col("reason").is_in(["Pulling", "Pulled"])
    )
    pulled = pl.col("reason") == "Pulled"
    present = pulled & pl.col("message").str.contains("already present")
    reported = pl.when(present).then(0.0).when(pulled).then(_go_duration_s(pl.col("message")))
    return (
        ev.with_columns(reported.alias("_dur"))
        .group_by("cluster", pl.col("involved_uid").alias("uid"))
        .agg(
            pl.col("_dur").sum().alias("_sum"),
            pl.col("_dur").filter(pulled).is_null().any().alias("_unreported"),
            pl.col("first_seen").filter(pl.col("reason") == "Pulling").min().alias("_pulling"),
            pl.col("last_seen").filter(pulled).max().alias("_pulled"),
            (pulled & ~present).any().alias("pulled"),
        )
        .filter(pl.col("_pulled").is_not_null())
        .select(
            "cluster",
            "uid",
            pl.when(pl.col("_unreported") & pl.col("_pulling").is_not_null())
            .then(seconds_between(pl.col("_pulled"), pl.col("_pulling")))
            .otherwise(pl.col("_sum"))
            .alias("image_pull_s"),
            "pulled",
        )
    )


def _job_id() -> pl.Expr:
    return pl.format("{}/{}", pl.col("namespace"), pl.col("group")).alias("job_id")


def _categorised(
    ev: pl.LazyFrame, rules: tuple[tuple[str, str], ...], text: pl.Expr
) -> pl.LazyFrame:
    """One row per event × reason it names (``other`` when it names none), with ``nodes``."""
    hits = [
        pl.when(text.str.contains(rx)).then(
            pl.struct(
                pl.lit(name).alias("reason"),
                text.str.extract(rx, 1).cast(pl.Int64, strict=False).alias("nodes"),
            )
        )
        for name, rx in rules
    ]
    return (
        ev.with_columns(pl.concat_list(hits).list.drop_nulls().alias("_hits"))
        .with_columns(
            pl.when(pl.col("_hits").list.len() > 0)
            .then(pl.col("_hits"))
            .otherwise(
                pl.concat_list(
                    pl.struct(
                        pl.lit("other").alias("reason"),
                        pl.lit(None, dtype=pl.Int64()).alias("nodes"),
                    )
                )
            )
            .alias("_hits")
        )
        .drop("reason")
        .explode("_hits")
        .unnest("_hits")
    )


def _pending_events(
    attempts: K8sAttempts, events: pl.LazyFrame | pl.DataFrame | None
) -> pl.LazyFrame:
    """Pending events (scheduler and Kueue) with their attempt and reason."""
    ev = _events(events)
    pods = attempts.pods.lazy()
    sched = ev.filter((pl.col("involved_kind") == "Pod") & (pl.col("reason") == "FailedScheduling"))
    by_uid = pods.select(
        "cluster", pl.col("uid").alias("involved_uid"), "namespace", "group", "attempt"
    )
    by_name = pods.select(
        "cluster",
        pl.col("namespace").alias("ev_ns"),
        pl.col("name").alias("involved_name"),
        pl.col("namespace").alias("_ns2"),
        pl.col("group").alias("_g2"),
        pl.col("attempt").alias("_a2"),
    ).unique(["cluster", "ev_ns", "involved_name"], keep="last")
    sched = (
        sched.join(by_uid, on=["cluster", "involved_uid"], how="left")
        .join(by_name, on=["cluster", "ev_ns", "involved_name"], how="left")
        .with_columns(
            pl.coalesce("namespace", "_ns2", "ev_ns").alias("namespace"),
            pl.coalesce("group", "_g2").alias("group"),
            pl.coalesce("attempt", "_a2").alias("attempt"),
            pl.lit("kube-scheduler").alias("component"),
            pl.col("involved_uid").alias("_object"),
        )
    )
    sched = _categorised(
        sched, SCHEDULER_PENDING_REASONS, pl.col("message").str.split("preemption:").list.first()
    )
    kq = ev.filter(
        (pl.col("involved_kind") == "Workload") & (pl.col("reason") == "Pending")
    ).with_columns(
        pl.col("ev_ns").alias("namespace"),
        pl.col("involved_name").alias("group"),
        pl.lit("kueue").alias("component"),
        pl.col("involved_name").alias("_object"),
    )
    # A Kueue Pending event belongs to the latest attempt that was eligible when it began.
    elig = attempts.attempts.lazy().select(*G, pl.col("attempt").alias("_att"), "eligible_at")
    kq = (
        kq.with_row_index("_row")
        .join(elig, on=G, how="left")
        .filter(
            pl.col("_att").is_null()
            | (pl.col("_att") == 0)
            | (pl.col("eligible_at") <= pl.col("first_seen"))
        )
        .sort("_att")
        .group_by("_row")
        .agg(pl.all().exclude("_att", "eligible_at").first(), pl.col("_att").max().alias("attempt"))
        .drop("_row")
    )
    kq = _categorised(kq, KUEUE_PENDING_REASONS, pl.col("message"))
    cols = [
        *G,
        "attempt",
        "component",
        "reason",
        "nodes",
        "count",
        "first_seen",
        "last_seen",
        "message",
        "_object",
    ]
    return pl.concat([sched.select(cols), kq.select(cols)])


def k8s_pending_reasons(
    attempts: K8sAttempts, events: pl.LazyFrame | pl.DataFrame | None
) -> pl.LazyFrame:
    """Why workloads waited: pending events counted per attempt, component and reason.

    Args:
        attempts: the result of ``k8s_attempts``.
        events: ``K8S_EVENT_SCHEMA`` rows.

    Returns:
        :data:`K8S_PENDING_REASON_SCHEMA` rows: ``job_id`` (``<namespace>/<workload>``; NULL
        with ``attempt`` NULL for a pod event whose pod is unknown), ``component``
        (``kube-scheduler`` for ``FailedScheduling``, ``kueue`` for Workload ``Pending``),
        ``reason`` (:data:`SCHEDULER_PENDING_REASONS` / :data:`KUEUE_PENDING_REASONS` names, or
        ``other``; an event naming several reasons counts for each), ``events`` (Σ event
        ``count``: every retry of the scheduler or Kueue is one), ``objects`` (distinct pods or
        workloads), ``max_nodes`` (most nodes that gave this reason at once; scheduler only),
        ``first_seen``/``last_seen`` (UTC) and one ``example`` message.
    """
    pend = _pending_events(attempts, events)
    return (
        pend.group_by(*G, "attempt", "component", "reason")
        .agg(
            pl.col("count").sum().cast(pl.Int64).alias("events"),
            pl.col("_object").n_unique().cast(pl.Int64).alias("objects"),
            pl.col("nodes").max().alias("max_nodes"),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
            pl.col("message").sort_by("first_seen").first().alias("example"),
        )
        .with_columns(pl.when(pl.col("group").is_not_null()).then(_job_id()).alias("job_id"))
        .select([pl.col(c).cast(t) for c, t in K8S_PENDING_REASON_SCHEMA.items()])
        .sort("cluster", "job_id", "attempt", "component", "reason", nulls_last=True)
    )


def k8s_workload_timings(
    attempts: K8sAttempts,
    events: pl.LazyFrame | pl.DataFrame | None,
    namespace_teams: pl.LazyFrame | None = None,
    queue_teams: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The ``k8s_workloads`` frame: one row per workload attempt with every stage's time.

    Args:
        attempts: the result of ``k8s_attempts``.
        events: ``K8S_EVENT_SCHEMA`` rows, one per ``(cluster, uid)`` (image pulls and pending
            events); None = none.
        namespace_teams: ``key`` (namespace) → ``team``; optional.
        queue_teams: ``key`` (LocalQueue) → ``team``, wins over the namespace; optional.

    Returns:
        :data:`K8S_WORKLOAD_TIMING_SCHEMA` rows, attempts that never started included (their
        ``first_pod_scheduled_at`` is NULL; a still-queued attempt is ``PENDING`` and is
        right-censored at the data cut-off by whoever computes percentiles). Stage times (UTC):
        ``created_at`` → ``eligible_at`` (requeued attempts: re-eligible) → ``quota_reserved_at``
        → ``admitted_at`` → ``first_pod_scheduled_at`` / ``all_pods_scheduled_at`` →
        ``first_pod_running_at`` / ``all_pods_running_at`` → ``end_at``. Durations (s):
        ``quota_wait_s`` = quota reserved − eligible; ``admission_check_s`` = admitted − quota
        reserved; ``scheduling_s`` = all pods scheduled − admitted (eligible without Kueue);
        ``pod_startup_s`` = all pods running − all pods scheduled; ``time_to_running_s`` = all
        pods running − eligible; ``gang_start_spread_s`` = last pod running − first pod
        running (NULL until all run); ``image_pull_s`` = the slowest pod's pull time,
        ``image_pulls`` = pods that pulled an image; ``reported_wait_s`` = Kueue's own
        "wait time since queued" (NULL for its ``9223372037s`` sentinel);
        ``scheduler_pending_events`` / ``kueue_pending_events`` (Σ counts) and
        ``top_pending_reason`` (``component:reason`` with most events); ``team`` (LocalQueue,
        else namespace, else ``unattributed``). Other columns as in ``K8S_ATTEMPT_SCHEMA``.
    """
    pulls = (
        attempts.pods.lazy()
        .join(image_pull_seconds(events), on=["cluster", "uid"], how="inner")
        .group_by(*G, "attempt")
        .agg(
            pl.col("image_pull_s").max(),
            pl.col("pulled").sum().cast(pl.Int64).alias("image_pulls"),
        )
    )
    pend = _pending_events(attempts, events).filter(pl.col("group").is_not_null())
    # Events, not (event × reason) rows: an event is counted once per component.
    per_comp = (
        pend.unique([*G, "attempt", "component", "_object", "first_seen", "message"])
        .group_by(*G, "attempt")
        .agg(
            pl.col("count")
            .filter(pl.col("component") == "kube-scheduler")
            .sum()
            .alias("scheduler_pending_events"),
            pl.col("count")
            .filter(pl.col("component") == "kueue")
            .sum()
            .alias("kueue_pending_events"),
        )
    )
    top = (
        pend.group_by(*G, "attempt", "component", "reason")
        .agg(pl.col("count").sum().alias("_n"))
        .sort("_n", "component", "reason", descending=[True, False, False])
        .group_by(*G, "attempt", maintain_order=True)
        .agg(
            pl.format("{}:{}", pl.col("component"), pl.col("reason"))
            .first()
            .alias("top_pending_reason")
        )
    )
    no_teams = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
    ns = (namespace_teams if namespace_teams is not None else no_teams).select(
        pl.col("key").alias("namespace"), pl.col("team").alias("_ns_team")
    )
    lq = (queue_teams if queue_teams is not None else no_teams).select(
        pl.col("key").alias("queue_name"), pl.col("team").alias("_lq_team")
    )
    a = (
        attempts.attempts.lazy()
        .join(ns.unique("namespace"), on="namespace", how="left")
        .join(lq.unique("queue_name"), on="queue_name", how="left")
        .with_columns(pl.coalesce("_lq_team", "_ns_team", pl.lit(UNATTRIBUTED)).alias("team"))
    )
    key = [*G, "attempt"]
    since_admission = pl.coalesce("admitted_at", "quota_reserved_at", "eligible_at")
    return (
        a.join(pulls, on=key, how="left")
        .join(per_comp, on=key, how="left")
        .join(top, on=key, how="left")
        .with_columns(
            _job_id(),
            pl.col("start_at").alias("first_pod_scheduled_at"),
            seconds_between(pl.col("quota_reserved_at"), pl.col("eligible_at")).alias(
                "quota_wait_s"
            ),
            seconds_between(pl.col("admitted_at"), pl.col("quota_reserved_at")).alias(
                "admission_check_s"
            ),
            seconds_between(pl.col("all_pods_scheduled_at"), since_admission).alias("scheduling_s"),
            seconds_between(pl.col("all_pods_running_at"), pl.col("all_pods_scheduled_at")).alias(
                "pod_startup_s"
            ),
            seconds_between(pl.col("all_pods_running_at"), pl.col("eligible_at")).alias(
                "time_to_running_s"
            ),
            seconds_between(pl.col("all_pods_running_at"), pl.col("first_pod_running_at")).alias(
                "gang_start_spread_s"
            ),
            pl.col("image_pulls").fill_null(0),
            pl.col("scheduler_pending_events").fill_null(0),
            pl.col("kueue_pending_events").fill_null(0),
        )
        .select([pl.col(c).cast(t) for c, t in K8S_WORKLOAD_TIMING_SCHEMA.items()])
        .sort("cluster", "job_id", "attempt")
    )
