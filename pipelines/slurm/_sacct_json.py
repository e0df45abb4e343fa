"""Turn ``sacct --json`` documents into the text parser's fields, one record per job and step.

Slurm's JSON changed shape over versions: 21.08 and 22.05 (``openapi/dbv0.0.37``/``dbv0.0.38``)
write plain numbers and strings; 23.02 onwards (``data_parser/v0.0.39`` …) wrap numbers as
``{"set": true, "infinite": false, "number": N}`` and states as lists. Each job and each of its
steps becomes a record with the same fields ``sacct --parsable2`` would print (JobID, State,
epoch times, TRES strings …), so the text parser types them by the very same rules.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pipelines._json import LONE_SURROGATE, MAX_ITEM_DEPTH, lone_surrogate, too_deep

__all__ = ["JSON_FIELDS", "JsonFieldError", "json_records", "json_shape"]

#: The ``--format`` fields the records carry (TimelimitRaw counts minutes, as sacct's does).
JSON_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "JobName",
    "User",
    "Group",
    "Account",
    "Partition",
    "QOS",
    "State",
    "Reason",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Planned",
    "Elapsed",
    "TimelimitRaw",
    "ExitCode",
    "NNodes",
    "NCPUS",
    "ReqMem",
    "AllocTRES",
    "ReqTRES",
    "NodeList",
    "SubmitLine",
    "WorkDir",
    "Flags",
    "Constraints",
    "KillRequestUser",
    "DerivedExitCode",
    # slurm-bridge external jobs carry {"pods": [...]} here (comment.administrator) and their
    # MCS label (mcs.label): pipelines.core.slurm_on_k8s reads both from `extra`.
    "AdminComment",
    "MCSLabel",
)


def json_shape(document: dict[str, Any]) -> str:
    """The document's shape: its ``data_parser`` or OpenAPI plugin version, e.g. ``dbv0.0.38``.

    Slurm 23.02 names the object ``meta.plugins`` (``{"data_parser": "data_parser/v0.0.39",
    "accounting_storage": …}``); 21.08, 22.05 and 23.11 onwards ``meta.plugin``.

    Args:
        document: the parsed ``sacct --json`` document (``meta`` is read).

    Returns:
        ``data_parser/v0.0.40``, ``openapi/dbv0.0.38``, … or ``unknown``.
    """
    meta = document.get("meta")
    if not isinstance(meta, dict):
        return "unknown"
    for name in ("plugin", "plugins"):
        plugin = meta.get(name)
        if not isinstance(plugin, dict):
            continue
        for key in ("data_parser", "type"):
            value = plugin.get(key)
            if isinstance(value, str) and value:
                return value
    return "unknown"


class JsonFieldError(ValueError):
    """A value of a ``sacct --json`` job or step that cannot be read.

    Attributes:
        field: where it is, as a path in the job item (``time.start``, ``tres.allocated count``,
            ``state.current``, ``step time.end``): the ``field`` of its rejected row.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _number(value: Any, field: str = "value") -> int | None:
    """A plain number, or the ``number`` of a set, finite ``{"set", "infinite", "number"}``;
    None when absent, unset or infinite.

    Raises:
        JsonFieldError: a value of another type (a string, a list, a boolean), naming ``field``.
    """
    if value is None:
        return None
    if isinstance(value, dict):
        if value.get("set", True) and not value.get("infinite", False):
            return _number(value.get("number"), field)
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JsonFieldError(field, f"{field} is not a number: {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        # ``1e400`` reads as inf, ``NaN``/``Infinity`` are accepted by Python's JSON reader
        raise JsonFieldError(field, f"{field} is not a finite number: {value!r}")
    return int(value)


def _object(value: Any, field: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, an empty one when absent.

    Raises:
        JsonFieldError: present but not an object.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise JsonFieldError(field, f"{field} is not an object: {value!r}")
    return value


def _infinite(value: Any) -> bool:
    return isinstance(value, dict) and bool(value.get("infinite"))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ""
    return str(value)


def _epoch(value: Any, field: str) -> str:
    seconds = _number(value, field)
    return str(seconds) if seconds else ""  # 0 means "not set"


#: The state flags Slurm's ``job_state_string`` (``src/common/slurm_protocol_defs.c``) names a
#: job by before its base state, in its order: what ``sacct`` prints for a record with them.
_STATE_FLAGS_FIRST = (
    "COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING",
)  # fmt: skip


def _state(value: Any, field: str) -> str:
    """The state as ``sacct`` prints it: ``"FAILED"`` (22.05), or from ``["PENDING", "REQUEUED"]``
    (23.02+: the base state, then its flags) the first flag of :data:`_STATE_FLAGS_FIRST`
    present, else the base state. A requeued attempt's record is written with the base state
    PENDING and the flag REQUEUED; read as PENDING its end would be dropped and its GPUs held
    to the cut-off.

    Raises:
        JsonFieldError: neither a string nor a list of strings.
    """
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        flags = set(value[1:])
        first = next((f for f in _STATE_FLAGS_FIRST if f in flags), None)
        return first or (value[0] if value else "")
    if not isinstance(value, str):
        raise JsonFieldError(field, f"{field} is not a state name: {value!r}")
    return value


def _exit_code(value: Any) -> str:
    """``return_code:signal`` as sacct prints it (``0:9`` for a job killed by SIGKILL)."""
    if not isinstance(value, dict):
        return ""
    code = _number(value.get("return_code"), "exit_code.return_code")
    signal = value.get("signal")
    sig = None
    if isinstance(signal, dict):
        sig = _number(signal.get("signal_id", signal.get("id")), "exit_code.signal")
    if code is None and sig is None and not value.get("status"):
        return ""
    return f"{code or 0}:{sig or 0}"


def _tres(items: Any, field: str) -> str:
    """A TRES list (``[{"type": "gres", "name": "gpu", "count": 2}, ...]``) as sacct's text:
    ``type[/name]=count``, sorted by name as sacct prints them, memory in MB.

    Raises:
        JsonFieldError: not a list, an item that is not an object, or a count that is not a number
            (a GPU count must never read as 0 GPUs).
    """
    if items is None:
        return ""
    if not isinstance(items, list):
        raise JsonFieldError(field, f"{field} is not a list: {items!r}")
    parts = []
    for item in items:
        if not isinstance(item, dict):
            raise JsonFieldError(field, f"{field} item is not an object: {item!r}")
        count = _number(item.get("count"), f"{field} count")
        kind = _text(item.get("type"))
        if count is None or not kind:
            continue
        name = _text(item.get("name"))
        key = f"{kind}/{name}" if name else kind
        parts.append(f"{key}={count}M" if key == "mem" else f"{key}={count}")
    return ",".join(sorted(parts))


def _tres_count(items: Any, kind: str) -> int | None:
    """The count of TRES ``kind`` (``cpu``, ``mem``, ``node``) in a TRES list."""
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == kind and not item.get("name"):
            count = _number(item.get("count"), f"TRES {kind} count")
            if count is not None:
                return count
    return None


def _req_mem(requested: Any, required: Any) -> str:
    """ReqMem as sacct 21.08+ prints it: the requested ``mem`` TRES (MB, no per-cpu/node
    suffix); else the ``required`` memory with its suffix (``Mc``/``Mn``) where the shape
    says which."""
    total = _tres_count(requested, "mem")
    if total is not None:
        return f"{total}M"
    required = _obj(required)
    per_cpu = _number(required.get("memory_per_cpu"), "required.memory_per_cpu")
    per_node = _number(required.get("memory_per_node"), "required.memory_per_node")
    if per_cpu:
        return f"{per_cpu}Mc"
    if per_node:
        return f"{per_node}Mn"
    memory = _number(required.get("memory"), "required.memory")
    return f"{memory}M" if memory is not None else ""


def _cpus(tres: Any, required: Any) -> str:
    count = _tres_count(tres, "cpu")
    if count is None:
        count = _number(_obj(required).get("CPUs"), "required.CPUs")
    return "" if count is None else str(count)


def _job_ids(job: dict[str, Any]) -> tuple[str, str]:
    """``(JobID, JobIDRaw)`` of a job: ``A_T``, ``A_[spec]``, ``H+O`` or the plain id."""
    value = job.get("job_id")
    if isinstance(value, float) and not value.is_integer():
        raise JsonFieldError("job_id", f"job_id is not a whole number: {value!r}")
    raw = _number(value, "job_id")
    if raw is None:
        raise JsonFieldError("job_id", "no job_id")
    array = _obj(job.get("array"))
    het = _obj(job.get("het"))
    array_job = _number(array.get("job_id"), "array.job_id")
    task_id = _number(array.get("task_id"), "array.task_id")
    task = _text(array.get("task"))
    if array_job and task_id is not None:
        return f"{array_job}_{task_id}", str(raw)
    if array_job and task:
        # Slurm keeps an array's throttle (``--array=1-10%2``) apart from the task string in
        # JSON (data_parser's ``array/limits/max/running/tasks``, ``array_max_tasks``; 0: none);
        # sacct's text joins them as ``A_[1-10%2]`` (``print_fields``), which the rows share.
        limits = _obj(_obj(_obj(array.get("limits")).get("max")).get("running"))
        throttle = _number(limits.get("tasks"), "array.limits.max.running.tasks")
        if throttle and "%" not in task:
            task = f"{task}%{throttle}"
        return f"{array_job}_[{task}]", str(raw)
    het_job = _number(het.get("job_id"), "het.job_id")
    offset = _number(het.get("job_offset"), "het.job_offset")
    if het_job and offset is not None:
        return f"{het_job}+{offset}", str(raw)
    return str(raw), str(raw)


def _step_id(step: dict[str, Any]) -> str:
    """The step suffix (``batch``, ``extern``, ``0``) of a step record."""
    inner = step.get("step")
    ident: Any = inner.get("id") if isinstance(inner, dict) else None
    if isinstance(ident, dict):  # {"job_id": 7, "step_id": "batch"}
        ident = ident.get("step_id")
    text = _text(ident)
    return text.rsplit(".", 1)[-1] if "." in text else text


def _job_record(job: dict[str, Any]) -> dict[str, str]:
    job_id, raw = _job_ids(job)
    if "time" not in job:
        raise JsonFieldError("time", "no time object (submission, start and end times)")
    time = _object(job.get("time"), "time")
    state = _object(job.get("state"), "state")
    tres = _object(job.get("tres"), "tres")
    limit = time.get("limit")
    start = _number(time.get("start"), "time.start")
    eligible = _number(time.get("eligible"), "time.eligible")
    planned = _number(time.get("planned"), "time.planned")
    if planned is None and start and eligible:
        planned = max(start - eligible, 0)  # what sacct prints as Reserved / Planned
    if planned is not None and planned < 0:
        # data_parser v0.0.40+: a pending job whose begin time is in the future has
        # ``planned`` = now − eligible < 0; it has not waited yet (sacct prints 00:00:00)
        planned = 0
    return {
        "JobID": job_id,
        "JobIDRaw": raw,
        "Cluster": _text(job.get("cluster")),
        "JobName": _text(job.get("name")),
        "User": _text(job.get("user")),
        "Group": _text(job.get("group")),
        "Account": _text(job.get("account")),
        "Partition": _text(job.get("partition")),
        "QOS": _text(job.get("qos")),
        "State": _state(state.get("current"), "state.current"),
        "Reason": _text(state.get("reason")),
        "Submit": _epoch(time.get("submission"), "time.submission"),
        "Eligible": _epoch(time.get("eligible"), "time.eligible"),
        "Start": _epoch(time.get("start"), "time.start"),
        "End": _epoch(time.get("end"), "time.end"),
        "Planned": "" if planned is None else str(planned),
        "Elapsed": _text(_number(time.get("elapsed"), "time.elapsed")),
        "TimelimitRaw": "UNLIMITED" if _infinite(limit) else _text(_number(limit, "time.limit")),
        "ExitCode": _exit_code(job.get("exit_code")),
        "NNodes": _text(
            _number(job.get("allocation_nodes"), "allocation_nodes")
            or _tres_count(tres.get("requested"), "node")
        ),
        "NCPUS": _cpus(tres.get("allocated"), job.get("required")),
        "ReqMem": _req_mem(tres.get("requested"), job.get("required")),
        "AllocTRES": _tres(tres.get("allocated"), "tres.allocated"),
        "ReqTRES": _tres(tres.get("requested"), "tres.requested"),
        "NodeList": _text(job.get("nodes")),
        "SubmitLine": _text(job.get("submit_line")),
        "WorkDir": _text(job.get("working_directory")),
        "Flags": _text(job.get("flags")),
        "Constraints": _text(job.get("constraints")),
        "KillRequestUser": _text(job.get("kill_request_user")),
        "DerivedExitCode": _exit_code(job.get("derived_exit_code")),
        "AdminComment": _text(_obj(job.get("comment")).get("administrator")),
        "MCSLabel": _text(_obj(job.get("mcs")).get("label")),
    }


def _step_record(job: dict[str, str], step: dict[str, Any]) -> dict[str, str]:
    """A step as sacct prints it: the job's ids with the step suffix, Submit = Start."""
    suffix = _step_id(step)
    if not suffix:
        raise JsonFieldError("step.id", "step has no step id")
    time = _object(step.get("time"), "step time")
    nodes = _object(step.get("nodes"), "step nodes")
    tres = _object(step.get("tres"), "step tres")
    inner = _obj(step.get("step"))
    start = _epoch(time.get("start"), "step time.start")
    return {
        **{key: "" for key in JSON_FIELDS},
        "JobID": f"{job['JobID']}.{suffix}",
        "JobIDRaw": f"{job['JobIDRaw']}.{suffix}",
        "Cluster": job["Cluster"],
        "JobName": _text(inner.get("name")),
        "Account": job["Account"],
        "State": _state(step.get("state"), "step state"),
        "Submit": start,
        "Eligible": start,
        "Start": start,
        "End": _epoch(time.get("end"), "step time.end"),
        "Elapsed": _text(_number(time.get("elapsed"), "step time.elapsed")),
        "ExitCode": _exit_code(step.get("exit_code")),
        "NNodes": _text(_number(nodes.get("count"), "step nodes.count")),
        "NCPUS": _cpus(tres.get("allocated"), None),
        "AllocTRES": _tres(tres.get("allocated"), "step tres.allocated"),
        "NodeList": _text(nodes.get("range")),
        "KillRequestUser": _text(step.get("kill_request_user")),
    }


def json_records(
    document: dict[str, Any],
) -> tuple[list[tuple[int, str, dict[str, str]]], list[tuple[int, str, str, str | None]]]:
    """One record per job and per step, in document order.

    Args:
        document: the parsed ``sacct --json`` document.

    Returns:
        ``(records, rejected)``: records as ``(item_no, raw_json, fields)`` (``item_no`` is the
        job's 1-based index in ``jobs``, shared by its steps) and rejected items as
        ``(item_no, raw_json, reason, field)``: ``field`` is the path of the value that could
        not be read (``time.start``, ``tres.allocated count``; :class:`JsonFieldError`), None
        where the whole item is bad (not an object, nested too deep, a lone surrogate).
    """
    jobs = document.get("jobs")
    records: list[tuple[int, str, dict[str, str]]] = []
    rejected: list[tuple[int, str, str, str | None]] = []
    for item_no, job in enumerate(jobs if isinstance(jobs, list) else [], start=1):
        if too_deep(job, MAX_ITEM_DEPTH):
            rejected.append(
                (item_no, "", f"bad job item: nested deeper than {MAX_ITEM_DEPTH} levels", None)
            )
            continue
        if lone_surrogate(job):
            # a lone surrogate (``"\ud800"``) is valid JSON but not text: keep it escaped
            raw = json.dumps(job, ensure_ascii=True, separators=(",", ":"))
            rejected.append((item_no, raw, f"bad job item: {LONE_SURROGATE}", None))
            continue
        raw = json.dumps(job, ensure_ascii=False, separators=(",", ":"))
        if not isinstance(job, dict):
            rejected.append((item_no, raw, "job item is not an object", None))
            continue
        steps = job.get("steps")
        try:
            record = _job_record(job)
            if steps is not None and not isinstance(steps, list):
                raise JsonFieldError("steps", f"steps is not a list: {steps!r}")
        except ValueError as err:
            rejected.append((item_no, raw, f"bad job item: {err}", getattr(err, "field", None)))
            continue
        records.append((item_no, raw, record))
        for step in steps or []:
            step_raw = json.dumps(step, ensure_ascii=False, separators=(",", ":"))
            if not isinstance(step, dict):
                rejected.append((item_no, step_raw, "bad step item: not an object", None))
                continue
            try:
                records.append((item_no, step_raw, _step_record(record, step)))
            except ValueError as err:
                field = getattr(err, "field", None)
                rejected.append((item_no, step_raw, f"bad step item: {err}", field))
    return records, rejected
