"""The live DCGM twin against a real Prometheus 2.x holding one generated day.

The server holds the day of :mod:`tests.integration.prometheus.series` (2026-11-02 UTC, 30-s
samples with hand-computable 5-minute aggregates), backfilled with ``promtool``. Tests marked
``prometheus`` need the ``prometheus`` and ``promtool`` binaries (Debian package ``prometheus``,
installed by ``scripts/install-system-deps.sh``): without them they skip, unless
``GOODPUT_REQUIRE_PROMETHEUS`` is set, in which case they fail. The tests at the end need no
server.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import ParseResult
from pipelines.dcgm._dcgm_parse import DCGM_SAMPLE_SCHEMA, parse_dcgm
from pipelines.dcgm._prometheus import (
    DcgmPrometheusClient,
    DcgmQuerySpec,
    PrometheusQueryError,
    query_dcgm,
    spool_dcgm,
)
from pipelines.dcgm.resources import PrometheusDcgmSource
from tests.integration.prometheus import (
    FaultyProxy,
    PrometheusTestServer,
    build_tsdb,
    free_port,
    missing_binaries,
)
from tests.integration.prometheus import series as gen

REQUIRE_PROMETHEUS_ENV = "GOODPUT_REQUIRE_PROMETHEUS"
CLUSTER = "c1"
ACTIVITY = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
STEP = timedelta(minutes=5)
DAY_END = gen.DAY_START + timedelta(days=1)

prometheus = pytest.mark.prometheus


@dataclass(frozen=True)
class DayFetch:
    """One fetch of the day through :class:`PrometheusDcgmSource`."""

    source: PrometheusDcgmSource
    path: Path
    result: ParseResult

    @property
    def rows(self) -> pl.DataFrame:
        """The parsed rows."""
        return self.result.rows


def _require_binaries() -> None:
    missing = missing_binaries()
    if missing:
        message = (
            f"real Prometheus unavailable: missing {', '.join(missing)}; "
            "run `sudo scripts/install-system-deps.sh` (Debian package `prometheus`)"
        )
        if os.environ.get(REQUIRE_PROMETHEUS_ENV):
            pytest.fail(f"{message} [{REQUIRE_PROMETHEUS_ENV} is set]", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="module")
def prometheus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusTestServer]:
    """A started Prometheus holding the generated day."""
    _require_binaries()
    tsdb = build_tsdb(tmp_path_factory.mktemp("prometheus"))
    with PrometheusTestServer(tsdb) as server:
        yield server


@pytest.fixture(scope="module")
def day(
    prometheus_server: PrometheusTestServer, tmp_path_factory: pytest.TempPathFactory
) -> DayFetch:
    """The day fetched once through the resource, and its spool file parsed."""
    source = PrometheusDcgmSource(
        url=prometheus_server.url, spool_dir=str(tmp_path_factory.mktemp("spool"))
    )
    [path] = source.fetch(CLUSTER, gen.DAY)
    return DayFetch(source, path, parse_dcgm(path, cluster=CLUSTER))


def _at(hours: float) -> datetime:
    return gen.DAY_START + timedelta(hours=hours)


def _metric(rows: pl.DataFrame, metric: str) -> pl.DataFrame:
    return rows.filter(pl.col("metric") == metric)


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


# --- the day's numbers ------------------------------------------------------------------------


@prometheus
def test_spool_file_is_gzip_prometheus_text_with_ms_timestamps(day: DayFetch) -> None:
    """The spool file sits at <spool>/<cluster>/dcgm/dcgm_<day>.prom.gz: gzip text, ms times."""
    assert day.path == Path(day.source.spool_dir) / CLUSTER / "dcgm" / f"dcgm_{gen.DAY}.prom.gz"
    text = gzip.decompress(day.path.read_bytes()).decode()
    sample = next(line for line in text.splitlines() if not line.startswith("#"))
    assert int(sample.rsplit(" ", 1)[1]) // 1000 >= gen.DAY_START_S  # milliseconds
    assert day.result.info["format"] == "prometheus"
    assert day.result.rejected.is_empty()
    assert dict(day.rows.schema) == DCGM_SAMPLE_SCHEMA


@prometheus
def test_one_row_per_series_and_5_minute_window_inside_the_day(day: DayFetch) -> None:
    """Every row is a window start in [00:00, 24:00) on the 5-minute grid, never duplicated."""
    rows = day.rows
    assert rows["ts"].min() == gen.DAY_START
    assert rows["ts"].max() == DAY_END - STEP
    assert (rows["ts"].dt.truncate("5m") == rows["ts"]).all()
    key = ["metric", "host", "gpu_uuid", "mig_instance", "pod", "hpc_job", "ts"]
    assert not rows.select(key).is_duplicated().any()
    full_day = _metric(rows, ACTIVITY).filter(pl.col("hpc_job") == gen.BUSY_JOB)
    assert full_day.height == 4 * 288


@prometheus
@pytest.mark.parametrize(("job", "mean"), [(gen.BUSY_JOB, 0.8), (gen.IDLE_JOB, 0.01)])
def test_job_activity_day_mean_and_5_minute_means(day: DayFetch, job: str, mean: float) -> None:
    """Per job, the day's mean activity and every 5-minute mean equal the generated mean."""
    rows = _metric(day.rows, ACTIVITY).filter(pl.col("hpc_job") == job)
    assert rows.height > 0
    assert rows["value"].mean() == pytest.approx(mean, rel=0.01)
    per_bucket = rows.group_by("ts").agg(pl.col("value").mean())
    assert per_bucket.height == 288
    assert per_bucket["value"].min() == pytest.approx(mean, rel=0.01)
    assert per_bucket["value"].max() == pytest.approx(mean, rel=0.01)


@prometheus
def test_each_metric_uses_the_aggregation_of_its_kind(day: DayFetch) -> None:
    """GPU_UTIL mean in %, FB_USED max, energy increase per window, power mean (busy GPUs)."""
    busy = day.rows.filter(pl.col("hpc_job") == gen.BUSY_JOB)
    seg = next(s for s in gen.segments() if s.labels.get("hpc_job") == gen.BUSY_JOB)

    def values(metric: str) -> pl.Series:
        return _metric(busy, metric)["value"]

    assert values("DCGM_FI_DEV_GPU_UTIL").min() == pytest.approx(80.0, rel=0.01)
    assert values("DCGM_FI_DEV_GPU_UTIL").max() == pytest.approx(80.0, rel=0.01)
    fb = values("DCGM_FI_DEV_FB_USED")
    assert (fb == seg.fb_base + 9000).all()  # max of fb_base + 1000 × (0 … 9)
    energy = values("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    assert energy.min() == pytest.approx(gen.energy_increase_per_bucket(seg), rel=0.01)
    assert energy.max() == pytest.approx(gen.energy_increase_per_bucket(seg), rel=0.01)
    assert (values("DCGM_FI_DEV_POWER_USAGE") == seg.power_w).all()


@prometheus
def test_pod_change_appears_in_the_noon_bucket(day: DayFetch) -> None:
    """The old pod's last window is 11:55, the new pod's first is 12:00, each with its own mean."""
    rows = _metric(day.rows, ACTIVITY).filter(pl.col("namespace") == gen.POD_NAMESPACE)
    spans = {
        r["pod"]: r
        for r in rows.group_by("pod")
        .agg(
            pl.col("ts").min().alias("first"),
            pl.col("ts").max().alias("last"),
            pl.col("value").mean().alias("mean"),
            pl.col("gpu_uuid").n_unique().alias("gpus"),
        )
        .iter_rows(named=True)
    }
    assert set(spans) == {gen.POD_BEFORE, gen.POD_AFTER}
    assert spans[gen.POD_BEFORE]["first"] == gen.DAY_START
    assert spans[gen.POD_BEFORE]["last"] == gen.POD_CHANGE_AT - STEP
    assert spans[gen.POD_AFTER]["first"] == gen.POD_CHANGE_AT
    assert spans[gen.POD_AFTER]["last"] == DAY_END - STEP
    assert spans[gen.POD_BEFORE]["mean"] == pytest.approx(gen.POD_ACTIVITY_BEFORE, rel=0.01)
    assert spans[gen.POD_AFTER]["mean"] == pytest.approx(gen.POD_ACTIVITY_AFTER, rel=0.01)
    assert spans[gen.POD_BEFORE]["gpus"] == spans[gen.POD_AFTER]["gpus"] == 1
    assert rows.filter(pl.col("pod") == gen.POD_AFTER)["container"].unique().to_list() == ["main"]


@prometheus
def test_mig_labels_are_normalised(day: DayFetch) -> None:
    """GPU_I_PROFILE / GPU_I_ID become mig_profile / mig_instance, one GPU UUID, own means."""
    mig = _metric(day.rows, ACTIVITY).filter(pl.col("mig_profile").is_not_null())
    assert mig["mig_profile"].unique().to_list() == [gen.MIG_PROFILE]
    assert mig["gpu_uuid"].n_unique() == 1
    means = dict(
        mig.group_by("mig_instance").agg(pl.col("value").mean()).sort("mig_instance").iter_rows()
    )
    assert means.keys() == gen.MIG_ACTIVITY.keys()
    for instance, activity in gen.MIG_ACTIVITY.items():
        assert means[instance] == pytest.approx(activity, rel=0.01)


@prometheus
def test_xid_79_is_seen_at_15_00_and_the_gpu_then_vanishes(day: DayFetch) -> None:
    """XID_ERRORS shows 79 from the 15:00 window; that GPU has no window after it."""
    seg = next(s for s in gen.segments() if s.xid_from is not None)
    gpu = day.rows.filter(pl.col("gpu_uuid") == seg.labels["UUID"])
    xid = _metric(gpu, "DCGM_FI_DEV_XID_ERRORS").sort("ts")
    events = xid.filter(pl.col("value") != 0)
    assert events["value"].to_list() == [float(gen.XID)]
    assert events["ts"].to_list() == [gen.XID_AT]
    assert (xid.filter(pl.col("ts") < gen.XID_AT)["value"] == 0).all()
    assert gpu["ts"].max() == gen.XID_AT
    count = _metric(day.rows, "DCGM_EXP_XID_ERRORS_COUNT")
    assert count.select("gpu_uuid", "ts", "value").rows() == [(seg.labels["UUID"], gen.XID_AT, 1.0)]


@prometheus
def test_window_holding_a_dcgm_blank_is_dropped(day: DayFetch) -> None:
    """A blank sentinel sample removes its series' window instead of inflating the mean."""
    power = _metric(day.rows, "DCGM_FI_DEV_POWER_USAGE").filter(pl.col("mig_instance") == 2)
    bucket = gen.BLANK_AT - timedelta(seconds=30)
    assert bucket not in power["ts"].to_list()
    assert {bucket - STEP, bucket + STEP} <= set(power["ts"].to_list())
    assert power.height == 287
    assert (power["value"] == 200.0).all()


@prometheus
def test_missing_sm_active_is_not_an_error(
    prometheus_server: PrometheusTestServer, day: DayFetch, tmp_path: Path
) -> None:
    """The server has no DCGM_FI_PROF_SM_ACTIVE: no rows, zero series, no error."""
    assert _metric(day.rows, "DCGM_FI_PROF_SM_ACTIVE").is_empty()
    with day.source.client() as client:
        result = query_dcgm(client, gen.DAY_START, DAY_END, tmp_path / "d.prom.gz", cluster=CLUSTER)
    stats = result.info["prometheus"]
    assert isinstance(stats, dict)
    assert stats["series"]["DCGM_FI_PROF_SM_ACTIVE"] == 0
    assert stats["series"][ACTIVITY] == 10


# --- idempotence, chunking, halving, host slices ----------------------------------------------


@prometheus
def test_refetch_gives_the_same_bytes(day: DayFetch) -> None:
    """Fetching the day again rewrites the spool file with identical bytes and no leftovers."""
    before = day.path.read_bytes()
    assert day.source.fetch(CLUSTER, gen.DAY) == [day.path]
    assert day.path.read_bytes() == before
    assert _files(Path(day.source.spool_dir)) == [day.path.name]


@prometheus
def test_chunked_ranges_give_the_same_file(day: DayFetch, tmp_path: Path) -> None:
    """Ranges split into 50-point chunks (6 per series) give byte-identical output."""
    spec = day.source.query_spec(CLUSTER)
    with DcgmPrometheusClient(day.source.url, max_points=50, max_workers=2) as client:
        stats = spool_dcgm(client, gen.DAY_START, DAY_END, tmp_path / "c.prom.gz", spec)
    assert stats.queries == 6 * len(spec.metrics)
    assert (tmp_path / "c.prom.gz").read_bytes() == day.path.read_bytes()


@prometheus
def test_too_many_samples_halves_the_range(day: DayFetch, tmp_path: Path) -> None:
    """HTTP 422 "too many samples" (--query.max-samples=1000) halves ranges; same file."""
    tsdb = build_tsdb(tmp_path)
    spec = day.source.query_spec(CLUSTER)
    with (
        PrometheusTestServer(tsdb, extra_args=["--query.max-samples=1000"]) as small,
        DcgmPrometheusClient(small.url) as client,
    ):
        stats = spool_dcgm(client, gen.DAY_START, DAY_END, tmp_path / "h.prom.gz", spec)
    assert stats.halvings > 0
    assert stats.queries == len(spec.metrics) + 2 * stats.halvings
    assert (tmp_path / "h.prom.gz").read_bytes() == day.path.read_bytes()


@prometheus
def test_host_list_is_queried_in_slices(day: DayFetch, tmp_path: Path) -> None:
    """With a host list, one query per metric and slice, and only those hosts' rows."""
    hosts = ["node-a", "node-d"]
    source = day.source.model_copy(
        update={"hosts": hosts, "hosts_per_query": 1, "spool_dir": str(tmp_path)}
    )
    [path] = source.fetch(CLUSTER, gen.DAY)
    rows = parse_dcgm(path, cluster=CLUSTER).rows
    expected = day.rows.filter(pl.col("host").is_in(hosts))
    assert rows.drop("file", "line_no").equals(expected.drop("file", "line_no"))


# --- failures ---------------------------------------------------------------------------------


@prometheus
def test_http_503_is_retried_then_fails_clearly_without_a_spool_file(
    prometheus_server: PrometheusTestServer, tmp_path: Path
) -> None:
    """A server answering 503 is retried (1 + retries tries per query), then fetch raises."""
    with FaultyProxy(prometheus_server.url, lambda path: 503) as proxy:
        source = PrometheusDcgmSource(
            url=proxy.url, spool_dir=str(tmp_path), retries=2, backoff_s=0.01, max_workers=1
        )
        with pytest.raises(PrometheusQueryError) as info:
            source.fetch(CLUSTER, gen.DAY)
    message = str(info.value)
    assert proxy.url in message
    assert info.value.metric in message
    assert "503" in message
    first = proxy.requests[0]
    assert proxy.requests.count(first) == 3
    assert _files(tmp_path) == []


@prometheus
def test_one_failing_metric_leaves_the_old_spool_file_untouched(
    day: DayFetch, tmp_path: Path
) -> None:
    """503 on FB_USED only: the error names that metric and nothing partial is written."""
    old = tmp_path / CLUSTER / "dcgm" / f"dcgm_{gen.DAY}.prom.gz"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"previous")

    def fail_fb_used(path: str) -> int | None:
        return 503 if "DCGM_FI_DEV_FB_USED" in path else None

    with FaultyProxy(day.source.url, fail_fb_used) as proxy:
        source = PrometheusDcgmSource(
            url=proxy.url, spool_dir=str(tmp_path), retries=1, backoff_s=0.01
        )
        with pytest.raises(PrometheusQueryError, match="DCGM_FI_DEV_FB_USED") as info:
            source.fetch(CLUSTER, gen.DAY)
    assert info.value.metric == "DCGM_FI_DEV_FB_USED"
    assert old.read_bytes() == b"previous"
    assert _files(tmp_path) == [old.name]


def test_refused_connection_is_retried_then_fails_clearly(tmp_path: Path) -> None:
    """Nothing listening: connection errors are retried, then fetch names URL and metric."""
    url = f"http://127.0.0.1:{free_port()}"
    source = PrometheusDcgmSource(
        url=url, spool_dir=str(tmp_path), retries=2, backoff_s=0.01, metrics=[ACTIVITY]
    )
    with pytest.raises(PrometheusQueryError) as info:
        source.fetch(CLUSTER, gen.DAY)
    message = str(info.value)
    assert url in message
    assert ACTIVITY in message
    assert "ConnectionError after 2 retries" in message
    assert _files(tmp_path) == []


# --- no server needed -------------------------------------------------------------------------


def test_query_aggregates_by_kind_over_a_window_ending_before_t() -> None:
    """Mean/max/increase per kind, [t - 5m, t) via offset 1ms, blank windows dropped."""
    spec = DcgmQuerySpec(matchers={"cluster": 'c"1'}, selector='job="dcgm"')
    sel = '{cluster="c\\"1",job="dcgm"}[300s] offset 1ms'
    assert spec.query("DCGM_FI_DEV_GPU_UTIL") == (
        f"avg_over_time(DCGM_FI_DEV_GPU_UTIL{sel}) "
        f"unless (max_over_time(DCGM_FI_DEV_GPU_UTIL{sel}) >= 2147483632)"
    )
    assert spec.query("DCGM_FI_DEV_FB_USED").startswith("max_over_time(")
    assert spec.query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").startswith("increase(")
    assert spec.query("DCGM_FI_DEV_XID_ERRORS").startswith("max_over_time(")
    assert spec.query("DCGM_FI_PROF_SM_ACTIVE").endswith(">= 140737488355328)")


def test_host_slices_escape_regex_characters() -> None:
    """Host names are regex-escaped inside the PromQL string, sliced and sorted."""
    spec = DcgmQuerySpec(hosts=["b.x", "a-1", "c"], hosts_per_query=2, host_label="node")
    assert spec.host_slices() == [["a-1", "b.x"], ["c"]]
    assert 'node=~"a\\\\-1|b\\\\.x"' in spec.query("DCGM_FI_DEV_GPU_UTIL", ["a-1", "b.x"])


def test_naive_times_are_refused() -> None:
    """Naive datetimes are an error (the client library's defaults are naive local times)."""
    with DcgmPrometheusClient("http://127.0.0.1:9") as client, pytest.raises(ValueError):
        client.fetch_series(datetime(2026, 11, 2), datetime(2026, 11, 3, tzinfo=UTC))


def test_token_and_basic_auth_together_are_refused() -> None:
    """A bearer token and basic auth are mutually exclusive."""
    with pytest.raises(ValueError, match="not both"):
        DcgmPrometheusClient("http://x", token="t", username="u", password="p")


def test_unknown_metric_is_refused(tmp_path: Path) -> None:
    """The resource only fetches metrics whose aggregation kind it knows."""
    source = PrometheusDcgmSource(url="http://x", spool_dir=str(tmp_path), metrics=["DCGM_X"])
    with pytest.raises(ValueError, match="unknown DCGM metrics"):
        source.query_spec(CLUSTER)
