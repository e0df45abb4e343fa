"""Days loaded out of order (a later day first, or a day loaded again later) build the same
numbers as in date order, and the incremental build after the late day equals a full rebuild.

Cluster c8 (``sacctmgr show event``): day 2's export has the 16-GPU registration open and n2
DOWN 20:00–Unknown; day 3's has the registration closed at 10:00, a 24-GPU one from 10:00 and
n2 DOWN 20:00–01:00 (8 GPUs). Job 800 (1 GPU on n1) ends 12:00 on day 3: the cut-off. Day 3
loaded first, then day 2: n2 is down 8 × 5 h = 144,000 GPU-s (28,800 in each of hours 20–00),
not to the cut-off (16 h, 460,800); capacity is 16 × 3,600 = 57,600 an hour before 10:00 and
24 × 3,600 = 86,400 from 10:00 (not 144,000, both registrations); ``node_reliability`` n2
down_s 5 × 3,600 = 18,000 (not 57,600).

Cluster c11 (8 GPUs registered): day 2's sacct has job 500 PENDING (4 GPUs, eligible 09:00) and
501 RUNNING; day 3's has 500 "CANCELLED by 1000" (no start, End 09:30) and 501 COMPLETED
09:00–12:00 (1 GPU). Day 3 loaded first, then day 2: 500 pends 09:00–09:30, 4 × 1,800 = 7,200
pending GPU-s in hour 9 and none after (not 14,400 in each of hours 9–11); its wait spell is
1,800 s, censored at the cancel, not at the cut-off (10,800 s).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

pytestmark = pytest.mark.slow

_EVENTS = "Cluster|Cluster Nodes|NodeName|TimeStart|TimeEnd|State|StateRaw|Event|Reason|User|TRES\n"
_REG16 = "c8|n[1-2]||2026-11-01T00:00:00|{end}||0|Cluster|Cluster Registered TRES||" + (
    "billing=64,cpu=64,gres/gpu=16,mem=1000G,node=2\n"
)
_N2 = "c8||n2|2026-11-02T20:00:00|{end}|DOWN|1|Node|Not responding|slurm(64030)|" + (
    "billing=32,cpu=32,gres/gpu=8,mem=500G\n"
)
_C8_DAY2 = _EVENTS + _REG16.format(end="Unknown") + _N2.format(end="Unknown")
_C8_DAY3 = (
    _EVENTS
    + _REG16.format(end="2026-11-03T10:00:00")
    + "c8|n[1-3]||2026-11-03T10:00:00|Unknown||0|Cluster|Cluster Registered TRES||"
    "billing=96,cpu=96,gres/gpu=24,mem=1500G,node=3\n" + _N2.format(end="2026-11-03T01:00:00")
)
_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList\n"
)
_C8_SACCT3 = _SACCT + (
    "800|800|c8|gpu|acctA|u1|COMPLETED|0:0|2026-11-02T18:00:00|2026-11-02T18:00:00|"
    "2026-11-02T19:00:00|2026-11-03T12:00:00|17:00:00|1|billing=1,cpu=1,gres/gpu=1,mem=8G,node=1|"
    "billing=1,cpu=1,gres/gpu=1,node=1|n1\n"
)
_C11_EVENTS = _EVENTS + (
    "c11|n1||2026-11-01T00:00:00|Unknown||0|Cluster|Cluster Registered TRES||"
    "billing=32,cpu=32,gres/gpu=8,mem=500G,node=1\n"
)
_T = "2026-11-02T09:00:00"
_C11_SACCT2 = _SACCT + (
    f"500|500|c11|gpu|acctA|u1|PENDING|0:0|{_T}|{_T}|Unknown|Unknown|00:00:00|1||"
    "billing=4,cpu=4,gres/gpu=4,node=1|None assigned\n"
    f"501|501|c11|gpu|acctA|u1|RUNNING|0:0|{_T}|{_T}|{_T}|Unknown|01:00:00|1|"
    "billing=1,cpu=1,gres/gpu=1,mem=8G,node=1|billing=1,cpu=1,gres/gpu=1,node=1|n1\n"
)
_C11_SACCT3 = _SACCT + (
    f"500|500|c11|gpu|acctA|u1|CANCELLED by 1000|0:0|{_T}|{_T}|None|2026-11-02T09:30:00|"
    "00:00:00|1||billing=4,cpu=4,gres/gpu=4,node=1|None assigned\n"
    f"501|501|c11|gpu|acctA|u1|COMPLETED|0:0|{_T}|{_T}|{_T}|2026-11-02T12:00:00|03:00:00|1|"
    "billing=1,cpu=1,gres/gpu=1,mem=8G,node=1|billing=1,cpu=1,gres/gpu=1,node=1|n1\n"
)


def _h(day: int, hour: int) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, tzinfo=dt.UTC)


def _setup(d: Path, cluster: str) -> Config:
    (d / "inventory").mkdir()
    write_config(d, clusters=((cluster, "slurm", "UTC"),))
    return load_config(d / "goodput.toml")


def _ingest(con: duckdb.DuckDBPyConnection, d: Path, kind: str, name: str, text: str) -> None:
    """Write ``text`` as ``d/<cluster>/<file>`` (``name`` = ``<cluster>/<file>``) and load it."""
    path = d / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    st = ingest_file(con, kind, path, IngestOptions(cluster=path.parent.name, tz="UTC"))
    assert st.rows_rejected == 0, name


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    con.execute("SET TimeZone = 'UTC'")
    return con.execute(sql).fetchall()


def test_a_closed_node_event_and_registration_stay_closed_when_the_open_day_loads_last(
    tmp_path: Path,
) -> None:
    cfg = _setup(tmp_path, "c8")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _ingest(con, tmp_path, "slurm-state", "c8/events_2026-11-03.psv", _C8_DAY3)
        _ingest(con, tmp_path, "sacct", "c8/sacct_2026-11-03.psv", _C8_SACCT3)
        rebuild(con, cfg)
        _ingest(con, tmp_path, "slurm-state", "c8/events_2026-11-02.psv", _C8_DAY2)
        rebuild(con, cfg)
        down = _rows(
            con,
            "SELECT hour, down_gpu_s FROM analytics.occupancy_hourly"
            " WHERE cluster = 'c8' AND down_gpu_s > 0 ORDER BY hour",
        )
        assert down == [(_h(2, h), 28_800.0) for h in (20, 21, 22, 23)] + [(_h(3, 0), 28_800.0)]
        cap = _rows(
            con,
            "SELECT hour, capacity_gpu_s FROM analytics.occupancy_hourly WHERE cluster = 'c8'"
            " AND hour BETWEEN '2026-11-03 09:00:00+00' AND '2026-11-03 11:00:00+00' ORDER BY hour",
        )
        assert cap == [(_h(3, 9), 57_600.0), (_h(3, 10), 86_400.0), (_h(3, 11), 86_400.0)]
        rel = _rows(con, "SELECT down_s FROM analytics.node_reliability WHERE host = 'n2'")
        assert rel == [(18_000.0,)]
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_job_cancelled_while_pending_stays_cancelled_when_the_pending_day_loads_last(
    tmp_path: Path,
) -> None:
    cfg = _setup(tmp_path, "c11")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _ingest(con, tmp_path, "slurm-state", "c11/events_2026-11-02.psv", _C11_EVENTS)
        _ingest(con, tmp_path, "sacct", "c11/sacct_2026-11-03.psv", _C11_SACCT3)
        rebuild(con, cfg)
        _ingest(con, tmp_path, "sacct", "c11/sacct_2026-11-02.psv", _C11_SACCT2)
        rebuild(con, cfg)
        pending = _rows(
            con,
            "SELECT hour, sum(pending_gpu_s) FROM analytics.fair_share_hourly"
            " WHERE cluster = 'c11' AND pending_gpu_s > 0 GROUP BY hour ORDER BY hour",
        )
        assert pending == [(_h(2, 9), 7_200.0)]
        spell = _rows(
            con,
            "SELECT duration_s, started FROM analytics.time_to_start_jobs WHERE job_id = '500'",
        )
        assert spell == [(1_800.0, False)]
    assert_equals_full_rebuild(cfg, tmp_path)
