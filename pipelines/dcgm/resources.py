"""DCGM telemetry sources: dcgm-exporter text dumps, or a Prometheus server queried live."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Final, Literal

import dagster as dg

from pipelines._sources import FileSource, InputSource
from pipelines.dcgm import DCGM, DCGM_HOURLY
from pipelines.dcgm._prometheus import (
    DEFAULT_METRICS,
    DcgmPrometheusClient,
    DcgmQuerySpec,
    PrometheusQueryError,
    spool_dcgm,
)

__all__ = [
    "PROMETHEUS_CA_BUNDLE_ENV",
    "PROMETHEUS_PASSWORD_ENV",
    "PROMETHEUS_TOKEN_ENV",
    "PROMETHEUS_URL_ENV",
    "PROMETHEUS_USERNAME_ENV",
    "DcgmFileSource",
    "DcgmHourlyFileSource",
    "PrometheusDcgmSource",
    "PrometheusQueryError",
]

#: Environment variables :meth:`PrometheusDcgmSource.from_env` reads (at run time, via
#: ``dg.EnvVar``): the server URL, a bearer token, basic-auth user and password, a CA bundle.
PROMETHEUS_URL_ENV: Final = "GOODPUT_PROMETHEUS_URL"
PROMETHEUS_TOKEN_ENV: Final = "GOODPUT_PROMETHEUS_TOKEN"
PROMETHEUS_USERNAME_ENV: Final = "GOODPUT_PROMETHEUS_USERNAME"
PROMETHEUS_PASSWORD_ENV: Final = "GOODPUT_PROMETHEUS_PASSWORD"
PROMETHEUS_CA_BUNDLE_ENV: Final = "GOODPUT_PROMETHEUS_CA_BUNDLE"


class DcgmFileSource(FileSource):
    """dcgm-exporter text / OpenMetrics dumps under ``<cluster>/dcgm/`` (gzip allowed)."""

    kind: str = DCGM.name


class DcgmHourlyFileSource(FileSource):
    """Hourly per-GPU DCGM aggregates in Parquet under
    ``<cluster>/dcgm_hourly/date=YYYY-MM-DD/`` (:mod:`pipelines.dcgm._hourly`)."""

    kind: str = DCGM_HOURLY.name


class PrometheusDcgmSource(InputSource):
    """Queries one UTC day of dcgm-exporter metrics from Prometheus and spools it to a file.

    Each metric of :data:`~pipelines.dcgm._prometheus.DEFAULT_METRICS` is aggregated on the
    server over ``step_s`` windows by the function its kind calls for (mean for ratios and
    utilisation, max for memory, increase for counters, the XID code as is), one query per metric
    (per host slice with ``hosts``), in parallel. The spool file
    ``<spool_dir>/<cluster>/dcgm/dcgm_<day>.prom.gz`` holds gzip'd Prometheus text with
    millisecond timestamps, one sample per series and window, stamped with the window's start;
    it is replaced atomically, so re-fetching a day is idempotent.

    Attributes:
        url: the server's base URL.
        spool_dir: where spool files go.
        step_s: window and step (s).
        token: bearer token, or None.
        username: basic-auth user, or None (not with ``token``).
        password: basic-auth password.
        verify: verify the server's TLS certificate.
        ca_bundle: a CA bundle (PEM file) to verify it with; overrides ``verify``.
        timeout_s: timeout of each HTTP request (s).
        retries: retries per request on connection errors and HTTP 408/429/5xx.
        backoff_s: retry backoff factor (s).
        max_workers: queries in flight at once.
        cluster_label: when set, only series whose label of this name equals the cluster name
            (one Prometheus serving several clusters); default none.
        selector: extra PromQL matchers, added as is (``job="dcgm-exporter"``).
        hosts: only these hosts (values of ``host_label``), queried ``hosts_per_query`` at once.
        host_label: the label holding the host name.
        hosts_per_query: hosts per query when ``hosts`` is given.
        metrics: the metrics to fetch (a subset of ``DEFAULT_METRICS``); None: all of them.
    """

    url: str
    spool_dir: str
    step_s: int = 300
    token: str | None = None
    username: str | None = None
    password: str | None = None
    verify: bool = True
    ca_bundle: str | None = None
    timeout_s: float = 30.0
    retries: int = 3
    backoff_s: float = 0.5
    max_workers: int = 4
    cluster_label: str | None = None
    selector: str = ""
    hosts: list[str] | None = None
    host_label: str = "Hostname"
    hosts_per_query: int = 50
    metrics: list[str] | None = None

    @classmethod
    def from_env(
        cls,
        spool_dir: str,
        *,
        auth: Literal["none", "bearer", "basic"] = "none",
        ca_bundle_from_env: bool = False,
        **fields: Any,
    ) -> PrometheusDcgmSource:
        """A source whose URL and secrets come from environment variables at run time.

        Args:
            spool_dir: where spool files go.
            auth: ``bearer`` reads :data:`PROMETHEUS_TOKEN_ENV`; ``basic`` reads
                :data:`PROMETHEUS_USERNAME_ENV` and :data:`PROMETHEUS_PASSWORD_ENV`.
            ca_bundle_from_env: read the CA bundle path from :data:`PROMETHEUS_CA_BUNDLE_ENV`.
            **fields: any other field of the resource.

        Returns:
            The resource; a variable it names but the run's environment lacks fails the run.
        """
        env: dict[str, Any] = {"url": dg.EnvVar(PROMETHEUS_URL_ENV), "spool_dir": spool_dir}
        if auth == "bearer":
            env["token"] = dg.EnvVar(PROMETHEUS_TOKEN_ENV)
        elif auth == "basic":
            env["username"] = dg.EnvVar(PROMETHEUS_USERNAME_ENV)
            env["password"] = dg.EnvVar(PROMETHEUS_PASSWORD_ENV)
        if ca_bundle_from_env:
            env["ca_bundle"] = dg.EnvVar(PROMETHEUS_CA_BUNDLE_ENV)
        return cls(**{**fields, **env})

    def spool_path(self, cluster: str, day: str) -> Path:
        """The spool file of ``cluster`` and ``day``."""
        return Path(self.spool_dir) / cluster / "dcgm" / f"dcgm_{day}.prom.gz"

    def query_spec(self, cluster: str) -> DcgmQuerySpec:
        """What :meth:`fetch` asks the server for, for ``cluster``.

        Raises:
            ValueError: an unknown metric in ``metrics``, or a bad label name.
        """
        names = list(DEFAULT_METRICS) if self.metrics is None else self.metrics
        unknown = sorted(set(names) - set(DEFAULT_METRICS))
        if unknown:
            raise ValueError(f"unknown DCGM metrics {unknown}; known: {sorted(DEFAULT_METRICS)}")
        return DcgmQuerySpec(
            step_s=self.step_s,
            metrics={m: DEFAULT_METRICS[m] for m in names},
            matchers={self.cluster_label: cluster} if self.cluster_label else {},
            selector=self.selector,
            hosts=self.hosts,
            host_label=self.host_label,
            hosts_per_query=self.hosts_per_query,
        )

    def client(self) -> DcgmPrometheusClient:
        """A client for the server, configured from the fields (close it after use)."""
        return DcgmPrometheusClient(
            self.url,
            token=self.token or None,
            username=self.username or None,
            password=self.password if self.username else None,
            verify=self.verify,
            ca_bundle=self.ca_bundle or None,
            timeout_s=self.timeout_s,
            retries=self.retries,
            backoff_s=self.backoff_s,
            max_workers=self.max_workers,
        )

    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Query ``[day 00:00, day + 1 00:00)`` UTC and return the spool file.

        Args:
            cluster: the cluster (matched on ``cluster_label`` when set; names the spool folder).
            day: ``YYYY-MM-DD`` (UTC).

        Returns:
            ``[<spool_dir>/<cluster>/dcgm/dcgm_<day>.prom.gz]``.

        Raises:
            PrometheusQueryError: a query failed after retries (the message names the URL, the
                metric and the query); no spool file is written or changed.
            ValueError: a malformed ``day`` or configuration.
            OSError: the spool file cannot be written.
        """
        date = dt.date.fromisoformat(day)
        if date.isoformat() != day:
            raise ValueError(f"day must be YYYY-MM-DD, got {day!r}")
        start = dt.datetime.combine(date, dt.time(), dt.UTC)
        path = self.spool_path(cluster, day)
        spec = self.query_spec(cluster)
        with self.client() as client:
            spool_dcgm(client, start, start + dt.timedelta(days=1), path, spec)
        return [path]
