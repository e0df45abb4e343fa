"""The MIG fraction rule (METRICS.md "MIG fraction", ``metrics/mig.py``), one rule for sacct and
scontrol TRES, Kubernetes resource names and DCGM profile labels.

Hand-computed: a slice of ``K`` compute slices is ``K/7`` of an A100/H100/H200/B200/GB200 and
``K/4`` of an A30 (profiles ``1g.6gb``, ``2g.12gb``, ``4g.24gb``); a compute instance ``Cc.`` is
``C/slices`` where asked; impossible profiles are not MIG.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from metrics.attribution import mig_fraction as dcgm_fraction
from metrics.mig import mig_fraction, mig_fraction_expr
from pipelines.kubernetes._pods_parse import gpu_worth
from pipelines.slurm._sacct_values import gpus_from_tres, tres_gpus

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mig-tres" / "alloc_tres_with_mig_types.txt"

CASES = [
    # site-named GRES types (the profile token anywhere in the type)
    ("a100_3g.20gb", 3 / 7),
    ("a100_1g.5gb", 1 / 7),
    ("a100_80gb_pcie_3g.40gb", 3 / 7),
    ("nvidia_h100_80gb_hbm3_1g.10gb", 1 / 7),
    ("nvidia_h100_80gb_hbm3_2g.20gb", 2 / 7),
    ("h100_pcie_1g.10gb", 1 / 7),
    ("H100_PCIE_2G.20GB", 2 / 7),
    ("h200_1g.18gb", 1 / 7),
    ("h200_3g.71gb", 3 / 7),
    ("gb200_7g.186gb", 1.0),
    ("b200_4g.90gb", 4 / 7),
    # bare profiles and +me variants
    ("3g.40gb", 3 / 7),
    ("1g.5gb+me", 1 / 7),
    ("1g.10gb", 1 / 7),
    ("7g.80gb", 1.0),
    # A30: 4 slices
    ("1g.6gb", 1 / 4),
    ("1g.6gb+me", 1 / 4),
    ("2g.12gb", 2 / 4),
    ("a30_2g.12gb+me", 2 / 4),
    ("4g.24gb", 1.0),
    # compute instances count C
    ("1c.3g.40gb", 1 / 7),
    ("2c.4g.40gb", 2 / 7),
    # not MIG: whole GPU types, impossible profiles, no token
    ("a100", None),
    ("v100", None),
    ("a100_80gb", None),
    ("a100-40gb", None),
    ("8g.80gb", None),
    ("5g.40gb", None),
    ("0g.10gb", None),
    ("3c.1g.10gb", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_mig_fraction_python_and_polars_agree(name: str | None, expected: float | None) -> None:
    """Each name's fraction by hand; the polars expression gives the same value."""
    got = mig_fraction(name)
    assert got == (pytest.approx(expected) if expected is not None else None)
    frame = pl.DataFrame({"n": [name]}, schema={"n": pl.String})
    expr = frame.select(x=mig_fraction_expr(pl.col("n")))["x"][0]
    assert expr == (pytest.approx(expected) if expected is not None else None)


def test_gpu_instance_fraction_for_dcgm() -> None:
    """DCGM samples cover the GPU instance: ``1c.3g.40gb`` is 3/7 there; no or an unreadable
    profile is a whole GPU (1.0); the A30 ``1g.6gb`` is 1/4."""
    assert mig_fraction("1c.3g.40gb", compute_instance=False) == pytest.approx(3 / 7)
    frame = pl.DataFrame({"p": [None, "3g.40gb", "1c.3g.40gb", "1g.6gb", "junk", "9g.99gb"]})
    got = frame.select(x=dcgm_fraction(pl.col("p")))["x"].to_list()
    assert got == pytest.approx([1.0, 3 / 7, 3 / 7, 1 / 4, 1.0, 1.0])


def test_kubernetes_resource_names() -> None:
    """``nvidia.com/mig-<profile>`` resources of the NVIDIA device plugin's mixed strategy."""
    assert gpu_worth("nvidia.com/gpu") == 1.0
    assert gpu_worth("nvidia.com/mig-3g.20gb") == pytest.approx(3 / 7)
    assert gpu_worth("nvidia.com/mig-1g.6gb") == pytest.approx(1 / 4)
    assert gpu_worth("nvidia.com/mig-1c.3g.40gb") == pytest.approx(1 / 7)
    assert gpu_worth("nvidia.com/mig-1g.10gb+me") == pytest.approx(1 / 7)
    assert gpu_worth("nvidia.com/mig-8g.80gb") is None
    assert gpu_worth("cpu") is None


# The fixture's lines, in order, and their GPU counts by hand (the untyped ``gres/gpu=N`` counts
# devices, i.e. slices, so a MIG type overrides it):
#   1: 3 × 3/7                     = 9/7   (the old rule read 3)
#   2: 2 × 3/7 + 1 × 4/7           = 10/7
#   3: 2 whole + 2 × 1/7           = 16/7  (the old rule read 4)
#   4: 2 × 3/7 + 2 × 4/7           = 2
#   5: 2 whole + 14 × 1/7          = 4     (the old rule read 16)
#   6: 16 × 1/7 + 6 × 2/7 = 28/7   = 4     (the old rule read 22)
EXPECTED_TRES = [9 / 7, 10 / 7, 16 / 7, 2.0, 4.0, 4.0]


def test_real_tres_strings_with_site_named_mig_types() -> None:
    """Real AllocTRES/CfgTRES strings (fixture SOURCE.md): the row-wise and the columnar TRES
    readers give the hand-computed GPU counts; a MIG slice has no single GPU type."""
    lines = [line for line in FIXTURE.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(EXPECTED_TRES)
    assert [gpus_from_tres(t) for t in lines] == pytest.approx(EXPECTED_TRES)
    frame = tres_gpus(pl.Series(lines, dtype=pl.String))
    assert frame["gpus"].to_list() == pytest.approx(EXPECTED_TRES)
    # line 3 and 5 mix whole a100s with slices: more than one type, so no single type
    assert frame["gpu_type"].to_list() == [None, None, "a100", None, "a100", None]
