"""Bad DCGM rows are rejected one by one, naming the field or metric; good rows still load."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.dcgm._dcgm_parse import parse_dcgm
from pipelines.dcgm._hourly import DCGM_HOURLY_SCHEMA, parse_dcgm_hourly

T0 = datetime(2026, 11, 2, tzinfo=UTC)
L = 'gpu="0",UUID="GPU-1",Hostname="n1"'


def _prom(tmp_path: Path, body: bytes) -> Path:
    p = tmp_path / "s.prom"
    p.write_bytes(body)
    return p


def _reasons(res: ParseResult) -> list[tuple[int, str, str]]:
    return [
        (int(a), str(b), str(c))
        for a, b, c in res.rejected.select("line_no", "field", "reason").rows()
    ]


def test_text_non_finite_values_rejected(tmp_path: Path) -> None:
    """NaN, +Inf and -Inf are rejected as "non-finite value"; the finite sample loads."""
    p = _prom(
        tmp_path,
        (
            f"DCGM_FI_DEV_SM_CLOCK{{{L}}} NaN\n"
            f"DCGM_FI_DEV_SM_CLOCK{{{L}}} +Inf\n"
            f"DCGM_FI_DEV_SM_CLOCK{{{L}}} -Inf\n"
            f"DCGM_FI_DEV_SM_CLOCK{{{L}}} 135\n"
        ).encode(),
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert _reasons(res) == [(i, "value", "non-finite value") for i in (1, 2, 3)]
    assert res.rows["value"].to_list() == [135.0]


def test_text_ratio_and_util_ranges_name_the_metric(tmp_path: Path) -> None:
    """GR_ENGINE_ACTIVE 1.7 and -3 (outside 0..1) and GPU_UTIL 101 (outside 0..100) are
    rejected naming the metric; 0.5 and 100 load."""
    p = _prom(
        tmp_path,
        (
            f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{L}}} 1.7\n"
            f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{L}}} -3\n"
            f"DCGM_FI_DEV_GPU_UTIL{{{L}}} 101\n"
            f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{L}}} 0.5\n"
            f"DCGM_FI_DEV_GPU_UTIL{{{L}}} 100\n"
        ).encode(),
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert _reasons(res) == [
        (1, "value", "DCGM_FI_PROF_GR_ENGINE_ACTIVE outside [0, 1]"),
        (2, "value", "DCGM_FI_PROF_GR_ENGINE_ACTIVE outside [0, 1]"),
        (3, "value", "DCGM_FI_DEV_GPU_UTIL outside [0, 100]"),
    ]
    assert res.rows["value"].to_list() == [0.5, 100.0]


def test_text_identity_duplicate_label_and_non_utf8(tmp_path: Path) -> None:
    """No labels → no GPU identity; gpu named twice; a line with byte 0xFF → "not UTF-8"
    (raw keeps the byte as an escape); the good line loads."""
    p = _prom(
        tmp_path,
        b"DCGM_FI_DEV_GPU_UTIL 50\n"
        b'DCGM_FI_DEV_GPU_UTIL{gpu="0",gpu="1",Hostname="n1"} 50\n'
        b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n\xff1"} 50\n'
        + f"DCGM_FI_DEV_GPU_UTIL{{{L}}} 40\n".encode(),
    )
    res = parse_dcgm(p, scrape_time=T0)
    assert _reasons(res) == [
        (1, "labels", "no GPU identity (UUID/gpu/device)"),
        (2, "labels", "label set names a label twice"),
        (3, "line", "not UTF-8"),
    ]
    assert "\\xff" in res.rejected["raw"][2]
    assert res.rows["value"].to_list() == [40.0]
    assert res.rows["host"].to_list() == ["n1"]


def _hourly(tmp_path: Path, rows: list[dict[str, object]], **over: pl.DataType) -> Path:
    schema = {**DCGM_HOURLY_SCHEMA, **over}
    p = tmp_path / "h.parquet"
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(p)
    return p


def _row(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "cluster": "c1",
        "hostname": "n1",
        "gpu": 0,
        "uuid": "GPU-1",
        "hour": datetime(2026, 11, 2, 3, tzinfo=UTC),
        "hpc_job": "42",
        "samples": 12,
        "gr_engine_active_avg": 0.5,
        "fb_used_max_mib": 1000,
        "xid_last": 0,
    }
    return {**base, **kw}


def test_hourly_wrong_type_cell_rejects_one_row(tmp_path: Path) -> None:
    """samples stored as strings: "twelve" is rejected naming samples; "12" rows load."""
    p = _hourly(tmp_path, [_row(samples="twelve"), _row(gpu=1, samples="12")], samples=pl.String())
    res = parse_dcgm_hourly(p, cluster="c1", now=T0)
    assert _reasons(res) == [(1, "samples", "samples: not a valid Int32")]
    assert "twelve" in res.rejected["raw"][0]
    assert res.rows["gpu"].to_list() == [1]
    assert res.rows["samples"].to_list() == [12]


def test_hourly_value_checks_and_duplicates(tmp_path: Path) -> None:
    """Each bad row names its field; a repeated key keeps the first row (line 1)."""
    p = _hourly(
        tmp_path,
        [
            _row(),
            _row(gpu=1, fb_used_max_mib=-1000),
            _row(gpu=2, fb_used_max_mib=2**20 + 1),
            _row(gpu=3, xid_last=-7),
            _row(gpu=4, hostname=""),
            _row(gpu=5, uuid=None),
            _row(gpu=6, hour=datetime(2026, 11, 2, 3, 17, tzinfo=UTC)),
            _row(gpu=7, hour=datetime(2026, 11, 3, 1, tzinfo=UTC)),  # now + 1 day + 1 h
            _row(gr_engine_active_avg=0.9),  # same key as line 1
            _row(gpu=8, gr_engine_active_avg=float("nan")),
            _row(gpu=9, fb_used_max_mib=2**20, hour=datetime(2026, 11, 3, tzinfo=UTC)),
        ],
    )
    res = parse_dcgm_hourly(p, cluster="c1", now=T0)
    assert _reasons(res) == [
        (2, "fb_used_max_mib", "fb_used_max_mib outside 0-1048576 MiB"),
        (3, "fb_used_max_mib", "fb_used_max_mib outside 0-1048576 MiB"),
        (4, "xid_last", "negative xid_last"),
        (5, "hostname", "missing hostname"),
        (6, "uuid", "missing uuid"),
        (7, "hour", "hour not on the hour"),
        (8, "hour", "hour later than ingest time + 1 day"),
        (9, "cluster,hostname,gpu,hour,hpc_job", "duplicate key"),
        (10, "gr_engine_active_avg", "non-finite value"),
    ]
    assert res.rows["gpu"].to_list() == [0, 9]
    assert res.rows["gr_engine_active_avg"].to_list() == [0.5, 0.5]


def test_hourly_empty_folder_is_one_line_error(tmp_path: Path) -> None:
    """An empty folder raises InputFormatError with a one-line message."""
    with pytest.raises(InputFormatError, match=r"no \.parquet files") as ei:
        parse_dcgm_hourly(tmp_path, cluster="c1")
    assert "\n" not in str(ei.value)


def test_sample_time_past_the_ingest_time_is_rejected(tmp_path: Path) -> None:
    """A sample a week after the ingest time is rejected naming the timestamp (as sacct and
    Kubernetes times are); one an hour ago loads."""
    import time

    now_ms = int(time.time() * 1000)
    labels = 'gpu="0",UUID="GPU-1",Hostname="n1"'
    path = tmp_path / "scrape.prom"
    path.write_text(
        f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 50 {now_ms - 3_600_000}\n"
        f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 60 {now_ms + 7 * 86_400_000}\n",
        encoding="utf-8",
    )
    result = parse_dcgm(path, cluster="c1")
    assert result.rows["value"].to_list() == [50.0]
    (reject,) = result.rejected.to_dicts()
    assert (reject["line_no"], reject["field"]) == (2, "timestamp")
    assert reject["reason"] == "timestamp later than the ingest time + 1 day"
