"""sacct text files parsed block by block (``iter_parse_sacct``) and loaded piece by piece
(``load_parse_results``) give exactly what the whole-file parse and load give."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pipelines.slurm as slurm_package
from pipelines._parse_result import ParseResult
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.slurm._sacct_parse import (
    SUMMED_INFO_KEYS,
    SacctFormatError,
    iter_parse_sacct,
    parse_sacct,
)
from pipelines.warehouse import connect, init_warehouse, load_parse_result, load_parse_results
from tests.conftest import HB_FIELDS as HB_SPEC
from tests.conftest import XDMOD_FIELDS as XDMOD_SPEC

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fields(spec: str) -> list[str]:
    return spec.split(",")


XDMOD_FIELDS = _fields(XDMOD_SPEC)
HB_FIELDS = _fields(HB_SPEC)
#: XDMoD's earlier format (ReqGRES|ReqTRES in place of ReqTRES|AllocTRES, no QOS)
XDMOD_GRES_FIELDS = _fields(
    "jobid,jobidraw,cluster,partition,account,group,gid,user,uid,submit,eligible,start,end,"
    "elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqgres,reqtres,timelimit,nodelist,jobname"
)
RS_11 = _fields(
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,ReqMem,State,Timelimit,TotalCPU"
)
JOBSTATS_FIELDS = _fields(
    "JobIDRaw,Start,End,Cluster,AllocTRES,AdminComment,User,Account,State,NNodes,NCPUS,ReqMem,"
    "QOS,Partition,TimelimitRaw,JobName"
)
PLANNED_FIELDS = _fields(
    "JobID,JobName,Elapsed,TotalCPU,MaxRSS,NNodes,NCPUS,NTasks,ReqMem,Partition,Timelimit,"
    "Planned,AllocTRES,NodeList,TRESUsageInMax,Submit,Start,End,State"
)

#: Every sacct output fixture (relative to ``tests/fixtures``) → ``(fields, delimiter)``. The
#: jobstats, issue-snippet and reportseff files are collections (comments, repeated headers,
#: mixed formats): read whole with one field list they are untidy files with many rejects.
SACCT_FIXTURES: dict[str, tuple[list[str] | None, str | None]] = {
    "slurm-22.05-lab/sacct_all.psv": (None, None),
    "slurm-22.05-lab/sacct_narrow_allstates.psv": (None, None),
    "slurm-22.05-lab/sacct_all.json": (None, None),
    "slurm-on-k8s/sacct_external_jobs.json": (None, None),
    "sarc-sacct-json/sacct_23.02.6.json": (None, None),
    "sarc-sacct-json/sacct_23.11.5.json": (None, None),
    "slurm-allocgres/sacct_2017-01-09.psv": (None, None),
    "slurm-node-drain/sacct_n1_2024-10-08.psv": (None, None),
    "hb-jobinfo/sacct.txt": (HB_FIELDS, None),
    "xdmod/shredder_slurm_input/accounting-logs.log": (XDMOD_FIELDS, None),
    "xdmod/shredder_slurm_input/accounting-logs-with-job-arrays.log": (XDMOD_FIELDS, None),
    "xdmod/shredder_slurm_input/accounting-logs-with-gpu-gres.log": (XDMOD_GRES_FIELDS, None),
    "xdmod/shredder_slurm_input/non-ended-job-state.log": (XDMOD_FIELDS, None),
    "xdmod/shredder_slurm_input/unknown-job-state.log": (XDMOD_FIELDS, None),
    "xdmod/shredder_slurm_input/utf8-multibyte-chars.log": (XDMOD_FIELDS, None),
    "jobstats/test_jobstats_sacct_lines.txt": (JOBSTATS_FIELDS, "|"),
    "issue-snippets/sacct_output_pasted_in_issues.txt": (RS_11, "|"),
    "reportseff/extracted_sacct_lines.tsv": (RS_11, "|"),
    "slurm-planned/sacct_planned_no_eligible.psv": (PLANNED_FIELDS, "|"),
}

HEADER = "JobID|State|Elapsed|SubmitLine"
SUBMIT_HEADER = "JobID|SubmitLine|State|Elapsed"


def _merged(results: Sequence[ParseResult]) -> ParseResult:
    """The pieces as one result: frames concatenated, counts summed, other info the last's."""
    info: dict[str, object] = {}
    for result in results:
        for key, value in result.info.items():
            if key in SUMMED_INFO_KEYS and key in info:
                before = info[key]
                assert isinstance(before, int) and isinstance(value, int)
                info[key] = before + value
            else:
                info[key] = value
    return ParseResult(
        rows=pl.concat([r.rows for r in results]),
        rejected=pl.concat([r.rejected for r in results]),
        info=info,
    )


def _assert_same(whole: ParseResult, pieces: Sequence[ParseResult]) -> None:
    merged = _merged(pieces)
    assert merged.rows.equals(whole.rows)
    assert merged.rejected.equals(whole.rejected)
    assert merged.info == whole.info


def _line_ends(text: str) -> list[int]:
    """Block sizes that end the first block at each line end of ``text`` (and 1: every line a
    block): every line boundary of the file is a block boundary for one of them."""
    data = text.encode("utf-8")
    return [1] + [i + 1 for i, byte in enumerate(data) if byte == ord("\n")] + [len(data) + 1]


def _check(
    path: Path,
    chunk_bytes: int,
    *,
    fields: list[str] | None = None,
    delimiter: str | None = None,
) -> list[ParseResult]:
    """Parse ``path`` whole and in blocks; assert the results agree; return the pieces."""
    whole = parse_sacct(path, fields=fields, delimiter=delimiter)
    pieces = list(
        iter_parse_sacct(path, fields=fields, delimiter=delimiter, chunk_bytes=chunk_bytes)
    )
    _assert_same(whole, pieces)
    return pieces


# --------------------------------------------------------------------------- real fixtures


def test_every_sacct_fixture_is_listed() -> None:
    """The parametrised list below covers every sacct output file among the fixtures."""
    found = {
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*")
        if p.is_file()
        and p.suffix in (".psv", ".txt", ".tsv", ".log", ".json")
        and (("sacct" in p.name and "sacctmgr" not in p.name) or p.suffix == ".log")
    }
    assert found == set(SACCT_FIXTURES)


@pytest.mark.parametrize("chunk_bytes", [1, 200, 64 << 20])
@pytest.mark.parametrize("name", sorted(SACCT_FIXTURES))
def test_fixture_in_blocks_equals_whole(name: str, chunk_bytes: int) -> None:
    """Every real fixture: blocks of 1 byte (a line each), of 200 bytes, or the default."""
    fields, delimiter = SACCT_FIXTURES[name]
    path = FIXTURES / name
    pieces = _check(path, chunk_bytes, fields=fields, delimiter=delimiter)
    if chunk_bytes <= 200 and path.suffix != ".json" and len(path.read_bytes().splitlines()) > 2:
        assert len(pieces) > 1, "the file should have been split"


def test_lab_fixture_every_block_size(tmp_path: Path) -> None:
    """The 109-field lab export (lines of ~1 kB) at block sizes around its line lengths."""
    path = FIXTURES / "slurm-22.05-lab" / "sacct_all.psv"
    for chunk_bytes in (999, 4096, 20000):
        _check(path, chunk_bytes)


# --------------------------------------------------------------------------- boundaries


def _submit_line_file(tmp_path: Path) -> tuple[Path, str]:
    """A file of SubmitLine records with newlines (one spanning a blank line), among plain
    records, a record cut short, and a line with too many fields."""
    records = [
        "1|sbatch --wrap='a\nb'|COMPLETED|00:00:01",
        "2|sbatch x|FAILED|00:00:02",
        "3|srun bash -c 'echo 1 &&\necho 2 &&\necho 3'|COMPLETED|00:00:03",
        "4|sbatch --wrap='x\n\ny'|TIMEOUT|00:00:04",
        "5|COMPLETED",  # malformed: too few fields, never joins
        "6|sbatch y|COMPLETED|00:00:06",
        "7|sbatch y|COMPLETED|00:00:07|extra",  # too many fields, last one not free text
        "8|sbatch --wrap='p\nq'|CANCELLED by 0|00:00:08",
        "9|sbatch z|COMPLETED|bad",
        "10|a\nb\nc\nd|COMPLETED|00:00:10",
    ]
    text = SUBMIT_HEADER + "\n" + "\n".join(records) + "\n"
    path = tmp_path / "submit.psv"
    path.write_text(text)
    return path, text


def test_multi_line_records_straddling_every_boundary(tmp_path: Path) -> None:
    """Multi-line SubmitLines and malformed lines at every possible block boundary."""
    path, text = _submit_line_file(tmp_path)
    whole = parse_sacct(path)
    assert whole.info["joined_records"] == 5
    assert whole.rejected["line_no"].to_list() == [11, 13, 16]
    for chunk_bytes in _line_ends(text):
        pieces = list(iter_parse_sacct(path, chunk_bytes=chunk_bytes))
        _assert_same(whole, pieces)


def test_straddling_record_is_carried_not_split(tmp_path: Path) -> None:
    """A block that ends inside a multi-line record leaves the record to the next block."""
    path, text = _submit_line_file(tmp_path)
    cut = text.index("echo 2") - 1  # the block ends after "…echo 1 &&\n"
    pieces = list(iter_parse_sacct(path, chunk_bytes=cut))
    first = pieces[0]
    assert first.rows["job_id"].to_list() == ["1", "2"]
    assert first.rejected.height == 0
    assert pieces[1].rows.row(0, named=True)["line_no"] == 5
    assert pieces[1].rows.row(0, named=True)["line_end"] == 7


def test_malformed_line_at_the_end_of_a_block(tmp_path: Path) -> None:
    """A short line ending a block is carried over, then rejected exactly as in the whole file
    (and a line that does fit after it is not eaten by it)."""
    text = f"{HEADER}\n1|COMPLETED|00:00:01|a\n2|COMPLETED\n3|FAILED|00:00:03|c\n"
    path = tmp_path / "short.psv"
    path.write_text(text)
    for chunk_bytes in _line_ends(text):
        pieces = _check(path, chunk_bytes)
        rejected = pl.concat([p.rejected for p in pieces])
        assert rejected.select("line_no", "reason").rows() == [(3, "expected 4 fields, found 2")]


def test_join_longer_than_a_block_and_the_join_limit(tmp_path: Path) -> None:
    """A record of 40 lines and a short line followed by 70 lines that never make a record."""
    long_record = "1|COMPLETED|00:00:01|" + "\n".join(f"line {i}" for i in range(40))
    never = "2|" + "\n".join(["x"] * 70)
    text = f"{HEADER}\n{long_record}\n{never}\n3|FAILED|00:00:03|c\n"
    path = tmp_path / "long.psv"
    path.write_text(text)
    for chunk_bytes in (1, 50, 333):
        _check(path, chunk_bytes)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n\n",
        "JobID|State",
        "JobID|State\n",
        "\ufeffJobID|State\r\n1|COMPLETED\r\n2|FAILED\r\n",
        "\n\n\nJobID|State|Elapsed\n1|COMPLETED|00:00:01\n\n2|FAILED|00:00:02\n",
        "JobID|State\n1|COMPLETED\n\nJobID|State\n2|FAILED\n",
        "JobID|State|JobName\n1|COMPLETED|a|b|c\n2|FAILED|d\n",
        "JobID|State\n123456_[1-40%5]|PENDING\n7|COMPLETED\n8|NOPE\n",
        "JobID^|^State^|^SubmitLine\n1^|^COMPLETED^|^a\nb\n2^|^FAILED^|^c\n",
        "JobID|State|\n1|COMPLETED|\n2|FAILED|\n",
    ],
)
def test_small_shapes(tmp_path: Path, text: str) -> None:
    """Empty, blank, header-only, BOM + CRLF, leading blanks, repeated headers, surplus fields,
    pending arrays, a multi-character delimiter and ``--parsable`` agree at every block size."""
    path = tmp_path / "shape.psv"
    path.write_bytes(text.encode("utf-8"))
    for chunk_bytes in _line_ends(text):
        _check(path, chunk_bytes)


def test_latin1_found_late(tmp_path: Path) -> None:
    """A Latin-1 byte after UTF-8 text: the whole file is Latin-1, in blocks as whole."""
    lines = [f"{i}|COMPLETED|00:00:01|plain" for i in range(30)]
    lines[3] = "3|COMPLETED|00:00:01|caf\u00e9"  # UTF-8 bytes, read as Latin-1 like the rest
    data = (HEADER + "\n" + "\n".join(lines) + "\n").encode("utf-8")
    data += "31|COMPLETED|00:00:01|dom\u00e4ne\n".encode("latin-1")
    path = tmp_path / "l1.psv"
    path.write_bytes(data)
    for chunk_bytes in (1, 100, 700, len(data)):
        pieces = _check(path, chunk_bytes)
        assert pieces[-1].info["encoding"] == "latin-1"
    extra = parse_sacct(path).rows["extra"].to_list()
    assert json.loads(extra[-1])["SubmitLine"] == "dom\u00e4ne"
    assert json.loads(extra[3])["SubmitLine"] == "caf\u00e9".encode().decode("latin-1")


def test_utf8_file_in_blocks(tmp_path: Path) -> None:
    """Multi-byte UTF-8 names (and a multi-byte delimiter) stay UTF-8 in every block."""
    text = "JobID☃State☃JobName\n" + "".join(f"{i}☃COMPLETED☃naïve ☃ {i}\n" for i in range(20))
    path = tmp_path / "u.txt"
    path.write_text(text)
    for chunk_bytes in (1, 17, 100):
        pieces = _check(path, chunk_bytes)
        assert {p.info["encoding"] for p in pieces} == {"utf-8"}


def test_errors_are_the_whole_file_errors(tmp_path: Path) -> None:
    """Binary, HTML, YAML, headerless without fields and fixed-width files raise as parse_sacct."""
    cases = {
        "bin": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)),
        "html": b"<html><body>502</body></html>\n",
        "nohead": b"1|COMPLETED\n2|FAILED\n",
        "fixed": b"JobID           JobName  Partition    Account  AllocCPUS      State ExitCode\n",
        "json": b'{"kind": "PodList", "items": []}',
        "yaml": b"---\njobs:\n- account: mila\n  job_id: 4\n",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(SacctFormatError) as whole:
            parse_sacct(path)
        with pytest.raises(SacctFormatError) as blocks:
            list(iter_parse_sacct(path, chunk_bytes=10))
        assert str(blocks.value) == str(whole.value)
    with pytest.raises(SacctFormatError, match="cannot read"):
        list(iter_parse_sacct(tmp_path / "missing.psv"))
    with pytest.raises(ValueError, match="unknown time zone"):
        list(iter_parse_sacct(tmp_path / "html", tz="Mars/Olympus"))
    with pytest.raises(ValueError, match="chunk_bytes"):
        list(iter_parse_sacct(tmp_path / "html", chunk_bytes=0))


# --------------------------------------------------------------------------- property

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GEN_HEADER = "JobID|SubmitLine|State|Elapsed|JobName"
_values = st.sampled_from(["COMPLETED", "FAILED", "CANCELLED by 5", "NOPE", "", "00:01:02", "x"])
#: free text: newlines make a multi-line record, ``|`` surplus fields
_free = st.lists(st.text(alphabet="abc é\t|", max_size=6), max_size=4).map("\n".join)
_record = st.builds(
    lambda job, submit, state, elapsed, name: f"{job}|{submit}|{state}|{elapsed}|{name}",
    st.sampled_from(["1", "2.batch", "3_4", "5_[1-3]", "6+0", "7.b+", "bad"]),
    _free,
    _values,
    st.sampled_from(["00:00:01", "1-00:00:00", "bad", ""]),
    _free,
)
_line = st.one_of(
    _record,
    _record,
    _record,
    _record,
    st.just(""),
    st.just(GEN_HEADER),
    st.text(alphabet="12|ab\n", max_size=12),
)


@_SETTINGS
@given(
    lines=st.lists(_line, max_size=30),
    chunk_bytes=st.one_of(st.integers(1, 40), st.integers(1, 400)),
    crlf=st.booleans(),
    end_newline=st.booleans(),
)
def test_generated_files_in_blocks_equal_whole(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[str],
    chunk_bytes: int,
    crlf: bool,
    end_newline: bool,
) -> None:
    """Generated files (multi-line records, short and long lines, blank lines, repeated
    headers, CRLF, no final newline) parse alike whole and in blocks of random size."""
    newline = "\r\n" if crlf else "\n"
    text = newline.join([GEN_HEADER, *lines]) + (newline if end_newline else "")
    path = Path(tmp_path_factory.mktemp("gen")) / "gen.psv"
    path.write_bytes(text.encode("utf-8"))
    _check(path, chunk_bytes)


# --------------------------------------------------------------------------- warehouse


def _table(db: Path, sql: str) -> pl.DataFrame:
    with connect(db, read_only=True) as con:
        out: pl.DataFrame = con.sql(sql).pl()
        return out


def test_load_in_pieces_equals_load_whole(tmp_path: Path) -> None:
    """Loading the blocks of a file gives the rows, rejects and ingest record of one load."""
    path, _ = _submit_line_file(tmp_path)
    one, many = tmp_path / "one.duckdb", tmp_path / "many.duckdb"
    with connect(one) as con:
        init_warehouse(con)
        a = load_parse_result(con, source="sacct", cluster="c", file=path, result=parse_sacct(path))
    with connect(many) as con:
        init_warehouse(con)
        results = iter_parse_sacct(path, chunk_bytes=30)
        b = load_parse_results(con, source="sacct", cluster="c", file=path, results=results)
    assert (a.rows_loaded, a.rows_rejected) == (b.rows_loaded, b.rows_rejected) == (7, 3)
    for sql in (
        "SELECT * FROM raw.slurm_rows ORDER BY line_no",
        "SELECT * FROM raw.rejected_rows ORDER BY line_no",
        "SELECT rows_loaded, rows_rejected, info FROM raw.ingests",
    ):
        assert _table(one, sql).equals(_table(many, sql))


def test_reingest_in_blocks_replaces_earlier_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest_file`` (blocks of 40 bytes here) run twice keeps one load: the second's."""
    monkeypatch.setattr(slurm_package, "SACCT_CHUNK_BYTES", 40)
    path, _ = _submit_line_file(tmp_path)
    db = tmp_path / "w.duckdb"
    opts = IngestOptions(cluster="c")
    with connect(db) as con:
        init_warehouse(con)
        first = ingest_file(con, "sacct", path, opts)
        second = ingest_file(con, "sacct", path, opts)
    assert (first.replaced_ingests, second.replaced_ingests) == (0, 1)
    ingests = _table(db, "SELECT ingest_id, rows_loaded, rows_rejected FROM raw.ingests")
    assert ingests.rows() == [(second.ingest_id, 7, 3)]
    rows = _table(db, "SELECT ingest_id, count(*) FROM raw.slurm_rows GROUP BY ALL")
    assert rows.rows() == [(second.ingest_id, 7)]
    rejected = _table(db, "SELECT ingest_id, count(*) FROM raw.rejected_rows GROUP BY ALL")
    assert rejected.rows() == [(second.ingest_id, 3)]


def test_failure_midway_keeps_the_earlier_load(tmp_path: Path) -> None:
    """A parse that fails after some pieces were inserted rolls the whole load back."""
    path, _ = _submit_line_file(tmp_path)
    db = tmp_path / "w.duckdb"

    def failing() -> Iterator[ParseResult]:
        yield from list(iter_parse_sacct(path, chunk_bytes=30))[:2]
        raise SacctFormatError(str(path), "disk went away")

    with connect(db) as con:
        init_warehouse(con)
        first = ingest_file(con, "sacct", path, IngestOptions(cluster="c"))
        with pytest.raises(SacctFormatError, match="disk went away"):
            load_parse_results(con, source="sacct", cluster="c", file=path, results=failing())
    ingests = _table(db, "SELECT ingest_id, rows_loaded FROM raw.ingests")
    assert ingests.rows() == [(first.ingest_id, 7)]
    assert _table(db, "SELECT count(*) AS n FROM raw.slurm_rows")["n"].item() == 7


def test_prefetch_loads_what_a_serial_load_loads(tmp_path: Path) -> None:
    """Parsing the next block while the current one is stored (the default) changes no stored
    value: rows, rejects and the ingest record equal a serial load's (7 rows, 3 rejects, the
    file's counts from ``_submit_line_file``)."""
    path, _ = _submit_line_file(tmp_path)
    serial, ahead = tmp_path / "serial.duckdb", tmp_path / "ahead.duckdb"
    stats = []
    for db, prefetch in ((serial, False), (ahead, True)):
        with connect(db) as con:
            init_warehouse(con)
            results = iter_parse_sacct(path, chunk_bytes=30)
            stats.append(
                load_parse_results(
                    con, source="sacct", cluster="c", file=path, results=results, prefetch=prefetch
                )
            )
    assert [(s.rows_loaded, s.rows_rejected) for s in stats] == [(7, 3), (7, 3)]
    for sql in (
        "SELECT * EXCLUDE (ingest_id) FROM raw.slurm_rows ORDER BY line_no",
        "SELECT * EXCLUDE (ingest_id) FROM raw.rejected_rows ORDER BY line_no",
        "SELECT rows_loaded, rows_rejected, info FROM raw.ingests",
    ):
        assert _table(serial, sql).equals(_table(ahead, sql))


def test_a_large_file_is_stored_on_one_thread_and_keeps_its_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of ``LARGE_FILE_BYTES`` or more (lowered to 1 byte here) is stored with DuckDB on
    one thread, each row group written as it fills, its sha256 read in a thread of its own and
    (through ``ingest_file``) its next block parsed ahead. Stored values equal a small file's
    path: the same 7 rows, 3 rejects and ingest record; the sha256 is the file's; both DuckDB
    settings are 1 while the blocks are stored and back to their values (2 and 5) afterwards,
    and untouched for a small file."""
    path, _ = _submit_line_file(tmp_path)
    settings_sql = (
        "SELECT current_setting('threads')::INT, "
        "current_setting('write_buffer_row_group_count')::INT"
    )

    def load(db: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Ingest the file, then load it again in 30-byte blocks; returns the settings seen
        while the blocks were stored, and before and after the loads."""
        seen: list[tuple[int, int]] = []
        with connect(db) as con:
            init_warehouse(con)
            con.execute("SET threads = 2")
            around = con.execute(settings_sql).fetchall()
            ingest_file(con, "sacct", path, IngestOptions(cluster="c"))

            def blocks() -> Iterator[ParseResult]:
                for result in iter_parse_sacct(path, cluster="c", chunk_bytes=30):
                    seen.extend(con.execute(settings_sql).fetchall())
                    yield result

            again = load_parse_results(
                con, source="sacct", cluster="c", file=path, results=blocks()
            )
            around += con.execute(settings_sql).fetchall()
        assert (again.rows_loaded, again.rows_rejected, again.replaced_ingests) == (7, 3, 1)
        return seen, around

    small, large = tmp_path / "small.duckdb", tmp_path / "large.duckdb"
    seen_small, around_small = load(small)
    monkeypatch.setattr("pipelines.warehouse._loading.LARGE_FILE_BYTES", 1)
    monkeypatch.setattr("pipelines.ingest.LARGE_FILE_BYTES", 1)
    seen_large, around_large = load(large)
    assert set(seen_small) == {(2, 5)}
    assert seen_large and set(seen_large) == {(1, 1)}
    assert around_small == around_large == [(2, 5), (2, 5)]
    for sql in (
        "SELECT * EXCLUDE (ingest_id) FROM raw.slurm_rows ORDER BY line_no",
        "SELECT * EXCLUDE (ingest_id) FROM raw.rejected_rows ORDER BY line_no",
        "SELECT rows_loaded, rows_rejected, info, sha256 FROM raw.ingests",
    ):
        assert _table(small, sql).equals(_table(large, sql))
    sha = _table(large, "SELECT sha256 FROM raw.ingests")["sha256"].item()
    assert sha == hashlib.sha256(path.read_bytes()).hexdigest()


def test_prefetch_closes_the_parser_when_an_insert_fails(tmp_path: Path) -> None:
    """An insert that fails (a piece with a column the raw table lacks) while the next piece is
    parsed ahead: the piece in flight is waited for, the parser closed, the transaction rolled
    back, and the earlier load (7 rows) stays."""
    path, _ = _submit_line_file(tmp_path)
    pieces = list(iter_parse_sacct(path, chunk_bytes=30))
    assert len(pieces) >= 4
    events: list[str] = []

    def parser() -> Iterator[ParseResult]:
        try:
            for i, piece in enumerate(pieces):
                events.append(f"yield {i}")
                if i == 1:  # the second piece cannot be inserted: no such column
                    piece = ParseResult(
                        piece.rows.with_columns(pl.lit(1).alias("no_such_column")),
                        piece.rejected,
                        piece.info,
                    )
                yield piece
        finally:
            events.append("closed")

    db = tmp_path / "w.duckdb"
    with connect(db) as con:
        init_warehouse(con)
        first = ingest_file(con, "sacct", path, IngestOptions(cluster="c"))
        with pytest.raises(Exception, match="no_such_column"):
            load_parse_results(
                con, source="sacct", cluster="c", file=path, results=parser(), prefetch=True
            )
    # piece 0 inserted, piece 1 failed; piece 2 was parsed ahead, then the parser was closed
    assert events == ["yield 0", "yield 1", "yield 2", "closed"]
    ingests = _table(db, "SELECT ingest_id, rows_loaded FROM raw.ingests")
    assert ingests.rows() == [(first.ingest_id, 7)]
    assert _table(db, "SELECT count(*) AS n FROM raw.slurm_rows")["n"].item() == 7
