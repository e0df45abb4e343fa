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
    SLURMD_MAP_COLUMNS,
    SlurmOnK8s,
    sacct_notes,
    slurm_on_k8s_findings,
    slurm_on_k8s_hourly,
    slurmd_job_keys,
    slurmd_overlaps,
)
from pipelines.slurm import gres_gpus
from pipelines.warehouse import read_table, table_exists

__all__ = ["SlurmOnK8sTables", "slurm_on_k8s_tables"]

#: The columns of ``raw.slurm_node_comments`` the node map reads (no table: no comment).
_COMMENTS = {
    "cluster": pl.String(), "slurm_node": pl.String(), "polled_at": pl.Datetime("us", "UTC"),
    "namespace": pl.String(), "pod": pl.String(), "k8s_node": pl.String(),
    "nodeset": pl.String(),
}  # fmt: skip

_MAPS = {**NODE_MAP_SCHEMA, "k8s_cluster": pl.String()}


class SlurmOnK8sTables:
    """What :func:`slurm_on_k8s_tables` returns: the two tables (without ``as_of``), the
    findings (``data_quality`` rows), the slurmd pods' Kubernetes jobs (``cluster, job_id``,
    :func:`~pipelines.core.slurm_on_k8s.slurmd_job_keys`) and the node maps with their
    Kubernetes cluster (:data:`~pipelines.core.slurm_on_k8s.SLURMD_MAP_COLUMNS`, what
    :func:`~pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm` reads)."""

    def __init__(
        self,
        node_map: pl.DataFrame,
        hourly: pl.DataFrame,
        findings: pl.DataFrame,
        slurmd_jobs: pl.DataFrame | None = None,
        slurmd_maps: pl.DataFrame | None = None,
    ):
        self.node_map = node_map
        self.hourly = hourly
        self.findings = findings
        self.slurmd_jobs = (
            slurmd_jobs
            if slurmd_jobs is not None
            else pl.DataFrame(schema={"cluster": pl.String(), "job_id": pl.String()})
        )
        self.slurmd_maps = (
            slurmd_maps
            if slurmd_maps is not None
            else pl.DataFrame(schema={c: _MAPS[c] for c in SLURMD_MAP_COLUMNS})
        )

    @classmethod
    def empty(cls) -> SlurmOnK8sTables:
        """No Slurm-on-Kubernetes cluster: every frame empty."""
        return cls(
            pl.DataFrame(schema=NODE_MAP_SCHEMA),
            pl.DataFrame(schema=HOURLY_SCHEMA),
            pl.DataFrame(schema=DATA_QUALITY_SCHEMA),
        )


def _with_gres_gpus(comments: pl.DataFrame) -> pl.DataFrame:
    """``comments`` with ``gpus``: the GPUs of each poll's ``Gres=`` (``gres`` column;
    :func:`pipelines.slurm.gres_gpus`), NULL where absent or unreadable."""
    if "gres" not in comments.columns:
        return comments.with_columns(pl.lit(None, pl.Float64).alias("gpus"))

    def count(gres: str | None) -> float | None:
        try:
            n = gres_gpus(gres)[0]
        except ValueError:
            return None
        return n if n > 0 else None

    values = comments["gres"].unique().drop_nulls().to_list()
    table = pl.DataFrame(
        {"gres": values, "gpus": [count(v) for v in values]},
        schema={"gres": comments.schema["gres"], "gpus": pl.Float64()},
    )
    return comments.join(table, on="gres", how="left")


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
    comments = _with_gres_gpus(comments)
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
        found.append(slurmd_overlaps(core.k8s_pods, s.k8s_cluster, s.cluster, as_of))
        keys.append(slurmd_job_keys(core.k8s_pods, core.pod_jobs, s.k8s_cluster))
        kept.append(
            node_map.with_columns(pl.lit(s.k8s_cluster).alias("k8s_cluster")).select(
                SLURMD_MAP_COLUMNS
            )
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
        slurmd_maps=pl.concat(kept) if kept else None,
    )
