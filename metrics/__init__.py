"""goodput metrics: pure polars functions over LazyFrames (no Dagster, no Streamlit).

Every function implements a definition of ``METRICS.md``; column names come from
:mod:`metrics.schema`.
"""

from __future__ import annotations

from metrics._helpers import nearest_rank, seconds_between, size_bucket
from metrics.occupancy import allocated_gpu_seconds_hourly, capacity_hourly, occupancy_hourly
from metrics.time_to_start import naive_wait_percentiles

__all__ = [
    "allocated_gpu_seconds_hourly",
    "capacity_hourly",
    "naive_wait_percentiles",
    "nearest_rank",
    "occupancy_hourly",
    "seconds_between",
    "size_bucket",
]
