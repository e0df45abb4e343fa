"""The schedulers' own view of shares, and drift between the registry and the schedulers.

Pure polars (METRICS.md "Fairness": the schedulers' own view; "Registry drift"):

- Slurm: fair-share ``RawShares`` are relative, so only their ratio matters [Slurm "Classic
  Fairshare Algorithm", "Fair Tree"]. The configured share of an account = RawShares ÷ Σ
  RawShares over the sibling accounts the registry maps in that cluster (the root user
  association and unmapped accounts are left out); the registry share of the same account =
  its team's share (split evenly over the team's accounts) ÷ Σ over those accounts.
- Kueue: a ClusterQueue's configured share = its GPU ``nominalQuota`` ÷ Σ over its cohort's
  ClusterQueues that serve registry teams; the registry share = Σ shares of its teams (found
  through their LocalQueues) ÷ the same sum over the cohort.
- drift = configured − registry (share fractions); relative drift = drift ÷ registry; a row is
  ``drifted`` when |relative drift| > tolerance (default :data:`DRIFT_TOLERANCE`, as the
  recommendation rules).

:mod:`metrics.recommendations.registry_drift` turns the same rows into ``sacctmgr`` commands and
ClusterQueue patches.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from metrics.schema import UTC_DATETIME

__all__ = [
    "DRIFT_TOLERANCE",
    "REGISTRY_DRIFT_SCHEMA",
    "SCHEDULER_FAIRSHARE_SCHEMA",
    "account_shares",
    "cluster_queue_teams",
    "kueue_quota_shares",
    "latest_snapshot",
    "registry_drift",
    "scheduler_fairshare",
    "slurm_share_drift",
]

#: Relative drift |configured − registry| ÷ registry above which a row is flagged.
DRIFT_TOLERANCE = 0.2

_UTC = UTC_DATETIME

#: :func:`registry_drift` output.
REGISTRY_DRIFT_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "scheduler": pl.String(),
    "team": pl.String(),
    "objects": pl.String(),
    "cohort": pl.String(),
    "resource": pl.String(),
    "configured_value": pl.Float64(),
    "configured_share": pl.Float64(),
    "registry_share": pl.Float64(),
    "drift": pl.Float64(),
    "relative_drift": pl.Float64(),
    "tolerance": pl.Float64(),
    "drifted": pl.Boolean(),
    "snapshot_at": _UTC,
}

#: :func:`scheduler_fairshare` output.
SCHEDULER_FAIRSHARE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "scheduler": pl.String(),
    "object": pl.String(),
    "team": pl.String(),
    "cohort": pl.String(),
    "raw_shares": pl.Int64(),
    "norm_shares": pl.Float64(),
    "raw_usage": pl.Float64(),
    "effective_usage": pl.Float64(),
    "level_fs": pl.Float64(),
    "fair_share": pl.Float64(),
    "users": pl.Int64(),
    "nominal_gpus": pl.Float64(),
    "usage_gpus": pl.Float64(),
    "borrowed_gpus": pl.Float64(),
    "usage_of_nominal": pl.Float64(),
    "snapshot_at": _UTC,
}


def latest_snapshot(
    frame: pl.LazyFrame, *, by: Sequence[str] = ("cluster",), order: Sequence[str] = ()
) -> pl.LazyFrame:
    """The rows of the latest snapshot per ``by``.

    Args:
        frame: snapshot rows; ``order`` columns rank snapshots (e.g. ``snapshot_at`` then
            ``ingest_id``), NULL ranking lowest. Columns of ``order`` that are absent are skipped.
        by: the grouping (default per cluster).
        order: the ranking columns, most significant first.

    Returns:
        The rows whose ``order`` values are the group's maximum, lexicographically.
    """
    schema = frame.collect_schema()
    keys = list(by)
    for col in order:
        if col not in schema.names():
            continue
        key = pl.col(col)
        if isinstance(schema[col], pl.Datetime):
            key = key.dt.convert_time_zone("UTC") if schema[col].time_zone else key  # type: ignore[attr-defined]
        # NULL ranks lowest: the filter keeps NULL rows only when the whole group is NULL
        top = key.max().over(keys)
        frame = frame.filter((key == top).fill_null(False) | top.is_null())
    return frame


def account_shares(
    teams: pl.DataFrame | pl.LazyFrame, mapping: pl.DataFrame | pl.LazyFrame, kind: str
) -> pl.LazyFrame:
    """``key, team, share``: a team's registry share split evenly over its keys of ``kind``.

    Args:
        teams: registry ``team, share`` (fraction).
        mapping: registry ``kind, key, team``.
        kind: ``slurm_account``, ``k8s_namespace`` or ``k8s_local_queue``.

    Returns:
        One row per key of ``kind`` whose team has a share, sorted by key.
    """
    keys = mapping.lazy().filter(pl.col("kind") == kind).select("key", "team").unique()
    return (
        keys.join(teams.lazy().select("team", "share"), on="team", how="inner")
        .with_columns((pl.col("share") / pl.len().over("team")).alias("share"))
        .sort("key")
    )


def slurm_share_drift(accounts: pl.LazyFrame, sshare: pl.LazyFrame) -> pl.LazyFrame:
    """Per cluster and mapped account: registry vs ``sshare`` shares, both normalised.

    Args:
        accounts: :func:`account_shares` for ``slurm_account``.
        sshare: one ``sshare -a -l -P`` snapshot per cluster (``raw.sshare``: ``cluster,
            account, user_name, raw_shares, norm_shares``, optionally ``snapshot_at``); account
            rows are those with NULL ``user_name``; ``root`` is left out; of an account listed
            twice the last row counts.

    Returns:
        ``cluster, account, team, share, raw_shares, norm_shares, registry_normalised_share,
        scheduler_normalised_share`` (+ ``snapshot_at`` when given), sorted by cluster and
        account; accounts of teams with share 0 are left out. ``registry_normalised_share`` =
        share ÷ Σ share, ``scheduler_normalised_share`` = RawShares ÷ Σ RawShares (0 when the
        sum is 0), sums over the cluster's rows.
    """
    rows = (
        sshare.filter(
            pl.col("user_name").is_null()
            & (pl.col("account") != "root")
            & pl.col("raw_shares").is_not_null()
        )
        .unique(["cluster", "account"], keep="last")
        .join(accounts, left_on="account", right_on="key", how="inner")
        .filter(pl.col("share") > 0)
    )
    total_raw = pl.col("raw_shares").sum().over("cluster")
    cols = ["cluster", "account", "team", "share", "raw_shares", "norm_shares"]
    extra = ["snapshot_at"] if "snapshot_at" in sshare.collect_schema().names() else []
    return (
        rows.select(*cols, *extra)
        .with_columns(
            (pl.col("share") / pl.col("share").sum().over("cluster")).alias(
                "registry_normalised_share"
            ),
            pl.when(total_raw > 0)
            .then(pl.col("raw_shares") / total_raw)
            .otherwise(0.0)
            .alias("scheduler_normalised_share"),
        )
        .sort("cluster", "account")
    )


def cluster_queue_teams(
    local_queues: pl.DataFrame | pl.LazyFrame, mapping: pl.DataFrame | pl.LazyFrame
) -> pl.LazyFrame:
    """``cluster_queue, team``: the registry teams each ClusterQueue serves.

    A LocalQueue's team is its ``k8s_local_queue`` registry entry, else its namespace's
    ``k8s_namespace`` entry; LocalQueues of neither are left out.

    Args:
        local_queues: ``namespace, name, cluster_queue`` (one row per LocalQueue).
        mapping: registry ``kind, key, team``.

    Returns:
        Distinct ``cluster_queue, team`` pairs, sorted.
    """
    m = mapping.lazy()
    by_lq = (
        m.filter(pl.col("kind") == "k8s_local_queue")
        .select(pl.col("key").alias("name"), pl.col("team").alias("_lq_team"))
        .unique("name", keep="last", maintain_order=True)
    )
    by_ns = (
        m.filter(pl.col("kind") == "k8s_namespace")
        .select(pl.col("key").alias("namespace"), pl.col("team").alias("_ns_team"))
        .unique("namespace", keep="last", maintain_order=True)
    )
    return (
        local_queues.lazy()
        .select("namespace", "name", "cluster_queue")
        .join(by_lq, on="name", how="left")
        .join(by_ns, on="namespace", how="left")
        .select("cluster_queue", pl.coalesce("_lq_team", "_ns_team").alias("team"))
        .filter(pl.col("team").is_not_null() & pl.col("cluster_queue").is_not_null())
        .unique()
        .sort("cluster_queue", "team")
    )


def kueue_quota_shares(
    quotas: pl.LazyFrame, cq_teams: pl.LazyFrame, teams: pl.DataFrame | pl.LazyFrame
) -> pl.LazyFrame:
    """Per cohort, ClusterQueue and GPU resource: nominal quota and registry weight, as shares.

    Args:
        quotas: one row per ClusterQueue × flavor × GPU resource: ``cohort, cluster_queue,
            resource, nominal_quota`` (GPUs; ClusterQueues without a cohort are left out).
        cq_teams: :func:`cluster_queue_teams` output.
        teams: registry ``team, share``.

    Returns:
        ``cohort, cluster_queue, resource, quota, weight, teams, cohort_quota, cohort_weight,
        configured_share, registry_share`` sorted by cohort, resource, cluster_queue: quota =
        Σ nominal quota over flavors; weight = Σ registry shares of the ClusterQueue's teams
        (``teams``: their sorted list); ClusterQueues with weight 0 are left out, and the cohort
        sums are over the rest; configured_share = quota ÷ cohort_quota (NULL when 0),
        registry_share = weight ÷ cohort_weight.
    """
    weights = (
        cq_teams.join(teams.lazy().select("team", "share"), on="team", how="left")
        .group_by("cluster_queue")
        .agg(
            pl.col("share").fill_null(0.0).sum().alias("weight"),
            pl.col("team").sort().alias("teams"),
        )
    )
    per_cq = (
        quotas.filter(pl.col("cohort").is_not_null())
        .group_by("cohort", "cluster_queue", "resource")
        .agg(pl.col("nominal_quota").sum().alias("quota"))
        .join(weights, on="cluster_queue", how="left")
        .with_columns(pl.col("weight").fill_null(0.0))
        .filter(pl.col("weight") > 0)
        .sort("cohort", "resource", "cluster_queue")
    )
    grp = ["cohort", "resource"]
    return per_cq.with_columns(
        pl.col("quota").sum().over(grp).alias("cohort_quota"),
        pl.col("weight").sum().over(grp).alias("cohort_weight"),
    ).with_columns(
        pl.when(pl.col("cohort_quota") > 0)
        .then(pl.col("quota") / pl.col("cohort_quota"))
        .alias("configured_share"),
        (pl.col("weight") / pl.col("cohort_weight")).alias("registry_share"),
    )


def _flag(frame: pl.LazyFrame, tolerance: float) -> pl.LazyFrame:
    return (
        frame.with_columns(
            (pl.col("configured_share") - pl.col("registry_share")).alias("drift"),
        )
        .with_columns(
            pl.when(pl.col("registry_share") > 0)
            .then(pl.col("drift") / pl.col("registry_share"))
            .alias("relative_drift"),
            pl.lit(tolerance, dtype=pl.Float64()).alias("tolerance"),
        )
        .with_columns(
            (pl.col("relative_drift").abs() > tolerance).fill_null(False).alias("drifted")
        )
    )


def registry_drift(
    slurm: pl.LazyFrame | None = None,
    kueue: pl.LazyFrame | None = None,
    *,
    tolerance: float = DRIFT_TOLERANCE,
) -> pl.LazyFrame:
    """Per cluster and team: the registry's share vs the scheduler's configured share.

    Args:
        slurm: :func:`slurm_share_drift` output (with ``snapshot_at``, else NULL); a team's
            accounts in a cluster are summed into one row.
        kueue: :func:`kueue_quota_shares` output with a ``cluster`` column (and optionally
            ``snapshot_at``); one row per ClusterQueue and GPU resource, ``team`` = its teams
            joined by ``, ``.
        tolerance: relative drift above which ``drifted`` is true.

    Returns:
        :data:`REGISTRY_DRIFT_SCHEMA` rows: ``configured_value`` = Σ RawShares (Slurm) or the
        nominal GPUs (Kueue); ``configured_share``/``registry_share`` fractions of the cluster's
        mapped accounts or of the cohort; ``drift`` = configured − registry;
        ``relative_drift`` = drift ÷ registry_share; sorted by cluster, scheduler, team.
    """
    parts: list[pl.LazyFrame] = []
    if slurm is not None:
        s = (
            slurm
            if "snapshot_at" in slurm.collect_schema().names()
            else slurm.with_columns(pl.lit(None, dtype=_UTC).alias("snapshot_at"))
        )
        parts.append(
            s.group_by("cluster", "team").agg(
                pl.lit("slurm").alias("scheduler"),
                pl.col("account").sort().str.join(", ").alias("objects"),
                pl.lit(None, dtype=pl.String()).alias("cohort"),
                pl.lit(None, dtype=pl.String()).alias("resource"),
                pl.col("raw_shares").sum().cast(pl.Float64).alias("configured_value"),
                pl.col("scheduler_normalised_share").sum().alias("configured_share"),
                pl.col("registry_normalised_share").sum().alias("registry_share"),
                pl.col("snapshot_at").max().dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
            )
        )
    if kueue is not None:
        k = (
            kueue
            if "snapshot_at" in kueue.collect_schema().names()
            else kueue.with_columns(pl.lit(None, dtype=_UTC).alias("snapshot_at"))
        )
        parts.append(
            k.select(
                "cluster",
                pl.col("teams").list.join(", ").alias("team"),
                pl.lit("kueue").alias("scheduler"),
                pl.col("cluster_queue").alias("objects"),
                "cohort",
                "resource",
                pl.col("quota").alias("configured_value"),
                "configured_share",
                "registry_share",
                pl.col("snapshot_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
            )
        )
    cols = [c for c in REGISTRY_DRIFT_SCHEMA if c not in ("drift", "relative_drift", "tolerance",
                                                           "drifted")]  # fmt: skip
    if not parts:
        return pl.LazyFrame(schema=REGISTRY_DRIFT_SCHEMA)
    both = pl.concat(
        [p.select(cols).cast({c: REGISTRY_DRIFT_SCHEMA[c] for c in cols}) for p in parts]
    )
    return (
        _flag(both, tolerance)
        .select(list(REGISTRY_DRIFT_SCHEMA))
        .sort("cluster", "scheduler", "team", "objects", "resource", nulls_last=True)
    )


def scheduler_fairshare(
    sshare: pl.LazyFrame | None,
    account_teams: pl.LazyFrame,
    cluster_queues: pl.LazyFrame | None = None,
    cq_teams: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The schedulers' own view: sshare per account, Kueue usage per ClusterQueue, with teams.

    Args:
        sshare: the latest ``sshare -a -l -P`` snapshot per cluster (``raw.sshare`` columns:
            ``cluster, account, user_name, raw_shares, norm_shares, raw_usage,
            effective_usage, level_fs, fair_share, snapshot_at``). One row per account
            (``user_name`` NULL, ``root`` left out); ``fair_share`` is the account row's
            FairShare, else (Fair Tree prints it only on user associations) the mean over the
            account's users; ``users`` = user associations under it.
        account_teams: registry ``key`` (Slurm account) → ``team``.
        cluster_queues: the latest ClusterQueue snapshot per cluster (``cluster, name, cohort,
            nominal_gpus, usage_gpus, borrowed_gpus``, optionally ``snapshot_at``; one row per
            flavor × GPU resource, summed per ClusterQueue).
        cq_teams: ``cluster_queue, team`` (:func:`cluster_queue_teams`), with ``cluster`` when
            several clusters are passed; a ClusterQueue's teams are joined by ``, ``.

    Returns:
        :data:`SCHEDULER_FAIRSHARE_SCHEMA` rows; ``scheduler`` = ``slurm`` or ``kueue``;
        ``usage_of_nominal`` = usage_gpus ÷ nominal_gpus (NULL when 0); a Slurm account or
        ClusterQueue the registry does not map has team ``unattributed``. ``raw_usage`` is
        Slurm's billing-weighted decayed usage, not GPU-seconds.
    """
    parts: list[pl.LazyFrame] = []
    teams = account_teams.select(pl.col("key").alias("account"), "team").unique("account")
    if sshare is not None:
        users = (
            sshare.filter(pl.col("user_name").is_not_null() & (pl.col("account") != "root"))
            .group_by("cluster", "account")
            .agg(pl.len().cast(pl.Int64).alias("users"), pl.col("fair_share").mean().alias("_ufs"))
        )
        parts.append(
            sshare.filter(pl.col("user_name").is_null() & (pl.col("account") != "root"))
            .unique(["cluster", "account"], keep="last")
            .join(users, on=["cluster", "account"], how="left")
            .join(teams, on="account", how="left")
            .select(
                "cluster",
                pl.lit("slurm").alias("scheduler"),
                pl.col("account").alias("object"),
                pl.col("team").fill_null("unattributed"),
                pl.lit(None, dtype=pl.String()).alias("cohort"),
                "raw_shares",
                "norm_shares",
                "raw_usage",
                "effective_usage",
                "level_fs",
                pl.coalesce("fair_share", "_ufs").alias("fair_share"),
                pl.col("users").fill_null(0),
                *[pl.lit(None, dtype=pl.Float64()).alias(c) for c in
                  ("nominal_gpus", "usage_gpus", "borrowed_gpus", "usage_of_nominal")],
                pl.col("snapshot_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
            )
        )  # fmt: skip
    if cluster_queues is not None:
        cqt = (
            cq_teams
            if cq_teams is not None
            else pl.LazyFrame(schema={"cluster_queue": pl.String(), "team": pl.String()})
        )
        on = (
            ["cluster", "cluster_queue"]
            if "cluster" in cqt.collect_schema().names()
            else ["cluster_queue"]
        )
        cqt = cqt.group_by(on).agg(pl.col("team").sort().str.join(", "))
        names = cluster_queues.collect_schema().names()
        snap = (
            pl.col("snapshot_at").max().dt.convert_time_zone("UTC").dt.cast_time_unit("us")
            if "snapshot_at" in names
            else pl.lit(None, dtype=_UTC).alias("snapshot_at")
        )
        parts.append(
            cluster_queues.group_by("cluster", "name")
            .agg(
                pl.col("cohort").drop_nulls().first(),
                pl.col("nominal_gpus").sum(),
                pl.col("usage_gpus").sum(),
                pl.col("borrowed_gpus").sum(),
                snap,
            )
            .rename({"name": "cluster_queue"})
            .join(cqt, on=on, how="left")
            .rename({"cluster_queue": "name"})
            .select(
                "cluster",
                pl.lit("kueue").alias("scheduler"),
                pl.col("name").alias("object"),
                pl.col("team").fill_null("unattributed"),
                "cohort",
                *[pl.lit(None, dtype=SCHEDULER_FAIRSHARE_SCHEMA[c]).alias(c) for c in
                  ("raw_shares", "norm_shares", "raw_usage", "effective_usage", "level_fs",
                   "fair_share", "users")],
                "nominal_gpus",
                "usage_gpus",
                "borrowed_gpus",
                pl.when(pl.col("nominal_gpus") > 0)
                .then(pl.col("usage_gpus") / pl.col("nominal_gpus"))
                .alias("usage_of_nominal"),
                "snapshot_at",
            )
        )  # fmt: skip
    if not parts:
        return pl.LazyFrame(schema=SCHEDULER_FAIRSHARE_SCHEMA)
    cols = list(SCHEDULER_FAIRSHARE_SCHEMA)
    return pl.concat(
        [p.select(cols).cast(SCHEDULER_FAIRSHARE_SCHEMA) for p in parts]  # type: ignore[arg-type]
    ).sort("cluster", "scheduler", "object")
