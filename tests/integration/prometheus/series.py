"""One day (2026-11-02 UTC) of dcgm-exporter series at 30 s, with values computable by hand.

Every value is a function of the sample index ``k`` (sample time = 00:00 UTC + 30 s × k), chosen so
that the aggregate of each 5-minute bucket ``[t, t + 5 min)`` (ten samples, ``k % 10`` = 0 … 9) is
exact and any off-by-one-sample window shows up:

- ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` alternates ``mean ± swing`` by the parity of ``k``, so a bucket
  of ten samples has exactly ``mean``; an eleven-sample window misses it by ``swing / 11``;
- ``DCGM_FI_DEV_GPU_UTIL`` is the same in % (``round(100 × activity)``);
- ``DCGM_FI_DEV_FB_USED`` (MiB) is ``fb_base + 1000 × (k % 10)``: the bucket max is
  ``fb_base + 9000``;
- ``DCGM_FI_DEV_POWER_USAGE`` (W) is constant per GPU, ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (mJ)
  grows by ``power × 30 s × 1000`` per sample: its increase per bucket is ``power × 300 000``;
- ``DCGM_FI_DEV_XID_ERRORS`` is 0, except on :data:`XID_GPU` from :data:`XID_AT` (79); that GPU's
  series end :data:`XID_LAST_SAMPLE_S` after it, and ``DCGM_EXP_XID_ERRORS_COUNT`` (1, label
  ``xid="79"``) exists only there and then;
- one ``DCGM_FI_DEV_POWER_USAGE`` sample of MIG instance 2, at :data:`BLANK_AT`, is DCGM's fp64
  blank sentinel (2^47): that series' 5-minute bucket holding it must be dropped, not averaged;
- ``DCGM_FI_PROF_SM_ACTIVE`` is never written (it is off in dcgm-exporter's default counters).

The GPUs: the busy 2-node job 101 (``node-a``, ``node-b``, 2 GPUs each, activity 0.8), the idle
job 102 (``node-c`` GPU 0, activity 0.01), the XID GPU (``node-c`` GPU 1, activity 0.5, no job), a
Kubernetes GPU whose pod changes at noon (``node-d`` GPU 0, activity 0.4 then 0.9) and a MIG GPU
with two ``3g.40gb`` instances (``node-d`` GPU 1, activity 0.25 and 0.75).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

DAY: Final = "2026-11-02"
DAY_START: Final = datetime(2026, 11, 2, tzinfo=UTC)
DAY_START_S: Final = int(DAY_START.timestamp())
INTERVAL_S: Final = 30
SAMPLES_PER_DAY: Final = 24 * 3600 // INTERVAL_S

BUSY_JOB: Final = "101"
BUSY_ACTIVITY: Final = 0.8
IDLE_JOB: Final = "102"
IDLE_ACTIVITY: Final = 0.01

POD_CHANGE_AT: Final = DAY_START + timedelta(hours=12)
POD_BEFORE: Final = "trainer-7d9f-0"
POD_AFTER: Final = "trainer-7d9f-1"
POD_NAMESPACE: Final = "team-vision"
POD_ACTIVITY_BEFORE: Final = 0.4
POD_ACTIVITY_AFTER: Final = 0.9

MIG_PROFILE: Final = "3g.40gb"
MIG_ACTIVITY: Final = {1: 0.25, 2: 0.75}

#: Time of the one blank ``DCGM_FI_DEV_POWER_USAGE`` sample (MIG instance 2).
BLANK_AT: Final = DAY_START + timedelta(hours=6, seconds=30)
FP64_BLANK: Final = "140737488355328"

XID: Final = 79
XID_AT: Final = DAY_START + timedelta(hours=15)
#: The XID GPU's last sample, seconds after :data:`XID_AT` (its series vanish after it).
XID_LAST_SAMPLE_S: Final = 90

METRICS_WRITTEN: Final = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_EXP_XID_ERRORS_COUNT",
)

_MODEL: Final = "NVIDIA H100 80GB HBM3"
_DRIVER: Final = "550.54.15"
_K_NOON: Final = 12 * 3600 // INTERVAL_S
_K_XID: Final = 15 * 3600 // INTERVAL_S
_K_XID_LAST: Final = _K_XID + XID_LAST_SAMPLE_S // INTERVAL_S
_K_BLANK: Final = int((BLANK_AT - DAY_START).total_seconds()) // INTERVAL_S


@dataclass(frozen=True)
class Segment:
    """One GPU (or MIG instance) under one label set, for sample indices ``[k_start, k_end)``.

    Attributes:
        labels: the dcgm-exporter labels of every series of the segment.
        k_start: first sample index (inclusive).
        k_end: last sample index (exclusive).
        activity: mean activity (0–1) of every 5-minute bucket.
        swing: half the peak-to-peak alternation of activity around ``activity``.
        power_w: power draw (W).
        fb_base: framebuffer used at ``k % 10 == 0`` (MiB).
        xid_from: sample index from which ``DCGM_FI_DEV_XID_ERRORS`` is :data:`XID`, if any.
    """

    labels: dict[str, str]
    k_start: int
    k_end: int
    activity: float
    swing: float
    power_w: float
    fb_base: int
    xid_from: int | None = None

    def activity_at(self, k: int) -> float:
        """Activity (0–1) of sample ``k``: ``activity ± swing`` by parity."""
        return round(self.activity + (self.swing if k % 2 else -self.swing), 6)

    @property
    def hostname(self) -> str:
        """The ``Hostname`` label."""
        return self.labels["Hostname"]


def _gpu_labels(host: str, gpu: int, **extra: str) -> dict[str, str]:
    uuid = f"GPU-{host[-1]}{gpu:07d}-0000-4000-8000-00000000{gpu:04d}"
    labels = {
        "gpu": str(gpu),
        "UUID": uuid,
        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": _MODEL,
        "Hostname": host,
        "DCGM_FI_DRIVER_VERSION": _DRIVER,
    }
    labels.update(extra)
    return labels


def segments() -> list[Segment]:
    """The day's GPU segments (see the module docstring)."""
    out: list[Segment] = []
    for host in ("node-a", "node-b"):
        for gpu in (0, 1):
            out.append(
                Segment(
                    _gpu_labels(host, gpu, hpc_job=BUSY_JOB),
                    0,
                    SAMPLES_PER_DAY,
                    BUSY_ACTIVITY,
                    0.2,
                    600.0,
                    60_000,
                )
            )
    out.append(
        Segment(
            _gpu_labels("node-c", 0, hpc_job=IDLE_JOB),
            0,
            SAMPLES_PER_DAY,
            IDLE_ACTIVITY,
            0.01,
            75.0,
            2_000,
        )
    )
    out.append(
        Segment(
            _gpu_labels("node-c", 1), 0, _K_XID_LAST + 1, 0.5, 0.1, 350.0, 30_000, xid_from=_K_XID
        )
    )
    k8s = {"namespace": POD_NAMESPACE, "container": "main"}
    out.append(
        Segment(
            _gpu_labels("node-d", 0, pod=POD_BEFORE, **k8s),
            0,
            _K_NOON,
            POD_ACTIVITY_BEFORE,
            0.1,
            400.0,
            20_000,
        )
    )
    out.append(
        Segment(
            _gpu_labels("node-d", 0, pod=POD_AFTER, **k8s),
            _K_NOON,
            SAMPLES_PER_DAY,
            POD_ACTIVITY_AFTER,
            0.1,
            650.0,
            70_000,
        )
    )
    for gi, act in MIG_ACTIVITY.items():
        out.append(
            Segment(
                _gpu_labels("node-d", 1, GPU_I_PROFILE=MIG_PROFILE, GPU_I_ID=str(gi)),
                0,
                SAMPLES_PER_DAY,
                act,
                0.05,
                # MIG instances share the GPU's power: the device value is exported per instance
                200.0,
                10_000 * gi,
            )
        )
    return out


def _label_text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _values(metric: str, seg: Segment) -> Iterator[tuple[int, str]]:
    """``(sample index, value text)`` of one metric of one segment."""
    for k in range(seg.k_start, seg.k_end):
        if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
            yield k, repr(seg.activity_at(k))
        elif metric == "DCGM_FI_DEV_GPU_UTIL":
            yield k, str(round(100 * seg.activity_at(k)))
        elif metric == "DCGM_FI_DEV_POWER_USAGE":
            blank = k == _K_BLANK and seg.labels.get("GPU_I_ID") == "2"
            yield k, FP64_BLANK if blank else repr(seg.power_w)
        elif metric == "DCGM_FI_DEV_FB_USED":
            yield k, str(seg.fb_base + 1000 * (k % 10))
        elif metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
            yield k, str(10**12 + round(seg.power_w * INTERVAL_S * 1000) * k)
        elif metric == "DCGM_FI_DEV_XID_ERRORS":
            yield k, str(XID if seg.xid_from is not None and k >= seg.xid_from else 0)
        elif metric == "DCGM_EXP_XID_ERRORS_COUNT":
            if seg.xid_from is not None and k >= seg.xid_from:
                yield k, "1"
        else:
            raise ValueError(f"unknown metric {metric}")


def energy_increase_per_bucket(seg: Segment, step_s: int = 300) -> float:
    """Increase of ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` over one full bucket (mJ)."""
    return seg.power_w * step_s * 1000


def write_openmetrics(path: Path) -> int:
    """Write the day as OpenMetrics text (timestamps in seconds, ``# EOF`` at the end).

    Series are written one after another, each in time order (promtool drops out-of-order
    samples silently).

    Args:
        path: the file to write (a real file: promtool memory-maps it).

    Returns:
        The number of samples written.
    """
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for metric in METRICS_WRITTEN:
            for seg in segments():
                extra = {"xid": str(XID)} if metric == "DCGM_EXP_XID_ERRORS_COUNT" else {}
                head = f"{metric}{{{_label_text({**seg.labels, **extra})}}} "
                lines = [
                    f"{head}{value} {DAY_START_S + INTERVAL_S * k}\n"
                    for k, value in _values(metric, seg)
                ]
                f.writelines(lines)
                n += len(lines)
        f.write("# EOF\n")
    return n
