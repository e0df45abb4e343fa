"""The waterfall's loss policy is configured (``[waterfall]`` in goodput.toml, or a cluster's
own in ``[[clusters]]``) and the build computes every lost time under it (METRICS.md "Lost work
under the ``checkpoint`` policy").

One Slurm cluster ``ck`` (UTC), 2026-10-09, node ``n1`` with 8 GPUs and no telemetry: job 1
holds its 8 GPUs 08:00–12:00 and ends TIMEOUT (runtime 4 h = 14,400 s; capacity 8 × 3,600 =
28,800 GPU-s an hour, 08:00–11:00).

By hand, ``checkpoint`` with Δ = 3,600 s and u0 = 300 s: lost = min(14,400, 3,600/2 + 300) =
2,100 s, the attempt's tail 11:25–12:00, × 8 GPUs = 16,800 GPU-s in ``timeout_work`` (11:00);
the kept head 08:00–11:25 falls through to leaves 8–9, with no telemetry all of it ``goodput``:
3 × 28,800 + 8 × 1,500 = 98,400 GPU-s (28,800 in each of 08:00–10:00, 12,000 at 11:00).
``node_reliability`` of n1: lost_gpu_s 16,800. Under ``whole_attempt`` (the default):
timeout_work 115,200 = 8 × 14,400 (28,800 each hour), goodput 0, lost_gpu_s 115,200. Before
the policy was configurable the build always gave the latter.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

_SACCT = """\
JobID|JobIDRaw|Cluster|Partition|Account|User|State|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|ReqTRES|NodeList
1|1|ck|gpu|a|alice|TIMEOUT|2026-10-09T08:00:00|2026-10-09T08:00:00|2026-10-09T08:00:00|2026-10-09T12:00:00|04:00:00|1|billing=8,cpu=8,gres/gpu=8,mem=50G,node=1|billing=8,cpu=8,gres/gpu=8,node=1|n1
"""

_CHECKPOINT = """
[waterfall]
loss_policy = "checkpoint"
checkpoint_interval_s = 3600
restart_overhead_s = 300
"""

_LEAVES = (
    "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
    " WHERE bucket IN ('timeout_work', 'goodput') GROUP BY bucket ORDER BY bucket"
)
_HOURLY = (
    "SELECT hour::VARCHAR, gpu_s FROM analytics.gpu_waterfall_hourly"
    " WHERE bucket = $b ORDER BY hour"
)
_NODE = "SELECT host, lost_gpu_s, infra_lost_gpu_s FROM analytics.node_reliability"
_MODE = "SELECT mode, reason FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"


def _config(tmp_path: Path, extra: str = "") -> Config:
    """``ck``'s goodput.toml with ``extra`` appended, its inventory and sacct file."""
    (tmp_path / "inventory").mkdir(exist_ok=True)
    (tmp_path / "inventory" / "ck.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,8,,gpu,r1\n"
    )
    (tmp_path / "inputs").mkdir(exist_ok=True)
    (tmp_path / "inputs" / "sacct_2026-10-09.psv").write_text(_SACCT)
    path = write_config(tmp_path, clusters=(("ck", "slurm", "UTC"),))
    path.write_text(path.read_text() + extra)
    return load_config(path)


def _numbers(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    return {
        "leaves": dict(con.execute(_LEAVES).fetchall()),
        "timeout": con.execute(_HOURLY, {"b": "timeout_work"}).fetchall(),
        "goodput": con.execute(_HOURLY, {"b": "goodput"}).fetchall(),
        "node": con.execute(_NODE).fetchall(),
    }


_HOURS = [f"2026-10-09 {h:02d}:00:00+00" for h in (8, 9, 10, 11)]

#: By hand (module docstring).
_CHECKPOINTED = {
    "leaves": {"goodput": 98_400.0, "timeout_work": 16_800.0},
    "timeout": list(zip(_HOURS, [0.0, 0.0, 0.0, 16_800.0], strict=True)),
    "goodput": list(zip(_HOURS, [28_800.0, 28_800.0, 28_800.0, 12_000.0], strict=True)),
    "node": [("n1", 16_800.0, 0.0)],
}
_WHOLE = {
    "leaves": {"goodput": 0.0, "timeout_work": 115_200.0},
    "timeout": list(zip(_HOURS, [28_800.0] * 4, strict=True)),
    "goodput": list(zip(_HOURS, [0.0] * 4, strict=True)),
    "node": [("n1", 115_200.0, 0.0)],
}


def _build(cfg: Config, *, full: bool = True) -> tuple[tuple[str, str], dict[str, object]]:
    """Load the sacct file into a new warehouse and build it in full (``full``), or build the
    existing one as planned; the build's (mode, reason) and :func:`_numbers`."""
    with connect(cfg.warehouse_path) as con:
        if full:
            init_warehouse(con)
            ingest_file(
                con,
                "sacct",
                cfg.inputs_dir / "sacct_2026-10-09.psv",
                IngestOptions(cluster="ck", tz="UTC"),
            )
        rebuild(con, cfg, full=full)
        mode, reason = con.execute(_MODE).fetchall()[0]
        return (str(mode), str(reason)), _numbers(con)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", _WHOLE),
        ('\n[waterfall]\nloss_policy = "whole_attempt"\n', _WHOLE),
        (_CHECKPOINT, _CHECKPOINTED),
    ],
    ids=["default", "whole_attempt", "checkpoint"],
)
def test_the_configured_loss_policy_decides_every_lost_time(
    tmp_path: Path, extra: str, expected: dict[str, object]
) -> None:
    """The waterfall's timeout_work and goodput, hour by hour, and n1's lost GPU-seconds."""
    assert _build(_config(tmp_path, extra))[1] == expected


def test_a_clusters_own_policy_wins_over_the_waterfall_section(tmp_path: Path) -> None:
    """``[waterfall]`` checkpoints every 10 minutes; ``ck``'s own entry (Δ = 3,600 s, u0 =
    300 s) is the one its tables use: the same numbers as above."""
    cfg = _config(
        tmp_path,
        '\n[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = 600\n',
    )
    text = cfg.path.read_text().replace(
        'timezone = "UTC"\n',
        'timezone = "UTC"\ncheckpoint_interval_s = 3600\nrestart_overhead_s = 300\n',
    )
    cfg.path.write_text(text)
    cfg = load_config(cfg.path)
    assert _build(cfg)[1] == _CHECKPOINTED


def test_a_changed_loss_policy_rebuilds_in_full(tmp_path: Path) -> None:
    """Built under ``whole_attempt``; the policy then changed to ``checkpoint`` with no new
    load: the next (not forced) build is full, for the loss policy, and gives the checkpoint
    numbers (an incremental build would find nothing new and keep the whole-attempt rows);
    changed back, the whole-attempt ones again."""
    cfg = _config(tmp_path)
    assert _build(cfg)[1] == _WHOLE
    cfg.path.write_text(cfg.path.read_text() + _CHECKPOINT)
    mode, got = _build(load_config(cfg.path), full=False)
    assert mode == ("full", "registry, inventory, nodes, thresholds, loss policy or code changed")
    assert got == _CHECKPOINTED
    cfg.path.write_text(cfg.path.read_text().replace(_CHECKPOINT, ""))
    mode, got = _build(load_config(cfg.path), full=False)
    assert mode[0] == "full"
    assert got == _WHOLE
    # the same policy once more: nothing changed, an incremental build
    assert _build(load_config(cfg.path), full=False)[0][0] == "incremental"
