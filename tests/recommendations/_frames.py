"""Literal frames for the recommendation tests: attempts with the ``jobs`` view's columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from metrics.recommendations import Window

T0 = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)  # a Monday
H = 3600.0
DAY = 86400.0

UTC = pl.Datetime("us", "UTC")

JOB_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),
    "cluster": pl.String(),
    "job_id": pl.String(),
    "attempt": pl.Int64(),
    "team": pl.String(),
    "account": pl.String(),
    "user_name": pl.String(),
    "partition": pl.String(),
    "qos": pl.String(),
    "state": pl.String(),
    "gpus": pl.Float64(),
    "req_gpus": pl.Float64(),
    "eligible_at": UTC,
    "start_at": UTC,
    "end_at": UTC,
    "wait_s": pl.Float64(),
    "run_s": pl.Float64(),
    "timelimit_s": pl.Int64(),
}

PENDING_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "partition": pl.String(),
    "qos": pl.String(),
    "account": pl.String(),
    "req_gpus": pl.Float64(),
    "eligible_at": UTC,
    "cancel_at": UTC,
    "timelimit_s": pl.Int64(),
}


def at(seconds: float) -> dt.datetime:
    """``T0`` + seconds."""
    return T0 + dt.timedelta(seconds=seconds)


def window(days: float) -> Window:
    """``[T0, T0 + days)``."""
    return Window(T0, at(days * DAY))


def job(
    job_id: str,
    *,
    eligible: float,
    start: float | None,
    run: float | None,
    gpus: float = 8,
    limit: float | None = 86400,
    team: str = "vision",
    user: str = "alice",
    partition: str = "gpu",
    qos: str = "normal",
    state: str = "COMPLETED",
    cluster: str = "slurm-a",
    source: str = "slurm",
    attempt: int = 0,
) -> dict[str, Any]:
    """One attempt; times are seconds after ``T0``; ``run=None`` means still running."""
    return {
        "source": source,
        "cluster": cluster,
        "job_id": job_id,
        "attempt": attempt,
        "team": team,
        "account": team,
        "user_name": user,
        "partition": partition,
        "qos": qos,
        "state": state,
        "gpus": float(gpus),
        "req_gpus": float(gpus),
        "eligible_at": at(eligible),
        "start_at": None if start is None else at(start),
        "end_at": None if start is None or run is None else at(start + run),
        "wait_s": None if start is None else start - eligible,
        "run_s": run,
        "timelimit_s": None if limit is None else int(limit),
    }


def jobs(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Attempts → a frame with :data:`JOB_SCHEMA`."""
    return pl.DataFrame(rows, schema=JOB_SCHEMA)


def pending(rows: list[dict[str, Any]] | None = None) -> pl.DataFrame:
    """Never-started jobs → a frame with :data:`PENDING_SCHEMA`."""
    return pl.DataFrame(rows or [], schema=PENDING_SCHEMA)
