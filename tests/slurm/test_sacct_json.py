"""sacct --json: the Slurm 22.05 lab run agrees with its text export; the 23.02+ data_parser
shape (set/infinite/number wrappers, state lists) parses to the same schema."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines._json import LONE_SURROGATE
from pipelines.slurm._sacct_layout import SacctFormatError
from pipelines.slurm._sacct_parse import SLURM_ROW_SCHEMA, parse_sacct

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-22.05-lab"

#: Columns both exports of the lab run carry identically. Not compared: ``uid`` (the JSON has
#: user names only), ``cancelled_by_uid`` (the JSON names the user), ``exit_code`` (22.05's JSON
#: reports ``SUCCESS 0`` for jobs that exited 1, see below), TRES strings (``8G`` vs ``8192M``).
SAME = [
    "job_id", "job_id_raw", "array_job_id", "array_task_id", "het_job_id", "step",
    "is_allocation", "job_name", "user_name", "account", "partition", "qos", "state", "reason",
    "submit_at", "eligible_at", "start_at", "end_at", "planned_s", "elapsed_s", "timelimit_s",
    "signal", "nnodes", "ncpus", "req_mem_mb", "gpus", "req_gpus", "gpu_type", "node_list",
    "cluster",
]  # fmt: skip


def _n(number: int | None) -> dict[str, Any]:
    """A data_parser v0.0.39+ number wrapper (``None``: not set)."""
    return {"set": number is not None, "infinite": False, "number": number or 0}


INFINITE = {"set": True, "infinite": True, "number": 0}


def _tres(*items: tuple[str, int]) -> list[dict[str, Any]]:
    """TRES items from ``("cpu", 2)``, ``("gres/gpu:a100", 8)`` pairs."""
    out = []
    for key, count in items:
        kind, _, name = key.partition("/")
        out.append({"type": kind, "name": name, "id": 1, "count": count})
    return out


def _job(job_id: int, state: str, **over: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "account": "team-a",
        "allocation_nodes": 1,
        "array": {"job_id": 0, "task_id": _n(None), "task": ""},
        "cluster": "lab23",
        "exit_code": {"status": ["SUCCESS"], "return_code": _n(0), "signal": {"id": _n(None)}},
        "group": "alice",
        "het": {"job_id": 0, "job_offset": _n(None)},
        "job_id": job_id,
        "name": f"job{job_id}",
        "nodes": "gpu-001",
        "partition": "gpu",
        "qos": "normal",
        "required": {"CPUs": 2, "memory_per_cpu": _n(None), "memory_per_node": _n(4000)},
        "state": {"current": [state], "reason": "None"},
        "steps": [],
        "time": {
            "elapsed": 120,
            "eligible": 1796006400,
            "end": 1796006530,
            "planned": _n(10),
            "start": 1796006410,
            "submission": 1796006390,
            "limit": _n(60),
        },
        "tres": {
            "allocated": _tres(("cpu", 2), ("node", 1)),
            "requested": _tres(("cpu", 2), ("mem", 4000), ("node", 1)),
        },
        "user": "alice",
        "working_directory": "/home/alice",
    }
    job.update(over)
    return job


def _v40(*jobs: Any) -> str:
    meta = {
        "plugin": {"type": "openapi/slurmdbd", "data_parser": "data_parser/v0.0.40"},
        "slurm": {"version": {"major": "23", "minor": "11", "micro": "4"}, "release": "23.11.4"},
    }
    return json.dumps({"meta": meta, "errors": [], "warnings": [], "jobs": list(jobs)})


def test_lab_json_matches_text_export() -> None:
    """22.05's ``--json`` of the lab run gives the rows of its ``--parsable2`` export."""
    from_json = parse_sacct(LAB / "sacct_all.json")
    from_text = parse_sacct(LAB / "sacct_all.psv")
    assert from_json.info["format"] == "json"
    assert from_json.info["json_shape"] == "openapi/dbv0.0.38"
    assert from_json.rejected.height == 0
    assert from_json.rows.schema == pl.Schema(SLURM_ROW_SCHEMA)
    key = ["job_id", "step", "start_at"]
    got = from_json.rows.select(SAME).sort(key, nulls_last=True)
    want = from_text.rows.select(SAME).sort(key, nulls_last=True)
    assert got.height == want.height == 91
    for column in SAME:
        assert got[column].equals(want[column]), column


def test_lab_json_line_numbers_are_job_items() -> None:
    """``line_no`` is the job's 1-based index in ``jobs``; its steps share it."""
    rows = parse_sacct(LAB / "sacct_all.json").rows
    first = rows.filter(pl.col("line_no") == 1)
    assert first.select("job_id", "step", "state").rows() == [
        ("3", None, "REQUEUED"),
        ("3", "batch", "CANCELLED"),
    ]


def test_lab_json_exit_code_as_22_05_reports_it() -> None:
    """22.05's JSON says SUCCESS 0 for job 6 (text: ``1:0``); the signal of job 7 survives."""
    rows = parse_sacct(LAB / "sacct_all.json").rows.filter("is_allocation")
    codes = dict(
        zip(rows["job_id"], zip(rows["exit_code"], rows["signal"], strict=True), strict=True)
    )
    assert codes["6"] == (0, 0)
    assert codes["7"] == (0, 9)


def test_v0040_shape() -> None:
    """A 23.11 document: wrapped numbers, state lists, ``job.step`` ids, typed GPUs."""
    step = {
        "time": {"elapsed": 100, "start": 1796006410, "end": 1796006510},
        "exit_code": {"status": ["FAILED"], "return_code": _n(2), "signal": {"id": _n(None)}},
        "nodes": {"count": 2, "range": "gpu-[001-002]"},
        "tres": {"allocated": _tres(("cpu", 16), ("gres/gpu", 8), ("gres/gpu:a100", 8))},
        "state": ["FAILED"],
        "step": {"id": "101.batch", "name": "batch"},
    }
    job = _job(
        101,
        "FAILED",
        allocation_nodes=2,
        nodes="gpu-[001-002]",
        exit_code={"status": ["FAILED"], "return_code": _n(2), "signal": {"id": _n(None)}},
        tres={
            "allocated": _tres(
                ("cpu", 16), ("mem", 128000), ("node", 2), ("gres/gpu", 8), ("gres/gpu:a100", 8)
            ),
            "requested": _tres(("cpu", 16), ("mem", 128000), ("node", 2), ("gres/gpu", 8)),
        },
        steps=[step],
        submit_line="sbatch train.sh",
    )
    res = parse_sacct("v40.json", text=_v40(job))
    assert res.info["json_shape"] == "data_parser/v0.0.40"
    assert res.rejected.height == 0
    alloc, batch = res.rows.iter_rows(named=True)
    assert (alloc["job_id"], alloc["state"], alloc["exit_code"]) == ("101", "FAILED", 2)
    assert alloc["submit_at"] == datetime.fromtimestamp(1796006390, UTC)
    assert (alloc["planned_s"], alloc["elapsed_s"], alloc["timelimit_s"]) == (10, 120, 3600)
    assert (alloc["gpus"], alloc["req_gpus"], alloc["gpu_type"]) == (8.0, 8.0, "a100")
    assert (alloc["nnodes"], alloc["ncpus"], alloc["req_mem_mb"]) == (2, 16, 128000.0)
    assert alloc["node_list"] == ["gpu-001", "gpu-002"]
    assert json.loads(alloc["extra"])["SubmitLine"] == "sbatch train.sh"
    assert (batch["job_id"], batch["step"], batch["job_id_raw"]) == ("101", "batch", "101")
    assert (batch["state"], batch["exit_code"], batch["gpus"]) == ("FAILED", 2, 8.0)
    assert batch["submit_at"] == batch["start_at"] == datetime.fromtimestamp(1796006410, UTC)


def test_v0040_arrays_het_unlimited_running() -> None:
    """Array task, pending array with throttle, het component, UNLIMITED limit, RUNNING end."""
    task = _job(
        203,
        "RUNNING",
        array={"job_id": 200, "task_id": _n(3), "task": ""},
        time={"elapsed": 5, "start": 1796006410, "end": 0, "submission": 1796006390,
              "eligible": 1796006400, "limit": INFINITE},
    )  # fmt: skip
    pending = _job(
        300,
        "PENDING",
        array={"job_id": 300, "task_id": _n(None), "task": "1-4%2"},
        nodes="None assigned",
        time={"elapsed": 0, "start": 0, "end": 0, "submission": 1796006390,
              "eligible": 1796006400, "limit": _n(60)},
    )  # fmt: skip
    het = _job(401, "COMPLETED", het={"job_id": 400, "job_offset": _n(1)})
    rows = parse_sacct("v40.json", text=_v40(task, pending, het)).rows
    assert rows.select("job_id", "job_id_raw", "array_task_id", "array_throttle").rows() == [
        ("200_3", "203", 3, None),
        ("300_1", "300", 1, 2),
        ("300_2", "300", 2, 2),
        ("300_3", "300", 3, 2),
        ("300_4", "300", 4, 2),
        ("400+1", "401", None, None),
    ]
    first = rows.row(0, named=True)
    assert (first["end_at"], first["timelimit_s"], first["timelimit_note"]) == (
        None,
        None,
        "UNLIMITED",
    )
    assert rows["start_at"][1] is None
    assert rows["node_list"].to_list()[1] == []
    assert (rows["het_job_id"][5], rows["het_job_offset"][5]) == ("400", 1)


def test_array_throttle_from_its_own_field() -> None:
    """Slurm's JSON keeps a pending array's throttle in ``array.limits.max.running.tasks``
    (data_parser's ``array_max_tasks``), the task string without ``%N``: ``--array=1-3%2``
    is read as sacct's text prints it, ``1-3%2`` (each task throttled to 2); 0 is no limit."""
    limited = _job(
        500,
        "PENDING",
        array={"job_id": 500, "task_id": _n(None), "task": "1-3",
               "limits": {"max": {"running": {"tasks": 2}}}},
        nodes="None assigned",
        time={"elapsed": 0, "start": 0, "end": 0, "submission": 1796006390,
              "eligible": 1796006400, "limit": _n(60)},
    )  # fmt: skip
    unlimited = _job(
        510,
        "PENDING",
        array={"job_id": 510, "task_id": _n(None), "task": "1-2",
               "limits": {"max": {"running": {"tasks": 0}}}},
        nodes="None assigned",
        time={"elapsed": 0, "start": 0, "end": 0, "submission": 1796006390,
              "eligible": 1796006400, "limit": _n(60)},
    )  # fmt: skip
    rows = parse_sacct("throttle.json", text=_v40(limited, unlimited)).rows
    assert rows.select("job_id", "array_task_id", "array_throttle").rows() == [
        ("500_1", 1, 2),
        ("500_2", 2, 2),
        ("500_3", 3, 2),
        ("510_1", 1, None),
        ("510_2", 2, None),
    ]


def test_v0040_mig_slice() -> None:
    """A MIG slice in AllocTRES counts as its fraction of a GPU."""
    job = _job(
        600,
        "COMPLETED",
        tres={
            "allocated": _tres(("cpu", 1), ("gres/gpu", 1), ("gres/gpu:3g.40gb", 1)),
            "requested": [],
        },
    )
    rows = parse_sacct("mig.json", text=_v40(job)).rows
    assert rows["gpus"].to_list() == [pytest.approx(3 / 7)]


def test_json_bad_items_rejected_rest_loads() -> None:
    """An item without a job id and one with an unknown state are rejected; the rest loads."""
    text = _v40({"name": "no id"}, _job(700, "WEIRD"), _job(701, "COMPLETED"), "junk")
    res = parse_sacct("bad.json", text=text)
    assert res.rows["job_id"].to_list() == ["701"]
    assert res.rejected.select("line_no", "field", "reason").rows() == [
        (1, "job_id", "bad job item: no job_id"),
        (2, "State", "unknown job state 'WEIRD'"),
        (4, None, "job item is not an object"),
    ]
    assert json.loads(res.rejected["raw"][0]) == {"name": "no id"}


def test_json_empty_jobs() -> None:
    """A document with no jobs is an empty result."""
    res = parse_sacct("e.json", text=_v40())
    assert (res.rows.height, res.rejected.height, res.info["lines"]) == (0, 0, 0)


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"job_id": 3.7}, "bad job item: job_id is not a whole number: 3.7"),
        ({"state": {"current": [5], "reason": "None"}}, "bad job item: state.current is not a "
         "state name: [5]"),
        ({"time": {"start": "yesterday"}}, "bad job item: time.start is not a number: "
         "'yesterday'"),
        ({"time": [1, 2]}, "bad job item: time is not an object: [1, 2]"),
        ({"tres": {"allocated": [{"type": "gres", "name": "gpu", "count": "x"}]}},
         "bad job item: tres.allocated count is not a number: 'x'"),
        ({"tres": "gres/gpu=8"}, "bad job item: tres is not an object: 'gres/gpu=8'"),
        ({"steps": "oops"}, "bad job item: steps is not a list: 'oops'"),
    ],
)  # fmt: skip
def test_json_wrongly_typed_values_are_rejected(over: dict[str, Any], reason: str) -> None:
    """A value of the wrong JSON type rejects its job item with the field named, as the text
    parser rejects ``gres/gpu=abc`` or an unknown state, instead of loading a NULL time, a
    NULL state, 0 GPUs or a job id truncated onto another job's (3.7 → 3)."""
    bad = _job(700, "COMPLETED")
    bad.update(over)
    text = _v40(_job(3, "COMPLETED"), bad)
    res = parse_sacct("typed.json", text=text)
    assert res.rows["job_id"].to_list() == ["3"]
    assert res.rejected.select("line_no", "reason").rows() == [(2, reason)]


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"job_id": 3.7}, "job_id"),
        ({"state": {"current": [5], "reason": "None"}}, "state.current"),
        ({"time": {"start": "yesterday"}}, "time.start"),
        ({"time": [1, 2]}, "time"),
        ({"tres": {"allocated": [{"type": "gres", "name": "gpu", "count": "x"}]}},
         "tres.allocated count"),
        ({"exit_code": {"return_code": {"set": True, "infinite": False, "number": "0"}}},
         "exit_code.return_code"),
        ({"steps": "oops"}, "steps"),
        ({"steps": [{"step": {"id": "700.batch"}, "time": {"end": "later"}}]}, "step time.end"),
    ],
)  # fmt: skip
def test_json_rejects_name_their_field(over: dict[str, Any], field: str) -> None:
    """A rejected ``sacct --json`` item names the value it could not read in ``field`` (the
    column ``rejected_rows`` and the data-quality findings group by), as a text row names
    ``Start`` or ``AllocTRES``; it was NULL, the path only in the reason's text."""
    bad = _job(700, "COMPLETED")
    bad.update(over)
    res = parse_sacct("typed.json", text=_v40(_job(3, "COMPLETED"), bad))
    assert res.rejected.select("line_no", "field").rows() == [(2, field)]


def test_json_job_without_time_is_rejected() -> None:
    """A job item with no ``time`` object has no submit, start or end: rejected, not loaded
    with every time NULL."""
    job = _job(700, "COMPLETED")
    del job["time"]
    res = parse_sacct("notime.json", text=_v40(job))
    assert res.rows.height == 0
    assert res.rejected["reason"].to_list() == [
        "bad job item: no time object (submission, start and end times)"
    ]


def test_json_bad_steps_are_rejected_alone() -> None:
    """A step that is not an object, or has no step id, is a rejected row of its own; the job
    and its good step load."""
    good = {"step": {"id": "700.batch", "name": "batch"}, "state": "COMPLETED",
            "time": {"start": 1796006410, "end": 1796006530, "elapsed": 120},
            "nodes": {"count": 1, "range": "gpu-001"}, "tres": {"allocated": []}}  # fmt: skip
    job = _job(700, "COMPLETED", steps=[good, 1, {"state": "COMPLETED"}])
    res = parse_sacct("steps.json", text=_v40(job))
    assert sorted(res.rows["step"].drop_nulls().to_list()) == ["batch"]
    assert res.rows.height == 2
    assert res.rejected.select("line_no", "reason").rows() == [
        (1, "bad step item: not an object"),
        (1, "bad step item: step has no step id"),
    ]


@pytest.mark.parametrize("one_line", [False, True])
def test_truncated_json_document_is_a_file_error(one_line: bool) -> None:
    """The lab run's ``--json`` cut off (pretty-printed, or on one line) is refused naming the
    file, not read as a text export whose one "line" is rejected as a malformed job id."""
    from pipelines._parse_result import InputFormatError

    text = (LAB / "sacct_all.json").read_text(encoding="utf-8")
    if one_line:
        text = json.dumps(json.loads(text))
    with pytest.raises(InputFormatError, match=r"cut\.json.*invalid JSON .*truncated"):
        parse_sacct("cut.json", text=text[: len(text) // 3])


# Hard edges of data_parser v0.0.40–v0.0.44 (Slurm 23.11–25.11). No public sacct --json output of
# these versions with a future begin time was found: the documents below are hand-made in the
# shape of Slurm's OpenAPI specification of v0.0.40 (``time.planned`` is a
# ``{set, infinite, number}`` wrapper of signed seconds).
SUBMIT = 1796006390


def test_v0040_pending_with_future_begin_is_loaded_not_yet_waiting() -> None:
    """A pending job whose begin time is still ahead has ``planned`` = now − eligible < 0; it is
    loaded as pending with 0 s planned (it has not waited), not rejected as unparseable."""
    job = _job(800, "PENDING")
    job["time"] = {
        "elapsed": 0, "eligible": SUBMIT + 3600, "end": 0, "planned": _n(-3000),
        "start": 0, "submission": SUBMIT, "limit": _n(60),
    }  # fmt: skip
    now = datetime.fromtimestamp(SUBMIT + 600, tz=UTC)
    res = parse_sacct("future.json", text=_v40(job, _job(801, "COMPLETED")), now=now)
    assert res.rejected.height == 0, res.rejected["reason"].to_list()
    rows = res.rows.sort("job_id")
    assert rows["job_id"].to_list() == ["800", "801"]
    assert rows["state"][0] == "PENDING"
    assert rows["planned_s"][0] == 0
    assert rows["start_at"][0] is None
    assert rows["eligible_at"][0] == datetime.fromtimestamp(SUBMIT + 3600, tz=UTC)


@pytest.mark.parametrize(
    ("number", "reason"),
    [
        ("1e400", "bad job item: time.start is not a finite number: inf"),
        ("NaN", "bad job item: time.start is not a finite number: nan"),
        ("-Infinity", "bad job item: time.start is not a finite number: -inf"),
    ],
)
def test_non_finite_numbers_reject_their_item(number: str, reason: str) -> None:
    """``1e400`` (read as inf) and the non-standard ``NaN``/``Infinity`` that Python's reader
    accepts reject their job item with the field named; the next job loads."""
    marker = 1796006410
    text = _v40(_job(900, "COMPLETED"), _job(901, "COMPLETED"))
    assert text.count(f'"start": {marker}') == 2
    text = text.replace(f'"start": {marker}', f'"start": {number}', 1)
    res = parse_sacct("inf.json", text=text)
    assert res.rows["job_id"].to_list() == ["901"]
    assert res.rejected.select("line_no", "reason").rows() == [(1, reason)]


def test_lone_surrogate_rejects_its_item() -> None:
    """``"\\ud800"`` is valid JSON but no text: its job item is rejected with the raw JSON kept
    escaped; the other job loads."""
    text = _v40(_job(902, "COMPLETED"), _job(903, "COMPLETED"))
    text = text.replace('"name": "job902"', '"name": "job\\ud800"', 1)
    res = parse_sacct("surrogate.json", text=text)
    assert res.rows["job_id"].to_list() == ["903"]
    assert res.rejected["reason"].to_list() == [f"bad job item: {LONE_SURROGATE}"]
    assert "\\ud800" in res.rejected["raw"][0]
    assert json.loads(res.rejected["raw"][0])["job_id"] == 902


def test_deeply_nested_item_rejects_only_itself() -> None:
    """An item nested 5,000 levels deep (past Python's recursion limit) is rejected on its own;
    the document is still read and its other job loads."""
    deep = _job(904, "COMPLETED")
    text = _v40(deep, _job(905, "COMPLETED"))
    nested = "[" * 5000 + "]" * 5000
    text = text.replace('"name": "job904"', f'"name": "job904", "comment": {nested}', 1)
    res = parse_sacct("deep.json", text=text)
    assert res.rows["job_id"].to_list() == ["905"]
    assert res.rejected.select("line_no", "reason").rows() == [
        (1, "bad job item: nested deeper than 64 levels")
    ]


def _slurmctld_meta(**over: Any) -> dict[str, Any]:
    """``meta`` of slurmctld's job list as squeue --json (23.11) writes it."""
    meta: dict[str, Any] = {
        "client": {"group": "root", "source": "[localhost]:51114", "user": "root"},
        "command": [],
        "plugin": {
            "accounting_storage": "acc_st/slurmdbd",
            "data_parser": "data_parser/v0.0.40",
            "name": "Slurm OpenAPI slurmctld",
            "type": "openapi/slurmctld",
        },
        "slurm": {"cluster": "cluster", "release": "23.11.1",
                  "version": {"major": "23", "micro": "1", "minor": "11"}},
    }  # fmt: skip
    meta.update(over)
    return meta


SQUEUE_JOB = {"job_id": 5, "job_state": ["RUNNING"], "submit_time": _n(SUBMIT), "name": "x"}


@pytest.mark.parametrize(
    "document",
    [
        # the plugin says slurmctld
        {"meta": _slurmctld_meta(), "errors": [], "warnings": [], "jobs": [SQUEUE_JOB]},
        # the command says squeue (plugin type left out)
        {"meta": _slurmctld_meta(plugin={}, command=["squeue", "--json"]), "jobs": []},
        # no meta at all, but the job items are slurmctld's (job_state, submit_time, no time)
        {"jobs": [SQUEUE_JOB, {**SQUEUE_JOB, "job_id": 6}]},
    ],
)
def test_squeue_json_is_refused_naming_it(document: dict[str, Any]) -> None:
    """slurmctld's job list (squeue --json, scontrol show jobs --json) has a ``jobs`` list too;
    identified by its plugin, its command or its items' shape, the file is refused with what
    it is (hand-made in the shape of slurmrestd's v0.0.40 ``meta``), not loaded as N rejects."""
    with pytest.raises(SacctFormatError, match=r"squeue --json / scontrol show jobs --json"):
        parse_sacct("squeue.json", text=json.dumps(document))


@pytest.mark.parametrize(
    ("key", "what"),
    [("statistics", "sdiag --json"), ("nodes", "scontrol show nodes --json"),
     ("shares", "sshare --json")],
)  # fmt: skip
def test_other_slurm_json_is_refused_naming_it(key: str, what: str) -> None:
    """sdiag, node and sshare JSON documents are named in the refusal."""
    document = {"meta": _slurmctld_meta(), key: {}}
    with pytest.raises(SacctFormatError, match=what):
        parse_sacct("other.json", text=json.dumps(document))


def test_sacct_json_with_an_unusual_meta_still_loads() -> None:
    """A valid sacct document with no plugin type and a ``command`` naming sacct loads."""
    document = json.loads(_v40(_job(910, "COMPLETED")))
    document["meta"] = {"command": ["/usr/bin/sacct", "--json"]}
    res = parse_sacct("plain.json", text=json.dumps(document))
    assert res.rows["job_id"].to_list() == ["910"]


@pytest.mark.parametrize(
    ("current", "state"),
    [
        (["PENDING", "REQUEUED"], "REQUEUED"),
        (["PENDING", "REQUEUE_FED"], "REQUEUE_FED"),
        (["RUNNING", "RESIZING"], "RESIZING"),
        (["COMPLETED", "COMPLETING"], "COMPLETING"),
        (["FAILED", "LAUNCH_FAILED"], "FAILED"),
        (["CANCELLED"], "CANCELLED"),
    ],
)
def test_v0040_state_flags_name_the_state_as_sacct_prints_it(
    current: list[str], state: str
) -> None:
    """data_parser v0.0.39+ writes the base state, then its flags: a requeued attempt's record
    is ``["PENDING", "REQUEUED"]``. ``sacct`` prints the state by Slurm's ``job_state_string``:
    the first of its listed flags present, else the base. Read as its base state the requeued
    attempt was PENDING, its end dropped and its GPUs held to the cut-off."""
    job = _job(27, current[0])
    job["state"]["current"] = current
    row = parse_sacct("v40.json", text=_v40(job)).rows.row(0, named=True)
    assert row["state"] == state
    if state == "REQUEUED":
        assert row["end_at"] == datetime.fromtimestamp(1796006530, UTC)


def test_v0040_requeued_attempt_ends_where_sacct_says(tmp_path: Path) -> None:
    """Job 27 (4 GPUs): attempt 0 REQUEUED 10:00–11:00 (its record ``["PENDING", "REQUEUED"]``),
    attempt 1 COMPLETED 11:04–12:04: each loaded row ends where sacct says, 4 × 3,600 GPU-s
    each (before: the first read PENDING, its end dropped, so it ran open to the cut-off 12:04,
    4 × 7,440 GPU-s)."""
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    t0 = 1796004000  # 2026-11-30 10:00 UTC
    gpus = _tres(("cpu", 8), ("node", 1), ("gres/gpu", 4))
    first = _job(
        27, "PENDING",
        time={"elapsed": 3600, "eligible": t0 - 60, "submission": t0 - 60, "start": t0,
              "end": t0 + 3600, "planned": _n(60), "limit": _n(120)},
        tres={"allocated": gpus, "requested": gpus},
    )  # fmt: skip
    first["state"]["current"] = ["PENDING", "REQUEUED"]
    second = _job(
        27, "COMPLETED",
        time={"elapsed": 3600, "eligible": t0 + 3600 + 120, "submission": t0 - 60,
              "start": t0 + 3840, "end": t0 + 3840 + 3600, "planned": _n(120), "limit": _n(120)},
        tres={"allocated": gpus, "requested": gpus},
    )  # fmt: skip
    path = tmp_path / "sacct_2026-11-30.json"
    path.write_text(_v40(first, second))
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        ingest_file(con, "sacct", path, IngestOptions(cluster="lab23", tz="UTC"))
        rows = con.execute(
            "SELECT state, end_at IS NOT NULL, gpus * elapsed_s FROM raw.slurm_rows"
            " WHERE is_allocation ORDER BY start_at"
        ).fetchall()
    assert rows == [("REQUEUED", True, 14400.0), ("COMPLETED", True, 14400.0)]


SARC = Path(__file__).resolve().parents[1] / "fixtures" / "sarc-sacct-json"


@pytest.mark.parametrize(
    ("name", "shape", "elapsed_s"),
    [
        ("sacct_23.02.6.json", "data_parser/v0.0.39", 83_853_331),
        ("sacct_23.11.5.json", "data_parser/v0.0.40", 102_228_976),
    ],
)
def test_sarc_json_of_two_releases(name: str, shape: str, elapsed_s: int) -> None:
    """Mila's real ``sacct --json`` of one running 2-GPU job as 23.02.6 and 23.11.5 write it.

    23.02 names the plugin object ``meta.plugins`` (read as ``unknown`` before), writes
    ``state.current`` as a string and ``exit_code`` with plain values; 23.11 as lists and
    ``{"set", "infinite", "number"}`` objects. By hand, from the files: Submit = Eligible =
    Start = 1613725209 = 18677 days × 86400 s + 32409 s = 2021-02-19 09:00:09 UTC; End 0
    (running: NULL); ``time.limit`` 7200 min × 60 = 432000 s; ``gres/gpu`` count 2 in both
    TRES lists; cpu 4; mem 32768 MB; one node; Planned = Start − Eligible = 0."""
    res = parse_sacct(SARC / name)
    assert res.info["json_shape"] == shape
    assert res.rejected.height == 0
    (row,) = res.rows.iter_rows(named=True)
    start = datetime(2021, 2, 19, 9, 0, 9, tzinfo=UTC)
    assert start.timestamp() == 1613725209
    assert row["job_id"] == "4" and row["step"] is None and row["cluster"] == "mila"
    assert row["state"] == "RUNNING"
    assert row["submit_at"] == row["eligible_at"] == row["start_at"] == start
    assert row["end_at"] is None
    assert row["planned_s"] == 0
    assert row["elapsed_s"] == elapsed_s
    assert row["timelimit_s"] == 432_000
    assert (row["gpus"], row["req_gpus"]) == (2.0, 2.0)
    assert (row["ncpus"], row["nnodes"], row["req_mem_mb"]) == (4, 1, 32768.0)
    assert (row["exit_code"], row["signal"]) == (0, 0)
    assert row["node_list"] == ["mila02"]
