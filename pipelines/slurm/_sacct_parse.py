"""Parse Slurm ``sacct`` text output (``--parsable2`` / ``--parsable``) into typed job rows.

One function, :func:`parse_sacct`, reads one file into a :class:`~pipelines._parse_result.ParseResult`
whose ``rows`` follow :data:`SLURM_ROW_SCHEMA`. The common path is vectorised polars string work
(split lines, split fields, regex-extract values); only rare records (multi-line, pending arrays,
bracketed host lists, DST-odd local times) go through Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, ParseResult
from pipelines.slurm._sacct_fields import FREE_TEXT_FIELDS, NO_END_STATES, SLURM_STATES
from pipelines.slurm._sacct_layout import Layout, SacctFormatError, check_kind, detect_layout
from pipelines.slurm._sacct_values import (
    duration_seconds,
    expand_array_spec,
    expand_nodelist,
    gpus_from_tres,
    is_null_token,
    localize,
    req_mem,
    time_parts,
    tres_gpu_type,
    tres_gpus,
)

__all__ = ["SLURM_ROW_SCHEMA", "SacctFormatError", "gpus_from_tres", "parse_sacct"]

_UTC = pl.Datetime("us", "UTC")

#: Columns of a parsed sacct row, in order. Times are UTC; durations are whole seconds.
#: ``job_id`` is JobID without its step suffix (``A_T`` for an expanded pending array task);
#: ``job_id_raw`` is JobIDRaw without its step suffix, else ``job_id``. ``extra`` is a JSON
#: object of the file's fields that have no column here (NULL when there are none).
SLURM_ROW_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String(),
    "line_no": pl.Int64(),
    "line_end": pl.Int64(),
    "cluster": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "array_job_id": pl.String(),
    "array_task_id": pl.Int64(),
    "array_throttle": pl.Int64(),
    "het_job_id": pl.String(),
    "het_job_offset": pl.Int64(),
    "step": pl.String(),
    "is_allocation": pl.Boolean(),
    "job_name": pl.String(),
    "user_name": pl.String(),
    "uid": pl.Int64(),
    "account": pl.String(),
    "group_name": pl.String(),
    "partition": pl.String(),
    "qos": pl.String(),
    "state": pl.String(),
    "state_raw": pl.String(),
    "cancelled_by_uid": pl.Int64(),
    "reason": pl.String(),
    "submit_at": _UTC,
    "eligible_at": _UTC,
    "start_at": _UTC,
    "end_at": _UTC,
    "planned_s": pl.Int64(),
    "elapsed_s": pl.Int64(),
    "timelimit_s": pl.Int64(),
    "timelimit_note": pl.String(),
    "exit_code": pl.Int64(),
    "signal": pl.Int64(),
    "nnodes": pl.Int64(),
    "ncpus": pl.Int64(),
    "req_mem_mb": pl.Float64(),
    "req_mem_per": pl.String(),
    "alloc_tres": pl.String(),
    "req_tres": pl.String(),
    "gpus": pl.Float64(),
    "req_gpus": pl.Float64(),
    "gpu_type": pl.String(),
    "node_list_raw": pl.String(),
    "node_list": pl.List(pl.String()),
    "extra": pl.String(),
}

#: Lines a multi-line record may span (a SubmitLine with newlines).
_MAX_JOIN_LINES = 64
#: Lines read for layout detection.
_SAMPLE_LINES = 200

_ID_RE = (
    r"^(?P<base>\d+)(?:_(?P<task>\d+)|_\[(?P<arr>[^\]]*)\]|\+(?P<het>\d+))?"
    r"(?:\.(?P<step>[A-Za-z0-9_+]+))?$"
)
_STATE_RE = r"^(?P<s>[A-Za-z_]+)(?: by (?P<uid>\d+))?$"
_TIMELIMIT_TOKENS = ("UNLIMITED", "Partition_Limit", "INVALID", "NONE")
_TIME_FIELDS = (("submit", "submit_at"), ("eligible", "eligible_at"),
                ("start", "start_at"), ("end", "end_at"))  # fmt: skip


# --------------------------------------------------------------------------- reading


def _read(path: str | Path, text: str | None, file: str) -> tuple[str, str]:
    """The file's text and its encoding (``utf-8``, or ``latin-1`` when not valid UTF-8)."""
    if text is not None:
        return text.removeprefix("\ufeff"), "text"
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise SacctFormatError(file, f"cannot read the file: {err}") from err
    if b"\x00" in data[:65536]:
        raise SacctFormatError(file, "binary content (NUL bytes), not sacct text output")
    try:
        return data.decode("utf-8").removeprefix("\ufeff"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _lines(content: str) -> pl.DataFrame:
    """One row per physical line: ``line`` (without ``\\r\\n``) and its 1-based ``line_no``."""
    if content.endswith("\n"):
        content = content[:-1]
    lines = (
        pl.Series("line", [content], dtype=pl.String)
        .str.split("\n")
        .explode()
        .str.strip_suffix("\r")
    )
    return pl.DataFrame([lines]).with_columns(
        line_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
    )


def _rejected(
    file: str, line_no: pl.Series | list[int], line_end: pl.Series | list[int],
    raw: pl.Series | list[str], reason: pl.Series | list[str], field: pl.Series | list[str | None],
) -> pl.DataFrame:  # fmt: skip
    size = len(line_no)
    return pl.DataFrame(
        {
            "file": [file] * size,
            "line_no": line_no,
            "line_end": line_end,
            "field": field,
            "raw": raw,
            "reason": reason,
        },
        schema=REJECTED_SCHEMA,
    )


# --------------------------------------------------------------------------- records


def _records(
    file: str, lines: pl.DataFrame, layout: Layout, first_data: int, info: dict[str, Any]
) -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """Group physical lines into records with the expected field count.

    Returns:
        ``(records, rejected)``: records with ``raw``, ``body`` (trailing delimiter removed),
        ``line_no``, ``line_end``, sorted by line; and frames of rejected lines.
    """
    n = len(layout.keys)
    delim = layout.delimiter
    free_last = layout.keys[-1] in FREE_TEXT_FIELDS
    df = lines.filter(pl.col("line_no") >= first_data)
    blank = df["line"].str.strip_chars() == ""
    info["blank_lines"] = int(blank.sum())
    df = df.filter(~blank)
    if layout.header_text is not None:
        repeated = df["line"] == layout.header_text
        info["repeated_headers"] = int(repeated.sum())
        df = df.filter(~repeated)
    body = pl.col("line").str.strip_suffix(delim) if layout.parsable else pl.col("line")
    df = df.with_columns(body=body).with_columns(
        parts=pl.col("body").str.count_matches(delim, literal=True).cast(pl.Int64) + 1
    )
    rejected: list[pl.DataFrame] = []
    long = df.filter((pl.col("parts") > n) & pl.lit(not free_last))
    if long.height:
        rejected.append(
            _rejected(
                file, long["line_no"], long["line_no"], long["line"],
                long.select(pl.format(f"expected {n} fields, found {{}}", "parts")).to_series(),
                [None] * long.height,
            )  # fmt: skip
        )
    short_pos = df["parts"].lt(n).arg_true().to_list()
    consumed: set[int] = set()
    joins: list[tuple[int, int]] = []
    if short_pos:
        parts = df["parts"].to_list()
        for pos in short_pos:
            if pos in consumed:
                continue
            total = parts[pos]
            end = pos
            while total < n and end + 1 < len(parts) and end - pos + 1 < _MAX_JOIN_LINES:
                end += 1
                total += parts[end] - 1
            if total == n and end > pos:
                joins.append((pos, end))
                consumed.update(range(pos, end + 1))
    join_rows: list[dict[str, Any]] = []
    line_col = df["line"]
    no_col = df["line_no"]
    for pos, end in joins:
        raw = "\n".join(line_col.slice(pos, end - pos + 1).to_list())
        body_text = raw[: -len(delim)] if layout.parsable and raw.endswith(delim) else raw
        if body_text.count(delim) + 1 != n:
            consumed.difference_update(range(pos, end + 1))
            continue
        join_rows.append(
            {"line": raw, "line_no": no_col[pos], "body": body_text, "line_end": no_col[end]}
        )
    info["joined_records"] = len(join_rows)
    lone_short = [p for p in short_pos if p not in consumed]
    if lone_short:
        bad = df[lone_short]
        rejected.append(
            _rejected(
                file, bad["line_no"], bad["line_no"], bad["line"],
                bad.select(pl.format(f"expected {n} fields, found {{}}", "parts")).to_series(),
                [None] * bad.height,
            )  # fmt: skip
        )
    keep = (pl.col("parts") == n) | ((pl.col("parts") > n) & pl.lit(free_last))
    if consumed:
        keep = keep & ~pl.int_range(0, pl.len()).is_in(sorted(consumed))
    singles = df.filter(keep).select(
        "line", "line_no", "body", line_end=pl.col("line_no")
    )
    if join_rows:
        joined = pl.DataFrame(join_rows, schema=singles.schema)
        singles = pl.concat([singles, joined]).sort("line_no")
    return singles, rejected


# --------------------------------------------------------------------------- values


def _raw(key: str) -> pl.Expr:
    """The raw String column of the field with lower-case key ``key``."""
    return pl.col(f"_f_{key}")


def _col(keys: Sequence[str], *names: str) -> pl.Expr:
    """The first of ``names`` present in the file, else a NULL String."""
    for name in names:
        if name in keys:
            return _raw(name)
    return pl.lit(None, dtype=pl.String)


def _text(expr: pl.Expr, *nulls: str) -> pl.Expr:
    """A text value; empty (and any of ``nulls``) → NULL."""
    return pl.when(expr.is_in(["", *nulls])).then(None).otherwise(expr)


class _Checks:
    """Collects (condition, field, reason) rules; a row failing any rule is rejected."""

    def __init__(self) -> None:
        self.rules: list[tuple[pl.Expr, str | None, pl.Expr]] = []

    def add(self, bad: pl.Expr, field: str | None, reason: pl.Expr) -> None:
        self.rules.append((bad.fill_null(False), field, reason))

    def columns(self) -> dict[str, pl.Expr]:
        if not self.rules:
            return {"_reason": pl.lit(None, pl.String), "_field": pl.lit(None, pl.String)}
        reason = pl.coalesce([pl.when(bad).then(why) for bad, _, why in self.rules])
        field = pl.coalesce(
            [pl.when(bad).then(pl.lit(name, pl.String)) for bad, name, _ in self.rules]
        )
        return {"_reason": reason, "_field": field}


def _value_columns(layout: Layout, cluster: str | None, checks: _Checks) -> dict[str, pl.Expr]:
    """Expressions for every typed column that does not need Python."""
    keys = layout.keys
    name_of = dict(zip(keys, layout.names, strict=True))
    out: dict[str, pl.Expr] = {}

    id_key = "jobid" if "jobid" in keys else "jobidraw"
    raw_id = _raw(id_key)
    truncated = raw_id.str.ends_with("+")
    checks.add(
        truncated,
        name_of[id_key],
        pl.format(
            "truncated job id '{}' (fixed-width sacct output cuts long values to '+'): "
            "run sacct -P / --parsable2",
            raw_id,
        ),
    )
    ids = raw_id.str.extract_groups(_ID_RE)
    base = ids.struct.field("base")
    task = ids.struct.field("task")
    het = ids.struct.field("het")
    checks.add(
        ~truncated & base.is_null(), name_of[id_key], pl.format("malformed job id '{}'", raw_id)
    )
    out["_arr"] = ids.struct.field("arr")
    out["_base"] = base
    out["job_id"] = (
        pl.when(task.is_not_null())
        .then(pl.concat_str(base, pl.lit("_"), task))
        .when(het.is_not_null())
        .then(pl.concat_str(base, pl.lit("+"), het))
        .otherwise(base)
    )
    out["array_job_id"] = (
        pl.when(task.is_not_null() | ids.struct.field("arr").is_not_null()).then(base)
    )
    out["array_task_id"] = task.cast(pl.Int64)
    out["het_job_id"] = pl.when(het.is_not_null()).then(base)
    out["het_job_offset"] = het.cast(pl.Int64)
    out["step"] = ids.struct.field("step")
    out["is_allocation"] = ids.struct.field("step").is_null()
    if "jobidraw" in keys and id_key == "jobid":
        out["_job_id_raw"] = _text(_raw("jobidraw").str.replace(r"\..*$", ""))
    else:
        out["_job_id_raw"] = pl.lit(None, pl.String)

    cluster_value = cluster if cluster else "default"
    out["cluster"] = pl.coalesce(_text(_col(keys, "cluster")), pl.lit(cluster_value))
    for column, key in (
        ("job_name", "jobname"), ("user_name", "user"), ("account", "account"),
        ("group_name", "group"), ("partition", "partition"), ("qos", "qos"),
    ):  # fmt: skip
        out[column] = _text(_col(keys, key))
    out["reason"] = _text(_col(keys, "reason"), "None")

    state_raw = _col(keys, "state")
    states = state_raw.str.extract_groups(_STATE_RE)
    state = states.struct.field("s").str.to_uppercase()
    out["state_raw"] = _text(state_raw)
    out["state"] = state
    out["cancelled_by_uid"] = states.struct.field("uid").cast(pl.Int64)
    if "state" in keys:
        checks.add(
            (state_raw != "") & (state.is_null() | ~state.is_in(sorted(SLURM_STATES))),
            name_of["state"],
            pl.format("unknown job state '{}'", state_raw),
        )

    for key, column in _TIME_FIELDS:
        aware, naive, bad = time_parts(_col(keys, key))
        out[f"_{column}_aware"] = aware
        out[f"_{column}_naive"] = naive
        if key in keys:
            checks.add(bad, name_of[key], pl.format(f"unparseable {name_of[key]} time '{{}}'",
                                                    _raw(key)))  # fmt: skip

    def duration(column: str, key: str | None, scale: int = 1) -> None:
        if key is None:
            out[column] = pl.lit(None, pl.Int64)
            return
        value, bad = duration_seconds(_raw(key))
        out[column] = value * scale
        checks.add(bad, name_of[key], pl.format(f"unparseable {name_of[key]} '{{}}'", _raw(key)))

    def first_key(*names: str) -> str | None:
        return next((k for k in names if k in keys), None)

    duration("planned_s", first_key("planned", "reserved"))
    elapsed_key = first_key("elapsed", "elapsedraw")
    duration("elapsed_s", elapsed_key)
    limit_key = first_key("timelimit", "timelimitraw")
    if limit_key is None:
        out["timelimit_s"] = pl.lit(None, pl.Int64)
        out["timelimit_note"] = pl.lit(None, pl.String)
    else:
        limit = _raw(limit_key)
        is_token = limit.is_in(list(_TIMELIMIT_TOKENS))
        value, bad = duration_seconds(pl.when(is_token).then(None).otherwise(limit))
        scale = 60 if limit_key == "timelimitraw" else 1  # TimelimitRaw counts minutes
        out["timelimit_s"] = value * scale
        out["timelimit_note"] = (
            pl.when(is_token).then(limit).when(limit == "").then(pl.lit("empty"))
        )
        checks.add(
            bad, name_of[limit_key], pl.format(f"unparseable {name_of[limit_key]} '{{}}'", limit)
        )

    exit_raw = _col(keys, "exitcode")
    exits = exit_raw.str.extract_groups(r"^(?P<code>\d+):(?P<sig>\d+)$")
    out["exit_code"] = exits.struct.field("code").cast(pl.Int64)
    out["signal"] = exits.struct.field("sig").cast(pl.Int64)
    if "exitcode" in keys:
        checks.add(
            ~is_null_token(exit_raw) & exits.struct.field("code").is_null(),
            name_of["exitcode"],
            pl.format("unparseable ExitCode '{}'", exit_raw),
        )

    for column, names in (("uid", ("uid",)), ("nnodes", ("nnodes", "allocnodes")),
                          ("ncpus", ("ncpus", "alloccpus"))):  # fmt: skip
        key = first_key(*names)
        if key is None:
            out[column] = pl.lit(None, pl.Int64)
            continue
        raw = _raw(key)
        number = raw.str.strip_chars().cast(pl.Int64, strict=False)
        out[column] = number
        checks.add(
            ~is_null_token(raw) & number.is_null(),
            name_of[key],
            pl.format(f"unparseable {name_of[key]} '{{}}'", raw),
        )

    if "reqmem" in keys:
        mb, per, bad = req_mem(_raw("reqmem"))
        out["req_mem_mb"] = mb
        out["req_mem_per"] = per
        checks.add(bad, name_of["reqmem"], pl.format("unparseable ReqMem '{}'", _raw("reqmem")))
    else:
        out["req_mem_mb"] = pl.lit(None, pl.Float64)
        out["req_mem_per"] = pl.lit(None, pl.String)

    alloc = _col(keys, "alloctres")
    req = _col(keys, "reqtres")
    out["alloc_tres"] = _text(alloc)
    out["req_tres"] = _text(req)
    out["gpus"] = tres_gpus(alloc) if "alloctres" in keys else pl.lit(None, pl.Float64)
    out["req_gpus"] = tres_gpus(req) if "reqtres" in keys else pl.lit(None, pl.Float64)
    out["gpu_type"] = pl.coalesce(tres_gpu_type(alloc), tres_gpu_type(req))
    out["node_list_raw"] = _text(_col(keys, "nodelist"))

    used = {
        "jobid", "jobidraw", "cluster", "jobname", "user", "account", "group", "partition",
        "qos", "reason", "state", "submit", "eligible", "start", "end", "exitcode", "uid",
        "reqmem", "alloctres", "reqtres", "nodelist",
    }  # fmt: skip
    used.update(
        k for k in (first_key("planned", "reserved"), elapsed_key, limit_key,
                    first_key("nnodes", "allocnodes"), first_key("ncpus", "alloccpus"))
        if k is not None
    )  # fmt: skip
    rest = [k for k in keys if k not in used]
    out["extra"] = (
        pl.struct([_text(_raw(k)).alias(name_of[k]) for k in rest]).struct.json_encode()
        if rest
        else pl.lit(None, pl.String)
    )
    return out


def _localize_times(df: pl.DataFrame, tz: str) -> tuple[pl.DataFrame, dict[str, pl.Series]]:
    """Combine the aware and naive time parts into UTC columns; flag DST-odd rows."""
    height = df.height
    amb = [0] * height
    nonex = [0] * height
    columns: dict[str, pl.Series] = {}
    for _, column in _TIME_FIELDS:
        naive = df[f"_{column}_naive"]
        if naive.null_count() == height:
            local = pl.Series(column, [None] * height, dtype=_UTC)
        else:
            local, ambiguous, nonexistent = localize(naive, tz)
            for pos in ambiguous:
                amb[pos] += 1
            for pos in nonexistent:
                nonex[pos] += 1
        columns[column] = pl.coalesce(df[f"_{column}_aware"], local).alias(column)
    flags = {
        "_dst_ambiguous": pl.Series(amb, dtype=pl.Int64),
        "_dst_nonexistent": pl.Series(nonex, dtype=pl.Int64),
    }
    return df.with_columns(**columns, **flags), columns


def _node_lists(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``node_list`` (expanded host names); bad host lists become ``_reason``."""
    raw = pl.col("node_list_raw")
    simple = (
        pl.when(raw.is_null())
        .then(None)
        .when(raw == "None assigned")
        .then(pl.lit([], dtype=pl.List(pl.String)))
        .otherwise(raw.str.split(","))
    )
    bracketed = df.filter(raw.str.contains("[", literal=True))["node_list_raw"].unique()
    if bracketed.len() == 0:
        return df.with_columns(node_list=simple)
    expanded: list[list[str] | None] = []
    errors: list[str | None] = []
    for value in bracketed.to_list():
        try:
            expanded.append(expand_nodelist(value))
            errors.append(None)
        except ValueError as err:
            expanded.append(None)
            errors.append(f"bad NodeList '{value}': {err}")
    mapping = pl.DataFrame(
        {"node_list_raw": bracketed, "_nodes": expanded, "_nodes_err": errors},
        schema={"node_list_raw": pl.String, "_nodes": pl.List(pl.String),
                "_nodes_err": pl.String},
    )  # fmt: skip
    df = df.join(mapping, on="node_list_raw", how="left", maintain_order="left")
    return df.with_columns(
        node_list=pl.when(raw.str.contains("[", literal=True)).then("_nodes").otherwise(simple),
        _reason=pl.coalesce("_reason", "_nodes_err"),
        _field=pl.when(pl.col("_reason").is_null() & pl.col("_nodes_err").is_not_null())
        .then(pl.lit("NodeList"))
        .otherwise("_field"),
    ).drop("_nodes", "_nodes_err")


def _expand_arrays(df: pl.DataFrame) -> pl.DataFrame:
    """One row per task of each pending array row (``A_[1-3,7%2]``); bad specs → ``_reason``."""
    specs = df["_arr"].drop_nulls().unique()
    if specs.len() == 0:
        return df.with_columns(array_throttle=pl.lit(None, pl.Int64))
    tasks: list[list[int] | None] = []
    throttles: list[int | None] = []
    errors: list[str | None] = []
    for spec in specs.to_list():
        try:
            ids, throttle = expand_array_spec(spec)
            tasks.append(ids)
            throttles.append(throttle)
            errors.append(None)
        except ValueError as err:
            tasks.append(None)
            throttles.append(None)
            errors.append(f"bad array job id '[{spec}]': {err}")
    mapping = pl.DataFrame(
        {"_arr": specs, "_tasks": tasks, "array_throttle": throttles, "_arr_err": errors},
        schema={"_arr": pl.String, "_tasks": pl.List(pl.Int64), "array_throttle": pl.Int64,
                "_arr_err": pl.String},
    )  # fmt: skip
    df = df.join(mapping, on="_arr", how="left", maintain_order="left").with_columns(
        _reason=pl.coalesce("_reason", "_arr_err"),
        _field=pl.when(pl.col("_reason").is_null() & pl.col("_arr_err").is_not_null())
        .then(pl.lit("JobID"))
        .otherwise("_field"),
    )
    ok_array = pl.col("_arr").is_not_null() & pl.col("_reason").is_null()
    df = df.with_columns(_tasks=pl.when(ok_array).then("_tasks").otherwise(None))
    df = df.explode("_tasks", keep_nulls=True)
    return df.with_columns(
        array_task_id=pl.coalesce("array_task_id", "_tasks"),
        job_id=pl.when(pl.col("_tasks").is_not_null())
        .then(pl.concat_str("_base", pl.lit("_"), pl.col("_tasks").cast(pl.String)))
        .otherwise("job_id"),
    ).drop("_tasks", "_arr_err")


# --------------------------------------------------------------------------- entry point


def parse_sacct(
    path: str | Path,
    *,
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
    tz: str = "UTC",
    text: str | None = None,
) -> ParseResult:
    """Parse one file of ``sacct --parsable2`` / ``--parsable`` output.

    The file may have a header line (``sacct`` without ``--noheader``); the delimiter is then
    detected from it. Headerless files need ``fields``. Fields may come in any order; fields
    without a column of :data:`SLURM_ROW_SCHEMA` are kept in ``extra`` (JSON text).

    Every physical line ends in ``rows`` or in ``rejected`` (blank lines and repeated header
    lines are counted in ``info``): a line with the wrong field count, an unknown job state, a
    truncated job id (``1234.b+``) or an unparseable value is rejected with the reason; a line
    is joined with the next ones when together they make one record (a newline inside
    SubmitLine); surplus delimiters are joined into the last field when that is free text.

    Args:
        path: the file to read, or only its name when ``text`` is given.
        fields: ``sacct --format`` names in file order (case-insensitive, ``%width`` ignored),
            for files without a header line, e.g. XDMoD's 26 fields.
        delimiter: the field delimiter (one or more characters); None detects it.
        cluster: the cluster name for rows without a Cluster value (default ``"default"``).
        tz: the IANA zone that naive times (``2015-06-26T13:57:00``) are read in.
        text: the file's content, when already in memory.

    Returns:
        A :class:`ParseResult` whose ``rows`` have :data:`SLURM_ROW_SCHEMA` and whose ``info``
        holds ``format`` (``'parsable2'``/``'parsable'``), ``delimiter``, ``fields``, ``header``,
        ``rows``, ``rejected``, ``dst_ambiguous``, ``dst_nonexistent``, ``lines``,
        ``blank_lines``, ``repeated_headers``, ``joined_records``, ``encoding``.

    Raises:
        SacctFormatError: the file cannot be read, is not sacct text output (binary, JSON,
            HTML, fixed-width), has no header and no ``fields``, or no delimiter fits.
        ValueError: ``tz`` is not a known time zone.
    """
    file = str(path)
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(f"unknown time zone {tz!r}") from err
    content, encoding = _read(path, text, file)
    check_kind(file, content)
    lines = _lines(content)
    info: dict[str, Any] = {"encoding": encoding, "lines": lines.height}
    head = lines.head(_SAMPLE_LINES * 4).filter(pl.col("line").str.strip_chars() != "")
    sample = list(zip(head["line_no"].to_list(), head["line"].to_list(), strict=True))
    if not sample:
        return _empty(file, info, fields, delimiter)
    layout = detect_layout(file, sample[:_SAMPLE_LINES], fields, delimiter)
    info.update(
        format="parsable" if layout.parsable else "parsable2",
        delimiter=layout.delimiter,
        fields=list(layout.names),
        header=layout.header,
    )
    first_data = sample[0][0] + 1 if layout.header else 1
    records, rejected = _records(file, lines, layout, first_data, info)
    rows, late = _parse_records(file, records, layout, cluster, tz, info)
    rejected.append(late)
    all_rejected = pl.concat(rejected).sort("line_no") if rejected else pl.DataFrame(
        schema=REJECTED_SCHEMA
    )
    info["rows"] = rows.height
    info["rejected"] = all_rejected.height
    return ParseResult(rows=rows, rejected=all_rejected, info=info)


def _empty(
    file: str, info: dict[str, Any], fields: Sequence[str] | None, delimiter: str | None
) -> ParseResult:
    info.update(
        format="parsable2", delimiter=delimiter or "|", fields=list(fields or []), header=False,
        rows=0, rejected=0, dst_ambiguous=0, dst_nonexistent=0, blank_lines=info["lines"],
        repeated_headers=0, joined_records=0,
    )  # fmt: skip
    return ParseResult(
        rows=pl.DataFrame(schema=SLURM_ROW_SCHEMA),
        rejected=pl.DataFrame(schema=REJECTED_SCHEMA),
        info=info,
    )


def _parse_records(
    file: str,
    records: pl.DataFrame,
    layout: Layout,
    cluster: str | None,
    tz: str,
    info: dict[str, Any],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split records into fields and type them; returns ``(rows, rejected)``."""
    n = len(layout.keys)
    fields = records.select(
        "line", "line_no", "line_end",
        pl.col("body")
        .str.splitn(layout.delimiter, n)
        .struct.rename_fields([f"_f_{key}" for key in layout.keys]),
    ).unnest("body")  # fmt: skip
    checks = _Checks()
    values = _value_columns(layout, cluster, checks)
    typed = fields.with_columns(**values).with_columns(**checks.columns())
    typed, _ = _localize_times(typed, tz)
    state = pl.col("state")
    typed = typed.with_columns(
        end_at=pl.when(state.is_in(sorted(NO_END_STATES))).then(None).otherwise("end_at"),
        job_id_raw=pl.coalesce("_job_id_raw", "job_id"),
    )
    typed = _node_lists(typed)
    typed = _expand_arrays(typed)
    ok = pl.col("_reason").is_null()
    good = typed.filter(ok)
    info["dst_ambiguous"] = int(good["_dst_ambiguous"].sum())
    info["dst_nonexistent"] = int(good["_dst_nonexistent"].sum())
    info["array_rows_expanded"] = int(good["_arr"].is_not_null().sum())
    rows = good.with_columns(file=pl.lit(file)).select(
        [pl.col(name).cast(dtype) for name, dtype in SLURM_ROW_SCHEMA.items()]
    )
    bad = (
        typed.filter(~ok)
        .unique(subset=["line_no"], keep="first", maintain_order=True)
        .select(
            file=pl.lit(file),
            line_no="line_no",
            line_end="line_end",
            field="_field",
            raw="line",
            reason="_reason",
        )
        .cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
    )
    return rows, bad
