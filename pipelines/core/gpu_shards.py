"""Slurm GPU shards (``gres/shard``) as fractions of a GPU. Pure polars.

Slurm's sharding (Slurm ≥ 22.05; SchedMD, *Generic Resource (GRES) Scheduling*, "Sharding")
lets several jobs share one GPU without fencing them: a node's shards (slurm.conf
``Gres=gpu:2,shard:64``, ``scontrol show node``'s ``Gres=gpu:nvidia_gb10:1,shard:nvidia_gb10:80``)
are spread over its GPUs, evenly unless gres.conf gives a GPU's ``File=`` a ``Count`` of its own,
and a GPU is allocated either as ``gres/gpu`` or as shards, never both. A job's AllocTRES names
its shards (``gres/shard:nvidia_gb10=40,gres/shard=40``) and no ``gres/gpu``, so sacct alone reads
it as a CPU-only job.

The rule (METRICS.md "Units and identities"): a job holding shards and no GPU holds, on each of
its nodes, its shards ÷ its nodes (spread evenly, as a job's GPUs are) divided by the node's
shards per GPU (the node's shards ÷ its GPUs, from its latest ``scontrol show node`` state); its
GPUs are the sum over its nodes. Where a node's shard count is not known the job keeps 0 GPUs
and is counted in the data-quality finding ``gpu_shards_without_node_state``. A never-started
job has no node yet: its requested shards count where its cluster's nodes are sharded alike
(:func:`pending_shard_gpus`).
"""

from __future__ import annotations

import polars as pl

__all__ = [
    "latest_gpus_per_shard",
    "node_gpus_per_shard",
    "node_shard_states",
    "pending_shard_gpus",
    "shard_gpus",
    "tres_shards",
]

_NUMBER = r"\d+(?:\.\d+)?"
_UNTYPED_RE = rf"(?:^|,)gres/shard=({_NUMBER})(?:,|$)"
_TYPED_RE = rf"(?:^|,)gres/shard:[^=,]+={_NUMBER}"
#: A shard item of a node's ``Gres=`` value: ``shard[:TYPE]:N[(S:…)]``.
_NODE_ITEM_RE = r"(?:^|,)shard(?::[^:,()]+)*?:\d+"


def tres_shards(tres: pl.Expr) -> pl.Expr:
    """The GPU shards an AllocTRES / ReqTRES string names (Float64).

    The untyped ``gres/shard=N`` wins; without it the typed ``gres/shard:TYPE=N`` items are
    summed (as :func:`pipelines.slurm._sacct_values.gpus_from_tres` counts GPUs).

    Args:
        tres: e.g. ``billing=10,cpu=10,gres/shard:nvidia_gb10=40,gres/shard=40,mem=50G,node=1``.

    Returns:
        The shard count (40.0 here); 0.0 for a string without shards (``""`` too); NULL for NULL.
    """
    # the regexes read only the strings that name a shard (on 2M strings without one: 0.2 s
    # against 0.26-0.72 s for reading them all)
    has = tres.str.contains("gres/shard", literal=True)
    named = pl.when(has).then(tres)
    untyped = named.str.extract(_UNTYPED_RE, 1).cast(pl.Float64)
    typed = (
        named.str.extract_all(_TYPED_RE)
        .list.eval(pl.element().str.extract(rf"=({_NUMBER})$", 1).cast(pl.Float64))
        .list.sum()
    )
    return (
        pl.when(has)
        .then(pl.coalesce(untyped, typed, pl.lit(0.0)))
        .when(tres.is_not_null())
        .then(pl.lit(0.0))
    )


def _node_shards() -> pl.Expr:
    """The shards a node's ``Gres=`` value names (Float64: the sum of its shard items)."""
    return (
        pl.col("gres")
        .str.extract_all(_NODE_ITEM_RE)
        .list.eval(pl.element().str.extract(r":(\d+)$", 1).cast(pl.Float64))
        .list.sum()
    )


def node_gpus_per_shard(nodes: pl.DataFrame) -> pl.DataFrame:
    """Each node's GPUs per shard, from its ``scontrol show node`` state.

    Args:
        nodes: ``cluster, host, gpus, gres``: one row per node (its latest state), ``gpus`` as
            :func:`pipelines.slurm.gres_gpus` counts them, ``gres`` the node's ``Gres=`` value
            (``gpu:nvidia_gb10:1,shard:nvidia_gb10:80``; a shard item's count is the node's
            total over its GPUs).

    Returns:
        ``cluster, host, gpus_per_shard`` (Float64: GPUs ÷ shards, 1/80 here), only the nodes
        with both GPUs and shards.
    """
    return (
        nodes.select(
            "cluster", "host", pl.col("gpus").cast(pl.Float64), _node_shards().alias("_shards")
        )
        .filter((pl.col("gpus") > 0) & (pl.col("_shards") > 0))
        .select("cluster", "host", (pl.col("gpus") / pl.col("_shards")).alias("gpus_per_shard"))
        .unique(["cluster", "host"], keep="last", maintain_order=True)
    )


def node_shard_states(nodes: pl.DataFrame) -> pl.DataFrame:
    """Each node's GPUs per shard over time, from its dated ``scontrol show node`` states.

    Args:
        nodes: ``cluster, host, gpus, gres, snapshot_at`` (``sql/analytics/slurm_node_shards.sql``:
            the states of each node that ever named shards, at most one per ``snapshot_at``,
            ordered by ``cluster, host, snapshot_at`` with the undated, NULL, first); ``gpus`` and
            ``gres`` as :func:`node_gpus_per_shard` reads them.

    Returns:
        ``cluster, host, snapshot_at, gpus_per_shard`` (Float64: GPUs ÷ shards; NULL where the
        state names no shard or no GPU), same rows and order: what :func:`shard_gpus` looks up
        by each attempt's start, and :func:`latest_gpus_per_shard` reduces to the latest state.
    """
    shards = _node_shards()
    gpus = pl.col("gpus").cast(pl.Float64)
    return nodes.select(
        "cluster",
        "host",
        "snapshot_at",
        pl.when((gpus > 0) & (shards > 0)).then(gpus / shards).alias("gpus_per_shard"),
    )


def latest_gpus_per_shard(states: pl.DataFrame) -> pl.DataFrame:
    """Each node's GPUs per shard in its latest state (the last row of the node in
    :func:`node_shard_states`' order: the latest ``snapshot_at``, an undated state older than
    every dated one), only the nodes whose latest state names shards (a node unsharded since is
    left out, whatever an earlier state said).

    Args:
        states: :func:`node_shard_states`' ``cluster, host, snapshot_at, gpus_per_shard``.

    Returns:
        ``cluster, host, gpus_per_shard``, one row per node (:func:`node_gpus_per_shard`'s shape).
    """
    return (
        states.unique(["cluster", "host"], keep="last", maintain_order=True)
        .filter(pl.col("gpus_per_shard").is_not_null())
        .select("cluster", "host", "gpus_per_shard")
    )


def shard_gpus(attempts: pl.DataFrame, gpus_per_shard: pl.DataFrame) -> pl.DataFrame:
    """``attempts`` with the GPUs of those that hold shards and no GPU.

    An attempt with ``gpus`` 0 and ``shards`` > 0 whose nodes all have a known shard count
    (``gpus_per_shard``) gets ``gpus`` = Σ over its nodes of (``shards`` ÷ its node count) ×
    the node's GPUs per shard, and ``gpu_s`` = ``gpus`` × ``run_s``; where ``req_gpus`` is 0
    and ``req_shards`` > 0, ``req_gpus`` is its requested shards counted alike. Every other row
    is left as it is: an attempt with GPUs (``gres/gpu``) is never given its shards on top, and
    one with a node of unknown shard count keeps 0 GPUs (none of its nodes is guessed).

    With dated node states (``gpus_per_shard`` has ``snapshot_at``), each node of an attempt
    counts by its state in effect at the attempt's ``start_at``: its latest state naming shards
    with ``snapshot_at`` ≤ ``start_at`` (an undated state, NULL, older than every dated one),
    else, where none precedes the start, its earliest state naming shards (its first known
    one). States naming no shard are passed over: Slurm gives shards only from a node
    configured with them, so a node whose in-effect snapshot names none was reconfigured
    before the attempt started, after that snapshot. A node with no state naming shards is of
    unknown shard count. An attempt without ``start_at`` counts by each node's latest state
    naming shards.

    Args:
        attempts: Slurm attempts with ``cluster, node_list, gpus, shards, run_s, gpu_s``, with
            dated node states ``start_at`` (Datetime) too, and, optionally,
            ``req_gpus, req_shards``.
        gpus_per_shard: :func:`node_gpus_per_shard`'s ``cluster, host, gpus_per_shard`` (one
            state per node), or :func:`node_shard_states`' ``cluster, host, snapshot_at,
            gpus_per_shard`` (dated states).

    Returns:
        ``attempts``, same rows, order and columns.

    Example:
        40 shards on a node of 1 GPU and 80 shards for 2 h: 40 × 1/80 = 0.5 GPU, 3,600 GPU-s;
        started before the node became ``gpu:2,shard:80``, it stays 0.5 GPU, not 40 × 2/80 = 1.
    """
    held = (pl.col("gpus") == 0) & (pl.col("shards") > 0) & (pl.col("node_list").list.len() > 0)
    at = attempts.select(held.fill_null(False).arg_true()).to_series()
    if at.len() == 0 or gpus_per_shard.height == 0:
        return attempts
    # Σ over the nodes of (shards ÷ nodes) × GPUs per shard = shards × the nodes' mean GPUs per
    # shard
    if "snapshot_at" in gpus_per_shard.columns:
        nodes = _in_effect(attempts[at].select("cluster", "node_list", "start_at", _at=at),
                           gpus_per_shard)  # fmt: skip
    else:
        nodes = (
            attempts[at]
            .select("cluster", "node_list", _at=at)
            .explode("node_list")
            .join(
                gpus_per_shard.rename({"host": "node_list"}),
                on=["cluster", "node_list"],
                how="left",
            )
        )
    per_node = (
        nodes.group_by("_at")
        .agg(
            pl.col("gpus_per_shard").mean().alias("_mean"),
            pl.col("gpus_per_shard").is_null().any().alias("_unknown"),
        )
        .filter(~pl.col("_unknown"))
        .sort("_at")
    )
    if per_node.height == 0:
        return attempts
    rows, mean = per_node["_at"], per_node["_mean"]
    gpus = attempts["shards"].gather(rows) * mean
    out = {
        "gpus": attempts["gpus"].scatter(rows, gpus),
        "gpu_s": attempts["gpu_s"].scatter(rows, gpus * attempts["run_s"].gather(rows)),
    }
    if "req_shards" in attempts.columns and "req_gpus" in attempts.columns:
        req = attempts.select(
            pl.when((pl.col("req_gpus") == 0) & (pl.col("req_shards") > 0))
            .then(pl.col("req_shards"))
            .otherwise(None)
        ).to_series()
        asked = req.gather(rows) * mean
        out["req_gpus"] = attempts["req_gpus"].scatter(
            rows, asked.fill_null(attempts["req_gpus"].gather(rows))
        )
    return attempts.with_columns(**out)


def _in_effect(held: pl.DataFrame, states: pl.DataFrame) -> pl.DataFrame:
    """``held`` (``cluster, node_list, start_at, _at``: the attempts holding shards) as one row
    per attempt and node, ``_at, gpus_per_shard``: the node's state naming shards in effect at
    the attempt's start (:func:`shard_gpus`), NULL where the node has none."""
    # as microseconds since the epoch, whatever the columns' zones: an undated state is older
    # than every start, an attempt without a start later than every state
    lo, hi = -(2**63), 2**63 - 1
    known = (
        states.filter(pl.col("gpus_per_shard").is_not_null())
        .select(
            "cluster",
            pl.col("host").alias("node_list"),
            pl.col("snapshot_at").dt.epoch("us").fill_null(lo).alias("_t"),
            "gpus_per_shard",
        )
        .sort("_t", maintain_order=True)
    )
    nodes = (
        held.explode("node_list")
        .select(
            "_at",
            "cluster",
            "node_list",
            pl.col("start_at").dt.epoch("us").fill_null(hi).alias("_t"),
        )
        .sort("_t")
    )
    by = ["cluster", "node_list"]
    before = nodes.join_asof(known, on="_t", by=by, strategy="backward", check_sortedness=False)
    after = nodes.join_asof(known, on="_t", by=by, strategy="forward", check_sortedness=False)
    return before.select(
        "_at",
        pl.coalesce(before["gpus_per_shard"], after["gpus_per_shard"]).alias("gpus_per_shard"),
    )


def pending_shard_gpus(pending: pl.DataFrame, gpus_per_shard: pl.DataFrame) -> pl.DataFrame:
    """``pending`` (never-started Slurm rows) with the GPUs of those that ask for shards and no
    GPU: no node holds them yet, so where every node of the cluster with a known shard count
    has the same GPUs per shard (one DGX Spark, or nodes sharded alike), ``req_gpus`` =
    ``req_shards`` × it; elsewhere ``req_gpus`` stays 0 (no node is guessed).

    Args:
        pending: ``cluster, req_gpus, req_shards`` (and any other columns).
        gpus_per_shard: :func:`node_gpus_per_shard`'s ``cluster, host, gpus_per_shard``.

    Returns:
        ``pending``, same rows, order and columns.
    """
    asks = (pl.col("req_gpus") == 0) & (pl.col("req_shards") > 0)
    if gpus_per_shard.height == 0 or not pending.select(asks.any()).item():
        return pending
    alike = (
        gpus_per_shard.group_by("cluster")
        .agg(pl.col("gpus_per_shard").unique().alias("_all"))
        .filter(pl.col("_all").list.len() == 1)
        .select("cluster", pl.col("_all").list.first().alias("_per_shard"))
    )
    per_shard = pl.col("cluster").replace_strict(
        alike["cluster"], alike["_per_shard"], default=None, return_dtype=pl.Float64()
    )
    return pending.with_columns(
        pl.when(asks)
        .then(pl.coalesce(pl.col("req_shards") * per_shard, pl.col("req_gpus")))
        .otherwise(pl.col("req_gpus"))
        .alias("req_gpus")
    )
