"""Block-wise DCGM parsing (``iter_parse_dcgm``) equals the whole-file parse (``parse_dcgm``).

The block-wise parse bounds the memory of loading a large scrape or Prometheus spool file; these
tests pin that it changes nothing: same rows in the same order, same rejected rows with the
same line numbers, same merged ``info``, on the real fixtures and on files cut so that a series
(and an XID change) spans blocks.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from pipelines import dcgm as dcgm_package
from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.dcgm import _dcgm_parse as dcgm_parse
from pipelines.dcgm._dcgm_parse import iter_parse_dcgm, parse_dcgm
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse._loading import _merge_info

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dcgm-exporter"
PASTES = FIXTURES / "issue_metrics_pastes.prom"
README = FIXTURES / "README_metrics_examples.txt"
T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
T0_MS = 1_793_620_800_000  # 2026-11-02T12:00:00Z in ms
LABELS = '{gpu="0",UUID="GPU-00000000-0000-4000-8000-000000000000",device="nvidia0",Hostname="n1"}'


def _blocks(path: Path, chunk_bytes: int, **kw: object) -> list[ParseResult]:
    return list(iter_parse_dcgm(path, chunk_bytes=chunk_bytes, **kw))  # type: ignore[arg-type]


def _assert_same(path: Path, chunk_bytes: int, **kw: object) -> list[ParseResult]:
    """Block-wise == whole: rows, rejected rows and the info merged as the loader merges it."""
    whole = parse_dcgm(path, **kw)  # type: ignore[arg-type]
    blocks = _blocks(path, chunk_bytes, **kw)
    assert_frame_equal(pl.concat([b.rows for b in blocks]), whole.rows)
    assert_frame_equal(pl.concat([b.rejected for b in blocks]), whole.rejected)
    merged: dict[str, object] = {}
    for b in blocks:
        _merge_info(merged, b.info)
    assert merged == whole.info
    return blocks


def _series_file(tmp_path: Path, name: str = "spool_20261102T000000Z.prom.gz") -> Path:
    """One GPU's XID series over 12 scrapes (0, 0, 0, 79 from the 4th on, back to 0 at the
    10th), a GPU_UTIL series, a non-DCGM metric, a bad value at line 9, a blank line, a comment
    and CRLF line ends on some lines; gzip in two members (as the Prometheus spool is written)."""
    lines = ["# HELP DCGM_FI_DEV_XID_ERRORS last XID", "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for k in range(12):
        xid = 79 if 3 <= k < 9 else 0
        lines.append(f"DCGM_FI_DEV_XID_ERRORS{LABELS} {xid} {T0_MS + k * 30_000}")
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{LABELS} {k * 7}\r")
        if k == 2:
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{LABELS} abc {T0_MS}")  # line 9: bad value
        if k == 5:
            lines.append("")
            lines.append(f"go_goroutines 12 {T0_MS}")
    text = "\n".join(lines) + "\n"
    half = len(text) // 2
    path = tmp_path / name
    path.write_bytes(gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode()))
    return path


@pytest.mark.parametrize("chunk_bytes", [1, 97, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("fixture", [PASTES, README])
def test_real_fixtures_blockwise_equals_whole(fixture: Path, chunk_bytes: int) -> None:
    """The real dcgm-exporter pastes and README examples, cut in blocks of 1 byte (one line a
    block) up to one block for the file: the same rows, rejects (README: shell lines, by line
    number) and info as the whole-file parse."""
    blocks = _assert_same(fixture, chunk_bytes, scrape_time=T0)
    if chunk_bytes == 1:
        # one block per line: 38 lines in the pastes, 67 in the README examples
        assert len(blocks) == {PASTES: 38, README: 67}[fixture]
    if chunk_bytes == 1 << 20:
        assert len(blocks) == 1


def test_readme_rejects_keep_their_line_numbers_across_blocks() -> None:
    """The README's rejected lines carry the same line numbers when parsed one line a block, and
    each rejected row's ``raw`` is that line of the file (1-based)."""
    text = README.read_text().split("\n")
    rejected = pl.concat([b.rejected for b in _blocks(README, 1, scrape_time=T0)])
    assert rejected.height > 0
    for row in rejected.iter_rows(named=True):
        assert row["raw"] == text[row["line_no"] - 1]


@pytest.mark.parametrize("chunk_bytes", [1, 50, 333, 700, 5000])
def test_series_spanning_blocks(tmp_path: Path, chunk_bytes: int) -> None:
    """A two-member gzip file whose series spans blocks: rows, the bad value at line 9 and the
    non-DCGM count equal the whole parse's.

    Hand count: 12 scrapes × 2 samples = 24 DCGM rows; 2 header lines + 24 + 1 bad + 1 blank +
    1 go_goroutines = 29 lines; the bad line is the 9th (2 headers, then k=0,1,2 pairs = 6 lines,
    then it); ``go_goroutines`` is 1 non-DCGM sample.
    """
    path = _series_file(tmp_path)
    blocks = _assert_same(path, chunk_bytes)
    if chunk_bytes <= 700:
        assert len(blocks) > 1
    rows = pl.concat([b.rows for b in blocks])
    rejected = pl.concat([b.rejected for b in blocks])
    assert rows.height == 24
    assert rejected["line_no"].to_list() == [9]
    assert rejected["field"].to_list() == ["value"]
    assert blocks[-1].info["non_dcgm_samples"] == {"go_goroutines": 1}
    # untimed GPU_UTIL samples take the file-name time (midnight of 2026-11-02)
    util = rows.filter(pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL")
    assert util["ts"].unique().to_list() == [datetime(2026, 11, 2, tzinfo=UTC)]
    assert util["value"].to_list() == [float(k * 7) for k in range(12)]


@pytest.mark.parametrize("chunk_bytes", [1, 64, 10_000])
def test_openmetrics_format_and_eof_across_blocks(tmp_path: Path, chunk_bytes: int) -> None:
    """An OpenMetrics file is known as one only from its ``# EOF`` line, at the end: blocks
    before it still read timestamps as seconds, and a line after ``# EOF`` is rejected with its
    line number (5: 4 lines, then ``# EOF``, then the stray one is line 6)."""
    t = T0_MS // 1000
    text = (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 10 {t}\n"
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 20 {t + 30}.5\n"
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 30 {t + 60}\n"
        "# EOF\n"
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 40 {t + 90}\n"
    )
    path = tmp_path / "dump.om"
    path.write_text(text)
    blocks = _assert_same(path, chunk_bytes)
    rows = pl.concat([b.rows for b in blocks])
    assert rows["ts"].to_list() == [
        T0,
        datetime(2026, 11, 2, 12, 0, 30, 500_000, tzinfo=UTC),
        datetime(2026, 11, 2, 12, 1, tzinfo=UTC),
    ]
    rejected = pl.concat([b.rejected for b in blocks])
    assert rejected["line_no"].to_list() == [6]
    assert {b.info["format"] for b in blocks} == {"openmetrics"}


def test_label_memo_cap_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the cross-block memo of parsed label sets capped at 1 (so it is dropped and rebuilt
    as blocks go), the result is still the whole parse's."""
    monkeypatch.setattr(dcgm_parse, "_MEMO_MAX", 1)
    path = _series_file(tmp_path)
    for chunk in (1, 200):
        _assert_same(path, chunk)
    _assert_same(PASTES, 300, scrape_time=T0)


def test_unit_separator_in_one_block_only(tmp_path: Path) -> None:
    """A ``\\x1f`` byte (which the fast line reader cannot take) in one block: that block is
    split in Python, the others by polars; the lines are the same either way."""
    text = (
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 1 {T0_MS}\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="x\x1fy",Hostname="n1"}} 2 {T0_MS}\n'
        "\n"
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 3 {T0_MS}\r\n"
    )
    path = tmp_path / "sep.prom"
    path.write_text(text)
    for chunk in (1, 40, 1000):
        _assert_same(path, chunk)


def test_not_a_scrape_raises_after_the_blocks(tmp_path: Path) -> None:
    """A text file none of whose lines is a DCGM sample raises as the whole parse does, also when
    the only sample-like line is in the last block (it is judged over the whole file)."""
    path = tmp_path / "other.prom"
    path.write_text(f"# a comment\nnode_load1 0.5 {T0_MS}\ngo_goroutines 12 {T0_MS}\n")
    with pytest.raises(InputFormatError, match="no DCGM metric"):
        parse_dcgm(path)
    with pytest.raises(InputFormatError, match="no DCGM metric"):
        _blocks(path, 1)
    # one DCGM sample in the last block makes it a scrape, block-wise as whole
    path.write_text(path.read_text() + f"DCGM_FI_DEV_GPU_UTIL{LABELS} 5 {T0_MS}\n")
    _assert_same(path, 1)


def test_binary_broken_gzip_and_bad_chunk_size(tmp_path: Path) -> None:
    """Binary content and a truncated gzip stream raise InputFormatError; chunk_bytes < 1 is a
    ValueError."""
    binary = tmp_path / "bin.prom"
    binary.write_bytes(b"\x00\x01" * 100)
    with pytest.raises(InputFormatError, match="binary"):
        _blocks(binary, 10)
    good = _series_file(tmp_path).read_bytes()
    broken = tmp_path / "broken.prom.gz"
    broken.write_bytes(good[: len(good) - 40])
    with pytest.raises(InputFormatError, match="gzip"):
        _blocks(broken, 100)
    with pytest.raises(ValueError, match="chunk_bytes"):
        _blocks(binary, 0)


def test_ingest_file_loads_blocks_in_one_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest_file`` of a DCGM file in 50-byte blocks: raw.dcgm_samples holds the whole
    parse's rows, raw.rejected_rows the bad line 9, the ingest counts 24 + 1, a re-run replaces
    the load (still 24 rows), and the XID changes found by ``lag`` over the loaded series are
    the hand-counted two: 0 → 79 at scrape 4 (12:01:30) and 79 → 0 at scrape 10 (12:04:30)."""
    monkeypatch.setattr(dcgm_package, "DCGM_CHUNK_BYTES", 50)
    path = _series_file(tmp_path)
    whole = parse_dcgm(path)
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        con.execute("SET TimeZone='UTC'")
        for _ in range(2):
            stats = ingest_file(con, "dcgm", path, IngestOptions())
            assert (stats.rows_loaded, stats.rows_rejected) == (24, 1)
        cols = ", ".join(whole.rows.columns)
        loaded = con.sql(f"SELECT {cols} FROM raw.dcgm_samples ORDER BY line_no").pl()
        assert_frame_equal(loaded, whole.rows, check_dtypes=False)
        rej = con.sql("SELECT line_no, field FROM raw.rejected_rows WHERE source = 'dcgm'").pl()
        assert rej.rows() == [(9, "value")]
        changes = con.sql(
            "SELECT ts, prev, value FROM (SELECT ts, value,"
            " lag(value) OVER (PARTITION BY gpu_uuid ORDER BY ts) AS prev FROM raw.dcgm_samples"
            " WHERE metric = 'DCGM_FI_DEV_XID_ERRORS') WHERE prev IS DISTINCT FROM value"
            " AND prev IS NOT NULL ORDER BY ts"
        ).fetchall()
    assert changes == [
        (datetime(2026, 11, 2, 12, 1, 30, tzinfo=UTC), 0.0, 79.0),
        (datetime(2026, 11, 2, 12, 4, 30, tzinfo=UTC), 79.0, 0.0),
    ]


def test_ingest_file_not_a_scrape_loads_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-DCGM file found out only after its blocks were inserted: the load is rolled back,
    and an earlier good load of the same path stays in place."""
    monkeypatch.setattr(dcgm_package, "DCGM_CHUNK_BYTES", 10)
    path = tmp_path / "x_2026-11-02.prom"
    path.write_text(f"DCGM_FI_DEV_GPU_UTIL{LABELS} 5 {T0_MS}\n")
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        assert ingest_file(con, "dcgm", path, IngestOptions()).rows_loaded == 1
        path.write_text(f"node_load1 0.5 {T0_MS}\nnode_load5 0.7 {T0_MS}\n")
        with pytest.raises(InputFormatError):
            ingest_file(con, "dcgm", path, IngestOptions())
        assert con.execute("SELECT count(*) FROM raw.dcgm_samples").fetchall() == [(1,)]


_LINE = st.sampled_from(
    [
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} 42 {T0_MS}",
        f"DCGM_FI_DEV_XID_ERRORS{LABELS} 79 {T0_MS + 30_000}",
        f'DCGM_FI_DEV_FB_USED{{gpu="1",UUID="GPU-b",Hostname="n2",pod=""}} 2147483632 {T0_MS}',
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} NaN",
        f"DCGM_FI_DEV_GPU_UTIL{LABELS} x {T0_MS}",
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="z",UUID="GPU-c"}} 1 {T0_MS}',
        f"go_goroutines 3 {T0_MS}",
        "# HELP x y",
        "",
        "   ",
        "not a sample",
        "# EOF",
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_LINE, min_size=1, max_size=30), chunk=st.integers(1, 400))
def test_property_blockwise_equals_whole(tmp_path: Path, lines: list[str], chunk: int) -> None:
    """Any mix of samples, rejects, blanks, NaN, non-DCGM lines and ``# EOF`` lines, cut at any
    block size: block-wise == whole, errors included (a file without a DCGM sample raises in
    both)."""
    path = tmp_path / "p_20261102T120000Z.prom"
    path.write_text("\n".join(lines) + "\n")
    try:
        whole = parse_dcgm(path)
    except InputFormatError as exc:
        with pytest.raises(InputFormatError) as got:
            _blocks(path, chunk)
        assert str(got.value) == str(exc)
        return
    assert whole.info is not None
    _assert_same(path, chunk)
