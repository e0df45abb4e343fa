"""A query result as a box table that fits the terminal, like DuckDB's own renderer.

Columns are cut to their width with ``…``; when there are more columns than fit, the middle ones
are left out (one ``…`` column stands for them); numbers are right-aligned; a long result shows
its first and last rows around a ``⋮`` row; a footer says how much is shown.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
from typing import Any

import polars as pl

__all__ = ["render_table"]

#: Widest a column gets, and how far one may be cut when columns compete for the width.
_MAX_WIDTH = 40
_MIN_WIDTH = 12
_ELLIPSIS = "…"


def _cell(value: Any) -> str:
    """One value as text: NULL, floats with thousands separators (small ones to 4 significant
    digits), instants to the second, the rest as ``str``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:,.2f}" if abs(value) >= 1 or value == 0 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value).replace("\n", " ")


def _fit(text: str, width: int, right: bool) -> str:
    if len(text) > width:
        text = text[: max(width - 1, 0)] + _ELLIPSIS
    return text.rjust(width) if right else text.ljust(width)


def _total(widths: list[int]) -> int:
    """Characters of a row: ``│ a │ b │`` = Σ widths + 3 per column + 1."""
    return sum(widths) + 3 * len(widths) + 1


def _choose(natural: list[int], width: int) -> tuple[list[int], list[int]]:
    """Which columns to show (indexes, in order) and their widths, within ``width``."""
    n = len(natural)
    if _total(natural) <= width:
        return list(range(n)), natural
    least = [min(w, _MIN_WIDTH) for w in natural]
    if _total(least) <= width:
        chosen = list(range(n))
    else:
        # Alternate from the left and the right edges; one "…" column (width 1) stands for the
        # middle ones.
        order = [i for pair in zip(range(n), reversed(range(n)), strict=True) for i in pair]
        chosen = []
        for i in dict.fromkeys(order[:n]):
            trial = sorted([*chosen, i])
            if _total([least[j] for j in trial] + [1]) > width and chosen:
                break
            chosen = trial
    widths = [least[i] for i in chosen]
    spare = width - _total(widths + ([1] if len(chosen) < n else []))
    while spare < 0 and max(widths) > 1:  # a very narrow terminal: cut the widest further
        widths[widths.index(max(widths))] -= 1
        spare += 1
    grew = True
    while spare > 0 and grew:  # give the spare width back a character at a time
        grew = False
        for k, i in enumerate(chosen):
            if spare > 0 and widths[k] < natural[i]:
                widths[k] += 1
                spare -= 1
                grew = True
    return chosen, widths


def render_table(df: pl.DataFrame, *, width: int | None = None, max_rows: int = 40) -> str:
    """``df`` as a box table at most ``width`` characters wide (default: the terminal's).

    Args:
        df: the result.
        width: characters per line; ``None`` reads the terminal (80 when not a terminal).
        max_rows: rows shown at most (the first and last halves).

    Returns:
        The table and a footer ``N rows × M columns (K shown)``, lines joined with newlines.
    """
    width = width or shutil.get_terminal_size((80, 24)).columns
    rows = df.rows()
    cut = len(rows) > max_rows
    head_n = max_rows - max_rows // 2
    shown_rows = rows[:head_n] + rows[len(rows) - max_rows // 2 :] if cut else rows
    text = [[_cell(v) for v in row] for row in shown_rows]
    names = df.columns
    types = [str(t).lower() for t in df.dtypes]
    right = [t.is_numeric() for t in df.dtypes]
    natural = [
        min(_MAX_WIDTH, max([len(names[i]), len(types[i]), *(len(r[i]) for r in text)]))
        for i in range(df.width)
    ]
    chosen, widths = _choose(natural, width) if df.width else ([], [])
    elided = len(chosen) < df.width
    # Where the "…" column goes: after the last column from the left.
    gap = next((k for k in range(1, len(chosen)) if chosen[k] != chosen[k - 1] + 1), len(chosen))

    def line(cells: list[str], fill: str = " ") -> str:
        parts = list(cells)
        if elided:
            parts.insert(gap, fill)
        return "│ " + " │ ".join(parts) + " │"

    def rule(left: str, mid: str, right_: str) -> str:
        ws = list(widths)
        if elided:
            ws.insert(gap, 1)
        return left + mid.join("─" * (w + 2) for w in ws) + right_

    out = [rule("┌", "┬", "┐")]
    out.append(line([_fit(names[i], w, False) for i, w in zip(chosen, widths, strict=True)],
                    _ELLIPSIS))  # fmt: skip
    out.append(line([_fit(types[i], w, False) for i, w in zip(chosen, widths, strict=True)]))
    out.append(rule("├", "┼", "┤"))
    for n, r in enumerate(text):
        if cut and n == head_n:
            out.append(line([_fit("⋮", w, right[i]) for i, w in zip(chosen, widths, strict=True)]))
        out.append(line([_fit(r[i], w, right[i]) for i, w in zip(chosen, widths, strict=True)]))
    out.append(rule("└", "┴", "┘"))
    shown = f" ({len(shown_rows):,} shown)" if cut else ""
    out.append(
        f"{len(rows):,} row{'s' if len(rows) != 1 else ''}{shown} × {df.width} "
        f"column{'s' if df.width != 1 else ''} ({len(chosen)} shown)"
    )
    return "\n".join(out)
