"""Real Slurm 22.05 accepts the recommendations' sacctmgr and scontrol commands.

The fair-share rule reads the live cluster's ``sshare``, compares it with a registry that gives
team-a more than its 50 shares, and emits ``sacctmgr -i modify account name=team-a set
fairshare=N``; the lemon rule emits ``scontrol update nodename=gpu-001 state=drain reason=…``.
Both are run against the ``slurm_cluster`` fixture's cluster, read back, and undone.
"""

from __future__ import annotations

import shlex
from datetime import timedelta

import polars as pl
import pytest

from metrics.recommendations import lemon_nodes, reservations_idle, slurm_fairshare_drift
from pipelines.slurm._sshare import parse_sshare
from tests.integration.slurm import (
    CLUSTER_NAME,
    DEFAULT_ACCOUNTS,
    NODE_NAMES,
    ClusterRun,
    slurm_time,
)
from tests.integration.slurm.private import private_cluster
from tests.recommendations._frames import UTC, H, at, window

pytestmark = pytest.mark.slurm

W = window(1)


def _account_fairshare(run: ClusterRun, account: str) -> str:
    out = run.cluster.run(
        ["sacctmgr", "-n", "-P", "show", "assoc", "where", f"account={account}",
         "format=account,user,fairshare"]
    ).stdout  # fmt: skip
    rows = [line.split("|") for line in out.splitlines() if line]
    return next(fs for acct, user, fs in rows if acct == account and not user)


def test_generated_sacctmgr_fairshare_is_applied(slurm_cluster: ClusterRun) -> None:
    """Registry 0.6/0.25/0.15 against RawShares 50/30/20 (normalised 0.5/0.3/0.2): team-c is
    33 % over its registry share, past the 20 % tolerance (team-a is 17 % under, team-b 20 %,
    not past it: the registry_drift view's measure); the site's scale is 120 (median of
    RawShares ÷ share), so team-c should have 0.15 × 120 = 18; Slurm accepts the command and
    reads it back."""
    run = slurm_cluster
    text = run.cluster.run(["sshare", "--all", "--long", "--parsable2"]).stdout
    sshare = parse_sshare("sshare.psv", cluster=CLUSTER_NAME, text=text).rows
    teams = pl.DataFrame({"team": ["team-a", "team-b", "team-c"], "share": [0.6, 0.25, 0.15]})
    mapping = pl.DataFrame(
        {"kind": ["slurm_account"] * 3, "key": ["team-a", "team-b", "team-c"],
         "team": ["team-a", "team-b", "team-c"]}
    )  # fmt: skip
    out = slurm_fairshare_drift(teams, mapping, sshare, W)
    assert out["patch_content"].to_list() == [
        "sacctmgr -i modify account name=team-c set fairshare=18"
    ]
    try:
        run.cluster.run(shlex.split(out["patch_content"][0]))
        assert _account_fairshare(run, "team-c") == "18"
    finally:
        run.cluster.run(
            ["sacctmgr", "-i", "modify", "account", "name=team-c", "set",
             f"fairshare={DEFAULT_ACCOUNTS['team-c']}"]
        )  # fmt: skip
    assert _account_fairshare(run, "team-c") == str(DEFAULT_ACCOUNTS["team-c"])


def test_generated_drain_is_applied(slurm_cluster: ClusterRun) -> None:
    """The lemon rule's scontrol line drains the node with its reason; resumed afterwards."""
    run = slurm_cluster
    node = NODE_NAMES[0]
    reliability = pl.DataFrame(
        {"cluster": [CLUSTER_NAME], "host": [node], "attempts": [20], "node_fail_attempts": [5],
         "infra_failed_attempts": [5], "expected_infra_failures": [0.5], "xid_events": [3],
         "xid_codes": [[48, 79]], "down_s": [0.0], "infra_lost_gpu_s": [3600.0],
         "lemon_score": [4.0], "lemon_rank": [1]}
    )  # fmt: skip
    out = lemon_nodes(reliability, W, {CLUSTER_NAME: "slurm"})
    command = out["patch_content"][0]
    assert command == (
        f"scontrol update nodename={node} state=drain "
        'reason="goodput: lemon score 4.0, 5 NODE_FAIL, XID 48,79"'
    )
    try:
        run.cluster.run(shlex.split(command))
        shown = run.cluster.run(["scontrol", "show", "node", node]).stdout
        assert "DRAIN" in shown
        assert "Reason=goodput: lemon score 4.0, 5 NODE_FAIL, XID 48,79" in shown
    finally:
        run.cluster.run(["scontrol", "update", f"nodename={node}", "state=resume"])
    assert "DRAIN" not in run.cluster.run(["scontrol", "show", "node", node]).stdout


def test_generated_reservation_shrink_and_delete_are_applied() -> None:
    """The idle-reservation rule's scontrol lines on a real reservation: ``idle-res`` (DAILY,
    gpu-001 and gpu-002, 16 GPUs) held 10 h in the evidence (160 GPU-h) while one 8-GPU job ran
    5 h on gpu-001 (40 GPU-h, idle 0.75): shrink to gpu-001, which Slurm applies and shows; then
    with no job at all (idle 1): delete, after which Slurm no longer knows it. A cluster of its
    own (no job mix needed)."""
    host1, host2 = NODE_NAMES[0], NODE_NAMES[1]
    res = pl.DataFrame(
        {"cluster": [CLUSTER_NAME], "name": ["idle-res"], "start_at": [at(0)],
         "end_at": [at(10 * H)], "nodes": [[host1, host2]], "flags": [["DAILY"]],
         "maint": [False], "gpus": [None]},
        schema_overrides={"start_at": UTC, "end_at": UTC, "gpus": pl.Float64},
    )  # fmt: skip
    nodes = pl.DataFrame(
        {"cluster": [CLUSTER_NAME] * 2, "host": [host1, host2], "partition": ["gpu"] * 2,
         "gpus": [8, 8]}
    )  # fmt: skip
    jobs = pl.DataFrame(
        {"cluster": [CLUSTER_NAME], "gpus": [8.0], "start_at": [at(H)], "end_at": [at(6 * H)],
         "node_list": [[host1]]},
        schema_overrides={"start_at": UTC, "end_at": UTC},
    )  # fmt: skip
    shrink = reservations_idle(res, jobs, nodes, W)["patch_content"].to_list()
    assert shrink == [f"scontrol update reservationname=idle-res nodes={host1}"]
    delete = reservations_idle(res, jobs.clear(), nodes, W)["patch_content"].to_list()
    assert delete == ["scontrol delete reservationname=idle-res"]
    with private_cluster("goodput-slurm-recres-") as cluster:
        start = cluster.now().replace(microsecond=0) + timedelta(hours=1)
        cluster.run([
            "scontrol", "create", "reservation", "ReservationName=idle-res",
            f"StartTime={slurm_time(start)}", "Duration=60", f"Nodes={host1},{host2}",
            "Users=alice", "Flags=DAILY",
        ])  # fmt: skip
        try:
            cluster.run(shlex.split(shrink[0]))
            shown = cluster.run(["scontrol", "--oneliner", "show", "reservation", "idle-res"])
            assert f"Nodes={host1} " in shown.stdout and "NodeCnt=1 " in shown.stdout
            cluster.run(shlex.split(delete[0]))
            gone = cluster.run(["scontrol", "show", "reservation", "idle-res"], check=False)
            assert "idle-res" not in gone.stdout or "not found" in (gone.stdout + gone.stderr)
        finally:
            cluster.run(["scontrol", "delete", "ReservationName=idle-res"], check=False)
