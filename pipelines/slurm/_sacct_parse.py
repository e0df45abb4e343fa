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
    EPOCH_RE,
    OFFSET_RE,
    duration_parts,
    duration_seconds,
    expand_array_spec,
    expand_nodelist,
    gpus_from_tres,
    is_null_token,
    localize,
    req_mem,
    req_mem_parts,
    time_parts,
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


def _read(path: str | Path, text: str | None, file: str) -> tuple[bytes, str]:
    """The file's bytes as UTF-8 and the encoding they were read in (``utf-8``/``latin-1``)."""
    if text is not None:
        return text.removeprefix("\ufeff").encode("utf-8", "replace"), "text"
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise SacctFormatError(file, f"cannot read the file: {err}") from err
    if b"\x00" in data[:65536]:
        raise SacctFormatError(file, "binary content (NUL bytes), not sacct text output")
    return data.removeprefix(b"\xef\xbb\xbf"), "utf-8"


def _lines(data: bytes, encoding: str) -> tuple[pl.DataFrame, str]:
    """One row per physical line: ``line`` (without ``\\r\\n``) and its 1-based ``line_no``.

    Lines are split by polars' CSV reader with a separator byte the data does not contain (much
    faster than Python); Python's ``str.split`` is the fallback. Bytes that are not UTF-8 are
    read as Latin-1.

    Returns:
        ``(lines, encoding)``.
    """
    expected = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    sentinel = next((chr(c) for c in (0x1F, 0x1E, 0x1D, 0x1C) if bytes([c]) not in data), None)
    frame: pl.DataFrame | None = None
    if sentinel is not None and data:
        try:
            frame = pl.read_csv(
                data, has_header=False, separator=sentinel, quote_char=None,
                new_columns=["line"], infer_schema=False, encoding="utf8", raise_if_empty=False,
            )  # fmt: skip
        except pl.exceptions.ComputeError:
            data = data.decode("latin-1").encode("utf-8")
            encoding = "latin-1"
            return _lines(data, encoding)
        if frame.width != 1 or frame.height != expected:
            frame = None
    if frame is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
            encoding = "latin-1"
        if text.endswith("\n"):
            text = text[:-1]
        frame = pl.DataFrame({"line": text.split("\n") if data else []}, schema={"line": pl.String})
    lines = frame.select(
        line=pl.col("line").fill_null("").str.strip_suffix("\r"),
        line_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
    )
    return lines, encoding


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


def _text(expr: pl.Expr, *nulls: str) -> pl.Expr:
    """A text value; empty (and any of ``nulls``) → NULL."""
    return pl.when(expr.is_in(["", *nulls])).then(None).otherwise(expr)


_Rule = tuple[pl.Expr, str | None, pl.Expr]


class _Plan:
    """The expressions that type one file's fields, in three stages, plus the row rules.

    Stage ``a`` reads the raw ``_f_<key>`` columns (each regex runs once, into a struct or list
    column); stage ``b`` derives the typed columns from stage ``a``; ``rules`` are
    ``(bad, field, reason)`` triples: a row where ``bad`` holds is rejected.
    """

    def __init__(self, layout: Layout, cluster: str | None, flags: dict[str, bool]) -> None:
        self.keys = layout.keys
        self.name_of = dict(zip(layout.keys, layout.names, strict=True))
        self.flags = flags
        self.a: dict[str, pl.Expr] = {}
        self.b: dict[str, pl.Expr] = {}
        self.rules: list[_Rule] = []
        self.used: set[str] = set()
        #: raw TRES columns whose GPUs :func:`_gpus` counts (None where the field is absent)
        self.gpu_sources: dict[str, pl.Expr | None] = {}
        self._identity()
        self._text_columns(cluster)
        self._state()
        self._times()
        self._durations()
        self._numbers()
        self._resources()
        self._extra()

    def key(self, *names: str) -> str | None:
        """The first of ``names`` present in the file (marked as used), else None."""
        for name in names:
            if name in self.keys:
                self.used.add(name)
                return name
        return None

    def raw(self, *names: str) -> pl.Expr:
        """The raw column of the first of ``names`` present, else a NULL String."""
        key = self.key(*names)
        return _raw(key) if key is not None else pl.lit(None, dtype=pl.String)

    def rule(self, bad: pl.Expr, key: str, reason: pl.Expr) -> None:
        self.rules.append((bad.fill_null(False), self.name_of[key], reason))

    def _identity(self) -> None:
        id_key = self.key("jobid", "jobidraw")
        assert id_key is not None  # detect_layout guarantees JobID or JobIDRaw
        raw_id = _raw(id_key)
        self.a["_trunc"] = raw_id.str.ends_with("+")
        self.a["_ids"] = raw_id.str.extract_groups(_ID_RE)
        self.rule(
            pl.col("_trunc"),
            id_key,
            pl.format(
                "truncated job id '{}' (fixed-width sacct output cuts long values to '+'): "
                "run sacct -P / --parsable2",
                raw_id,
            ),
        )
        ids = pl.col("_ids")
        base = ids.struct.field("base")
        task = ids.struct.field("task")
        het = ids.struct.field("het")
        arr = ids.struct.field("arr")
        self.rule(
            ~pl.col("_trunc") & base.is_null(), id_key, pl.format("malformed job id '{}'", raw_id)
        )
        self.b["_arr"] = arr
        self.b["_base"] = base
        self.b["job_id"] = (
            pl.when(task.is_not_null())
            .then(pl.concat_str(base, pl.lit("_"), task))
            .when(het.is_not_null())
            .then(pl.concat_str(base, pl.lit("+"), het))
            .otherwise(base)
        )
        self.b["array_job_id"] = pl.when(task.is_not_null() | arr.is_not_null()).then(base)
        self.b["array_task_id"] = task.cast(pl.Int64)
        self.b["het_job_id"] = pl.when(het.is_not_null()).then(base)
        self.b["het_job_offset"] = het.cast(pl.Int64)
        self.b["step"] = ids.struct.field("step")
        self.b["is_allocation"] = ids.struct.field("step").is_null()
        raw_key = self.key("jobidraw") if id_key == "jobid" else None
        self.a["_job_id_raw"] = (
            _text(_raw(raw_key).str.replace(r"\..*$", ""))
            if raw_key is not None
            else pl.lit(None, pl.String)
        )

    def _text_columns(self, cluster: str | None) -> None:
        self.a["cluster"] = pl.coalesce(_text(self.raw("cluster")), pl.lit(cluster or "default"))
        for column, key in (
            ("job_name", "jobname"), ("user_name", "user"), ("account", "account"),
            ("group_name", "group"), ("partition", "partition"), ("qos", "qos"),
        ):  # fmt: skip
            self.a[column] = _text(self.raw(key))
        self.a["reason"] = _text(self.raw("reason"), "None")
        self.a["node_list_raw"] = _text(self.raw("nodelist"))

    def _state(self) -> None:
        state_key = self.key("state")
        state_raw = self.raw("state")
        self.a["state_raw"] = _text(state_raw)
        self.a["_st"] = state_raw.str.extract_groups(_STATE_RE)
        state = pl.col("_st").struct.field("s").str.to_uppercase()
        self.b["state"] = state
        self.b["cancelled_by_uid"] = pl.col("_st").struct.field("uid").cast(pl.Int64)
        if state_key is not None:
            self.rule(
                (state_raw != "") & (state.is_null() | ~state.is_in(sorted(SLURM_STATES))),
                state_key,
                pl.format("unknown job state '{}'", state_raw),
            )

    def _times(self) -> None:
        for key, column in _TIME_FIELDS:
            found = self.key(key)
            aware, naive, bad = time_parts(
                self.raw(key),
                epoch=self.flags.get(f"epoch_{key}", False),
                offset=self.flags.get(f"offset_{key}", False),
            )
            self.a[f"_{column}_aware"] = aware
            self.a[f"_{column}_naive"] = naive
            if found is not None:
                name = self.name_of[found]
                self.rule(bad, found, pl.format(f"unparseable {name} time '{{}}'", _raw(found)))

    def _duration(self, column: str, key: str | None, value: pl.Expr | None = None) -> pl.Expr:
        """Add ``column`` (seconds) from field ``key``; returns the seconds expression."""
        if key is None:
            self.b[column] = pl.lit(None, pl.Int64)
            return self.b[column]
        raw = value if value is not None else _raw(key)
        self.a[f"_d_{column}"] = duration_parts(raw)
        seconds, bad = duration_seconds(pl.col(f"_d_{column}"), raw)
        self.b[column] = seconds
        name = self.name_of[key]
        self.rule(bad, key, pl.format(f"unparseable {name} '{{}}'", _raw(key)))
        return seconds

    def _durations(self) -> None:
        self._duration("planned_s", self.key("planned", "reserved"))
        self._duration("elapsed_s", self.key("elapsed", "elapsedraw"))
        limit_key = self.key("timelimit", "timelimitraw")
        if limit_key is None:
            self.b["timelimit_s"] = pl.lit(None, pl.Int64)
            self.b["timelimit_note"] = pl.lit(None, pl.String)
            return
        limit = _raw(limit_key)
        is_token = limit.is_in(list(_TIMELIMIT_TOKENS))
        seconds = self._duration(
            "timelimit_s", limit_key, pl.when(is_token).then(None).otherwise(limit)
        )
        if limit_key == "timelimitraw":  # TimelimitRaw counts minutes
            self.b["timelimit_s"] = seconds * 60
        self.a["timelimit_note"] = (
            pl.when(is_token).then(limit).when(limit == "").then(pl.lit("empty"))
        )

    def _numbers(self) -> None:
        exit_key = self.key("exitcode")
        exit_raw = self.raw("exitcode")
        self.a["_ex"] = exit_raw.str.extract_groups(r"^(?P<code>\d+):(?P<sig>\d+)$")
        code = pl.col("_ex").struct.field("code").cast(pl.Int64)
        self.b["exit_code"] = code
        self.b["signal"] = pl.col("_ex").struct.field("sig").cast(pl.Int64)
        if exit_key is not None:
            self.rule(
                ~is_null_token(exit_raw) & code.is_null(),
                exit_key,
                pl.format("unparseable ExitCode '{}'", exit_raw),
            )
        for column, names in (("uid", ("uid",)), ("nnodes", ("nnodes", "allocnodes")),
                              ("ncpus", ("ncpus", "alloccpus"))):  # fmt: skip
            key = self.key(*names)
            if key is None:
                self.a[column] = pl.lit(None, pl.Int64)
                continue
            raw = _raw(key)
            self.a[column] = raw.str.strip_chars().cast(pl.Int64, strict=False)
            self.rule(
                ~is_null_token(raw) & pl.col(column).is_null(),
                key,
                pl.format(f"unparseable {self.name_of[key]} '{{}}'", raw),
            )

    def _resources(self) -> None:
        mem_key = self.key("reqmem")
        if mem_key is not None:
            self.a["_mem"] = req_mem_parts(_raw(mem_key))
            mb, per, bad = req_mem(pl.col("_mem"), _raw(mem_key))
            self.b["req_mem_mb"] = mb
            self.b["req_mem_per"] = per
            self.rule(bad, mem_key, pl.format("unparseable ReqMem '{}'", _raw(mem_key)))
        else:
            self.b["req_mem_mb"] = pl.lit(None, pl.Float64)
            self.b["req_mem_per"] = pl.lit(None, pl.String)
        for key, tres_column in (("alloctres", "alloc_tres"), ("reqtres", "req_tres")):
            self.a[tres_column] = _text(self.raw(key))
            found = self.key(key)
            self.gpu_sources[key] = _raw(found) if found is not None else None

    def _extra(self) -> None:
        rest = [k for k in self.keys if k not in self.used]
        self.a["extra"] = (
            pl.struct([_text(_raw(k)).alias(self.name_of[k]) for k in rest]).struct.json_encode()
            if rest
            else pl.lit(None, pl.String)
        )


def _flags(fields: pl.DataFrame, keys: Sequence[str]) -> dict[str, bool]:
    """Which time fields hold any epoch or offset value (their parse branches are skipped if not)."""
    exprs = []
    for key, _ in _TIME_FIELDS:
        if key in keys:
            exprs.append(_raw(key).str.contains(EPOCH_RE).any().alias(f"epoch_{key}"))
            exprs.append(_raw(key).str.contains(OFFSET_RE).any().alias(f"offset_{key}"))
    if not exprs:
        return {}
    return {name: bool(value) for name, value in fields.select(exprs).row(0, named=True).items()}


def _gpus(df: pl.DataFrame, plan: _Plan) -> pl.DataFrame:
    """Add ``gpus``, ``req_gpus`` and ``gpu_type`` from the AllocTRES / ReqTRES fields."""
    columns: dict[str, pl.Series] = {}
    types: list[pl.Series] = []
    for key, column in (("alloctres", "gpus"), ("reqtres", "req_gpus")):
        source = plan.gpu_sources.get(key)
        if source is None:
            columns[column] = pl.Series(column, [None] * df.height, dtype=pl.Float64)
            continue
        counted = tres_gpus(df.select(source).to_series())
        columns[column] = counted["gpus"].alias(column)
        types.append(counted["gpu_type"])
    gpu_type = (
        pl.DataFrame([t.alias(f"t{i}") for i, t in enumerate(types)])
        .select(pl.coalesce(pl.all()))
        .to_series()
        if types
        else pl.Series([None] * df.height, dtype=pl.String)
    )
    return df.with_columns(**columns, gpu_type=gpu_type.alias("gpu_type"))


def _localize_times(df: pl.DataFrame, tz: str) -> pl.DataFrame:
    """Combine the aware and naive time parts into UTC columns; count DST-odd values per row."""
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
    return df.with_columns(
        **columns,
        _dst_ambiguous=pl.Series(amb, dtype=pl.Int64),
        _dst_nonexistent=pl.Series(nonex, dtype=pl.Int64),
    )


def _node_lists(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``node_list`` (expanded host names); a bad host list sets ``_reason``."""
    raw = pl.col("node_list_raw")
    simple = (
        pl.when(raw == "None assigned")
        .then(pl.lit([], dtype=pl.List(pl.String)))
        .otherwise(raw.str.split(","))
    )
    has_bracket = raw.str.contains("[", literal=True)
    bracketed = df.filter(has_bracket)["node_list_raw"].unique()
    if bracketed.len() == 0:
        return df.with_columns(node_list=simple, _reason=pl.lit(None, pl.String),
                               _field=pl.lit(None, pl.String))  # fmt: skip
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
        {"node_list_raw": bracketed, "_nodes": expanded, "_reason": errors},
        schema={"node_list_raw": pl.String, "_nodes": pl.List(pl.String), "_reason": pl.String},
    )
    df = df.join(mapping, on="node_list_raw", how="left", maintain_order="left")
    return df.with_columns(
        node_list=pl.when(has_bracket).then("_nodes").otherwise(simple),
        _field=pl.when(pl.col("_reason").is_not_null()).then(pl.lit("NodeList")),
    ).drop("_nodes")


def _expand_arrays(df: pl.DataFrame) -> pl.DataFrame:
    """One row per task of each pending array row (``A_[1-3,7%2]``); a bad spec sets ``_reason``."""
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
        _field=pl.when(pl.col("_reason").is_null() & pl.col("_arr_err").is_not_null())
        .then(pl.lit("JobID"))
        .otherwise("_field"),
        _reason=pl.coalesce("_reason", "_arr_err"),
    )
    df = df.with_columns(
        _tasks=pl.when(pl.col("_reason").is_null()).then("_tasks")
    ).explode("_tasks", keep_nulls=True)
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
    SubmitLine); surplus delimiters are joined into the last field when that is free text. A
    pending array row (``A_[1-5%2]``) becomes one row per task, all with the row's line number.

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
        ``blank_lines``, ``repeated_headers``, ``joined_records``, ``array_rows_expanded``,
        ``encoding``.

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
    data, encoding = _read(path, text, file)
    check_kind(file, data[:65536].decode("utf-8", "replace"))
    lines, encoding = _lines(data, encoding)
    del data
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
        repeated_headers=0,
    )
    first_data = sample[0][0] + 1 if layout.header else 1
    records, rejected = _records(file, lines, layout, first_data, info)
    del lines
    rows, late = _parse_records(file, records, layout, cluster, tz, info)
    rejected.append(late)
    all_rejected = pl.concat(rejected).sort("line_no")
    info["rows"] = rows.height
    info["rejected"] = all_rejected.height
    return ParseResult(rows=rows, rejected=all_rejected, info=info)


def _empty(
    file: str, info: dict[str, Any], fields: Sequence[str] | None, delimiter: str | None
) -> ParseResult:
    info.update(
        format="parsable2", delimiter=delimiter or "|", fields=list(fields or []), header=False,
        rows=0, rejected=0, dst_ambiguous=0, dst_nonexistent=0, blank_lines=info["lines"],
        repeated_headers=0, joined_records=0, array_rows_expanded=0,
    )  # fmt: skip
    return ParseResult(
        rows=pl.DataFrame(schema=SLURM_ROW_SCHEMA),
        rejected=pl.DataFrame(schema=REJECTED_SCHEMA),
        info=info,
    )


def _reject_frame(file: str, df: pl.DataFrame) -> pl.DataFrame:
    """Rejected rows (one per record) from typed rows carrying ``_reason`` and ``_field``."""
    return (
        df.unique(subset=["line_no"], keep="first", maintain_order=True)
        .select(
            file=pl.lit(file, pl.String),
            line_no="line_no",
            line_end="line_end",
            field="_field",
            raw="line",
            reason="_reason",
        )
        .cast(REJECTED_SCHEMA)  # type: ignore[arg-type]
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
    fields = records.select(
        "line", "line_no", "line_end",
        pl.col("body")
        .str.splitn(layout.delimiter, len(layout.keys))
        .struct.rename_fields([f"_f_{key}" for key in layout.keys]),
    ).unnest("body")  # fmt: skip
    plan = _Plan(layout, cluster, _flags(fields, layout.keys))
    typed = fields.with_columns(**plan.a).with_columns(**plan.b)
    bad_any = pl.any_horizontal([bad for bad, _, _ in plan.rules]) if plan.rules else pl.lit(False)
    typed = typed.with_columns(_bad=bad_any)
    bad_rows = typed.filter("_bad")
    if bad_rows.height:
        bad_rows = bad_rows.with_columns(
            _reason=pl.coalesce([pl.when(bad).then(why) for bad, _, why in plan.rules]),
            _field=pl.coalesce(
                [pl.when(bad).then(pl.lit(name, pl.String)) for bad, name, _ in plan.rules]
            ),
        )
    rejected = [_reject_frame(file, bad_rows)] if bad_rows.height else []
    good = _gpus(typed.filter(~pl.col("_bad")), plan)
    keep = [name for name in SLURM_ROW_SCHEMA if name in good.columns]
    helpers = ["line", "_arr", "_base", "_job_id_raw"] + [
        f"_{column}_{kind}" for _, column in _TIME_FIELDS for kind in ("aware", "naive")
    ]
    good = _localize_times(good.select(*keep, *helpers), tz).with_columns(
        end_at=pl.when(pl.col("state").is_in(sorted(NO_END_STATES))).then(None).otherwise("end_at"),
        job_id_raw=pl.coalesce("_job_id_raw", "job_id"),
    )
    good = _expand_arrays(_node_lists(good))
    late = good.filter(pl.col("_reason").is_not_null())
    if late.height:
        rejected.append(_reject_frame(file, late))
    good = good.filter(pl.col("_reason").is_null())
    info["dst_ambiguous"] = int(good["_dst_ambiguous"].sum())
    info["dst_nonexistent"] = int(good["_dst_nonexistent"].sum())
    info["array_rows_expanded"] = int(good["_arr"].is_not_null().sum())
    rows = good.with_columns(file=pl.lit(file)).select(
        [pl.col(name).cast(dtype) for name, dtype in SLURM_ROW_SCHEMA.items()]
    )
    out = pl.concat(rejected) if rejected else pl.DataFrame(schema=REJECTED_SCHEMA)
    return rows, out
