"""How the tests hold our GPU-seconds against sreport's: the tolerance and the named rules.

METRICS.md "Comparison with Slurm" names the rules by which sreport's hour can differ from ours;
each comparison applies the ones that concern it explicitly, and what is left must be within
:data:`TOLERANCE` of sreport's figure:

* **whole rolled-up hours, in seconds**: sreport shows only the hours slurmdbd rolled up, and
  only ``-t seconds`` prints them unrounded (:func:`assert_seconds_header`);
* **registration**: sreport's Reported (and so its Idle) starts at the cluster's TRES
  registration, an inventory-based capacity at the hour's start
  (:func:`before_registration_gpu_s`);
* **running at the rollup**: the rollup counts a job still running to the hour's end, we count
  it to our ``as_of`` (:func:`running_at_rollup_gpu_s`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

__all__ = [
    "TOLERANCE",
    "assert_reconciles",
    "assert_seconds_header",
    "before_registration_gpu_s",
    "running_at_rollup_gpu_s",
]

#: |ours − sreport| ≤ TOLERANCE × sreport, once the named rules are applied.
TOLERANCE = 0.001


def assert_reconciles(what: str, ours: float, sreport: float, rules: float = 0.0) -> None:
    """Assert ``ours + rules`` is within :data:`TOLERANCE` of sreport's figure, and print both.

    Args:
        what: the figure compared, e.g. ``"Allocated"`` (for the message and ``pytest -rP``).
        ours: our GPU-seconds for the hour.
        sreport: sreport's GPU-seconds for the same hour (``-t seconds``).
        rules: GPU-seconds the named rules move between the two conventions (sreport's minus
            ours), already computed by the caller; 0 where no rule applies.
    """
    residual = ours + rules - sreport
    line = (
        f"{what}: ours {ours:,.0f} GPU-s {rules + 0.0:+,.0f} (rules) vs sreport {sreport:,.0f} "
        f"GPU-s: residual {residual:+,.0f} GPU-s"
    )
    print(line)
    assert abs(residual) <= TOLERANCE * sreport, line


def assert_seconds_header(text: str) -> None:
    """Refuse an sreport capture printed in rounded units.

    ``-t minutes`` (sreport's default) and ``-t hours`` divide the rolled-up seconds and print
    them with ``%.0lf`` (``slurmdb_report_print_time`` in ``src/sreport/common.c``): a
    728 GPU-s hour would read 12 GPU-minutes (720 GPU-s, 1.1 % short).
    """
    assert "Usage reported in TRES Seconds" in text, text[:400]


def _moment(text: str) -> datetime | None:
    """A sacct time (``TZ=UTC``) or None for ``Unknown``/``None``."""
    if not text or not text[0].isdigit():
        return None
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _gpus(alloc_tres: str) -> int:
    """GPUs in an ``AllocTRES`` value (``…,gres/gpu=4,…``); 0 when there are none."""
    for item in alloc_tres.split(","):
        name, _, value = item.partition("=")
        if name == "gres/gpu":
            return int(value)
    return 0


def running_at_rollup_gpu_s(
    allocations: Iterable[Mapping[str, str]], hour_end: datetime, as_of: datetime
) -> float:
    """GPU-seconds the rollup counts and we do not, for jobs still running when it ran.

    slurmdbd's hourly rollup clips a job without an end (``time_end = 0``) to the hour's end
    (``as_mysql_hourly_rollup`` in ``as_mysql_rollup.c``); we count a running attempt up to
    ``as_of``. The difference is GPUs × (hour end − max(start, as_of)) for each such row.

    Args:
        allocations: sacct ``--parsable2`` allocation rows (``JobID`` without a step), keyed by
            the header, with ``Start``, ``End`` and ``AllocTRES``.
        hour_end: end of the rolled-up hour.
        as_of: our data cut-off for that hour.

    Returns:
        GPU-seconds to add to ours (0 when every job had ended, as in the test's hour).
    """
    total = 0.0
    for row in allocations:
        start = _moment(row["Start"])
        if start is None or _moment(row["End"]) is not None:
            continue
        seconds = (hour_end - max(start, as_of)).total_seconds()
        total += _gpus(row["AllocTRES"]) * max(seconds, 0.0)
    return total


def before_registration_gpu_s(capacity_gpu_s: float, registered_gpu_s: float) -> float:
    """GPU-seconds an inventory-based capacity counts before the cluster registered its TRES.

    sreport's Reported for an hour is the cluster's TRES count × the seconds of its registration
    event inside the hour (``_setup_cluster_usage`` in ``as_mysql_rollup.c``: event rows with no
    node name), so its Idle starts when slurmctld registered; a capacity from the node inventory
    starts at the hour. Our unallocated time less this difference is sreport's Idle + Planned.

    Args:
        capacity_gpu_s: the waterfall's capacity for the hour.
        registered_gpu_s: GPUs × registered seconds in the hour, from the registration events.

    Returns:
        capacity − registered; never negative.
    """
    return max(capacity_gpu_s - registered_gpu_s, 0.0)
