"""The Slurm settings in force, from ``scontrol show config``.

``scontrol show config`` prints one ``Name = value`` line per setting (a header line and
sections without ``=`` are skipped). :func:`priority_settings` picks what the fairness rule needs:
``PriorityWeightFairshare``, the other ``PriorityWeight*`` integers (``PriorityWeightTRES`` is a
TRES list and is left out), and ``PriorityDecayHalfLife`` (``days-hh:mm:ss`` or ``hh:mm:ss``,
in seconds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

__all__ = [
    "PrioritySettings",
    "parse_duration",
    "parse_scontrol_config",
    "preempt_exempt_s",
    "priority_settings",
    "scheduler_parameters_line",
]

_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


class PrioritySettings(NamedTuple):
    """Priority weights and decay half-life in force (None: not in the config)."""

    weight_fairshare: int | None
    other_weights: dict[str, int] | None
    decay_half_life_s: float | None


def parse_scontrol_config(text: str) -> dict[str, str]:
    """``Name = value`` lines of ``scontrol show config`` → name → value (first wins)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def parse_duration(value: str) -> float | None:
    """Slurm durations: ``7-00:00:00``, ``14-0``, ``01:30:00``, ``90`` (minutes) → seconds."""
    v = value.strip()
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", v)
    if not m:
        return None
    days, a, b, c = m.groups()
    if days is not None:  # days-hours[:minutes[:seconds]]
        h, mi, s = int(a), int(b or 0), int(c or 0)
        return int(days) * 86400 + h * 3600 + mi * 60 + s
    if c is not None:  # hours:minutes:seconds
        return int(a) * 3600 + int(b) * 60 + int(c)
    if b is not None:  # minutes:seconds
        return int(a) * 60 + int(b)
    return int(a) * 60.0  # minutes


def priority_settings(config: Mapping[str, str]) -> PrioritySettings:
    """The fairness rule's inputs from a parsed config (all None when the config is empty).

    Slurm reads its parameter names whatever their case, and ``scontrol show config`` prints
    ``PriorityWeightFairShare`` where slurm.conf's manual writes ``PriorityWeightFairshare``:
    the names are matched without case."""
    weights: dict[str, int] = {}
    fairshare: int | None = None
    half: str | None = None
    for k, v in config.items():
        key = k.lower()
        if key == "prioritydecayhalflife":
            half = half or v
        if not key.startswith("priorityweight") or key == "priorityweighttres":
            continue
        try:
            weight = int(v.split()[0])
        except (ValueError, IndexError):
            continue
        if key == "priorityweightfairshare":
            fairshare = weight if fairshare is None else fairshare
        else:
            weights.setdefault(k, weight)
    return PrioritySettings(
        weight_fairshare=fairshare,
        other_weights=weights if fairshare is not None else None,
        decay_half_life_s=parse_duration(half) if half else None,
    )


def scheduler_parameters_line(config: Mapping[str, str], items: Mapping[str, str | None]) -> str:
    """The whole ``SchedulerParameters=`` line of slurm.conf: the one in force (``config``'s,
    from ``scontrol show config``) with ``items`` set.

    ``SchedulerParameters`` is one slurm.conf option holding a comma-separated list; a line
    naming only the items changed would drop every other item in force when pasted, so a patch
    writes the list in force with its items replaced in place (a new one appended).

    Args:
        config: parsed ``scontrol show config`` (its ``SchedulerParameters``; absent or
            ``(null)``: none in force).
        items: item name → value: text (``bf_window`` → ``2880``: ``bf_window=2880``), ``"true"``
            for a flag (``bf_continue``), None to remove the item (unset: Slurm's default).

    Returns:
        ``SchedulerParameters=…`` (``SchedulerParameters=`` alone when nothing is left).
    """
    text = (config.get("SchedulerParameters") or "").strip()
    current = [] if text in ("", "(null)") else [i.strip() for i in text.split(",") if i.strip()]

    def written(name: str, value: str) -> str:
        return name if value == "true" else f"{name}={value}"

    out: list[str] = []
    done: set[str] = set()
    for item in current:
        name = item.partition("=")[0]
        if name in items:
            if name not in done and items[name] is not None:
                out.append(written(name, str(items[name])))
            done.add(name)
        else:
            out.append(item)
    out += [written(n, str(v)) for n, v in items.items() if n not in done and v is not None]
    return "SchedulerParameters=" + ",".join(out)


def preempt_exempt_s(config: Mapping[str, str] | None) -> float | None:
    """``PreemptExemptTime`` in force, in seconds, from a parsed ``scontrol show config``
    (``00:25:00``, ``1-00:00:00``; ``NONE``, ``(null)``, ``-1`` or absent from a loaded config:
    0, no exemption); None when no config is loaded or the value cannot be read."""
    if config is None:
        return None
    value = next((v for k, v in config.items() if k.lower() == "preemptexempttime"), None)
    text = (value or "").strip()
    if text.upper() in ("", "NONE", "(NULL)", "-1", "N/A"):
        return 0.0
    return parse_duration(text)
