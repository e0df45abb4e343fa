"""Slurm-on-Kubernetes inputs: polled node comments (slurm-operator's PodInfo JSON) and the
AdminComment / MCSLabel of slurm-bridge external jobs, read from real-format fixtures."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.core.slurm_on_k8s import sacct_notes
from pipelines.kinds import input_kind
from pipelines.slurm._sacct_parse import parse_sacct
from pipelines.slurm._scontrol_node_comments import parse_node_comments
from pipelines.slurm.resources import SlurmStateCliSource
from pipelines.warehouse.lake import LAKE_TIME_COLUMNS

FIX = Path(__file__).parent.parent / "fixtures" / "slurm-on-k8s"
POLL = FIX / "node_comments_2026-11-02T030000Z.txt"


def test_node_comments_read_pod_info_and_poll_time() -> None:
    """Two NodeSet nodes carry slurm-operator's JSON; the login node's free-text comment is
    kept with no pod; the poll time is the file name's stamp, 03:00:00 UTC."""
    res = parse_node_comments(POLL, cluster="sok-c")
    assert res.rejected.height == 0
    assert (res.info["nodes"], res.info["with_pod"], res.info["rejected"]) == (3, 2, 0)
    got = res.rows.select("slurm_node", "polled_at", "namespace", "pod", "k8s_node", "nodeset",
                          "state", "gres").rows()  # fmt: skip
    at = dt.datetime(2026, 11, 2, 3, tzinfo=dt.UTC)
    assert got == [
        ("slinky-0", at, "slurm", "slurm-worker-slinky-0", "kn1", "slurm-worker-slinky", "IDLE",
         "gpu:h100:4"),
        ("slinky-1", at, "slurm", "slurm-worker-slinky-1", "kn2", "slurm-worker-slinky",
         "MIXED", "gpu:h100:4"),
        ("login-0", at, None, None, None, None, "IDLE", "(null)"),
    ]  # fmt: skip
    assert res.rows["comment"][2] == "rack 3 reseated 2026-10-30"
    assert res.rows["nodeset_uid"][0] == "3f1c2a4e-8b0d-4d6e-9a51-0c7e2b9d4f10"


def test_broken_comment_json_is_rejected_naming_the_field() -> None:
    """A comment opening with '{' that is not JSON goes to rejected with its line and field;
    the other node still loads."""
    text = (
        'NodeName=a State=IDLE Comment={"namespace":"slurm","podName":\n'
        'NodeName=b State=IDLE Comment={"namespace":"slurm","podName":"p","node":7}\n'
        "NodeName=c State=IDLE\n"
    )
    at = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    res = parse_node_comments("x.txt", cluster="c", polled_at=at, text=text)
    assert res.rows["slurm_node"].to_list() == ["c"]
    rej = res.rejected.select("line_no", "field", "reason").rows()
    assert [(r[0], r[1]) for r in rej] == [(1, "Comment"), (2, "Comment")]
    assert "not JSON" in rej[0][2] and "'node' is not a string" in rej[1][2]


def test_node_comments_without_poll_time_are_refused() -> None:
    """Text with no file-name stamp and no file to date it by is refused as a whole."""
    with pytest.raises(InputFormatError, match="no poll time"):
        parse_node_comments("nowhere/x.txt", text="NodeName=a State=IDLE\n")


def test_node_comments_are_a_slurm_state_source() -> None:
    """``node_comments_*`` files route to raw.slurm_node_comments, dated by ``polled_at`` in
    the lake; the live source spools each poll under its own stamp."""
    kind = input_kind("slurm-state")
    src = kind.source_of(POLL)
    assert (src.name, src.table) == ("slurm-node-comments", "raw.slurm_node_comments")
    assert LAKE_TIME_COLUMNS["raw.slurm_node_comments"] == ("polled_at",)
    live = SlurmStateCliSource(spool_dir="/s", kinds=["node_comments"])
    assert live.commands("sok-c", "2026-11-02") == {
        "node_comments": ["scontrol", "-M", "sok-c", "--oneliner", "show", "nodes"]
    }
    at = dt.datetime(2026, 11, 2, 3, 4, 5, tzinfo=dt.UTC)
    path = live.path("sok-c", "node_comments", "2026-11-02", at)
    assert path == Path("/s/sok-c/slurm_state/node_comments_2026-11-02T030405Z.txt")
    assert kind.source_of(path).name == "slurm-node-comments"


def test_sacct_json_keeps_admin_comment_and_mcs_label() -> None:
    """slurm-bridge's external job 7 carries {"pods":["ml/infer-1-0"]} and MCS label
    slurm-bridge; the ordinary job 8 carries neither."""
    res = parse_sacct(FIX / "sacct_external_jobs.json")
    assert res.rejected.height == 0
    got = res.rows.select("job_id", *sacct_notes()).rows()
    assert got == [("7", '{"pods":["ml/infer-1-0"]}', "slurm-bridge"), ("8", None, None)]


def test_sacct_text_keeps_admin_comment_and_mcs_label() -> None:
    """The live field list's AdminComment and MCSLabel columns land in ``extra``."""
    text = (
        "JobID|State|Start|End|AllocTRES|NodeList|AdminComment|MCSLabel\n"
        '7|COMPLETED|1762045200|1762048800|gres/gpu=2|slinky-1|{"pods":["ml/infer-1-0"]}|'
        "slurm-bridge\n"
        "8|COMPLETED|1762045200|1762048800|gres/gpu=4|slinky-0||\n"
    )
    rows = parse_sacct("s.psv", text=text).rows
    assert rows.select("job_id", *sacct_notes()).rows() == [
        ("7", '{"pods":["ml/infer-1-0"]}', "slurm-bridge"),
        ("8", None, None),
    ]
    assert rows.filter(pl.col("job_id") == "7")["gpus"].item() == 2.0
