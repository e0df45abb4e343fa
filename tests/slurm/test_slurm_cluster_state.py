"""Slurm cluster-state parsers and live sources, on real Slurm 22.05.8 output.

Inputs are the lab capture and the ``live_*`` captures of the project's test cluster in
``tests/fixtures/slurm-22.05-lab/`` (see its SOURCE.md); expected values are read off those
files by hand. The live sources are checked with stand-in client programs (no Slurm needed);
``tests/integration/test_slurm_pipeline.py`` runs them against a real cluster.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.core.node_states import node_event_gpu_seconds_hourly, registered_gpu_seconds_hourly
from pipelines.slurm._sacctmgr_events import parse_sacctmgr_events
from pipelines.slurm._scontrol_nodes import gres_gpus, inventory_from_nodes, parse_scontrol_nodes
from pipelines.slurm._sdiag import parse_sdiag
from pipelines.slurm._sprio import SPRIO_FORMAT, parse_sprio
from pipelines.slurm._sshare import parse_sshare
from pipelines.slurm.resources import (
    EVENT_FIELDS,
    SACCT_FIELDS,
    SACCT_STATES,
    SacctCliSource,
    SlurmStateCliSource,
    slurm_client_env,
)
from tests.conftest import FIXTURES

LAB = FIXTURES / "slurm-22.05-lab"


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def _row(frame: pl.DataFrame, **where: object) -> dict[str, object]:
    """The single row of ``frame`` matching every ``column=value``."""
    hits = frame.filter(*[pl.col(k) == v for k, v in where.items()])
    assert hits.height == 1, hits
    return hits.row(0, named=True)


# --------------------------------------------------------------------------- scontrol show nodes


def test_multiline_nodes_give_one_row_per_node() -> None:
    """The lab's multi-line ``scontrol show nodes``: 4 idle nodes × 8 GPUs, record line spans."""
    result = parse_scontrol_nodes(LAB / "scontrol_show_nodes.txt", cluster="lab")
    assert result.rejected.height == 0
    rows = result.rows.select("host", "gpus", "partition", "partitions", "state", "line_no",
                              "line_end").to_dicts()  # fmt: skip
    assert rows == [
        {"host": "gpu-001", "gpus": 8.0, "partition": "gpu", "partitions": ["gpu", "debug"],
         "state": "IDLE", "line_no": 1, "line_end": 17},
        {"host": "gpu-002", "gpus": 8.0, "partition": "gpu", "partitions": ["gpu", "debug"],
         "state": "IDLE", "line_no": 19, "line_end": 35},
        {"host": "gpu-003", "gpus": 8.0, "partition": "gpu", "partitions": ["gpu"],
         "state": "IDLE", "line_no": 37, "line_end": 53},
        {"host": "gpu-004", "gpus": 8.0, "partition": "gpu", "partitions": ["gpu"],
         "state": "IDLE", "line_no": 55, "line_end": 71},
    ]  # fmt: skip
    first = result.rows.row(0, named=True)
    assert [first[k] for k in ("cluster", "cpus", "real_memory_mb", "gres")] == [
        "lab", 32, 512000, "gpu:8"]  # fmt: skip
    assert first["cfg_tres"] == "cpu=32,mem=500G,billing=32,gres/gpu=8"


def test_oneliner_nodes_carry_state_flags_and_reasons() -> None:
    """``--oneliner``: ``IDLE+DRAIN`` splits into base state and flags; the reason keeps its
    ``key=value`` words and gives up its ``[user@time]`` suffix."""
    rows = parse_scontrol_nodes(LAB / "live_scontrol_show_nodes_oneliner.txt").rows
    down = _row(rows, host="gpu-003")
    assert (down["state"], down["base_state"], down["state_flags"]) == ("DOWN", "DOWN", [])
    assert (down["reason"], down["reason_user"], down["reason_at"]) == (
        "xid 79 on GPU 3",
        "root",
        _utc("2026-11-30T03:03:30"),
    )
    drained = _row(rows, host="gpu-004")
    assert (drained["state"], drained["base_state"], drained["state_flags"]) == (
        "IDLE+DRAIN",
        "IDLE",
        ["DRAIN"],
    )
    assert drained["reason"] == "nvlink errors"
    assert _row(rows, host="gpu-001")["reason"] is None
    assert rows["line_no"].to_list() == [1, 2, 3, 4]


def test_free_text_values_do_not_split_tokens() -> None:
    """``OS=Linux 6.18 #1 SMP …`` and a reason with ``ticket=42`` stay one value each."""
    line = (
        "NodeName=n1 Gres=gpu:4 OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0  State=DOWN "
        "Partitions=p Reason=maint ticket=42 disk swap [admin@2026-01-02T03:04:05]"
    )
    (row,) = parse_scontrol_nodes("x", text=line, tz="UTC").rows.to_dicts()
    assert (row["reason"], row["reason_user"]) == ("maint ticket=42 disk swap", "admin")
    assert row["reason_at"] == _utc("2026-01-02T03:04:05")


def test_typed_gres_names_its_gpu_type() -> None:
    """``Gres=gpu:a100:8(S:0-1)`` is 8 GPUs of type a100."""
    text = "NodeName=g1 Gres=gpu:a100:8(S:0-1) State=MIXED Partitions=big CPUTot=64"
    (row,) = parse_scontrol_nodes("x", text=text).rows.to_dicts()
    assert (row["gpus"], row["gpu_type"], row["partition"], row["cpus"]) == (8.0, "a100", "big", 64)


def test_gpus_typed_only_in_cfg_tres_name_their_type() -> None:
    """A node with ``Gres=(null)`` whose GPUs are only in ``CfgTRES`` (an MI300A APU node,
    ``tests/fixtures/scontrol-nodes/nodes_2026-09-24.txt``, real lines): node001's
    ``gres/gpu=2,gres/gpu:mi300a=2`` is 2 GPUs of type mi300a (before: 2, type NULL). bnode01
    (``Gres=gpu:8``, untyped) has no type; z1 (``Gres=gpu:a100:4``) keeps the Gres type a100."""
    rows = parse_scontrol_nodes(FIXTURES / "scontrol-nodes" / "nodes_2026-09-24.txt").rows
    got = rows.select("host", "gpus", "gpu_type").rows()
    assert got == [("node001", 2.0, "mi300a"), ("bnode01", 8.0, None), ("z1", 4.0, "a100")]


def test_cfg_tres_gpu_type_only_when_one_non_mig_type() -> None:
    """CfgTRES typed with two types, or with MIG types only, names no type (as Gres): 2 + 2
    = 4 GPUs of a100 and h100; 2 × 3/7 + 1 × 1/7 = 1 GPU of MIG slices."""
    two = "NodeName=a Gres=(null) CfgTRES=cpu=8,gres/gpu=4,gres/gpu:a100=2,gres/gpu:h100=2"
    mig = "NodeName=b Gres=(null) CfgTRES=cpu=8,gres/gpu:3g.40gb=2,gres/gpu:1g.10gb=1"
    rows = parse_scontrol_nodes("x", text=two + "\n" + mig).rows
    assert rows["gpus"].to_list() == [4.0, pytest.approx(1.0)]
    assert rows["gpu_type"].to_list() == [None, None]


def test_gres_counts_mig_slices_as_fractions() -> None:
    """MIG GRES count their share of a GPU (3g = 3/7), as in sacct's AllocTRES."""
    gpus, gpu_type = gres_gpus("gpu:3g.40gb:2(S:0),gpu:1g.10gb:1(S:1)")
    assert gpus == pytest.approx(1.0)
    assert gpu_type is None


def test_a_mig_type_named_after_its_gpu_is_no_gpu_type() -> None:
    """A MIG GRES type with its GPU's name before the profile (``a100_3g.40gb``, as gres.conf
    and AutoDetect name them) is a slice, not a second type: a node with 1 whole a100 and 2
    ``a100_3g.40gb`` slices has 1 + 2 × 3/7 = 13/7 GPUs of type a100 (before: type NULL, two
    types seen), from ``Gres`` and from ``CfgTRES`` alike."""
    gpus, gpu_type = gres_gpus("gpu:a100:1(S:0),gpu:a100_3g.40gb:2(S:1)")
    assert (gpus, gpu_type) == (pytest.approx(13 / 7), "a100")
    text = "NodeName=c Gres=(null) CfgTRES=cpu=8,gres/gpu:a100=1,gres/gpu:a100_3g.40gb=2"
    (row,) = parse_scontrol_nodes("x", text=text).rows.to_dicts()
    assert (row["gpus"], row["gpu_type"]) == (pytest.approx(13 / 7), "a100")


def test_gres_without_gpus_and_other_gres() -> None:
    """``(null)`` is no GPU; ``mps``/``shard`` are not GPUs; ``no_consume`` is a flag."""
    assert gres_gpus("(null)") == (0.0, None)
    assert gres_gpus("gpu:2,mps:400,shard:8") == (2.0, None)
    assert gres_gpus("gpu:no_consume:4") == (4.0, None)


def test_not_responding_mark_becomes_a_flag() -> None:
    """``DOWN*+DRAIN``: base ``DOWN``, flags ``NOT_RESPONDING`` and ``DRAIN``."""
    text = "NodeName=n State=DOWN*+DRAIN Gres=gpu:1"
    (row,) = parse_scontrol_nodes("x", text=text).rows.to_dicts()
    assert (row["base_state"], row["state_flags"]) == ("DOWN", ["NOT_RESPONDING", "DRAIN"])


def test_node_with_unreadable_gres_is_rejected() -> None:
    """A GPU GRES without a count rejects its node only, naming the field."""
    text = "NodeName=n1 Gres=gpu:a100:lots State=IDLE\nNodeName=n2 Gres=gpu:2 State=IDLE"
    result = parse_scontrol_nodes("nodes.txt", text=text)
    assert result.rows["host"].to_list() == ["n2"]
    (bad,) = result.rejected.to_dicts()
    assert (bad["line_no"], bad["field"], bad["file"]) == (1, "Gres", "nodes.txt")


def test_stray_line_is_rejected() -> None:
    """A line outside any NodeName record is rejected, the records around it kept."""
    text = "NodeName=n1 Gres=gpu:1\nslurm_load_node error: oops\nNodeName=n2 Gres=gpu:1"
    result = parse_scontrol_nodes("x", text=text)
    assert result.rows["host"].to_list() == ["n1", "n2"]
    assert result.rejected["line_no"].to_list() == [2]


def test_other_output_is_not_node_output() -> None:
    """Text without any ``NodeName=`` record is refused as a whole."""
    with pytest.raises(InputFormatError, match="NodeName"):
        parse_scontrol_nodes("x", text="PartitionName=gpu\n   Nodes=gpu-001")


def test_inventory_has_the_inventory_csv_columns() -> None:
    """The inventory from parsed nodes: ``host,gpus,gpu_type,partition,rack``, one row per host."""
    nodes = parse_scontrol_nodes(LAB / "scontrol_show_nodes.txt", cluster="lab").rows
    inventory = inventory_from_nodes(nodes)
    assert inventory.columns == ["host", "gpus", "gpu_type", "partition", "rack"]
    assert inventory["host"].to_list() == ["gpu-001", "gpu-002", "gpu-003", "gpu-004"]
    assert inventory["gpus"].sum() == 32.0


# --------------------------------------------------------------------------- sacctmgr show event


def test_lab_event_is_the_cluster_registration() -> None:
    """The lab's default-format export: one open cluster event, no TRES column (gpus NULL)."""
    result = parse_sacctmgr_events(LAB / "sacctmgr_events.psv")
    assert result.rejected.height == 0
    (row,) = result.rows.to_dicts()
    assert (row["cluster"], row["event"], row["node"]) == ("lab", "cluster", None)
    assert (row["start_at"], row["end_at"]) == (_utc("2026-11-30T02:38:23"), None)
    assert (row["reason"], row["tres"], row["gpus"]) == ("Cluster Registered TRES", None, None)


def test_live_events_hold_cluster_tres_and_node_intervals() -> None:
    """With ``Format=…,TRES``: the cluster's 32 GPUs, and each DOWN/DRAIN span of a node."""
    rows = parse_sacctmgr_events(LAB / "live_sacctmgr_events.psv").rows
    cluster = _row(rows, event="cluster")
    assert (cluster["gpus"], cluster["cluster_nodes"], cluster["start_at"]) == (
        32.0,
        "gpu-[001-004]",
        _utc("2026-11-30T02:59:39"),
    )
    assert cluster["end_at"] is None
    nodes = rows.filter(pl.col("event") == "node").select(
        "node", "state", "state_raw", "start_at", "end_at", "reason", "user_name", "uid", "gpus"
    )
    assert nodes.row(2) == (
        "gpu-004", "DRAIN", 514, _utc("2026-11-30T03:01:57"), _utc("2026-11-30T03:02:21"),
        "maint ticket=42 disk swap", "root", 0, 8.0,
    )  # fmt: skip
    assert nodes["state"].to_list() == ["DOWN", "DOWN", "DRAIN", "DRAIN"]


def test_epoch_and_iso_exports_are_the_same_instants() -> None:
    """``SLURM_TIME_FORMAT=%s`` (what the live source spools) reads as the ISO export does."""
    cols = ["event", "node", "start_at", "end_at", "state", "reason", "gpus"]
    iso = parse_sacctmgr_events(LAB / "live_sacctmgr_events.psv").rows.select(cols)
    epoch = parse_sacctmgr_events(LAB / "live_sacctmgr_events_epoch.psv").rows.select(cols)
    # the epoch file was taken a moment later: gpu-003's second DOWN span is the one extra
    assert epoch.filter(pl.col("start_at") < _utc("2026-11-30T03:03:00")).equals(
        iso.filter(pl.col("start_at") < _utc("2026-11-30T03:03:00"))
    )


def test_naive_event_times_are_read_in_the_given_zone() -> None:
    """The same naive time read in America/New_York is 5 hours later in UTC (November)."""
    rows = parse_sacctmgr_events(LAB / "sacctmgr_events.psv", tz="America/New_York").rows
    assert rows["start_at"].to_list() == [_utc("2026-11-30T07:38:23")]


def test_bad_event_rows_are_rejected() -> None:
    """A short row and an end before its start are rejected; the good row stays."""
    text = (
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "c|n1|2026-01-01T00:00:00|2026-01-01T01:00:00|DOWN|x|root(0)\n"
        "c|n2|2026-01-01T00:00:00\n"
        "c|n3|2026-01-01T02:00:00|2026-01-01T01:00:00|DOWN|y|root(0)\n"
    )
    result = parse_sacctmgr_events("ev.psv", text=text)
    assert result.rows["node"].to_list() == ["n1"]
    assert result.rejected.select("line_no", "field").rows() == [(3, None), (4, "TimeEnd")]


def test_event_across_the_dst_fall_back_hour_is_read_not_rejected() -> None:
    """America/New_York falls back at 2024-11-03 02:00 EDT = 01:00 EST: 01:00–02:00 is read twice.

    n1 drained at 01:40 of the first (EDT, UTC−4) 01:xx hour, resumed at 01:20 of the second
    (EST, UTC−5): 05:40 → 06:20 UTC, 40 min; the end's earlier reading (05:20 UTC) would be
    before the start. 4 GPUs: 20 min × 4 = 4800 GPU-s in each of the UTC hours 05 and 06.
    n2 01:10 → 01:50, both readings consistent: the earlier of each, 05:10 → 05:50 UTC.
    n3 02:30 EST (07:30 UTC) → 01:10 (05:10 or 06:10 UTC) ends before it starts: rejected.
    """
    text = (
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|TRES\n"
        "c|n1|2024-11-03T01:40:00|2024-11-03T01:20:00|DRAIN|bad gpu|root(0)|gres/gpu=4\n"
        "c|n2|2024-11-03T01:10:00|2024-11-03T01:50:00|DOWN|x|root(0)|gres/gpu=4\n"
        "c|n3|2024-11-03T02:30:00|2024-11-03T01:10:00|DOWN|y|root(0)|gres/gpu=4\n"
    )
    result = parse_sacctmgr_events("ev.psv", text=text, tz="America/New_York")
    assert result.rows.select("node", "start_at", "end_at").rows() == [
        ("n1", _utc("2024-11-03T05:40:00"), _utc("2024-11-03T06:20:00")),
        ("n2", _utc("2024-11-03T05:10:00"), _utc("2024-11-03T05:50:00")),
    ]
    assert result.rejected.select("file", "line_no", "field").rows() == [("ev.psv", 4, "TimeEnd")]
    hourly = node_event_gpu_seconds_hourly(
        result.rows.filter(pl.col("node") == "n1").lazy(), _utc("2024-11-03T04:00:00"),
        _utc("2024-11-03T08:00:00"), as_of=_utc("2024-11-03T08:00:00"),
    ).collect()  # fmt: skip
    assert hourly.rows() == [
        ("c", "DRAIN", _utc("2024-11-03T05:00:00"), 4800.0),
        ("c", "DRAIN", _utc("2024-11-03T06:00:00"), 4800.0),
    ]


def test_event_header_is_required() -> None:
    """A file without a TimeStart header column is not event output."""
    with pytest.raises(InputFormatError, match="TimeStart"):
        parse_sacctmgr_events("x", text="JobID|State\n1|COMPLETED\n")


def test_registered_capacity_of_the_lab_hour_is_sreport_reported() -> None:
    """Registered at 02:38:23 with 32 GPUs: 32 × 1297 s = 41504 GPU-s, sreport's Reported."""
    events = parse_sacctmgr_events(LAB / "sacctmgr_events.psv").rows
    events = events.with_columns(pl.col("gpus").fill_null(32.0))  # the inventory's GPUs
    hourly = registered_gpu_seconds_hourly(
        events.lazy(), _utc("2026-11-30T02:00:00"), _utc("2026-11-30T04:00:00"),
        as_of=_utc("2026-11-30T03:30:00"),
    ).collect()  # fmt: skip
    assert hourly.rows() == [
        ("lab", _utc("2026-11-30T02:00:00"), 41504.0),
        ("lab", _utc("2026-11-30T03:00:00"), 32 * 1800.0),
    ]


def test_node_event_seconds_by_state() -> None:
    """gpu-003 DOWN for 6 s + 1 s, gpu-004 DRAINed 24 s + 67 s, 8 GPUs each."""
    events = parse_sacctmgr_events(LAB / "live_sacctmgr_events_epoch.psv").rows
    hourly = node_event_gpu_seconds_hourly(
        events.lazy(), _utc("2026-11-30T03:00:00"), _utc("2026-11-30T04:00:00"),
        as_of=_utc("2026-11-30T04:00:00"),
    ).collect()  # fmt: skip
    assert hourly.rows() == [
        ("testgpu", "DOWN", _utc("2026-11-30T03:00:00"), 56.0),
        ("testgpu", "DRAIN", _utc("2026-11-30T03:00:00"), 728.0),
    ]


# --------------------------------------------------------------------------- sshare


def test_sshare_tree_with_depth_and_factors() -> None:
    """``sshare -a -l -P``: account rows (no user) and user rows, indent = depth."""
    result = parse_sshare(LAB / "sshare_all_long.psv", cluster="lab")
    assert result.rejected.height == 0
    rows = result.rows
    assert rows.height == 11
    team_a = _row(rows, account="team-a", depth=1)
    assert team_a["user_name"] is None
    factors = ("raw_shares", "norm_shares", "raw_usage", "effective_usage", "level_fs")
    assert [team_a[k] for k in factors] == [50, 0.49505, 15988.0, 0.93305, 0.530571]
    assert team_a["fair_share"] is None
    alice = _row(rows, user_name="alice")
    assert (alice["account"], alice["depth"], alice["fair_share"]) == ("team-a", 2, 0.285714)
    assert alice["tres_run_mins"].endswith("gres/gpu=0")
    root_user = _row(rows, account="root", user_name="root")
    assert root_user["level_fs"] == float("inf")
    assert _row(rows, depth=0)["raw_shares"] is None


def test_sshare_cluster_line_names_the_cluster() -> None:
    """``sshare -M testgpu`` starts with ``CLUSTER: testgpu``: its rows take that cluster."""
    result = parse_sshare(LAB / "live_sshare_M.psv", cluster="other")
    assert result.rejected.height == 0
    assert result.rows["cluster"].unique().to_list() == ["testgpu"]
    assert result.rows.height == 11


def test_sshare_snapshot_time_is_stored() -> None:
    """The caller's snapshot time lands on every row, in UTC."""
    at = dt.datetime(2026, 11, 30, 4, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    rows = parse_sshare(LAB / "sshare_all_long.psv", snapshot_at=at).rows
    assert rows["snapshot_at"].unique().to_list() == [_utc("2026-11-30T03:00:00")]


def test_sshare_bad_rows_are_rejected() -> None:
    """A row with a missing field or a non-numeric share is rejected."""
    text = (
        "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare\n"
        " a|u|1|0.5|10|0.1|0.9\n"
        " a|v|1|0.5\n"
        " a|w|lots|0.5|10|0.1|0.9\n"
    )
    result = parse_sshare("s.psv", text=text)
    assert result.rows["user_name"].to_list() == ["u"]
    assert result.rejected.select("line_no", "field").rows() == [(3, None), (4, "RawShares")]


def test_sshare_header_is_required() -> None:
    """Text that does not start with sshare's header is refused."""
    with pytest.raises(InputFormatError, match="header"):
        parse_sshare("x", text="JOBID|PARTITION\n1|gpu\n")


# --------------------------------------------------------------------------- sprio


def test_sprio_factors_by_position() -> None:
    """The repeated ``PARTITION`` header: first the partition, then its priority factor."""
    result = parse_sprio(LAB / "sprio_during.psv", cluster="lab")
    assert result.rejected.height == 0
    assert result.rows.height == 12
    job = _row(result.rows, job_id="5")
    keys = ("partition", "user_name", "priority", "age", "fairshare", "job_size",
            "partition_prio", "qos_prio", "nice", "tres")  # fmt: skip
    got = {k: job[k] for k in keys}
    assert got == {
        "partition": "gpu", "user_name": "bob", "priority": 1456.0, "age": 0.0, "fairshare": 0.0,
        "job_size": 156.0, "partition_prio": 100.0, "qos_prio": 200.0, "nice": 0.0,
        "tres": "gres/gpu=1000",
    }  # fmt: skip
    assert job["assoc"] is None  # not in the format


def test_sprio_live_high_qos_job() -> None:
    """On the test cluster, job 17 in QOS ``high`` has QOS factor 2000 and priority 8643."""
    job = _row(parse_sprio(LAB / "live_sprio.psv").rows, job_id="17")
    assert (job["qos_prio"], job["priority"], job["fairshare"]) == (2000.0, 8643.0, 4286.0)


def test_sprio_header_must_match_the_format() -> None:
    """A header from another format is refused rather than read into the wrong columns."""
    with pytest.raises(InputFormatError, match="format"):
        parse_sprio(LAB / "sprio_wave2.psv", fmt="%i|%r|%u|%Y")


def test_sprio_without_pending_jobs_is_empty() -> None:
    """The header alone: no rows, nothing rejected."""
    header = "JOBID|PARTITION|USER|PRIORITY|AGE|FAIRSHARE|JOBSIZE|PARTITION|QOS|NICE|TRES\n"
    result = parse_sprio("x", text=header)
    assert (result.rows.height, result.rejected.height) == (0, 0)
    assert result.info["format"] == SPRIO_FORMAT


# --------------------------------------------------------------------------- sdiag


def _stat(rows: pl.DataFrame, section: str, key: str, item: str | None = None) -> float | None:
    where = [pl.col("section") == section, pl.col("key") == key]
    where.append(pl.col("item").is_null() if item is None else pl.col("item") == item)
    (value,) = rows.filter(*where)["value"].to_list()
    return value  # type: ignore[no-any-return]


def test_sdiag_backfill_stats() -> None:
    """The lab's backfill section, with its times as epoch seconds."""
    result = parse_sdiag(LAB / "sdiag.txt", cluster="lab")
    assert result.rejected.height == 0
    rows = result.rows
    assert _stat(rows, "backfill", "total_backfilled_jobs_since_last_slurm_start") == 27
    assert _stat(rows, "backfill", "total_cycles") == 42
    assert _stat(rows, "backfill", "last_cycle_when") == 1796006528
    assert _stat(rows, "backfill", "max_cycle") == 25300
    assert _stat(rows, "backfill", "depth_mean_try_depth") == 6


def test_sdiag_general_and_main_schedule() -> None:
    """Top-level counters, the main scheduler's cycle times and the banner times."""
    result = parse_sdiag(LAB / "sdiag.txt")
    rows = result.rows
    assert _stat(rows, "general", "jobs_submitted") == 45
    assert _stat(rows, "general", "dbd_agent_queue_size") == 0
    assert _stat(rows, "general", "latency_for_1000_calls_to_gettimeofday") == 22
    assert _stat(rows, "main_schedule", "mean_cycle") == 579
    assert result.info["sdiag_at"] == _utc("2026-11-30T02:42:27")
    assert rows["data_since"].unique().to_list() == [_utc("2026-11-30T02:38:24")]


def test_sdiag_rpc_lines_split_into_values() -> None:
    """``REQUEST_PARTITION_INFO ( 2009) count:198 ave_time:202 total_time:40006``."""
    rows = parse_sdiag(LAB / "sdiag.txt").rows
    rpc = rows.filter(pl.col("item") == "REQUEST_PARTITION_INFO")
    assert rpc.select("section", "item_id", "key", "value").rows() == [
        ("rpc_by_type", 2009, "count", 198.0),
        ("rpc_by_type", 2009, "ave_time", 202.0),
        ("rpc_by_type", 2009, "total_time", 40006.0),
    ]
    assert _stat(rows, "rpc_by_user", "count", item="bob") == 19


def test_live_sdiag_has_the_lab_keys() -> None:
    """The test cluster's sdiag reads cleanly into the same backfill keys."""
    lab = parse_sdiag(LAB / "sdiag.txt").rows.filter(pl.col("section") == "backfill")
    live = parse_sdiag(LAB / "live_sdiag.txt")
    assert live.rejected.height == 0
    live_keys = live.rows.filter(pl.col("section") == "backfill")["key"].to_list()
    assert live_keys == lab["key"].to_list()


def test_sdiag_needs_its_banner() -> None:
    """Text without the ``sdiag output at`` banner is refused."""
    with pytest.raises(InputFormatError, match="banner"):
        parse_sdiag("x", text="Jobs submitted: 4\n")


# --------------------------------------------------------------------------- live sources


def test_sacct_command_bounds_the_day() -> None:
    """sacct's argument list: every user, every attempt, every state, one UTC day."""
    argv = SacctCliSource(spool_dir="/tmp/x").command("c1", "2026-02-28")
    assert argv == [
        "sacct", "--parsable2", "--duplicates", "--clusters", "c1", "--allusers",
        "--state", SACCT_STATES, "--format", SACCT_FIELDS,
        "--starttime", "2026-02-28T00:00:00", "--endtime", "2026-03-01T00:00:00",
    ]  # fmt: skip


def test_state_commands_name_the_cluster_and_day() -> None:
    """Each state command names the cluster (but transactions and TRES, which slurmdbd keeps
    for every cluster: a QOS belongs to none); only events and transactions are bounded by the
    day."""
    commands = SlurmStateCliSource(spool_dir="/tmp/x", bin_dir="/opt/slurm/bin").commands(
        "c1", "2026-12-31"
    )
    assert commands == {
        "nodes": ["/opt/slurm/bin/scontrol", "-M", "c1", "--oneliner", "show", "nodes"],
        "events": [
            "/opt/slurm/bin/sacctmgr", "--parsable2", "show", "event", "Clusters=c1",
            "Start=2026-12-31T00:00:00", "End=2027-01-01T00:00:00", f"Format={EVENT_FIELDS}",
        ],
        "sshare": ["/opt/slurm/bin/sshare", "-M", "c1", "--all", "--long", "--parsable2"],
        "sprio": ["/opt/slurm/bin/sprio", "-M", "c1", "--format", SPRIO_FORMAT],
        "sdiag": ["/opt/slurm/bin/sdiag", "-M", "c1"],
        "transactions": [
            "/opt/slurm/bin/sacctmgr", "--parsable2", "list", "transactions",
            "Start=2026-12-31T00:00:00", "End=2027-01-01T00:00:00", "WithAssoc",
        ],
        "tres": ["/opt/slurm/bin/sacctmgr", "--parsable2", "show", "tres"],
        "scontrol_config": ["/opt/slurm/bin/scontrol", "-M", "c1", "show", "config"],
    }  # fmt: skip


def test_unknown_state_kind_is_refused() -> None:
    """A kind outside STATE_KINDS is a configuration error."""
    source = SlurmStateCliSource(spool_dir="/tmp/x", kinds=["nodes", "sinfo"])
    with pytest.raises(ValueError, match="unknown kinds"):
        source.commands("c", "2026-01-01")


def test_client_env_forces_utc_and_epoch_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """An inherited TZ or ``SLURM_TIME_FORMAT=relative`` cannot change what the clients print."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    env = slurm_client_env({"TZ": "Asia/Tokyo", "EXTRA": "1"}, slurm_conf="/etc/x/slurm.conf")
    assert (env["TZ"], env["SLURM_TIME_FORMAT"], env["SLURM_CONF"], env["EXTRA"]) == (
        "UTC",
        "%s",
        "/etc/x/slurm.conf",
        "1",
    )


def _fake_client(folder: Path, name: str, body: str) -> None:
    """A stand-in Slurm client: a shell script printing its environment and arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_state_source_spools_one_file_per_kind(tmp_path: Path) -> None:
    """Each command's stdout lands in ``<spool>/<cluster>/slurm_state/<kind>_<day>.txt``."""
    bin_dir = tmp_path / "bin"
    for name in ("scontrol", "sacctmgr", "sshare", "sprio", "sdiag"):
        _fake_client(bin_dir, name, f'echo "{name} $TZ $SLURM_TIME_FORMAT $SLURM_CONF $*"')
    source = SlurmStateCliSource(
        spool_dir=str(tmp_path / "spool"), bin_dir=str(bin_dir), slurm_conf="/s.conf",
        kinds=["nodes", "sdiag"],
    )  # fmt: skip
    files = source.fetch("c1", "2026-03-01")
    base = tmp_path / "spool" / "c1" / "slurm_state"
    assert files == [base / "nodes_2026-03-01.txt", base / "sdiag_2026-03-01.txt"]
    assert files[0].read_text() == "scontrol UTC %s /s.conf -M c1 --oneliner show nodes\n"
    assert sorted(os.listdir(base)) == ["nodes_2026-03-01.txt", "sdiag_2026-03-01.txt"]


def test_failing_client_raises_with_its_stderr(tmp_path: Path) -> None:
    """A client exiting non-zero raises, with its stderr, and spools nothing."""
    _fake_client(tmp_path / "bin", "sacct", 'echo "sacct: error: Problem talking" >&2; exit 1')
    source = SacctCliSource(spool_dir=str(tmp_path / "spool"),
                            sacct_bin=str(tmp_path / "bin" / "sacct"))  # fmt: skip
    with pytest.raises(RuntimeError, match="Problem talking"):
        source.fetch("c1", "2026-03-01")
    assert not (tmp_path / "spool").exists()


def test_missing_client_raises() -> None:
    """A client that is not installed is a RuntimeError naming it."""
    source = SacctCliSource(spool_dir="/tmp/x", sacct_bin="/nonexistent/sacct")
    with pytest.raises(RuntimeError, match="/nonexistent/sacct not found"):
        source.fetch("c1", "2026-03-01")
