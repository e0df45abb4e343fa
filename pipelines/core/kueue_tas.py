"""Kueue's topology not-fit statement as pending-reason spells (pure polars).

When topology-aware scheduling (TAS) finds no placement for a pod set, Kueue leaves the Workload
pending with a message built by ``notFitMessage`` (kubernetes-sigs/kueue
``pkg/cache/scheduler/tas_flavor_snapshot.go``), prefixed by the flavor assigner with
``couldn't assign flavors to pod set <name>: ``, in both the Workload's ``QuotaReserved=False``
condition and its ``Pending`` / ``TopologyPlacementFailed`` events:

- ``topology "<name>" allows to fit only <fit> out of <total> pod(s)``;
- ``topology "<name>" doesn't allow to fit any of <total> pod(s)``;
- the same with ``slice(s)`` where the pod set asks for slices (``podset-slice-size`` > 1),
  and, in later versions, ``. Total nodes: <n>; excluded: <why>: <count>, …`` after it.

:func:`kueue_topology_spells` turns those statements into the spells of
:data:`pipelines.core.pending_spells.SPELL_SCHEMA` (one reason held over an interval), so the
time a Workload was held by topology is the time Kueue stated it (METRICS.md "Domain capacity,
stranded GPUs and large-job waits", ``basis`` ``exact``).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from metrics.schema import UTC_DATETIME
from pipelines.core.pending_spells import SPELL_SCHEMA

__all__ = ["TAS_NOT_FIT_RE", "kueue_topology_spells", "tas_not_fit"]

#: Kueue's TAS not-fit text (every version's ``notFitMessage``): group 1 the Topology's name,
#: 2 the pods/slices that fit (absent for "doesn't allow to fit any"), 3 or 4 the total asked,
#: 5 the unit (``pod`` or ``slice``).
TAS_NOT_FIT_RE: Final = (
    r'topology "([^"]*)" (?:allows to fit only (-?\d+) out of (\d+)|'
    r"doesn't allow to fit any of (\d+)) (pod|slice)\(s\)"
)

#: The condition whose ``False`` status carries the not-fit message.
_CONDITION: Final = "QuotaReserved"

_COND_DTYPE: Final = pl.List(
    pl.Struct(
        {
            "type": pl.String(),
            "status": pl.String(),
            "reason": pl.String(),
            "message": pl.String(),
            "lastTransitionTime": pl.String(),
        }
    )
)


def tas_not_fit(message: pl.Expr) -> pl.Expr:
    """A struct of the not-fit statement in ``message``: ``reason`` (the statement itself,
    ``topology "x" allows to fit only 3 out of 4 pod(s)``; NULL when the message has none),
    ``topology``, ``fit`` (pods or slices that fit; 0 for "doesn't allow to fit any"),
    ``total`` and ``unit`` (``pod``/``slice``). A message joining several pod sets' reasons
    gives its first statement."""
    fit = message.str.extract(TAS_NOT_FIT_RE, 2).cast(pl.Int64)
    any_total = message.str.extract(TAS_NOT_FIT_RE, 4).cast(pl.Int64)
    reason = message.str.extract(f"({TAS_NOT_FIT_RE})", 1)
    return pl.struct(
        reason.alias("reason"),
        message.str.extract(TAS_NOT_FIT_RE, 1).alias("topology"),
        pl.when(reason.is_not_null()).then(fit.fill_null(0)).alias("fit"),
        pl.coalesce(message.str.extract(TAS_NOT_FIT_RE, 3).cast(pl.Int64), any_total).alias(
            "total"
        ),
        message.str.extract(TAS_NOT_FIT_RE, 5).alias("unit"),
    )


def _from_events(events: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, job_id, reason, _s, _e, _n``: one statement per Workload event series."""
    return (
        events.filter(pl.col("involved_kind") == "Workload")
        .with_columns(tas_not_fit(pl.col("message")).struct.field("reason"))
        .filter(pl.col("reason").is_not_null() & pl.col("first_seen").is_not_null())
        .select(
            "cluster",
            pl.format(
                "{}/{}",
                pl.coalesce("involved_namespace", "namespace"),
                pl.col("involved_name"),
            ).alias("job_id"),
            "reason",
            pl.col("first_seen").cast(UTC_DATETIME).alias("_s"),
            pl.coalesce("last_seen", "first_seen").cast(UTC_DATETIME).alias("_e"),
            pl.col("count").fill_null(1).cast(pl.Int64).alias("_n"),
        )
    )


def _from_workloads(workloads: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, job_id, reason, _s, _e, _n``: one statement per Workload snapshot whose
    ``QuotaReserved`` condition is ``False`` with a not-fit message."""
    snaps = (
        workloads.select(
            "cluster",
            pl.format("{}/{}", pl.col("namespace"), pl.col("name")).alias("job_id"),
            pl.col("snapshot_at").cast(UTC_DATETIME),
            pl.col("quota_reserved_at").cast(UTC_DATETIME),
            pl.col("conditions").str.json_decode(_COND_DTYPE).alias("_c"),
        )
        .with_columns(
            pl.col("_c")
            .list.eval(
                pl.element().filter(
                    (pl.element().struct.field("type") == _CONDITION)
                    & (pl.element().struct.field("status") == "False")
                )
            )
            .list.first()
            .alias("_c")
        )
        .with_columns(
            tas_not_fit(pl.col("_c").struct.field("message")).struct.field("reason"),
            pl.col("_c")
            .struct.field("lastTransitionTime")
            .str.to_datetime(time_zone="UTC", time_unit="us", strict=False)
            .alias("_ltt"),
        )
        .unique(["cluster", "job_id", "snapshot_at"], keep="last")
        .sort("cluster", "job_id", "snapshot_at")
    )
    job = ["cluster", "job_id"]
    prev_at = pl.col("snapshot_at").shift(1).over(job)
    prev_reason = pl.col("reason").shift(1).over(job)
    next_reserved = pl.col("quota_reserved_at").shift(-1).over(job)
    # A False condition keeps its lastTransitionTime while only its message changes, so the
    # statement holds from there unless an earlier snapshot showed another message since.
    start = (
        pl.when(prev_at.is_not_null() & prev_reason.ne_missing(pl.col("reason")))
        .then(pl.max_horizontal(pl.col("_ltt"), prev_at))
        .otherwise(pl.coalesce("_ltt", "snapshot_at"))
    )
    end = (
        pl.when(next_reserved.is_not_null() & (next_reserved > pl.col("snapshot_at")))
        .then(next_reserved)
        .otherwise(pl.col("snapshot_at"))
    )
    return (
        snaps.with_columns(start.alias("_s"), end.alias("_e"))
        .filter(pl.col("reason").is_not_null() & pl.col("snapshot_at").is_not_null())
        .select(*job, "reason", "_s", "_e", pl.lit(1, pl.Int64).alias("_n"))
    )


def kueue_topology_spells(
    workloads: pl.LazyFrame | None, events: pl.LazyFrame | None
) -> pl.LazyFrame:
    """The spells in which Kueue stated that a Workload's topology does not fit it.

    A statement is an interval with its not-fit text (:func:`tas_not_fit` ``reason``):

    - each Workload event (``Pending`` or ``TopologyPlacementFailed``; any reason whose message
      states it) holds from its ``first_seen`` to its ``last_seen`` (Kueue re-states it at
      every retry; the event's ``count`` is its ``polls``);
    - each Workload snapshot whose ``QuotaReserved`` condition is ``False`` with the text holds
      from the condition's ``lastTransitionTime`` (or from the previous snapshot, when that one
      showed another message) to the snapshot, or on to the ``QuotaReserved=True`` time the
      next snapshot shows.

    Overlapping or touching statements of one Workload merge into one spell (its ``reason``
    the latest statement's text).

    Args:
        workloads: ``raw.k8s_workloads`` rows (``cluster, namespace, name, snapshot_at,
            quota_reserved_at, conditions``: the conditions as JSON); None = none.
        events: ``K8S_EVENT_SCHEMA`` rows; None = none.

    Returns:
        :data:`pipelines.core.pending_spells.SPELL_SCHEMA` rows: ``job_id`` =
        ``<namespace>/<workload>`` (the ``jobs`` key of Kueue Workloads), ``seconds`` =
        ``spell_end − spell_start``, ``polls`` = statements merged (events count each
        occurrence); ``sched_nodes``, ``req_switch``, ``expected_start`` NULL (Slurm's).
    """
    parts = []
    if events is not None:
        parts.append(_from_events(events.lazy()))
    if workloads is not None:
        parts.append(_from_workloads(workloads.lazy()))
    if not parts:
        return pl.LazyFrame(schema=SPELL_SCHEMA)
    job = ["cluster", "job_id"]
    stated = pl.concat(parts).sort(*job, "_s", "_e")
    reach = pl.col("_e").cum_max().shift(1).over(job)
    new_spell = reach.is_null() | (pl.col("_s") > reach)
    return (
        stated.with_columns(new_spell.cast(pl.Int64).cum_sum().over(job).alias("_spell"))
        .group_by(*job, "_spell")
        .agg(
            pl.col("reason").last(),
            pl.col("_s").min().alias("spell_start"),
            pl.col("_e").max().alias("spell_end"),
            pl.col("_n").sum().alias("polls"),
        )
        .with_columns(
            (pl.col("spell_end") - pl.col("spell_start")).dt.total_seconds().alias("seconds"),
            pl.lit(None, pl.String()).alias("sched_nodes"),
            pl.lit(None, pl.Int64()).alias("req_switch"),
            pl.lit(None, UTC_DATETIME).alias("expected_start"),
        )
        .select([pl.col(c).cast(t) for c, t in SPELL_SCHEMA.items()])
        .sort(*job, "spell_start")
    )
