"""The Slurm-on-Kubernetes tables of a build: ``analytics.slurm_node_map``,
``analytics.slurm_on_k8s_hourly`` and their data-quality findings, for every Slurm cluster that
``goodput.toml`` declares run on Kubernetes (:mod:`pipelines.core.slurm_on_k8s`)."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from metrics.data_quality import DATA_QUALITY_SCHEMA
from pipelines.config import Config
from pipelines.core import CoreFrames
from pipelines.core.slurm_on_k8s import (
    HOURLY_SCHEMA,
    NODE_MAP_SCHEMA,
    SlurmOnK8s,
    sacct_notes,
    slurm_on_k8s_findings,
    slurm_on_k8s_hourly,
    slurmd_job_keys,
)
from pipelines.warehouse import read_table, table_exists

__all__ = ["SlurmOnK8sTables", "slurm_on_k8s_tables"]

#: The columns of ``raw.slurm_node_comments`` the node map reads (no table: no comment).
_COMMENTS = {
    "cluster": pl.String(), "slurm_node": pl.String(), "polled_at": pl.Datetime("us", "UTC"),
    "namespace": pl.String(), "pod": pl.String(), "k8s_node": pl.String(),
    "nodeset": pl.String(),
}  # fmt: skip

#: The map pieces :class:`SlurmOnK8sTables` keeps (the telemetry attribution reads them).
_PIECES = {
    "cluster": pl.String(), "job_id": pl.String(), "attempt": pl.Int64(),
    "slurm_node": pl.String(), "k8s_node": pl.String(),
    "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC"),
}  # fmt: skip


class SlurmOnK8sTables:
    """What :func:`slurm_on_k8s_tables` returns: the two tables (without ``as_of``), the
    findings (``data_quality`` rows), the slurmd pods' Kubernetes jobs (``cluster, job_id``,
    :func:`~pipelines.core.slurm_on_k8s.slurmd_job_keys`) and the map pieces of every Slurm
    attempt (``cluster, job_id, attempt, slurm_node, k8s_node, start_at, end_at``)."""

    def __init__(
        self,
        node_map: pl.DataFrame,
        hourly: pl.DataFrame,
        findings: pl.DataFrame,
        slurmd_jobs: pl.DataFrame | None = None,
        pieces: pl.DataFrame | None = None,
    ):
        self.node_map = node_map
        self.hourly = hourly
        self.findings = findings
        self.slurmd_jobs = (
            slurmd_jobs
            if slurmd_jobs is not None
            else pl.DataFrame(schema={"cluster": pl.String(), "job_id": pl.String()})
        )
        self.pieces = pieces if pieces is not None else pl.DataFrame(schema=_PIECES)


def _settings(cfg: Config) -> list[SlurmOnK8s]:
    return [
        SlurmOnK8s(c.name, c.kubernetes_cluster, c.slurm_on_k8s)
        for c in cfg.clusters
        if c.slurm_on_k8s and c.kubernetes_cluster
    ]


def slurm_on_k8s_tables(
    con: duckdb.DuckDBPyConnection, cfg: Config, core: CoreFrames
) -> SlurmOnK8sTables:
    """Layer ownership, the dated node map and the findings of every configured cluster.

    Args:
        con: the warehouse (``raw.slurm_node_comments`` is read where it exists).
        cfg: the configuration (clusters with ``slurm_on_k8s``).
        core: the core frames, Slurm attempts still present.

    Returns:
        Empty frames of the right schema when no cluster is configured.
    """
    settings = _settings(cfg)
    comments = (
        read_table(con, "raw.slurm_node_comments")
        if settings and table_exists(con, "raw.slurm_node_comments")
        else pl.DataFrame(schema=_COMMENTS)
    )
    cuts = dict(core.as_of.drop_nulls("as_of").iter_rows())
    maps, hours, found, keys, kept = [], [], [], [], []
    for s in settings:
        as_of = max(
            (cuts[c] for c in (s.cluster, s.k8s_cluster) if c in cuts),
            default=None,
        )
        if not isinstance(as_of, dt.datetime):
            continue
        attempts = core.slurm_attempts.filter(pl.col("cluster") == s.cluster).select(
            pl.col("job_key").alias("job_id"), "attempt", "gpus", "start_at", "end_at",
            "node_list", *sacct_notes(),
        )  # fmt: skip
        hourly, node_map, pieces, mirrors = slurm_on_k8s_hourly(
            s, attempts, core.k8s_pods, comments, core.nodes, as_of
        )
        maps.append(node_map)
        hours.append(hourly)
        found.append(slurm_on_k8s_findings(s.cluster, hourly, pieces, mirrors))
        keys.append(slurmd_job_keys(core.k8s_pods, core.pod_jobs, s.k8s_cluster))
        kept.append(
            pieces.filter(~pl.col("mirror"))
            .with_columns(pl.lit(s.cluster).alias("cluster"))
            .select(list(_PIECES))
            .cast(_PIECES)  # type: ignore[arg-type]
        )
    return SlurmOnK8sTables(
        node_map=pl.concat(maps) if maps else pl.DataFrame(schema=NODE_MAP_SCHEMA),
        hourly=pl.concat(hours) if hours else pl.DataFrame(schema=HOURLY_SCHEMA),
        findings=(
            pl.concat(found).cast(DATA_QUALITY_SCHEMA)  # type: ignore[arg-type]
            if found
            else pl.DataFrame(schema=DATA_QUALITY_SCHEMA)
        ),
        slurmd_jobs=pl.concat(keys).unique() if keys else None,
        pieces=pl.concat(kept) if kept else None,
    )
