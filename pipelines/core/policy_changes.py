"""The policy-change ledger: who changed which scheduler setting, when, from what to what.

Pure polars, frames in and frames out. Three Slurm sources, one row per object and key changed
(:data:`POLICY_CHANGE_SCHEMA`, the ``policy_changes`` view):

- :func:`transaction_changes`: associations, QOS and limits from ``sacctmgr list
  transactions`` (``raw.slurm_transactions``). slurmdbd records the actor and the time; the old
  value is the previous transaction's value for that object and key (an ``Add`` included),
  NULL where no earlier transaction was loaded. TRES ids in limits are named through
  ``sacctmgr show tres`` (``raw.slurm_tres``): ``grp_tres='1001=4'`` is key
  ``grp_tres[gres/gpu]``, value ``4``, one row per TRES.
- :func:`config_changes`: ``slurm.conf`` settings, the diff of consecutive ``scontrol show
  config`` snapshots (``raw.slurm_config``). Slurm records neither who ran ``scontrol
  reconfigure`` nor when: ``actor`` is NULL, ``changed_at`` is the later snapshot's time and
  ``changed_after`` the earlier one's (the change happened in between).
- :func:`share_changes`: ``RawShares`` per account and user, the diff of consecutive ``sshare``
  snapshots (``raw.sshare``), dated like the configuration.

And one Kueue source: :func:`cluster_queue_changes`, a ClusterQueue's quotas and policies, the
diff of consecutive ClusterQueue snapshots (``raw.kueue_cluster_queues``), dated like the
configuration (the API server keeps no history of a spec either; ``managedFields`` name the
last writer of a field, not each change).
"""

from __future__ import annotations

import hashlib
from typing import Final

import polars as pl

from metrics.schema import UTC_DATETIME

__all__ = [
    "CONFIG_RUNTIME_KEYS",
    "POLICY_CHANGE_SCHEMA",
    "cluster_queue_changes",
    "config_changes",
    "policy_changes",
    "share_changes",
    "transaction_changes",
]

#: One row per object and key changed. ``scope`` is the kind of object (``association``,
#: ``qos``, ``account``, ``user``, ``cluster``, ``config``, ``cluster_queue``); ``object``
#: names it (``account=team-b``, ``account=team-a user=alice``, ``qos=normal``, ``slurm.conf``,
#: ``clusterqueue=team-a-cq``);
#: ``old``/``new`` are the values as text (NULL: unset, or for ``old`` unknown).
#: ``changed_after`` is NULL when ``changed_at`` is exact (a transaction), else the earlier
#: snapshot's time: the change happened in ``(changed_after, changed_at]``. ``source`` is the
#: command the row was read from.
POLICY_CHANGE_SCHEMA: dict[str, pl.DataType] = {
    "change_id": pl.String(),
    "cluster": pl.String(),
    "scheduler": pl.String(),
    "object": pl.String(),
    "key": pl.String(),
    "old": pl.String(),
    "new": pl.String(),
    "actor": pl.String(),
    "changed_at": UTC_DATETIME,
    "changed_after": UTC_DATETIME,
    "source": pl.String(),
    "scope": pl.String(),
}

SOURCE_TRANSACTIONS: Final = "sacctmgr list transactions"
SOURCE_CONFIG: Final = "scontrol show config"
SOURCE_SSHARE: Final = "sshare"
SOURCE_KUEUE: Final = "kubectl get clusterqueues"

#: ClusterQueue columns compared per flavor and resource (key ``nominalQuota[flavor/resource]``).
_CQ_QUOTAS: Final = {"nominal_quota": "nominalQuota", "borrowing_limit": "borrowingLimit",
                     "lending_limit": "lendingLimit"}  # fmt: skip
#: ClusterQueue columns compared once per queue.
_CQ_POLICIES: Final = {
    "cohort": "cohort", "queueing_strategy": "queueingStrategy",
    "preemption_within_cq": "preemption.withinClusterQueue",
    "reclaim_within_cohort": "preemption.reclaimWithinCohort",
    "fair_sharing_weight": "fairSharing.weight",
}  # fmt: skip

#: ``Info`` keys that identify an object or are bookkeeping, not a setting.
_IDENTITY_KEYS: Final = frozenset(
    {"mod_time", "creation_time", "acct", "user", "partition", "id", "id_assoc", "lft", "rgt",
     "lineage"}
)  # fmt: skip
#: ``Modify Clusters`` keys slurmctld writes each time it registers with slurmdbd.
_REGISTRATION_KEYS: Final = frozenset(
    {"control_host", "control_port", "last_port", "rpc_version", "dimensions",
     "plugin_id_select", "flags"}
)  # fmt: skip
#: ``scontrol show config`` lines that are the controller's state, not configuration.
CONFIG_RUNTIME_KEYS: Final = frozenset({"BOOT_TIME", "NEXT_JOB_ID", "HASH_VAL", "SLURM_CONF"})
#: Settings that are comma lists of ``name[=value]`` items: one key per item
#: (``SchedulerParameters:bf_interval``; an item without ``=`` has value ``true``).
_LIST_SETTINGS: Final = ("SchedulerParameters", "SlurmctldParameters")


def transaction_changes(transactions: pl.DataFrame, tres: pl.DataFrame) -> pl.DataFrame:
    """Association, QOS and limit changes from ``sacctmgr list transactions`` rows.

    Args:
        transactions: ``raw.slurm_transactions`` rows (``cluster, changed_at, verb,
            object_kind, actor, target, key, value, assoc_account, assoc_user, line_no``).
        tres: ``raw.slurm_tres`` rows (``cluster, tres_id, tres``), to name TRES ids.

    Returns:
        :data:`POLICY_CHANGE_SCHEMA` rows for every ``Modify``/``Remove`` key whose value
        differs from the previous one (``Add`` rows only give the previous value).
    """
    if transactions.height == 0:
        return _empty()
    tx = transactions.unique(
        ["cluster", "changed_at", "verb", "object_kind", "target", "key", "value"],
        keep="first", maintain_order=True,
    ).filter(
        ~pl.col("key").is_in(list(_IDENTITY_KEYS)).fill_null(False)
        & ~((pl.col("object_kind") == "cluster") & pl.col("key").is_in(list(_REGISTRATION_KEYS)))
    )  # fmt: skip
    named = tx.join(_association_names(transactions), on=["cluster", "target"], how="left")
    objects = named.with_columns(
        pl.when(pl.col("object_kind") == "association")
        .then(
            pl.coalesce(
                "assoc_name",
                _assoc_label(pl.col("assoc_account"), pl.col("assoc_user"), pl.lit(None)),
                pl.lit("id_assoc=") + pl.col("target"),
            )
        )
        .otherwise(pl.col("object_kind") + pl.lit("=") + pl.col("target"))
        .alias("object")
    )
    expanded = _expand_tres(objects, tres)
    ordered = expanded.sort("cluster", "object", "key", "changed_at", "line_no").with_columns(
        pl.col("value").shift(1).over("cluster", "object_kind", "object", "key").alias("old")
    )
    changed = ordered.filter(
        (pl.col("verb") != "add") & (pl.col("old").is_null() | (pl.col("old") != pl.col("value")))
    )
    return _finish(
        changed.select(
            "cluster", "object", "key", "old", pl.col("value").alias("new"), "actor",
            "changed_at", pl.lit(None, dtype=UTC_DATETIME).alias("changed_after"),
            pl.lit(SOURCE_TRANSACTIONS).alias("source"), pl.col("object_kind").alias("scope"),
        )
    )  # fmt: skip


def _assoc_label(account: pl.Expr, user: pl.Expr, partition: pl.Expr) -> pl.Expr:
    """``account=A``, ``account=A user=U``, ``… partition=P`` (NULL without an account)."""
    return pl.concat_str(
        pl.lit("account=") + account,
        pl.when(user.is_not_null() & (user != ""))
        .then(pl.lit(" user=") + user)
        .otherwise(pl.lit("")),
        pl.when(partition.is_not_null() & (partition != ""))
        .then(pl.lit(" partition=") + partition)
        .otherwise(pl.lit("")),
    )


def _association_names(transactions: pl.DataFrame) -> pl.DataFrame:
    """``cluster, target, assoc_name``: each association id's name from its ``Add``."""
    adds = transactions.filter(
        (pl.col("object_kind") == "association")
        & (pl.col("verb") == "add")
        & pl.col("key").is_in(["acct", "user", "partition"])
    )
    if adds.height == 0:
        return pl.DataFrame(
            schema={"cluster": pl.String(), "target": pl.String(), "assoc_name": pl.String()}
        )
    wide = adds.pivot(
        on="key", index=["cluster", "target"], values="value", aggregate_function="last"
    )
    for col in ("acct", "user", "partition"):
        if col not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.String()).alias(col))
    return wide.select(
        "cluster", "target",
        _assoc_label(pl.col("acct"), pl.col("user"), pl.col("partition")).alias("assoc_name"),
    )  # fmt: skip


def _expand_tres(frame: pl.DataFrame, tres: pl.DataFrame) -> pl.DataFrame:
    """TRES list values (``1=64,1001=16``) as one row per TRES: key ``grp_tres[gres/gpu]``."""
    is_tres = pl.col("key").str.contains("tres").fill_null(False)
    plain = frame.filter(~is_tres)
    lists = frame.filter(is_tres & pl.col("value").is_not_null() & (pl.col("value") != ""))
    if lists.height == 0:
        return plain
    items = (
        lists.with_columns(pl.col("value").str.split(",").alias("item"))
        .explode("item")
        .with_columns(
            pl.col("item").str.extract(r"^(\d+)=", 1).cast(pl.Int64, strict=False).alias("tres_id"),
            pl.col("item").str.extract(r"^[^=]+=(.*)$", 1).alias("tres_value"),
        )
    )
    by_cluster = tres.select("cluster", "tres_id", pl.col("tres").alias("tres_c")).unique(
        ["cluster", "tres_id"], keep="last"
    )
    by_id = tres.select("tres_id", pl.col("tres").alias("tres_any")).unique("tres_id", keep="last")
    named = items.join(by_cluster, on=["cluster", "tres_id"], how="left").join(
        by_id, on="tres_id", how="left"
    )
    unreadable = named["tres_id"].is_null()
    out = named.with_columns(
        pl.when(pl.col("tres_id").is_null())
        .then(pl.col("key"))
        .otherwise(
            pl.col("key")
            + pl.lit("[")
            + pl.coalesce("tres_c", "tres_any", pl.col("tres_id").cast(pl.String()))
            + pl.lit("]")
        )
        .alias("key"),
        pl.when(pl.col("tres_id").is_null())
        .then(pl.col("value"))
        .otherwise(pl.col("tres_value"))
        .alias("value"),
    )
    out = pl.concat([out.filter(~unreadable), out.filter(unreadable).unique(keep="first")])
    return pl.concat([plain, out.select(plain.columns)])


def config_changes(config: pl.DataFrame) -> pl.DataFrame:
    """``slurm.conf`` changes: the diff of consecutive ``scontrol show config`` snapshots.

    Args:
        config: ``raw.slurm_config`` rows (``cluster, snapshot_at, key, value``); rows without
            ``snapshot_at`` are left out. :data:`CONFIG_RUNTIME_KEYS` are not settings and are
            left out; ``SchedulerParameters`` and ``SlurmctldParameters`` are compared item by
            item (key ``SchedulerParameters:bf_window``).

    Returns:
        :data:`POLICY_CHANGE_SCHEMA` rows, ``actor`` NULL, ``changed_after`` the earlier
        snapshot's time.
    """
    rows = config.filter(
        pl.col("snapshot_at").is_not_null() & ~pl.col("key").is_in(list(CONFIG_RUNTIME_KEYS))
    ).select("cluster", "snapshot_at", "key", "value")
    listed = pl.col("key").is_in(list(_LIST_SETTINGS))
    items = (
        rows.filter(listed & pl.col("value").is_not_null())
        .with_columns(pl.col("value").str.split(",").alias("item"))
        .explode("item")
        .filter(pl.col("item").str.strip_chars() != "")
        .select(
            "cluster", "snapshot_at",
            (pl.col("key") + pl.lit(":") + pl.col("item").str.extract(r"^([^=]+)", 1)).alias("key"),
            pl.coalesce(pl.col("item").str.extract(r"^[^=]+=(.*)$", 1), pl.lit("true"))
            .alias("value"),
        )
    )  # fmt: skip
    settings = pl.concat([rows.filter(~listed), items])
    diff = snapshot_diff(settings.with_columns(pl.lit("slurm.conf").alias("object")))
    return _finish(
        diff.with_columns(
            pl.lit(None, dtype=pl.String()).alias("actor"),
            pl.lit(SOURCE_CONFIG).alias("source"),
            pl.lit("config").alias("scope"),
        )
    )


def share_changes(sshare: pl.DataFrame) -> pl.DataFrame:
    """``RawShares`` changes: the diff of consecutive ``sshare`` snapshots per association.

    Args:
        sshare: ``raw.sshare`` rows with ``snapshot_at`` filled (``cluster, account,
            user_name, raw_shares, snapshot_at``); rows without it are left out.

    Returns:
        :data:`POLICY_CHANGE_SCHEMA` rows, key ``RawShares``, ``actor`` NULL, ``changed_after``
        the earlier snapshot's time (sshare records no change, only the state).
    """
    rows = sshare.filter(pl.col("snapshot_at").is_not_null()).select(
        "cluster",
        "snapshot_at",
        _assoc_label(pl.col("account"), pl.col("user_name"), pl.lit(None)).alias("object"),
        pl.lit("RawShares").alias("key"),
        pl.col("raw_shares").cast(pl.String()).alias("value"),
    )
    diff = snapshot_diff(rows)
    return _finish(
        diff.with_columns(
            pl.lit(None, dtype=pl.String()).alias("actor"),
            pl.lit(SOURCE_SSHARE).alias("source"),
            pl.lit("association").alias("scope"),
        )
    )


def cluster_queue_changes(cluster_queues: pl.DataFrame) -> pl.DataFrame:
    """Kueue ClusterQueue spec changes: the diff of consecutive ClusterQueue snapshots.

    Args:
        cluster_queues: ``raw.kueue_cluster_queues`` rows (one per ClusterQueue × flavor × GPU
            resource, with ``snapshot_at``); rows without ``snapshot_at`` are left out.

    Returns:
        :data:`POLICY_CHANGE_SCHEMA` rows, ``scheduler`` ``kueue``, ``scope``
        ``cluster_queue``, ``object`` ``clusterqueue=<name>``: ``nominalQuota``,
        ``borrowingLimit`` and ``lendingLimit`` per ``[flavor/resource]`` (NULL: no limit), and
        ``cohort``, ``queueingStrategy``, ``preemption.withinClusterQueue``,
        ``preemption.reclaimWithinCohort``, ``fairSharing.weight``; ``actor`` NULL,
        ``changed_after`` the earlier snapshot's time. A ClusterQueue absent from one of two
        snapshots shows as its values going to or coming from NULL.
    """
    rows = cluster_queues.filter(pl.col("snapshot_at").is_not_null())
    base = [
        pl.col("cluster"),
        pl.col("snapshot_at"),
        (pl.lit("clusterqueue=") + pl.col("name")).alias("object"),
    ]
    quotas = [
        rows.select(
            *base,
            (pl.lit(f"{key}[") + pl.col("flavor").fill_null("") + pl.lit("/")
             + pl.col("resource").fill_null("") + pl.lit("]")).alias("key"),
            _number_text(pl.col(col)).alias("value"),
        )
        for col, key in _CQ_QUOTAS.items()
    ]  # fmt: skip
    policies = [
        rows.select(*base, pl.lit(key).alias("key"), _number_text(pl.col(col)).alias("value"))
        for col, key in _CQ_POLICIES.items()
    ]
    diff = snapshot_diff(pl.concat([*quotas, *policies]))
    return _finish(
        diff.with_columns(
            pl.lit(None, dtype=pl.String()).alias("actor"),
            pl.lit(SOURCE_KUEUE).alias("source"),
            pl.lit("cluster_queue").alias("scope"),
        ),
        scheduler="kueue",
    )


def _number_text(col: pl.Expr) -> pl.Expr:
    """A value as text; a whole float without its ``.0`` (a quota of 8 GPUs reads ``8``)."""
    return col.map_batches(
        lambda s: (
            pl.select(
                pl.when((s == s.floor()) & (s.abs() < 2**53))
                .then(s.cast(pl.Int64, strict=False).cast(pl.String()))
                .otherwise(s.cast(pl.String()))
            ).to_series()
            if s.dtype.is_float()
            else s.cast(pl.String())
        ),
        return_dtype=pl.String(),
    )


def snapshot_diff(rows: pl.DataFrame) -> pl.DataFrame:
    """What changed between each cluster's consecutive snapshots.

    Args:
        rows: ``cluster, snapshot_at, object, key, value`` (one row per object and key of a
            snapshot; a snapshot loaded twice counts once).

    Returns:
        ``cluster, object, key, old, new, changed_at, changed_after`` for every object and key
        whose value differs (present in only one of the two: the other side NULL).
    """
    rows = rows.unique(["cluster", "snapshot_at", "object", "key"], keep="last")
    pairs = (
        rows.select("cluster", "snapshot_at")
        .unique()
        .sort("cluster", "snapshot_at")
        .with_columns(pl.col("snapshot_at").shift(1).over("cluster").alias("changed_after"))
        .filter(pl.col("changed_after").is_not_null())
        .rename({"snapshot_at": "changed_at"})
    )
    later = rows.join(
        pairs, left_on=["cluster", "snapshot_at"], right_on=["cluster", "changed_at"]
    ).select("cluster", pl.col("snapshot_at").alias("changed_at"), "changed_after", "object",
             "key", pl.col("value").alias("new"))  # fmt: skip
    earlier = rows.join(
        pairs, left_on=["cluster", "snapshot_at"], right_on=["cluster", "changed_after"]
    ).select("cluster", "changed_at", pl.col("snapshot_at").alias("changed_after"), "object",
             "key", pl.col("value").alias("old"))  # fmt: skip
    on = ["cluster", "changed_at", "changed_after", "object", "key"]
    both = later.join(earlier, on=on, how="full", coalesce=True)
    return both.filter(pl.col("old").ne_missing(pl.col("new"))).select(
        "cluster", "object", "key", "old", "new", "changed_at", "changed_after"
    )


def policy_changes(*parts: pl.DataFrame) -> pl.DataFrame:
    """The ledger: the parts (each :data:`POLICY_CHANGE_SCHEMA`) in one frame, oldest first."""
    frames = [p for p in parts if p.height]
    if not frames:
        return _empty()
    return pl.concat(frames).sort("changed_at", "cluster", "source", "object", "key")


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=POLICY_CHANGE_SCHEMA)


def _change_id(row: str) -> str:
    return hashlib.sha256(row.encode("utf-8")).hexdigest()[:16]


def _finish(frame: pl.DataFrame, scheduler: str = "slurm") -> pl.DataFrame:
    """Add ``scheduler`` and ``change_id`` (a hash of what the row says, so a rebuild keeps
    it) and order the columns as :data:`POLICY_CHANGE_SCHEMA`."""
    if frame.height == 0:
        return _empty()
    keyed = frame.with_columns(
        pl.lit(scheduler).alias("scheduler"),
        pl.concat_str(
            [pl.col(c).cast(pl.String()).fill_null("\x00") for c in
             ("cluster", "source", "scope", "object", "key", "old", "new", "changed_at")],
            separator="|",
        ).map_elements(_change_id, return_dtype=pl.String()).alias("change_id"),
    )  # fmt: skip
    return keyed.select([pl.col(c).cast(t) for c, t in POLICY_CHANGE_SCHEMA.items()])
