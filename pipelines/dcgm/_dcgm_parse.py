"""dcgm-exporter scrapes (Prometheus / OpenMetrics text) into one row per sample.

The whole file is parsed with vectorised polars string operations, never a Python loop per line:

1. the file is split into lines by polars' CSV reader (one column, no quoting), so line numbers
   stay exact (blank lines are kept as empty rows);
2. one end-anchored regex finds where the series (``name{labels}``) ends and the value and
   optional timestamp begin; the regex engine searches it backwards from the end of each line,
   so its cost does not grow with the length of the label set;
3. label sets and metric names repeat on every scrape, so they are parsed once per *distinct*
   string and joined back.

A large file (a Prometheus spool of a whole fleet-day) is parsed in blocks of lines
(:func:`iter_parse_dcgm`, which ``ingest_file`` uses): the same steps per block, with the
parsed label sets carried from block to block, so memory is bounded by the block size and the
result is the whole-file parse's.

Formats: Prometheus text exposition (timestamps are integer **milliseconds**) and OpenMetrics
text (the file ends with ``# EOF``; timestamps are **seconds**, possibly fractional), either
gzip-compressed (detected by its magic bytes, whatever the file is called) or not.
"""

from __future__ import annotations

import gzip
import itertools
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Final

import polars as pl

from pipelines._parse_result import (
    REJECTED_SCHEMA,
    InputFormatError,
    ParseResult,
    latest_plausible,
)

__all__ = [
    "DCGM_SAMPLE_SCHEMA",
    "FIELD_TYPES",
    "OLD_METRIC_NAMES",
    "iter_parse_dcgm",
    "parse_dcgm",
    "parse_dcgm_dir",
]

#: Columns of one DCGM sample, in this order.
DCGM_SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "ts": pl.Datetime("us", "UTC"),
    "cluster": pl.String(),
    "host": pl.String(),
    "gpu_uuid": pl.String(),
    "gpu_index": pl.Int32(),
    "device": pl.String(),
    "model_name": pl.String(),
    "mig_profile": pl.String(),
    "mig_instance": pl.Int32(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "pod": pl.String(),
    "namespace": pl.String(),
    "container": pl.String(),
    "hpc_job": pl.String(),
    "host_is_exporter_pod": pl.Boolean(),
    "file": pl.String(),
    "line_no": pl.Int64(),
    "xid": pl.Int64(),
}

#: dcgm-exporter 1.x (gpu-monitoring-tools) metric names → the DCGM field they export
#: (``1.x-compatibility-metrics.csv``). Lowercase ``dcgm_fi_*`` names are upper-cased instead.
OLD_METRIC_NAMES: Final[dict[str, str]] = {
    "dcgm_sm_clock": "DCGM_FI_DEV_SM_CLOCK",
    "dcgm_memory_clock": "DCGM_FI_DEV_MEM_CLOCK",
    "dcgm_memory_temp": "DCGM_FI_DEV_MEMORY_TEMP",
    "dcgm_gpu_temp": "DCGM_FI_DEV_GPU_TEMP",
    "dcgm_power_usage": "DCGM_FI_DEV_POWER_USAGE",
    "dcgm_total_energy_consumption": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "dcgm_pcie_tx_throughput": "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
    "dcgm_pcie_rx_throughput": "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
    "dcgm_pcie_replay_counter": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "dcgm_gpu_utilization": "DCGM_FI_DEV_GPU_UTIL",
    "dcgm_mem_copy_utilization": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "dcgm_enc_utilization": "DCGM_FI_DEV_ENC_UTIL",
    "dcgm_dec_utilization": "DCGM_FI_DEV_DEC_UTIL",
    "dcgm_xid_errors": "DCGM_FI_DEV_XID_ERRORS",
    "dcgm_power_violation": "DCGM_FI_DEV_POWER_VIOLATION",
    "dcgm_thermal_violation": "DCGM_FI_DEV_THERMAL_VIOLATION",
    "dcgm_sync_boost_violation": "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
    "dcgm_board_limit_violation": "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
    "dcgm_low_util_violation": "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
    "dcgm_reliability_violation": "DCGM_FI_DEV_RELIABILITY_VIOLATION",
    "dcgm_fb_free": "DCGM_FI_DEV_FB_FREE",
    "dcgm_fb_used": "DCGM_FI_DEV_FB_USED",
    "dcgm_ecc_sbe_volatile_total": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "dcgm_ecc_dbe_volatile_total": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "dcgm_ecc_sbe_aggregate_total": "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "dcgm_ecc_dbe_aggregate_total": "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "dcgm_retired_pages_sbe": "DCGM_FI_DEV_RETIRED_SBE",
    "dcgm_retired_pages_dbe": "DCGM_FI_DEV_RETIRED_DBE",
    "dcgm_retired_pages_pending": "DCGM_FI_DEV_RETIRED_PENDING",
    "dcgm_nvlink_flit_crc_error_count_total": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "dcgm_nvlink_data_crc_error_count_total": "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "dcgm_nvlink_replay_error_count_total": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "dcgm_nvlink_recovery_error_count_total": "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "dcgm_nvlink_bandwidth_total": "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
}

# DCGM stores every integer field as int64 but fills many of them from 32-bit NVML values, and
# dcgm-exporter then prints DCGM's *int32* blank codes (0x7ffffff0…) for them. "int32" below means
# "the real value is a 32-bit quantity" (clocks, °C, %, MiB, XID codes, page counts), so both
# blank families are NULL there; "int64" fields (energy in mJ, bytes, ns, error counters) can
# legitimately pass 2^31, so only the int64 blanks are NULL; "fp64" fields use DCGM_FP64_BLANK.
#: Declared value type per DCGM field, for blank-sentinel detection (``default-counters.csv``,
#: ``dcp-metrics-included.csv`` and the fields they comment out).
FIELD_TYPES: Final[dict[str, str]] = {
    "DCGM_FI_DEV_SM_CLOCK": "int32",
    "DCGM_FI_DEV_MEM_CLOCK": "int32",
    "DCGM_FI_DEV_MEMORY_TEMP": "int32",
    "DCGM_FI_DEV_GPU_TEMP": "int32",
    "DCGM_FI_DEV_POWER_USAGE": "fp64",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "int64",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": "int64",
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": "int64",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "int64",
    "DCGM_FI_DEV_GPU_UTIL": "int32",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "int32",
    "DCGM_FI_DEV_ENC_UTIL": "int32",
    "DCGM_FI_DEV_DEC_UTIL": "int32",
    "DCGM_FI_DEV_XID_ERRORS": "int32",
    "DCGM_FI_DEV_POWER_VIOLATION": "int64",
    "DCGM_FI_DEV_THERMAL_VIOLATION": "int64",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION": "int64",
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION": "int64",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION": "int64",
    "DCGM_FI_DEV_RELIABILITY_VIOLATION": "int64",
    "DCGM_EXP_CLOCK_EVENTS_COUNT": "int64",
    "DCGM_EXP_XID_ERRORS_COUNT": "int64",
    "DCGM_EXP_GPU_HEALTH_STATUS": "int32",
    "DCGM_EXP_P2P_STATUS": "int32",
    "DCGM_FI_DEV_FB_FREE": "int32",
    "DCGM_FI_DEV_FB_USED": "int32",
    "DCGM_FI_DEV_FB_RESERVED": "int32",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "int64",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "int64",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": "int64",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "int64",
    "DCGM_FI_DEV_RETIRED_SBE": "int32",
    "DCGM_FI_DEV_RETIRED_DBE": "int32",
    "DCGM_FI_DEV_RETIRED_PENDING": "int32",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "int64",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "int64",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "int64",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "int64",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "int64",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0": "int64",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": "int32",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "int32",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "int32",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "int32",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "fp64",
    "DCGM_FI_PROF_SM_ACTIVE": "fp64",
    "DCGM_FI_PROF_SM_OCCUPANCY": "fp64",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "fp64",
    "DCGM_FI_PROF_DRAM_ACTIVE": "fp64",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE": "fp64",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "fp64",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": "fp64",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "int64",
    "DCGM_FI_PROF_PCIE_RX_BYTES": "int64",
    "DCGM_FI_PROF_NVLINK_TX_BYTES": "int64",
    "DCGM_FI_PROF_NVLINK_RX_BYTES": "int64",
}

# DCGM blank codes (dcgm_structs.h): DCGM_INT32_BLANK 0x7ffffff0, DCGM_INT64_BLANK
# 0x7ffffffffffffff0, DCGM_FP64_BLANK 140737488355328.0 (2^47); each family has up to 16 codes
# (blank, not found, not supported, no permission, ...). 0x7ffffffffffffff0 rounds to 2^63 as a
# float64, so ">= float(...)" is the exact test on the parsed value.
_INT32_BLANK: Final = float(0x7FFFFFF0)
_INT64_BLANK: Final = float(0x7FFFFFFFFFFFFFF0)
_FP64_BLANK: Final = float(2**47)

_SNAPSHOT_SUFFIXES: Final = frozenset({".prom", ".txt", ".om", ".metrics", ".openmetrics"})

# "<'}' or space> value [timestamp]" at the end of the line, leftmost. Value and timestamp
# tokens cannot contain '}' or '"', so inside a label set (which always still has its closing
# '"}' ahead) no match can start: the match starts at the label set's closing brace, or at the
# space after the name for a series without labels. Anchored at '$', the regex engine runs it
# backwards from the line end, so its cost does not grow with the label set.
_TAIL_RE: Final = r'((?:\}|\s)\s*[^\s}"]+(?:\s+[^\s}"]+)?\s*)$'
_TOKENS_RE: Final = r"^\s*(\S+)(?:\s+(\S+))?\s*$"
_NAME_RE: Final = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
#: Marks a line whose bytes are not UTF-8 (see _split_lines).
_NOT_UTF8: Final = "\x1f"
#: DCGM ratio fields (0–1) and the utilisation percentage (0–100), checked per sample.
_RATIO_RE: Final = r"^DCGM_FI_PROF_.*_ACTIVE$"
_PCT_METRICS: Final = ("DCGM_FI_DEV_GPU_UTIL",)
_PAIR: Final = r'[A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"'
_LABELS_RE: Final = rf"^\s*(?:{_PAIR}(?:\s*,\s*{_PAIR})*)?\s*,?\s*$"
_OM_SECONDS_RE: Final = r"^(-?\d+)(?:\.(\d*))?$"
#: A DaemonSet pod of the exporter: its name and the 5-character suffix Kubernetes generates
#: (from ``bcdfghjklmnpqrstvwxz2456789``: no vowels, so ``my-dcgm-exporter-tests`` is no match).
_EXPORTER_POD_RE: Final = r"(?:^|-)dcgm-exporter-[bcdfghjklmnpqrstvwxz2456789]{5}$"
#: The exporter's own container (gpu-operator's ``nvidia-dcgm-exporter``, the Helm chart's
#: ``exporter`` is too generic to read as the exporter's).
_EXPORTER_CONTAINER_RE: Final = r"^(?:nvidia-)?dcgm-exporter$"

# Labels read from each series; the output columns below are built from them.
_LABEL_KEYS: Final = (
    "node",
    "kubernetes_node",
    "Hostname",
    "hostname",
    "UUID",
    "uuid",
    "gpu",
    "device",
    "modelName",
    "pod",
    "pod_name",
    "exported_pod",
    "namespace",
    "pod_namespace",
    "exported_namespace",
    "container",
    "container_name",
    "exported_container",
    "GPU_I_PROFILE",
    "GPU_I_ID",
    "hpc_job",
    "xid",
)

# Plausible sample times; outside them the unit is almost surely wrong (seconds written into a
# Prometheus file land in January 1970, milliseconds in an OpenMetrics file in year 50000+).
_TS_MIN: Final = datetime(2000, 1, 1, tzinfo=UTC)
_TS_MAX: Final = datetime(2100, 1, 1, tzinfo=UTC)

_FILE_TIME_RE: Final = re.compile(
    r"(?P<y>\d{4})-?(?P<mo>\d{2})-?(?P<d>\d{2})[T_](?P<h>\d{2})[-:]?(?P<mi>\d{2})[-:]?(?P<s>\d{2})"
    r"(?:[.,](?P<f>\d{1,6})\d*)?(?P<z>Z|[+-]\d{2}:?\d{2})?"
)
_FILE_EPOCH_RE: Final = re.compile(r"(?<![\d.])(\d{10})(?:\.(\d{1,6})\d*)?(?![\d])")


def parse_dcgm(
    path: str | Path, *, cluster: str = "default", scrape_time: datetime | None = None
) -> ParseResult:
    """Parse one dcgm-exporter scrape (Prometheus or OpenMetrics text, optionally gzipped).

    Metric names of dcgm-exporter 1.x (``dcgm_gpu_utilization``, ...) and lowercase
    ``dcgm_fi_*`` names are mapped to the ``DCGM_FI_*`` field name, and an OpenMetrics counter
    suffix ``_total`` is dropped. Samples of metrics that are not DCGM fields (no ``DCGM_``
    prefix after mapping, or OpenMetrics ``_created`` samples) are left out and counted in
    ``info["non_dcgm_samples"]``.

    Args:
        path: the scrape file. Gzip is detected by its magic bytes.
        cluster: the value of the ``cluster`` column.
        scrape_time: the time of samples that carry no timestamp (timezone-aware). When None, a
            time in the file name (``dcgm-20261102T120500Z.prom``, ISO 8601 with or without
            separators, else a 10-digit Unix epoch; UTC unless an offset is given) is used.

    Returns:
        ``rows`` with :data:`DCGM_SAMPLE_SCHEMA`, one per sample:

        - ``ts``: sample time, UTC, µs (Prometheus text: milliseconds in the file; OpenMetrics:
          seconds); samples without one take ``scrape_time`` / the file-name time;
        - ``host``: ``node`` / ``kubernetes_node`` label, else ``Hostname`` / ``hostname``;
          ``host_is_exporter_pod`` is True when that name looks like the exporter's pod
          (``dcgm-exporter-lcxpl``) rather than a node;
        - ``gpu_uuid`` (``UUID``/``uuid``), ``gpu_index`` (``gpu``), ``device``, ``model_name``
          (``modelName``), ``mig_profile`` (``GPU_I_PROFILE``), ``mig_instance`` (``GPU_I_ID``),
          ``hpc_job``;
        - ``pod`` / ``namespace`` / ``container``: the workload's; when ``exported_*`` labels
          exist, the plain ones name the exporter and are ignored; without them, plain ones that
          name the exporter itself (a pod like ``nvidia-dcgm-exporter-wqqqn`` or a container
          ``nvidia-dcgm-exporter`` / ``dcgm-exporter``: Prometheus' target labels on an idle
          GPU's series) are no workload (NULL); old ``pod_name``, ``pod_namespace``,
          ``container_name`` are accepted;
        - ``metric``: the DCGM field name; ``value``: as exported (units of the field, e.g. %,
          MHz, W, mJ, MiB, ratio 0–1 for ``DCGM_FI_PROF_*``), NULL for DCGM blank sentinels
          (judged by :data:`FIELD_TYPES`);
        - ``file``, ``line_no`` (1-based line in the decompressed text);
        - ``xid``: the ``xid`` label as an integer (the XID code of a
          ``DCGM_EXP_XID_ERRORS_COUNT`` series, one series per code), else NULL.

        Empty label values are NULL. ``rejected`` holds lines that are not samples (no value,
        unparsable number or timestamp, broken label set, non-integer ``gpu``/``GPU_I_ID``,
        implausible time, no time at all, content after ``# EOF``) and samples that are bad:
        "not UTF-8", "non-finite value" (NaN/±Inf), a label named twice, a DCGM sample with
        "no GPU identity (UUID/gpu/device)", ``DCGM_FI_PROF_*_ACTIVE`` outside [0, 1] or
        ``DCGM_FI_DEV_GPU_UTIL`` outside [0, 100] (the reason names the metric). ``info`` has
        ``format`` (``prometheus`` / ``openmetrics``), ``gzip``, ``lines``, ``samples``,
        ``blank_values``, ``nan_values`` (now always 0: NaN is rejected), ``non_dcgm_samples``
        and ``default_ts``.

    Raises:
        InputFormatError: the file cannot be read (bad gzip, binary), or it has lines but none
            is a sample, or none of its samples is a DCGM metric.
        ValueError: ``scrape_time`` is naive.
    """
    p = Path(path)
    default_ts = _aware(scrape_time) if scrape_time is not None else _time_from_name(p.name)
    lines, meta = _read_file(p, default_ts)
    rows, rejected, info = _parse_lines(lines, cluster=cluster)
    _check_file_kind(str(p), info.pop("per_file"))
    info.update(meta)
    info["default_ts"] = default_ts
    return ParseResult(rows=rows, rejected=rejected, info=info)


def iter_parse_dcgm(
    path: str | Path,
    *,
    cluster: str = "default",
    scrape_time: datetime | None = None,
    chunk_bytes: int = 16 << 20,
) -> Iterator[ParseResult]:
    """Parse one dcgm-exporter scrape block by block, in memory bounded by ``chunk_bytes``.

    The (decompressed) text is streamed in blocks of about ``chunk_bytes`` that end at a line
    end, and each block's lines are parsed as :func:`parse_dcgm` parses a whole file.
    Concatenated, the results' ``rows`` and ``rejected`` equal :func:`parse_dcgm`'s on the whole
    file (same rows in the same order, same line numbers, same rejects): the parse of a sample
    line depends on no other line except through the file's format (OpenMetrics when a
    ``# EOF`` line is anywhere in it: timestamps in seconds, and lines after the first ``# EOF``
    rejected), so a file of more than one block is read twice: once to find a ``# EOF`` line,
    then to parse. A file of one block is parsed whole, read once.

    Each result's ``info`` describes its block, except ``non_dcgm_samples``, which counts the
    blocks so far (so the last block's is the file's). Merged as
    :func:`pipelines.warehouse.load_parse_results` merges them (``int`` values summed, others
    the last block's), they equal :func:`parse_dcgm`'s ``info``: ``lines``, ``samples``,
    ``rejected``, ``blank_values`` and ``nan_values`` sum to the file's; ``format``, ``gzip``
    and ``default_ts`` are the same in every block.

    Args:
        path: the scrape file (gzip detected by its magic bytes).
        cluster: the value of the ``cluster`` column.
        scrape_time: as :func:`parse_dcgm`.
        chunk_bytes: the size of a block of decompressed text in bytes (a block holds at least
            one whole line).

    Yields:
        One :class:`ParseResult` per block, in file order; at least one.

    Raises:
        InputFormatError: as :func:`parse_dcgm`. A file that cannot be read, is not gzip
            although it starts like it, or is binary raises before the first result; a broken
            gzip stream further on raises when its block is reached; a file none of whose lines
            is a (DCGM) sample raises after the last block, since any block may hold one.
        ValueError: ``scrape_time`` is naive, or ``chunk_bytes`` is below 1.
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, not {chunk_bytes}")
    p = Path(path)
    file = str(p)
    default_ts = _aware(scrape_time) if scrape_time is not None else _time_from_name(p.name)
    compressed = _starts_with_gzip_magic(p)
    blocks = _iter_text_blocks(p, compressed, chunk_bytes)
    first = next(blocks, b"")
    second = next(blocks, None)
    if second is None:  # one block: the whole file
        _check_text(file, first)
        lines = _split_lines(first)
        openmetrics = _eof_line(lines, 1) is not None
        frame, _ = _lines_frame(
            file, lines, default_ts, openmetrics=openmetrics, first_line_no=1, eof_line=None
        )
        del lines, first
        rows, rejected, info = _parse_lines(frame, cluster=cluster)
        _check_file_kind(file, info.pop("per_file"))
        info.update(format="openmetrics" if openmetrics else "prometheus", gzip=compressed)
        info["default_ts"] = default_ts
        yield ParseResult(rows=rows, rejected=rejected, info=info)
        return
    _check_text(file, first)
    openmetrics = _has_eof_line(_iter_text_blocks(p, compressed, chunk_bytes))
    counts = {"candidates": 0, "samples": 0, "dcgm_samples": 0}
    non_dcgm: dict[str, int] = {}
    without_host = 0
    hostless: list[str] = []
    next_line_no = 1
    eof_line: int | None = None
    memo: dict[str, pl.DataFrame] = {}
    rest = itertools.chain((first, second), blocks)
    del first, second
    for data in rest:
        lines = _split_lines(data)
        del data
        frame, eof_line = _lines_frame(
            file,
            lines,
            default_ts,
            openmetrics=openmetrics,
            first_line_no=next_line_no,
            eof_line=eof_line,
        )
        next_line_no += lines.len()
        del lines
        rows, rejected, info = _parse_lines(frame, cluster=cluster, memo=memo)
        del frame
        per_file = info.pop("per_file")
        assert isinstance(per_file, dict)
        for key in counts:
            counts[key] += int(per_file[file][key])
        block_non_dcgm = info["non_dcgm_samples"]
        assert isinstance(block_non_dcgm, dict)
        for name, n in block_non_dcgm.items():
            non_dcgm[name] = non_dcgm.get(name, 0) + int(n)
        info["non_dcgm_samples"] = dict(sorted(non_dcgm.items()))
        block_without = info["samples_without_host"]
        assert isinstance(block_without, int)
        without_host += block_without
        block_hostless = info.get("hostless_gpus", [])
        assert isinstance(block_hostless, list)
        for what in block_hostless:
            if what not in hostless and len(hostless) < _HOSTLESS_NAMED:
                hostless.append(what)
        if without_host:
            # the blocks so far, as non_dcgm_samples: the last block's are the file's
            info["hostless_gpus"] = list(hostless)
            info["warnings"] = [_hostless_warning(without_host, hostless)]
        info.update(format="openmetrics" if openmetrics else "prometheus", gzip=compressed)
        info["default_ts"] = default_ts
        yield ParseResult(rows=rows, rejected=rejected, info=info)
    _check_file_kind(file, {file: {"file": file, **counts}})


def parse_dcgm_dir(path: str | Path, *, cluster: str = "default") -> ParseResult:
    """Parse a folder (searched recursively) of dcgm-exporter scrape snapshots.

    Each file is one scrape whose time is in its name (``dcgm-20261102T120500Z.prom``); files
    whose samples carry their own timestamps need no time in the name. Files ending in
    ``.prom``, ``.txt``, ``.om``, ``.metrics`` or ``.openmetrics`` (each optionally ``.gz``) are
    read, in name order; other files are listed in ``info["skipped_files"]``. All lines are
    parsed together, so label sets shared by the snapshots are parsed once.

    Args:
        path: the folder.
        cluster: the value of the ``cluster`` column.

    Returns:
        As :func:`parse_dcgm`, over all files (``file`` tells them apart); ``info`` has
        ``files``, ``skipped_files`` and per-file ``formats``.

    Raises:
        InputFormatError: ``path`` is not a folder, or one of its snapshot files is not a scrape
            (as :func:`parse_dcgm`; the message names the file).
    """
    root = Path(path)
    if not root.is_dir():
        raise InputFormatError(str(root), "not a folder of dcgm-exporter snapshots")
    files: list[Path] = []
    skipped: list[str] = []
    for f in sorted(q for q in root.rglob("*") if q.is_file()):
        name = f.name[:-3] if f.name.endswith(".gz") else f.name
        if f.name.startswith(".") or Path(name).suffix.lower() not in _SNAPSHOT_SUFFIXES:
            skipped.append(str(f))
        else:
            files.append(f)
    frames: list[pl.DataFrame] = []
    formats: dict[str, str] = {}
    for f in files:
        lines, meta = _read_file(f, _time_from_name(f.name))
        frames.append(lines)
        formats[str(f)] = str(meta["format"])
    if frames:
        rows, rejected, info = _parse_lines(pl.concat(frames), cluster=cluster)
    else:
        rows, rejected, info = _parse_lines(_empty_lines(), cluster=cluster)
    per_file = info.pop("per_file")
    for f in files:
        _check_file_kind(str(f), per_file)
    info.update({"files": len(files), "skipped_files": skipped, "formats": formats})
    return ParseResult(rows=rows, rejected=rejected, info=info)


def _aware(ts: datetime) -> datetime:
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise ValueError("scrape_time must be timezone-aware")
    return ts.astimezone(UTC)


def _time_from_name(name: str) -> datetime | None:
    """The scrape time written in a snapshot's file name, or None."""
    m = _FILE_TIME_RE.search(name)
    if m is not None:
        try:
            tz = UTC
            z = m["z"]
            if z and z != "Z":
                sign = 1 if z[0] == "+" else -1
                digits = z[1:].replace(":", "")
                tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
            ts = datetime(
                int(m["y"]),
                int(m["mo"]),
                int(m["d"]),
                int(m["h"]),
                int(m["mi"]),
                int(m["s"]),
                int((m["f"] or "0").ljust(6, "0")),
                tzinfo=tz,
            ).astimezone(UTC)
        except ValueError:
            return None
        return ts if _TS_MIN <= ts < _TS_MAX else None
    e = _FILE_EPOCH_RE.search(name)
    if e is not None:
        ts = datetime.fromtimestamp(int(e[1]), UTC) + timedelta(
            microseconds=int((e[2] or "0").ljust(6, "0"))
        )
        return ts if _TS_MIN <= ts < _TS_MAX else None
    return None


def _empty_lines() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "file": pl.String(),
            "line_no": pl.Int64(),
            "line": pl.String(),
            "default_ts": pl.Datetime("us", "UTC"),
            "openmetrics": pl.Boolean(),
            "after_eof": pl.Boolean(),
        }
    )


def _read_file(path: Path, default_ts: datetime | None) -> tuple[pl.DataFrame, dict[str, object]]:
    """The file's lines with their context, and facts about the file.

    Returns:
        A frame of ``file``, ``line_no`` (1-based), ``line``, ``default_ts`` (time of untimed
        samples), ``openmetrics`` and ``after_eof`` (the line follows ``# EOF``); and ``format``
        and ``gzip`` for ``info``.

    Raises:
        InputFormatError: unreadable, broken gzip, or binary.
    """
    file = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputFormatError(file, f"cannot read: {exc}") from exc
    compressed = data[:2] == b"\x1f\x8b"
    if compressed:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputFormatError(file, f"broken gzip stream: {exc}") from exc
    _check_text(file, data)
    lines = _split_lines(data)
    openmetrics = _eof_line(lines, 1) is not None
    frame, _ = _lines_frame(
        file, lines, default_ts, openmetrics=openmetrics, first_line_no=1, eof_line=None
    )
    meta: dict[str, object] = {
        "format": "openmetrics" if openmetrics else "prometheus",
        "gzip": compressed,
    }
    return frame, meta


def _starts_with_gzip_magic(path: Path) -> bool:
    """Whether the file starts with gzip's magic bytes (InputFormatError when unreadable)."""
    try:
        with path.open("rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise InputFormatError(str(path), f"cannot read: {exc}") from exc


def _iter_text_blocks(path: Path, compressed: bool, chunk_bytes: int) -> Iterator[bytes]:
    """The file's (decompressed) bytes in blocks of about ``chunk_bytes`` that end at a line end
    (the last block: at the end of the file); a block holds at least one whole line. An empty
    file gives no block.

    Raises:
        InputFormatError: unreadable file or broken gzip stream (when its block is reached).
    """
    file = str(path)
    try:
        raw = path.open("rb")  # (closed by the with below, also on the generator's close())
    except OSError as exc:
        raise InputFormatError(file, f"cannot read: {exc}") from exc
    with raw:
        read: Callable[[int], bytes] = (
            gzip.GzipFile(fileobj=raw, mode="rb").read if compressed else raw.read
        )
        carry = b""
        while True:
            try:
                piece = read(chunk_bytes)
            except (OSError, EOFError, zlib.error) as exc:
                what = "broken gzip stream" if compressed else "cannot read"
                raise InputFormatError(file, f"{what}: {exc}") from exc
            if not piece:
                break
            buf = carry + piece if carry else piece
            cut = buf.rfind(b"\n") + 1
            if cut == 0:  # no line end yet: the line continues in the next piece
                carry = buf
                continue
            carry = buf[cut:]
            yield buf[:cut] if cut < len(buf) else buf
            del buf, piece
        if carry:
            yield carry


def _has_eof_line(blocks: Iterable[bytes]) -> bool:
    """Whether any line of the blocks is ``# EOF`` (surrounding whitespace aside): the file is
    OpenMetrics. Only blocks holding the bytes ``# EOF`` are split into lines."""
    return any(b"# EOF" in data and _eof_line(_split_lines(data), 1) is not None for data in blocks)


def _check_text(file: str, data: bytes) -> None:
    """Raise InputFormatError when the (decompressed) start of a file is binary."""
    if b"\x00" in data[:65536]:
        raise InputFormatError(file, "binary content: not Prometheus/OpenMetrics text")


def _split_lines(data: bytes) -> pl.Series:
    """Decoded text → one string per line (split at ``\\n``, a final ``\\r`` dropped; blank
    lines are kept, as nulls). Cutting ``data`` at line ends and splitting each piece gives the
    same lines as splitting the whole (``\\n`` is never part of a multi-byte UTF-8 character)."""
    if not data:
        return pl.Series("line", [], dtype=pl.String)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        # Lines that are not UTF-8 keep their bytes as \xNN escapes behind _NOT_UTF8, so that
        # _parse_lines rejects them ("not UTF-8") instead of reading U+FFFD into a label.
        out: list[str | None] = []
        parts_b = data.split(b"\n")
        if parts_b[-1] == b"":
            parts_b.pop()
        for b in parts_b:
            b = b.removesuffix(b"\r")
            try:
                out.append(b.decode("utf-8") or None)
            except UnicodeDecodeError:
                out.append(_NOT_UTF8 + b.decode("utf-8", errors="backslashreplace"))
        return pl.Series("line", out, dtype=pl.String)
    if b"\x1f" in data:
        # The fast reader below splits on \x1f as its (never occurring) field separator.
        text = data.decode("utf-8", errors="replace")
        parts = text.split("\n")
        if parts[-1] == "":
            parts.pop()
        return pl.Series("line", [s.removesuffix("\r") or None for s in parts], dtype=pl.String)
    return pl.read_csv(
        data,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        schema={"line": pl.String()},
        encoding="utf8-lossy",
    )["line"]


def _eof_line(lines: pl.Series, first_line_no: int) -> int | None:
    """The number of the first ``# EOF`` line among ``lines`` (numbered from
    ``first_line_no``), or None."""
    at = (
        pl.DataFrame({"line": lines})
        .with_row_index("i", offset=first_line_no)
        .filter(pl.col("line").str.strip_chars() == "# EOF")
        .get_column("i")
    )
    return int(at.min()) if at.len() else None  # type: ignore[arg-type]


def _lines_frame(
    file: str,
    lines: pl.Series,
    default_ts: datetime | None,
    *,
    openmetrics: bool,
    first_line_no: int,
    eof_line: int | None,
) -> tuple[pl.DataFrame, int | None]:
    """The frame :func:`_parse_lines` reads, for ``lines`` numbered from ``first_line_no``.

    ``openmetrics`` is the whole file's format (it has a ``# EOF`` line somewhere); ``eof_line``
    the number of the file's first ``# EOF`` line when it comes before these lines. Returns the
    frame and the file's first ``# EOF`` line number as known after these lines.
    """
    if eof_line is None:
        eof_line = _eof_line(lines, first_line_no)
    frame = pl.DataFrame({"line": lines}).with_row_index("line_no", offset=first_line_no)
    frame = frame.select(
        pl.lit(file, pl.String()).alias("file"),
        pl.col("line_no").cast(pl.Int64()),
        pl.col("line"),
        pl.lit(default_ts, pl.Datetime("us", "UTC")).alias("default_ts"),
        pl.lit(openmetrics).alias("openmetrics"),
        (pl.col("line_no") > eof_line if eof_line is not None else pl.lit(False)).alias(
            "after_eof"
        ),
    )
    return frame, eof_line


def _unescape(e: pl.Expr) -> pl.Expr:
    """Label value escapes of the text format: ``\\\\``, ``\\"`` and ``\\n``."""
    return (
        e.str.replace_all("\\\\", "\x00", literal=True)
        .str.replace_all('\\"', '"', literal=True)
        .str.replace_all("\\n", "\n", literal=True)
        .str.replace_all("\x00", "\\", literal=True)
    )


def _label(key: str) -> pl.Expr:
    """The value of label ``key`` (None when absent), read from a valid ``labels`` string."""
    pattern = rf'^\s*(?:{_PAIR}\s*,\s*)*?{key}\s*=\s*"((?:[^"\\]|\\.)*)"'
    return _unescape(pl.col("labels").str.extract(pattern, 1))


def _nonempty(name: str) -> pl.Expr:
    return pl.when(pl.col(name) != "").then(pl.col(name))


def _parse_label_sets(labels: pl.Series) -> pl.DataFrame:
    """One row per distinct label string: validity and the normalised label columns."""
    raw = pl.DataFrame({"labels": labels}).unique()
    keys = raw.with_columns(
        pl.col("labels").str.contains(_LABELS_RE).fill_null(True).alias("labels_ok"),
        pl.col("labels")
        .str.extract_all(_PAIR)
        .list.eval(pl.element().str.extract(r"^([A-Za-z_][A-Za-z0-9_]*)", 1))
        .pipe(lambda k: k.list.n_unique() < k.list.len())
        .fill_null(False)
        .alias("labels_dup"),
        *(_label(k).alias(f"l_{k}") for k in _LABEL_KEYS),
    )
    exported = (
        pl.col("l_exported_pod").is_not_null()
        | pl.col("l_exported_namespace").is_not_null()
        | pl.col("l_exported_container").is_not_null()
    )
    # Without exported_* labels the plain pod labels are the workload's (the exporter's pod
    # mapping, scraped as is), unless they name the exporter itself: Prometheus' Kubernetes
    # discovery gives every scraped series the target's pod, namespace and container, so an idle
    # GPU's series (no workload labels from the exporter) carries the exporter's own pod.
    plain_pod = pl.coalesce(_nonempty("l_pod"), _nonempty("l_pod_name"))
    plain_container = pl.coalesce(_nonempty("l_container"), _nonempty("l_container_name"))
    exporter_itself = plain_pod.str.contains(_EXPORTER_POD_RE).fill_null(
        False
    ) | plain_container.str.contains(_EXPORTER_CONTAINER_RE).fill_null(False)
    node_host = pl.coalesce(_nonempty("l_node"), _nonempty("l_kubernetes_node"))
    name_host = pl.coalesce(_nonempty("l_Hostname"), _nonempty("l_hostname"))
    gpu = _nonempty("l_gpu")
    mig = _nonempty("l_GPU_I_ID")
    return keys.select(
        "labels",
        "labels_ok",
        "labels_dup",
        pl.coalesce(node_host, name_host).alias("host"),
        (node_host.is_null() & name_host.str.contains(_EXPORTER_POD_RE))
        .fill_null(False)
        .alias("host_is_exporter_pod"),
        pl.coalesce(_nonempty("l_UUID"), _nonempty("l_uuid")).alias("gpu_uuid"),
        gpu.str.strip_chars().cast(pl.Int32(), strict=False).alias("gpu_index"),
        (gpu.is_not_null() & gpu.str.strip_chars().cast(pl.Int32(), strict=False).is_null())
        .fill_null(False)
        .alias("gpu_bad"),
        _nonempty("l_device").alias("device"),
        _nonempty("l_modelName").alias("model_name"),
        # the XID code of a DCGM_EXP_XID_ERRORS_COUNT series (one series per code)
        _nonempty("l_xid").str.strip_chars().cast(pl.Int64(), strict=False).alias("xid"),
        _nonempty("l_GPU_I_PROFILE").alias("mig_profile"),
        mig.str.strip_chars().cast(pl.Int32(), strict=False).alias("mig_instance"),
        (mig.is_not_null() & mig.str.strip_chars().cast(pl.Int32(), strict=False).is_null())
        .fill_null(False)
        .alias("mig_bad"),
        pl.when(exported)
        .then(_nonempty("l_exported_pod"))
        .when(~exporter_itself)
        .then(pl.coalesce(_nonempty("l_pod"), _nonempty("l_pod_name")))
        .alias("pod"),
        pl.when(exported)
        .then(_nonempty("l_exported_namespace"))
        .when(~exporter_itself)
        .then(pl.coalesce(_nonempty("l_namespace"), _nonempty("l_pod_namespace")))
        .alias("namespace"),
        pl.when(exported)
        .then(_nonempty("l_exported_container"))
        .when(~exporter_itself)
        .then(pl.coalesce(_nonempty("l_container"), _nonempty("l_container_name")))
        .alias("container"),
        _nonempty("l_hpc_job").alias("hpc_job"),
    )


def _parse_names(names: pl.Series) -> pl.DataFrame:
    """One row per distinct metric name: validity, DCGM field name and its declared type."""
    raw = pl.DataFrame({"name": names}).unique()
    name = pl.col("name")
    lower = name.str.to_lowercase()
    # OpenMetrics writers add a lowercase "_total" to counter samples and emit "_created" samples
    # beside them; DCGM's own names are upper case (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL).
    om_counter = name.str.starts_with("DCGM_") & name.str.ends_with("_total")
    om_created = name.str.starts_with("DCGM_") & name.str.ends_with("_created")
    metric = (
        pl.when(name.is_in(list(OLD_METRIC_NAMES)))
        .then(name.replace_strict(OLD_METRIC_NAMES, default=None))
        .when(om_counter)
        .then(name.str.strip_suffix("_total"))
        .when(lower.str.starts_with("dcgm_fi_") | lower.str.starts_with("dcgm_exp_"))
        .then(name.str.to_uppercase())
        .otherwise(name)
    )
    return raw.with_columns(
        name.str.contains(_NAME_RE).fill_null(False).alias("name_ok"),
        metric.alias("metric"),
        om_created.fill_null(False).alias("om_created"),
    ).with_columns(
        (pl.col("metric").str.starts_with("DCGM_") & ~pl.col("om_created"))
        .fill_null(False)
        .alias("is_dcgm"),
        pl.col("metric").replace_strict(FIELD_TYPES, default=None).alias("field_type"),
    )


def _om_seconds_to_us() -> pl.Expr:
    """OpenMetrics timestamp text (seconds) → epoch µs, exact for decimal notation."""
    parts = pl.col("ts_text").str.extract_groups(_OM_SECONDS_RE)
    whole = parts.struct.field("1").cast(pl.Int64(), strict=False).clip(-(10**12), 10**12)
    frac = parts.struct.field("2").fill_null("").str.slice(0, 6).str.pad_end(6, "0")
    sign = pl.when(pl.col("ts_text").str.starts_with("-")).then(-1).otherwise(1)
    exact = whole * 1_000_000 + sign * frac.cast(pl.Int64(), strict=False)
    floating = (pl.col("ts_text").cast(pl.Float64(), strict=False) * 1e6).round(0)
    floating = pl.when(floating.abs() < 9e18).then(floating).cast(pl.Int64(), strict=False)
    return pl.coalesce(exact, floating)


#: At most this many parsed label sets (or metric names) are kept between the blocks of a file.
_MEMO_MAX: Final = 200_000


def _memoized(
    memo: dict[str, pl.DataFrame] | None,
    key: str,
    values: pl.Series,
    parse: Callable[[pl.Series], pl.DataFrame],
) -> pl.DataFrame:
    """``parse(values)`` (one row per distinct value, keyed by a column named ``key``), reusing
    the rows parsed for earlier blocks of the same file that ``memo`` keeps: only values not
    seen before are parsed. The lookup may hold more values than ``values``; joined on ``key``
    it gives the same rows. Without ``memo``, just ``parse(values)``."""
    if memo is None:
        return parse(values)
    known = memo.get(key)
    if known is None:
        parsed = parse(values)
    else:
        new = (
            pl.DataFrame({key: values.drop_nulls()})
            .unique()
            .join(known.select(key), on=key, how="anti")
            .get_column(key)
        )
        parsed = pl.concat([known, parse(new)]) if new.len() else known
    if parsed.height <= _MEMO_MAX:
        memo[key] = parsed
    else:
        memo.pop(key, None)
    return parsed


def _parse_lines(
    lines: pl.DataFrame, *, cluster: str, memo: dict[str, pl.DataFrame] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, object]]:
    """Parse the lines of one or more files (see :func:`_read_file` for the columns).

    ``memo`` (the blocks of one file share it) keeps the parsed metric names and label sets of
    the blocks before, so a label set repeated in every block is parsed once per file.
    """
    stripped = pl.col("line").str.strip_chars()
    cand = (
        lines.lazy()
        .with_columns(stripped.alias("s"))
        .filter(pl.col("s").is_not_null() & (pl.col("s") != "") & ~pl.col("s").str.starts_with("#"))
        # (str.find would give a byte offset, but str.head/str.slice count characters.)
        .with_columns(pl.col("s").str.extract(_TAIL_RE, 1).alias("tail"))
        .with_columns(
            pl.col("s").str.strip_suffix(pl.col("tail")).str.splitn("{", 2).alias("head"),
            pl.col("tail").str.starts_with("}").alias("closing"),
            pl.col("tail")
            .str.strip_chars_start("}")
            .str.extract_groups(_TOKENS_RE)
            .alias("tokens"),
        )
        .select(
            "file",
            "line_no",
            "line",
            "default_ts",
            "openmetrics",
            "after_eof",
            pl.col("tail").is_not_null().alias("shape_ok"),
            (pl.col("closing") == pl.col("head").struct.field("field_1").is_not_null()).alias(
                "braces_ok"
            ),
            pl.col("head").struct.field("field_0").str.strip_chars().alias("name"),
            pl.col("head").struct.field("field_1").alias("labels"),
            pl.col("tokens").struct.field("1").alias("value_text"),
            pl.col("tokens").struct.field("2").alias("ts_text"),
        )
        .with_columns(
            pl.col("value_text").cast(pl.Float64(), strict=False).alias("value"),
            pl.when(pl.col("openmetrics"))
            .then(_om_seconds_to_us())
            # (clipped so that absurd values stay out of range instead of overflowing)
            .otherwise(
                pl.col("ts_text").cast(pl.Int64(), strict=False).clip(-(10**15), 10**15) * 1000
            )
            .alias("ts_us"),
        )
        .collect()
    )

    names = _memoized(memo, "name", cand["name"], _parse_names)
    label_sets = _memoized(memo, "labels", cand["labels"].drop_nulls(), _parse_label_sets)
    ts_min = int(_TS_MIN.timestamp() * 1_000_000)
    ts_max = int(_TS_MAX.timestamp() * 1_000_000)
    ts_future = int(latest_plausible().timestamp() * 1_000_000)
    ts = pl.col("ts_us").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    value = pl.col("value")
    field_type = pl.col("field_type")
    blank = (
        pl.when(field_type == "int32")
        .then(value >= _INT32_BLANK)
        .when(field_type == "fp64")
        .then(value >= _FP64_BLANK)
        .when(field_type == "int64")
        .then(value >= _INT64_BLANK)
        # Fields not in the table: only codes no real value can take (int64 blanks, and the
        # 16 fp64 codes at exactly 2^47 + 0..15).
        .otherwise((value >= _INT64_BLANK) | ((value >= _FP64_BLANK) & (value < _FP64_BLANK + 16)))
        # polars orders NaN above every number
        .and_(~value.is_nan())
        .fill_null(False)
    )
    reason = (
        pl.when(pl.col("line").str.starts_with(_NOT_UTF8))
        .then(pl.lit("line|not UTF-8"))
        .when(pl.col("after_eof"))
        .then(pl.lit("line|content after '# EOF'"))
        .when(~pl.col("shape_ok"))
        .then(pl.lit("line|not a sample: expected 'name{labels} value [timestamp]'"))
        .when(~pl.col("braces_ok"))
        .then(pl.lit("labels|unbalanced braces around the label set"))
        .when(~pl.col("name_ok"))
        .then(pl.lit("metric|invalid metric name"))
        .when(~pl.col("labels_ok").fill_null(True))
        .then(pl.lit("labels|malformed label set"))
        .when(pl.col("labels_dup").fill_null(False))
        .then(pl.lit("labels|label set names a label twice"))
        .when(pl.col("value").is_null())
        .then(pl.lit("value|value is not a number"))
        .when(~pl.col("value").is_finite())
        .then(pl.lit("value|non-finite value"))
        .when(
            pl.col("is_dcgm").fill_null(False)
            & pl.col("gpu_uuid").is_null()
            & pl.col("gpu_index").is_null()
            & pl.col("device").is_null()
            & ~pl.col("gpu_bad").fill_null(False)
        )
        .then(pl.lit("labels|no GPU identity (UUID/gpu/device)"))
        .when(
            pl.col("metric").str.contains(_RATIO_RE).fill_null(False)
            & ~blank
            & ((value < 0) | (value > 1))
        )
        .then(pl.format("value|{} outside [0, 1]", pl.col("metric")))
        .when(
            pl.col("metric").is_in(_PCT_METRICS).fill_null(False)
            & ~blank
            & ((value < 0) | (value > 100))
        )
        .then(pl.format("value|{} outside [0, 100]", pl.col("metric")))
        .when(pl.col("ts_text").is_not_null() & pl.col("ts_us").is_null())
        .then(
            pl.when(pl.col("openmetrics"))
            .then(pl.lit("timestamp|timestamp is not a number of seconds (OpenMetrics)"))
            .otherwise(pl.lit("timestamp|timestamp is not an integer of milliseconds"))
        )
        .when(pl.col("ts_text").is_null() & pl.col("default_ts").is_null())
        .then(
            pl.lit(
                "timestamp|sample has no timestamp and neither scrape_time nor a time in the "
                "file name is known"
            )
        )
        .when((pl.col("ts_us") < ts_min) | (pl.col("ts_us") >= ts_max))
        .then(
            pl.when(pl.col("openmetrics") & (pl.col("ts_us") >= ts_max))
            .then(pl.lit("timestamp|timestamp outside 2000–2100 (milliseconds where seconds?)"))
            .when(~pl.col("openmetrics") & (pl.col("ts_us") < ts_min))
            .then(pl.lit("timestamp|timestamp outside 2000–2100 (seconds where milliseconds?)"))
            .otherwise(pl.lit("timestamp|timestamp outside 2000–2100"))
        )
        .when(pl.col("ts_us") >= ts_future)
        .then(pl.lit("timestamp|timestamp later than the ingest time + 1 day"))
        .when(pl.col("gpu_bad").fill_null(False))
        .then(pl.lit("gpu|label gpu is not an integer"))
        .when(pl.col("mig_bad").fill_null(False))
        .then(pl.lit("GPU_I_ID|label GPU_I_ID is not an integer"))
    )
    joined = (
        cand.lazy()
        .join(names.lazy(), on="name", how="left", maintain_order="left")
        .join(label_sets.lazy(), on="labels", how="left", maintain_order="left", nulls_equal=False)
        .with_columns(reason.alias("reason"))
        .with_columns(
            pl.when(pl.col("ts_text").is_null())
            .then(pl.col("default_ts"))
            .otherwise(ts)
            .alias("ts"),
            pl.when(blank | value.is_nan()).then(None).otherwise(value).alias("value"),
            blank.alias("is_blank"),
            value.is_not_null().alias("value_ok"),
            value.is_nan().fill_null(False).alias("is_nan"),
        )
        .collect()
    )

    good = joined.filter(pl.col("reason").is_null())
    rows = (
        good.filter(pl.col("is_dcgm"))
        .with_columns(
            pl.lit(cluster, pl.String()).alias("cluster"),
            pl.col("host_is_exporter_pod").fill_null(False),
        )
        .select([pl.col(c).cast(t) for c, t in DCGM_SAMPLE_SCHEMA.items()])
    )
    rejected = (
        joined.filter(pl.col("reason").is_not_null())
        .with_columns(pl.col("reason").str.splitn("|", 2).alias("r"))
        .select(
            pl.col("file"),
            pl.col("line_no"),
            pl.col("line_no").alias("line_end"),
            pl.col("r").struct.field("field_0").alias("field"),
            pl.col("line").str.strip_prefix(_NOT_UTF8).alias("raw"),
            pl.col("r").struct.field("field_1").alias("reason"),
        )
        .select([pl.col(c).cast(t) for c, t in REJECTED_SCHEMA.items()])
    )
    # A line "looks like a sample" when its syntax is right, whatever its time or gpu label say:
    # that is what tells a scrape with bad samples from a file of another kind.
    looks_like_sample = (
        pl.col("shape_ok")
        & pl.col("braces_ok")
        & pl.col("name_ok").fill_null(False)
        & pl.col("labels_ok").fill_null(True)
        & pl.col("value_ok")
        & ~pl.col("after_eof")
    ).fill_null(False)
    per_file = {
        r["file"]: r
        for r in joined.group_by("file")
        .agg(
            pl.len().alias("candidates"),
            looks_like_sample.sum().alias("samples"),
            (looks_like_sample & pl.col("is_dcgm").fill_null(False)).sum().alias("dcgm_samples"),
        )
        .iter_rows(named=True)
    }
    for f in lines["file"].unique().to_list():
        per_file.setdefault(f, {"file": f, "candidates": 0, "samples": 0, "dcgm_samples": 0})
    non_dcgm = good.filter(~pl.col("is_dcgm"))
    info: dict[str, object] = {
        "format": "openmetrics" if lines["openmetrics"].any() else "prometheus",
        "lines": lines.height,
        "samples": rows.height,
        "rejected": rejected.height,
        "blank_values": int(good.filter(pl.col("is_dcgm"))["is_blank"].sum()),
        "nan_values": int(good.filter(pl.col("is_dcgm") & ~pl.col("is_blank"))["is_nan"].sum()),
        "non_dcgm_samples": dict(non_dcgm.group_by("name").len().sort("name").iter_rows()),
        "samples_without_host": int(rows["host"].null_count()),
        "per_file": per_file,
    }
    hostless = _hostless_gpus(rows)
    if hostless:
        info["hostless_gpus"] = hostless
        info["warnings"] = [_hostless_warning(int(rows["host"].null_count()), hostless)]
    return rows, rejected, info


#: How many GPUs (``metric`` on ``gpu_uuid``) the warning about host-less samples names.
_HOSTLESS_NAMED = 3


def _hostless_gpus(rows: pl.DataFrame) -> list[str]:
    """The first :data:`_HOSTLESS_NAMED` distinct ``"metric on GPU"`` of the samples without a
    host, in sample order (the GPU: ``gpu_uuid``, else ``gpu``/``device``)."""
    gpu = pl.coalesce(
        pl.col("gpu_uuid"),
        pl.format("gpu {}", pl.col("gpu_index")),
        pl.col("device"),
    )
    return (
        rows.filter(pl.col("host").is_null())
        .select(pl.format("{} on {}", pl.col("metric"), gpu).alias("what"))
        .unique(maintain_order=True)
        .head(_HOSTLESS_NAMED)["what"]
        .to_list()
    )


def _hostless_warning(samples: int, named: list[str]) -> str:
    """The ingest warning about ``samples`` samples without a host label."""
    verb = "sample has" if samples == 1 else "samples have"
    return (
        f"{samples} DCGM {verb} no host label (node, kubernetes_node, Hostname or hostname;"
        f" e.g. {'; '.join(named)}): they are stored but join no node (node activity and XIDs"
        " miss them; one with a pod or hpc_job label still reaches its job; data-quality finding"
        " dcgm_samples_without_host)"
    )


def _check_file_kind(file: str, per_file: object) -> None:
    assert isinstance(per_file, dict)
    counts = per_file.get(file)
    if counts is None or counts["candidates"] == 0:
        return
    if counts["samples"] == 0:
        raise InputFormatError(
            file, "no line is a Prometheus/OpenMetrics sample: not a dcgm-exporter scrape"
        )
    if counts["dcgm_samples"] == 0:
        raise InputFormatError(file, "no DCGM metric in the file: not a dcgm-exporter scrape")
