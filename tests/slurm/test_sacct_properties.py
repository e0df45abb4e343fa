"""sacct text parser, property-based: generated rows round-trip, random input never crashes and
every line is accounted for, vectorised GPU counts and host lists agree with their references."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import hostlist
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.slurm._sacct_fields import SLURM_STATES
from pipelines.slurm._sacct_parse import SacctFormatError, gpus_from_tres, parse_sacct
from pipelines.slurm._sacct_values import expand_nodelists

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEADER = "JobID|JobIDRaw|State|Submit|Start|End|Elapsed|AllocTRES|NodeList|JobName"
#: States whose End is never trusted (written out here, not imported, so the test can fail).
NO_END = {"RUNNING", "PENDING", "REQUESTED", "SUSPENDED"}


@dataclass(frozen=True)
class _Row:
    job_id: str
    array: tuple[str, int] | None
    het: tuple[str, int] | None
    step: str | None
    state: str
    cancelled_by: int | None
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    elapsed: int
    gpus: int
    gpu_type: str | None
    nodes: list[str]
    node_text: str
    name: str

    def line(self) -> str:
        state = self.state + (f" by {self.cancelled_by}" if self.cancelled_by is not None else "")
        job = self.job_id + (f".{self.step}" if self.step else "")
        raw = job.split("_")[0].split("+")[0]
        tres = "cpu=1,mem=4G,node=1"
        if self.gpus and self.gpu_type:
            tres += f",gres/gpu:{self.gpu_type}={self.gpus},gres/gpu={self.gpus}"
        elif self.gpus:
            tres += f",gres/gpu={self.gpus}"
        return "|".join(
            [
                job,
                raw,
                state,
                _iso(self.submit, "Unknown"),
                _iso(self.start, "None"),
                _iso(self.end, "Unknown"),
                _duration(self.elapsed),
                tres,
                self.node_text,
                self.name,
            ]
        )


def _iso(value: datetime | None, missing: str) -> str:
    return missing if value is None else value.strftime("%Y-%m-%dT%H:%M:%S")


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


_times = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(2015, 1, 1), max_value=datetime(2030, 12, 31)).map(
        lambda d: d.replace(microsecond=0)
    ),
)
_names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20
).filter(lambda s: s.strip() == s)


@st.composite
def _rows(draw: st.DrawFn) -> _Row:
    base = str(draw(st.integers(1, 10**9)))
    kind = draw(st.sampled_from(["plain", "array", "het"]))
    sub = draw(st.integers(0, 5000))
    job_id = {"plain": base, "array": f"{base}_{sub}", "het": f"{base}+{sub}"}[kind]
    state = draw(st.sampled_from(sorted(SLURM_STATES)))
    prefix = draw(st.sampled_from(["gpu", "node-", "a100gpu"]))
    first = draw(st.integers(1, 500))
    count = draw(st.integers(1, 4))
    nodes = [f"{prefix}{i:03d}" for i in range(first, first + count)]
    node_text = nodes[0] if count == 1 else f"{prefix}[{first:03d}-{first + count - 1:03d}]"
    # Submit ≤ Start ≤ End among the times present (out-of-order times are rejected)
    times = [draw(_times) for _ in range(3)]
    ordered = iter(sorted(t for t in times if t is not None))
    submit, start, end = (None if t is None else next(ordered) for t in times)
    # Elapsed = End − Start − Suspended: no longer than End − Start (a longer one is rejected)
    longest = int((end - start).total_seconds()) if start and end else 400 * 86400
    return _Row(
        job_id=job_id,
        array=(base, sub) if kind == "array" else None,
        het=(base, sub) if kind == "het" else None,
        step=draw(st.sampled_from([None, "batch", "extern", "0", "12"])),
        state=state,
        cancelled_by=draw(st.integers(0, 2**31)) if state == "CANCELLED" else None,
        submit=submit,
        start=start,
        end=end,
        elapsed=draw(st.integers(0, longest)),
        gpus=draw(st.integers(0, 8)),
        gpu_type=draw(st.sampled_from([None, "a100", "h100", "rtx_6000"])),
        nodes=nodes,
        node_text=node_text,
        name=draw(_names),
    )


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


@SETTINGS
@given(st.lists(_rows(), min_size=1, max_size=15))
def test_generated_rows_round_trip(rows: list[_Row]) -> None:
    """Rows written as ``sacct -P`` text parse back to the values they were made from."""
    text = HEADER + "\n" + "\n".join(row.line() for row in rows) + "\n"
    # the generated times run to 2030: an ingest time after them keeps them plausible
    res = parse_sacct("gen.psv", text=text, now=datetime(2031, 1, 1, tzinfo=UTC))
    assert res.rejected.height == 0, res.rejected.to_dicts()
    assert res.rows.height == len(rows)
    for row, got in zip(rows, res.rows.iter_rows(named=True), strict=True):
        assert got["job_id"] == row.job_id
        assert got["step"] == row.step
        assert got["is_allocation"] is (row.step is None)
        assert (got["array_job_id"], got["array_task_id"]) == (row.array or (None, None))
        assert (got["het_job_id"], got["het_job_offset"]) == (row.het or (None, None))
        assert (got["state"], got["cancelled_by_uid"]) == (row.state, row.cancelled_by)
        assert got["submit_at"] == _utc(row.submit)
        assert got["start_at"] == _utc(row.start)
        assert got["end_at"] == (None if row.state in NO_END else _utc(row.end))
        assert got["elapsed_s"] == row.elapsed
        assert got["gpus"] == float(row.gpus)
        assert got["gpu_type"] == (row.gpu_type if row.gpus else None)
        assert got["node_list"] == row.nodes
        assert got["job_name"] == (row.name or None)


def _accounted(res_rows: pl.DataFrame, res_rejected: pl.DataFrame) -> list[int]:
    """Every line number covered by a row or a reject (a pending array's rows share one)."""
    ranges = pl.concat(
        [
            res_rows.select("line_no", "line_end").unique(),
            res_rejected.select("line_no", "line_end"),
        ]
    )
    covered: list[int] = []
    for first, last in ranges.iter_rows():
        covered.extend(range(first, last + 1))
    return covered


_line_parts = st.one_of(
    st.text(alphabet="0123456789_.+[]-%,", max_size=12),
    st.sampled_from(["COMPLETED", "FOO", "CANCELLED by 5", "RUNNING", ""]),
    st.sampled_from(["00:01:02", "1-00:00:00", "bad", "12", ""]),
    st.text(max_size=10),
)
_lines = st.one_of(
    st.lists(_line_parts, min_size=1, max_size=6).map("|".join),
    st.text(max_size=40),
    st.just(""),
)


@SETTINGS
@given(st.lists(_lines, max_size=25))
def test_random_lines_never_crash_and_all_lines_accounted(lines: list[str]) -> None:
    """Random lines under a header: no crash, and rows + rejects + blank lines = every line."""
    text = "JobID|State|Elapsed|JobName\n" + "\n".join(lines)
    try:
        res = parse_sacct("rand.psv", text=text)
    except SacctFormatError:
        return
    covered = _accounted(res.rows, res.rejected)
    assert len(covered) == len(set(covered)), "a line is both a row and a reject"
    total, blank, headers = (res.info[k] for k in ("lines", "blank_lines", "repeated_headers"))
    assert isinstance(total, int) and isinstance(blank, int) and isinstance(headers, int)
    assert len(covered) + blank + headers + 1 == total
    assert all(1 < no <= total for no in covered)


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    """Random bytes given the fields: a SacctFormatError or every line accounted for."""
    path = Path(tmp_path_factory.mktemp("bytes")) / "random.bin"
    path.write_bytes(data)
    try:
        res = parse_sacct(path, fields=["JobID", "State", "JobName"], delimiter="|")
    except SacctFormatError:
        return
    covered = _accounted(res.rows, res.rejected)
    assert len(covered) == len(set(covered))
    lines_total, blank = res.info["lines"], res.info["blank_lines"]
    assert isinstance(lines_total, int) and isinstance(blank, int)
    assert len(covered) + blank == lines_total


_tres_items = st.one_of(
    st.builds("cpu={}".format, st.integers(0, 256)),
    st.builds("mem={}G".format, st.integers(0, 2048)),
    st.builds("gres/gpu={}".format, st.integers(0, 16)),
    st.builds(
        "gres/gpu:{}={}".format,
        st.sampled_from(["a100", "v100", "3g.40gb", "1g.10gb", "7g.80gb", "h100_nvl"]),
        st.integers(0, 16),
    ),
    st.builds("gres/gpumem={}K".format, st.integers(0, 10**8)),
    st.builds("gres/gpuutil={}".format, st.integers(0, 100)),
    st.sampled_from(["gres/gpu=x", "gres/gpu:=2", "node=1", "billing=3"]),
)


@SETTINGS
@given(st.lists(st.lists(_tres_items, max_size=6).map(",".join), min_size=1, max_size=20))
def test_vectorised_gpus_match_scalar(tres_list: list[str]) -> None:
    """The parsed ``gpus`` column equals ``gpus_from_tres`` on every generated AllocTRES that
    is kept; one with a GPU count that is not a whole number (``gres/gpu=x``) is rejected."""
    text = "JobID|AllocTRES\n" + "".join(f"{i}|{t}\n" for i, t in enumerate(tres_list))
    res = parse_sacct("tres.psv", text=text)
    bad = {i for i, t in enumerate(tres_list) if "gres/gpu=x" in t.split(",")}
    assert {no - 2 for no in res.rejected["line_no"].to_list()} == bad
    assert set(res.rejected["field"].to_list()) <= {"AllocTRES"}
    got = res.rows["gpus"].to_list()
    want = [gpus_from_tres(t) for i, t in enumerate(tres_list) if i not in bad]
    assert got == pytest.approx(want)


_host_items = st.one_of(
    st.from_regex(r"[a-z]{1,4}[0-9]{0,3}", fullmatch=True),
    st.builds(
        "{}[{}]{}".format,
        st.from_regex(r"[a-z\-]{0,4}", fullmatch=True),
        st.lists(
            st.one_of(
                st.from_regex(r"0?[0-9]{1,3}", fullmatch=True),
                st.builds(
                    lambda a, n, w: f"{a:0{w}d}-{a + n:0{w}d}",
                    st.integers(0, 120),
                    st.integers(0, 30),
                    st.integers(1, 3),
                ),
            ),
            min_size=1,
            max_size=3,
        ).map(",".join),
        st.from_regex(r"(-ib)?", fullmatch=True),
    ),
)


@SETTINGS
@given(st.lists(st.lists(_host_items, min_size=1, max_size=4).map(",".join), max_size=15))
def test_vectorised_host_lists_match_python_hostlist(raws: list[str]) -> None:
    """The vectorised expansion equals python-hostlist's ``expand_hostlist`` on every list."""
    got = expand_nodelists(pl.Series(raws, dtype=pl.String))
    for raw, (nodes, error) in zip(raws, got.iter_rows(), strict=True):
        try:
            want = hostlist.expand_hostlist(raw)
        except hostlist.BadHostlist:
            assert nodes is None and error is not None
        else:
            assert (nodes, error) == (want, None)
