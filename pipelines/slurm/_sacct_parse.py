"""Parse Slurm ``sacct`` text output (``--parsable2`` / ``--parsable``) into typed job rows.

:func:`parse_sacct` reads one file into a :class:`~pipelines._parse_result.ParseResult` whose
``rows`` follow :data:`SLURM_ROW_SCHEMA`; :func:`iter_parse_sacct` streams a large file in
blocks of lines, one result per block, in bounded memory (the same rows, concatenated).
The common path is vectorised polars work (lines and fields split by polars' CSV reader, values
by regex on whole columns, repeated TRES strings and host lists typed once); only rare records
(multi-line, pending arrays, odd host lists, DST-odd local times) go through Python.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from metrics.schema import UTC_DATETIME
from pipelines._parse_result import (
    EARLIEST_PLAUSIBLE,
    REJECTED_SCHEMA,
    ParseResult,
    latest_plausible,
)
from pipelines.slurm._sacct_fields import FREE_TEXT_FIELDS, NO_END_STATES, SLURM_STATES
from pipelines.slurm._sacct_json import JSON_FIELDS, json_records, json_shape
from pipelines.slurm._sacct_layout import (
    Layout,
    SacctFormatError,
    check_kind,
    detect_layout,
    json_layout,
)
from pipelines.slurm._sacct_values import (
    EPOCH_RE,
    OFFSET_RE,
    duration_parts,
    duration_seconds,
    expand_array_spec,
    expand_nodelists,
    gpus_from_tres,
    gres_as_tres,
    is_null_token,
    localize,
    req_mem,
    req_mem_parts,
    time_parts,
    tres_gpus,
)

__all__ = [
    "SLURM_ROW_SCHEMA",
    "SUMMED_INFO_KEYS",
    "SacctFormatError",
    "gpus_from_tres",
    "iter_parse_sacct",
    "parse_sacct",
]

_UTC = UTC_DATETIME

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

#: ``info`` keys of a text file's result that count something (its ``int`` values): summed over
#: the results of :func:`iter_parse_sacct`, they give the whole file's. The other keys are the
#: same in each result, but ``encoding`` (the last result's is the file's).
SUMMED_INFO_KEYS = (
    "lines",
    "rows",
    "rejected",
    "blank_lines",
    "repeated_headers",
    "joined_records",
    "surplus_joined",
    "dst_ambiguous",
    "dst_nonexistent",
    "array_rows_expanded",
)

#: Last fields a surplus of delimiters is joined into. Reason and Flags are free text to the
#: field list but hold Slurm's own tokens (``Resources``, ``SchedMain,StartRecieved``), never a
#: delimiter: a line with too many fields ending in them is rejected.
_SURPLUS_FIELDS = FREE_TEXT_FIELDS - {"reason", "flags"}
#: Lines a multi-line record may span (a SubmitLine with newlines).
_MAX_JOIN_LINES = 64
#: Lines read for layout detection.
_SAMPLE_LINES = 200
#: Bytes at the start of a file the layout-detection lines are taken from.
_SAMPLE_BYTES = 1 << 20
#: The first byte that is not ASCII white space.
_NON_BLANK = re.compile(rb"\S")
#: Bytes at the start of a file checked for binary content and JSON.
_HEAD_BYTES = 65536
#: Bytes read at a time when checking that the rest of a file is UTF-8.
_VALIDATE_BYTES = 16 << 20
#: Bytes read at a time by :func:`iter_parse_sacct` (at most).
_READ_BYTES = 4 << 20
_BOM = b"\xef\xbb\xbf"
#: Records typed at a time (bounds the memory of the intermediate columns).
_CHUNK_ROWS = 500_000
#: Bytes of a clean file split and typed at a time.
_CHUNK_BYTES = 128 << 20

_ID_RE = (
    r"^(?P<base>\d+)(?:_(?P<task>\d{1,18})|_\[(?P<arr>[^\]]*)\]|\+(?P<het>\d{1,18}))?"
    r"(?:\.(?P<step>[A-Za-z0-9_+]+))?$"
)
#: A plain job or step id (most ids), split without the regex above.
_PLAIN_ID_RE = r"^\d+(?:\.[A-Za-z0-9_+]+)?$"
_STATE_RE = r"^(?P<s>[A-Za-z_]+)(?: by (?P<uid>\d{1,18}))?$"
_EXIT_RE = r"^\d{1,18}:\d{1,18}$"
_TIMELIMIT_TOKENS = ("UNLIMITED", "Partition_Limit", "INVALID", "NONE")
_TIME_FIELDS = (
    ("submit", "submit_at"),
    ("eligible", "eligible_at"),
    ("start", "start_at"),
    ("end", "end_at"),
)
#: Most GPUs one job may hold (more is a corrupt TRES count, not a job).
MAX_GPUS_PER_JOB = 100_000
#: A GPU item of a TRES string: ``gres/gpu=N`` or ``gres/gpu:TYPE=N`` (not ``gres/gpumem``).
_GPU_ITEM_RE = r"(?:^|,)gres/gpu(?::[^=,]*)?=[^,]*"


# --------------------------------------------------------------------------- reading


def _read(path: str | Path, text: str | None, file: str) -> tuple[bytes, str]:
    """The content's bytes (a UTF-8 BOM removed) and their origin: ``text`` (the ``text``
    argument, encoded as UTF-8) or ``utf-8`` (a file; bytes that are not UTF-8 are found, and
    read as Latin-1, while splitting lines)."""
    if text is not None:
        return text.removeprefix("\ufeff").encode("utf-8", "replace"), "text"
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise SacctFormatError(file, f"cannot read the file: {err}") from err
    return data.removeprefix(_BOM), "utf-8"


def _lines(data: bytes, encoding: str) -> tuple[pl.DataFrame, str, bytes]:
    """One row per physical line: ``line`` (without ``\\r\\n``) and its 1-based ``line_no``.

    Lines are split by polars' CSV reader with a separator byte the data does not contain (much
    faster than Python); Python's ``str.split`` is the fallback. Bytes that are not UTF-8 are
    read as Latin-1.

    Returns:
        ``(lines, encoding, data)``: ``data`` re-encoded as UTF-8 where it was Latin-1.
    """
    expected = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    sentinel = next((chr(c) for c in (0x1F, 0x1E, 0x1D, 0x1C) if bytes([c]) not in data), None)
    frame: pl.DataFrame | None = None
    if sentinel is not None and data:
        try:
            frame = pl.read_csv(
                data,
                has_header=False,
                separator=sentinel,
                quote_char=None,
                new_columns=["line"],
                infer_schema=False,
                encoding="utf8",
                raise_if_empty=False,
            )
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
        frame = pl.DataFrame(
            {"line": text.split("\n") if data else []}, schema={"line": pl.String}
        ).select(pl.col("line").str.strip_suffix("\r"))
    lines = frame.select(
        line=pl.col("line").fill_null(""),
        line_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
    )
    return lines, encoding, data


def _rejected(
    file: str,
    line_no: pl.Series | list[int],
    line_end: pl.Series | list[int],
    raw: pl.Series | list[str],
    reason: pl.Series | list[str],
    field: pl.Series | list[str | None],
) -> pl.DataFrame:
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
    file: str,
    lines: pl.DataFrame,
    layout: Layout,
    first_data: int,
    info: dict[str, Any],
    *,
    final: bool = True,
) -> tuple[pl.DataFrame, list[pl.DataFrame], int]:
    """Group physical lines into records with the expected field count.

    Counts ``blank_lines``, ``repeated_headers``, ``joined_records`` and ``surplus_joined``
    (lines whose surplus delimiters went into the free-text last field) into ``info``.

    A short line is joined with the lines after it (at most :data:`_MAX_JOIN_LINES` in all) while
    together they have fewer fields than a record. When ``lines`` is one block of a longer file
    (``final`` False), the first short line whose join reaches the block's last line unfinished
    may need lines of the next block: the lines from it on are left out (the caller parses them
    with the next block). Every line before it is grouped exactly as in the whole file.

    Returns:
        ``(records, rejected, kept)``: records with ``line`` (the raw text), ``body`` (trailing
        delimiter removed), ``line_no``, ``line_end``, sorted by line; frames of rejected
        lines; and the number of physical lines of ``lines`` grouped (all of them unless
        ``final`` is False and a join was left open).
    """
    n = len(layout.keys)
    delim = layout.delimiter
    free_last = layout.keys[-1] in _SURPLUS_FIELDS
    df = lines.slice(first_data - 1)
    body = pl.col("line").str.strip_suffix(delim) if layout.parsable else pl.col("line")
    header = pl.lit(False) if layout.header_text is None else pl.col("line") == layout.header_text
    df = df.with_columns(
        blank=pl.col("line").str.contains(r"^\s*$"),
        header=header,
        body=body,
    ).with_columns(parts=pl.col("body").str.count_matches(delim, literal=True).cast(pl.Int64) + 1)
    data_line = ~pl.col("blank") & ~pl.col("header")
    short_pos = df.select((data_line & (pl.col("parts") < n)).arg_true()).to_series().to_list()
    consumed: set[int] = set()
    joins: list[tuple[int, int]] = []
    if short_pos:
        parts = df["parts"].to_list()
        is_header = df["header"].to_list()
        for pos in short_pos:
            if pos in consumed:
                continue
            total = parts[pos]
            end = pos
            while (
                total < n
                and end + 1 < len(parts)
                and not is_header[end + 1]
                and end - pos + 1 < _MAX_JOIN_LINES
            ):
                end += 1
                total += parts[end] - 1
            if (
                not final
                and total < n
                and end + 1 == len(parts)
                and end - pos + 1 < _MAX_JOIN_LINES
            ):
                # the join may go on in the next block: leave the lines from here on out
                df = df.head(pos)
                short_pos = [p for p in short_pos if p < pos]
                break
            if total == n and end > pos:
                joins.append((pos, end))
                consumed.update(range(pos, end + 1))
    rejected: list[pl.DataFrame] = []
    info["surplus_joined"] = (
        int(df.select((data_line & (pl.col("parts") > n)).sum()).item()) if free_last else 0
    )
    long = df.filter(data_line & (pl.col("parts") > n) & pl.lit(not free_last))
    if long.height:
        rejected.append(
            _rejected(
                file,
                long["line_no"],
                long["line_no"],
                long["line"],
                long.select(pl.format(f"expected {n} fields, found {{}}", "parts")).to_series(),
                [None] * long.height,
            )
        )
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
                file,
                bad["line_no"],
                bad["line_no"],
                bad["line"],
                bad.select(pl.format(f"expected {n} fields, found {{}}", "parts")).to_series(),
                [None] * bad.height,
            )
        )
    free = ~pl.int_range(0, pl.len()).is_in(sorted(consumed)) if consumed else pl.lit(True)
    counts = df.select(
        blank=(pl.col("blank") & free).sum(), header=(pl.col("header") & free).sum()
    ).row(0)
    info["blank_lines"], info["repeated_headers"] = int(counts[0]), int(counts[1])
    keep = data_line & free & ((pl.col("parts") == n) | ((pl.col("parts") > n) & pl.lit(free_last)))
    singles = df.filter(keep).select("line", "line_no", "body", line_end=pl.col("line_no"))
    if join_rows:
        joined = pl.DataFrame(join_rows, schema=singles.schema)
        singles = pl.concat([singles, joined]).sort("line_no")
    return singles, rejected, first_data - 1 + df.height


# --------------------------------------------------------------------------- values


def _raw(key: str) -> pl.Expr:
    """The raw String column of the field with lower-case key ``key``."""
    return pl.col(f"_f_{key}")


def _text(expr: pl.Expr, *nulls: str) -> pl.Expr:
    """A text value; empty (and any of ``nulls``) → NULL."""
    return pl.when(expr.is_in(["", *nulls])).then(None).otherwise(expr)


_Rule = tuple[pl.Expr, str | None, pl.Expr]


@dataclass
class _Group:
    """Expressions that read one raw column only (stages ``a``, ``b`` and rules)."""

    a: dict[str, pl.Expr] = field(default_factory=dict)
    b: dict[str, pl.Expr] = field(default_factory=dict)
    rules: list[_Rule] = field(default_factory=list)


class _Plan:
    """The expressions that type one file's fields, in three stages, plus the row rules.

    Stage ``a`` reads the raw ``_f_<key>`` columns (each regex runs once, into a struct or list
    column); stage ``b`` derives the typed columns from stage ``a``; ``rules`` are
    ``(bad, field, reason)`` triples: a row where ``bad`` holds is rejected. Fields with few
    distinct values (State, Timelimit, ExitCode, ReqMem) are typed per distinct value:
    ``local[key]`` holds their expressions, which :func:`_type_distinct` runs on the distinct
    values and joins back as columns (``_bad_<key>_<i>`` / ``_why_<key>_<i>`` for the rules).
    """

    def __init__(self, layout: Layout, cluster: str | None, flags: dict[str, bool]) -> None:
        self.keys = layout.keys
        self.name_of = dict(zip(layout.keys, layout.names, strict=True))
        self.flags = flags
        self.a: dict[str, pl.Expr] = {}
        self.b: dict[str, pl.Expr] = {}
        self.rules: list[_Rule] = []
        self.used: set[str] = set()
        self.local: dict[str, _Group] = {}
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
        # binary data in a text field rejects the row only, before any rule on its value
        self.rules[:0] = [
            (
                _raw(key).str.contains("\x00", literal=True).fill_null(False),
                self.name_of[key],
                pl.lit(f"NUL byte in {self.name_of[key]} (binary data in a text export)"),
            )
            for key in self.keys
            if flags.get(f"nul_{key}", False)
        ]
        for key, group in self.local.items():
            for i, (_, name, _) in enumerate(group.rules):
                self.rules.append((pl.col(f"_bad_{key}_{i}"), name, pl.col(f"_why_{key}_{i}")))

    @contextmanager
    def _local(self, key: str | None) -> Iterator[None]:
        """Route the ``a``/``b``/``rules`` written inside to the group of raw field ``key``."""
        if key is None:
            yield
            return
        group = self.local.setdefault(key, _Group())
        saved = (self.a, self.b, self.rules)
        self.a, self.b, self.rules = group.a, group.b, group.rules
        try:
            yield
        finally:
            self.a, self.b, self.rules = saved

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
        self.a["_plain_id"] = raw_id.str.contains(_PLAIN_ID_RE)
        self.a["_id_split"] = raw_id.str.splitn(".", 2)
        self.a["_ids"] = (
            pl.when(raw_id.str.contains(_PLAIN_ID_RE))
            .then(None)
            .otherwise(raw_id)
            .str.extract_groups(_ID_RE)
        )
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
        plain = pl.col("_plain_id")
        split = pl.col("_id_split")
        base = pl.coalesce(
            ids.struct.field("base"), pl.when(plain).then(split.struct.field("field_0"))
        )
        step = pl.coalesce(
            ids.struct.field("step"), pl.when(plain).then(split.struct.field("field_1"))
        )
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
        self.b["step"] = step
        self.b["is_allocation"] = step.is_null()
        raw_key = self.key("jobidraw") if id_key == "jobid" else None
        self.a["_job_id_raw"] = (
            _text(_raw(raw_key).str.splitn(".", 2).struct.field("field_0"))
            if raw_key is not None
            else pl.lit(None, pl.String)
        )

    def _text_columns(self, cluster: str | None) -> None:
        self.a["cluster"] = pl.coalesce(_text(self.raw("cluster")), pl.lit(cluster or "default"))
        for column, key in (
            ("job_name", "jobname"),
            ("user_name", "user"),
            ("account", "account"),
            ("group_name", "group"),
            ("partition", "partition"),
            ("qos", "qos"),
        ):
            self.a[column] = _text(self.raw(key))
        self.a["reason"] = _text(self.raw("reason"), "None")
        self.a["node_list_raw"] = _text(self.raw("nodelist"))

    def _state(self) -> None:
        with self._local(self.key("state")):
            self._state_columns()

    def _state_columns(self) -> None:
        state_key = self.key("state")
        state_raw = self.raw("state")
        self.a["state_raw"] = _text(state_raw)
        known = sorted(SLURM_STATES)
        self.a["_st"] = (
            pl.when(state_raw.is_in(known)).then(None).otherwise(state_raw)
        ).str.extract_groups(_STATE_RE)
        state = (
            pl.when(state_raw.is_in(known))
            .then(state_raw)
            .otherwise(pl.col("_st").struct.field("s").str.to_uppercase())
        )
        self.b["state"] = state
        self.b["cancelled_by_uid"] = pl.col("_st").struct.field("uid").cast(pl.Int64)
        if state_key is not None:
            self.rule(
                (state_raw != "") & (state.is_null() | ~state.is_in(known)),
                state_key,
                pl.format("unknown job state '{}'", state_raw),
            )

    def _times(self) -> None:
        for key, column in _TIME_FIELDS:
            found = self.key(key)
            aware, naive, _ = time_parts(
                self.raw(key),
                epoch=self.flags.get(f"epoch_{key}", False),
                offset=self.flags.get(f"offset_{key}", False),
                space=self.flags.get(f"space_{key}", False),
            )
            self.a[f"_{column}_aware"] = aware
            self.a[f"_{column}_naive"] = naive
            if found is not None:
                name = self.name_of[found]
                bad = (
                    ~is_null_token(_raw(found))
                    & pl.col(f"_{column}_aware").is_null()
                    & pl.col(f"_{column}_naive").is_null()
                )
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
        if "suspended" in self.keys:
            # Elapsed leaves suspended time out (End − Start − Suspended): a helper for
            # _settle_by_elapsed, the field itself kept in ``extra`` (not marked used)
            self.a["_d__suspended_s"] = duration_parts(_raw("suspended"))
            seconds, _bad = duration_seconds(pl.col("_d__suspended_s"), _raw("suspended"))
            self.b["_suspended_s"] = seconds
        limit_key = self.key("timelimit", "timelimitraw")
        if limit_key is None:
            self.b["timelimit_s"] = pl.lit(None, pl.Int64)
            self.b["timelimit_note"] = pl.lit(None, pl.String)
            return
        with self._local(limit_key):
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
        with self._local(self.key("exitcode")):
            self._exit_code()
        self._counts()

    def _exit_code(self) -> None:
        exit_key = self.key("exitcode")
        exit_raw = self.raw("exitcode")
        self.a["_ex"] = pl.when(exit_raw.str.contains(_EXIT_RE)).then(exit_raw.str.splitn(":", 2))
        code = pl.col("_ex").struct.field("field_0").cast(pl.Int64)
        self.b["exit_code"] = code
        self.b["signal"] = pl.col("_ex").struct.field("field_1").cast(pl.Int64)
        if exit_key is not None:
            self.rule(
                ~is_null_token(exit_raw) & code.is_null(),
                exit_key,
                pl.format("unparseable ExitCode '{}'", exit_raw),
            )

    def _counts(self) -> None:
        for column, names in (
            ("uid", ("uid",)),
            ("nnodes", ("nnodes", "allocnodes")),
            ("ncpus", ("ncpus", "alloccpus")),
        ):
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
            if column != "uid":
                self.rule(
                    pl.col(column) < 0,
                    key,
                    pl.format(f"negative {self.name_of[key]} '{{}}'", raw),
                )

    def _resources(self) -> None:
        mem_key = self.key("reqmem")
        if mem_key is not None:
            with self._local(mem_key):
                self.a["_mem"] = req_mem_parts(_raw(mem_key))
                mb, per, bad = req_mem(pl.col("_mem"), _raw(mem_key))
                self.b["req_mem_mb"] = mb
                self.b["req_mem_per"] = per
                self.rule(bad, mem_key, pl.format("unparseable ReqMem '{}'", _raw(mem_key)))
        else:
            self.b["req_mem_mb"] = pl.lit(None, pl.Float64)
            self.b["req_mem_per"] = pl.lit(None, pl.String)
        for key, gres_key, tres_column in (
            ("alloctres", "allocgres", "alloc_tres"),
            ("reqtres", "reqgres", "req_tres"),
        ):
            self.a[tres_column] = _text(self.raw(key))
            found = self.key(key)
            self.gpu_sources[key] = _raw(found) if found is not None else None
            if found is not None:
                with self._local(found):
                    self._gpu_count_rule(found)
                if gres_key in self.keys:
                    # both fields (`sacct --long` of Slurm before 18.08, XDMoD's ReqGRES|ReqTRES):
                    # a TRES value naming no GPU defers to a GRES value that names some, since
                    # GPUs reached TRES only where AccountingStorageTRES listed gres/gpu
                    self.local.setdefault(gres_key, _Group())
                    tres = _raw(found)
                    from_gres = _raw(gres_key).map_elements(
                        gres_as_tres, return_dtype=pl.String, skip_nulls=True
                    )
                    self.gpu_sources[key] = (
                        pl.when(
                            ~tres.fill_null("").str.contains(r"gres/(?:gpu|shard)[:=]")
                            & from_gres.fill_null("").str.contains("gres/gpu", literal=True)
                        )
                        .then(from_gres)
                        .otherwise(tres)
                    )
            elif (gres := self.key(gres_key)) is not None:
                # Slurm before 18.08: the GPUs as generic resources only (gres_as_tres),
                # converted per distinct value (a field of its own group, typed on its
                # distinct values by _type_distinct)
                self.local.setdefault(gres, _Group())
                self.gpu_sources[key] = _raw(gres).map_elements(
                    gres_as_tres, return_dtype=pl.String, skip_nulls=True
                )

    def _gpu_count_rule(self, key: str) -> None:
        """Reject a TRES string with a GPU count that is not a whole number from 0 to
        :data:`MAX_GPUS_PER_JOB` (``gres/gpu=-4``, ``gres/gpu=abc``, ``gres/gpu=1.5``)."""
        values = (
            _raw(key)
            .str.extract_all(_GPU_ITEM_RE)
            .list.eval(pl.element().str.replace(r"^[^=]*=", ""))
        )
        wrong = ~pl.element().str.contains(r"^\d{1,18}$") | (
            pl.element().cast(pl.Int64, strict=False) > MAX_GPUS_PER_JOB
        )
        first_bad = values.list.eval(pl.element().filter(wrong)).list.first()
        name = self.name_of[key]
        self.rule(
            first_bad.is_not_null(),
            key,
            pl.format(
                f"GPU count '{{}}' in {name} is not a whole number from 0 to {MAX_GPUS_PER_JOB}",
                first_bad,
            ),
        )

    def _extra(self) -> None:
        rest = [k for k in self.keys if k not in self.used]
        self.a["extra"] = (
            pl.struct([_text(_raw(k)).alias(self.name_of[k]) for k in rest]).struct.json_encode()
            if rest
            else pl.lit(None, pl.String)
        )


def _type_distinct(fields: pl.DataFrame, plan: _Plan) -> pl.DataFrame:
    """Type the few-valued fields per distinct value and join the columns back.

    The few-valued fields are taken together: their distinct combinations are typed (each
    group's expressions read its own field only, so a value types the same in any combination)
    and joined back in one join; the GPU counts of the AllocTRES / ReqTRES strings
    (:func:`_gpus`) are counted there too. One join of a few combinations measured a third of
    the time of one join per field.
    """
    keys = [f"_f_{key}" for key in plan.local]
    if not keys:
        return _gpus(fields, plan)
    a: dict[str, pl.Expr] = {}
    b: dict[str, pl.Expr] = {}
    rule_columns: dict[str, pl.Expr] = {}
    for key, group in plan.local.items():
        a.update(group.a)
        b.update(group.b)
        for i, (bad, _, why) in enumerate(group.rules):
            rule_columns[f"_bad_{key}_{i}"] = bad
            rule_columns[f"_why_{key}_{i}"] = pl.when(bad).then(why)
    distinct = fields.select(keys).unique().with_columns(**a).with_columns(**b)
    distinct = _gpus(distinct.with_columns(**rule_columns), plan).rechunk()
    looked_up = fields.select(keys).join(
        distinct, on=keys, how="left", maintain_order="left", nulls_equal=True
    )
    return fields.hstack(looked_up.drop(keys))


def _flags(fields: pl.DataFrame, keys: Sequence[str]) -> dict[str, bool]:
    """Which time fields hold any epoch or offset value or any value with a space (``%F %T``;
    the parse branches not needed are skipped), and which fields hold a NUL byte
    (``nul_<key>``: :class:`_Plan`'s rule). ISO local times are 19 characters: only shorter
    values can be epoch seconds and only longer ones can carry an
    offset, so the regexes run on those few values only."""
    exprs = []
    for key, _ in _TIME_FIELDS:
        if key in keys:
            size = _raw(key).str.len_bytes()
            short = pl.when(size <= 12).then(_raw(key))
            long = pl.when(size > 19).then(_raw(key))
            exprs.append(short.str.contains(EPOCH_RE).any().alias(f"epoch_{key}"))
            exprs.append(long.str.contains(OFFSET_RE).any().alias(f"offset_{key}"))
            spaced = pl.when(size >= 19).then(_raw(key)).str.contains(" ", literal=True)
            exprs.append(spaced.any().alias(f"space_{key}"))
    for key in keys:
        exprs.append(_raw(key).str.contains("\x00", literal=True).any().alias(f"nul_{key}"))
    if not exprs:
        return {}
    return {name: bool(value) for name, value in fields.select(exprs).row(0, named=True).items()}


def _gpus(df: pl.DataFrame, plan: _Plan) -> pl.DataFrame:
    """Add ``gpus``, ``req_gpus`` and ``gpu_type`` from the AllocTRES / ReqTRES fields.

    TRES strings repeat a lot, so each distinct string is counted once and joined back.
    """
    present = {
        column: source
        for key, column in (("alloctres", "gpus"), ("reqtres", "req_gpus"))
        if (source := plan.gpu_sources.get(key)) is not None
    }
    nulls = {
        "gpus": pl.lit(None, pl.Float64),
        "req_gpus": pl.lit(None, pl.Float64),
        "gpu_type": pl.lit(None, pl.String),
    }
    if not present:
        return df.with_columns(**nulls)
    tres = df.select(**{f"_tres_{column}": source for column, source in present.items()})
    distinct = pl.concat([tres[name].alias("tres") for name in tres.columns]).drop_nulls().unique()
    counted = pl.concat([distinct.to_frame(), tres_gpus(distinct)], how="horizontal")
    out: dict[str, pl.Series | pl.Expr] = {}
    types: list[pl.Series] = []
    for column in present:
        looked_up = tres.select(f"_tres_{column}").join(
            counted,
            left_on=f"_tres_{column}",
            right_on="tres",
            how="left",
            maintain_order="left",
        )
        out[column] = looked_up["gpus"].alias(column)
        types.append(looked_up["gpu_type"].alias(f"_type_{column}"))
    for column in ("gpus", "req_gpus"):
        out.setdefault(column, nulls[column])
    out["gpu_type"] = pl.DataFrame(types).select(pl.coalesce(pl.all())).to_series()
    return df.with_columns(**out)


def _settle_by_elapsed(
    df: pl.DataFrame,
    columns: dict[str, pl.Expr | pl.Series],
    repeated: dict[str, list[int]],
    tz: str,
) -> dict[str, pl.Series]:
    """Start and End of the rows where either is a local time of the repeated hour (DST ends):
    of the earlier and the later instant of each, the pair whose span is nearest the row's
    Elapsed plus the row's Suspended where the file has it (sacct's Elapsed is End − Start −
    Suspended; without the field a suspended job's span reads short by its suspension). On a
    tie, the pair that starts no earlier than the row's Submit (the row's other readings of
    the repeated hour settled as before), then the earlier; the earlier also where Elapsed or
    the other time is missing. Read as the earlier instant alone, a 2-hour job ending in the
    repeated hour was 1 hour long, and a 20-minute one starting before the change and ending
    after it ended before it started; a 10-minute job submitted at 01:50 of the first 01:00
    hour and run 01:10–01:20 of the second reads 10 minutes either way, and only the second
    hour's pair starts after its Submit."""
    zone = ZoneInfo(tz)
    start, end = (df.select(columns[c]).to_series() for c in ("start_at", "end_at"))
    submit = (
        df.select(columns["submit_at"]).to_series()
        if "submit_at" in columns
        else pl.Series([None] * df.height, dtype=_UTC)
    )
    elapsed = df["elapsed_s"]
    if "_suspended_s" in df.columns:
        elapsed = elapsed + df["_suspended_s"].fill_null(0)

    def instants(column: str, row: int, value: datetime | None) -> list[datetime | None]:
        if row not in ambiguous[column] or value is None:
            return [value]
        naive: datetime = df[f"_{column}_naive"][row]
        earlier, later = sorted(naive.replace(tzinfo=zone, fold=f).astimezone(UTC) for f in (0, 1))
        return [earlier, later]

    ambiguous = {c: set(repeated.get(c, [])) for c in ("start_at", "end_at")}
    rows = sorted(ambiguous["start_at"] | ambiguous["end_at"])
    starts, ends = [], []
    for row in rows:
        best = (start[row], end[row])
        if elapsed[row] is not None:
            pairs = [
                (s, e)
                for s in instants("start_at", row, start[row])
                for e in instants("end_at", row, end[row])
                if s is not None and e is not None
            ]
            if pairs:
                sub = submit[row]
                best = min(
                    pairs,
                    key=lambda p: (
                        abs((p[1] - p[0]).total_seconds() - elapsed[row]),
                        sub is not None and p[0] < sub,
                    ),
                )
        starts.append(best[0])
        ends.append(best[1])
    return {
        "start_at": start.scatter(rows, pl.Series(starts, dtype=_UTC)),
        "end_at": end.scatter(rows, pl.Series(ends, dtype=_UTC)),
    }


def _localize_times(df: pl.DataFrame, tz: str) -> pl.DataFrame:
    """Combine the aware and naive time parts into UTC columns; count DST-odd values per row."""
    height = df.height
    odd: dict[str, list[int]] = {"_dst_ambiguous": [], "_dst_nonexistent": []}
    columns: dict[str, pl.Expr | pl.Series] = {}
    repeated: dict[str, list[int]] = {}
    for _, column in _TIME_FIELDS:
        naive = df[f"_{column}_naive"]
        if naive.null_count() == height:
            local = pl.Series(column, [None] * height, dtype=_UTC)
        else:
            local, ambiguous, nonexistent = localize(naive, tz)
            odd["_dst_ambiguous"] += ambiguous
            odd["_dst_nonexistent"] += nonexistent
            repeated[column] = ambiguous
        columns[column] = pl.coalesce(df[f"_{column}_aware"], local).alias(column)
    if "elapsed_s" in df.columns and (repeated.get("start_at") or repeated.get("end_at")):
        columns.update(_settle_by_elapsed(df, columns, repeated, tz))
    for name, positions in odd.items():
        counts = pl.repeat(0, height, dtype=pl.Int64, eager=True)
        if positions:
            per_row = pl.Series(positions, dtype=pl.Int64).value_counts()
            counts = counts.scatter(per_row[""], per_row["count"].cast(pl.Int64))
        columns[name] = counts
    return df.with_columns(**columns)


def _node_lists(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``node_list`` (expanded host names); a bad host list sets ``_reason``.

    Each distinct NodeList is expanded once (``None assigned`` → ``[]``) and joined back.
    """
    distinct = df["node_list_raw"].drop_nulls().unique()
    distinct = distinct.filter(distinct != "None assigned")
    expanded = pl.concat([distinct.to_frame(), expand_nodelists(distinct)], how="horizontal")
    none_assigned = pl.DataFrame(
        {"node_list_raw": ["None assigned"], "node_list": [[]], "error": [None]},
        schema=expanded.schema,
    )
    # one chunk: a join against a right side in several chunks measured 9× slower
    mapping = pl.concat([expanded, none_assigned], rechunk=True)
    # join one column, not the whole frame (a join gathers every column it carries)
    looked_up = df.select("node_list_raw").join(
        mapping, on="node_list_raw", how="left", maintain_order="left"
    )
    error = looked_up["error"]
    return df.with_columns(
        node_list=looked_up["node_list"],
        _reason=pl.when(error.is_not_null()).then(
            pl.format("bad NodeList '{}': {}", "node_list_raw", error)
        ),
        _field=pl.when(error.is_not_null()).then(pl.lit("NodeList")),
    )


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
        schema={
            "_arr": pl.String,
            "_tasks": pl.List(pl.Int64),
            "array_throttle": pl.Int64,
            "_arr_err": pl.String,
        },
    )
    df = df.join(mapping, on="_arr", how="left", maintain_order="left").with_columns(
        _field=pl.when(pl.col("_reason").is_null() & pl.col("_arr_err").is_not_null())
        .then(pl.lit("JobID"))
        .otherwise("_field"),
        _reason=pl.coalesce("_reason", "_arr_err"),
    )
    df = df.with_columns(_tasks=pl.when(pl.col("_reason").is_null()).then("_tasks")).explode(
        "_tasks", keep_nulls=True
    )
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
    now: datetime | None = None,
) -> ParseResult:
    """Parse one file of ``sacct --parsable2`` / ``--parsable`` (or ``--json``) output.

    The file may have a header line (``sacct`` without ``--noheader``); the delimiter is then
    detected from it. Headerless files need ``fields``. Fields may come in any order; fields
    without a column of :data:`SLURM_ROW_SCHEMA` are kept in ``extra`` (JSON text). A
    ``sacct --json`` document (Slurm 21.08 … 24.x shapes) is read job by job and step by step
    into the same rows; ``line_no`` is then the job's 1-based index in ``jobs``.

    Every physical line ends in ``rows`` or in ``rejected`` (blank lines and repeated header
    lines are counted in ``info``): a line with the wrong field count, an unknown job state, a
    truncated job id (``1234.b+``), an unparseable value or an implausible one (a time before
    1990 or after ``now`` + 1 day, End before Start, Start before Submit, an Elapsed longer than
    End − Start or out of range (``1-25:00:00``), a NUL byte in any field, a GPU count in
    AllocTRES/ReqTRES that is not a whole number from 0 to 100 000, a negative NNodes/NCPUS)
    is rejected with the reason and the field; a line
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
        now: the ingest time (aware); a Submit/Eligible/Start/End later than it plus a day, or
            before 1990-01-01, rejects the row. Default: the current UTC time.

    Returns:
        A :class:`ParseResult` whose ``rows`` have :data:`SLURM_ROW_SCHEMA` and whose ``info``
        holds ``format`` (``'parsable2'``/``'parsable'``), ``delimiter``, ``fields``, ``header``,
        ``rows``, ``rejected``, ``dst_ambiguous``, ``dst_nonexistent``, ``lines``,
        ``blank_lines``, ``repeated_headers``, ``joined_records``, ``surplus_joined``,
        ``array_rows_expanded``, ``encoding`` (for JSON: ``format`` ``'json'``, ``json_shape``,
        ``json_errors``).

    Raises:
        SacctFormatError: the file cannot be read, is not sacct output (binary, JSON without
            ``jobs``, HTML, fixed-width text), has no header and no ``fields``, or no delimiter
            fits.
        ValueError: ``tz`` is not a known time zone.
    """
    file = str(path)
    _check_tz(tz)
    now = _now(now)
    data, encoding = _read(path, text, file)
    document = check_kind(file, data[:_HEAD_BYTES].decode("utf-8", "replace"), data)
    if document is not None:
        return _parse_json(file, document, cluster, tz, now)
    sample = _sample(data)
    info: dict[str, Any] = {"encoding": encoding}
    if not sample:
        info["lines"] = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        return _empty(file, info, fields, delimiter)
    layout = detect_layout(file, sample, fields, delimiter)
    first_data = sample[0][0] + 1 if layout.header else 1
    parsed = _parse_block(file, data, encoding, layout, first_data, 0, cluster, tz, now)
    assert parsed is not None  # a final block carries nothing over
    return parsed[0]


def iter_parse_sacct(
    path: str | Path,
    *,
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
    tz: str = "UTC",
    chunk_bytes: int = 64 * 2**20,
    now: datetime | None = None,
) -> Iterator[ParseResult]:
    """Parse a ``sacct`` text file block by block, in memory bounded by ``chunk_bytes``.

    The file is streamed in blocks of about ``chunk_bytes`` that end at a line end; the header
    and layout are found once, from the start of the file, and each block is parsed like
    :func:`parse_sacct` parses a whole file. Concatenated, the results' ``rows`` and
    ``rejected`` equal :func:`parse_sacct`'s on the whole file (same line numbers, same
    rejects): lines at a block's end that may be the start of a multi-line record (a newline in
    SubmitLine) are carried over into the next block, so a record is joined as in the whole
    file. A ``sacct --json`` document (the file starts with ``{`` or ``[``) is parsed whole, as
    one result.

    Each result's ``info`` describes its block. Merged, the keys of :data:`SUMMED_INFO_KEYS`
    (``lines``, ``rows``, ``rejected``, ``blank_lines``, ``repeated_headers``,
    ``joined_records``, ``surplus_joined``, ``dst_ambiguous``, ``dst_nonexistent``,
    ``array_rows_expanded``: every ``int`` value) sum to the whole file's; the others
    (``format``, ``delimiter``, ``fields``, ``header``) are the same in every block, except
    ``encoding``, where the last block's value is the file's (a Latin-1 file is only found to
    be one at its first byte that is not ASCII; the blocks before it are ASCII).

    Args:
        path: the file to read.
        fields: ``sacct --format`` names in file order, for files without a header line.
        delimiter: the field delimiter; None detects it.
        cluster: the cluster name for rows without a Cluster value (default ``"default"``).
        tz: the IANA zone that naive times are read in.
        chunk_bytes: the size of a block in bytes (a block holds at least one whole line).
        now: the ingest time, as in :func:`parse_sacct`.

    Yields:
        One :class:`ParseResult` per block, in file order; at least one.

    Raises:
        SacctFormatError: as :func:`parse_sacct` (raised when the first result is asked for).
        ValueError: ``tz`` is not a known time zone, or ``chunk_bytes`` is below 1.
    """
    file = str(path)
    _check_tz(tz)
    now = _now(now)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, not {chunk_bytes}")
    try:
        fh = Path(path).open("rb")  # noqa: SIM115 (closed by the with below, also on close())
        raw = fh.read(_SAMPLE_BYTES + len(_BOM) + 1)
    except OSError as err:
        raise SacctFormatError(file, f"cannot read the file: {err}") from err
    with fh:
        data = raw.removeprefix(_BOM)
        head = data[:_HEAD_BYTES].decode("utf-8", "replace")
        if head.lstrip().startswith(("{", "[")):  # JSON (or text that starts like it): whole
            yield parse_sacct(
                path, fields=fields, delimiter=delimiter, cluster=cluster, tz=tz, now=now
            )
            return
        check_kind(file, head, data)
        sample = _sample(data)
        while not sample:  # blank so far: the data may start further on
            more = fh.read(_VALIDATE_BYTES)
            if not more:
                break
            raw += more
            data = raw.removeprefix(_BOM)
            if more.strip():
                sample = _sample(data)
        if not sample:
            lines = data.count(b"\n")
            last = data[-1:]
            while piece := fh.read(_VALIDATE_BYTES):
                lines += piece.count(b"\n")
                last = piece[-1:]
            info: dict[str, Any] = {
                "encoding": "utf-8",
                "lines": lines + (1 if last not in (b"", b"\n") else 0),
            }
            yield _empty(file, info, fields, delimiter)
            return
        layout = detect_layout(file, sample, fields, delimiter)
        first_data = sample[0][0] + 1 if layout.header else 1
        yield from _iter_blocks(
            file, fh, raw, layout, first_data, cluster, tz, chunk_bytes, path=Path(path), now=now
        )


def _iter_blocks(
    file: str,
    fh: BinaryIO,
    raw: bytes,
    layout: Layout,
    first_data: int,
    cluster: str | None,
    tz: str,
    chunk_bytes: int,
    *,
    path: Path,
    now: datetime,
) -> Iterator[ParseResult]:
    """The results of :func:`iter_parse_sacct` for a text file whose first bytes, ``raw``,
    are read (the rest comes from ``fh``)."""
    encoding: str | None = None  # found at the first byte that is not ASCII
    offset = 0  # of the next bytes read, in the file

    def decoded(piece: bytes, skip: int = 0) -> bytes:
        """``piece[skip:]`` (read at ``offset``) as UTF-8, the file's encoding found if due."""
        nonlocal encoding, offset
        if encoding is None and not piece.isascii():
            encoding = "utf-8" if _is_utf8(path, offset) else "latin-1"
        offset += len(piece)
        if encoding == "latin-1":
            return piece[skip:].decode("latin-1").encode("utf-8")
        return piece[skip:]

    # the bytes read and not yet parsed; read in pieces of at most _READ_BYTES, so that little
    # more than a block is held while the block is parsed
    pending = bytearray(decoded(raw, len(_BOM) if raw.startswith(_BOM) else 0))
    del raw
    read_bytes = min(max(chunk_bytes, _HEAD_BYTES), _READ_BYTES)
    eof = False
    first = True
    line_offset = 0
    # the first block holds at least the lines before the data (the header)
    header_end = 0
    for _ in range(first_data - 1):
        header_end = pending.find(b"\n", header_end) + 1 or len(pending)
    need = chunk_bytes
    while True:
        want = max(need, header_end if first else 1)
        cut = pending.find(b"\n", want - 1)
        while cut == -1 and not eof:
            piece = fh.read(read_bytes)
            if not piece:
                eof = True
                break
            start = max(len(pending), want - 1)
            pending += decoded(piece)
            del piece
            cut = pending.find(b"\n", start)
        final = cut == -1 or (eof and cut + 1 == len(pending))
        end = len(pending) if final else cut + 1
        with memoryview(pending) as view:
            block = bytes(view[:end])
        del pending[:end]
        if not block and not first:
            return
        parsed = _parse_block(
            file,
            block,
            encoding or "utf-8",
            layout,
            first_data if first else 1,
            line_offset,
            cluster,
            tz,
            now,
            final=final,
        )
        if parsed is None:  # a multi-line record may fill the whole block: read more
            need = len(block) + chunk_bytes
            pending[:0] = block
            continue
        result, carried = parsed
        del parsed
        if carried:  # back to the front of what is left, for the next block
            kept_end = len(block)
            for _ in range(carried + 1):
                kept_end = block.rfind(b"\n", 0, kept_end)
            pending[:0] = block[kept_end + 1 :]
        del block
        lines = result.info["lines"]
        assert isinstance(lines, int)
        yield result
        del result  # not held while the next block is parsed
        if final:
            return
        line_offset += lines
        first = False
        need = chunk_bytes


def _is_utf8(path: Path, offset: int) -> bool:
    """Whether the file's bytes from ``offset`` on are UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with path.open("rb") as fh:
        fh.seek(offset)
        while piece := fh.read(_VALIDATE_BYTES):
            if piece.isascii() and not decoder.getstate()[0]:
                continue
            try:
                decoder.decode(piece)
            except UnicodeDecodeError:
                return False
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _now(now: datetime | None) -> datetime:
    """The ingest time: ``now`` (naive is read as UTC), default the current UTC time."""
    if now is None:
        return datetime.now(UTC)
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _time_checks(df: pl.DataFrame, plan: _Plan, now: datetime) -> pl.DataFrame:
    """Set ``_reason``/``_field`` (where not set yet) on rows with an implausible time.

    Implausible: a Submit/Eligible/Start/End before 1990-01-01 or after ``now`` + 1 day (a
    year-9999 End would make hourly occupancy run to year 9999); an End before the Start; a
    Start before the Submit; an Elapsed longer than End − Start (sacct's Elapsed is End − Start
    − Suspended). NULL times (``Unknown``, ``None``) pass.
    """
    latest = latest_plausible(now)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    checks: list[tuple[pl.Expr, str, pl.Expr]] = []
    names = {key: plan.name_of[key] for key, _ in _TIME_FIELDS if key in plan.name_of}
    for key, column in _TIME_FIELDS:
        if key not in names:
            continue
        value = pl.col(column)
        checks.append(
            (
                (value < EARLIEST_PLAUSIBLE) | (value > latest),
                names[key],
                pl.format(
                    f"implausible {names[key]} time {{}} (outside {EARLIEST_PLAUSIBLE:%Y-%m-%d} .. "
                    f"{latest.astimezone(UTC):{stamp}})",
                    value.dt.to_string(stamp),
                ),
            )
        )
    for later, earlier, later_column, earlier_column in (
        ("end", "start", "end_at", "start_at"),
        ("start", "submit", "start_at", "submit_at"),
    ):
        if later in names and earlier in names:
            checks.append(
                (
                    pl.col(later_column) < pl.col(earlier_column),
                    names[later],
                    pl.format(
                        f"{names[later]} {{}} is before {names[earlier]} {{}}",
                        pl.col(later_column).dt.to_string(stamp),
                        pl.col(earlier_column).dt.to_string(stamp),
                    ),
                )
            )
    elapsed = next((k for k in ("elapsed", "elapsedraw") if k in plan.name_of), None)
    if elapsed is not None and "start" in names and "end" in names:
        # sacct's Elapsed is End − Start − Suspended (slurmdbd: elapsed = end − start, less the
        # suspended time): never longer than End − Start
        span = (pl.col("end_at") - pl.col("start_at")).dt.total_seconds()
        checks.append(
            (
                pl.col("elapsed_s") > span,
                plan.name_of[elapsed],
                pl.format(
                    f"{plan.name_of[elapsed]} {{}} s is longer than {names['end']} − "
                    f"{names['start']} {{}} s",
                    pl.col("elapsed_s"),
                    span,
                ),
            )
        )
    if not checks:
        return df
    return df.with_columns(
        _field=pl.when(pl.col("_reason").is_null())
        .then(pl.coalesce([pl.when(bad).then(pl.lit(name, pl.String)) for bad, name, _ in checks]))
        .otherwise("_field"),
        _reason=pl.coalesce("_reason", *[pl.when(bad).then(why) for bad, _, why in checks]),
    )


def _check_tz(tz: str) -> None:
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(f"unknown time zone {tz!r}") from err


def _parse_block(
    file: str,
    data: bytes,
    encoding: str,
    layout: Layout,
    first_data: int,
    line_offset: int,
    cluster: str | None,
    tz: str,
    now: datetime,
    *,
    final: bool = True,
) -> tuple[ParseResult, int] | None:
    """Parse the lines of a whole text file, or of one block of it (whole lines).

    Args:
        file: the file's name, for rows and messages.
        data: the block's bytes (UTF-8 unless ``encoding`` says the file is Latin-1 and the
            block not yet re-encoded).
        encoding: the file's encoding so far (``utf-8``/``latin-1``), for ``info``.
        layout: the file's layout.
        first_data: the block's 1-based line where data starts (after the header).
        line_offset: physical lines of the file before the block (added to line numbers).
        cluster: the cluster name for rows without a Cluster value.
        tz: the zone of naive times.
        now: the ingest time (later times are implausible, see :func:`_time_checks`).
        final: the block ends the file; when False, lines at its end that may make one
            record with lines of the next block are left out (see :func:`_records`).

    Returns:
        ``(result, carried)``: the block's :class:`ParseResult` (``info["lines"]`` counts the
        lines parsed) and the number of lines at the block's end left out; None when no data
        line could be parsed without the next block.
    """
    info: dict[str, Any] = {
        "encoding": encoding,
        "format": "parsable" if layout.parsable else "parsable2",
        "delimiter": layout.delimiter,
        "fields": list(layout.names),
        "header": layout.header,
    }
    carried = 0
    fast = _fast_parse(file, data, layout, first_data, cluster, tz, info, line_offset, now)
    if fast is not None:
        info.update(blank_lines=0, repeated_headers=0, joined_records=0, surplus_joined=0)
        rows, late = fast
        rejected: list[pl.DataFrame] = []
    else:
        lines, info["encoding"], data = _lines(data, encoding)
        del data
        if line_offset:
            lines = lines.with_columns(pl.col("line_no") + line_offset)
        records, rejected, kept = _records(file, lines, layout, first_data, info, final=final)
        carried = lines.height - kept
        if carried and kept < first_data:
            return None
        info["lines"] = kept
        del lines
        rows, late = _parse_records(
            file, _split_records(records, layout), layout, cluster, tz, info, now
        )
    rejected.append(late)
    all_rejected = pl.concat(rejected).sort("line_no")
    info["rows"] = rows.height
    info["rejected"] = all_rejected.height
    return ParseResult(rows=rows, rejected=all_rejected, info=info), carried


def _parse_json(
    file: str, document: dict[str, Any], cluster: str | None, tz: str, now: datetime
) -> ParseResult:
    """Parse a ``sacct --json`` document: its jobs and steps become records of the text fields."""
    records, bad = json_records(document)
    layout = json_layout(JSON_FIELDS)
    jobs = document["jobs"]
    info: dict[str, Any] = {
        "format": "json",
        "json_shape": json_shape(document),
        "delimiter": None,
        "fields": list(layout.names),
        "header": False,
        "lines": len(jobs),
        "blank_lines": 0,
        "repeated_headers": 0,
        "joined_records": 0,
        "surplus_joined": 0,
        "json_errors": [str(e) for e in document.get("errors") or []],
        "encoding": "utf-8",
    }
    columns: dict[str, list[Any]] = {
        "line": [raw for _, raw, _ in records],
        "line_no": [no for no, _, _ in records],
        "line_end": [no for no, _, _ in records],
    }
    for key, name in zip(layout.keys, JSON_FIELDS, strict=True):
        columns[f"_f_{key}"] = [fields[name] for _, _, fields in records]
    schema: dict[str, pl.DataType] = {
        "line": pl.String(),
        "line_no": pl.Int64(),
        "line_end": pl.Int64(),
    }
    schema.update({f"_f_{key}": pl.String() for key in layout.keys})
    split = pl.DataFrame(columns, schema=schema)
    rows, late = _parse_records(file, split, layout, cluster, tz, info, now)
    early = _rejected(
        file,
        [no for no, _, _, _ in bad],
        [no for no, _, _, _ in bad],
        [raw for _, raw, _, _ in bad],
        [why for _, _, why, _ in bad],
        [field for _, _, _, field in bad],
    )
    rejected = pl.concat([early, late]).sort("line_no", maintain_order=True)
    info["rows"] = rows.height
    info["rejected"] = rejected.height
    return ParseResult(rows=rows, rejected=rejected, info=info)


def _empty(
    file: str, info: dict[str, Any], fields: Sequence[str] | None, delimiter: str | None
) -> ParseResult:
    info.update(
        format="parsable2",
        delimiter=delimiter or "|",
        fields=list(fields or []),
        header=False,
        rows=0,
        rejected=0,
        dst_ambiguous=0,
        dst_nonexistent=0,
        blank_lines=info["lines"],
        repeated_headers=0,
        joined_records=0,
        surplus_joined=0,
        array_rows_expanded=0,
    )
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


def _fast_parse(
    file: str,
    data: bytes,
    layout: Layout,
    first_data: int,
    cluster: str | None,
    tz: str,
    info: dict[str, Any],
    line_offset: int,
    now: datetime,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Parse a clean file (or block of one) in pieces of about :data:`_CHUNK_BYTES`, each split
    by polars' CSV reader and typed before the next is read; None when the file is not clean.

    Clean: every line after the header is one record with exactly the expected field count (no
    blank lines, repeated headers, multi-line records or surplus delimiters). That is checked
    without splitting lines: each piece's delimiter count must be the expected count times its
    number of lines, and the reader fails on any line with more fields (so none has fewer).

    Returns:
        ``(rows, rejected)``, or None (nothing parsed: use the line-by-line path). Sets
        ``info["lines"]`` and the DST and array counts.
    """
    skip = first_data - 1
    if skip > 1:  # blank lines before the header
        return None
    delim = layout.delimiter.encode("utf-8")
    per_line = len(layout.keys) - 1 + (1 if layout.parsable else 0)
    if b"\n" in delim:
        return None
    if per_line == 0 and (data.startswith((b"\n", b"\r\n")) or b"\n\n" in data):
        return None
    sentinel = delim
    if len(delim) > 1:
        found = next((bytes([c]) for c in (0x1F, 0x1E, 0x1D, 0x1C) if bytes([c]) not in data), None)
        if found is None:
            return None
        sentinel = found
    names = [f"_f_{key}" for key in layout.keys]
    rows: list[pl.DataFrame] = []
    rejected: list[pl.DataFrame] = []
    counts = {"dst_ambiguous": 0, "dst_nonexistent": 0, "array_rows_expanded": 0}
    pos = (data.find(b"\n") + 1 or len(data)) if skip else 0
    line_no = first_data + line_offset
    while pos < len(data):
        end = data.find(b"\n", min(pos + _CHUNK_BYTES, len(data) - 1))
        end = len(data) if end == -1 else end + 1
        piece = data[pos:end]
        lines = piece.count(b"\n") + (0 if piece.endswith(b"\n") else 1)
        if piece.count(delim) != per_line * lines:
            return None
        if sentinel != delim:
            piece = piece.replace(delim, sentinel)
        try:
            split = pl.read_csv(
                piece,
                has_header=False,
                separator=sentinel.decode("latin-1"),
                quote_char=None,
                infer_schema=False,
                empty_string_is_null=False,
                encoding="utf8",
            )
        except pl.exceptions.PolarsError:
            return None
        if split.height != lines or split.width != per_line + 1:
            return None
        checks = [(pl.col(split.columns[0]) == layout.names[0]).any()]
        if layout.parsable:
            checks.append((pl.col(split.columns[-1]) != "").any())
        if any(split.select(checks).row(0)):
            return None
        # one chunk per column: polars' reader returns one per thread's piece, and every
        # later eager step on a frame of unevenly chunked columns would copy it whole first
        split = split.select(split.columns[: len(names)]).rechunk()
        split.columns = names
        fields = split.select(
            line_no=pl.int_range(line_no, line_no + pl.len(), dtype=pl.Int64),
            line_end=pl.int_range(line_no, line_no + pl.len(), dtype=pl.Int64),
        ).hstack(split)
        del split
        plan = _Plan(layout, cluster, _flags(fields, layout.keys))
        for chunk in fields.iter_slices(_CHUNK_ROWS):
            chunk_rows, chunk_rejected = _parse_chunk(file, chunk, layout, plan, tz, counts, now)
            rows.append(chunk_rows)
            rejected.extend(chunk_rejected)
        line_no += lines
        pos = end
    info.update(counts, lines=line_no - 1 - line_offset)
    all_rows = pl.concat(rows) if rows else pl.DataFrame(schema=SLURM_ROW_SCHEMA)
    out = pl.concat(rejected) if rejected else pl.DataFrame(schema=REJECTED_SCHEMA)
    return all_rows, out


def _split_records(records: pl.DataFrame, layout: Layout) -> pl.DataFrame:
    """One ``_f_<key>`` String column per field, beside ``line``, ``line_no``, ``line_end``."""
    names = [f"_f_{key}" for key in layout.keys]
    return records.select(
        "line",
        "line_no",
        "line_end",
        pl.col("body").str.splitn(layout.delimiter, len(names)).struct.rename_fields(names),
    ).unnest("body")


def _sample(data: bytes) -> list[tuple[int, str]]:
    """The first non-blank lines ``(line_no, text)`` of the content, for layout detection.

    Blank lines before the first non-blank one are skipped however many there are (a log that
    opens with 800 blank lines still has its data found, not taken for an empty file); from
    there only ``_SAMPLE_BYTES`` are read, and whether ``data`` is any longer."""
    found = _NON_BLANK.search(data)  # no copy of a large file, unlike lstrip()
    first = found.start() if found else len(data)
    start = data.rfind(b"\n", 0, first) + 1  # the start of the first non-blank line
    skipped = data.count(b"\n", 0, start)
    head = data[start : start + _SAMPLE_BYTES]
    lines = head.decode("utf-8", "replace").split("\n")
    if start + len(head) < len(data) and len(lines) > 1:
        lines = lines[:-1]  # cut mid-line
    sample = [
        (skipped + no, line.removesuffix("\r"))
        for no, line in enumerate(lines[: _SAMPLE_LINES * 4], start=1)
        if line.strip()
    ]
    return sample[:_SAMPLE_LINES]


def _parse_records(
    file: str,
    fields: pl.DataFrame,
    layout: Layout,
    cluster: str | None,
    tz: str,
    info: dict[str, Any],
    now: datetime,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Type the split fields, in slices of :data:`_CHUNK_ROWS` (which bounds the memory the
    intermediate columns take); returns ``(rows, rejected)``."""
    plan = _Plan(layout, cluster, _flags(fields, layout.keys))
    rows: list[pl.DataFrame] = []
    rejected: list[pl.DataFrame] = []
    counts = {"dst_ambiguous": 0, "dst_nonexistent": 0, "array_rows_expanded": 0}
    for chunk in fields.iter_slices(_CHUNK_ROWS):
        chunk_rows, chunk_rejected = _parse_chunk(file, chunk, layout, plan, tz, counts, now)
        rows.append(chunk_rows)
        rejected.extend(chunk_rejected)
    info.update(counts)
    all_rows = pl.concat(rows) if rows else pl.DataFrame(schema=SLURM_ROW_SCHEMA)
    out = pl.concat(rejected) if rejected else pl.DataFrame(schema=REJECTED_SCHEMA)
    return all_rows, out


def _parse_chunk(
    file: str,
    fields: pl.DataFrame,
    layout: Layout,
    plan: _Plan,
    tz: str,
    counts: dict[str, int],
    now: datetime,
) -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """Type one slice of split fields; returns ``(rows, rejected frames)``."""
    typed = _type_distinct(fields, plan).with_columns(**plan.a).with_columns(**plan.b)
    bad_any = pl.any_horizontal([bad for bad, _, _ in plan.rules]) if plan.rules else pl.lit(False)
    typed = typed.with_columns(_bad=bad_any)
    rejected: list[pl.DataFrame] = []
    n_bad = int(typed["_bad"].sum())
    raw_text = (
        pl.col("line")
        if "line" in fields.columns
        else pl.concat_str(
            [_raw(key) for key in layout.keys] + ([pl.lit("")] if layout.parsable else []),
            separator=layout.delimiter,
        )
    )
    if n_bad:
        # rechunked: formatting the reasons over the filtered string views panicked in polars
        # (an index out of bounds; tests/fuzz/sacct_polars_panic.psv, found by the fuzzer)
        bad_rows = (
            typed.filter("_bad")
            .rechunk()
            .with_columns(
                line=raw_text,
                _reason=pl.coalesce([pl.when(bad).then(why) for bad, _, why in plan.rules]),
                _field=pl.coalesce(
                    [pl.when(bad).then(pl.lit(name, pl.String)) for bad, name, _ in plan.rules]
                ),
            )
        )
        rejected.append(_reject_frame(file, bad_rows))
    keep = [name for name in SLURM_ROW_SCHEMA if name in typed.columns]
    helpers = ["_arr", "_base", "_job_id_raw", "_bad"] + [
        f"_{column}_{kind}" for _, column in _TIME_FIELDS for kind in ("aware", "naive")
    ]
    helpers += [c for c in ("_suspended_s",) if c in typed.columns]
    good = typed.select(*keep, *helpers)
    del typed
    if n_bad:
        good = good.filter(~pl.col("_bad"))
    good = _localize_times(good, tz).with_columns(
        end_at=pl.when(pl.col("state").is_in(sorted(NO_END_STATES))).then(None).otherwise("end_at"),
        job_id_raw=pl.coalesce("_job_id_raw", "job_id"),
    )
    good = _time_checks(_expand_arrays(_node_lists(good)), plan, now)
    if good["_reason"].null_count() < good.height:
        late = good.filter(pl.col("_reason").is_not_null()).join(
            fields.select("line_no", line=raw_text), on="line_no", how="left"
        )
        rejected.append(_reject_frame(file, late))
        good = good.filter(pl.col("_reason").is_null())
    counts["dst_ambiguous"] += int(good["_dst_ambiguous"].sum())
    counts["dst_nonexistent"] += int(good["_dst_nonexistent"].sum())
    counts["array_rows_expanded"] += int(good["_arr"].is_not_null().sum())
    rows = good.with_columns(file=pl.lit(file)).select(
        [pl.col(name).cast(dtype) for name, dtype in SLURM_ROW_SCHEMA.items()]
    )
    return rows, rejected
