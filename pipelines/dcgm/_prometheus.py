"""dcgm-exporter metrics from Prometheus, aggregated per step on the server, spooled to a file.

One ``query_range`` per metric (and per slice of hosts when a host list is given), run in a thread
pool. Each metric is aggregated over each step by the ``*_over_time`` that fits its kind
(:data:`DEFAULT_METRICS`; METRICS.md, "Aggregate by kind"), so a day at a 5-minute step is
288 points per series whatever the scrape interval.

Windows: the sample written at ``ts`` stands for the window ``[ts, ts + step)``. The query is
evaluated at ``t = ts + step`` as ``f(M[step] offset 1ms)``, which selects ``[t - step - 1 ms,
t - 1 ms]``: with Prometheus 2.x range selectors closed at both ends a plain ``M[5m]`` would count a
sample at exactly ``t - 5m`` in two adjacent windows (eleven 30-s samples instead of ten); the 1 ms
offset gives ``[ts, ts + step)`` for second-aligned scrapes, and the same in Prometheus 3.x (whose
range selectors are open on the left). So a day ``[00:00, 24:00)`` gives samples ``00:00 …
23:55`` that all belong to that day, and ``ts.dt.truncate("5m")`` finds each sample's bucket.

DCGM blank sentinels (:mod:`._dcgm_parse`, METRICS.md) would poison a mean or an increase, so a
window holding one is dropped on the server (``... unless max_over_time(M[w]) >= blank``): that
series has no sample for that step, as if unscraped.

The fetched series are rendered as Prometheus text (millisecond timestamps, value text exactly as
the server returned it), gzip'd and written atomically: the spool file. It is parsed by
:func:`~pipelines.dcgm._dcgm_parse.parse_dcgm` like any exported scrape, so label normalisation
lives in one place. ``# HELP`` lines in the file name the aggregation of each metric: the rows of a
counter (``increase``) are per-step increases, not cumulative values.

HTTP: ``prometheus-api-client``'s :class:`~prometheus_api_client.PrometheusConnect` over a
``requests`` session with a urllib3 :class:`~urllib3.util.Retry` (connection errors, read errors,
408/429/5xx, exponential backoff, ``Retry-After`` honoured). The library raises on any other
status; HTTP 400 "exceeded maximum resolution" is avoided by chunking ranges below
``max_points`` points per series, and HTTP 422 "too many samples" (``--query.max-samples``) halves
the range and retries each half.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import polars as pl
import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

from pipelines._parse_result import ParseResult
from pipelines.dcgm._dcgm_parse import FIELD_TYPES, parse_dcgm

__all__ = [
    "AGGREGATION_FUNCTIONS",
    "DEFAULT_METRICS",
    "RETRY_STATUSES",
    "SERIES_SCHEMA",
    "DcgmPrometheusClient",
    "FetchStats",
    "MetricKind",
    "PrometheusQueryError",
    "iter_prometheus_text",
    "query_dcgm",
    "render_prometheus_text",
    "spool_dcgm",
    "write_spool",
]

_LOG = logging.getLogger(__name__)

#: How a metric is aggregated over one step: ``mean`` (ratios, utilisation, power), ``max``
#: (memory used, windowed counts), ``increase`` (monotonic counters), ``last_value`` (a field that
#: holds a code, not an amount: ``DCGM_FI_DEV_XID_ERRORS`` holds the last XID).
MetricKind = Literal["mean", "max", "increase", "last_value"]

#: PromQL function per :data:`MetricKind`. ``last_value`` takes the max over the step: a code that
#: appears within the step is kept (value changes become events downstream); two different codes
#: within one step keep the larger.
AGGREGATION_FUNCTIONS: Final[dict[str, str]] = {
    "mean": "avg_over_time",
    "max": "max_over_time",
    "increase": "increase",
    "last_value": "max_over_time",
}

#: The metrics fetched by default and their kind. A metric the server does not have (e.g.
#: ``DCGM_FI_PROF_SM_ACTIVE``, off in dcgm-exporter's default counters) yields no rows.
DEFAULT_METRICS: Final[dict[str, MetricKind]] = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "mean",
    "DCGM_FI_DEV_GPU_UTIL": "mean",
    "DCGM_FI_PROF_SM_ACTIVE": "mean",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "mean",
    "DCGM_FI_PROF_DRAM_ACTIVE": "mean",
    "DCGM_FI_DEV_POWER_USAGE": "mean",
    "DCGM_FI_DEV_FB_USED": "max",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "increase",
    "DCGM_FI_DEV_XID_ERRORS": "last_value",
    # dcgm-exporter's count of XIDs within its --xid-count-window-size: a windowed gauge
    "DCGM_EXP_XID_ERRORS_COUNT": "max",
}

#: HTTP statuses retried with backoff (the library's own list): timeouts, rate limits, 5xx.
RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})

#: Columns of the fetched series before rendering: one row per (metric, series, step).
#: ``labels`` is the label set as Prometheus text (sorted by name, escaped; Categorical, sorted
#: lexically: each label set is stored once, not once per point), ``ts_ms`` the window start
#: (epoch ms), ``value`` the value text as the server returned it.
SERIES_SCHEMA: Final[dict[str, pl.DataType]] = {
    "metric": pl.String(),
    "labels": pl.Categorical(),
    "ts_ms": pl.Int64(),
    "value": pl.String(),
}

#: Prometheus refuses ``query_range`` with more than 11,000 points per series (HTTP 400).
MAX_POINTS_PER_SERIES: Final = 11_000

# Blank-sentinel thresholds per declared field type (see _dcgm_parse); a field of unknown type
# is judged by the int64 codes only, which no real value reaches.
_BLANK_AT: Final[dict[str, str]] = {
    "int32": str(0x7FFFFFF0),
    "int64": str(0x7FFFFFFFFFFFFFF0),
    "fp64": str(2**47),
}
_LABEL_NAME_RE: Final = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_METRIC_NAME_RE: Final = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_STATUS_RE: Final = re.compile(r"HTTP Status Code (\d{3})")


class PrometheusQueryError(RuntimeError):
    """A query failed after retries (or the server refused it).

    Attributes:
        url: the server's base URL.
        metric: the metric being fetched.
        query: the PromQL expression.
        start: first evaluation time of the failed range (UTC).
        end: last evaluation time of the failed range (UTC).
    """

    def __init__(
        self, url: str, metric: str, query: str, start: datetime, end: datetime, reason: str
    ) -> None:
        self.url = url
        self.metric = metric
        self.query = query
        self.start = start
        self.end = end
        super().__init__(
            f"Prometheus at {url}: fetching {metric} for {start.isoformat()}–{end.isoformat()} "
            f"failed: {reason} (query: {query})"
        )


@dataclass(frozen=True)
class FetchStats:
    """What one fetch did.

    Attributes:
        queries: HTTP ``query_range`` calls answered (each may have been retried on the wire).
        halvings: ranges halved after HTTP 422 "too many samples".
        series: distinct series per metric fetched (0 for a metric the server lacks).
        points: rows fetched, after de-duplication.
        wall_s: wall time of the fetch (s).
    """

    queries: int
    halvings: int
    series: dict[str, int] = field(default_factory=dict)
    points: int = 0
    wall_s: float = 0.0


@dataclass(frozen=True)
class _Task:
    metric: str
    query: str
    first: datetime  # first evaluation time
    last: datetime  # last evaluation time (inclusive)


def _promql_string(value: str) -> str:
    """``value`` as a double-quoted PromQL string."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _label_text(labels: Mapping[str, str]) -> str:
    """A label set as Prometheus text (``a="1",b="x"``), sorted by name, without ``__name__``."""
    return ",".join(
        f"{k}={_promql_string(v)}" for k, v in sorted(labels.items()) if k != "__name__"
    )


def _utc(ts: datetime, name: str) -> datetime:
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {ts.isoformat()}")
    if ts.microsecond:
        raise ValueError(f"{name} must be a whole second, got {ts.isoformat()}")
    return ts.astimezone(UTC)


@dataclass(frozen=True)
class DcgmQuerySpec:
    """What to fetch: metrics, step and series selection.

    Attributes:
        step_s: the step and window length (s); each metric is aggregated over windows of it.
        metrics: metric name → :data:`MetricKind`.
        matchers: extra equality matchers, label name → value (``{"cluster": "c1"}``).
        selector: extra raw PromQL matchers, added as is (``job="dcgm-exporter"``).
        hosts: only these hosts (values of ``host_label``), queried in slices; None: all.
        host_label: the label holding the host (dcgm-exporter: ``Hostname``; its main branch
            ``hostname``; Kubernetes relabelling often ``node``).
        hosts_per_query: hosts per query when ``hosts`` is given (bounds the URL length).
    """

    step_s: int = 300
    metrics: Mapping[str, MetricKind] = field(default_factory=lambda: dict(DEFAULT_METRICS))
    matchers: Mapping[str, str] = field(default_factory=dict)
    selector: str = ""
    hosts: Sequence[str] | None = None
    host_label: str = "Hostname"
    hosts_per_query: int = 50

    def __post_init__(self) -> None:
        if self.step_s < 1:
            raise ValueError(f"step_s must be ≥ 1 s, got {self.step_s}")
        if self.hosts_per_query < 1:
            raise ValueError(f"hosts_per_query must be ≥ 1, got {self.hosts_per_query}")
        for name in (*self.matchers, self.host_label):
            if not _LABEL_NAME_RE.match(name):
                raise ValueError(f"invalid label name {name!r}")
        for metric, kind in self.metrics.items():
            if not _METRIC_NAME_RE.match(metric):
                raise ValueError(f"invalid metric name {metric!r}")
            if kind not in AGGREGATION_FUNCTIONS:
                raise ValueError(f"unknown kind {kind!r} for {metric}")

    def host_slices(self) -> list[list[str] | None]:
        """The host slices to query: ``[None]`` (all hosts) without a host list."""
        if self.hosts is None:
            return [None]
        hosts = sorted(set(self.hosts))
        n = self.hosts_per_query
        return [hosts[i : i + n] for i in range(0, len(hosts), n)]

    def query(self, metric: str, hosts: Sequence[str] | None = None) -> str:
        """The PromQL expression for ``metric`` (restricted to ``hosts`` when given).

        ``f(M{...}[w] offset 1ms) unless (max_over_time(M{...}[w] offset 1ms) >= blank)``: the
        aggregate over ``[t - w, t)`` of each evaluation time ``t``, without windows that hold a
        DCGM blank sentinel.
        """
        parts = [f"{k}={_promql_string(v)}" for k, v in sorted(self.matchers.items())]
        if self.selector.strip():
            parts.append(self.selector.strip())
        if hosts is not None:
            alternatives = "|".join(re.escape(h) for h in hosts)
            parts.append(f"{self.host_label}=~{_promql_string(alternatives)}")
        window = f"{{{','.join(parts)}}}[{self.step_s}s] offset 1ms"
        func = AGGREGATION_FUNCTIONS[self.metrics[metric]]
        blank = _BLANK_AT.get(FIELD_TYPES.get(metric, "int64"), _BLANK_AT["int64"])
        return f"{func}({metric}{window}) unless (max_over_time({metric}{window}) >= {blank})"


class DcgmPrometheusClient:
    """Fetches DCGM metrics from one Prometheus server (see the module docstring).

    Args:
        url: the server's base URL (``https://prometheus.example.org``; a path prefix is kept).
        token: bearer token (``Authorization: Bearer …``).
        username: basic-auth user (with ``password``); not together with ``token``.
        password: basic-auth password.
        verify: verify the server's TLS certificate.
        ca_bundle: CA bundle file (PEM) to verify it with; overrides ``verify``.
        timeout_s: connect and read timeout of each HTTP request (s); also sent as the query's
            server-side ``timeout``.
        retries: retries of each request on connection errors, read errors and HTTP 408, 429,
            5xx (exponential backoff, ``Retry-After`` honoured).
        backoff_s: backoff factor (s): waits 0, 2 × backoff_s, 4 × backoff_s, … between tries.
        max_workers: queries in flight at once.
        max_points: most evaluation points per series in one query (Prometheus refuses over
            11,000).

    Raises:
        ValueError: both a token and basic auth, a username without a password, or a
            non-positive limit.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        username: str | None = None,
        password: str | None = None,
        verify: bool = True,
        ca_bundle: str | None = None,
        timeout_s: float = 30.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_workers: int = 4,
        max_points: int = MAX_POINTS_PER_SERIES,
    ) -> None:
        if token and username is not None:
            raise ValueError("give a bearer token or basic auth (username/password), not both")
        if (username is None) != (password is None):
            raise ValueError("basic auth needs both username and password")
        if timeout_s <= 0 or retries < 0 or backoff_s < 0 or max_workers < 1 or max_points < 2:
            raise ValueError(
                "timeout_s and backoff_s must be ≥ 0 (timeout_s > 0), retries ≥ 0, "
                "max_workers ≥ 1, max_points ≥ 2"
            )
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_workers = max_workers
        self.max_points = max_points
        retry = Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            other=0,
            backoff_factor=backoff_s,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=frozenset({"GET"}),
            # hand the last error response to the library, which raises with its status and body
            raise_on_status=False,
            respect_retry_after_header=True,
        )
        session = requests.Session()
        session.verify = ca_bundle if ca_bundle else verify
        kwargs: dict[str, Any] = {
            "url": self.url,
            "retry": retry,
            "session": session,
            "timeout": timeout_s,
        }
        if token:
            kwargs["headers"] = {"Authorization": f"Bearer {token}"}
        if username is not None:
            kwargs["auth"] = (username, password)
        self._prom = PrometheusConnect(**kwargs)
        # The library mounts an adapter with a 10-connection pool; one connection per worker.
        session.mount(self.url, HTTPAdapter(max_retries=retry, pool_maxsize=max(10, max_workers)))

    def close(self) -> None:
        """Close the HTTP session."""
        self._prom.close()

    def __enter__(self) -> DcgmPrometheusClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def query_range(
        self, metric: str, query: str, first: datetime, last: datetime, step_s: int
    ) -> tuple[list[dict[str, Any]], int, int]:
        """Run one ``query_range`` over evaluation times ``first, first + step, …, last``.

        On HTTP 422 "too many samples" the range is halved and each half retried.

        Args:
            metric: the metric (for error messages).
            query: the PromQL expression.
            first: first evaluation time (aware, whole second).
            last: last evaluation time (inclusive).
            step_s: the step (s).

        Returns:
            The ``result`` list of the response(s) (``{"metric": labels, "values": [[t, v]]}``),
            the number of HTTP queries made and the number of halvings.

        Raises:
            PrometheusQueryError: a request failed after retries, the server refused the query,
                or one step alone has too many samples.
        """
        results: list[dict[str, Any]] = []
        queries = halvings = 0
        pending = [(first, last)]
        while pending:
            a, b = pending.pop()
            queries += 1
            try:
                part = self._prom.custom_query_range(
                    query,
                    start_time=a,
                    end_time=b,
                    step=str(step_s),
                    params={"timeout": f"{self.timeout_s:g}s"},
                )
            except PrometheusApiClientException as exc:
                text = str(exc)
                status = _STATUS_RE.search(text)
                if status and status[1] == "422" and "too many samples" in text:
                    n = int((b - a).total_seconds()) // step_s
                    if n == 0:
                        raise PrometheusQueryError(
                            self.url, metric, query, a, b,
                            "too many samples even for one step (HTTP 422): raise the server's "
                            "--query.max-samples or query fewer hosts at once",
                        ) from exc  # fmt: skip
                    mid = a + timedelta(seconds=step_s * ((n - 1) // 2))
                    pending += [(mid + timedelta(seconds=step_s), b), (a, mid)]
                    halvings += 1
                    continue
                raise PrometheusQueryError(
                    self.url, metric, query, a, b, _shorten(f"server answered {text}")
                ) from exc
            except (requests.ConnectionError, requests.Timeout) as exc:
                raise PrometheusQueryError(
                    self.url, metric, query, a, b,
                    _shorten(f"{type(exc).__name__} after {self.retries} retries: {exc}"),
                ) from exc  # fmt: skip
            except (requests.RequestException, KeyError, TypeError, ValueError) as exc:
                # a body that is not Prometheus JSON (an HTML login page, a truncated answer)
                raise PrometheusQueryError(
                    self.url, metric, query, a, b,
                    _shorten(f"unexpected response: {type(exc).__name__}: {exc}"),
                ) from exc  # fmt: skip
            if not isinstance(part, list):
                raise PrometheusQueryError(
                    self.url, metric, query, a, b, f"unexpected result type {type(part).__name__}"
                )
            results.extend(part)
        return results, queries, halvings

    def fetch_series(
        self, start: datetime, end: datetime, spec: DcgmQuerySpec | None = None
    ) -> tuple[pl.DataFrame, FetchStats]:
        """Fetch every metric of ``spec``, aggregated per step, for windows in ``[start, end)``.

        Args:
            start: start of the first window (timezone-aware, whole second).
            end: end of the last window; windows are ``[start + i × step, start + (i+1) × step)``
                up to ``end`` (a last partial window is left out).
            spec: what to fetch (default: :data:`DEFAULT_METRICS` at 5 minutes, all series).

        Returns:
            A frame with :data:`SERIES_SCHEMA`, one row per (metric, series, window), sorted and
            de-duplicated on (metric, labels, ts_ms); and the fetch's :class:`FetchStats`.

        Raises:
            ValueError: naive or sub-second times, or a range shorter than one step.
            PrometheusQueryError: a query failed (see :meth:`query_range`); nothing is returned.
        """
        spec = spec or DcgmQuerySpec()
        start, end = _utc(start, "start"), _utc(end, "end")
        step = timedelta(seconds=spec.step_s)
        n_windows = int((end - start) / step)
        if n_windows < 1:
            raise ValueError(f"[{start}, {end}) is shorter than one step of {spec.step_s} s")
        tasks = list(self._tasks(spec, start + step, start + n_windows * step))
        t0 = time.monotonic()
        frames: list[pl.DataFrame] = []
        queries = halvings = 0
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(tasks))) as pool:
            futures: dict[Future[tuple[list[dict[str, Any]], int, int]], _Task] = {
                pool.submit(self.query_range, t.metric, t.query, t.first, t.last, spec.step_s): t
                for t in tasks
            }
            try:
                for fut in as_completed(futures):
                    result, q, h = fut.result()
                    queries, halvings = queries + q, halvings + h
                    frames.append(_series_frame(futures[fut].metric, result, spec.step_s))
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        frame = (
            pl.concat([_empty_series(), *frames])
            .unique(subset=["metric", "labels", "ts_ms"], keep="first")
            .sort(["metric", "labels", "ts_ms"])
        )
        per_metric = dict(frame.group_by("metric").agg(pl.col("labels").n_unique()).iter_rows())
        stats = FetchStats(
            queries=queries,
            halvings=halvings,
            series={m: int(per_metric.get(m, 0)) for m in spec.metrics},
            points=frame.height,
            wall_s=time.monotonic() - t0,
        )
        _LOG.info(
            "Prometheus %s: %d points of %d series in %d queries (%d halvings) in %.2f s",
            self.url, stats.points, sum(stats.series.values()), queries, halvings, stats.wall_s,
        )  # fmt: skip
        return frame, stats

    def _tasks(self, spec: DcgmQuerySpec, first: datetime, last: datetime) -> Iterator[_Task]:
        """One task per metric, host slice and chunk of at most ``max_points`` points."""
        step = timedelta(seconds=spec.step_s)
        for metric in spec.metrics:
            for hosts in spec.host_slices():
                query = spec.query(metric, hosts)
                a = first
                while a <= last:
                    b = min(last, a + (self.max_points - 1) * step)
                    yield _Task(metric, query, a, b)
                    a = b + step


def _shorten(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _empty_series() -> pl.DataFrame:
    return pl.DataFrame(schema=SERIES_SCHEMA)


def _series_frame(metric: str, result: list[dict[str, Any]], step_s: int) -> pl.DataFrame:
    """The ``result`` list of a range query as rows of :data:`SERIES_SCHEMA`.

    Each point's time is its evaluation time ``t``; the row gets the window start ``t - step``.
    """
    if not result:
        return _empty_series()
    labels = pl.Series("labels", [_label_text(s["metric"]) for s in result], pl.Categorical())
    lengths = pl.Series("n", [len(s["values"]) for s in result], pl.UInt32())
    # [[t, "v"], …] of every series, flattened to t, "v", t, "v", …: no Python loop per point
    flat = list(chain.from_iterable(chain.from_iterable(s["values"] for s in result)))
    ts = pl.Series("t", flat[0::2], dtype=pl.Float64(), strict=False)
    values = pl.Series("value", flat[1::2], dtype=pl.String())
    del flat
    index = pl.int_range(0, len(lengths), dtype=pl.UInt32(), eager=True).repeat_by(lengths)
    return pl.DataFrame(
        {
            "metric": pl.Series([metric], dtype=pl.String()).new_from_index(0, len(values)),
            "labels": labels.gather(index.explode()),
            "ts_ms": (ts * 1000).round(0).cast(pl.Int64()) - step_s * 1000,
            "value": values,
        }
    )


def render_prometheus_text(
    frame: pl.DataFrame, *, step_s: int, metrics: Mapping[str, MetricKind] | None = None
) -> bytes:
    """Rows of :data:`SERIES_SCHEMA` as Prometheus text exposition (timestamps in ms).

    Deterministic: metrics by name, series by label text, samples by time; each metric is
    preceded by ``# HELP`` (its aggregation and window) and ``# TYPE … gauge``.

    Args:
        frame: the rows (as :meth:`DcgmPrometheusClient.fetch_series` returns them).
        step_s: the window length (s), for ``# HELP``.
        metrics: metric → kind, for ``# HELP`` (default :data:`DEFAULT_METRICS`).

    Returns:
        UTF-8 text ending in a newline; a single comment line when ``frame`` is empty.
    """
    return b"".join(iter_prometheus_text(frame, step_s=step_s, metrics=metrics))


def iter_prometheus_text(
    frame: pl.DataFrame,
    *,
    step_s: int,
    metrics: Mapping[str, MetricKind] | None = None,
    rows_per_chunk: int = 500_000,
) -> Iterator[bytes]:
    """:func:`render_prometheus_text` in pieces of at most ``rows_per_chunk`` samples (UTF-8),
    so that a large fetch is never held as one text in memory."""
    kinds = DEFAULT_METRICS if metrics is None else metrics
    if frame.is_empty():
        yield b"# goodput: Prometheus returned no DCGM series for this range\n"
        return
    ordered = frame.sort(["metric", "labels", "ts_ms"])
    for (metric,), part in ordered.partition_by(
        "metric", as_dict=True, maintain_order=True
    ).items():
        kind = kinds.get(str(metric), "mean")
        yield (
            f"# HELP {metric} {AGGREGATION_FUNCTIONS[kind]} over the window [t, t + {step_s}s) "
            f"of each sample time t, from Prometheus ({kind})\n# TYPE {metric} gauge\n"
        ).encode()
        for offset in range(0, part.height, rows_per_chunk):
            lines = (
                part.slice(offset, rows_per_chunk)
                .select(
                    pl.concat_str(
                        pl.col("metric"),
                        pl.when(pl.col("labels").cast(pl.String()) == "")
                        .then(pl.lit(""))
                        .otherwise(
                            pl.concat_str(
                                pl.lit("{"), pl.col("labels").cast(pl.String()), pl.lit("}")
                            )
                        ),
                        pl.lit(" "),
                        pl.col("value"),
                        pl.lit(" "),
                        pl.col("ts_ms").cast(pl.String()),
                    ).str.join("\n")
                )
                .item()
            )
            yield f"{lines}\n".encode()


def write_spool(data: bytes | Iterable[bytes], path: Path) -> Path:
    """Write ``data`` gzip'd to ``path`` atomically (temp file in the same folder, then rename).

    The gzip header carries no time or name, so the same data gives the same bytes.

    Args:
        data: the uncompressed content, whole or in pieces (compressed as they come).
        path: the destination; its folder is created.

    Returns:
        ``path``.

    Raises:
        OSError: the file cannot be written (no temp file is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            with gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=f, mtime=0) as gz:
                for piece in [data] if isinstance(data, bytes) else data:
                    gz.write(piece)
            f.flush()
            os.fsync(f.fileno())
        tmp.chmod(0o644)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def spool_dcgm(
    client: DcgmPrometheusClient,
    start: datetime,
    end: datetime,
    path: Path,
    spec: DcgmQuerySpec | None = None,
) -> FetchStats:
    """Fetch ``[start, end)`` and write it to ``path`` (gzip Prometheus text, ms timestamps).

    Args:
        client: the Prometheus client.
        start: start of the range (aware, whole second).
        end: end of the range.
        path: the spool file, written atomically only after every query succeeded.
        spec: what to fetch.

    Returns:
        The fetch's :class:`FetchStats`.

    Raises:
        PrometheusQueryError: a query failed; ``path`` is left as it was.
        ValueError: bad times (see :meth:`DcgmPrometheusClient.fetch_series`).
        OSError: the spool file cannot be written.
    """
    spec = spec or DcgmQuerySpec()
    frame, stats = client.fetch_series(start, end, spec)
    if frame.is_empty():
        _LOG.warning("Prometheus %s returned no DCGM series for %s–%s", client.url, start, end)
    write_spool(iter_prometheus_text(frame, step_s=spec.step_s, metrics=spec.metrics), path)
    return stats


def query_dcgm(
    client: DcgmPrometheusClient,
    start: datetime,
    end: datetime,
    path: Path,
    *,
    cluster: str,
    spec: DcgmQuerySpec | None = None,
) -> ParseResult:
    """Fetch ``[start, end)``, spool it to ``path`` and parse the spool file.

    Args:
        client: the Prometheus client.
        start: start of the range (aware, whole second).
        end: end of the range.
        path: the spool file.
        cluster: the ``cluster`` column.
        spec: what to fetch.

    Returns:
        :func:`~pipelines.dcgm._dcgm_parse.parse_dcgm`'s result (rows with
        ``DCGM_SAMPLE_SCHEMA``, one per series and window; ``ts`` is the window start), with the
        fetch's :class:`FetchStats` as a dict in ``info["prometheus"]``.

    Raises:
        PrometheusQueryError: a query failed; ``path`` is left as it was.
        ValueError: bad times.
        OSError: the spool file cannot be written.
    """
    stats = spool_dcgm(client, start, end, path, spec)
    result = parse_dcgm(path, cluster=cluster)
    result.info["prometheus"] = asdict(stats)
    return result
