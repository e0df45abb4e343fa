"""Real Slurm 22.05 accepts the recommendations' sacctmgr and scontrol commands.

The fair-share rule reads the live cluster's ``sshare``, compares it with a registry that gives
team-a more than its 50 shares, and emits ``sacctmgr -i modify account name=team-a set
fairshare=N``; the lemon rule emits ``scontrol update nodename=gpu-001 state=drain reason=…``.
Both are run against the ``slurm_cluster`` fixture's cluster, read back, and undone.
"""

from __future__ import annotations

import shlex

import polars as pl
import pytest

from metrics.recommendations import lemon_nodes, slurm_fairshare_drift
from pipelines.slurm._cluster_state import parse_sshare
from tests.integration.slurm import CLUSTER_NAME, DEFAULT_ACCOUNTS, NODE_NAMES, ClusterRun
from tests.recommendations._frames import window

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
    """Registry 0.6/0.25/0.15 against RawShares 50/30/20: the site's scale is 120 (median of
    RawShares ÷ share), so team-a should have 72; Slurm accepts the command and reads it back."""
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
        "sacctmgr -i modify account name=team-a set fairshare=72"
    ]
    try:
        run.cluster.run(shlex.split(out["patch_content"][0]))
        assert _account_fairshare(run, "team-a") == "72"
    finally:
        run.cluster.run(
            ["sacctmgr", "-i", "modify", "account", "name=team-a", "set",
             f"fairshare={DEFAULT_ACCOUNTS['team-a']}"]
        )  # fmt: skip
    assert _account_fairshare(run, "team-a") == str(DEFAULT_ACCOUNTS["team-a"])


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
