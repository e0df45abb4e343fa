"""``scontrol show job -d``: the GPU indices each job holds on each node, and its live source.

Inputs are literal text: real Slurm 22.05.8 output of the project's test cluster (``REAL_*``,
jobs submitted with ``--gres=gpu:N``; the GPUs are the fake ``/dev/nvidia[0-7]`` of its
gres.conf) and site-shaped samples (``SITE_*``: typed and MIG GRES, different indices per node,
``IDX:N/A``). Expected rows are read off the text by hand.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import polars as pl
import pytest

from pipelines._file_source import files_for_day
from pipelines._parse_result import InputFormatError
from pipelines.ingest import IngestOptions, ingest_file, parse_file, state_source
from pipelines.slurm._scontrol_jobs import SCONTROL_JOB_SCHEMA, parse_scontrol_jobs
from pipelines.slurm.resources import STATE_KINDS, SlurmStateCliSource
from pipelines.warehouse import RAW_TABLES, connect, init_warehouse

#: ``scontrol show job -d`` (multi-line, ``TZ=UTC``) on the test cluster: a 2-node 16-GPU job
#: (both nodes got GPUs 0-7, so Slurm prints them as one ``Nodes=gpu-[001-002]`` entry), a
#: running array task, a CPU-only job (``GRES=`` empty) and the array's pending rest. The
#: whitespace-only line scontrol prints at the end of each record is left out here.
REAL_MULTI = """\
JobId=1 JobName=two node
   UserId=bob(51002) GroupId=bob(51002) MCS_label=N/A
   Priority=11428 Nice=0 Account=team-b QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   DerivedExitCode=0:0
   RunTime=00:00:51 TimeLimit=00:10:00 TimeMin=N/A
   SubmitTime=2026-11-30T04:00:01 EligibleTime=2026-11-30T04:00:01
   AccrueTime=2026-11-30T04:00:01
   StartTime=2026-11-30T04:00:01 EndTime=2026-11-30T04:10:01 Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-30T04:00:01 Scheduler=Backfill
   Partition=gpu AllocNode:Sid=localhost:15609
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=gpu-[001-002]
   BatchHost=gpu-001
   NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=4000M,node=2,billing=2,gres/gpu=16
   Socks/Node=* NtasksPerN:B:S:C=1:0:*:* CoreSpec=*
   JOB_GRES=gpu:16
     Nodes=gpu-[001-002] CPU_IDs=16 Mem=2000 GRES=gpu:8(IDX:0-7)
   MinCPUsNode=1 MinMemoryCPU=2000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/tmp
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=
   TresPerNode=gres:gpu:8

JobId=6 ArrayJobId=3 ArrayTaskId=0 ArrayTaskThrottle=2 JobName=arr
   UserId=carol(51003) GroupId=carol(51003) MCS_label=N/A
   Priority=10427 Nice=0 Account=team-c QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   DerivedExitCode=0:0
   RunTime=00:00:03 TimeLimit=00:10:00 TimeMin=N/A
   SubmitTime=2026-11-30T04:00:01 EligibleTime=2026-11-30T04:00:01
   AccrueTime=2026-11-30T04:00:01
   StartTime=2026-11-30T04:00:49 EndTime=2026-11-30T04:10:49 Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-30T04:00:49 Scheduler=Main
   Partition=gpu AllocNode:Sid=localhost:15609
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=gpu-003
   BatchHost=gpu-003
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=2000M,node=1,billing=1,gres/gpu=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   JOB_GRES=gpu:1
     Nodes=gpu-003 CPU_IDs=1 Mem=2000 GRES=gpu:1(IDX:3)
   MinCPUsNode=1 MinMemoryCPU=2000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/tmp
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=
   TresPerNode=gres:gpu:1

JobId=4 JobName=cpu
   UserId=dave(51004) GroupId=dave(51004) MCS_label=N/A
   Priority=10366 Nice=0 Account=team-c QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   DerivedExitCode=0:0
   RunTime=00:00:03 TimeLimit=00:10:00 TimeMin=N/A
   SubmitTime=2026-11-30T04:00:01 EligibleTime=2026-11-30T04:00:01
   AccrueTime=2026-11-30T04:00:01
   StartTime=2026-11-30T04:00:49 EndTime=2026-11-30T04:10:49 Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-30T04:00:49 Scheduler=Main
   Partition=gpu AllocNode:Sid=localhost:15609
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=gpu-003
   BatchHost=gpu-003
   NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=4000M,node=1,billing=2
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   JOB_GRES=(null)
     Nodes=gpu-003 CPU_IDs=3-4 Mem=4000 GRES=
   MinCPUsNode=2 MinMemoryCPU=2000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/tmp
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=

JobId=3 ArrayJobId=3 ArrayTaskId=2 ArrayTaskThrottle=2 JobName=arr
   UserId=carol(51003) GroupId=carol(51003) MCS_label=N/A
   Priority=10427 Nice=0 Account=team-c QOS=normal
   JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   DerivedExitCode=0:0
   RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A
   SubmitTime=2026-11-30T04:00:01 EligibleTime=Unknown
   AccrueTime=2026-11-30T04:00:01
   StartTime=Unknown EndTime=Unknown Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-30T04:00:49 Scheduler=Main
   Partition=gpu AllocNode:Sid=localhost:15609
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=
   NumNodes=1-1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=2000M,node=1,billing=1,gres/gpu=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=2000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/tmp
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=
   TresPerNode=gres:gpu:1
"""

#: The same cluster, ``scontrol -d -o show job`` with ``SLURM_TIME_FORMAT=%s``: a 3-GPU job, an
#: array task and a pending job (no ``Nodes=`` entry).
REAL_ONELINER = (
    "JobId=2 JobName=three UserId=alice(51001) GroupId=alice(51001) MCS_label=N/A "
    "Priority=10551 Nice=0 Account=team-a QOS=normal JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "DerivedExitCode=0:0 RunTime=00:00:51 TimeLimit=00:10:00 TimeMin=N/A "
    "SubmitTime=1796011201 EligibleTime=1796011201 AccrueTime=1796011201 StartTime=1796011201 "
    "EndTime=1796011801 Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=1796011201 Scheduler=Backfill Partition=gpu AllocNode:Sid=localhost:15609 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList=gpu-003 BatchHost=gpu-003 NumNodes=1 "
    "NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,mem=2000M,node=1,billing=1,gres/gpu=3 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* "
    "CoreSpec=* JOB_GRES=gpu:3   Nodes=gpu-003 CPU_IDs=0 Mem=2000 GRES=gpu:3(IDX:0-2) "
    "MinCPUsNode=1 MinMemoryCPU=2000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp "
    "StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= TresPerNode=gres:gpu:3 \n"
    "JobId=7 ArrayJobId=3 ArrayTaskId=1 ArrayTaskThrottle=2 JobName=arr UserId=carol(51003) "
    "GroupId=carol(51003) MCS_label=N/A Priority=10427 Nice=0 Account=team-c QOS=normal "
    "JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
    "ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:03 TimeLimit=00:10:00 TimeMin=N/A "
    "SubmitTime=1796011201 EligibleTime=1796011201 AccrueTime=1796011201 StartTime=1796011249 "
    "EndTime=1796011849 Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=1796011249 Scheduler=Main Partition=gpu AllocNode:Sid=localhost:15609 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList=gpu-003 BatchHost=gpu-003 NumNodes=1 "
    "NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,mem=2000M,node=1,billing=1,gres/gpu=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* "
    "CoreSpec=* JOB_GRES=gpu:1   Nodes=gpu-003 CPU_IDs=2 Mem=2000 GRES=gpu:1(IDX:4) "
    "MinCPUsNode=1 MinMemoryCPU=2000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp "
    "StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= TresPerNode=gres:gpu:1 \n"
    "JobId=5 JobName=pend UserId=alice(51001) GroupId=alice(51001) MCS_label=N/A "
    "Priority=5415 Nice=0 Account=team-a QOS=normal JobState=PENDING Reason=Resources "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "DerivedExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A "
    "SubmitTime=1796011201 EligibleTime=1796011201 AccrueTime=1796011201 StartTime=1796011849 "
    "EndTime=1796012449 Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=1796011251 Scheduler=Backfill:* Partition=gpu "
    "AllocNode:Sid=localhost:15609 ReqNodeList=(null) ExcNodeList=(null) NodeList= "
    "SchedNodeList=gpu-[001-004] NumNodes=4-4 NumCPUs=4 NumTasks=4 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=4,mem=8000M,node=4,billing=4,gres/gpu=32 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=2000M MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) "
    "Network=(null) Command=(null) WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null "
    "StdOut=/dev/null Power= TresPerNode=gres:gpu:8 \n"
)

#: A site's typed GPUs (multi-line, naive times in the site's zone, Europe/Amsterdam = UTC+1 in
#: November): a 3-node job holding different GPUs on each node, its last two nodes alike (one
#: ``Nodes=a100-[018-019]`` entry), then a MIG job (two ``1g.10gb`` slices).
SITE_MULTI = """\
JobId=4242 JobName=train-llm
   UserId=erin(61007) GroupId=ml(6100) MCS_label=N/A
   Priority=48211 Nice=0 Account=ml-research QOS=high
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=02:14:07 TimeLimit=2-00:00:00 TimeMin=N/A
   SubmitTime=2026-11-29T21:02:44 EligibleTime=2026-11-29T21:02:44
   AccrueTime=2026-11-29T21:02:44
   StartTime=2026-11-29T21:40:10 EndTime=2026-12-01T21:40:10 Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-29T21:40:10 Scheduler=Backfill
   Partition=a100 AllocNode:Sid=login-01:88123
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=a100-[017-019]
   BatchHost=a100-017
   NumNodes=3 NumCPUs=64 NumTasks=8 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
   TRES=cpu=64,mem=512000M,node=3,billing=64,gres/gpu=8,gres/gpu:a100=8
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   JOB_GRES=gpu:a100:8
     Nodes=a100-017 CPU_IDs=0-31 Mem=256000 GRES=gpu:a100:4(IDX:0,2-3,6)
     Nodes=a100-[018-019] CPU_IDs=0-15 Mem=128000 GRES=gpu:a100:2(IDX:4-5)
   MinCPUsNode=8 MinMemoryNode=128000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=/home/erin/train.sbatch
   WorkDir=/home/erin
   StdErr=/home/erin/slurm-4242.out
   StdIn=/dev/null
   StdOut=/home/erin/slurm-4242.out
   Power=
   TresPerJob=gres:gpu:8

JobId=4300 JobName=notebook
   UserId=frank(61011) GroupId=ml(6100) MCS_label=N/A
   Priority=31002 Nice=0 Account=ml-research QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   StartTime=2026-11-30T01:05:00 EndTime=2026-11-30T09:05:00 Deadline=N/A
   Partition=mig AllocNode:Sid=login-02:4411
   NodeList=h100-002
   BatchHost=h100-002
   NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=2 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=16000M,node=1,billing=2,gres/gpu=2,gres/gpu:1g.10gb=2
   JOB_GRES=gpu:1g.10gb:2
     Nodes=h100-002 CPU_IDs=8-9 Mem=16000 GRES=gpu:1g.10gb:2(IDX:3-4)
   MinCPUsNode=2 MinMemoryNode=16000M MinTmpDiskNode=0
   TresPerNode=gres:gpu:1g.10gb:2
"""

#: Site one-liners (epoch times), trimmed to the keys that matter here: GPUs of two types on one
#: node, a GPU without an index (``IDX:N/A``), the count-less form of older Slurm
#: (``gpu(IDX:0,2-3)``), a count without indices (``CNT:``) and a GPU beside another GRES.
SITE_ONELINER = (
    "JobId=4301 JobName=mixed JobState=RUNNING StartTime=1796013000 NodeList=h100-003 "
    "JOB_GRES=gpu:h100:1,gpu:3g.40gb:1   Nodes=h100-003 CPU_IDs=0-3 Mem=64000 "
    "GRES=gpu:h100:1(IDX:0),gpu:3g.40gb:1(IDX:9) MinCPUsNode=1\n"
    "JobId=4302 JobName=noidx JobState=RUNNING StartTime=1796013060 NodeList=v100-001 "
    "JOB_GRES=gpu:1   Nodes=v100-001 CPU_IDs=4 Mem=8000 GRES=gpu:1(IDX:N/A) MinCPUsNode=1\n"
    "JobId=4303 JobName=old JobState=SUSPENDED StartTime=1796013120 NodeList=v100-002 "
    "Nodes=v100-002 CPU_IDs=0-2 Mem=8000 GRES=gpu(IDX:0,2-3) MinCPUsNode=1\n"
    "JobId=4304 JobName=cnt JobState=RUNNING StartTime=1796013180 NodeList=a100-020 "
    "Nodes=a100-020 CPU_IDs=0 Mem=8000 GRES=gpu:a100(CNT:2) MinCPUsNode=1\n"
    "JobId=4305 JobName=nic JobState=COMPLETING StartTime=1796013240 NodeList=a100-021 "
    "Nodes=a100-021 CPU_IDs=0 Mem=8000 GRES=gpu:2(IDX:6-7),nic:1(IDX:0) MinCPUsNode=1\n"
)

COLUMNS = ["job_id", "array_job_id", "array_task_id", "job_state", "start_at", "node",
           "gpu_type", "gpu_indices", "gpus", "gres", "line_no"]  # fmt: skip


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def _rows(frame: pl.DataFrame) -> list[tuple[object, ...]]:
    return list(frame.select(COLUMNS).iter_rows())


# --------------------------------------------------------------------------- real 22.05 output


def test_real_multiline_rows_per_job_and_node() -> None:
    """The 2-node job gives one row per node of ``gpu-[001-002]``; the array task one row."""
    result = parse_scontrol_jobs("show_job.txt", cluster="testgpu", text=REAL_MULTI)
    assert result.rejected.height == 0
    assert result.rows.schema == pl.Schema(SCONTROL_JOB_SCHEMA)
    start_1, start_6 = _utc("2026-11-30T04:00:01"), _utc("2026-11-30T04:00:49")
    eight = list(range(8))
    assert _rows(result.rows) == [
        ("1", None, None, "RUNNING", start_1, "gpu-001", None, eight, 8, "gpu:8(IDX:0-7)", 20),
        ("1", None, None, "RUNNING", start_1, "gpu-002", None, eight, 8, "gpu:8(IDX:0-7)", 20),
        ("6", "3", 0, "RUNNING", start_6, "gpu-003", None, [3], 1, "gpu:1(IDX:3)", 51),
    ]  # fmt: skip
    assert set(result.rows["cluster"]) == {"testgpu"}
    assert set(result.rows["file"]) == {"show_job.txt"}
    assert result.rows["snapshot_at"].null_count() == 3
    # 4 records: the CPU-only job (GRES= empty) and the pending rest of the array give no row
    assert (result.info["jobs"], result.info["gpu_jobs"]) == (4, 2)


def test_real_oneliner_epoch_rows() -> None:
    """``-o`` with epoch times: the 3-GPU job's 3 indices and the array task; pending: no row."""
    result = parse_scontrol_jobs("jobs.txt", text=REAL_ONELINER)
    assert result.rejected.height == 0
    assert _rows(result.rows) == [
        ("2", None, None, "RUNNING", _utc("2026-11-30T04:00:01"), "gpu-003", None, [0, 1, 2],
         3, "gpu:3(IDX:0-2)", 1),
        ("7", "3", 1, "RUNNING", _utc("2026-11-30T04:00:49"), "gpu-003", None, [4], 1,
         "gpu:1(IDX:4)", 2),
    ]  # fmt: skip
    assert (result.info["jobs"], result.info["gpu_jobs"]) == (3, 2)


def test_whitespace_only_line_ends_a_record() -> None:
    """scontrol ends each multi-line record with a line of spaces, then an empty line."""
    text = (
        "JobId=11 JobName=a\n   JobState=RUNNING StartTime=1796011201\n"
        "     Nodes=gpu-001 CPU_IDs=0 Mem=100 GRES=gpu:1(IDX:5)\n   \n\n"
        "JobId=12 JobName=b\n   JobState=RUNNING StartTime=1796011201\n"
        "     Nodes=gpu-002 CPU_IDs=0 Mem=100 GRES=gpu:2(IDX:0-1)\n   \n\n"
    )
    result = parse_scontrol_jobs("x", text=text)
    assert result.rejected.height == 0
    assert result.rows.select("job_id", "node", "gpu_indices", "line_no").rows() == [
        ("11", "gpu-001", [5], 3),
        ("12", "gpu-002", [0, 1], 8),
    ]


def test_no_jobs_in_the_system_is_empty() -> None:
    """An idle slurmctld: scontrol's one message, no rows and nothing rejected."""
    for text in ("No jobs in the system\n", ""):
        result = parse_scontrol_jobs("x", text=text)
        assert (result.rows.height, result.rejected.height) == (0, 0)
        assert result.rows.schema == pl.Schema(SCONTROL_JOB_SCHEMA)


# --------------------------------------------------------------------------- site samples


def test_different_indices_per_node_and_typed_gres() -> None:
    """Each node's own IDX list; ``a100-[018-019]`` gives both hosts GPUs 4-5; MIG slices."""
    result = parse_scontrol_jobs("site.txt", tz="Europe/Amsterdam", text=SITE_MULTI)
    assert result.rejected.height == 0
    start, mig_start = _utc("2026-11-29T20:40:10"), _utc("2026-11-30T00:05:00")
    assert _rows(result.rows) == [
        ("4242", None, None, "RUNNING", start, "a100-017", "a100", [0, 2, 3, 6], 4,
         "gpu:a100:4(IDX:0,2-3,6)", 19),
        ("4242", None, None, "RUNNING", start, "a100-018", "a100", [4, 5], 2,
         "gpu:a100:2(IDX:4-5)", 20),
        ("4242", None, None, "RUNNING", start, "a100-019", "a100", [4, 5], 2,
         "gpu:a100:2(IDX:4-5)", 20),
        ("4300", None, None, "RUNNING", mig_start, "h100-002", "1g.10gb", [3, 4], 2,
         "gpu:1g.10gb:2(IDX:3-4)", 43),
    ]  # fmt: skip
    # the job's GPUs over its nodes add up to its JOB_GRES / TRES (gres/gpu=8)
    assert result.rows.filter(pl.col("job_id") == "4242")["gpus"].sum() == 8


def test_mixed_types_missing_indices_and_old_forms() -> None:
    """Two types: type NULL, indices of both; ``IDX:N/A``/``CNT:``: count kept, indices NULL."""
    snap = dt.datetime(2026, 11, 30, 5, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    result = parse_scontrol_jobs("site1.txt", text=SITE_ONELINER, snapshot_at=snap)
    assert result.rejected.height == 0
    assert _rows(result.rows) == [
        ("4301", None, None, "RUNNING", _utc("2026-11-30T04:30:00"), "h100-003", None, [0, 9],
         2, "gpu:h100:1(IDX:0),gpu:3g.40gb:1(IDX:9)", 1),
        ("4302", None, None, "RUNNING", _utc("2026-11-30T04:31:00"), "v100-001", None, None,
         1, "gpu:1(IDX:N/A)", 2),
        ("4303", None, None, "SUSPENDED", _utc("2026-11-30T04:32:00"), "v100-002", None,
         [0, 2, 3], 3, "gpu(IDX:0,2-3)", 3),
        ("4304", None, None, "RUNNING", _utc("2026-11-30T04:33:00"), "a100-020", "a100", None,
         2, "gpu:a100(CNT:2)", 4),
        ("4305", None, None, "COMPLETING", _utc("2026-11-30T04:34:00"), "a100-021", None,
         [6, 7], 2, "gpu:2(IDX:6-7),nic:1(IDX:0)", 5),
    ]  # fmt: skip
    assert result.rows["snapshot_at"].to_list() == [_utc("2026-11-30T04:00:00")] * 5


def test_naive_times_are_read_in_the_given_zone() -> None:
    """The same ISO StartTime read as UTC and as Amsterdam time is an hour apart."""
    utc = parse_scontrol_jobs("x", text=SITE_MULTI).rows["start_at"][0]
    ams = parse_scontrol_jobs("x", tz="Europe/Amsterdam", text=SITE_MULTI).rows["start_at"][0]
    assert utc - ams == dt.timedelta(hours=1)


# --------------------------------------------------------------------------- rejects


def _one(job: int, gres: str, *, nodes: str = "gpu-001", start: str = "1796011201") -> str:
    return (
        f"JobId={job} JobName=j{job} JobState=RUNNING StartTime={start} NodeList={nodes} "
        f"Nodes={nodes} CPU_IDs=0 Mem=100 GRES={gres} MinCPUsNode=1\n"
    )


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        (_one(21, "gpu:2(IDX:0)"), "GRES", "counts 2 GPUs but lists 1 indices"),
        (_one(22, "gpu:2(IDX:1-0)"), "GRES", "bad GPU index list"),
        (_one(23, "gpu:2(IDX:0-99999999)"), "GRES", "bad GPU index list"),
        (_one(24, "gpu(IDX:N/A)"), "GRES", "without a count or indices"),
        (_one(25, "gpu:2(IDX:0-1"), "GRES", "unreadable GPU GRES item"),
        (_one(26, "gpu:1(IDX:0)", nodes="gpu-[001-"), "Nodes", "bad host list"),
        (_one(27, "gpu:1(IDX:0)", start="yesterday"), "StartTime", "not a time"),
        ("JobId=x28 JobState=RUNNING\n", "JobId", "not a job id"),
        ("JobId=29 ArrayJobId=29 ArrayTaskId=1-3 JobState=RUNNING StartTime=1796011201 "
         "Nodes=gpu-001 CPU_IDs=0 Mem=1 GRES=gpu:1(IDX:0)\n", "ArrayTaskId", "not an integer"),
        ("JobId=30 JobState=RUNNING StartTime=1796011201 Nodes=gpu-001 CPU_IDs=0 Mem=1 "
         "GRES=gpu:1(IDX:0) Nodes=gpu-[001-002] CPU_IDs=1 Mem=1 GRES=gpu:1(IDX:1)\n",
         "Nodes", "host gpu-001 is listed twice"),
    ],
)  # fmt: skip
def test_malformed_record_is_rejected_whole(record: str, field: str, reason: str) -> None:
    """A bad record goes to rejected with its raw text; the records around it still parse."""
    text = _one(20, "gpu:1(IDX:7)") + record + _one(31, "gpu:1(IDX:6)", nodes="gpu-002")
    result = parse_scontrol_jobs("bad.txt", text=text)
    assert result.rows.select("job_id", "node", "gpu_indices").rows() == [
        ("20", "gpu-001", [7]),
        ("31", "gpu-002", [6]),
    ]
    (rejected,) = result.rejected.to_dicts()
    assert (rejected["file"], rejected["line_no"], rejected["line_end"]) == ("bad.txt", 2, 2)
    assert rejected["raw"] == record.rstrip("\n")
    assert rejected["field"] == field
    assert reason in rejected["reason"]


def test_multiline_reject_spans_the_record_and_stray_lines_are_rejected() -> None:
    """A rejected multi-line record keeps all its lines; a line outside a record is rejected."""
    text = (
        "JobId=40 JobName=a\n   JobState=RUNNING StartTime=1796011201\n"
        "     Nodes=gpu-001 CPU_IDs=0 Mem=100 GRES=gpu:3(IDX:0-1)\n"
        "\nsomething else\n"
    )
    result = parse_scontrol_jobs("bad.txt", text=text)
    assert result.rows.height == 0
    assert result.rejected.select("line_no", "line_end", "field", "raw").rows() == [
        (1, 3, "GRES", text.split("\n\n")[0]),
        (5, 5, None, "something else"),
    ]


def test_other_output_is_not_scontrol_job_output() -> None:
    """Text without a single ``JobId=`` record is the wrong file, not rejected rows."""
    with pytest.raises(InputFormatError, match="no 'JobId=' record"):
        parse_scontrol_jobs("nodes.txt", text="NodeName=gpu-001 Arch=x86_64\n")
    with pytest.raises(InputFormatError, match="unknown IANA time zone"):
        parse_scontrol_jobs("x", tz="Mars/Olympus", text=REAL_ONELINER)


# --------------------------------------------------------------------------- the live source


def test_jobs_kind_command_and_default_kinds() -> None:
    """``jobs`` runs ``scontrol -d -o show job`` for the cluster; it is fetched only on request."""
    assert "jobs" in STATE_KINDS
    source = SlurmStateCliSource(spool_dir="/tmp/x", bin_dir="/opt/slurm/bin", kinds=["jobs"])
    assert source.commands("c1", "2026-12-31") == {
        "jobs": ["/opt/slurm/bin/scontrol", "-M", "c1", "--details", "--oneliner", "show", "job"]
    }
    assert "jobs" not in SlurmStateCliSource(spool_dir="/tmp/x").kinds


def test_jobs_file_is_spooled_found_and_loaded(tmp_path: Path) -> None:
    """Spooled ``jobs_<day>.txt`` is a ``slurm-state`` input loaded into raw.slurm_job_gres."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sample = tmp_path / "sample.txt"
    sample.write_text(REAL_ONELINER, encoding="utf-8")
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(f'#!/bin/sh\ncat "{sample}"\n', encoding="utf-8")
    scontrol.chmod(scontrol.stat().st_mode | stat.S_IXUSR)
    spool = tmp_path / "inputs"
    source = SlurmStateCliSource(spool_dir=str(spool), bin_dir=str(bin_dir), kinds=["jobs"])
    (path,) = source.fetch("c1", "2026-11-30")
    assert path == spool / "c1" / "slurm_state" / "jobs_2026-11-30.txt"
    assert files_for_day(spool / "c1", "slurm-state", "2026-11-30") == [path]
    assert state_source(path) == "slurm-jobs-gres"
    assert RAW_TABLES["slurm-jobs-gres"] == "raw.slurm_job_gres"
    opts = IngestOptions(cluster="c1")
    assert parse_file("slurm-state", path, opts).rows.height == 2
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        stats = ingest_file(con, "slurm-state", path, opts)
        assert (stats.source, stats.rows_loaded, stats.rows_rejected) == (
            "slurm-jobs-gres", 2, 0)  # fmt: skip
        loaded = con.sql(
            "SELECT job_id, node, gpu_indices, gpus FROM raw.slurm_job_gres ORDER BY job_id"
        ).fetchall()
    assert loaded == [("2", "gpu-003", [0, 1, 2], 3), ("7", "gpu-003", [4], 1)]


def test_snapshots_are_dated_by_the_file_and_the_latest_wins(tmp_path: Path) -> None:
    """``scontrol show job -d`` prints no time: each spooled snapshot's rows carry the file's
    modification time as ``snapshot_at``, and the map the build reads
    (``metrics_build._gpu_map`` → ``gres_holdings``) keeps the latest snapshot of a (job, start,
    node), whichever was loaded last. Here the snapshot of 12:00 (job 2 on GPUs 0-2) is loaded
    after the one of 12:30 (the same job, start and node on GPUs 5-7): GPUs 5-7 win. Without
    the dates the later load won (GPUs 0-2)."""
    from metrics.attribution import gres_holdings
    from pipelines.analytics.metrics_build import _gpu_map

    later = REAL_ONELINER.replace("GRES=gpu:3(IDX:0-2)", "GRES=gpu:3(IDX:5-7)")
    assert later != REAL_ONELINER
    spool = tmp_path / "c1" / "slurm_state"
    spool.mkdir(parents=True)
    files = {}
    snapshots = (
        ("jobs_2026-11-29.txt", later, dt.datetime(2026, 11, 30, 12, 30, tzinfo=dt.UTC)),
        ("jobs_2026-11-30.txt", REAL_ONELINER, dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)),
    )
    for name, text, at in snapshots:
        path = spool / name
        path.write_text(text, encoding="utf-8")
        os.utime(path, (at.timestamp(), at.timestamp()))
        files[name] = (path, at)
    opts = IngestOptions(cluster="c1")
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        for path, _ in files.values():  # the 12:30 snapshot first
            ingest_file(con, "slurm-state", path, opts)
        dated = con.sql(
            "SELECT file, snapshot_at FROM raw.slurm_job_gres WHERE job_id = '2' ORDER BY file"
        ).fetchall()
        gres = _gpu_map(con)
    assert [(Path(f).name, t) for f, t in dated] == [
        (name, at) for name, (_, at) in sorted(files.items())
    ]
    job = pl.DataFrame(
        {"source": ["slurm"], "cluster": ["c1"], "job_id": ["2"], "job_id_raw": ["2"],
         "attempt": [0], "team": ["t"],
         "start_at": [dt.datetime.fromtimestamp(1796011201, tz=dt.UTC)], "end_at": [None]},
        schema_overrides={"start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    held = gres_holdings(gres.lazy(), job.lazy()).collect().sort("device_index")
    assert held["device_index"].to_list() == [5, 6, 7]


# --------------------------------------------------------------------------- Slurm before 19.05


def test_gres_idx_detail_of_slurm_before_19_05() -> None:
    """Slurm 17.11/18.08 named a node's GPU indices ``GRES_IDX=gpu(IDX:0,2-3,5)``: still a row.

    ``tests/fixtures/scontrol-jobs-gres-idx`` (HUJI clusters, real records): of its 4 jobs only
    153291 holds GPUs (``TRES=…,gres/gpu=4``): ``Nodes=node-06 … GRES_IDX=gpu(IDX:0,2-3,5)`` is
    indices 0, 2, 3, 5 = 4 GPUs, untyped; its record starts on line 63, the entry is line 81.
    Jobs 1 and 2398617 print ``GRES_IDX=`` empty (CPU only), 134238037 is pending: no row.
    """
    path = Path(__file__).parents[1] / "fixtures/scontrol-jobs-gres-idx/jobs_2019-02-17.txt"
    result = parse_scontrol_jobs(path, cluster="huji")
    assert result.rejected.height == 0
    assert _rows(result.rows) == [
        ("153291", None, None, "RUNNING", _utc("2019-02-07T16:05:09"), "node-06", None,
         [0, 2, 3, 5], 4, "gpu(IDX:0,2-3,5)", 81),
    ]  # fmt: skip
    assert (result.info["jobs"], result.info["gpu_jobs"]) == (4, 1)
