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

from metrics.mig import mig_fraction, mig_fraction_expr

__all__ = [
    "EPOCH_RE",
    "MAX_ARRAY_TASKS",
    "NULL_TOKENS",
    "OFFSET_RE",
    "duration_parts",
    "duration_seconds",
    "expand_array_spec",
    "expand_nodelist",
    "gpus_from_tres",
    "gres_as_tres",
    "is_null_token",
    "localize",
    "req_mem",
    "req_mem_parts",
    "time_parts",
    "tres_gpus",
]

#: Values that mean "no value" in any sacct column.
NULL_TOKENS: tuple[str, ...] = ("", "None", "Unknown", "N/A", "NONE", "INVALID")

#: A bracketed array row expanding to more tasks than this is rejected (Slurm's MaxArraySize
#: cannot exceed 4 000 001).
MAX_ARRAY_TASKS = 4_000_001

_DURATION_RE = (
    r"^(?:(?P<d>\d{1,12})-)?(?P<a>\d{1,12})(?::(?P<b>\d{1,12}))?(?::(?P<c>\d{1,12}))?"
    r"(?:\.(?P<f>\d+))?$"
)
_FAST_DURATION_RE = r"^(?:\d{1,9}-)?\d\d:\d\d:\d\d$"
#: An epoch-seconds time (``SLURM_TIME_FORMAT=%s``).
EPOCH_RE = r"^\d{1,12}$"
#: An ISO time with a UTC offset (date and time apart by ``T``, or by a space: ``%F %T%z``).
OFFSET_RE = r"[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)$"
#: A date and a time apart by a space (``SLURM_TIME_FORMAT="%F %T"``).
_SPACED_RE = r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)"
_MEM_RE = r"^(?P<num>\d+(?:\.\d+)?)(?P<unit>[KMGTP]?)(?P<per>[cn]?)$"
_MEM_FACTOR_MB = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def is_null_token(expr: pl.Expr) -> pl.Expr:
    """True where the raw string is NULL or one of :data:`NULL_TOKENS`."""
    return expr.is_null() | expr.is_in(list(NULL_TOKENS))


def duration_parts(expr: pl.Expr) -> pl.Expr:
    """Stage one of a Slurm duration: a struct of the seconds of ``[D-]HH:MM:SS`` values, read
    by position (``hms``), and the regex groups ``d``, ``a``, ``b``, ``c`` of any other form
    (the regex skips the ``[D-]HH:MM:SS`` values, which are most of them)."""
    is_fast = expr.str.contains(_FAST_DURATION_RE)
    tail = expr.str.slice(-8)
    days = expr.str.head(-9).cast(pl.Int64, strict=False).fill_null(0)
    fast = (
        days * 86_400
        + tail.str.slice(0, 2).cast(pl.Int64, strict=False) * 3600
        + tail.str.slice(3, 2).cast(pl.Int64, strict=False) * 60
        + tail.str.slice(6, 2).cast(pl.Int64, strict=False)
    )
    # Slurm prints minutes and seconds below 60, and hours below 24 after a day count
    # (secs2time_str): ``1-25:00:00`` or ``00:75:00`` is no duration it wrote.
    in_range = (
        (tail.str.slice(3, 2) < "60")
        & (tail.str.slice(6, 2) < "60")
        & ((expr.str.len_bytes() == 8) | (tail.str.slice(0, 2) < "24"))
    )
    groups = pl.when(is_fast).then(None).otherwise(expr).str.extract_groups(_DURATION_RE)
    return pl.struct(
        hms=pl.when(is_fast).then(fast), hms_ok=pl.when(is_fast).then(in_range), groups=groups
    )


def duration_seconds(parts: pl.Expr, raw: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Whole seconds of a Slurm duration, from its :func:`duration_parts`.

    Accepts ``SS``, ``MM:SS``, ``MM:SS.mmm``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM`` and
    ``D-HH:MM:SS`` with any number of days; fractions of a second are truncated.

    Args:
        parts: the struct column made by :func:`duration_parts`.
        raw: the raw String column the parts came from.

    Returns:
        ``(seconds, bad)``: Int64 seconds (NULL for empty / NULL tokens), and a Boolean that is
        true where a non-empty value is not a duration, or one Slurm never prints: minutes or
        seconds of 60 or more after an hour or minute count, hours of 24 or more after a day
        count (``1-25:00:00``; Slurm's ``secs2time_str``); such a value's seconds are NULL.
    """
    groups = parts.struct.field("groups")
    d = groups.struct.field("d").cast(pl.Int64)
    a = groups.struct.field("a").cast(pl.Int64)
    b = groups.struct.field("b").cast(pl.Int64)
    c = groups.struct.field("c").cast(pl.Int64)
    days = d.fill_null(0) * 86_400
    slow = (
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
    hms = parts.struct.field("hms")
    # out of range (Slurm's secs2time_str): minutes or seconds of 60 or more after an hour or
    # minute count, hours of 24 or more after a day count
    slow_ok = (
        (c.is_null() | ((c < 60) & (b < 60)))
        & (c.is_not_null() | b.is_null() | d.is_null() | (b < 60))
        & (c.is_not_null() | b.is_null() | d.is_not_null() | (b < 60))
        & (d.is_null() | (a < 24))
    )
    out_of_range = pl.coalesce(~parts.struct.field("hms_ok"), ~slow_ok).fill_null(False)
    bad = (~is_null_token(raw) & a.is_null() & hms.is_null()) | out_of_range
    seconds = pl.when(out_of_range).then(None).otherwise(pl.coalesce(hms, slow))
    return seconds, bad


def time_parts(
    expr: pl.Expr, *, epoch: bool = True, offset: bool = True, space: bool = True
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Parse a sacct time into an aware UTC value, or a naive local value still to localise.

    Args:
        expr: the raw String column: ISO local ``2015-06-26T13:57:00``, ISO with an offset
            (``+02:00``, ``+0200`` or ``Z``), or epoch seconds (all digits). The date and the
            time may be apart by a space instead of ``T`` (``SLURM_TIME_FORMAT="%F %T"``, with
            or without ``%z``: Slurm formats times with strftime).
        epoch: whether any value may be epoch seconds (False skips that branch).
        offset: whether any value may carry an offset (False skips that branch).
        space: whether any value may hold a space (False skips reading a space as ``T``).

    Returns:
        ``(aware_utc, naive_local, bad)``: Datetime("us", "UTC") for epoch and offset values,
        naive Datetime("us") for ISO local values (localise with :func:`localize`), and a
        Boolean that is true where a non-empty value is none of these.
    """
    aware: pl.Expr = pl.lit(None, dtype=pl.Datetime("us", "UTC"))
    if space:  # "%F %T" → "%FT%T" (only there: any other space stays bad)
        expr = expr.str.replace(_SPACED_RE, "${1}T${2}")
    naive_source = expr
    if epoch:
        seconds = pl.when(expr.str.contains(EPOCH_RE)).then(expr.cast(pl.Int64, strict=False))
        aware = pl.from_epoch(seconds, time_unit="s").dt.replace_time_zone("UTC")
    if offset:
        with_offset = expr.str.contains(OFFSET_RE)
        aware_offset = (
            pl.when(with_offset)
            .then(expr.str.replace(r"Z$", "+00:00"))
            .str.strptime(pl.Datetime("us", "UTC"), "%Y-%m-%dT%H:%M:%S%.f%z", strict=False)
        )
        aware = pl.coalesce(aware, aware_offset)
        naive_source = pl.when(with_offset).then(None).otherwise(expr)
    naive = naive_source.str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
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


_ITEMS_RE = r"(?:^|,)gres/gpu:[^=,]+=[^,]*"
_ITEM_RE = r"^,?gres/gpu:(?P<name>[^=,]+)=(?P<count>\d+(?:\.\d+)?)$"
_UNTYPED_RE = r"(?:^|,)gres/gpu=([^,]*)"


def _item_values(frame: pl.DataFrame, item: pl.Expr) -> pl.DataFrame:
    """Add per typed item: its GPU ``weighted`` count (N, or N × the MIG fraction of
    :func:`metrics.mig.mig_fraction` for a MIG type), ``has_mig`` and the non-MIG ``type`` name."""
    frame = frame.with_columns(_parts=item.str.extract_groups(_ITEM_RE)).with_columns(
        _name=pl.col("_parts").struct.field("name"),
        _count=pl.col("_parts").struct.field("count").cast(pl.Float64),
    )
    frame = frame.with_columns(_k=mig_fraction_expr(pl.col("_name")))
    return frame.with_columns(
        weighted=pl.col("_count") * pl.coalesce(pl.col("_k"), pl.lit(1.0)),
        has_mig=pl.col("_k").is_not_null() & pl.col("_count").is_not_null(),
        type=pl.when(pl.col("_k").is_null() & pl.col("_count").is_not_null()).then("_name"),
    ).drop("_parts", "_name", "_count", "_k")


def tres_gpus(tres: pl.Series) -> pl.DataFrame:
    """GPU count and GPU type of each TRES string (see :func:`gpus_from_tres` for the rules).

    Rows with one typed item (``gres/gpu:TYPE=N``) are typed in place; the rare rows with
    several are exploded to one row per item and aggregated back.

    Args:
        tres: raw AllocTRES / ReqTRES strings.

    Returns:
        A frame of the same height with ``gpus`` (Float64: 0.0 for a TRES string without GPUs,
        including ``""``; NULL for NULL) and ``gpu_type`` (String: the type when exactly one
        non-MIG typed item is named, else NULL).
    """
    frame = pl.DataFrame({"tres": tres}).with_columns(
        items=pl.col("tres").str.extract_all(_ITEMS_RE),
        untyped=pl.col("tres").str.extract(_UNTYPED_RE, 1),
    )
    frame = frame.with_columns(
        n_items=pl.col("items").list.len(),
        untyped=pl.when(pl.col("untyped").str.contains(r"^\d+(?:\.\d+)?$"))
        .then(pl.col("untyped"))
        .cast(pl.Float64),
    )
    frame = _item_values(frame, pl.col("items").list.first()).with_columns(
        weighted=pl.col("weighted").fill_null(0.0),
        has_mig=pl.col("has_mig").fill_null(False),
    )
    many = (frame["n_items"] > 1).arg_true()
    if many.len():
        agg = (
            _item_values(
                frame[many].select(pl.col("items"), i=many).explode("items"), pl.col("items")
            )
            .group_by("i", maintain_order=True)
            .agg(
                pl.col("weighted").sum(),
                pl.col("has_mig").any(),
                pl.col("type").drop_nulls().unique(),
            )
            .with_columns(
                type=pl.when(pl.col("type").list.len() == 1).then(pl.col("type").list.first())
            )
        )
        frame = frame.with_columns(
            weighted=frame["weighted"].scatter(agg["i"], agg["weighted"]),
            has_mig=frame["has_mig"].scatter(agg["i"], agg["has_mig"]),
            type=frame["type"].scatter(agg["i"], agg["type"]),
        )
    gpus = (
        pl.when(pl.col("tres").is_null())
        .then(None)
        .when(pl.col("has_mig") | pl.col("untyped").is_null())
        .then(pl.col("weighted"))
        .otherwise(pl.col("untyped"))
    )
    return frame.select(
        # the sum of no items is -0.0; report a plain 0.0
        gpus=pl.when(gpus == 0.0).then(0.0).otherwise(gpus),
        gpu_type="type",
    )


_GRES_IDX_RE = re.compile(r"\([^)]*\)")


def gres_as_tres(gres: str | None) -> str | None:
    """The GPUs of an AllocGRES / ReqGRES string as the TRES string that names them.

    Slurm before 18.08 kept GPUs in accounting only as generic resources unless the site added
    ``gres/gpu`` to ``AccountingStorageTRES``: ``AllocGRES`` / ``ReqGRES`` hold
    ``name[:type][:count]`` items, comma-separated, with allocated indices in parentheses
    (``gpu:2``, ``gpu:tesla:2(IDX:0-1)``, ``gpu:k80:1,mic:1``). AllocGRES counts the job's
    whole allocation (slurmctld's ``_get_gres_alloc`` multiplies the per-node count by the
    nodes); a count left out is 1. Items other than ``gpu`` are dropped.

    Args:
        gres: e.g. ``"gpu:tesla:2(IDX:0-1),mic:1"``.

    Returns:
        e.g. ``"gres/gpu:tesla=2"`` (``""`` when no item is a GPU), for :func:`tres_gpus`;
        None for None.
    """
    if gres is None:
        return None
    items = []
    for item in _GRES_IDX_RE.sub("", gres).split(","):
        name, *rest = item.strip().split(":")
        if name != "gpu":
            continue
        if rest and rest[-1].isdigit():
            kind, count = ":".join(rest[:-1]), rest[-1]
        else:
            kind, count = ":".join(rest), "1"
        items.append(f"gres/gpu{':' + kind if kind else ''}={count}")
    return ",".join(items)


def gpus_from_tres(tres: str | None) -> float | None:
    """GPU count from an AllocTRES / ReqTRES string.

    The untyped ``gres/gpu=N`` wins; without it, the typed ``gres/gpu:TYPE=N`` entries are
    summed. A MIG type counts N × its fraction (:func:`metrics.mig.mig_fraction`: the profile
    token anywhere in the type, ``gres/gpu:a100_3g.20gb=1`` = 3/7, A30 ``1g.6gb`` = 1/4) and
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
    seen_untyped = False
    for item in tres.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            continue
        valid = re.fullmatch(r"\d+(?:\.\d+)?", value) is not None
        if key == "gres/gpu":
            if not seen_untyped and valid:
                untyped = float(value)
            seen_untyped = True
            continue
        if not valid:
            continue
        count = float(value)
        if key.startswith("gres/gpu:") and len(key) > len("gres/gpu:"):
            fraction = mig_fraction(key[len("gres/gpu:") :])
            if fraction is not None:
                has_mig = True
                mig += count * fraction
            else:
                full += count
    if has_mig:
        return mig + full
    if untyped is not None:
        return untyped
    return full


def req_mem_parts(expr: pl.Expr) -> pl.Expr:
    """Regex groups ``num``, ``unit``, ``per`` of a ReqMem value (stage one of two)."""
    return expr.str.extract_groups(_MEM_RE)


def req_mem(parts: pl.Expr, raw: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """ReqMem (``4000Mc``, ``16000Mn``, ``312.50G``, ``3000M``) from its :func:`req_mem_parts`.

    Args:
        parts: the struct column made by :func:`req_mem_parts`.
        raw: the raw String column.

    Returns:
        ``(mb, per, bad)``: Float64 megabytes (MiB, as Slurm counts; no unit means MB),
        ``'cpu'``/``'node'``/NULL, and a Boolean true where a non-empty value does not parse.
    """
    num = parts.struct.field("num").cast(pl.Float64)
    factor = parts.struct.field("unit").replace_strict(_MEM_FACTOR_MB, return_dtype=pl.Float64)
    per = parts.struct.field("per").replace_strict(
        {"c": "cpu", "n": "node", "": None}, default=None, return_dtype=pl.String
    )
    bad = ~is_null_token(raw) & num.is_null()
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
    if re.search(r"\d{19,}", spec):
        raise ValueError("array index too large")
    body, pct, throttle_text = spec.partition("%")
    if pct and not throttle_text.isdigit():
        raise ValueError(f"bad array throttle {throttle_text!r}")
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


_HOST_ITEM = r"[^,\[\]]*(?:\[[0-9,\-]*\])?[^,\[\]]*"
_SIMPLE_HOSTLIST_RE = rf"^{_HOST_ITEM}(?:,{_HOST_ITEM})*$"
_BRACKET_ITEM_RE = r"^(?P<prefix>[^\[\]]*)\[(?P<ranges>[^\[\]]*)\](?P<suffix>[^\[\]]*)$"
_RANGE_RE = r"^(?P<low>\d+)(?:-(?P<high>\d+))?$"
#: python-hostlist's limit on the hosts one bracket expression may name.
_MAX_HOSTS = 100_000


def expand_nodelists(raw: pl.Series) -> pl.DataFrame:
    """Expand Slurm host lists, vectorised, exactly as python-hostlist's ``expand_hostlist``.

    Host lists with at most one bracket group per comma-separated item (``gpu-[001-004],cpu7``,
    ``node[1,3-5]-ib``) are expanded with polars: items split at top-level commas, ranges
    zero-padded to the width of their low bound, duplicates dropped keeping the first. Anything
    else (two bracket groups in an item, a bad or huge range) goes to python-hostlist.

    Args:
        raw: distinct raw NodeList strings (no NULLs; ``None assigned`` is the caller's).

    Returns:
        A frame of the same height with ``node_list`` (List[String], NULL where malformed) and
        ``error`` (String, the reason where malformed).
    """
    frame = pl.DataFrame({"raw": raw}).with_row_index("row")
    items = (
        frame.filter(pl.col("raw").str.contains(_SIMPLE_HOSTLIST_RE))
        .select("row", item=pl.col("raw").str.extract_all(_HOST_ITEM))
        .explode("item")
        .filter(pl.col("item") != "")
        .with_row_index("item_no")
        .with_columns(parts=pl.col("item").str.extract_groups(_BRACKET_ITEM_RE))
    )
    plain = items.filter(~pl.col("item").str.contains("[", literal=True)).select(
        "row", "item_no", sub=pl.lit(0, pl.Int64), host="item"
    )
    ranges = (
        items.filter(pl.col("item").str.contains("[", literal=True))
        .select(
            "row",
            "item_no",
            prefix=pl.col("parts").struct.field("prefix"),
            suffix=pl.col("parts").struct.field("suffix"),
            range=pl.col("parts").struct.field("ranges").str.split(","),
        )
        .explode("range")
        .with_columns(bounds=pl.col("range").str.extract_groups(_RANGE_RE))
        .with_columns(
            low_text=pl.col("bounds").struct.field("low"),
            low=pl.col("bounds").struct.field("low").cast(pl.Int64, strict=False),
            high=pl.col("bounds").struct.field("high").cast(pl.Int64, strict=False),
        )
    )
    width = pl.col("low_text").str.len_chars()
    ranges = ranges.with_columns(
        bad=pl.col("low").is_null()
        | (pl.col("high").is_not_null() & (pl.col("high") < pl.col("low")))
        | ((pl.col("high") - pl.col("low")).fill_null(0) >= _MAX_HOSTS)
        | (width > 18)
    )
    bad_rows = set(ranges.filter("bad")["row"].to_list())
    too_big = (
        ranges.filter(~pl.col("bad"))
        .group_by("row", "item_no")
        .agg(size=(pl.col("high").fill_null(pl.col("low")) - pl.col("low") + 1).sum())
        .filter(pl.col("size") > _MAX_HOSTS)
    )
    bad_rows.update(too_big["row"].to_list())
    hosts = (
        ranges.filter(~pl.col("bad") & ~pl.col("row").is_in(sorted(bad_rows)))
        .with_row_index("sub")
        .with_columns(
            number=pl.when(pl.col("high").is_null())
            .then(pl.concat_list(pl.col("low_text")))
            .otherwise(
                pl.int_ranges(pl.col("low"), pl.col("high") + 1).list.eval(
                    pl.element().cast(pl.String)
                )
            )
        )
        .explode("number")
        .select(
            "row",
            "item_no",
            sub=pl.col("sub").cast(pl.Int64),
            host=pl.concat_str(
                "prefix",
                pl.when(pl.col("high").is_null())
                .then(pl.col("number"))
                .otherwise(pl.col("number").str.zfill(width)),
                "suffix",
            ),
        )
    )
    expanded = (
        pl.concat([plain.filter(~pl.col("row").is_in(sorted(bad_rows))), hosts])
        .sort("item_no", "sub", maintain_order=True)
        .group_by("row", maintain_order=True)
        .agg(node_list=pl.col("host").unique(maintain_order=True))
    )
    done = frame.join(expanded, on="row", how="left", maintain_order="left")
    simple_ok = pl.col("raw").str.contains(_SIMPLE_HOSTLIST_RE) & ~pl.col("row").is_in(
        sorted(bad_rows)
    )
    done = done.with_columns(
        node_list=pl.when(simple_ok)
        .then(pl.col("node_list").fill_null(pl.lit([], dtype=pl.List(pl.String))))
        .otherwise(None),
        error=pl.lit(None, pl.String),
    )
    leftover = done.filter(~simple_ok)
    if leftover.height:
        lists: list[list[str] | None] = []
        errors: list[str | None] = []
        for value in leftover["raw"].to_list():
            try:
                lists.append(expand_nodelist(value))
                errors.append(None)
            except ValueError as err:
                lists.append(None)
                errors.append(str(err))
        patch = pl.DataFrame(
            {"row": leftover["row"], "fixed": lists, "fixed_error": errors},
            schema={"row": pl.UInt32, "fixed": pl.List(pl.String), "fixed_error": pl.String},
        )
        done = done.join(patch, on="row", how="left", maintain_order="left").with_columns(
            node_list=pl.coalesce("node_list", "fixed"), error="fixed_error"
        )
    return done.select("node_list", "error")
