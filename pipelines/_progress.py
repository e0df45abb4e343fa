"""Progress bars for long commands (``goodput generate``, ``ingest``, ``materialize``).

A bar (tqdm) is drawn on stderr only when stderr is a terminal, so CI logs, pipes and tests see
the commands' plain output lines and no control characters.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int, desc: str, *, unit: str = "step", show: bool | None = None) -> Any:
    """A ``tqdm`` bar of ``total`` steps, disabled unless ``show`` (default: stderr is a TTY).

    Args:
        total: number of steps.
        desc: label shown before the bar.
        unit: what one step is (``"file"``, ``"run"``, …).
        show: force the bar on or off; None draws it only on a terminal.

    Returns:
        The bar: call ``update(1)`` per step, ``write(text)`` to print a line above it, and
        ``close()`` at the end (a disabled bar's ``write`` still prints).
    """
    from tqdm import tqdm  # type: ignore[import-untyped]

    enabled = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=False)
