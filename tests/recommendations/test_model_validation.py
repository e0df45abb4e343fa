"""The scheduler model's validation against the bundled fleet's recorded starts (seeded, so exact).

``bench/validate_scheduler_model.py`` replays the sample fleet's recorded Slurm attempts through
:mod:`metrics.scheduler_model` and compares simulated with recorded starts
(``docs/scheduler-model.md``).
"""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

import pytest

from tests.conftest import REPO


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "validate_scheduler_model", REPO / "bench" / "validate_scheduler_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_day_replay_reproduces_recorded_starts() -> None:
    """Seed 7, two days, the generator's settings: 314 GPU attempts started in the window; 311
    start in the replay too (311/314 = 0.9904); median |error| 0 min, p90 23 min; 296 within
    1 h (296/314 = 0.9427)."""
    fig = _bench().validate(seed=7, days=2)["generator"]["all"]
    assert fig["jobs"] == 314
    assert fig["started_share"] == pytest.approx(311 / 314)
    assert (fig["median_abs_error_min"], fig["p90_abs_error_min"]) == (0.0, 23.0)
    assert fig["within_1h"] == pytest.approx(296 / 314)
    assert 0.0 <= fig["order_agreement"] <= 1.0


def test_backfill_evidence_carries_the_model_check() -> None:
    """The backfill rule's replay under the current settings is checked against the recorded
    starts it replays: in test_backfill's scenario (24 one-node jobs starting on eligibility,
    the 32-GPU job at 67.5 h, which the replay under bf_window=1440 also gives: wait 66.5 h from
    1 h) all 25 starts match: median error 0 min, 100 % within 1 h; the text says so."""
    from metrics.recommendations import backfill_tuning
    from metrics.scheduler_model import SchedulerSettings
    from tests.recommendations._frames import pending
    from tests.recommendations.test_backfill import NODES, W, _recorded, _waterfall

    out = backfill_tuning(
        _recorded(48 * 3600), pending(), _waterfall(0.2), NODES, W,
        large_gpus=32, min_p50_wait_s=6 * 3600, current=SchedulerSettings(),
    )  # fmt: skip
    rec = out.filter(out["rule"] == "backfill_tuning").row(0, named=True)
    check = json.loads(rec["evidence"])["model_check"]
    assert check == {"jobs": 25.0, "median_abs_start_error_min": 0.0, "within_1h_share": 1.0}
    assert (
        "Model check: under the current settings the replay starts the 25 recorded jobs a "
        "median 0 min from their recorded start (100% within 1 h)." in rec["change_text"]
    )
