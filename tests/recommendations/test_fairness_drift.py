"""Fairness drift: weeks of a team far above its fair allocation → fair-share weight."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from metrics.recommendations import fairness_drift
from tests.recommendations._frames import T0, UTC, window

W = window(21)


def _weekly(nlp_ratio: float, cluster: str = "slurm-a") -> pl.DataFrame:
    drift = nlp_ratio >= 1.5
    rows = []
    for w in range(3):
        week = T0 + dt.timedelta(weeks=w)
        for team, share, e, debt in (
            ("nlp", 0.08, nlp_ratio, -300.0 if drift else 0.0),
            ("vision", 0.12, 0.4 if drift else 1.0, 200.0 if drift else 0.0),
            ("speech", 0.08, 1.0, 0.0),
        ):
            rows.append(
                {"week": week, "window": "week", "cluster": cluster, "team": team,
                 "share": share, "demand_gpu_s": 4e6, "fair_gpu_s": 1e6,
                 "used_gpu_s": 1e6 * e, "entitlement_ratio": e, "fair_share_debt_gpu_h": debt}
            )  # fmt: skip
    return pl.DataFrame(
        rows,
        schema={"week": UTC, "window": pl.String(), "cluster": pl.String(), "team": pl.String(),
                "share": pl.Float64(), "demand_gpu_s": pl.Float64(), "fair_gpu_s": pl.Float64(),
                "used_gpu_s": pl.Float64(), "entitlement_ratio": pl.Float64(),
                "fair_share_debt_gpu_h": pl.Float64()},
    )  # fmt: skip


def test_team_over_its_share_for_weeks_raises_fairshare_weight() -> None:
    """nlp at e = 4 and vision at 0.4 for the last two weeks, weights in force known
    (fair share 1000, age 1000): PriorityWeightFairshare=10000 (the floor; 2 × 1000 is less);
    vision was owed 200 GPU-h a week; a 1-day half-life is lengthened to 7 days."""
    out = fairness_drift(
        _weekly(4.0), W, {"slurm-a": "slurm"}, current_decay_half_life_s=86400,
        current_weight_fairshare=1000, current_other_weights={"PriorityWeightAge": 1000},
    )  # fmt: skip
    rec = out.row(0, named=True)
    assert rec["scope"] == "cluster=slurm-a"
    assert rec["patch_kind"] == "slurm.conf"
    assert rec["patch_content"] == "PriorityWeightFairshare=10000\nPriorityDecayHalfLife=7-0"
    assert rec["expected_gain_gpu_h_per_week"] == 200.0
    ev = json.loads(rec["evidence"])
    assert [t["team"] for t in ev["over_teams"]] == ["nlp"]
    assert [t["team"] for t in ev["under_teams"]] == ["vision"]
    assert ev["over_teams"][0]["entitlement_ratio_by_week"] == [4.0, 4.0]
    assert rec["severity"] == "critical"


def test_weight_follows_the_other_weights() -> None:
    """Fair share must outweigh the largest other priority weight (twice it)."""
    out = fairness_drift(
        _weekly(4.0), W, {"slurm-a": "slurm"},
        current_weight_fairshare=1000, current_other_weights={"PriorityWeightQOS": 50000},
    )  # fmt: skip
    assert out["patch_content"].to_list() == ["PriorityWeightFairshare=100000"]


def test_unknown_weights_ask_for_the_config_instead_of_a_number() -> None:
    """The same drift with the weights in force unknown: no PriorityWeightFairshare number;
    the finding is info, says to collect ``scontrol show config``, and its patch is a comment
    (plus the half-life line, whose current value is known)."""
    out = fairness_drift(_weekly(4.0), W, {"slurm-a": "slurm"}, current_decay_half_life_s=86400)
    rec = out.row(0, named=True)
    assert rec["severity"] == "info"
    assert "PriorityWeightFairshare=" not in rec["patch_content"]
    lines = rec["patch_content"].splitlines()
    assert lines[0].startswith("# needs input: the PriorityWeight* settings in force on slurm-a")
    assert lines[1:] == ["PriorityDecayHalfLife=7-0"]
    assert "scontrol show config" in rec["change_text"]
    assert json.loads(rec["evidence"])["needs_input"] == [lines[0].removeprefix("# needs input: ")]
    bare = fairness_drift(_weekly(4.0), W, {"slurm-a": "slurm"}).row(0, named=True)
    assert bare["severity"] == "info"
    assert all(line.startswith("#") for line in bare["patch_content"].splitlines())


def test_scontrol_show_config_feeds_the_rule() -> None:
    """Weights and half-life parsed from ``scontrol show config`` output."""
    from metrics.recommendations.slurm_config import parse_scontrol_config, priority_settings

    text = (
        "Configuration data as of 2026-11-16T10:00:00\n"
        "PriorityDecayHalfLife   = 1-00:00:00\n"
        "PriorityWeightAge       = 1000\n"
        "PriorityWeightFairshare = 500\n"
        "PriorityWeightQOS       = 20000\n"
        "PriorityWeightTRES      = CPU=1000,GRES/gpu=3000\n"
    )
    s = priority_settings(parse_scontrol_config(text))
    assert s.weight_fairshare == 500
    assert s.other_weights == {"PriorityWeightAge": 1000, "PriorityWeightQOS": 20000}
    assert s.decay_half_life_s == 86400
    out = fairness_drift(
        _weekly(4.0), W, {"slurm-a": "slurm"}, current_weight_fairshare=s.weight_fairshare,
        current_other_weights=s.other_weights, current_decay_half_life_s=s.decay_half_life_s,
    )  # fmt: skip
    assert out["patch_content"].to_list() == [
        "PriorityWeightFairshare=40000\nPriorityDecayHalfLife=7-0"
    ]
    assert priority_settings({}) == (None, None, None)


def test_fair_usage_does_not_fire() -> None:
    """Everyone near e = 1: nothing to change."""
    assert fairness_drift(_weekly(1.1), W, {"slurm-a": "slurm"}).height == 0


def test_kubernetes_clusters_are_not_given_slurm_settings() -> None:
    """The patch is a slurm.conf change; a Kubernetes cluster gets none."""
    assert fairness_drift(_weekly(4.0, "k8s-b"), W, {"k8s-b": "kubernetes"}).height == 0


def test_one_week_is_not_a_trend() -> None:
    """With ``min_weeks=4`` three weeks of data are not enough."""
    assert fairness_drift(_weekly(4.0), W, {"slurm-a": "slurm"}, min_weeks=4).height == 0


def test_a_partial_last_week_is_not_judged() -> None:
    """Weeks 0 and 1 are fair; week 2 (nlp at e = 4) has 5 hours of data: with the cut-off
    5 h into it, week 2 is partial, the judged weeks are 0 and 1 and nothing is proposed;
    once the cut-off reaches its end, weeks 1 and 2 are judged and nlp drifts in only one."""
    fair = _weekly(1.0).filter(pl.col("week") < T0 + dt.timedelta(weeks=2))
    spike = _weekly(4.0).filter(pl.col("week") == T0 + dt.timedelta(weeks=2))
    frame = pl.concat([fair, spike])
    from metrics.recommendations import Window

    cut = T0 + dt.timedelta(weeks=2, hours=5)
    assert fairness_drift(frame, Window(T0, cut), {"slurm-a": "slurm"}).height == 0
    week1 = T0 + dt.timedelta(weeks=1)
    both = pl.concat(
        [_weekly(1.0).filter(pl.col("week") < week1), _weekly(4.0).filter(pl.col("week") >= week1)]
    )
    # Week 2 partial: judged weeks 0 (fair) and 1 (drift) → not 2 weeks in a row, none.
    assert fairness_drift(both, Window(T0, cut), {"slurm-a": "slurm"}).height == 0
    # Week 2 complete: judged weeks 1 and 2, both drifting → proposed.
    done = Window(T0, T0 + dt.timedelta(weeks=3))
    assert fairness_drift(both, done, {"slurm-a": "slurm"}).height == 1


def test_real_scontrol_show_config_spells_fairshare_with_a_capital_s() -> None:
    """A real Slurm's ``scontrol show config`` (``fixtures/slurm-policy``) prints
    ``PriorityWeightFairShare = 10000``: read whatever the case (before: never found, so the
    rule asked for a file already loaded)."""
    from metrics.recommendations.slurm_config import parse_scontrol_config, priority_settings

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-policy"
    text = (fixture / "live_scontrol_config_before.txt").read_text()
    assert "PriorityWeightFairShare = 10000" in text
    s = priority_settings(parse_scontrol_config(text))
    assert s.weight_fairshare == 10000
    assert s.other_weights == {
        "PriorityWeightAge": 1000, "PriorityWeightAssoc": 0, "PriorityWeightJobSize": 500,
        "PriorityWeightPartition": 1000, "PriorityWeightQOS": 2000,
    }  # fmt: skip
    assert s.decay_half_life_s == 86400
