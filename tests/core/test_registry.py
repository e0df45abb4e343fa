"""The allocation registry: share history with ``valid_from``, shares per GPU pool, errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from metrics import entitlement, fair_share_hourly
from pipelines.core.registry import (
    RegistryError,
    cluster_shares,
    load_registry,
    load_registry_history,
    shares_at_window_start,
    unmatched_pools,
)

UTC = dt.UTC
TS = pl.Datetime("us", "UTC")
H = 3600.0


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "registry.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _d(day: int, h: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, h, tzinfo=UTC)


SIMPLE = """
teams:
  - team: vision
    share: 0.25
    slurm_accounts: [vision, vision-x]
    k8s_namespaces: [vision]
  - team: nlp
    share: 0.75
"""

HISTORY = """
teams:
  - team: a
    shares:
      - {share: 0.5}
      - {valid_from: 2026-11-16, share: 0.25}
      - {valid_from: 2026-11-01, share: 0.9, pool: h100}
  - team: b
    share: 0.5
history:
  - {team: b, valid_from: "2026-11-16T12:00:00", share: 0.75}
"""


def test_simple_format_keeps_team_share_and_mapping(tmp_path: Path) -> None:
    """The one-share form: ``load_registry`` gives team/share in file order and the mapping;
    the history has one since-forever row per team in pool ``all``."""
    path = _write(tmp_path, SIMPLE)
    teams, mapping = load_registry(path)
    assert teams.rows() == [("vision", 0.25), ("nlp", 0.75)]
    assert mapping.rows() == [
        ("slurm_account", "vision", "vision"),
        ("slurm_account", "vision-x", "vision"),
        ("k8s_namespace", "vision", "vision"),
    ]
    hist = load_registry_history(path)
    assert hist.rows() == [("nlp", "all", 0.75, None, None), ("vision", "all", 0.25, None, None)]


def test_history_gives_valid_to_as_the_next_valid_from(tmp_path: Path) -> None:
    """a/all: since forever 0.5 until 16 Nov, then 0.25 (open); a/h100: 0.9 from 1 Nov; b/all:
    0.5 until 16 Nov 12:00 (the ``history`` item, a datetime read as UTC), then 0.75."""
    hist = load_registry_history(_write(tmp_path, HISTORY))
    assert hist.rows() == [
        ("a", "all", 0.5, None, _d(16)),
        ("a", "all", 0.25, _d(16), None),
        ("a", "h100", 0.9, _d(1), None),
        ("b", "all", 0.5, None, _d(16, 12)),
        ("b", "all", 0.75, _d(16, 12), None),
    ]


def test_load_registry_returns_the_shares_in_effect_at_an_instant(tmp_path: Path) -> None:
    """On 10 Nov a = 0.5 (pool all wins over h100), b = 0.5; on 20 Nov a = 0.25, b = 0.75."""
    path = _write(tmp_path, HISTORY)
    assert load_registry(path, at=_d(10))[0].rows() == [("a", 0.5), ("b", 0.5)]
    assert load_registry(path, at=_d(20))[0].rows() == [("a", 0.25), ("b", 0.75)]


def test_a_pool_only_team_gets_the_mean_of_its_pools_and_future_shares_count_zero(
    tmp_path: Path,
) -> None:
    """c has 0.2 in h100 and 0.4 in a100 → fleet share (0.2 + 0.4)/2 = 0.3; d starts 2027 → 0."""
    text = """
teams:
  - team: c
    shares: [{share: 0.2, pool: h100}, {share: 0.4, pool: a100}]
  - team: d
    shares: [{share: 0.5, valid_from: 2027-01-01}]
"""
    teams, _ = load_registry(_write(tmp_path, text), at=_d(20))
    assert teams.rows() == [("c", pytest.approx(0.3)), ("d", 0.0)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("teams: 3", "expected a mapping with a 'teams' list"),
        ("teams:\n  - {share: 0.1}", "teams[0]: each entry needs a 'team'"),
        ("teams:\n  - {team: x, share: lots}", "teams[0] (x): share is not a number"),
        ("teams:\n  - {team: x, share: -1}", "teams[0] (x): share must be >= 0"),
        (
            "teams:\n  - {team: x, shares: [{share: 0.1, valid_from: soon}]}",
            "teams[0] (x): shares[0]: valid_from 'soon' is not a date",
        ),
        (
            "teams:\n  - {team: x, shares: [{share: 0.1, pol: a100}]}",
            "teams[0] (x): shares[0]: unknown key(s) ['pol']",
        ),
        (
            "teams:\n  - {team: x, share: 0.1}\nhistory:\n  - {team: y, share: 0.2}",
            "history[0] (y): team is not in 'teams'",
        ),
        (
            "teams:\n  - {team: x, share: 0.1, shares: [{share: 0.2}]}",
            "team x: two shares for pool all from since forever",
        ),
        # Ignored before: the team's jobs went to `unattributed`, its share stayed.
        (
            "teams:\n  - {team: x, share: 0.1, slurm_account: [x]}",
            "teams[0] (x): unknown key 'slurm_account' (did you mean 'slurm_accounts'?)",
        ),
        ("teams:\n  - {team: x, share: 0.1}\nhistroy: []", "unknown key 'histroy'"),
        (
            "teams:\n  - {team: a, slurm_accounts: [shared]}\n"
            "  - {team: b, slurm_accounts: [shared]}",
            "teams[1] (b): slurm_accounts: 'shared' is also listed under team 'a'",
        ),
        ("teams:\n  - {team: x, k8s_namespaces: {ns: 1}}", "k8s_namespaces: must be a list"),
        ("teams:\n  - {team: , share: 0.1}", "teams[0]: 'team' needs a name"),
        ("teams:\n  - {team: x, share: inf}", "teams[0] (x): share must be a finite number"),
        ("teams:\n  - {team: x, share: .inf}", "teams[0] (x): share is not a number"),
        # YAML keeps the last of two equal keys, silently
        ("teams:\n  - team: x\n    share: 0.1\n    share: 0.2", "found the key 'share' twice"),
    ],
)
def test_malformed_entries_name_the_file_and_entry(tmp_path: Path, text: str, message: str) -> None:
    """Each malformed entry raises RegistryError naming the file and the entry."""
    path = _write(tmp_path, text)
    with pytest.raises(RegistryError) as err:
        load_registry_history(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_one_account_written_alone_is_a_list_of_one(tmp_path: Path) -> None:
    """``slurm_accounts: research`` is the account ``research`` (iterated as a string it was
    the accounts r, e, s, …); the same account under two kinds is no conflict."""
    path = _write(
        tmp_path,
        "teams:\n  - {team: r, slurm_accounts: research, k8s_namespaces: research}\n",
    )
    _, mapping = load_registry(path)
    assert mapping.sort("kind").rows() == [
        ("k8s_namespace", "research", "r"),
        ("slurm_account", "research", "r"),
    ]


def test_names_are_read_as_written(tmp_path: Path) -> None:
    """YAML 1.1 would read the account ``0123`` as the octal 83, the namespace ``no`` as False
    and the team ``2024`` as a number: they stay as written, while shares and dates written as
    numbers and dates are still read as such."""
    path = _write(
        tmp_path,
        "teams:\n  - team: 2024\n    share: 1e-1\n    slurm_accounts: [0123, on]\n"
        "    k8s_namespaces: [no]\n    shares:\n      - {valid_from: 2026-11-16, share: 0.2}\n",
    )
    teams, mapping = load_registry(path, at=_d(20))
    assert teams.rows() == [("2024", pytest.approx(0.2))]
    assert sorted(mapping.rows()) == [
        ("k8s_namespace", "no", "2024"),
        ("slurm_account", "0123", "2024"),
        ("slurm_account", "on", "2024"),
    ]
    assert load_registry_history(path)["share"].to_list() == [pytest.approx(0.1), 0.2]


def test_a_registry_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "registry.yaml"
    path.write_bytes("teams:\n  - {team: x}\n".encode("utf-16"))
    with pytest.raises(RegistryError, match=r"registry\.yaml: not UTF-8 text"):
        load_registry_history(path)


def test_a_registry_path_that_is_a_folder_is_refused_by_name(tmp_path: Path) -> None:
    """A folder where the registry file should be: a RegistryError naming it, not a bare
    IsADirectoryError (which ``goodput ingest`` showed as a traceback)."""
    folder = tmp_path / "registry.yaml"
    folder.mkdir()
    with pytest.raises(RegistryError, match=r"registry\.yaml: cannot be read: Is a directory"):
        load_registry_history(folder)


def test_cluster_shares_picks_the_most_specific_pool() -> None:
    """Cluster gpu-h (all h100) uses a's h100 history from its first entry (day 1) and a's
    ``all`` share before it (not none: an h100 share from day 1 said nothing of the days
    before); cluster mixed (a100 + h100) and cluster k (no type) use pool all, except b in k:
    its own cluster entry wins there."""
    hist = pl.DataFrame(
        {
            "team": ["a", "a", "b", "b"],
            "pool": ["all", "h100", "all", "k"],
            "share": [0.5, 0.9, 0.5, 0.1],
            "valid_from": [None, _d(1), None, None],
            "valid_to": [None, None, None, None],
        },
        schema_overrides={"valid_from": TS, "valid_to": TS},
    )
    nodes = pl.DataFrame(
        {
            "cluster": ["gpu-h", "gpu-h", "mixed", "mixed", "k"],
            "gpu_type": ["h100", "h100", "a100", "h100", None],
            "gpus": [8.0, 8.0, 8.0, 8.0, 4.0],
        }
    )
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    out = cluster_shares(hist, nodes)
    assert out.rows() == [
        ("a", "gpu-h", 0.5, epoch),
        ("a", "gpu-h", 0.9, _d(1)),
        ("b", "gpu-h", 0.5, epoch),
        ("a", "k", 0.5, epoch),
        ("b", "k", 0.1, epoch),
        ("a", "mixed", 0.5, epoch),
        ("b", "mixed", 0.5, epoch),
    ]


def test_a_specific_pool_holds_from_its_first_entry_and_types_match_in_any_case() -> None:
    """The registry module's own example for nlp: 0.10 since forever and 0.20 from day 16 in
    every pool, 0.30 on h100 from day 1. On cluster gpu-h, whose inventory writes its GPU type
    ``H100``: 0.10 until day 1, then 0.30 (the later change of ``all`` does not reach a pool
    that has its own share); on cluster a (a100): 0.10, then 0.20 from day 16."""
    hist = pl.DataFrame(
        {
            "team": ["nlp"] * 3,
            "pool": ["all", "all", "h100"],
            "share": [0.10, 0.20, 0.30],
            "valid_from": [None, _d(16), _d(1)],
            "valid_to": [None] * 3,
        },
        schema_overrides={"valid_from": TS, "valid_to": TS},
    )
    nodes = pl.DataFrame({"cluster": ["gpu-h", "a"], "gpu_type": ["H100", "a100"]})
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert cluster_shares(hist, nodes).rows() == [
        ("nlp", "a", 0.10, epoch),
        ("nlp", "a", 0.20, _d(16)),
        ("nlp", "gpu-h", 0.10, epoch),
        ("nlp", "gpu-h", 0.30, _d(1)),
    ]


def test_pools_that_match_no_cluster_are_findings() -> None:
    """Pools ``h100`` (cluster gpu-h's one type, written ``H100``), ``gpu-h`` (a cluster) and
    ``all`` match; ``h100x`` (a misspelling, 2 entries of teams a and b), ``a100`` (only in the
    mixed cluster, whose nodes have two types: no cluster's one type) do not: two findings, no
    cluster, value = the pool's share entries."""
    hist = pl.DataFrame(
        {
            "team": ["a", "a", "b", "a", "b", "c"],
            "pool": ["all", "h100x", "h100x", "H100", "a100", "gpu-h"],
            "share": [0.5, 0.9, 0.1, 0.4, 0.2, 0.3],
            "valid_from": [None, None, _d(3), None, None, None],
            "valid_to": [None] * 6,
        },
        schema_overrides={"valid_from": TS, "valid_to": TS},
    )
    nodes = pl.DataFrame(
        {
            "cluster": ["gpu-h", "mixed", "mixed"],
            "gpu_type": ["h100", "a100", "h100"],
            "gpus": [8.0, 8.0, 8.0],
        }
    )
    out = unmatched_pools(hist, nodes)
    assert out.select("cluster", "day", "partition", "check", "value", "detail").rows() == [
        (
            None, None, None, "registry_pool_unmatched", 1.0,
            "registry pool a100 (teams b) names no cluster and no cluster's GPU type: its shares"
            " apply nowhere",
        ),
        (
            None, None, None, "registry_pool_unmatched", 2.0,
            "registry pool h100x (teams a, b) names no cluster and no cluster's GPU type: its"
            " shares apply nowhere",
        ),
    ]  # fmt: skip
    # no nodes yet: nothing to match against, no finding
    assert unmatched_pools(hist, nodes.clear()).height == 0


def test_a_registry_share_change_mid_week_is_honoured_per_hour(tmp_path: Path) -> None:
    """From the YAML to the week's fair allocation (the path ``rebuild`` takes).

    Cluster c has 4 GPUs; hours Monday 16 Nov 00:00 and 01:00 (one ISO week). Registry: a =
    0.5 until 16 Nov 01:00, then 0.25 (a ``history`` datetime); b = 0.5 throughout. a and b
    each run 4 GPUs in both hours (demand 4 × 3600 GPU-s each per hour, above any fair part).

    Hour 00:00: weights 0.5/0.5 → a 2 GPUs × 3600 = 7200, b 7200.
    Hour 01:00: weights 0.25/0.5 → a 4 × 1/3 × 3600 = 4800, b 4 × 2/3 × 3600 = 9600.
    Week: F_a = 12000, F_b = 16800 (with the old share held all week, both 14400). The week's
    ``share`` column is the share in effect at the week's start: a 0.5, b 0.5.
    """
    text = """
teams:
  - team: a
    share: 0.5
  - team: b
    share: 0.5
history:
  - {team: a, valid_from: "2026-11-16T01:00:00Z", share: 0.25}
"""
    hist = load_registry_history(_write(tmp_path, text))
    nodes = pl.DataFrame({"cluster": ["c"], "gpu_type": ["a100"], "gpus": [4.0]})
    shares = cluster_shares(hist, nodes)
    hours = [_d(16, 0), _d(16, 1)]
    cap = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "hour": hours,
            "capacity_gpu_s": [4 * H, 4 * H],
            "down_gpu_s": [0.0, 0.0],
            "planned_down_gpu_s": [0.0, 0.0],
        },
        schema_overrides={"hour": TS},
    )
    att = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "team": ["a", "b"],
            "gpus": [4.0, 4.0],
            "req_gpus": [4.0, 4.0],
            "eligible_at": [_d(16, 0)] * 2,
            "start_at": [_d(16, 0)] * 2,
            "end_at": [_d(16, 2)] * 2,
        },
        schema_overrides={"eligible_at": TS, "start_at": TS, "end_at": TS},
    )
    hourly = fair_share_hourly(att.lazy(), cap.lazy(), shares.lazy(), _d(16, 3)).collect()
    assert hourly.select("hour", "team", "share", "fair_gpu_s").rows() == [
        (_d(16, 0), "a", 0.5, pytest.approx(7200.0)),
        (_d(16, 0), "b", 0.5, pytest.approx(7200.0)),
        (_d(16, 1), "a", 0.25, pytest.approx(4800.0)),
        (_d(16, 1), "b", 0.5, pytest.approx(9600.0)),
    ]
    week = entitlement(hourly.lazy(), window="week", by_pool=True).collect()
    assert week.select("team", "fair_gpu_s").rows() == [
        ("a", pytest.approx(12000.0)),
        ("b", pytest.approx(16800.0)),
    ]
    labelled = shares_at_window_start(
        week.rename({"pool": "cluster"}).select("window_start", "cluster", "team"), shares, hist
    )
    assert labelled.select("team", "share").rows() == [("a", 0.5), ("b", 0.5)]


def test_week_share_label_for_fleet_rows_uses_pool_all(tmp_path: Path) -> None:
    """Fleet rows (cluster NULL): the pool-``all`` share at the window start — a week starting
    23 Nov sees a's new 0.25 (changed 16 Nov 01:00), the week of 9 Nov the old 0.5."""
    text = """
teams:
  - team: a
    share: 0.5
history:
  - {team: a, valid_from: "2026-11-16T01:00:00Z", share: 0.25}
"""
    hist = load_registry_history(_write(tmp_path, text))
    frame = pl.DataFrame(
        {"window_start": [_d(23), _d(9)], "cluster": [None, None], "team": ["a", "a"]},
        schema_overrides={"window_start": TS, "cluster": pl.String()},
    )
    out = shares_at_window_start(frame, cluster_shares(hist, pl.DataFrame()), hist)
    assert out.rows() == [(_d(23), None, "a", 0.25), (_d(9), None, "a", 0.5)]
