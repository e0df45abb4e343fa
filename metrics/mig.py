"""The fraction of a GPU that a MIG (Multi-Instance GPU) slice is, one rule for every input.

A MIG profile is written ``[Cc.]Kg.Mgb[+me]`` (NVIDIA MIG user guide, "Supported MIG
Profiles"): a GPU instance of ``K`` compute slices and ``M`` GB of memory, optionally a compute
instance of ``C`` of those slices, optionally with the media extensions (``+me``, also
``+gfx``, ``+me.all``). Sites name their Slurm GRES types after the GPU model and the profile
(``a100_3g.20gb``, ``a100_80gb_pcie_3g.40gb``, ``nvidia_h100_80gb_hbm3_1g.10gb``), the NVIDIA
device plugin names Kubernetes resources ``nvidia.com/mig-3g.20gb`` and DCGM labels a slice
``GPU_I_PROFILE="3g.20gb"``: the profile token is recognised anywhere in a name, bounded by a
character that is not a letter or digit.

Slices per GPU (METRICS.md, "MIG fraction"; NVIDIA MIG user guide, tables of supported
profiles per product): the A30 (24 GB) has **4** compute slices (profiles ``1g.6gb``,
``2g.12gb``, ``4g.24gb`` and their ``+me`` variants), so has the RTX PRO 6000 Blackwell (96 GB:
``1g.24gb``, ``2g.48gb``, ``4g.96gb``; its ``1g.24gb`` is also a 7-slice H100 NVL profile and
counts 1/7); the A100 (40 and 80 GB), H100 (80, 94
and 96 GB), H200, B200 and GB200 have **7**. A slice counts ``K/slices`` of a GPU (``C/slices``
for a compute instance when asked). A token whose ``K`` is not a profile of that product
(``5g``, ``6g``, ``8g``, ``0g``; ``3g`` on an A30) is not a MIG slice: it reads as None.
"""

from __future__ import annotations

import re
from typing import Final

import polars as pl

__all__ = [
    "A30_PROFILES",
    "MIG_DOTTED_ATTRIBUTE",
    "MIG_PATTERN",
    "RTX_PRO_6000_NAME",
    "RTX_PRO_6000_PROFILES",
    "mig_fraction",
    "mig_fraction_expr",
    "mig_slices",
]

#: A MIG profile token inside a name: groups ``ci`` (compute slices of a compute instance,
#: optional), ``gi`` (compute slices of the GPU instance) and ``mem`` (GB). The token starts
#: at the name's start or after a character that is not a letter or digit, and ends at the
#: name's end, a ``+`` extension, or a character that is not a letter or digit.
MIG_PATTERN: Final = (
    r"(?i)(?:^|[^0-9a-z.])"
    r"(?:(?P<ci>\d+)c\.)?(?P<gi>\d+)g\.(?P<mem>\d+)gb(?:\+[0-9a-z.]+)?"
    r"(?:$|[^0-9a-z.])"
)
_MIG_RE: Final = re.compile(MIG_PATTERN)
#: A MIG profile with an attribute as the NVIDIA device plugin names its resource: ``+`` is not
#: allowed in a Kubernetes resource name, so the plugin writes ``1g.10gb+me`` as
#: ``mig-1g.10gb.me`` (NVIDIA/k8s-device-plugin ``internal/rm/rm.go``); go-nvlib's attributes are
#: ``me``, ``me.all`` and ``gfx``. Groups: 1 the profile, 2 the attribute (the profile's ``+``
#: form is ``\1+\2``).
MIG_DOTTED_ATTRIBUTE: Final = r"^((?:\d+c\.)?\d+g\.\d+gb)\.(me\.all|me|gfx)$"

#: The A30's MIG profiles as (compute slices, GB): a 4-slice product.
A30_PROFILES: Final = frozenset({(1, 6), (2, 12), (4, 24)})
#: The RTX PRO 6000 Blackwell's (96 GB, 4 slices) profiles that no 7-slice product has:
#: ``2g.48gb`` (2 per GPU) and ``4g.96gb`` (1 per GPU); NVIDIA's default mig-parted config
#: ("RTX-PRO-6000-96GB": ``all-2g.48gb`` = 2, ``all-4g.96gb`` = 1, ``all-balanced`` = 2 ×
#: ``1g.24gb`` + 1 × ``2g.48gb``). Its ``1g.24gb`` is also an H100 NVL / GH200 profile (1/7
#: there): the name alone cannot tell, so it stays 1/7.
RTX_PRO_6000_PROFILES: Final = frozenset({(2, 48), (4, 96)})
_FOUR_SLICE_PROFILES: Final = A30_PROFILES | RTX_PRO_6000_PROFILES
#: A name that also names the RTX PRO 6000 (GPU Feature Discovery's product label under the
#: single strategy, ``NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb``, or a site's GRES
#: type ``rtx_pro_6000_1g.24gb``): every profile in it is of 4 slices, ``1g.24gb`` included.
RTX_PRO_6000_NAME: Final = r"(?i)rtx[-_ ]?pro[-_ ]?6000"
_RTX_PRO_6000_RE: Final = re.compile(RTX_PRO_6000_NAME)
_SLICES_4_PRODUCT: Final = frozenset({1, 2, 4})
_SLICES_7: Final = frozenset({1, 2, 3, 4, 7})
_SLICES_4: Final = frozenset({1, 2, 4})


def mig_slices(gi: int, mem: int) -> int | None:
    """Compute slices of the GPU that a profile ``{gi}g.{mem}gb`` is cut from.

    Args:
        gi: the GPU instance's compute slices ``K``.
        mem: its memory in GB ``M``.

    Returns:
        4 for an A30 profile and for the RTX PRO 6000 Blackwell's ``2g.48gb`` and ``4g.96gb``
        (:data:`RTX_PRO_6000_PROFILES`), 7 for a profile of the 7-slice products (``K`` in 1, 2,
        3, 4, 7), None for an impossible profile.
    """
    if (gi, mem) in _FOUR_SLICE_PROFILES:
        return 4
    return 7 if gi in _SLICES_7 and mem > 0 else None


def mig_fraction(name: str | None, *, compute_instance: bool = True) -> float | None:
    """The fraction of a GPU that one unit of ``name`` is, when ``name`` names a MIG slice.

    Args:
        name: a GRES type (``a100_3g.20gb``), a resource name (``nvidia.com/mig-1c.3g.40gb``)
            or a DCGM profile label (``3g.40gb``).
        compute_instance: count a compute instance's ``C`` slices (``1c.3g.40gb`` = 1/7); with
            False the GPU instance's ``K`` (3/7), which is what DCGM's per-GPU-instance
            samples cover.

    Returns:
        ``K/slices`` (or ``C/slices``) in (0, 1]; None when ``name`` has no MIG profile token
        or its profile is impossible (see :func:`mig_slices`). ``C`` larger than ``K`` is
        impossible too. A name that also names the RTX PRO 6000 (:data:`RTX_PRO_6000_NAME`)
        has 4 slices for ``K`` in 1, 2, 4 (``...-RTX-PRO-6000-...-MIG-1g.24gb`` = 1/4).
    """
    if not name:
        return None
    m = _MIG_RE.search(name)
    if m is None:
        return None
    gi, mem = int(m.group("gi")), int(m.group("mem"))
    slices = mig_slices(gi, mem)
    if slices is not None and gi in _SLICES_4_PRODUCT and _RTX_PRO_6000_RE.search(name):
        slices = 4
    if slices is None:
        return None
    ci = m.group("ci")
    if ci is not None:
        c = int(ci)
        if c < 1 or c > gi:
            return None
        if compute_instance:
            return c / slices
    return gi / slices


def mig_fraction_expr(name: pl.Expr, *, compute_instance: bool = True) -> pl.Expr:
    """:func:`mig_fraction` as a polars expression over a String column (Float64, NULL where
    the name has no possible MIG profile)."""
    parts = name.str.extract_groups(MIG_PATTERN)
    gi = parts.struct.field("gi").cast(pl.Int64, strict=False)
    mem = parts.struct.field("mem").cast(pl.Int64, strict=False)
    ci = parts.struct.field("ci").cast(pl.Int64, strict=False)
    a30 = pl.lit(False)
    for k, m in sorted(_FOUR_SLICE_PROFILES):
        a30 = a30 | ((gi == k) & (mem == m))
    rtx_pro = name.str.contains(RTX_PRO_6000_NAME) & gi.is_in(sorted(_SLICES_4_PRODUCT))
    slices = (
        pl.when(a30 | (rtx_pro.fill_null(value=False) & (mem > 0)))
        .then(pl.lit(4.0))
        .when(gi.is_in(sorted(_SLICES_7)) & (mem > 0))
        .then(pl.lit(7.0))
        .otherwise(None)
    )
    ci_bad = ci.is_not_null() & ((ci < 1) | (ci > gi))
    used = pl.coalesce(ci, gi) if compute_instance else gi
    return pl.when(ci_bad).then(None).otherwise(used.cast(pl.Float64) / slices)
