"""``deploy/prometheus`` recording rules: valid for promtool, and hourly values as computed by hand.

The hand-computed cases live in ``dcgm_hourly.rules.test.yml`` beside the rules (each expected
value with its arithmetic in a comment), so an operator runs the same check with
``promtool test rules``. The series counts in ``deploy/prometheus/README.md`` rest on the number of
rules and of dcgm-exporter's default counters; both are pinned here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pipelines.dcgm import DCGM_HOURLY_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "dcgm_hourly.rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "dcgm_hourly.rules.test.yml"
COUNTERS = ROOT / "tests" / "fixtures" / "dcgm-exporter" / "default-counters.csv"
PROMTOOL = shutil.which("promtool")


@pytest.fixture
def needs_promtool() -> None:
    """promtool comes with Debian's prometheus package (scripts/install-system-deps.sh); without
    it the test is skipped, unless GOODPUT_REQUIRE_PROMETHEUS is set (as make test and CI do)."""
    if PROMTOOL is None:
        why = "promtool is not installed: run scripts/install-system-deps.sh"
        if os.environ.get("GOODPUT_REQUIRE_PROMETHEUS"):
            pytest.fail(why)
        pytest.skip(why)


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=RULES.parent
    )


@pytest.mark.usefixtures("needs_promtool")
def test_rules_pass_promtool_check() -> None:
    """``promtool check rules`` accepts the file and finds its nine recording rules."""
    done = _promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 9 rules found" in done.stdout


@pytest.mark.usefixtures("needs_promtool")
def test_rules_give_hand_computed_hourly_values() -> None:
    """``promtool test rules`` passes the hand-computed two-hour case (e.g. hour 1 activity
    (6 × 0.5 + 6 × 0.75) / 12 = 0.625, largest framebuffer 1000 + 11 × 100 = 2100 MiB)."""
    done = _promtool("test", "rules", RULE_TESTS.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.usefixtures("needs_promtool")
def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The case is not vacuous: changing one expected value (2100 → 2200 MiB) makes it fail."""
    shutil.copy(RULES, tmp_path / RULES.name)
    text = RULE_TESTS.read_text(encoding="utf-8")
    assert text.count("value: 2100") == 1
    (tmp_path / "bad.yml").write_text(text.replace("value: 2100", "value: 2200"), "utf-8")
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "test", "rules", "bad.yml"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "gpu_hour:DCGM_FI_DEV_FB_USED:max" in done.stdout + done.stderr


def test_rules_keep_the_attribution_labels_and_cover_the_hourly_columns() -> None:
    """Every rule is in one group evaluated hourly, groups by the same attribution labels, and
    the hourly kind's measured columns each have their rule."""
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    assert [(g["name"], g["interval"]) for g in groups] == [("goodput-dcgm-hourly", "1h")]
    records = [r["record"] for r in groups[0]["rules"]]
    labels = (
        "by (cluster, Hostname, gpu, UUID, modelName, GPU_I_PROFILE, GPU_I_ID, pod, namespace, "
        "container, exported_pod, exported_namespace, exported_container, hpc_job)"
    )
    assert all(labels in r["expr"] for r in groups[0]["rules"])
    column_rule = {
        "samples": "gpu_hour:dcgm_samples_5m:count",
        "gr_engine_active_avg": "gpu_hour:DCGM_FI_PROF_GR_ENGINE_ACTIVE:avg",
        "fb_used_max_mib": "gpu_hour:DCGM_FI_DEV_FB_USED:max",
        "xid_last": "gpu_hour:DCGM_FI_DEV_XID_ERRORS:last",
    }
    assert set(column_rule) <= set(DCGM_HOURLY_SCHEMA)
    assert set(column_rule.values()) <= set(records)
    assert len(records) == 9


def test_default_counter_count_used_by_the_readme() -> None:
    """The README's series count per GPU is dcgm-exporter's 26 default counters."""
    lines = COUNTERS.read_text(encoding="utf-8").splitlines()
    enabled = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(enabled) == 26
