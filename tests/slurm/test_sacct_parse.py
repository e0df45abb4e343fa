"""sacct text parser: real peer-suite inputs (XDMoD, Hábrók, reportseff, jobstats, a Slurm 22.05
lab run, issue pastes), row rules, rejects, DST and the layout checks."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError
from pipelines.slurm._sacct_parse import (
    SLURM_ROW_SCHEMA,
    SacctFormatError,
    gpus_from_tres,
    parse_sacct,
)
from tests.conftest import HB_FIELDS as HB_SPEC
from tests.conftest import XDMOD_FIELDS as XDMOD_SPEC

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
XDMOD = FIXTURES / "xdmod"
HB = FIXTURES / "hb-jobinfo"
LAB = FIXTURES / "slurm-22.05-lab"
ISSUES = FIXTURES / "issue-snippets" / "sacct_output_pasted_in_issues.txt"


def _fields(spec: str) -> list[str]:
    return spec.split(",")


XDMOD_FIELDS = _fields(XDMOD_SPEC)
HB_FIELDS = _fields(HB_SPEC)
#: reportseff's ``--format`` request (alphabetical), per fixture shape.
RS_11 = (
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,ReqMem,State,Timelimit,TotalCPU"
)
RS_NOTIME = (
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,NTasks,ReqMem,State,TotalCPU"
)
RS_12 = (
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,NTasks,ReqMem,State,Timelimit,"
    "TotalCPU"
)
RS_SUBMITLINE = (
    "AdminComment,AllocCPUS,Elapsed,JobID,JobIDRaw,MaxRSS,NNodes,NTasks,ReqMem,State,SubmitLine,"
    "Timelimit,TotalCPU"
)


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, sec: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, sec, tzinfo=UTC)


def _epoch(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


def _reportseff(*sources: str) -> str:
    """The reportseff sacct lines extracted from the given ``file:line`` sources, in order."""
    lines = (FIXTURES / "reportseff" / "extracted_sacct_lines.tsv").read_text().splitlines()
    picked = [line.split("\t", 1)[1] for line in lines if line.split("\t", 1)[0] in sources]
    return "\n".join(picked) + "\n"


def _issue_block(title: str) -> str:
    """The sacct lines pasted under the ``## <title>`` heading of the issue-snippets file."""
    text = ISSUES.read_text()
    block = text.split(f"## {title}", 1)[1].split("\n", 1)[1]
    lines: list[str] = []
    for line in block.split("\n"):
        if line.startswith("## ") and not lines:
            continue  # the heading's continuation lines
        if not line.strip() or line.startswith("## "):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- XDMoD


def test_xdmod_accounting_logs_match_expected_records() -> None:
    """XDMoD's 4 expected records: epoch times, elapsed, timelimit, GPUs, states, names agree."""
    res = parse_sacct(XDMOD / "shredder_slurm_input" / "accounting-logs.log", fields=XDMOD_FIELDS)
    expected = json.loads((XDMOD / "shredder_slurm_output" / "accounting-logs.json").read_text())
    assert res.rejected.height == 0
    assert res.rows.height == len(expected) == 4
    for row, want in zip(res.rows.iter_rows(named=True), expected, strict=True):
        assert row["job_id"] == want["job_id"]
        assert row["job_id_raw"] == want["job_id_raw"]
        assert _epoch(row["submit_at"]) == want["submit_time"]
        assert _epoch(row["eligible_at"]) == want["eligible_time"]
        assert _epoch(row["start_at"]) == want["start_time"]
        assert _epoch(row["end_at"]) == want["end_time"]
        assert row["elapsed_s"] == want["elapsed"]
        assert row["timelimit_s"] == want["timelimit"]
        assert row["gpus"] == want["ngpus"]
        assert row["state_raw"] == want["state"]
        assert row["node_list_raw"] == want["node_list"]
        assert row["job_name"] == want["job_name"]
        assert row["user_name"] == want["user_name"]
        assert row["uid"] == int(want["uid_number"])
        assert row["account"] == want["account_name"]
        assert row["partition"] == (want["partition_name"] or None)
        assert row["nnodes"] == int(want["nnodes"])
        assert row["ncpus"] == int(want["ncpus"])
        assert row["exit_code"] == int(want["exit_code"].split(":")[0])


def test_xdmod_cancelled_by_and_timelimit_note() -> None:
    """``CANCELLED by 102216`` splits into state and uid; an empty Timelimit is NULL, noted."""
    rows = parse_sacct(
        XDMOD / "shredder_slurm_input" / "accounting-logs.log", fields=XDMOD_FIELDS
    ).rows
    cancelled = rows.row(1, named=True)
    assert (cancelled["state"], cancelled["cancelled_by_uid"]) == ("CANCELLED", 102216)
    assert (cancelled["req_mem_mb"], cancelled["req_mem_per"]) == (48000.0, "node")
    gpu_only = rows.row(3, named=True)
    assert (gpu_only["timelimit_s"], gpu_only["timelimit_note"]) == (None, "empty")
    assert gpu_only["node_list"] == ["cpn-k16-35-01", "cpn-k16-37-01"]


def test_xdmod_node_list_expanded() -> None:
    """The 32-node list with ``d09n04s[01-02]`` and ``d13n[03,05,07-08,16]`` expands to 32 hosts."""
    row = parse_sacct(
        XDMOD / "shredder_slurm_input" / "accounting-logs.log", fields=XDMOD_FIELDS
    ).rows.row(0, named=True)
    assert len(row["node_list"]) == 32 == row["nnodes"]
    assert row["node_list"][7:9] == ["d09n04s01", "d09n04s02"]
    assert row["node_list"][-5:] == ["d13n03", "d13n05", "d13n07", "d13n08", "d13n16"]


def test_xdmod_array_task_lists() -> None:
    """Each array row expands to XDMoD's expected task-id list, ``A_T`` ids, one line number."""
    res = parse_sacct(
        XDMOD / "shredder_slurm_input" / "accounting-logs-with-job-arrays.log",
        fields=XDMOD_FIELDS,
    )
    expected = json.loads(
        (XDMOD / "shredder_slurm_output" / "accounting-logs-with-job-arrays.json").read_text()
    )
    tasks = res.rows.group_by("line_no", maintain_order=True).agg("array_task_id")
    assert tasks["array_task_id"].to_list() == expected
    assert res.rows["array_job_id"].unique().to_list() == ["4103947"]
    assert res.rows.filter(pl.col("line_no") == 2)["job_id"].to_list() == [
        "4103947_1",
        "4103947_2",
        "4103947_3",
    ]
    assert res.info["array_rows_expanded"] == 22


def test_xdmod_non_ended_states_kept_without_end() -> None:
    """XDMoD skips RUNNING/PENDING; we keep them, and their present End times become NULL."""
    res = parse_sacct(
        XDMOD / "shredder_slurm_input" / "non-ended-job-state.log", fields=XDMOD_FIELDS
    )
    assert res.rows["state"].to_list() == ["RUNNING", "PENDING"]
    assert res.rows["end_at"].to_list() == [None, None]
    assert res.rows["start_at"].to_list() == [_utc(2020, 6, 30, 19, 24, 8), None]
    assert res.rejected.height == 0


def test_xdmod_unknown_states_rejected_with_reason() -> None:
    """XDMoD warns on FOO/BAR; we reject both lines, naming the state and the field."""
    res = parse_sacct(XDMOD / "shredder_slurm_input" / "unknown-job-state.log", fields=XDMOD_FIELDS)
    assert res.rows.height == 0
    assert res.rejected.select("line_no", "field", "reason").rows() == [
        (1, "State", "unknown job state 'FOO'"),
        (2, "State", "unknown job state 'BAR'"),
    ]


def test_xdmod_utf8_job_name() -> None:
    """A multi-byte UTF-8 job name survives: ``aàb``."""
    rows = parse_sacct(
        XDMOD / "shredder_slurm_input" / "utf8-multibyte-chars.log", fields=XDMOD_FIELDS
    ).rows
    expected = json.loads(
        (XDMOD / "shredder_slurm_output" / "utf8-multibyte-chars.json").read_text()
    )
    assert rows["job_name"].to_list() == [expected[0]["job_name"]] == ["aàb"]


ALLOC_TRES_PAIRS = json.loads((XDMOD / "alloc-tres-gpu-count.json").read_text())


@pytest.mark.parametrize(("tres", "gpus"), ALLOC_TRES_PAIRS)
def test_xdmod_alloc_tres_gpu_count(tres: str, gpus: int) -> None:
    """XDMoD's AllocTRES → GPU pairs hold for the scalar function and the parsed column."""
    assert gpus_from_tres(tres) == float(gpus)
    text = f"JobID|State|AllocTRES\n1|COMPLETED|{tres}\n"
    assert parse_sacct("pairs.psv", text=text).rows["gpus"].to_list() == [float(gpus)]


# --------------------------------------------------------------------------- GPUs


@pytest.mark.parametrize(
    ("tres", "gpus", "gpu_type"),
    [
        ("billing=8,cpu=8,gres/gpu:v100=1,gres/gpu=1,mem=10G,node=1", 1.0, "v100"),
        ("billing=112,cpu=36,gres/gpu:rtx2080ti=4,gres/gpu=4,mem=180G,node=1", 4.0, "rtx2080ti"),
        ("cpu=1,gres/gpu:3g.40gb=1,gres/gpu=1,node=1", 3 / 7, None),
        ("cpu=1,gres/gpu:1g.10gb=2,node=1", 2 / 7, None),
        ("cpu=2,gres/gpu:a100=1,gres/gpu:h100=2,node=1", 3.0, None),
        ("cpu=1,gres/gpumem=20500736K,gres/gpuutil=90,node=1", 0.0, None),
        ("", 0.0, None),
    ],
)
def test_gpu_rules(tres: str, gpus: float, gpu_type: str | None) -> None:
    """Untyped wins, typed sum otherwise, MIG counts K/7 and overrides, gpumem/gpuutil ignored."""
    assert gpus_from_tres(tres) == pytest.approx(gpus)
    row = parse_sacct("g.psv", text=f"JobID|AllocTRES|ReqTRES\n1|{tres}|{tres}\n").rows.row(
        0, named=True
    )
    assert row["gpus"] == pytest.approx(gpus)
    assert row["req_gpus"] == pytest.approx(gpus)
    assert row["gpu_type"] == gpu_type


def test_gpus_from_tres_none() -> None:
    """No TRES string at all gives None, not 0."""
    assert gpus_from_tres(None) is None


# --------------------------------------------------------------------------- Hábrók


def _hb() -> pl.DataFrame:
    res = parse_sacct(HB / "sacct.txt", fields=HB_FIELDS)
    assert res.rejected.height == 0
    return res.rows


def test_hb_loads_every_line() -> None:
    """All 242 ``☃``-delimited lines with a trailing delimiter load, none rejected."""
    res = parse_sacct(HB / "sacct.txt", fields=HB_FIELDS)
    assert res.rows.height == 242
    assert res.rejected.height == 0
    assert (res.info["format"], res.info["delimiter"], res.info["header"]) == (
        "parsable",
        "☃",
        False,
    )


def test_hb_state_counts() -> None:
    """State counts match the file: CANCELLED 19 (8 ``by <uid>``), COMPLETED 182, FAILED 17 …"""
    rows = _hb()
    counts = dict(rows.group_by("state").len().rows())
    assert counts == {
        "COMPLETED": 182,
        "FAILED": 17,
        "CANCELLED": 19,
        "RUNNING": 9,
        "PENDING": 7,
        "TIMEOUT": 7,
        "NODE_FAIL": 1,
    }
    assert rows["cancelled_by_uid"].drop_nulls().len() == 8


def _expected_report(job: str) -> dict[str, str]:
    text = (HB / "expected_output" / job).read_text()
    return {k.strip(): v.strip() for k, v in re.findall(r"^([^:]+?)\s*:\s?(.*)$", text, re.M)}


def _walltime(text: str) -> int:
    days, _, clock = text.rpartition("-")
    h, m, s = (int(x) for x in clock.split(":"))
    return (int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s


@pytest.mark.parametrize(
    "job", ["7965768", "7946767", "8298012", "2344446_26", "5908801_3", "2250708"]
)
def test_hb_spot_check_against_jobinfo_report(job: str) -> None:
    """Allocated GPUs, reserved/used walltime, state and node count agree with jobinfo's report."""
    rows = _hb().filter(pl.col("job_id") == job)
    alloc = rows.filter("is_allocation").row(0, named=True)
    report = _expected_report(job)
    assert alloc["state"] == report["State"].split()[0]
    assert alloc["timelimit_s"] == _walltime(report["Reserved walltime"])
    assert rows["elapsed_s"].max() == _walltime(report["Used walltime"])
    assert alloc["nnodes"] == int(report["Number of Nodes"])
    assert alloc["ncpus"] == int(report["Cores"])
    if report["Allocated GPUs"] == "--":
        assert alloc["gpus"] == 0.0
    else:
        gpu_type, count = report["Allocated GPUs"].split("=")
        assert (alloc["gpu_type"], alloc["gpus"]) == (gpu_type, float(count))


def test_hb_cancelled_before_start() -> None:
    """4047445: Start ``None`` → NULL, ``None assigned`` → no nodes, cancelled by uid 10290820."""
    row = _hb().filter(pl.col("job_id") == "4047445").row(0, named=True)
    assert row["start_at"] is None
    assert row["end_at"] == _utc(2023, 9, 1, 14, 55, 57)
    assert (row["node_list_raw"], row["node_list"]) == ("None assigned", [])
    assert (row["state"], row["cancelled_by_uid"]) == ("CANCELLED", 10290820)


def test_hb_steps_and_extra() -> None:
    """Steps get ``step`` and no allocation flag; unmapped fields land in ``extra`` as JSON."""
    rows = _hb().filter(pl.col("job_id") == "7965768")
    assert rows["step"].to_list() == [None, "batch", "extern"]
    assert rows["is_allocation"].to_list() == [True, False, False]
    extra = json.loads(rows["extra"][1])
    assert extra["MaxRSS"] == "1294440K"
    assert "gres/gpuutil=90" in extra["TRESUsageInMax"]


# --------------------------------------------------------------------------- reportseff


def test_reportseff_caret_delimiter_elapsed_and_states() -> None:
    """``^|^`` lines (trailing delimiter) give reportseff's asserted job, state and elapsed."""
    res = parse_sacct(
        "rs.txt",
        text=_reportseff("conftest.py:397", "conftest.py:405", "conftest.py:425"),
        fields=RS_12.split(","),
    )
    assert res.info["delimiter"] == "^|^"
    assert res.info["format"] == "parsable"
    alloc = res.rows.filter("is_allocation")
    assert alloc.select("job_id", "state", "elapsed_s").rows() == [
        ("24418435", "COMPLETED", 5262),  # 01:27:42
        ("23000233", "CANCELLED", 0),
        ("23000381", "FAILED", 12),
    ]
    assert alloc["cancelled_by_uid"].to_list() == [None, 129319, None]
    assert alloc["timelimit_s"].to_list() == [10800, 518400, 0]


def test_reportseff_array_ids() -> None:
    """Array task ``24220929_421`` has JobIDRaw ``24221219``; the PENDING task keeps its id."""
    rows = parse_sacct(
        "rs.txt",
        text=_reportseff("conftest.py:409", "conftest.py:417"),
        fields=RS_NOTIME.split(","),
    ).rows
    assert rows.select("job_id", "job_id_raw", "array_job_id", "array_task_id", "step").rows() == [
        ("24220929_421", "24221219", "24220929", 421, None),
        ("24220929_421", "24221219", "24220929", 421, "batch"),
        ("24220929_421", "24221219", "24220929", 421, "extern"),
        ("24220929_431", "24221220", "24220929", 431, None),
        ("24220929_431", "24221220", "24220929", 431, "batch"),
        ("24220929_431", "24221220", "24220929", 431, "extern"),
    ]
    assert rows["state"].to_list()[3] == "PENDING"
    assert rows["elapsed_s"].to_list()[0] == 574  # 00:09:34


def test_reportseff_pipe_lines_long_elapsed_and_unlimited() -> None:
    """``|`` lines: ``12-14:16:39`` elapsed, ``UNLIMITED`` timelimit noted, ``312.50G`` ReqMem."""
    rows = parse_sacct(
        "rs.txt",
        text=_reportseff("conftest.py:348", "conftest.py:351", "conftest.py:139"),
        fields=RS_11.split(","),
    ).rows
    first = rows.filter(pl.col("job_id") == "6196869").row(0, named=True)
    assert first["elapsed_s"] == 12 * 86400 + 14 * 3600 + 16 * 60 + 39
    assert (first["timelimit_s"], first["timelimit_note"]) == (None, "UNLIMITED")
    assert (first["req_mem_mb"], first["req_mem_per"]) == (191846.0, "node")
    multi_node = rows.filter((pl.col("job_id") == "8205048") & pl.col("is_allocation"))
    assert multi_node["req_mem_mb"].to_list() == [312.5 * 1024] * 2
    assert multi_node["elapsed_s"].to_list() == [146, 146]


def test_reportseff_energy_tres_out_in_extra() -> None:
    """An unmapped field (TRESUsageOutTot) is kept in ``extra``; 12 rows of 4 array tasks."""
    fields = RS_12.replace("State,", "State,TRESUsageOutTot,").split(",")
    rows = parse_sacct("rs.txt", text=_reportseff("test_reportseff.py:887"), fields=fields).rows
    assert rows.height == 12
    assert rows["array_task_id"].unique().sort().to_list() == [1, 2, 3, 4]
    assert json.loads(rows["extra"][1])["TRESUsageOutTot"] == "energy=33,fs/disk=0"


# --------------------------------------------------------------------------- jobstats


def _jobstats_cases() -> list[tuple[str, str]]:
    text = (FIXTURES / "jobstats" / "test_jobstats_sacct_lines.txt").read_text()
    cases = []
    for block in text.strip().split("\n\n"):
        name, header, row = block.strip().split("\n")
        cases.append((name.removeprefix("# "), f"{header}\n{row}\n"))
    return cases


def test_jobstats_epoch_times() -> None:
    """Epoch Start/End (``SLURM_TIME_FORMAT=%s``) parse; RUNNING's End ``Unknown`` is NULL."""
    cases = dict(_jobstats_cases()[:2])
    running = parse_sacct("js.psv", text=cases["test_jobstats.py::simple_cpu_job"]).rows
    assert running.select("job_id", "cluster", "state", "start_at", "end_at").row(0) == (
        "10920562",
        "tiger2",
        "RUNNING",
        datetime.fromtimestamp(1730212549, UTC),
        None,
    )
    timeout = parse_sacct("js.psv", text=cases["test_jobstats.py::cpu_total_time_missing"]).rows
    assert [_epoch(timeout["start_at"][0]), _epoch(timeout["end_at"][0])] == [
        1690927903,
        1690964225,
    ]
    assert timeout["timelimit_s"].to_list() == [600 * 60]  # TimelimitRaw counts minutes


def test_jobstats_all_cases_gpus() -> None:
    """All 16 cases parse; ``gres/gpu=1`` counts before or after ``node=1`` in AllocTRES."""
    gpus = {}
    for _, text in _jobstats_cases():
        res = parse_sacct("js.psv", text=text)
        assert res.rejected.height == 0
        row = res.rows.row(0, named=True)
        gpus[row["job_id"]] = row["gpus"]
    assert gpus == {
        "10920562": 0.0,
        "49589697": 0.0,
        "60155093": 1.0,
        "845136": 1.0,
        "46915114": 1.0,
    }


# --------------------------------------------------------------------------- Slurm 22.05 lab


def test_lab_sacct_all_loads() -> None:
    """``--format=ALL`` (109 fields, header): 91 rows, 44 allocations of 43 jobs, no rejects."""
    res = parse_sacct(LAB / "sacct_all.psv")
    assert (res.info["header"], res.info["format"]) == (True, "parsable2")
    fields = res.info["fields"]
    assert isinstance(fields, list)
    assert len(fields) == 109
    assert fields[:3] == ["Account", "AdminComment", "AllocCPUS"]
    assert res.rejected.height == 0
    rows = res.rows
    assert rows.schema == pl.Schema(SLURM_ROW_SCHEMA)
    assert rows.height == 91
    alloc = rows.filter("is_allocation")
    assert (alloc.height, alloc["job_id"].n_unique()) == (44, 43)
    assert dict(alloc.group_by("state").len().rows()) == {
        "COMPLETED": 37,
        "FAILED": 4,
        "TIMEOUT": 1,
        "CANCELLED": 1,
        "REQUEUED": 1,
    }
    assert dict(rows.group_by("step").len().rows()) == {None: 44, "batch": 43, "0": 2, "1": 2}
    assert rows["cluster"].unique().to_list() == ["lab"]
    assert alloc["gpus"].sum() == 174.0


def test_lab_reserved_signal_submitline() -> None:
    """Reserved → planned_s; ExitCode ``0:9`` → signal 9; SubmitLine with spaces kept in extra."""
    rows = parse_sacct(LAB / "sacct_all.psv").rows.filter("is_allocation")
    job5 = rows.filter(pl.col("job_id") == "5").row(0, named=True)
    assert (job5["planned_s"], job5["gpus"], job5["node_list"]) == (
        88,
        16.0,
        ["gpu-001", "gpu-002"],
    )
    job7 = rows.filter(pl.col("job_id") == "7").row(0, named=True)
    assert (job7["state"], job7["exit_code"], job7["signal"]) == ("FAILED", 0, 9)
    submit_line = json.loads(rows.filter(pl.col("job_id") == "1")["extra"][0])["SubmitLine"]
    assert submit_line.startswith("sbatch --parsable --chdir=/tmp -o ")
    assert submit_line.endswith("--wrap=echo start; sleep 300")


def test_lab_array_tasks_and_never_started() -> None:
    """Array ``9_N`` tasks keep distinct JobIDRaw; job 27 never ran: no nodes, 64 GPUs asked."""
    rows = parse_sacct(LAB / "sacct_all.psv").rows.filter("is_allocation")
    tasks = rows.filter(pl.col("array_job_id") == "9")
    assert tasks.select("job_id", "job_id_raw").rows()[-2:] == [("9_6", "38"), ("9_7", "9")]
    job27 = rows.filter(pl.col("job_id") == "27").row(0, named=True)
    assert (job27["node_list"], job27["gpus"], job27["req_gpus"]) == ([], 0.0, 64.0)


# --------------------------------------------------------------------------- row rules


HEADER = "JobID|State|Start|End|Elapsed|JobName"


def test_malformed_line_rejected_rest_loads() -> None:
    """A line with too few fields is rejected with its line number and the counts."""
    text = (
        f"{HEADER}\n"
        "1|COMPLETED|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|a\n"
        "2|COMPLETED|2024-01-01T00:00:00\n"
        "3|FAILED|2024-01-01T00:00:00|2024-01-01T00:00:05|00:00:05|c\n"
    )
    res = parse_sacct("m.psv", text=text)
    assert res.rows["job_id"].to_list() == ["1", "3"]
    assert res.rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert res.rejected.select("line_no", "line_end", "raw", "reason").rows() == [
        (3, 3, "2|COMPLETED|2024-01-01T00:00:00", "expected 6 fields, found 3")
    ]


def test_unparseable_values_rejected_naming_field() -> None:
    """Bad time, duration and ExitCode values reject their rows, naming field and value."""
    text = (
        "JobID|Start|Elapsed|ExitCode|State\n"
        "1|yesterday|00:00:01|0:0|COMPLETED\n"
        "2|2024-01-01T00:00:00|-0:00:16|0:0|COMPLETED\n"
        "3|2024-01-01T00:00:00|00:00:01|x|COMPLETED\n"
        "4|2024-01-01T00:00:00|00:00:01|0:0|COMPLETED\n"
    )
    res = parse_sacct("v.psv", text=text)
    assert res.rows["job_id"].to_list() == ["4"]
    assert res.rejected.select("line_no", "field", "reason").rows() == [
        (2, "Start", "unparseable Start time 'yesterday'"),
        (3, "Elapsed", "unparseable Elapsed '-0:00:16'"),
        (4, "ExitCode", "unparseable ExitCode 'x'"),
    ]


def test_pipe_in_last_field_joined() -> None:
    """A ``|`` inside JobName (the last field) stays in the name."""
    text = f"{HEADER}\n1|COMPLETED|||00:00:01|train|eval|v2\n"
    res = parse_sacct("p.psv", text=text)
    assert res.rows["job_name"].to_list() == ["train|eval|v2"]
    assert res.info["surplus_joined"] == 1


def test_surplus_fields_rejected_when_last_is_not_text() -> None:
    """Too many fields with a non-text last field is a reject, not a silent shift."""
    res = parse_sacct("s.psv", text="JobID|State|Elapsed\n1|COMPLETED|x|00:00:01\n")
    assert res.rows.height == 0
    assert res.rejected["reason"].to_list() == ["expected 3 fields, found 4"]


def test_truncated_fixed_width_id_rejected_with_hint() -> None:
    """``715219_23.b+`` (sonar #180) is rejected, telling the user to run ``sacct -P``."""
    text = "JobID|JobName|State\n715219_23|array_job|COMPLETED\n715219_23.b+|batch|COMPLETED\n"
    res = parse_sacct("t.psv", text=text)
    assert res.rows["job_id"].to_list() == ["715219_23"]
    reason = res.rejected.row(0, named=True)
    assert (reason["line_no"], reason["field"]) == (3, "JobID")
    assert "sacct -P / --parsable2" in reason["reason"]
    assert "715219_23.b+" in reason["reason"]


def test_multi_line_submitline_joined() -> None:
    """reportseff #63: a newline inside SubmitLine joins two lines into one record."""
    text = _issue_block('troycomi/reportseff#63 "Multi-line SubmitLine breaks parsing"')
    res = parse_sacct("ml.txt", text=text, fields=RS_SUBMITLINE.split(","))
    assert res.rejected.height == 0
    assert res.rows.select("line_no", "line_end", "step", "timelimit_s").rows() == [
        (1, 2, None, 72000),
        (3, 4, "interactive", None),
        (5, 5, "extern", None),
    ]
    submit = json.loads(res.rows["extra"][0])["SubmitLine"]
    assert submit == "srun  --interactive --pty bash -c echo hello &&\necho goodbye"
    assert res.info["joined_records"] == 2


def test_short_line_not_joined_when_count_does_not_fit() -> None:
    """Two short lines that do not add up to one record are both rejected on their own."""
    text = "JobID|State|Elapsed|JobName\n1|COMPLETED\n2|COMPLETED|00:00:01|ok\n3\n"
    res = parse_sacct("sh.psv", text=text)
    assert res.rows["job_id"].to_list() == ["2"]
    assert res.rejected["line_no"].to_list() == [2, 4]


def test_pending_array_with_throttle_expands() -> None:
    """seff-array #15: ``123456_[9201-10000%500]`` → 800 PENDING tasks, throttle 500."""
    text = _issue_block("ycrc/seff-array#15")
    fields = (
        "JobID,JobName,Partition,Elapsed,ReqMem,NNodes,Timelimit,State,TotalCPU,User,Group,"
        "Cluster,ExitCode"
    )
    rows = parse_sacct("a.txt", text=text, fields=fields.split(",")).rows
    assert rows.height == 800
    assert rows["array_task_id"].to_list() == list(range(9201, 10001))
    assert rows["array_throttle"].unique().to_list() == [500]
    assert rows["state"].unique().to_list() == ["PENDING"]
    assert rows["job_id"][0] == "123456_9201"
    assert rows["line_no"].unique().to_list() == [1]


def test_het_job_ids() -> None:
    """``H+O`` het components and their steps get het_job_id / het_job_offset."""
    text = "JobID|State\n77+0|COMPLETED\n77+1|COMPLETED\n77+1.0|COMPLETED\n"
    rows = parse_sacct("h.psv", text=text).rows
    assert rows.select("job_id", "het_job_id", "het_job_offset", "step").rows() == [
        ("77+0", "77", 0, None),
        ("77+1", "77", 1, None),
        ("77+1", "77", 1, "0"),
    ]


def test_requeued_duplicates_kept() -> None:
    """reportseff #25 (``sacct -D``): every requeued allocation of 235929 is its own row."""
    text = _issue_block('troycomi/reportseff#25 "List duplicated jobs"')
    rows = parse_sacct("rq.txt", text=text, fields=RS_11.split(","), delimiter="|").rows
    alloc = rows.filter("is_allocation")
    assert alloc["state"].to_list() == ["REQUEUED"] * 4
    assert alloc["elapsed_s"].to_list() == [3889, 4473, 6122, 2153]


def test_times_with_offset_and_epoch_and_tokens() -> None:
    """ISO with offset, ``Z``, epoch and ``Unknown``/``None``/empty all parse to UTC or NULL."""
    text = (
        "JobID|Submit|Start|End|Eligible\n"
        "1|2024-03-01T10:00:00+02:00|2024-03-01T08:30:00Z|1709283600|Unknown\n"
        "2|None||2024-03-01T09:00:00|2024-03-01T09:00:00\n"
    )
    rows = parse_sacct("t.psv", text=text, tz="Europe/Amsterdam").rows
    first = rows.row(0, named=True)
    assert first["submit_at"] == _utc(2024, 3, 1, 8, 0, 0)
    assert (first["start_at"], first["end_at"], first["eligible_at"]) == (
        _utc(2024, 3, 1, 8, 30, 0),
        _utc(2024, 3, 1, 9, 0, 0),
        None,
    )
    second = rows.row(1, named=True)
    assert (second["submit_at"], second["start_at"]) == (None, None)
    assert second["end_at"] == _utc(2024, 3, 1, 8, 0, 0)  # CET = UTC+1


def test_times_with_a_space_for_t() -> None:
    """``SLURM_TIME_FORMAT="%F %T"`` (strftime: a space between date and time), with and
    without ``%z``, reads as the ``T`` forms do; a value with no time, or two spaces, is still
    rejected naming its line and field. Amsterdam in November is UTC+1: local 09:00 = 08:00Z;
    ``+0100`` likewise; ``-0500`` 09:00 = 14:00Z."""
    text = (
        "JobID|Submit|Eligible|Start|End\n"
        "1|2026-11-02 09:00:00|2026-11-02 09:00:00|2026-11-02 10:00:00|2026-11-02 10:30:00\n"
        "2|2026-11-02 09:00:00+0100|2026-11-02T09:00:00+01:00|2026-11-02 10:00:00+01:00|"
        "2026-11-02 10:30:00\n"
        "3|2026-11-02 09:00:00-0500|2026-11-02 09:00:00|2026-11-02 15:00:00|2026-11-02 16:00:00\n"
        "4|2026-11-02  09:00:00|2026-11-02 09:00:00|2026-11-02 10:00:00|2026-11-02 10:30:00\n"
        "5|2026-11-02 |2026-11-02 09:00:00|2026-11-02 10:00:00|2026-11-02 10:30:00\n"
    )
    res = parse_sacct("sp.psv", text=text, tz="Europe/Amsterdam")
    got = {r["job_id"]: r for r in res.rows.iter_rows(named=True)}
    assert sorted(got) == ["1", "2", "3"]
    assert [got["1"][c] for c in ("submit_at", "eligible_at", "start_at", "end_at")] == [
        _utc(2026, 11, 2, 8), _utc(2026, 11, 2, 8), _utc(2026, 11, 2, 9), _utc(2026, 11, 2, 9, 30)
    ]  # fmt: skip
    assert [got["2"][c] for c in ("submit_at", "eligible_at", "start_at")] == [
        _utc(2026, 11, 2, 8), _utc(2026, 11, 2, 8), _utc(2026, 11, 2, 9)
    ]  # fmt: skip
    assert got["3"]["submit_at"] == _utc(2026, 11, 2, 14)
    rejected = res.rejected.select("line_no", "field", "reason").rows()
    assert rejected == [
        (5, "Submit", "unparseable Submit time '2026-11-02  09:00:00'"),
        (6, "Submit", "unparseable Submit time '2026-11-02 '"),
    ]


def test_dst_ambiguous_and_nonexistent_new_york() -> None:
    """New York: 01:30 on 7 Nov 2021 → earliest (EDT); 02:30 on 14 Mar 2021 → shifted forward."""
    # Eligible, not Start: the odd times are out of Submit ≤ Start ≤ End order, which rejects
    text = (
        "JobID|Submit|Eligible|End\n"
        "1|2021-11-07T01:30:00|2021-03-14T02:30:00|2021-06-01T00:00:00\n"
        "2|2021-11-07T00:30:00|2021-11-07T01:59:59|2021-11-07T02:00:00\n"
    )
    res = parse_sacct("dst.psv", text=text, tz="America/New_York")
    first = res.rows.row(0, named=True)
    assert first["submit_at"] == _utc(2021, 11, 7, 5, 30)  # 01:30 EDT
    assert first["eligible_at"] == _utc(2021, 3, 14, 7, 30)  # read as 02:30 EST = 03:30 EDT
    assert first["end_at"] == _utc(2021, 6, 1, 4, 0)
    second = res.rows.row(1, named=True)
    assert second["eligible_at"] == _utc(2021, 11, 7, 5, 59, 59)
    assert second["end_at"] == _utc(2021, 11, 7, 7, 0)  # 02:00 EST
    assert (res.info["dst_ambiguous"], res.info["dst_nonexistent"]) == (2, 1)


def test_repeated_hour_settled_by_elapsed() -> None:
    """New York, 3 Nov 2024: 01:00–02:00 local happens twice (EDT, then EST). Start and End in
    it are read as the instant whose span is nearest Elapsed: job 9001 01:50 EDT → 01:10 EST
    (05:50Z → 06:10Z, 20 min; read as the earlier 01:10 it ended before it started and was
    rejected), 9002 00:30 EDT → 01:30 EST (04:30Z → 06:30Z, 2 h; read as the earlier it was 1 h),
    9003 in the hour too but 1 h long by its Elapsed: the earlier instants, as before."""
    text = (
        "JobID|Start|End|Elapsed\n"
        "9001|2024-11-03T01:50:00|2024-11-03T01:10:00|00:20:00\n"
        "9002|2024-11-03T00:30:00|2024-11-03T01:30:00|02:00:00\n"
        "9003|2024-11-03T00:30:00|2024-11-03T01:30:00|01:00:00\n"
    )
    res = parse_sacct("dst.psv", text=text, tz="America/New_York")
    assert res.rejected.height == 0
    assert res.rows.select("job_id", "start_at", "end_at").rows() == [
        ("9001", _utc(2024, 11, 3, 5, 50), _utc(2024, 11, 3, 6, 10)),
        ("9002", _utc(2024, 11, 3, 4, 30), _utc(2024, 11, 3, 6, 30)),
        ("9003", _utc(2024, 11, 3, 4, 30), _utc(2024, 11, 3, 5, 30)),
    ]
    assert res.info["dst_ambiguous"] == 4
    # Elapsed leaves suspended time out: 01:30 (ambiguous) → 04:00 EST with 2:30 elapsed and
    # 1:00 suspended spans 3:30, from 01:30 EDT (05:30Z), not 01:30 EST
    suspended = parse_sacct(
        "dst.psv",
        text="JobID|Start|End|Elapsed|Suspended|State\n"
        "9101|2024-11-03T01:30:00|2024-11-03T04:00:00|02:30:00|01:00:00|COMPLETED\n",
        tz="America/New_York",
    ).rows.row(0, named=True)
    assert (suspended["start_at"], suspended["end_at"]) == (
        _utc(2024, 11, 3, 5, 30),
        _utc(2024, 11, 3, 9, 0),
    )
    assert suspended["extra"] == '{"Suspended":"01:00:00"}'


def test_repeated_hour_tie_settled_by_submit() -> None:
    """New York, 3 Nov 2024: job 9201 submitted 01:50, run 01:10–01:20, Elapsed 10 min. Start
    and End both in the repeated hour read 10 minutes as EDT–EDT (05:10Z–05:20Z) and as EST–EST
    (06:10Z–06:20Z): a tie. Only the second starts after the Submit (01:50 read as EDT, 05:50Z),
    so it is taken: 06:10Z–06:20Z, 4 GPUs × 600 s = 2,400 GPU-s, a wait of 1,200 s from
    Eligible 05:50Z. The earlier pair was taken before, and the row rejected as starting before
    its Submit."""
    text = (
        "JobID|Submit|Eligible|Start|End|Elapsed|AllocTRES\n"
        "9201|2024-11-03T01:50:00|2024-11-03T01:50:00|2024-11-03T01:10:00"
        "|2024-11-03T01:20:00|00:10:00|cpu=1,gres/gpu=4,node=1\n"
    )
    res = parse_sacct("dst.psv", text=text, tz="America/New_York")
    assert res.rejected.height == 0
    row = res.rows.row(0, named=True)
    assert (row["submit_at"], row["eligible_at"], row["start_at"], row["end_at"]) == (
        _utc(2024, 11, 3, 5, 50),
        _utc(2024, 11, 3, 5, 50),
        _utc(2024, 11, 3, 6, 10),
        _utc(2024, 11, 3, 6, 20),
    )
    assert row["gpus"] * (row["end_at"] - row["start_at"]).total_seconds() == 2400.0
    assert (row["start_at"] - row["eligible_at"]).total_seconds() == 1200.0


def test_durations_all_forms() -> None:
    """``SS``, ``MM:SS``, ``MM:SS.mmm``, ``HH:MM:SS``, ``D-HH:MM:SS`` (any days) → seconds."""
    values = ["59", "01:02", "16:01.272", "01:02:03", "1-00:00:00", "451-06:00:24", "2-07", ""]
    text = "JobID|Elapsed\n" + "".join(f"{i}|{v}\n" for i, v in enumerate(values))
    assert parse_sacct("d.psv", text=text).rows["elapsed_s"].to_list() == [
        59,
        62,
        961,
        3723,
        86400,
        451 * 86400 + 6 * 3600 + 24,
        2 * 86400 + 7 * 3600,
        None,
    ]


def test_timelimit_tokens_and_partition_limit() -> None:
    """``UNLIMITED``/``Partition_Limit`` → NULL with a note; TimelimitRaw counts minutes."""
    text = "JobID|Timelimit\n1|UNLIMITED\n2|Partition_Limit\n3|1-00:00:00\n"
    rows = parse_sacct("tl.psv", text=text).rows
    assert rows.select("timelimit_s", "timelimit_note").rows() == [
        (None, "UNLIMITED"),
        (None, "Partition_Limit"),
        (86400, None),
    ]


def test_job_id_falls_back_to_job_id_raw() -> None:
    """Without JobID, job_id and the step come from JobIDRaw."""
    rows = parse_sacct("r.psv", text="JobIDRaw|State\n42|COMPLETED\n42.batch|COMPLETED\n").rows
    assert rows.select("job_id", "job_id_raw", "step").rows() == [
        ("42", "42", None),
        ("42", "42", "batch"),
    ]


def test_fields_any_order_case_insensitive_and_cluster_arg() -> None:
    """Headerless fields in any order and case; the cluster argument fills a missing Cluster."""
    text = "COMPLETED|7|gpu[1-2]\n"
    rows = parse_sacct(
        "o.psv", text=text, fields=["state", "JOBID", "NodeList%30"], cluster="c9"
    ).rows
    assert rows.select("job_id", "state", "cluster", "node_list").row(0) == (
        "7",
        "COMPLETED",
        "c9",
        ["gpu1", "gpu2"],
    )


def test_blank_and_repeated_header_lines_counted() -> None:
    """Blank lines and repeated headers (concatenated exports) are counted, not rejected."""
    text = "JobID|State\n1|COMPLETED\n\nJobID|State\n2|FAILED\n"
    res = parse_sacct("b.psv", text=text)
    assert res.rows.select("job_id", "line_no").rows() == [("1", 2), ("2", 5)]
    assert (res.info["blank_lines"], res.info["repeated_headers"]) == (1, 1)


def test_crlf_and_bom() -> None:
    """Windows line ends and a UTF-8 BOM do not leak into values."""
    res = parse_sacct("w.psv", text="\ufeffJobID|State\r\n1|COMPLETED\r\n")
    assert res.rows.select("job_id", "state").rows() == [("1", "COMPLETED")]


def test_latin1_file_read(tmp_path: Path) -> None:
    """A file that is not UTF-8 (slurm-mail #58's group name in Latin-1) is read as Latin-1."""
    path = tmp_path / "l1.psv"
    path.write_bytes("JobID|Group|State\n31114|domänen-benutzer|CANCELLED by 1\n".encode("latin-1"))
    res = parse_sacct(path)
    assert res.rows["group_name"].to_list() == ["domänen-benutzer"]
    assert res.info["encoding"] == "latin-1"


def test_empty_file_gives_empty_result() -> None:
    """An empty export (no jobs) is an empty result with the schema, not an error."""
    res = parse_sacct("e.psv", text="")
    assert res.rows.schema == pl.Schema(SLURM_ROW_SCHEMA)
    assert (res.rows.height, res.rejected.height) == (0, 0)


# --------------------------------------------------------------------------- whole-file errors


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"kind": "PodList", "items": []}', "JSON without a 'jobs' list"),
        ("[1, 2]", "JSON without a 'jobs' list"),
        ("<html><body>502 Bad Gateway</body></html>", "HTML"),
        ("1|COMPLETED\n2|FAILED\n", "pass --fields"),
        (
            "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode\n",
            "run sacct -P / --parsable2",
        ),
    ],
)
def test_not_sacct_raises(text: str, message: str) -> None:
    """Non-sacct JSON, HTML, headerless text without fields and fixed-width output raise."""
    with pytest.raises(SacctFormatError, match=re.escape(message)) as info:
        parse_sacct("x.out", text=text)
    assert isinstance(info.value, InputFormatError)


@pytest.mark.parametrize(
    "text",
    [
        "---\njobs:\n- account: mila\n  job_id: 4\n",
        "--- !!map\n!!str jobs: !!seq\n- !!map\n  !!str job_id: !!int 4\n",
        "%YAML 1.1\n---\njobs: []\n",
    ],
)
def test_sacct_yaml_is_refused_naming_it(text: str) -> None:
    """``sacct --yaml`` (Slurm writes the document start ``---``, then tagged keys such as
    ``!!str id: !!str 7.0``) is refused as YAML, not read as headerless text with the
    misleading "cannot find a delimiter … give the delimiter"."""
    with pytest.raises(SacctFormatError, match=re.escape("YAML (sacct --yaml?)")):
        parse_sacct("sacct.yaml", text=text, fields=["JobID", "State"])


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        (
            # scontrol show node med0304 (BIH HPC docs), multi-line records
            "scontrol-nodes/nodes_2020-07-17.txt",
            "not sacct output: this reads as `scontrol show node` output (NodeName=… records); "
            "use `goodput ingest slurm-state` (the file named nodes_<day>.txt)",
        ),
        (
            # scontrol show node -o, one record a line
            "scontrol-nodes/nodes_2026-09-24.txt",
            "this reads as `scontrol show node` output",
        ),
        (
            # NVIDIA/DCGM issue #226: an L40S scrape, # HELP / # TYPE first
            "dcgm-exporter/dcgm226_l40s.prom",
            "not sacct output: this reads as a Prometheus scrape (dcgm-exporter /metrics); "
            "use `goodput ingest dcgm`",
        ),
        (
            # NVIDIA/dcgm-exporter issue #272: samples only, no # HELP / # TYPE
            "dcgm-exporter/issue272_no_host.prom",
            "this reads as a Prometheus scrape",
        ),
    ],
)
def test_other_text_kinds_are_refused_naming_them(fixture: str, message: str) -> None:
    """Real ``scontrol show node`` output and dcgm-exporter scrapes given to ``ingest sacct``
    are refused saying what they are and which ingest reads them (before: "no sacct header
    line (sacct --noheader); pass --fields …")."""
    with pytest.raises(SacctFormatError, match=re.escape(message)):
        parse_sacct(FIXTURES / fixture)


def test_binary_file_raises(tmp_path: Path) -> None:
    """A binary file (NUL bytes) is not sacct output."""
    path = tmp_path / "core.bin"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    with pytest.raises(SacctFormatError, match="binary"):
        parse_sacct(path)


def test_unknown_time_zone_raises() -> None:
    """A zone name that is not IANA is a usage error."""
    with pytest.raises(ValueError, match="unknown time zone"):
        parse_sacct("z.psv", text="JobID\n1\n", tz="Mars/Olympus")


def test_multi_line_record_keeps_blank_line_inside() -> None:
    """A blank line inside a multi-line SubmitLine is part of the record, not a blank line."""
    text = "JobID|SubmitLine|State\n1|sbatch --wrap='a\n\nb'|COMPLETED\n2|sbatch x|FAILED\n"
    res = parse_sacct("bl.psv", text=text)
    assert res.rows.select("job_id", "line_no", "line_end").rows() == [("1", 2, 4), ("2", 5, 5)]
    assert json.loads(res.rows["extra"][0])["SubmitLine"] == "sbatch --wrap='a\n\nb'"
    assert res.info["blank_lines"] == 0


@pytest.mark.parametrize(
    ("path", "fields"),
    [(LAB / "sacct_all.psv", None), (HB / "sacct.txt", HB_FIELDS)],
)
def test_clean_and_untidy_files_parse_alike(path: Path, fields: list[str] | None) -> None:
    """The fast path and the line-by-line path (forced by a blank line) give the same rows."""
    text = path.read_text()
    head, _, rest = text.partition("\n")
    clean = parse_sacct(path, fields=fields)
    untidy = parse_sacct(path, fields=fields, text=f"{head}\n\n{rest}")
    assert untidy.info["blank_lines"] == 1
    shift = 1 if clean.info["header"] else 0
    moved = untidy.rows.with_columns(
        pl.when(pl.col("line_no") > 1 + shift).then(pl.col("line_no") - 1).otherwise("line_no"),
        pl.when(pl.col("line_end") > 1 + shift).then(pl.col("line_end") - 1).otherwise("line_end"),
    )
    assert moved.equals(clean.rows)


def test_rejected_raw_is_the_line_as_written() -> None:
    """A reject's ``raw`` is the physical line exactly, trailing delimiter included."""
    lines = (XDMOD / "shredder_slurm_input" / "unknown-job-state.log").read_text().splitlines()
    res = parse_sacct(XDMOD / "shredder_slurm_input" / "unknown-job-state.log", fields=XDMOD_FIELDS)
    assert res.rejected["raw"].to_list() == lines
    hb = "1☃name☃FOO☃\n2☃ok☃COMPLETED☃\n"
    rejected = parse_sacct("hb.txt", text=hb, fields=["JobID", "JobName", "State"]).rejected
    assert rejected["raw"].to_list() == ["1☃name☃FOO☃"]


@pytest.mark.parametrize("untidy", [False, True])
def test_small_pieces_parse_like_one(monkeypatch: pytest.MonkeyPatch, untidy: bool) -> None:
    """Parsing in many small pieces (clean path) or slices (line path) changes nothing."""
    import pipelines.slurm._sacct_parse as module

    text = (LAB / "sacct_all.psv").read_text()
    if untidy:
        text = text.replace("\n", "\n\n", 1) + "1|COMPLETED\n"
    whole = parse_sacct("lab.psv", text=text)
    monkeypatch.setattr(module, "_CHUNK_BYTES", 700)
    monkeypatch.setattr(module, "_CHUNK_ROWS", 7)
    pieces = parse_sacct("lab.psv", text=text)
    assert pieces.rows.equals(whole.rows)
    assert pieces.rejected.equals(whole.rejected)
    assert pieces.info == whole.info
    assert whole.rows.height == 91


@pytest.mark.parametrize("text", ["JobID|State", "JobID|State\n", "JobID|State\r\n"])
def test_header_only_export(text: str) -> None:
    """A header with no jobs (``sacct`` found nothing) is an empty result of one line."""
    res = parse_sacct("h.psv", text=text)
    assert (res.rows.height, res.rejected.height, res.info["lines"]) == (0, 0, 1)


def test_allocgres_counts_gpus_where_tres_has_none() -> None:
    """Real Oxford ARC records of 2017 (``fixtures/slurm-allocgres``): GPUs only in AllocGRES
    (``gpu:2``), no TRES field. Each job's GPUs come from it, 1,061,319 GPU-s in all by hand
    (before: every job 0 GPUs, and no warning, since AllocGRES counts as the field present)."""
    res = parse_sacct(FIXTURES / "slurm-allocgres" / "sacct_2017-01-09.psv", tz="Europe/London")
    assert res.rejected.height == 0
    got = res.rows.select(
        "job_id", "gpus", (pl.col("end_at") - pl.col("start_at")).dt.total_seconds().alias("s")
    ).rows()
    assert got == [
        ("605547", 0.0, 289444),
        ("605717", 2.0, 316442),
        ("609182", 2.0, 102263),
        ("609197", 1.0, 180006),
        ("611415", 1.0, 43903),
    ]
    assert sum(g * s for _, g, s in got) == 1_061_319


#: XDMoD's earlier shredder format: ReqGRES and ReqTRES side by side, no Alloc* field.
XDMOD_GRES_FIELDS = _fields(
    "jobid,jobidraw,cluster,partition,account,group,gid,user,uid,submit,eligible,start,end,"
    "elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqgres,reqtres,timelimit,nodelist,jobname"
)


@pytest.mark.parametrize("side", ["req", "alloc"])
def test_gres_counts_where_the_tres_beside_it_names_no_gpu(side: str) -> None:
    """XDMoD's ``accounting-logs-with-gpu-gres`` (``fixtures/xdmod``): ReqGRES ``gpu:16``,
    ``gpu:V100:2``, ``hbm:0,gpu:4,bandwidth:4G``, ``gpu:P100:2(IDX:1,3)``, … beside an empty
    ReqTRES. A TRES naming no GPU defers to the GRES (Slurm before 18.08 kept GPUs out of TRES
    unless AccountingStorageTRES listed ``gres/gpu``), so each record counts its GRES GPUs:
    the numbers XDMoD's own expected output lists, 0, 1, 2, 16, 20, 128, 0, 1, 2, 32, 4, 4, 4,
    0, 0 and 2 × 9 (before: 0 for all 24, the empty TRES winning). ``alloc``: the same values
    read as AllocGRES beside AllocTRES (``sacct --long`` of those releases prints both) give
    ``gpus`` alike (before: 0)."""
    fields = (
        XDMOD_GRES_FIELDS
        if side == "req"
        else [{"reqgres": "allocgres", "reqtres": "alloctres"}.get(f, f) for f in XDMOD_GRES_FIELDS]
    )
    res = parse_sacct(
        XDMOD / "shredder_slurm_input" / "accounting-logs-with-gpu-gres.log", fields=fields
    )
    expected = json.loads(
        (XDMOD / "shredder_slurm_output" / "accounting-logs-with-gpu-gres.json").read_text()
    )
    assert res.rejected.height == 0
    column = "req_gpus" if side == "req" else "gpus"
    assert res.rows[column].to_list() == [float(n) for n in expected]
    assert sum(expected) == 232  # 167 (0+1+2+16+20+128) + 35 (0+1+2+32) + 12 + 0 + 18 (2 × 9)
    assert res.rows["gpu_type"].to_list()[6:10] == ["V100"] * 4


def test_a_tres_naming_gpus_keeps_them_over_the_gres() -> None:
    """Where the TRES names GPUs it wins over the GRES beside it (``gres/gpu=1`` vs ``gpu:4``)."""
    text = "JobID|AllocGRES|AllocTRES\n7|gpu:4|cpu=1,gres/gpu=1,node=1\n8|gpu:4|cpu=1,node=1\n"
    res = parse_sacct("g.psv", text=text)
    assert res.rows["gpus"].to_list() == [1.0, 4.0]


@pytest.mark.parametrize(
    ("gres", "tres"),
    [
        ("gpu:2", "gres/gpu=2"),
        ("gpu:tesla:2(IDX:0-1)", "gres/gpu:tesla=2"),
        ("gpu:k80:1,mic:1", "gres/gpu:k80=1"),
        ("gpu", "gres/gpu=1"),
        ("gpu:a100", "gres/gpu:a100=1"),
        ("mic:1", ""),
        ("", ""),
    ],
)
def test_gres_as_tres(gres: str, tres: str) -> None:
    """AllocGRES / ReqGRES items ``name[:type][:count]`` as the TRES items of their GPUs."""
    from pipelines.slurm._sacct_values import gpus_from_tres, gres_as_tres

    assert gres_as_tres(gres) == tres
    assert gres_as_tres(None) is None
    if gres == "gpu:tesla:2(IDX:0-1)":
        assert gpus_from_tres(gres_as_tres(gres)) == 2.0
