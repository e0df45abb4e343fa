"""Value parsers for ``sacct`` fields: vectorised polars expressions plus scalar twins.

Every expression builder returns the parsed value and, where a value can be malformed, a boolean
expression that is true on rows whose non-empty value could not be parsed (the caller rejects
those rows).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import hostlist
import polars as pl

__all__ = [
    "MAX_ARRAY_TASKS",
    "NULL_TOKENS",
    "duration_seconds",
    "expand_array_spec",
    "expand_nodelist",
    "gpus_from_tres",
    "localize",
    "req_mem",
    "time_parts",
    "tres_gpu_type",
    "tres_gpus",
]

#: Values that mean "no value" in any sacct column.
NULL_TOKENS: tuple[str, ...] = ("", "None", "Unknown", "N/A", "NONE", "INVALID")

#: A bracketed array row expanding to more tasks than this is rejected (Slurm's MaxArraySize
#: cannot exceed 4 000 001).
MAX_ARRAY_TASKS = 4_000_001

_DURATION_RE = (
    r"^(?:(?P<d>\d+)-)?(?P<a>\d+)(?::(?P<b>\d+))?(?::(?P<c>\d+))?(?:\.(?P<f>\d+))?$"
)
_MEM_RE = r"^(?P<num>\d+(?:\.\d+)?)(?P<unit>[KMGTP]?)(?P<per>[cn]?)$"
_MEM_FACTOR_MB = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def is_null_token(expr: pl.Expr) -> pl.Expr:
    """True where the raw string is NULL or one of :data:`NULL_TOKENS`."""
    return expr.is_null() | expr.is_in(list(NULL_TOKENS))


def duration_seconds(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Parse a Slurm duration into whole seconds.

    Accepts ``SS``, ``MM:SS``, ``MM:SS.mmm``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM`` and
    ``D-HH:MM:SS`` with any number of days; fractions of a second are truncated.

    Args:
        expr: the raw String column.

    Returns:
        ``(seconds, bad)``: Int64 seconds (NULL for empty / NULL tokens), and a Boolean that is
        true where a non-empty value is not a duration.
    """
    g = expr.str.extract_groups(_DURATION_RE)
    d = g.struct.field("d").cast(pl.Int64)
    a = g.struct.field("a").cast(pl.Int64)
    b = g.struct.field("b").cast(pl.Int64)
    c = g.struct.field("c").cast(pl.Int64)
    days = d.fill_null(0) * 86_400
    secs = (
        pl.when(c.is_not_null())
        .then(days + a * 3600 + b * 60 + c)
        .when(b.is_not_null() & d.is_not_null())
        .then(days + a * 3600 + b * 60)
        .when(b.is_not_null())
        .then(a * 60 + b)
        .when(d.is_not_null())
        .then(days + a * 3600)
        .otherwise(a)
    )
    bad = ~is_null_token(expr) & a.is_null()
    return secs, bad


def time_parts(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Parse a sacct time into an aware UTC value, or a naive local value still to localise.

    Args:
        expr: the raw String column: ISO local ``2015-06-26T13:57:00``, ISO with an offset
            (``+02:00``, ``+0200`` or ``Z``), or epoch seconds (all digits).

    Returns:
        ``(aware_utc, naive_local, bad)``: Datetime("us", "UTC") for epoch and offset values,
        naive Datetime("us") for ISO local values (localise with :func:`localize`), and a
        Boolean that is true where a non-empty value is none of these.
    """
    epoch = (
        pl.when(expr.str.contains(r"^\d{1,12}$"))
        .then(expr.cast(pl.Int64, strict=False))
        .otherwise(None)
    )
    aware_epoch = pl.from_epoch(epoch, time_unit="s").dt.replace_time_zone("UTC")
    with_offset = expr.str.contains(r"T\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)$")
    aware_offset = (
        pl.when(with_offset)
        .then(expr.str.replace(r"Z$", "+00:00"))
        .otherwise(None)
        .str.strptime(pl.Datetime("us", "UTC"), "%Y-%m-%dT%H:%M:%S%.f%z", strict=False)
    )
    aware = pl.coalesce(aware_epoch, aware_offset)
    naive = (
        pl.when(with_offset)
        .then(None)
        .otherwise(expr)
        .str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
    )
    bad = ~is_null_token(expr) & aware.is_null() & naive.is_null()
    return aware, naive, bad


def localize(naive: pl.Series, tz: str) -> tuple[pl.Series, list[int], list[int]]:
    """Read naive local times in the zone ``tz`` and convert them to UTC.

    DST-ambiguous times (the repeated hour) take the earliest instant; non-existent times (the
    skipped hour) are read with the offset in force before the gap, which moves them forward by
    the gap (``02:30`` on a spring-forward night in New York becomes ``07:30Z`` = ``03:30`` EDT).

    Args:
        naive: a Datetime("us") Series without time zone.
        tz: an IANA zone name.

    Returns:
        ``(utc, ambiguous_rows, nonexistent_rows)``: the Datetime("us", "UTC") Series and the row
        positions that were ambiguous or non-existent.

    Raises:
        zoneinfo.ZoneInfoNotFoundError: ``tz`` is not a known zone.
    """
    if tz == "UTC":
        return naive.dt.replace_time_zone("UTC"), [], []
    zone = ZoneInfo(tz)
    local = naive.dt.replace_time_zone(tz, ambiguous="null", non_existent="null")
    odd = (naive.is_not_null() & local.is_null()).arg_true().to_list()
    utc = local.dt.convert_time_zone("UTC")
    if not odd:
        return utc, [], []
    ambiguous: list[int] = []
    nonexistent: list[int] = []
    fixed: list[datetime] = []
    for pos in odd:
        value: datetime = naive[pos]
        first = value.replace(tzinfo=zone, fold=0)
        second = value.replace(tzinfo=zone, fold=1)
        round_trip = first.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
        if round_trip == value:
            ambiguous.append(pos)
            fixed.append(min(first.astimezone(UTC), second.astimezone(UTC)))
        else:
            nonexistent.append(pos)
            fixed.append(first.astimezone(UTC))
    patch = pl.Series(fixed, dtype=pl.Datetime("us", "UTC"))
    return utc.scatter(odd, patch), ambiguous, nonexistent


_TYPED_ITEM_RE = r"^gres/gpu:([^=]+)=(\d+(?:\.\d+)?)$"
_UNTYPED_ITEM_RE = r"^gres/gpu=(\d+(?:\.\d+)?)$"


def _typed_items(tres: pl.Expr) -> pl.Expr:
    """The ``gres/gpu:TYPE=N`` items of a TRES string, as a list."""
    return tres.str.split(",").list.filter(pl.element().str.contains(_TYPED_ITEM_RE))


def _item_count() -> pl.Expr:
    return pl.element().str.extract(_TYPED_ITEM_RE, 2).cast(pl.Float64)


def _item_mig_k() -> pl.Expr:
    return pl.element().str.extract(_TYPED_ITEM_RE, 1).str.extract(r"^(\d+)g\.", 1).cast(
        pl.Float64
    )


def tres_gpus(tres: pl.Expr) -> pl.Expr:
    """GPU count of a TRES string (see :func:`gpus_from_tres` for the rules).

    Args:
        tres: the raw AllocTRES / ReqTRES String column.

    Returns:
        Float64 GPUs; 0.0 for a TRES string without GPUs (including ``""``), NULL for NULL.
    """
    items = _typed_items(tres)
    mig = items.list.eval(
        pl.when(_item_mig_k().is_not_null())
        .then(_item_count() * _item_mig_k() / 7.0)
        .otherwise(0.0)
    ).list.sum()
    full = items.list.eval(
        pl.when(_item_mig_k().is_null()).then(_item_count()).otherwise(0.0)
    ).list.sum()
    has_mig = items.list.eval(_item_mig_k().is_not_null()).list.any()
    untyped = (
        tres.str.split(",")
        .list.eval(pl.element().str.extract(_UNTYPED_ITEM_RE, 1).cast(pl.Float64))
        .list.drop_nulls()
        .list.first()
    )
    gpus = (
        pl.when(tres.is_null())
        .then(None)
        .when(has_mig)
        .then(mig + full)
        .when(untyped.is_not_null())
        .then(untyped)
        .otherwise(full)
        .cast(pl.Float64)
    )
    # the sum of an empty list is -0.0; report a plain 0.0
    return pl.when(gpus == 0.0).then(0.0).otherwise(gpus)


def tres_gpu_type(tres: pl.Expr) -> pl.Expr:
    """The GPU type of a TRES string when exactly one non-MIG typed ``gres/gpu:TYPE`` is named."""
    names = (
        _typed_items(tres)
        .list.eval(pl.element().str.extract(_TYPED_ITEM_RE, 1))
        .list.filter(~pl.element().str.contains(r"^\d+g\."))
        .list.unique()
    )
    return pl.when(names.list.len() == 1).then(names.list.first()).otherwise(None)


def gpus_from_tres(tres: str | None) -> float | None:
    """GPU count from an AllocTRES / ReqTRES string.

    The untyped ``gres/gpu=N`` wins; without it, the typed ``gres/gpu:TYPE=N`` entries are
    summed. A MIG profile type ``gres/gpu:Kg.*=N`` (``gres/gpu:3g.40gb=1``) counts N×K/7 and
    overrides the untyped count. ``gres/gpumem`` and ``gres/gpuutil`` are not GPUs.

    Args:
        tres: e.g. ``"billing=8,cpu=8,gres/gpu:v100=1,gres/gpu=1,mem=10G,node=1"``.

    Returns:
        The GPU count (fractional for MIG); 0.0 for a string without GPUs (including ``""``);
        None for None.
    """
    if tres is None:
        return None
    untyped: float | None = None
    full = 0.0
    mig = 0.0
    has_mig = False
    for item in tres.split(","):
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"\d+(?:\.\d+)?", value):
            continue
        count = float(value)
        if key == "gres/gpu":
            if untyped is None:
                untyped = count
        elif key.startswith("gres/gpu:") and len(key) > len("gres/gpu:"):
            match = re.match(r"(\d+)g\.", key[len("gres/gpu:") :])
            if match:
                has_mig = True
                mig += count * int(match.group(1)) / 7.0
            else:
                full += count
    if has_mig:
        return mig + full
    if untyped is not None:
        return untyped
    return full


def req_mem(expr: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Parse ReqMem (``4000Mc``, ``16000Mn``, ``312.50G``, ``3000M``).

    Args:
        expr: the raw String column.

    Returns:
        ``(mb, per, bad)``: Float64 megabytes (MiB, as Slurm counts), ``'cpu'``/``'node'``/NULL,
        and a Boolean true where a non-empty value does not parse.
    """
    g = expr.str.extract_groups(_MEM_RE)
    num = g.struct.field("num").cast(pl.Float64)
    factor = g.struct.field("unit").replace_strict(_MEM_FACTOR_MB, return_dtype=pl.Float64)
    per = g.struct.field("per").replace_strict(
        {"c": "cpu", "n": "node", "": None}, default=None, return_dtype=pl.String
    )
    bad = ~is_null_token(expr) & num.is_null()
    return num * factor, per, bad


def expand_array_spec(spec: str) -> tuple[list[int], int | None]:
    """Expand the inside of a pending array id's brackets.

    Args:
        spec: e.g. ``"1-5,7,10-20:2%4"`` (ranges, single ids, ``:step`` and a ``%throttle``).

    Returns:
        ``(task_ids, throttle)`` with task ids in the order written.

    Raises:
        ValueError: the spec is malformed or names more than :data:`MAX_ARRAY_TASKS` tasks.
    """
    body, pct, throttle_text = spec.partition("%")
    throttle = int(throttle_text) if pct else None
    tasks: list[int] = []
    for part in body.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if match is None:
            raise ValueError(f"bad array range {part!r}")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        step = int(match.group(3)) if match.group(3) else 1
        if last < first or step < 1:
            raise ValueError(f"bad array range {part!r}")
        if len(tasks) + (last - first) // step + 1 > MAX_ARRAY_TASKS:
            raise ValueError(f"array names more than {MAX_ARRAY_TASKS} tasks")
        tasks.extend(range(first, last + 1, step))
    return tasks, throttle


def expand_nodelist(raw: str) -> list[str]:
    """Expand a Slurm host list (``gpu-[001-004],node7``) with python-hostlist.

    Raises:
        ValueError: the host list is malformed.
    """
    try:
        hosts: list[str] = hostlist.expand_hostlist(raw)
    except hostlist.BadHostlist as err:
        raise ValueError(str(err)) from err
    return hosts
