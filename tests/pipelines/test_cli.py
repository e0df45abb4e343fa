"""The `goodput` command line on real and malformed inputs: exit codes, messages, rejected rows."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.conftest import FIXTURES, HB_FIELDS

runner = CliRunner()


def _sql(db: Path, query: str, fmt: str = "csv") -> str:
    result = runner.invoke(app, ["sql", query, "--db", str(db), "--format", fmt])
    assert result.exit_code == 0, result.output
    return result.stdout


def _rows(db: Path, query: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_sql(db, query))))


pytestmark = pytest.mark.usefixtures("isolated_config")


def test_malformed_line_is_rejected_with_its_line_number(tmp_path: Path) -> None:
    """Line 3 has a field too few: it lands in rejected_rows with its text; lines 2 and 4 load."""
    f = tmp_path / "sacct.psv"
    f.write_text(
        "JobID|JobIDRaw|State|Start|End|AllocTRES\n"
        "10|10|COMPLETED|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=2\n"
        "11|11|COMPLETED|2026-11-02T10:00:00\n"
        "12|12|FAILED|2026-11-02T10:30:00|2026-11-02T11:00:00|gres/gpu:a100=4\n",
        encoding="utf-8",
    )
    db = tmp_path / "x.duckdb"
    result = runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db), "--tz", "UTC"])
    assert result.exit_code == 0, result.output
    assert "2 rows loaded, 1 rejected" in result.output
    rej = _rows(db, "select line_no, raw, reason from rejected_rows")
    assert [r["line_no"] for r in rej] == ["3"]
    assert rej[0]["raw"] == "11|11|COMPLETED|2026-11-02T10:00:00"
    assert rej[0]["reason"]
    got = _rows(db, "select job_id, gpus, gpu_s from jobs order by job_id")
    assert [(r["job_id"], float(r["gpus"]), float(r["gpu_s"])) for r in got] == [
        ("10", 2.0, 7200.0),
        ("12", 4.0, 7200.0),
    ]


def test_snowman_delimited_file_with_trailing_delimiter_loads(tmp_path: Path) -> None:
    """Hábrók's `☃`-delimited, headerless, trailing-delimiter sacct dump loads all 242 lines."""
    db = tmp_path / "x.duckdb"
    result = runner.invoke(
        app,
        ["ingest", "sacct", str(FIXTURES / "hb-jobinfo" / "sacct.txt"), "--db", str(db),
         "--delimiter", "☃", "--fields", HB_FIELDS, "--cluster", "habrok",
         "--tz", "Europe/Amsterdam"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "0 rejected" in result.output
    n = _rows(db, "select count(distinct file || ':' || line_no) as n from slurm_jobs")
    assert n == [{"n": "242"}]
    # Job 7946767 as hb-jobinfo's expected report gives it: v100=1, COMPLETED, used walltime
    # 11:23:23 (41003 s), reserved 1-00:00:00.
    got = _rows(
        db,
        "select gpus, gpu_type, state, run_s, timelimit_s from slurm_jobs "
        "where job_id = '7946767' and step is null",
    )
    assert got == [{"gpus": "1.0", "gpu_type": "v100", "state": "COMPLETED", "run_s": "41003.0",
                    "timelimit_s": "86400"}]  # fmt: skip


def test_missing_file_fails_with_its_name(tmp_path: Path) -> None:
    """A path that does not exist exits non-zero and names the file."""
    result = runner.invoke(
        app, ["ingest", "sacct", str(tmp_path / "nope.psv"), "--db", str(tmp_path / "x.db")]
    )
    assert result.exit_code != 0
    assert "nope.psv" in result.output


def test_file_of_another_kind_fails_clearly(tmp_path: Path) -> None:
    """A Kubernetes event list given as sacct is refused with a message naming the file."""
    f = FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json"
    result = runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(tmp_path / "x.db")])
    assert result.exit_code != 0
    assert "kspan_deploymentUpdateEvents.json" in result.output


def test_k8s_events_and_dcgm_real_files_load(tmp_path: Path) -> None:
    """The real kind-cluster event dump gives 9 events; real dcgm-exporter lines give samples."""
    db = tmp_path / "x.duckdb"
    ev = FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json"
    r1 = runner.invoke(app, ["ingest", "k8s-events", str(ev), "--db", str(db), "--cluster", "kind"])
    assert r1.exit_code == 0, r1.output
    rows = _rows(db, "select reason, count from k8s_events where reason = 'ScalingReplicaSet'")
    assert _rows(db, "select count(*) as n from k8s_events") == [{"n": "9"}]
    assert rows[0]["count"] == "2"
    dcgm = FIXTURES / "dcgm-exporter" / "issue_metrics_pastes.prom"
    r2 = runner.invoke(
        app,
        [
            "ingest",
            "dcgm",
            str(dcgm),
            "--db",
            str(db),
            "--cluster",
            "gpu",
            "--scrape-time",
            "2023-09-15T12:00:00Z",
        ],
    )
    assert r2.exit_code == 0, r2.output
    n = int(_rows(db, "select count(*) as n from dcgm_samples")[0]["n"])
    rejected = int(
        _rows(db, "select count(*) as n from rejected_rows where source = 'dcgm'")[0]["n"]
    )
    assert n > 0 and rejected == 0
    ts = _rows(db, "select distinct ts from dcgm_samples")
    assert [r["ts"] for r in ts] == ["2023-09-15T12:00:00.000000+0000"]


def test_sql_formats(tmp_path: Path) -> None:
    """csv prints a header and NULL as an empty field; json prints a list of records."""
    f = tmp_path / "s.psv"
    f.write_text(
        "JobID|State|Start|End|AllocTRES\n1|RUNNING|2026-11-02T10:00:00|Unknown|gres/gpu=1\n"
    )
    db = tmp_path / "x.duckdb"
    assert runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db)]).exit_code == 0
    out = _sql(db, "select job_id, end_at from jobs")
    assert out.splitlines() == ["job_id,end_at", "1,"]
    js = json.loads(_sql(db, "select job_id, end_at from jobs", fmt="json"))
    assert js == [{"job_id": "1", "end_at": None}]


def test_sql_csv_renders_nested_columns_as_text(tmp_path: Path) -> None:
    """CSV has no nested values: a list of scalars is joined with ',', a struct is JSON text,
    a NULL list is an empty field; slurm_jobs (node_list VARCHAR[]) exports without error."""
    f = tmp_path / "s.psv"
    f.write_text(
        "JobID|State|Start|End|AllocTRES|NodeList\n"
        "1|COMPLETED|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=1|gpu-[001-002]\n"
    )
    db = tmp_path / "x.duckdb"
    assert runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db)]).exit_code == 0
    rows = _rows(
        db,
        "select ['a','b'] as l, {'x': 1, 'y': 'z'} as s, null::varchar[] as n, [[1],[2]] as ll",
    )
    assert rows == [{"l": "a,b", "s": '{"x": 1, "y": "z"}', "n": "", "ll": "[[1], [2]]"}]
    jobs = _rows(db, "select * from slurm_jobs")
    assert len(jobs) == 1 and "node_list" in jobs[0] and jobs[0]["node_list"] != ""


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("create table t(a int)", "read-only"),
        ("insert into raw.ingests select * from raw.ingests", "read-only"),
        ("select * from read_csv('/etc/passwd')", "cannot read files"),
        ("copy (select 1) to '/tmp/goodput_out.csv'", "cannot read files"),
        ("attach '/tmp/other.duckdb' as o", "cannot read files"),
        ("set enable_external_access = true", "settings are locked"),
        ("install httpfs", "refused"),
    ],
)
def test_sql_refusals(tmp_path: Path, query: str, needle: str) -> None:
    """Writes, file reads, COPY, ATTACH, settings changes and extension installs are refused."""
    f = tmp_path / "s.psv"
    f.write_text("JobID|State\n1|PENDING\n")
    db = tmp_path / "x.duckdb"
    assert runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db)]).exit_code == 0
    result = runner.invoke(app, ["sql", query, "--db", str(db)])
    assert result.exit_code != 0
    assert needle in result.output
    assert not Path("/tmp/goodput_out.csv").exists()


def test_empty_input_loads_with_a_warning_and_empty_json_is_an_error(tmp_path: Path) -> None:
    """A 0-byte sacct file loads (exit 0) but stderr warns "no rows found in FILE"; a 0-byte
    k8s-events file is not JSON: a file-level error naming the file (exit 1)."""
    empty = tmp_path / "empty.psv"
    empty.write_bytes(b"")
    db = tmp_path / "x.duckdb"
    res = runner.invoke(app, ["ingest", "sacct", str(empty), "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert f"{empty}: 0 rows loaded, 0 rejected" in res.stdout
    assert f"goodput: warning: no rows found in {empty}" in res.stderr
    ev = tmp_path / "events.json"
    ev.write_bytes(b"")
    res = runner.invoke(app, ["ingest", "k8s-events", str(ev), "--db", str(db)])
    assert res.exit_code == 1
    assert f"goodput: error: {ev}: empty file" in res.stderr


def test_batch_goes_on_past_a_bad_item_and_a_parser_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three event files in one command: the first has a count past 64 bits (that event is a
    rejected row, the file loads), the second makes the parser fail unexpectedly (injected:
    that file is reported by name and not loaded), the third loads. Exit 1 for the fault."""
    import pipelines.ingest

    src = FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json"
    doc = json.loads(src.read_text(encoding="utf-8"))
    doc["items"][2]["count"] = 10**30
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps(doc), encoding="utf-8")
    boom = tmp_path / "boom.json"
    boom.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    real = pipelines.ingest.ingest_file

    def faulty(con, source, path, opts):  # type: ignore[no-untyped-def]
        if Path(path).name == "boom.json":
            raise RuntimeError("injected parser fault")
        return real(con, source, path, opts)

    monkeypatch.setattr(pipelines.ingest, "ingest_file", faulty)
    db = tmp_path / "x.duckdb"
    args = ["ingest", "k8s-events", str(huge), str(boom), str(good), "--db", str(db)]
    result = runner.invoke(app, [*args, "--cluster", "kind"])
    assert result.exit_code == 1
    assert "huge.json: 8 rows loaded, 1 rejected" in result.stdout
    assert "good.json: 9 rows loaded, 0 rejected" in result.stdout
    assert "boom.json: not loaded, unexpected RuntimeError: injected parser fault" in result.stderr
    files = _rows(db, "select distinct file from rejected_rows")
    assert [Path(r["file"]).name for r in files] == ["huge.json"]


def test_first_load_read_again_in_its_clusters_zone_is_not_a_replacement(tmp_path: Path) -> None:
    """The lab capture names its cluster, whose zone differs from the default cluster's: the CLI
    reads it again in that zone. Its first load must not say it replaced an earlier load; the
    second must, and the rows are there once."""
    f = FIXTURES / "slurm-22.05-lab" / "sacct_all.psv"
    db = tmp_path / "x.duckdb"
    first = runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db)])
    assert first.exit_code == 0, first.output
    assert "rows loaded" in first.stdout and "replaced an earlier load" not in first.stdout
    again = runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db)])
    assert "replaced an earlier load" in again.stdout
    assert _rows(db, "select count(*) as n from ingests") == [{"n": "1"}]


def test_a_polars_panic_does_not_abort_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A polars ``PanicException`` is a ``BaseException``, not an ``Exception``: injected in the
    parser of one file (a real mutated input that panics is not kept; the fault is injected),
    it is reported by name and the next file still loads. Exit 1."""
    from polars.exceptions import PanicException

    import pipelines.ingest

    src = FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json"
    panic = tmp_path / "panic.json"
    panic.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    real = pipelines.ingest.ingest_file

    def faulty(con, source, path, opts):  # type: ignore[no-untyped-def]
        if Path(path).name == "panic.json":
            raise PanicException("injected polars panic")
        return real(con, source, path, opts)

    monkeypatch.setattr(pipelines.ingest, "ingest_file", faulty)
    db = tmp_path / "x.duckdb"
    args = ["ingest", "k8s-events", str(panic), str(good), "--db", str(db), "--cluster", "kind"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "panic.json: not loaded, unexpected PanicException: injected polars panic" in (
        result.stderr
    )
    assert "good.json: 9 rows loaded, 0 rejected" in result.stdout


def test_every_row_rejected_exits_1_and_missing_fields_are_named(tmp_path: Path) -> None:
    """A sacct file whose every row is rejected exits 1 naming it; sacct's default field set
    loads (exit 0) and warns, per missing field, what stays empty."""
    bad = tmp_path / "bad.psv"
    bad.write_text(
        "JobID|State|Start|End|AllocTRES\n"
        "1|WEIRD|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=1\n"
        "2|ODD|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=1\n",
        encoding="utf-8",
    )
    db = tmp_path / "x.duckdb"
    res = runner.invoke(app, ["ingest", "sacct", str(bad), "--db", str(db), "--tz", "UTC"])
    assert res.exit_code == 1
    assert "0 rows loaded, 2 rejected" in res.stdout
    assert f"goodput: error: {bad}: every row was rejected (2)" in res.stderr
    # The view goodput sql serves (raw.rejected_rows is refused there).
    assert 'see the reasons with goodput sql "select * from rejected_rows"' in res.stderr
    assert "raw.rejected_rows" not in res.stderr
    shown = runner.invoke(app, ["sql", "select reason from rejected_rows", "--db", str(db)])
    assert shown.exit_code == 0 and "WEIRD" in shown.stdout, shown.output
    default = tmp_path / "default.psv"
    default.write_text(
        "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|\n"
        "101|train|gpu|team-a|8|COMPLETED|0:0|\n",
        encoding="utf-8",
    )
    res = runner.invoke(app, ["ingest", "sacct", str(default), "--db", str(db), "--tz", "UTC"])
    assert res.exit_code == 0, res.output
    assert f"goodput: warning: {default}: missing Start: no allocation starts" in res.stderr
    assert res.stderr.count("goodput: warning:") == 4


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", "sacct-json", "x"],
        ["ingest", "sacct", "x", "--tz", "Mars/Olympus"],
        ["ingest", "dcgm", "x", "--scrape-time", "yesterday"],
    ],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    """The README's exit-code table: a usage error (unknown kind, unknown zone, bad time) is 2,
    one line on stderr."""
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("goodput: error:") == 1


def test_an_inventory_that_is_not_one_stops_the_build_not_the_loads(
    tmp_path: Path, isolated_config: Path
) -> None:
    """The inventory is read by the build after the files are loaded: an inventory file whose
    header names no ``gpus`` column fails the command (exit 1) with the file, line and field,
    and the loaded rows stay loaded (the warehouse is not rebuilt)."""
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "slurm-a.csv").write_text("host,gpu_type\nn1,H100\n", encoding="utf-8")
    f = tmp_path / "sacct.psv"
    f.write_text(
        "JobID|JobIDRaw|State|Start|End|AllocTRES\n"
        "10|10|COMPLETED|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=2\n",
        encoding="utf-8",
    )
    db = tmp_path / "x.duckdb"
    result = runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(db), "--tz", "UTC"])
    assert result.exit_code == 1
    assert "1 rows loaded, 0 rejected" in result.output
    assert "not rebuilt" in result.output
    assert "slurm-a.csv:1 (field gpus): the header names no 'gpus' column" in result.output
    with duckdb.connect(str(db), read_only=True) as con:  # no views: no build has run
        assert con.execute("SELECT count(*) FROM raw.slurm_rows").fetchall() == [(1,)]
