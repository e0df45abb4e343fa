"""One colour per thing, on every dashboard page and in the PDF report.

A waterfall leaf, a cluster, a team, a GPU type, an end state and a named series each keep one
colour wherever they are drawn: leaves and states from fixed tables, clusters, teams and GPU types
from a fixed qualitative palette indexed by a hash of the name. Two names hashing to one slot are
told apart by moving the later (sorted) name to the next free slot, so a colour depends on the
set of names it is resolved in: every surface resolves teams over the same *universe* (every team
of the serving copy, ``team_universe``), so the same team has the same colour on two pages and in
the PDF whichever subset of teams each draws. The families do not share colours:
leaves are greens (goodput), reds/oranges (lost work), yellow (idle allocations) and greys/slate
(not there, unallocated); clusters are dark saturated hues none of the leaves use; teams and GPU
types draw from two further disjoint palettes. Ordered buckets (job sizes) get a sequential ramp.

No Streamlit or Dagster here: the dashboard and :mod:`pipelines.report.weekly` both import it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from metrics.schema import SIZE_BUCKETS

__all__ = [
    "CLUSTER_PALETTE",
    "LEAF_COLORS",
    "SERIES_COLORS",
    "STATE_COLORS",
    "TEAM_PALETTE",
    "bucket_colors",
    "cluster_colors",
    "color_map",
    "gpu_type_colors",
    "leaf_colors",
    "rgb_distance",
    "team_colors",
]

#: One colour per waterfall leaf (METRICS.md order): dark/light grey for capacity that was not
#: there, reds and oranges for lost work, sand for cancelled, yellow for idle allocations, green
#: for goodput, slate greys for unallocated capacity (held, then idle).
LEAF_COLORS: dict[str, str] = {
    "down": "#3b3b3b",
    "planned_down": "#a6a6a6",
    "failed_work_infra": "#b2182b",
    "failed_work_user": "#ef6548",
    "preempted_work": "#fd8d3c",
    "timeout_work": "#fdae6b",
    "cancelled_work": "#d9c8a9",
    "allocated_idle": "#ffd92f",
    "goodput": "#1a9850",
    "held": "#8c96a8",
    "idle": "#d4d9e2",
}

#: End states (the Waste page's lost-work chart) take the colour of the leaf they feed.
STATE_COLORS: dict[str, str] = {
    "completed": LEAF_COLORS["goodput"],
    "running": "#66bd63",
    "node failure": LEAF_COLORS["failed_work_infra"],
    "failed": LEAF_COLORS["failed_work_user"],
    "preempted": LEAF_COLORS["preempted_work"],
    "timeout": LEAF_COLORS["timeout_work"],
    "cancelled": LEAF_COLORS["cancelled_work"],
    "other": "#bdbdbd",
}

#: Clusters: dark, saturated and far apart (minimum pairwise RGB distance > 80), none a leaf
#: colour.
CLUSTER_PALETTE: tuple[str, ...] = (
    "#1f3a93",  # navy
    "#8e44ad",  # purple
    "#00897b",  # teal
    "#c2185b",  # magenta
    "#6d4c41",  # brown
    "#0288d1",  # sky blue
)

#: Teams: a 12-colour qualitative palette (ColorBrewer Paired-like, hues shifted off the leaves).
TEAM_PALETTE: tuple[str, ...] = (
    "#4e79a7",
    "#f28e2b",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#e15759",
    "#17becf",
    "#7f3c8d",
    "#a5aa99",
)

#: GPU types: a small palette of its own.
GPU_TYPE_PALETTE: tuple[str, ...] = ("#2f4b7c", "#a05195", "#d45087", "#ff7c43", "#665191")

#: Named series used by several charts: what a team received or used against what it should.
SERIES_COLORS: dict[str, str] = {
    "entitlement_share": "#7f7f7f",
    "received_share": "#34495e",
    "fair_share": "#17becf",
    "used": "#34495e",
    "fair": "#17becf",
    "used_gpu_h": "#34495e",
    "fair_gpu_h": "#17becf",
    "allocated_gpu_h": "#34495e",
    "active_gpu_h": LEAF_COLORS["goodput"],
    "attempts": "#34495e",
    "node_fail_attempts": LEAF_COLORS["failed_work_infra"],
    "jain_index": "#34495e",
    "unmet_entitlement": "#d95f02",
    "censored (Kaplan–Meier)": "#34495e",
    "naive (started only)": "#a6a6a6",
    "occupancy": "#34495e",
    "goodput_ratio": LEAF_COLORS["goodput"],
}

#: Sequential blues-to-purples for the ordered GPU-size buckets, light (small) to dark (large).
_SEQUENTIAL: tuple[str, ...] = ("#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b")


def _slot(name: str, size: int) -> int:
    """A stable index in ``range(size)`` from the name (not Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha1(name.encode("utf-8")).digest()[:4], "big") % size


def _hashed(
    names: Iterable[str | None], palette: tuple[str, ...], universe: Iterable[str | None] = ()
) -> dict[str, str]:
    """Each name's hashed colour; a second name landing on a taken colour in the same set moves
    to the next free one (in sorted name order, so the result does not depend on input order).
    Slots are resolved over ``universe`` ∪ ``names``; the result keys are ``names`` only (every
    name of ``universe`` when ``names`` is empty)."""
    wanted = {n for n in names if n is not None}
    out: dict[str, str] = {}
    taken: set[int] = set()
    for name in sorted(wanted | {n for n in universe if n is not None}):
        slot = _slot(name, len(palette))
        for step in range(len(palette)):
            if (slot + step) % len(palette) not in taken:
                slot = (slot + step) % len(palette)
                break
        if len(taken) < len(palette):
            taken.add(slot)
        else:  # more names than colours: start a second round of the palette
            taken = {slot}
        out[name] = palette[slot]
    return {n: c for n, c in out.items() if n in wanted} if wanted else out


def leaf_colors() -> dict[str, str]:
    """A copy of :data:`LEAF_COLORS` for ``color_discrete_map``."""
    return dict(LEAF_COLORS)


def cluster_colors(names: Iterable[str | None]) -> dict[str, str]:
    """Colour per cluster name, stable across pages (hash of the name)."""
    return _hashed(names, CLUSTER_PALETTE)


def team_colors(names: Iterable[str | None], universe: Iterable[str | None] = ()) -> dict[str, str]:
    """Colour per team name, resolved over ``universe`` (every team of the serving copy, the
    same on every page and in the report) so a team keeps its colour whichever teams a chart
    shows; without a universe, over ``names`` alone."""
    return _hashed(names, TEAM_PALETTE, universe)


def gpu_type_colors(names: Iterable[str | None]) -> dict[str, str]:
    """Colour per GPU type, stable across pages (hash of the name)."""
    return _hashed(names, GPU_TYPE_PALETTE)


def bucket_colors(labels: Iterable[str] | None = None) -> dict[str, str]:
    """Sequential colours for the GPU-size buckets (``metrics.schema.SIZE_BUCKETS``), light for
    small jobs, dark for large; ``labels`` adds spellings of the same buckets (e.g. ``"< 1"``)."""
    out = {label: _SEQUENTIAL[min(i, len(_SEQUENTIAL) - 1)]
           for i, (label, _lo, _hi) in enumerate(SIZE_BUCKETS)}  # fmt: skip
    out["all"] = "#525252"
    for label in labels or ():
        key = label.replace(" ", "")
        if key in out:
            out[label] = out[key]
    return out


def color_map(
    kind: str, names: Iterable[str | None] = (), universe: Iterable[str | None] = ()
) -> dict[str, str]:
    """The ``color_discrete_map`` for a chart coloured by ``kind``: ``leaf``, ``state``,
    ``cluster``, ``team``, ``gpu_type``, ``bucket`` or ``series``; ``universe``: every name of
    the kind on the serving copy (teams: :func:`team_colors`).

    Raises:
        ValueError: an unknown kind.
    """
    names = list(names)
    match kind:
        case "leaf":
            return leaf_colors()
        case "state":
            return dict(STATE_COLORS)
        case "series":
            return dict(SERIES_COLORS)
        case "cluster":
            return cluster_colors(names)
        case "team":
            return team_colors(names, universe)
        case "gpu_type":
            return gpu_type_colors(names)
        case "bucket":
            return bucket_colors([n for n in names if n is not None])
    raise ValueError(f"no palette for {kind!r}")


def rgb_distance(a: str, b: str) -> float:
    """Euclidean distance of two ``#rrggbb`` colours in RGB (0 … 441.7)."""
    ra, rb = (tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in (a, b))
    return float(sum((x - y) ** 2 for x, y in zip(ra, rb, strict=True)) ** 0.5)
