"""dcgm-exporter samples for every GPU, one gzip'd Prometheus text file per cluster-local day.

Each file holds three metric families (``# HELP``/``# TYPE`` once each, then samples with
millisecond timestamps) at 5-minute resolution: ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0–1),
``DCGM_FI_DEV_FB_USED`` (MiB) and ``DCGM_FI_DEV_XID_ERRORS`` (the last XID, 0 when none). Lines are
built column-wise with polars; noise comes from a numpy Generator seeded per (seed, cluster, day).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.sample_fleet._model import (
    GPU_MODEL_NAMES,
    ClusterSpec,
    GpuAllocation,
    NodeEvent,
    gpu_uuid,
)

__all__ = ["STEP_S", "DcgmContext", "dcgm_frame", "write_dcgm_day"]

STEP_S = 300
_FAMILIES = (
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "act_s"),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "fb_s"),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "xid_s"),
)
_PCI_BUS = ("07", "0F", "47", "4E", "87", "90", "B7", "BD")
_FB_TOTAL_MIB = 81559


@dataclass(frozen=True)
class DcgmContext:
    """Per-cluster frames reused for every day.

    Attributes:
        cluster_index: 0 for the Slurm cluster, 1 for Kubernetes (mixed into the noise seed).
        gpus: one row per GPU: ``gpu_key``, ``prefix`` (label text up to ``Hostname``).
        allocations: ``gpu_key, start, end, suffix, activity, kind, team, fb_mib`` sorted by
            start.
        xids: ``gpu_key, start, end, xid`` intervals while a GPU reports an XID.
        empty_suffix: label text closing an unallocated sample.
    """

    cluster_index: int
    gpus: pl.DataFrame
    allocations: pl.DataFrame
    xids: pl.DataFrame
    empty_suffix: str

    @classmethod
    def build(
        cls,
        seed: int,
        cluster_index: int,
        cluster: ClusterSpec,
        allocations: Sequence[GpuAllocation],
        node_events: Sequence[NodeEvent],
    ) -> DcgmContext:
        """Prepare the frames for one cluster.

        Args:
            seed: generator seed (for GPU UUIDs).
            cluster_index: 0 or 1.
            cluster: the cluster.
            allocations: every GPU allocation of the cluster.
            node_events: node down/drain intervals (XIDs last until the node returns).

        Returns:
            The context.
        """
        keys: dict[tuple[str, int], int] = {}
        gkeys, prefixes = [], []
        for node in cluster.nodes:
            model = GPU_MODEL_NAMES[node.gpu_type]
            for g in range(node.gpus):
                key = node.index * 8 + g
                keys[(node.host, g)] = key
                gkeys.append(key)
                prefixes.append(
                    f'{{gpu="{g}",UUID="{gpu_uuid(seed, cluster.name, node.host, g)}",'
                    f'pci_bus_id="00000000:{_PCI_BUS[g % 8]}:00.0",device="nvidia{g}",'
                    f'modelName="{model}",Hostname="{node.host}"'
                )
        gpus = pl.DataFrame(
            {"gpu_key": gkeys, "prefix": prefixes},
            schema={"gpu_key": pl.Int32, "prefix": pl.String},
        )
        empty = "}" if cluster.kind == "slurm" else ',container="",namespace="",pod=""}'
        suffixes = [
            "," + ",".join(f'{k}="{v}"' for k, v in a.labels) + "}" if a.labels else empty
            for a in allocations
        ]
        alloc = pl.DataFrame(
            {
                "gpu_key": [keys[(a.host, a.gpu)] for a in allocations],
                "start": [a.start for a in allocations],
                "end": [a.end for a in allocations],
                "suffix": suffixes,
                "activity": [a.activity for a in allocations],
                "kind": [a.kind for a in allocations],
                "team": [a.team for a in allocations],
                "fb_mib": [a.fb_mib for a in allocations],
            },
            schema={
                "gpu_key": pl.Int32,
                "start": pl.Int64,
                "end": pl.Int64,
                "suffix": pl.String,
                "activity": pl.Float64,
                "kind": pl.String,
                "team": pl.String,
                "fb_mib": pl.Int64,
            },
        ).sort("start", "gpu_key")
        # An XID lasts from the moment it is raised until the node returns from its last
        # down/drain interval of the same incident.
        xid_rows: list[tuple[int, int, int, int]] = []
        by_host: dict[str, list[NodeEvent]] = {}
        for ev in node_events:
            by_host.setdefault(ev.host, []).append(ev)
        for host, evs in by_host.items():
            evs.sort(key=lambda e: e.start)
            for i, ev in enumerate(evs):
                if not ev.xid:
                    continue
                end = ev.end
                for nxt in evs[i + 1 :]:
                    if end is not None and nxt.start == end and not nxt.xid:
                        end = nxt.end
                    else:
                        break
                xid_rows.append(
                    (
                        keys[(host, ev.xid_gpu)],
                        ev.xid_time,
                        end if end is not None else 2**62,
                        ev.xid,
                    )
                )
        xids = pl.DataFrame(
            xid_rows,
            schema={"gpu_key": pl.Int32, "start": pl.Int64, "end": pl.Int64, "xid": pl.Int64},
            orient="row",
        ).sort("start", "gpu_key")
        return cls(cluster_index, gpus, alloc, xids, empty)


def dcgm_frame(
    ctx: DcgmContext, seed: int, day_index: int, day_start: int, day_end: int
) -> pl.DataFrame:
    """The day's samples as a frame (one row per GPU and 5-minute timestamp).

    Args:
        ctx: the cluster's prepared frames.
        seed: generator seed.
        day_index: index of the day in the window (mixed into the noise seed).
        day_start: first second of the day (epoch s).
        day_end: first second of the next day.

    Returns:
        Columns ``gpu_key, ts, prefix, suffix, kind, team, activity, fb_mib, xid`` sorted by
        ``gpu_key, ts`` (``kind`` is ``free`` and ``team`` null where no job holds the GPU).
    """
    first = -(-day_start // STEP_S) * STEP_S
    ts = pl.DataFrame({"ts": np.arange(first, day_end, STEP_S, dtype=np.int64)})
    grid = ctx.gpus.join(ts, how="cross").sort("ts", "gpu_key")
    alloc = ctx.allocations.rename({"start": "a_start", "end": "a_end"})
    grid = grid.join_asof(
        alloc,
        left_on="ts",
        right_on="a_start",
        by="gpu_key",
        strategy="backward",
        check_sortedness=False,
    )
    xids = ctx.xids.rename({"start": "x_start", "end": "x_end"})
    grid = grid.join_asof(
        xids,
        left_on="ts",
        right_on="x_start",
        by="gpu_key",
        strategy="backward",
        check_sortedness=False,
    )
    grid = grid.sort("gpu_key", "ts")
    n = grid.height
    rng = np.random.default_rng([seed, ctx.cluster_index, day_index])
    noise = rng.normal(0.0, 1.0, n)
    burst = rng.random(n)
    burst_amp = rng.uniform(0.05, 0.30, n)
    fb_noise = rng.normal(0.0, 1.0, n)
    grid = grid.with_columns(
        pl.Series("noise", noise),
        pl.Series("burst", burst),
        pl.Series("burst_amp", burst_amp),
        pl.Series("fb_noise", fb_noise),
    )
    held = pl.col("a_start").is_not_null() & (pl.col("ts") < pl.col("a_end"))
    xid_on = pl.col("x_start").is_not_null() & (pl.col("ts") < pl.col("x_end"))
    kind = pl.col("kind")
    base = pl.col("activity")
    act = (
        pl.when(kind == "idle")
        .then(
            base
            + 0.004 * pl.col("noise")
            + pl.when(pl.col("burst") < 0.05).then(pl.col("burst_amp")).otherwise(0.0)
        )
        .when(kind == "wait")
        .then(0.003 + 0.002 * pl.col("noise"))
        .when(kind == "low")
        .then(base + 0.03 * pl.col("noise"))
        .otherwise(base + 0.045 * pl.col("noise"))
    )
    ramp = (
        pl.when((pl.col("ts") - pl.col("a_start") < 600) & kind.is_in(["busy", "low"]))
        .then(0.3)
        .otherwise(1.0)
    )
    grid = grid.with_columns(
        pl.when(held & ~xid_on).then((act * ramp).clip(0.0, 1.0)).otherwise(0.0).alias("activity"),
        pl.when(held & ~xid_on)
        .then(
            (pl.col("fb_mib") * (1 + 0.02 * pl.col("fb_noise")))
            .round(0)
            .cast(pl.Int64)
            .clip(0, _FB_TOTAL_MIB)
        )
        .otherwise(0)
        .alias("fb_mib"),
        pl.when(xid_on).then(pl.col("xid")).otherwise(0).alias("xid"),
        pl.when(held).then(pl.col("suffix")).otherwise(pl.lit(ctx.empty_suffix)).alias("suffix"),
        pl.when(held).then(kind).otherwise(pl.lit("free")).alias("kind"),
        pl.when(held).then(pl.col("team")).otherwise(pl.lit(None, pl.String)).alias("team"),
    )
    return grid.select(
        "gpu_key", "ts", "prefix", "suffix", "kind", "team", "activity", "fb_mib", "xid"
    )


def write_dcgm_day(
    path: Path,
    ctx: DcgmContext,
    seed: int,
    day_index: int,
    day_start: int,
    day_end: int,
    *,
    compresslevel: int = 6,
) -> pl.DataFrame:
    """Write one ``dcgm_YYYY-MM-DD.prom.gz`` file (gzip header without name or time).

    Args:
        path: output file.
        ctx: the cluster's prepared frames.
        seed: generator seed.
        day_index: index of the day in the window.
        day_start: first second of the day (epoch s).
        day_end: first second of the next day.
        compresslevel: gzip level.

    Returns:
        The day's sample frame (see :func:`dcgm_frame`).
    """
    frame = dcgm_frame(ctx, seed, day_index, day_start, day_end)
    micro = (pl.col("activity") * 1_000_000).round(0).cast(pl.Int64)
    values = frame.select(
        pl.col("prefix"),
        pl.col("suffix"),
        (pl.col("ts") * 1000).cast(pl.String).alias("ms"),
        pl.when(micro >= 1_000_000)
        .then(pl.lit("1.000000"))
        .otherwise(pl.lit("0.") + micro.cast(pl.String).str.zfill(6))
        .alias("act_s"),
        pl.col("fb_mib").cast(pl.String).alias("fb_s"),
        pl.col("xid").cast(pl.String).alias("xid_s"),
    )
    chunks: list[str] = []
    for name, help_text, col in _FAMILIES:
        lines = (
            values.select(
                pl.concat_str(
                    [
                        pl.lit(name),
                        pl.col("prefix"),
                        pl.col("suffix"),
                        pl.lit(" "),
                        pl.col(col),
                        pl.lit(" "),
                        pl.col("ms"),
                    ]
                ).alias("line")
            )["line"]
            .str.join("\n")
            .item()
        )
        chunks.append(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n{lines}\n")
    data = "".join(chunks).encode("utf-8")
    path.write_bytes(gzip.compress(data, compresslevel=compresslevel, mtime=0))
    return frame
