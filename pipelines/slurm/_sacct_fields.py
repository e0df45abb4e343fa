"""Static knowledge about ``sacct`` output: field names, job states, free-text fields."""

from __future__ import annotations

__all__ = [
    "FREE_TEXT_FIELDS",
    "KNOWN_FIELDS",
    "NO_END_STATES",
    "SLURM_STATES",
    "canonical_field",
]

#: Every ``sacct --format`` field name of Slurm 14.11 … 24.x, in sacct's own spelling. Header
#: detection and ``fields=`` matching are case-insensitive against this list.
_FIELD_NAMES: tuple[str, ...] = (
    "Account",
    "AdminComment",
    "AllocCPUS",
    "AllocGRES",
    "AllocNodes",
    "AllocTRES",
    "AssocID",
    "AveCPU",
    "AveCPUFreq",
    "AveDiskRead",
    "AveDiskWrite",
    "AvePages",
    "AveRSS",
    "AveVMSize",
    "BlockID",
    "Cluster",
    "Comment",
    "Constraints",
    "ConsumedEnergy",
    "ConsumedEnergyRaw",
    "Container",
    "CPUTime",
    "CPUTimeRAW",
    "DBIndex",
    "DerivedExitCode",
    "Elapsed",
    "ElapsedRaw",
    "Eligible",
    "End",
    "ExitCode",
    "Extra",
    "FailedNode",
    "Flags",
    "GID",
    "Group",
    "JobID",
    "JobIDRaw",
    "JobName",
    "Layout",
    "Licenses",
    "MaxDiskRead",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWrite",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "MaxPages",
    "MaxPagesNode",
    "MaxPagesTask",
    "MaxRSS",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSize",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "McsLabel",
    "MinCPU",
    "MinCPUNode",
    "MinCPUTask",
    "NCPUS",
    "NNodes",
    "NodeList",
    "NTasks",
    "Partition",
    "Planned",
    "PlannedCPU",
    "PlannedCPURAW",
    "Priority",
    "QOS",
    "QOSRAW",
    "QOSREQ",
    "Reason",
    "ReqCPUFreq",
    "ReqCPUFreqGov",
    "ReqCPUFreqMax",
    "ReqCPUFreqMin",
    "ReqCPUS",
    "ReqGRES",
    "ReqMem",
    "ReqNodes",
    "ReqTRES",
    "Reservation",
    "ReservationId",
    "Reserved",
    "ResvCPU",
    "ResvCPURAW",
    "Restarts",
    "SLUID",
    "Start",
    "State",
    "StdErr",
    "StdIn",
    "StdOut",
    "Submit",
    "SubmitLine",
    "Suspended",
    "SystemComment",
    "SystemCPU",
    "Timelimit",
    "TimelimitRaw",
    "TotalCPU",
    "TRESUsageInAve",
    "TRESUsageInMax",
    "TRESUsageInMaxNode",
    "TRESUsageInMaxTask",
    "TRESUsageInMin",
    "TRESUsageInMinNode",
    "TRESUsageInMinTask",
    "TRESUsageInTot",
    "TRESUsageOutAve",
    "TRESUsageOutMax",
    "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask",
    "TRESUsageOutMin",
    "TRESUsageOutMinNode",
    "TRESUsageOutMinTask",
    "TRESUsageOutTot",
    "UID",
    "User",
    "UserCPU",
    "WCKey",
    "WCKeyID",
    "WorkDir",
)

#: Lower-case name → sacct's spelling.
KNOWN_FIELDS: dict[str, str] = {name.lower(): name for name in _FIELD_NAMES}

#: Fields whose value is free text that may itself contain the delimiter (``|`` in a job name or
#: a command line). Only when the last field is one of these is a surplus of delimiters joined
#: into it; otherwise a line with too many fields is rejected.
FREE_TEXT_FIELDS: frozenset[str] = frozenset(
    {
        "admincomment",
        "comment",
        "constraints",
        "container",
        "extra",
        "jobname",
        "reason",
        "stderr",
        "stdin",
        "stdout",
        "submitline",
        "systemcomment",
        "workdir",
        "licenses",
        "reservation",
        "wckey",
        "flags",
    }
)

#: Job states ``sacct`` prints (base names; ``CANCELLED by <uid>`` is parsed apart).
SLURM_STATES: frozenset[str] = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "COMPLETING",
        "CONFIGURING",
        "DEADLINE",
        "FAILED",
        "LAUNCH_FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PENDING",
        "POWER_UP_NODE",
        "PREEMPTED",
        "RECONFIG_FAIL",
        "REQUESTED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "RESV_DEL_HOLD",
        "REVOKED",
        "RUNNING",
        "SIGNALING",
        "SPECIAL_EXIT",
        "STAGE_OUT",
        "STOPPED",
        "SUSPENDED",
        "TIMEOUT",
        "UPDATE_DB",
    }
)

#: States whose End time is not an end ("never trust the end time of a running job").
NO_END_STATES: frozenset[str] = frozenset({"RUNNING", "PENDING", "REQUESTED", "SUSPENDED"})


def canonical_field(name: str) -> str:
    """The lower-case key of a ``--format`` field name.

    Args:
        name: a field name as written by a user or a header, e.g. ``"JobID%20"`` or ``"ncpus"``.

    Returns:
        The name lower-cased, with any ``%width`` suffix and surrounding blanks removed.
    """
    return name.split("%", 1)[0].strip().lower()
