"""The dashboard's query layer: cached data, short-lived read-only connections to the serving copy.

Each function opens ``duckdb.connect(path, read_only=True)`` in a ``with`` block and closes it:
the *data* is cached (``st.cache_data``), never the connection, so the dashboard never holds the
file the pipeline publishes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import streamlit as st

from metrics import nearest_rank
from pipelines.config import load_config
from pipelines.sql import load_sql

__all__ = [
    "Headline",
    "freshness",
    "headline",
    "large_job_p90_wait_s",
    "occupancy_daily",
    "rejected_by_reason",
    "serving_path",
    "wait_by_bucket",
]

Headline = dict[str, Any]
_TTL = 60


def serving_path() -> str:
    """The serving copy to read: ``$GOODPUT_SERVING_DB``, else the configured one."""
    return os.environ.get("GOODPUT_SERVING_DB") or str(load_config().serving_path)


def _frame(path: str, name: str, params: dict[str, object] | None = None) -> pl.DataFrame:
    if not Path(path).exists():
        return pl.DataFrame()
    with duckdb.connect(path, read_only=True) as con:
        out: pl.DataFrame = con.sql(load_sql(f"dashboard/{name}"), params=params or {}).pl()
        return out


@st.cache_data(ttl=_TTL)
def headline(path: str) -> Headline:
    """Occupancy, allocated and capacity GPU-hours, attempts, window and as-of."""
    df = _frame(path, "headline")
    return df.row(0, named=True) if df.height else {}


@st.cache_data(ttl=_TTL)
def large_job_p90_wait_s(path: str, min_gpus: float) -> float | None:
    """Naive nearest-rank p90 wait (seconds) of started attempts with ≥ ``min_gpus`` GPUs."""
    df = _frame(path, "large_job_waits", {"min_gpus": min_gpus})
    if df.height == 0:
        return None
    value = df.select(nearest_rank(pl.col("wait_s"), 0.9)).item()
    return float(value) if value is not None else None


@st.cache_data(ttl=_TTL)
def occupancy_daily(path: str) -> pl.DataFrame:
    """``cluster, day, occupancy, allocated_gpu_h``."""
    return _frame(path, "occupancy_daily")


@st.cache_data(ttl=_TTL)
def wait_by_bucket(path: str) -> pl.DataFrame:
    """``source, cluster, bucket, jobs, naive_p50_s, naive_p90_s, naive_p99_s``."""
    return _frame(path, "wait_by_bucket")


@st.cache_data(ttl=_TTL)
def freshness(path: str) -> pl.DataFrame:
    """``source, cluster, last_loaded_at, files, rows_loaded, rows_rejected``."""
    return _frame(path, "freshness")


@st.cache_data(ttl=_TTL)
def rejected_by_reason(path: str) -> pl.DataFrame:
    """``source, reason, rows`` (top 50)."""
    return _frame(path, "rejected_by_reason")
